//! `LayeredRecorder`: a trace that keeps, for every layer, what the views read (the residual
//! stream, the attention weights, the norms' statistics) and computes a layer's other steps
//! (Q, K, V per head, scores, FFN activations...) when someone reads them, by running that
//! one layer again from its stored input. SmolLM2 has 30 layers: keeping every step at 256
//! tokens would take ~12 MB a layer, ~400 MB in all; this keeps ~3.5 MB a layer.
//!
//! It also continues a causal model's earlier trace: when a pass computes only the tokens
//! after a cached prefix (`model::forward_cached`), each kept step is the earlier trace's
//! first rows followed by the new rows, so the trace covers the whole text.

use std::sync::Arc;

use ndarray::{s, ArrayD, ArrayViewD, Axis};

use super::record::row_major;
use super::{NormRows, Op, Recorder, Tensor, TensorData, Trace, TraceRecorder};
use crate::model::backend::Cpu;
use crate::model::config::{ModelConfig, NormPlace};
use crate::model::forward::layer_forward;
use crate::model::Weights;

/// The earlier trace whose first `rows` tokens this pass did not compute again.
struct Prefix<'p> {
    trace: &'p Trace,
    rows: usize,
    /// The next of the earlier trace's norms to continue (norms are recorded in order).
    norm_index: usize,
}

pub struct LayeredRecorder<'a> {
    inner: TraceRecorder<'a>,
    /// Shared with the recipes of the steps computed on read.
    config: Arc<ModelConfig>,
    weights: Arc<Weights>,
    prefix: Option<Prefix<'a>>,
    /// Tokens in the whole trace: the prefix's and the new ones.
    total: usize,
    /// The current layer's input (T, d) and the op that holds it.
    layer_input: Option<(Tensor, Op)>,
}

impl<'a> LayeredRecorder<'a> {
    /// A recorder for a pass over `total` tokens, continuing the first `rows` tokens of
    /// `prefix` (a trace of the same model) when given.
    pub fn new(
        config: &'a ModelConfig,
        weights: Arc<Weights>,
        prefix: Option<(&'a Trace, usize)>,
        total: usize,
    ) -> Self {
        LayeredRecorder {
            inner: TraceRecorder::new(config),
            config: Arc::new(config.clone()),
            weights,
            prefix: prefix.map(|(trace, rows)| Prefix {
                trace,
                rows,
                norm_index: 0,
            }),
            total,
            layer_input: None,
        }
    }

    pub fn into_parts(self) -> (Vec<super::Step>, Vec<super::NormRecord>) {
        self.inner.into_parts()
    }

    /// The layer steps kept in memory: what the views read for every layer.
    fn keeps(&self, op: Op) -> bool {
        match op {
            Op::Softmax | Op::AttentionResidual | Op::FfnResidual => true,
            // A post-LN model's stream is the norms' output.
            Op::AttentionNorm | Op::FfnNorm => self.config.norm_place == NormPlace::Post,
            _ => false,
        }
    }

    /// The earlier trace's first rows of this step, then the new rows (`new`).
    fn continue_prefix(&self, op: Op, layer: Option<usize>, new: ArrayD<f32>) -> ArrayD<f32> {
        let Some(prefix) = &self.prefix else {
            return new;
        };
        if op == Op::NextTokenProbabilities {
            return new; // the last position's, not a row per token
        }
        let old = prefix
            .trace
            .find(op, layer)
            .expect("the earlier trace is of the same model")
            .tensor
            .view();
        let p = prefix.rows;
        // Written into one new row-major array: the trace keeps values row-major, and a
        // concatenation's layout would need a slow element-by-element copy to become so.
        let token_axis = if new.ndim() == 3 { 1 } else { 0 };
        let mut shape = new.shape().to_vec();
        shape[token_axis] += p;
        let mut out = ArrayD::<f32>::zeros(shape.clone());
        let rows = new.shape()[token_axis];
        match new.ndim() {
            1 | 2 => {
                out.slice_axis_mut(Axis(0), (..p).into())
                    .assign(&old.slice_axis(Axis(0), (..p).into()));
                out.slice_axis_mut(Axis(0), (p..p + rows).into())
                    .assign(&new);
            }
            _ => {
                // Attention weights (heads, queries, keys): the earlier queries saw only the
                // earlier keys, so their weights on the new keys stay zero, as the causal mask
                // makes them.
                let old = old
                    .into_dimensionality::<ndarray::Ix3>()
                    .expect("per-head steps have three axes");
                let mut out3 = out
                    .view_mut()
                    .into_dimensionality::<ndarray::Ix3>()
                    .expect("three axes");
                out3.slice_mut(s![.., ..p, ..p])
                    .assign(&old.slice(s![.., ..p, ..p]));
                out3.slice_mut(s![.., p.., ..]).assign(
                    &new.view()
                        .into_dimensionality::<ndarray::Ix3>()
                        .expect("three axes"),
                );
            }
        }
        out
    }

    /// A step computed on read: layer `layer` run again from its input, keeping only `op`.
    fn on_read(&mut self, op: Op, layer: usize, inputs: &[Op], mut shape: Vec<usize>) {
        // The step holds every token: the layer is run again on the whole input.
        let token_axis = if shape.len() == 3 { 1 } else { 0 };
        shape[token_axis] = self.total;
        let (input, stream) = self
            .layer_input
            .clone()
            .expect("forward reports each layer's input before its steps");
        let (weights, config) = (self.weights.clone(), self.config.clone());
        let recipe = Box::new(move || replay(&weights, &config, layer, &input, stream, op));
        self.inner.push(
            op,
            Some(layer),
            inputs,
            Tensor {
                shape,
                data: TensorData::computed_on_read(recipe),
            },
        );
    }
}

/// Runs layer `layer` again on its input and returns the result of `want`.
fn replay(
    weights: &Weights,
    config: &ModelConfig,
    layer: usize,
    input: &Tensor,
    stream: Op,
    want: Op,
) -> Vec<f32> {
    let x = input.view2().expect("a layer's input is (T, d_model)");
    let mut pick = Pick { want, found: None };
    // Only decoder-only and encoder models are traced this way (an encoder-decoder's layers
    // need the encoder's output: `Transformer::translate` keeps every step instead).
    layer_forward(
        &Cpu,
        x.to_owned(),
        &weights.layers[layer],
        config,
        layer,
        stream,
        &mut pick,
        None,
        0,
        None,
    );
    pick.found
        .expect("a layer records the same steps every time it runs")
}

/// Keeps the result of one op.
struct Pick {
    want: Op,
    found: Option<Vec<f32>>,
}

impl Recorder for Pick {
    fn step<F: FnOnce() -> Tensor>(&mut self, op: Op, _: Option<usize>, _: &[Op], make: F) {
        if op == self.want && self.found.is_none() {
            self.found = Some(row_major(make().into_array()));
        }
    }
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, _: Option<usize>, _: F) {}
}

// Only the CPU's passes are recorded this way (`Transformer::continue_trace`): every `make`
// gives values at once.
impl Recorder for LayeredRecorder<'_> {
    fn step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        make: F,
    ) {
        match layer {
            Some(l) if !self.keeps(op) => {
                let shape = make().shape;
                self.on_read(op, l, inputs, shape);
            }
            _ if op == Op::Unembed => {
                // Every position's logits, (T, vocab), from the final hidden states: 50 MB at
                // 256 tokens for SmolLM2, so computed only if the stepper shows them.
                let hidden = inputs
                    .first()
                    .and_then(|&o| self.inner.latest(o))
                    .map(|s| s.tensor.clone());
                let Some(hidden) = hidden else {
                    return self.inner.step(op, layer, inputs, make);
                };
                let weights = self.weights.clone();
                let config = self.config.clone();
                let vocab = config.vocab_size;
                let recipe = Box::new(move || {
                    let x = hidden
                        .view2()
                        .expect("final hidden states are (T, d_model)"); // (T, d)
                    let u = weights
                        .unembedding(&config)
                        .expect("a model with an Unembed step has a head");
                    row_major(u.multiply_rows(x, 0, u.rows()).into_dyn()) // (T, vocab)
                });
                let shape = vec![self.total, vocab];
                self.inner.push(
                    op,
                    layer,
                    inputs,
                    Tensor {
                        shape,
                        data: TensorData::computed_on_read(recipe),
                    },
                );
            }
            _ => {
                let array = self.continue_prefix(op, layer, make().into_array());
                self.inner
                    .step(op, layer, inputs, || Tensor::from_array(array));
            }
        }
    }

    fn derived_step<F, D>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        shape: &[usize],
        make: F,
        _derive: D,
    ) where
        F: FnOnce() -> Tensor,
        D: Fn(&[ArrayViewD<f32>]) -> ArrayD<f32> + Send + Sync + 'static,
    {
        match layer {
            Some(l) if !self.keeps(op) => self.on_read(op, l, inputs, shape.to_vec()),
            _ => self.step(op, layer, inputs, make),
        }
    }

    fn unchanged_step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        input: Op,
        make: F,
    ) {
        match layer {
            Some(l) if !self.keeps(op) => {
                let shape = self
                    .inner
                    .latest(input)
                    .map(|s| s.tensor.shape.clone())
                    .unwrap_or_else(|| make().shape);
                self.on_read(op, l, &[input], shape);
            }
            _ => self.step(op, layer, &[input], make),
        }
    }

    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, layer: Option<usize>, make: F) {
        let mut stats = make().stats();
        if let Some(prefix) = &mut self.prefix {
            let old = &prefix.trace.norms[prefix.norm_index].stats;
            let p = prefix.rows;
            let join = |old: &[f32], new: &[f32]| {
                old[..p].iter().chain(new).copied().collect::<Vec<f32>>()
            };
            stats.input_mean = join(&old.input_mean, &stats.input_mean);
            stats.input_std = join(&old.input_std, &stats.input_std);
            stats.output_mean = join(&old.output_mean, &stats.output_mean);
            stats.output_std = join(&old.output_std, &stats.output_std);
            prefix.norm_index += 1;
        }
        self.inner.push_norm(layer, stats);
    }

    fn layer_input(&mut self, layer: usize, input: Op) {
        let _ = layer;
        self.layer_input = self.inner.latest(input).map(|s| (s.tensor.clone(), input));
    }
}
