//! Threads sharing every matrix product of a pass on one memory (`model::threads`): each
//! product's output features are cut into one part per thread. The numbers must be those of one
//! thread, whatever the number of threads, for an f32 encoder and a quantized causal model
//! continuing its passes through the KV cache.

use crate::common;
use transformer_viz::model::backend::on_cpu;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::kv_cache::KvCache;
use transformer_viz::model::threads;
use transformer_viz::trace::Trace;
use transformer_viz::transformer::PassRequest;

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

fn assert_same(a: &Trace, b: &Trace, what: &str) {
    assert_eq!(a.steps.len(), b.steps.len());
    for (sa, sb) in a.steps.iter().zip(&b.steps) {
        assert_eq!(sa.name, sb.name);
        assert_eq!(sa.tensor.shape, sb.tensor.shape, "{}", sa.name);
        let same = sa
            .tensor
            .data
            .iter()
            .zip(&sb.tensor.data)
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(same, "{what}: step {} differs", sa.name);
    }
}

#[test]
fn an_encoder_pass_on_one_two_three_or_five_threads_gives_the_same_numbers() {
    let model = common::minilm();
    let text =
        "Threads share every dense layer of this forward pass, each its own output features.";
    let one = pool(1).install(|| {
        assert_eq!(threads::threads(), 1);
        model.trace(text).unwrap()
    });
    for n in [2, 3, 5] {
        let shared = pool(n).install(|| {
            assert_eq!(threads::threads(), n);
            model.trace(text).unwrap()
        });
        assert_same(&one, &shared, &format!("{n} threads"));
    }
}

#[test]
fn a_quantized_causal_model_continuing_through_its_cache_gives_one_threads_numbers() {
    let Some(model) = common::smollm2() else {
        return;
    };
    let texts = [
        "The capital of France is",
        "The capital of France is a city",
        "The capital of Spain",
    ];
    let run = |n: usize| {
        pool(n).install(|| {
            let mut cache = KvCache::new();
            let mut previous: Option<Trace> = None;
            let mut traces = Vec::new();
            for text in texts {
                let request = PassRequest::tokens(model.encode(text).unwrap(), text)
                    .continuing(previous.as_ref(), &mut cache);
                let trace = on_cpu(model.pass(&Cpu, request)).unwrap().into_trace();
                traces.push(trace.clone());
                previous = Some(trace);
            }
            // Generation's path: one token at a time through the cache.
            let logits = model.next_logits(&[1, 2], &mut cache).unwrap();
            (traces, logits)
        })
    };
    let (one, one_logits) = run(1);
    let (three, three_logits) = run(3);
    assert_eq!(one[1].len(), 7);
    for (a, b) in one.iter().zip(&three) {
        assert_same(a, b, &a.text);
        assert_eq!(
            a.next_token_probabilities().unwrap(),
            b.next_token_probabilities().unwrap()
        );
    }
    assert_eq!(one_logits, three_logits);
}
