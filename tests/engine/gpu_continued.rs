//! A causal model's traced pass through the KV cache on the GPU (`Transformer::pass`
//! continuing one): the tokens before the first change keep their cached keys and
//! values on the device and their rows of the earlier trace; only the new tokens are
//! computed. Checked on lavapipe (see `tests/engine/gpu_kernels.rs`): as the text grows, is cut and
//! grows again, every continued trace is the trace of a pass from the start on the GPU, step
//! by step, and agrees with the CPU's within the parity bounds; a continued pass that reads
//! back only some steps leaves the others (its own rows and the earlier passes') on the
//! device until `read_rest`; a device lost on the way gives the CPU's trace.

use crate::common;
use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::gpu::GpuBackend;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::model::kv_cache::KvCache;
use transformer_viz::trace::{step_name, Op, Readback, Trace};
use transformer_viz::Transformer;

/// What a student types, one state after another: growing, cut back to an earlier word
/// (the tokens after the change are computed again), growing again.
const TYPED: [&str; 5] = [
    "The cat",
    "The cat sat on the",
    "The cat sat on the mat.",
    "The cat ran",
    "The cat ran to",
];

use common::gpu_context;

fn lecture(name: &str) -> Transformer {
    load_named(&common::models_dir(), name, WeightPrecision::F32).expect("committed model")
}

/// `a` and `b` have the same steps, shapes, masked positions and norms, their values within
/// `bound` (attention weights absolute, the others relative to their size).
fn assert_same_trace(a: &Trace, b: &Trace, bound: f32, what: &str) {
    assert_eq!(a.tokens, b.tokens, "{what}: the same tokens");
    assert_eq!(
        a.steps.len(),
        b.steps.len(),
        "{what}: the same number of steps"
    );
    for (sa, sb) in a.steps.iter().zip(&b.steps) {
        assert_eq!(
            (&sa.name, &sa.tensor.shape),
            (&sb.name, &sb.tensor.shape),
            "{what}: the same steps of the same shapes"
        );
        let attention = sa.op == Op::Softmax;
        for (i, (&x, &y)) in sa.tensor.data.iter().zip(sb.tensor.data.iter()).enumerate() {
            assert_eq!(
                x.is_infinite(),
                y.is_infinite(),
                "{what}: {} value {i}: {x} against {y} (the same keys masked)",
                sa.name
            );
            if x.is_finite() {
                let gap = (x - y).abs() / if attention { 1.0 } else { x.abs().max(1.0) };
                assert!(
                    gap <= bound,
                    "{what}: {} value {i}: {x} against {y}",
                    sa.name
                );
            }
        }
    }
    assert_eq!(a.norms.len(), b.norms.len());
    for (na, nb) in a.norms.iter().zip(&b.norms) {
        let (sa, sb) = (&na.stats, &nb.stats);
        for (x, y) in [
            (&sa.input_mean, &sb.input_mean),
            (&sa.input_std, &sb.input_std),
            (&sa.output_mean, &sb.output_mean),
            (&sa.output_std, &sb.output_std),
        ] {
            assert_eq!(
                x.len(),
                y.len(),
                "{what}: {} statistics of every token",
                na.step
            );
            let gap = x
                .iter()
                .zip(y)
                .map(|(x, y)| (x - y).abs() / x.abs().max(1.0))
                .fold(0f32, f32::max);
            assert!(
                gap <= bound,
                "{what}: {} statistics differ by {gap}",
                na.step
            );
        }
    }
}

/// The expected reuse: the tokens both texts share from the start, never the last one.
fn shared_tokens(model: &Transformer, before: Option<&str>, now: &str) -> usize {
    let now = model.encode(now).unwrap().ids();
    let Some(before) = before else { return 0 };
    let before = model.encode(before).unwrap().ids();
    before
        .iter()
        .zip(&now)
        .take_while(|(a, b)| a == b)
        .count()
        .min(now.len() - 1)
}

#[test]
fn a_pass_through_the_gpus_kv_cache_continues_the_trace_a_pass_from_the_start_would_make() {
    let lectures = [lecture("lecture-post-ln"), lecture("lecture-pre-ln")];
    let mut all: Vec<(&Transformer, &[&str])> = lectures.iter().map(|m| (m, &TYPED[..])).collect();
    // SmolLM2 (grouped-query attention, rotary, RMSNorm, Q4_1 weights): a first pass and one
    // that continues it. Each text costs it three passes of about ten seconds on a CPU driver,
    // and a third text would take the same path through the cache again.
    all.extend(common::smollm2().map(|m| (m, &TYPED[..2])));
    for (model, typed) in all {
        let name = &model.config.name;
        let gpu = GpuBackend::new(gpu_context(), &model.weights);
        let fresh = GpuBackend::new(gpu_context(), &model.weights); // passes from the start
        let mut cache = KvCache::new();
        let mut previous: Option<Trace> = None;
        let mut before: Option<&str> = None;
        for &text in typed {
            let encoding = model.encode(text).unwrap();
            let continued = common::passes::continued(
                model,
                &gpu,
                encoding.clone(),
                text,
                previous.as_ref(),
                &mut cache,
                Readback::Everything,
            )
            .unwrap();
            assert_eq!(
                gpu.failure(),
                None,
                "{name}: every operation ran on the GPU"
            );
            let expected = shared_tokens(model, before, text);
            assert_eq!(
                continued.reused, expected,
                "{name}, {text:?}: the tokens before the first change are reused"
            );
            assert_eq!(
                cache.len(),
                encoding.tokens.len(),
                "{name}: the cache holds every token"
            );
            let whole =
                common::passes::every_step_of(model, &fresh, encoding.clone(), text).unwrap();
            assert_same_trace(
                &whole,
                &continued.trace,
                1e-5,
                &format!(
                    "{name}, {text:?} ({} of {} tokens reused)",
                    continued.reused,
                    encoding.tokens.len()
                ),
            );
            // And the CPU's pass on the same tokens, within the parity bounds.
            let cpu = common::passes::every_step_of(model, &Cpu, encoding.clone(), text).unwrap();
            let d = cpu.largest_difference(&continued.trace).unwrap();
            assert!(
                d.attention < 1e-4 && d.other < 1e-3 && d.unread_steps == 0,
                "{name}, {text:?}: {d:?}"
            );
            eprintln!("{name}, {text:?}: {} of {} tokens reused; against the CPU: attention {:.1e}, other {:.1e}", continued.reused, encoding.tokens.len(), d.attention, d.other);
            previous = Some(continued.trace);
            before = Some(text);
        }
    }
}

#[test]
fn a_continued_pass_reads_back_what_the_views_read_and_the_earlier_passes_rest_waits_with_its_own()
{
    let model = lecture("lecture-pre-ln");
    let shown = step_name(Op::Softmax, Some(1));
    let readback = || Readback::views([shown.clone()]);
    let gpu = GpuBackend::new(gpu_context(), &model.weights);
    let everything = GpuBackend::new(gpu_context(), &model.weights);
    let (mut cache, mut cache_all) = (KvCache::new(), KvCache::new());
    let (mut previous, mut previous_all): (Option<Trace>, Option<Trace>) = (None, None);
    let mut left = vec![];
    for &text in &TYPED {
        let encoding = model.encode(text).unwrap();
        let partial = common::passes::continued(
            &model,
            &gpu,
            encoding.clone(),
            text,
            previous.as_ref(),
            &mut cache,
            readback(),
        )
        .unwrap();
        let whole = common::passes::continued(
            &model,
            &everything,
            encoding,
            text,
            previous_all.as_ref(),
            &mut cache_all,
            Readback::Everything,
        )
        .unwrap();
        assert_eq!(partial.reused, whole.reused);
        let trace = &partial.trace;
        // What the view reads came back with the pass, every token of it.
        let step = trace.steps.iter().find(|s| s.name == shown).unwrap();
        assert!(
            !step.tensor.data.awaits_device(),
            "{text:?}: {shown} came back with the pass"
        );
        assert_eq!(
            step.tensor.data.to_vec(),
            whole
                .trace
                .steps
                .iter()
                .find(|s| s.name == shown)
                .unwrap()
                .tensor
                .data
                .to_vec()
        );
        let waiting = trace
            .steps
            .iter()
            .filter(|s| s.tensor.data.awaits_device())
            .count();
        assert!(
            waiting > 10,
            "{text:?}: the other layers' steps stay on the device ({waiting} waiting)"
        );
        left.push(gpu.values_left());
        previous = Some(partial.trace);
        previous_all = Some(whole.trace);
    }
    eprintln!("values left on the device after each pass: {left:?}");
    // The earlier passes' rows a trace still holds wait beside the new ones; rows no trace
    // holds any more (cut by the change to "The cat ran") are let go.
    assert!(
        left[1] > left[0] && left[2] > left[1],
        "the rest grows as the text grows: {left:?}"
    );
    // The pass after the cut lets them go (during the cut's own pass, the trace before it
    // still held them): " to" adds fewer rows than " sat on the mat." held.
    assert!(left[4] < left[3], "a cut lets the cut rows go: {left:?}");
    // One readback brings every step of the last trace, equal to the pass that read all.
    assert!(pollster::block_on(gpu.read_rest()));
    assert_eq!(gpu.values_left(), 0);
    let (partial, whole) = (previous.unwrap(), previous_all.unwrap());
    assert!(
        partial.steps.iter().all(|s| !s.tensor.data.awaits_device()),
        "every step came back"
    );
    assert_same_trace(&whole, &partial, 0.0, "after read_rest");
}

#[test]
fn a_device_lost_before_a_continued_pass_gives_the_cpus_trace_from_the_start() {
    let model = lecture("lecture-post-ln");
    let gpu = GpuBackend::new(gpu_context(), &model.weights);
    let mut cache = KvCache::new();
    let first = common::passes::continued(
        &model,
        &gpu,
        model.encode(TYPED[0]).unwrap(),
        TYPED[0],
        None,
        &mut cache,
        Readback::Everything,
    )
    .unwrap();
    gpu.lose_device();
    let encoding = model.encode(TYPED[1]).unwrap();
    let next = common::passes::continued(
        &model,
        &gpu,
        encoding.clone(),
        TYPED[1],
        Some(&first.trace),
        &mut cache,
        Readback::Everything,
    )
    .unwrap();
    assert!(gpu.failure().is_some(), "the GPU says why it stopped");
    assert_eq!(
        (next.reused, cache.len()),
        (0, 0),
        "nothing is taken from the lost device"
    );
    let cpu = model.trace_tokens(encoding, TYPED[1]).unwrap();
    let d = cpu.largest_difference(&next.trace).unwrap();
    assert_eq!(
        (d.attention, d.other, d.unread_steps),
        (0.0, 0.0, 0),
        "the CPU's own trace"
    );
}
