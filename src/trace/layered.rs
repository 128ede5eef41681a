//! `LayeredRecorder`: a trace that keeps, for every layer, what the views read (the residual
//! stream, the attention weights, the norms' statistics) and computes a layer's other steps
//! (Q, K, V per head, scores, FFN activations...) when someone reads them, by running that
//! one layer again from its stored input. SmolLM2 has 30 layers: keeping every step at 256
//! tokens would take ~12 MB a layer, ~400 MB in all; this keeps ~3.5 MB a layer. A layer's
//! queries, keys and values are read together (the query view): one run gives all three.
//!
//! It also continues a causal model's earlier trace: when a pass computes only the tokens
//! after a cached prefix, each kept step is the earlier trace's first rows followed by the
//! new rows (joined as `ContinuedRecorder` joins them), so the trace covers the whole text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use ndarray::{ArrayD, ArrayViewD};

use super::continued::{join, join_stats};
use super::{NormRows, Op, Recorder, Tensor, TensorData, Trace, TraceRecorder};
use crate::model::config::{ModelConfig, NormPlace};
use crate::model::cpu::Cpu;
use crate::model::edits::Edits;
use crate::model::forward::layer_forward;
use crate::model::Weights;
use crate::tensor::join_rows;
use crate::tensor::row_major;

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
    /// The pass's changes, made again when a layer is computed again.
    edits: Arc<Edits>,
    prefix: Option<Prefix<'a>>,
    /// Tokens in the whole trace: the prefix's and the new ones.
    total: usize,
    /// The current layer, to be run again for its steps computed on read.
    layer: Option<Arc<LayerReplay>>,
}

impl<'a> LayeredRecorder<'a> {
    /// A recorder for a pass over `total` tokens, continuing the first `rows` tokens of
    /// `prefix` (a trace of the same model) when given.
    pub fn new(
        config: &'a ModelConfig,
        weights: Arc<Weights>,
        edits: Arc<Edits>,
        prefix: Option<(&'a Trace, usize)>,
        total: usize,
    ) -> Self {
        LayeredRecorder {
            inner: TraceRecorder::new(config),
            config: Arc::new(config.clone()),
            weights,
            edits,
            prefix: prefix.map(|(trace, rows)| Prefix {
                trace,
                rows,
                norm_index: 0,
            }),
            total,
            layer: None,
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

    /// The earlier trace's first rows of this step, then the new rows (`new`), joined as a
    /// continued pass joins them (`continued::join`), kept as one array: the page reads these
    /// steps on every keystroke, and a join once read keeps its values beside its parts.
    fn continue_prefix(&self, op: Op, layer: Option<usize>, new: Tensor) -> Tensor {
        let prefix = self.prefix.as_ref().map(|p| (p.trace, p.rows));
        let joined = join(prefix, op, layer, new);
        let parts = joined.data.joined_parts();
        if parts.is_empty() {
            return joined;
        }
        Tensor {
            data: join_rows(parts, &joined.shape).into(),
            shape: joined.shape,
        }
    }

    /// A step computed on read: the current layer run again from its input, giving `op`.
    fn on_read(&mut self, op: Op, layer: usize, inputs: &[Op], mut shape: Vec<usize>) {
        // The step holds every token: the layer is run again on the whole input.
        let token_axis = if shape.len() == 3 { 1 } else { 0 };
        shape[token_axis] = self.total;
        let replay = self
            .layer
            .clone()
            .expect("forward reports each layer's input before its steps");
        debug_assert_eq!(replay.layer, layer);
        let recipe = Box::new(move || replay.read(op));
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

/// The steps read together: running the layer once for one of them keeps the others until
/// they are read.
fn read_with(op: Op) -> &'static [Op] {
    const ATTENTION_INPUTS: &[Op] = &[
        Op::Query,
        Op::Key,
        Op::Value,
        Op::RotaryQuery,
        Op::RotaryKey,
    ];
    if ATTENTION_INPUTS.contains(&op) {
        ATTENTION_INPUTS
    } else {
        &[]
    }
}

/// One layer of a pass, run again from its input when one of its steps not kept is read.
struct LayerReplay {
    weights: Arc<Weights>,
    config: Arc<ModelConfig>,
    edits: Arc<Edits>,
    layer: usize,
    /// The layer's input (T, d) and the op that holds it.
    input: Tensor,
    stream: Op,
    /// Steps a run gave beside the one read, kept until they are read (at most the layer's
    /// queries, keys and values; `Trace::bytes_in_memory` does not count them). The first read
    /// of one of them runs the layer and gives them all, so the layer never runs for them again.
    unread: Mutex<HashMap<Op, Vec<f32>>>,
}

impl LayerReplay {
    /// The values of step `want` (each step's recipe reads it once: its storage keeps them).
    fn read(&self, want: Op) -> Vec<f32> {
        let mut unread = self.unread.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(values) = unread.remove(&want) {
            return values;
        }
        let mut found = replay(
            &self.weights,
            &self.config,
            &self.edits,
            self.layer,
            &self.input,
            self.stream,
            want,
        );
        let values = found
            .remove(&want)
            .expect("a layer records the same steps every time it runs");
        unread.extend(found);
        values
    }
}

/// Runs layer `layer` again on its input and returns the result of `want` and of the steps
/// read with it (`read_with`) that the layer has.
fn replay(
    weights: &Weights,
    config: &ModelConfig,
    edits: &Edits,
    layer: usize,
    input: &Tensor,
    stream: Op,
    want: Op,
) -> HashMap<Op, Vec<f32>> {
    let x = input.view2().expect("a layer's input is (T, d_model)");
    let mut pick = Pick {
        want,
        with: read_with(want),
        found: HashMap::new(),
    };
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
        edits,
    );
    pick.found
}

/// Keeps the result of one op and of those read with it (the first of each).
struct Pick {
    want: Op,
    with: &'static [Op],
    found: HashMap<Op, Vec<f32>>,
}

impl Recorder for Pick {
    fn step<F: FnOnce() -> Tensor>(&mut self, op: Op, _: Option<usize>, _: &[Op], make: F) {
        if (op == self.want || self.with.contains(&op)) && !self.found.contains_key(&op) {
            self.found.insert(op, row_major(make().into_array()));
        }
    }

    /// Once the attention gave the step read (and those read with it, which the same
    /// attention gives), the rest of the layer (its feed-forward) is not run.
    fn layer_done(&self) -> bool {
        self.found.contains_key(&self.want)
    }
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, _: Option<usize>, _: F) {}
}

// Only passes on a backend whose values are ready at once are recorded this way (the CPU's:
// `Keep::Layers` in `Transformer::pass`): every `make` gives values at once.
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
                let tensor = self.continue_prefix(op, layer, make());
                self.inner.step(op, layer, inputs, || tensor);
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
            join_stats(
                &prefix.trace.norms[prefix.norm_index].stats,
                prefix.rows,
                &mut stats,
            );
            prefix.norm_index += 1;
        }
        self.inner.push_norm(layer, stats);
    }

    fn layer_input(&mut self, layer: usize, input: Op) {
        self.layer = self.inner.latest(input).map(|s| {
            Arc::new(LayerReplay {
                weights: self.weights.clone(),
                config: self.config.clone(),
                edits: self.edits.clone(),
                layer,
                input: s.tensor.clone(),
                stream: input,
                unread: Mutex::default(),
            })
        });
    }
}
