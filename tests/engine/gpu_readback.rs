//! A GPU pass reads back what the views on screen read, and the rest when asked: the page
//! finds a view's reads by drawing it once on a canvas that keeps nothing (`draw::reads`),
//! the pass's readback brings those steps (`trace::Readback::Steps`), the others stay on the
//! device (`TensorData::awaits_device`) until `GpuBackend::read_rest`. Checked on lavapipe
//! (Mesa's CPU Vulkan driver; see `tests/engine/gpu_kernels.rs`): each view drawn from the partial
//! trace is the view drawn from the whole one, what it reads has all come back, the rest
//! arrives with `read_rest` equal to a pass that read everything, and a device lost before
//! then says so.

use crate::common;
use serde_json::json;
use transformer_viz::checkpoints::{load_named, WeightPrecision};
use transformer_viz::draw::reads::{steps_read, waits_for_device};
use transformer_viz::draw::view::{draw_view, view_svg, View};
use transformer_viz::gpu::GpuBackend;
use transformer_viz::model::cpu::Cpu;
use transformer_viz::trace::{step_name, Op, Readback, Trace, SOURCE_STEP};
use transformer_viz::Transformer;

const TEXT: &str = "The quick brown fox jumps over the lazy dog, and the dog sleeps on.";
const SIZE: (u32, u32) = (900, 640);

use common::gpu_context;

fn view(spec: serde_json::Value) -> View {
    serde_json::from_value(spec).expect("a view the page draws")
}

/// The names of the steps `view` reads of `trace`.
fn names_read(model: &Transformer, trace: &Trace, view: &View) -> Vec<String> {
    steps_read(trace, SIZE, |area| {
        draw_view(area, model, trace, view, false)
    })
}

/// The page's readback for `names`: those steps and the tokens and logits.
fn readback(names: &[String]) -> Readback {
    Readback::views(names.iter().cloned())
}

fn values(trace: &Trace) -> usize {
    trace
        .steps
        .iter()
        .map(|s| s.tensor.shape.iter().product::<usize>())
        .sum()
}

#[test]
fn drawing_a_view_finds_exactly_the_steps_it_reads() {
    let model = common::minilm();
    let trace = common::passes::every_step(model, &Cpu, TEXT).expect("cpu trace");
    let name = |op, layer| step_name(op, layer);
    // One head large reads its layer's attention weights, nothing else.
    assert_eq!(
        names_read(
            model,
            &trace,
            &view(json!({"kind": "head", "layer": 2, "head": 5}))
        ),
        vec![name(Op::Softmax, Some(2))]
    );
    // A norm's chart reads its input and output (its statistics are kept beside the steps).
    let norm = &trace.norms[3];
    let read = names_read(model, &trace, &view(json!({"kind": "norm", "index": 3})));
    assert!(
        read.contains(&norm.step),
        "{read:?} holds the norm's output {}",
        norm.step
    );
    assert!(read.len() <= 3, "{read:?}: the norm's input and output");
    // A derived step (the scores are computed again from the queries and keys when read)
    // reads what it is computed from.
    let scores = trace
        .steps
        .iter()
        .position(|s| s.op == Op::Scores && s.layer == Some(1))
        .expect("scores of layer 1");
    let read = names_read(
        model,
        &trace,
        &view(json!({"kind": "step", "index": scores, "head": 0})),
    );
    assert!(read.contains(&trace.steps[scores].name), "{read:?}");
    // Views of the model alone read no step of the pass.
    assert_eq!(
        names_read(
            model,
            &trace,
            &view(json!({"kind": "norm_parameters", "index": 0}))
        ),
        Vec::<String>::new()
    );
}

/// For each view: a pass reading back only what it reads draws it as a pass that read
/// everything; the other steps wait on the device, then `read_rest` brings them.
fn check_views(model: &Transformer, specs: &[serde_json::Value]) {
    transformer_viz::draw::files::register_fonts();
    let backend = GpuBackend::new(gpu_context(), &model.weights);
    let encoding = || model.encode(TEXT).expect("tokens");
    let whole = common::passes::reading(model, &backend, encoding(), TEXT, Readback::Everything)
        .expect("whole pass");
    assert_eq!(
        backend.values_left(),
        0,
        "a pass that reads everything leaves nothing on the device"
    );
    for spec in specs {
        let v = view(spec.clone());
        let names = names_read(model, &whole, &v);
        let partial = common::passes::reading(model, &backend, encoding(), TEXT, readback(&names))
            .expect("partial pass");
        assert_eq!(backend.failure(), None);
        let waiting = partial
            .steps
            .iter()
            .filter(|s| s.tensor.data.awaits_device())
            .count();
        let left = backend.values_left();
        eprintln!("{} {spec}: read {} steps with the pass, {waiting} of {} waiting; {left} of {} values left on the device", model.config.name, names.len(), partial.steps.len(), values(&whole));
        assert!(
            waiting > 0 && left > 0,
            "{spec}: some steps wait on the device"
        );
        let read = steps_read(&partial, SIZE, |area| {
            draw_view(area, model, &partial, &v, false)
        });
        assert!(
            !waits_for_device(&partial, &read),
            "{spec}: every value the view reads came back with the pass"
        );
        assert_eq!(
            view_svg(model, &partial, &v, SIZE).expect("drawn"),
            view_svg(model, &whole, &v, SIZE).expect("drawn"),
            "{spec}: the same chart from either pass"
        );
        // A view of a step left on the device waits for it.
        let left_step = partial
            .steps
            .iter()
            .position(|s| s.tensor.data.awaits_device())
            .expect("a step left");
        let step_view = view(json!({"kind": "step", "index": left_step, "head": 0}));
        let read = steps_read(&partial, SIZE, |area| {
            draw_view(area, model, &partial, &step_view, false)
        });
        assert!(
            waits_for_device(&partial, &read),
            "{spec}: step {} waits for the device",
            partial.steps[left_step].name
        );
        // The rest, when asked: every step then holds the whole pass's values.
        assert!(
            pollster::block_on(backend.read_rest()),
            "the rest came back"
        );
        assert_eq!(backend.values_left(), 0);
        assert_same_values(&partial, &whole);
        assert_eq!(partial.norms.len(), whole.norms.len());
    }
}

#[test]
fn minilm_reads_back_what_the_views_on_screen_read_and_the_rest_when_asked() {
    check_views(
        common::minilm(),
        &[
            json!({"kind": "head", "layer": 3, "head": 7}),
            json!({"kind": "grid", "layer": 0, "head": 0}),
            json!({"kind": "residual"}),
            json!({"kind": "norm", "index": 4}),
        ],
    );
}

#[test]
fn a_causal_models_pass_reads_back_what_its_views_read() {
    let model = load_named(
        &common::models_dir(),
        "lecture-pre-ln",
        WeightPrecision::F32,
    )
    .expect("committed model");
    check_views(
        &model,
        &[
            json!({"kind": "lines", "layer": 1, "head": 0, "focus": null}),
            json!({"kind": "prediction", "top": 10, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "seed": 1}),
            json!({"kind": "logit_lens"}),
        ],
    );
}

/// Every step of `partial` (its encoder's pass's too) holds `whole`'s values.
fn assert_same_values(partial: &Trace, whole: &Trace) {
    let (p, w): (Vec<_>, Vec<_>) = (
        partial.named_steps().collect(),
        whole.named_steps().collect(),
    );
    assert_eq!(p.len(), w.len());
    for ((name, p), (_, w)) in p.into_iter().zip(w) {
        assert!(!p.tensor.data.awaits_device(), "{name}: read back");
        assert_eq!(
            p.tensor.view(),
            w.tensor.view(),
            "{name}: the same values as the pass that read everything"
        );
    }
}

#[test]
fn an_encoder_decoders_passes_read_back_what_its_views_read_and_the_rest_together() {
    transformer_viz::draw::files::register_fonts();
    let model = load_named(
        &common::models_dir(),
        "lecture-reverse",
        WeightPrecision::F32,
    )
    .expect("committed model");
    let backend = GpuBackend::new(gpu_context(), &model.weights);
    let source = "the rest comes back";
    let whole = common::passes::translation(&model, &backend, source, Readback::Everything)
        .expect("whole translation");
    assert_eq!(
        backend.values_left(),
        0,
        "a translation that reads everything leaves nothing on the device"
    );
    let whole = whole.trace;
    let encoder_steps = whole
        .source
        .as_ref()
        .expect("the encoder's pass")
        .steps
        .len();
    // The cross-attention chart reads the decoder's cross-attention weights and no encoder step.
    let cross = view(json!({"kind": "cross_attention", "layer": 1, "head": 0}));
    let names = names_read(&model, &whole, &cross);
    assert_eq!(names, vec![step_name(Op::CrossSoftmax, Some(1))]);
    let partial = common::passes::translation(&model, &backend, source, readback(&names))
        .expect("partial translation");
    assert_eq!(backend.failure(), None);
    assert_eq!(
        partial.output,
        source.chars().rev().collect::<String>(),
        "the greedy steps' logits came back: the same output"
    );
    let partial = partial.trace;
    let waiting: Vec<String> = partial
        .named_steps()
        .filter(|(_, s)| s.tensor.data.awaits_device())
        .map(|(n, _)| n)
        .collect();
    let encoder_waiting = waiting
        .iter()
        .filter(|n| n.starts_with(SOURCE_STEP))
        .count();
    eprintln!("lecture-reverse: {} of {} steps waiting ({encoder_waiting} of the encoder's {encoder_steps}); {} values left on the device", waiting.len(), partial.named_steps().count(), backend.values_left());
    // No view read the encoder's pass: all of it that the device computed stays there (the
    // embeddings are computed on the CPU before the pass goes up to the device).
    let on_cpu_ops = [
        Op::Tokenize,
        Op::TokenEmbedding,
        Op::SegmentEmbedding,
        Op::PositionEncoding,
        Op::AddPosition,
    ];
    let encoder_back: Vec<Op> = partial
        .source
        .as_ref()
        .unwrap()
        .steps
        .iter()
        .filter(|s| !s.tensor.data.awaits_device())
        .map(|s| s.op)
        .collect();
    assert!(
        encoder_back.iter().all(|op| on_cpu_ops.contains(op)),
        "only the CPU's steps of the encoder's pass are here: {encoder_back:?}"
    );
    assert!(encoder_waiting > encoder_steps / 2);
    assert!(
        waiting.len() > encoder_steps,
        "and so do the decoder's steps no view read"
    );
    assert!(!waits_for_device(&partial, &names));
    assert_eq!(
        view_svg(&model, &partial, &cross, SIZE).expect("drawn"),
        view_svg(&model, &whole, &cross, SIZE).expect("drawn"),
        "the same chart from either pass"
    );
    // The rest of both passes (the encoder's was left by the pass before the decoder's) comes
    // back in one readback.
    assert!(
        pollster::block_on(backend.read_rest()),
        "the rest came back"
    );
    assert_eq!(backend.values_left(), 0);
    assert!(!partial.awaits_device());
    assert_same_values(&partial, &whole);
    // An encoder step asked for by its name behind SOURCE_STEP comes back with the pass.
    let encoder_attention = format!("{SOURCE_STEP}{}", step_name(Op::Softmax, Some(0)));
    let asked = vec![encoder_attention.clone()];
    let partial = common::passes::translation(&model, &backend, source, readback(&asked))
        .expect("partial translation")
        .trace;
    assert!(
        partial
            .named_steps()
            .any(|(n, s)| n == encoder_attention && !s.tensor.data.awaits_device()),
        "{encoder_attention} came back"
    );
    assert!(!waits_for_device(&partial, &asked));
    assert!(partial.awaits_device(), "the other steps did not");
    assert!(pollster::block_on(backend.read_rest()));
    assert_same_values(&partial, &whole);
}

#[test]
fn a_device_lost_before_the_rest_is_read_says_so() {
    let model = common::minilm();
    let backend = GpuBackend::new(gpu_context(), &model.weights);
    let names = vec![step_name(Op::Softmax, Some(0))];
    let partial = common::passes::reading(
        model,
        &backend,
        model.encode(TEXT).expect("tokens"),
        TEXT,
        readback(&names),
    )
    .expect("partial pass");
    backend.lose_device();
    assert!(
        !pollster::block_on(backend.read_rest()),
        "the rest cannot come back from a lost device"
    );
    assert!(backend.failure().is_some(), "and the backend says why");
    assert!(
        partial.steps.iter().any(|s| s.tensor.data.awaits_device()),
        "those values never arrived"
    );
}
