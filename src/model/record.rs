//! How the one forward pass reports what it computes: each step's name (`Op`) and a
//! `Recorder` that is handed each intermediate value as a closure, so that a recorder that
//! keeps nothing never builds a tensor. The trace (`crate::trace`) implements it; the model
//! knows nothing of what a recorder keeps.

use ndarray::{ArrayD, ArrayViewD};
use serde::{Deserialize, Serialize};

use crate::tensor::Tensor;

/// The operations of a forward pass, in the order they can happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Op {
    Tokenize,
    TokenEmbedding,
    SegmentEmbedding,
    PositionEncoding,
    AddPosition,
    EmbeddingNorm,
    AttentionNorm,
    Query,
    Key,
    Value,
    RotaryQuery,
    RotaryKey,
    Scores,
    Mask,
    Softmax,
    WeightedSum,
    Concat,
    OutputProjection,
    AttentionResidual,
    /// The encoder's output (S, d_model), which every cross-attention of an encoder-decoder reads.
    EncoderOutput,
    CrossNorm,
    CrossQuery,
    CrossKey,
    CrossValue,
    CrossScores,
    CrossSoftmax,
    CrossWeightedSum,
    CrossConcat,
    CrossOutput,
    CrossResidual,
    FfnNorm,
    FfnUp,
    FfnGate,
    FfnActivation,
    FfnDown,
    FfnResidual,
    FinalNorm,
    Unembed,
    NextTokenProbabilities,
}

/// Statistics of a norm, per token, with the norm's learned parameters; computed only when
/// someone records them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NormStats {
    pub input_mean: Vec<f32>,
    pub input_std: Vec<f32>,
    pub output_mean: Vec<f32>,
    pub output_std: Vec<f32>,
    pub gamma: Vec<f32>,
    /// Absent for RMSNorm.
    pub beta: Option<Vec<f32>>,
}

impl NormStats {
    /// The statistics of `rows` (T, 4): each row's input mean and standard deviation, then
    /// its output's.
    fn from_rows(rows: &Tensor, gamma: Vec<f32>, beta: Option<Vec<f32>>) -> Self {
        let column = |c: usize| {
            rows.data
                .chunks_exact(4)
                .map(|r| r[c])
                .collect::<Vec<f32>>()
        };
        NormStats {
            input_mean: column(0),
            input_std: column(1),
            output_mean: column(2),
            output_std: column(3),
            gamma,
            beta,
        }
    }
}

/// What a norm's statistics are read from: `rows` (T, 4), each row's input mean and standard
/// deviation then its output's (a GPU's arrive with the pass's readback), and the norm's
/// learned parameters.
pub struct NormRows {
    pub rows: Tensor,
    pub gamma: Vec<f32>,
    /// Absent for RMSNorm.
    pub beta: Option<Vec<f32>>,
}

impl NormRows {
    pub fn stats(self) -> NormStats {
        NormStats::from_rows(&self.rows, self.gamma, self.beta)
    }
}

/// The recorder's side of a pass: each step's values come from `make`, called only by a
/// recorder that keeps them. They are a `Tensor`, whose data a GPU fills after the pass (its
/// one readback): a recorder reads no values before the pass has ended, except on the CPU.
pub trait Recorder {
    /// Records the result of `op`. `inputs` name the ops whose latest results it reads.
    fn step<F: FnOnce() -> Tensor>(&mut self, op: Op, layer: Option<usize>, inputs: &[Op], make: F);

    /// True once the recorder wants nothing more of the layer under way: the layer then stops
    /// after its attention and returns its input as it came. Only a layer run again to read
    /// a step of its attention (`trace::layered`) says so.
    fn layer_done(&self) -> bool {
        false
    }

    /// Records the result of `op`, of `shape`, which `derive` computes again from the latest
    /// results of `inputs` (in that order). `derive` must be the computation the pass ran, so
    /// that it gives the same numbers; a recorder may keep `make()` or `derive` instead.
    fn derived_step<F, D>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        inputs: &[Op],
        shape: &[usize],
        make: F,
        derive: D,
    ) where
        F: FnOnce() -> Tensor,
        D: Fn(&[ArrayViewD<f32>]) -> ArrayD<f32> + Send + Sync + 'static,
    {
        let _ = (shape, derive);
        self.step(op, layer, inputs, make);
    }

    /// Records the result of `op`, which is exactly the latest result of `input` (the mask of
    /// a model that hides nothing).
    fn unchanged_step<F: FnOnce() -> Tensor>(
        &mut self,
        op: Op,
        layer: Option<usize>,
        input: Op,
        make: F,
    ) {
        self.step(op, layer, &[input], make);
    }

    /// Records per-token statistics of the norm whose output was just recorded.
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, layer: Option<usize>, make: F);

    /// Says that layer `layer` begins, reading the latest result of `input` (the residual
    /// stream): a recorder that computes a layer's steps again on read starts from there.
    fn layer_input(&mut self, layer: usize, input: Op) {
        let _ = (layer, input);
    }

    /// Says that the pass computes the tokens from position `first` on (the ones before are
    /// in a KV cache). A recorder whose steps hold only those tokens' rows must then keep a
    /// derived step's values, not derive it from steps that lack the earlier rows.
    fn pass_starts_at(&mut self, first: usize) {
        let _ = first;
    }
}

/// Keeps nothing: the plain, untraced forward pass.
pub struct NoRecorder;

impl Recorder for NoRecorder {
    fn step<F: FnOnce() -> Tensor>(&mut self, _: Op, _: Option<usize>, _: &[Op], _: F) {}
    fn norm_stats<F: FnOnce() -> NormRows>(&mut self, _: Option<usize>, _: F) {}
}
