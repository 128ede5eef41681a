//! A trace keeps the tensors that are cheap to compute again from kept ones (attention
//! scores, the mask, head outputs and their concatenation, the FFN activation) as recipes, and a mask that hides nothing as the scores
//! themselves. Read, every step must give the numbers the pass computed, as a trace that
//! kept every value does; and the trace must hold far less memory than that one.

use crate::common;
use ndarray::{ArrayD, ArrayViewD};
use transformer_viz::checkpoints::fixture::{decoder_config, encoder_config, fixture};
use transformer_viz::model::config::Activation;
use transformer_viz::model::{forward, ModelConfig};
use transformer_viz::trace::{NormRows, Op, Recorder, Tensor, Trace, TraceRecorder};
use transformer_viz::Transformer;

/// Keeps the value of every step as the pass computed it (never a recipe, never shared):
/// the trace as it was before recipes.
struct KeepEverything<'c>(TraceRecorder<'c>);

impl Recorder for KeepEverything<'_> {
    fn step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        make: F,
    ) {
        self.0.step(op, layer, inputs, make);
    }
    fn derived_step<F, D>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        _: &[usize],
        make: F,
        _: D,
    ) where
        F: FnOnce() -> Tensor,
        D: Fn(&[ArrayViewD<f32>]) -> ArrayD<f32> + Send + Sync + 'static,
    {
        self.0.step(op, layer, inputs, make);
    }
    fn unchanged_step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        input: Op,
        make: F,
    ) {
        self.0.step(op, layer, &[input], make);
    }
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, layer: Option<usize>, make: F) {
        self.0.norm_stats(layer, make);
    }
}

fn full_trace(model: &Transformer, text: &str) -> Trace {
    let encoding = model.encode(text).unwrap();
    let mut rec = KeepEverything(TraceRecorder::new(&model.config));
    forward(&encoding.ids(), &model.weights, &model.config, &mut rec);
    let (steps, norms) = rec.0.into_parts();
    Trace {
        model: model.config.name.clone(),
        config: model.config.clone(),
        text: text.to_string(),
        tokens: encoding.tokens,
        truncated: encoding.truncated,
        steps,
        norms,
        source: None,
    }
}

/// Bytes of every step's values, as if each were kept on its own.
fn bytes_of_every_step(trace: &Trace) -> usize {
    trace
        .steps
        .iter()
        .map(|s| s.tensor.shape.iter().product::<usize>() * 4)
        .sum()
}

/// Every step of `model`'s trace, read, equals the fully kept trace bit for bit, and the
/// JSON (what the CLI writes) is the same text.
fn assert_same_numbers(model: &Transformer, text: &str) {
    let kept = full_trace(model, text);
    let trace = model.trace(text).unwrap();
    assert_eq!(trace.steps.len(), kept.steps.len());
    for (ours, full) in trace.steps.iter().zip(&kept.steps) {
        assert_eq!(
            (ours.op, ours.layer, &ours.name, &ours.inputs),
            (full.op, full.layer, &full.name, &full.inputs)
        );
        assert_eq!(ours.tensor.shape, full.tensor.shape, "{}", ours.name);
        let (a, b): (Vec<u32>, Vec<u32>) = (
            ours.tensor.data.iter().map(|v| v.to_bits()).collect(),
            full.tensor.data.iter().map(|v| v.to_bits()).collect(),
        );
        assert!(
            a == b,
            "{}: the values read differ from the values the pass computed",
            ours.name
        );
    }
    assert_eq!(
        serde_json::to_string(&trace).unwrap(),
        serde_json::to_string(&kept).unwrap()
    );
}

#[test]
fn minilm_steps_read_the_numbers_the_pass_computed() {
    assert_same_numbers(
        common::minilm(),
        "The quick brown fox jumps over the lazy dog. Émigrés 東京 🙂",
    );
}

#[test]
fn fixture_steps_read_the_numbers_the_pass_computed() {
    // ReLU encoder; Llama-style causal decoder (rotary, grouped-query, SwiGLU); a causal GELU model.
    let causal_gelu = ModelConfig {
        activation: Activation::Gelu,
        causal: true,
        ..encoder_config()
    };
    for config in [encoder_config(), decoder_config(), causal_gelu] {
        let name = config.name.clone();
        let model = fixture(config, 11).unwrap();
        for text in ["a", "mask the future", "twenty-one characters"] {
            assert_same_numbers(&model, text);
        }
        let trace = model.trace("mask the future").unwrap();
        let mask = &trace.find(Op::Mask, Some(1)).unwrap().tensor.data;
        let scores = &trace.find(Op::Scores, Some(1)).unwrap().tensor.data;
        assert_eq!(
            mask.shares_storage_with(scores),
            !model.config.causal,
            "{name}: the mask shares the scores' storage iff it hides nothing"
        );
    }
}

#[test]
fn a_layers_queries_keys_and_values_read_in_any_order_are_the_pass_s() {
    // One run of a layer gives its queries, keys and values (rotary ones too); whichever is
    // read first, each of them, read then or later, is what the pass computed.
    let model = fixture(decoder_config(), 11).unwrap();
    let text = "mask the future";
    let kept = full_trace(&model, text);
    let group = [
        Op::Value,
        Op::RotaryKey,
        Op::Query,
        Op::Key,
        Op::RotaryQuery,
    ];
    for first in 0..group.len() {
        let trace = model.trace(text).unwrap();
        for layer in 0..model.config.n_layers {
            let order = group.iter().cycle().skip(first).take(group.len());
            for &op in order {
                let ours = &trace.find(op, Some(layer)).unwrap().tensor.data;
                let full = &kept.find(op, Some(layer)).unwrap().tensor.data;
                assert!(
                    ours.iter()
                        .map(|v| v.to_bits())
                        .eq(full.iter().map(|v| v.to_bits())),
                    "{op:?} of layer {layer}, read after {:?}: not the pass's values",
                    group[first]
                );
            }
        }
    }
}

#[test]
fn a_512_token_minilm_trace_keeps_the_large_tensors_as_recipes() {
    let model = common::minilm();
    let text = vec!["the cat sat on a mat"; 100].join(" ");
    let trace = model.trace(&text).unwrap();
    assert_eq!(trace.len(), 512);
    let (c, t) = (&model.config, trace.len());
    let every_step = bytes_of_every_step(&trace);
    // Per layer: scores and mask (heads, T, T), head outputs (heads, T, hd), their
    // concatenation (T, heads * hd) and the activation (T, d_ff) are not in memory.
    let computed_on_read =
        c.n_layers * (2 * c.n_heads * t * t + 2 * c.n_heads * t * c.head_dim + t * c.d_ff) * 4;
    assert_eq!(trace.bytes_in_memory(), every_step - computed_on_read);
    eprintln!(
        "512 tokens: {:.0} MB in memory, {:.0} MB if every step were kept",
        trace.bytes_in_memory() as f64 / 1e6,
        every_step as f64 / 1e6
    );
    assert!(trace.bytes_in_memory() < every_step / 2);

    // Writing the trace (the CLI's JSON, the page's export) computes what it has not kept
    // for the writing only.
    let before = trace.bytes_in_memory();
    let json = serde_json::to_string(&trace.find(Op::Scores, Some(0)).unwrap().tensor).unwrap();
    assert!(json.len() > c.n_heads * t * t);
    assert_eq!(trace.bytes_in_memory(), before);

    // Reading a layer's scores computes them (and the mask, the same storage) once.
    let before = trace.bytes_in_memory();
    let scores = trace.scores(2, 5).unwrap().to_owned(); // (T, T)
    assert_eq!(trace.bytes_in_memory(), before + c.n_heads * t * t * 4);
    let mask = trace
        .find(Op::Mask, Some(2))
        .unwrap()
        .tensor
        .view3()
        .unwrap();
    assert_eq!(mask.index_axis(ndarray::Axis(0), 5), scores);
    assert_eq!(trace.bytes_in_memory(), before + c.n_heads * t * t * 4);
}
