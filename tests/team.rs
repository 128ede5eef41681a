//! Two copies of the engine sharing a forward pass (`model::team`): here two threads swap
//! their halves of every dense layer through channels, as the page and its Web Worker do
//! through shared memory. The shared pass must give the numbers of a single copy.

mod common;

use std::rc::Rc;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread;

use transformer_viz::model::team::{self, Team};
use transformer_viz::trace::Trace;

struct ChannelTeam {
    member: usize,
    send: Sender<Vec<f32>>,
    receive: Receiver<Vec<f32>>,
}

impl Team for ChannelTeam {
    fn member(&self) -> usize {
        self.member
    }
    fn exchange(&self, mine: &[f32], theirs: &mut [f32]) -> bool {
        if self.send.send(mine.to_vec()).is_err() {
            return false;
        }
        match self.receive.recv() {
            Ok(v) if v.len() == theirs.len() => {
                theirs.copy_from_slice(&v);
                true
            }
            _ => false,
        }
    }
}

/// A partner that never answers.
struct SilentTeam;

impl Team for SilentTeam {
    fn member(&self) -> usize {
        0
    }
    fn exchange(&self, _: &[f32], _: &mut [f32]) -> bool {
        false
    }
}

fn worst_difference(a: &Trace, b: &Trace) -> f32 {
    assert_eq!(a.steps.len(), b.steps.len());
    let mut worst = 0f32;
    for (sa, sb) in a.steps.iter().zip(&b.steps) {
        assert_eq!(sa.name, sb.name);
        assert_eq!(sa.tensor.shape, sb.tensor.shape, "{}", sa.name);
        for (x, y) in sa.tensor.data.iter().zip(&sb.tensor.data) {
            if x.is_finite() || y.is_finite() {
                worst = worst.max((x - y).abs());
            }
        }
    }
    worst
}

#[test]
fn two_threads_sharing_every_dense_layer_give_the_single_pass_numbers() {
    let model = common::minilm();
    let text = "Two threads can share one forward pass of the model.";
    let alone = model.trace(text).unwrap();

    let (to_1, from_0) = channel();
    let (to_0, from_1) = channel();
    let ids = model.encode(text).unwrap().ids();
    let shared = thread::scope(|s| {
        let helper = s.spawn(|| {
            team::join(Rc::new(ChannelTeam { member: 1, send: to_0, receive: from_0 }));
            let out = model.run_ids(&ids);
            team::leave();
            out.hidden
        });
        team::join(Rc::new(ChannelTeam { member: 0, send: to_1, receive: from_1 }));
        let trace = model.trace(text).unwrap();
        assert!(team::current().is_some(), "the partner answered every exchange");
        team::leave();
        (trace, helper.join().unwrap())
    });
    let (trace, helper_hidden) = shared;
    let worst = worst_difference(&alone, &trace);
    assert!(worst <= 1e-6, "the shared pass differs from a single pass by {worst}");
    // Both members end with the whole result.
    let final_hidden = trace.final_hidden().unwrap();
    let helper_worst = final_hidden.iter().zip(helper_hidden.iter()).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    assert!(helper_worst <= 1e-6, "the helper's hidden states differ by {helper_worst}");
}

#[test]
fn a_silent_partner_is_left_and_the_pass_is_finished_alone() {
    let model = common::minilm();
    let text = "If the helper stops answering, nothing is lost.";
    let alone = model.trace(text).unwrap();
    team::join(Rc::new(SilentTeam));
    let trace = model.trace(text).unwrap();
    assert!(team::current().is_none(), "a failed exchange leaves the team");
    assert_eq!(worst_difference(&alone, &trace), 0.0);
}

#[test]
fn halves_keep_whole_kernel_blocks() {
    assert_eq!(team::halves(384, 2), [(0, 192), (192, 384)]);
    assert_eq!(team::halves(1536, 2), [(0, 768), (768, 1536)]);
    assert_eq!(team::halves(7, 2), [(0, 2), (2, 7)]);
    assert_eq!(team::halves(1, 2), [(0, 0), (0, 1)]);
}

#[test]
fn a_causal_model_shares_its_passes_through_the_kv_cache_with_the_numbers_of_one_thread() {
    let Some(model) = common::smollm2() else { return };
    use transformer_viz::model::kv_cache::KvCache;
    let texts = ["The capital of France is", "The capital of France is a city", "The capital of Spain"];
    // One thread: each text continues the last pass through the cache.
    let mut cache = KvCache::new();
    let mut previous: Option<Trace> = None;
    let mut alone = Vec::new();
    for text in texts {
        let continued = model.continue_trace(model.encode(text).unwrap(), text, previous.as_ref(), &mut cache);
        alone.push(continued.trace.clone());
        previous = Some(continued.trace);
    }
    // Two threads: the page (member 0) traces, the helper (member 1) keeps its own cache and
    // runs the same rows untraced, as `Viz::help` does.
    let (to_1, from_0) = channel();
    let (to_0, from_1) = channel();
    let (orders, work) = channel::<(Vec<u32>, usize)>();
    let shared = thread::scope(|s| {
        s.spawn(move || {
            team::join(Rc::new(ChannelTeam { member: 1, send: to_0, receive: from_0 }));
            let mut cache = KvCache::new();
            for (ids, reused) in work {
                cache.truncate(reused);
                model.next_logits(&ids[reused..], &mut cache).unwrap();
            }
            team::leave();
        });
        team::join(Rc::new(ChannelTeam { member: 0, send: to_1, receive: from_1 }));
        let mut cache = KvCache::new();
        let mut previous: Option<Trace> = None;
        let mut traces = Vec::new();
        for text in texts {
            let encoding = model.encode(text).unwrap();
            let reused = model.reusable(&encoding.ids(), previous.as_ref(), &cache);
            orders.send((encoding.ids(), reused)).unwrap();
            let continued = model.continue_trace_within(encoding, text, previous.as_ref(), &mut cache, reused);
            assert_eq!(continued.reused, reused);
            traces.push(continued.trace.clone());
            previous = Some(continued.trace);
        }
        assert!(team::current().is_some(), "the partner answered every exchange");
        drop(orders);
        team::leave();
        traces
    });
    assert_eq!(alone[1].len(), 7);
    for (a, b) in alone.iter().zip(&shared) {
        assert_eq!(worst_difference(a, b), 0.0, "{}: the shared pass differs from one thread's", a.text);
        assert_eq!(a.next_token_probabilities().unwrap(), b.next_token_probabilities().unwrap());
    }
}
