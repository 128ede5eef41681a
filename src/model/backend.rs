//! What the one forward pass asks of the hardware: the products, norms, attention arithmetic
//! and the moves between them (a residual sum, heads split and merged), in a small trait.
//! `Cpu` is the reference (this crate's ndarray and WebAssembly SIMD code, each product shared
//! among the threads there are: `model::threads`); `crate::gpu::GpuBackend` runs the same
//! operations as WGSL kernels. The pass, its trace and every step's shape are the same
//! whichever backend computes them.
//!
//! A backend keeps the pass's tensors where it computes them (`Rows`, `Heads`): on the CPU
//! they are arrays, on a GPU buffers that stay on the device from one operation to the next.
//! A recorder's values come from `trace_rows` / `trace_heads`: at once on the CPU; on a GPU
//! they are filled by `finish`, which reads back every tensor asked for in one submission at
//! the end of the pass (asynchronously: a browser cannot block on a readback). So only what
//! the recorder keeps comes back, in one round trip.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use ndarray::{Array2, Array3};

use super::config::{Activation, NormKind};
use super::edits::Overwrite;
use super::linear::Linear;
use super::matrix::Matrix;
use super::weights::NormWeights;
use crate::tensor::Tensor;

/// A tensor's shape, wherever it is kept.
pub trait Shaped {
    fn dims(&self) -> &[usize];
}

impl Shaped for Array2<f32> {
    fn dims(&self) -> &[usize] {
        self.shape()
    }
}

impl Shaped for Array3<f32> {
    fn dims(&self) -> &[usize] {
        self.shape()
    }
}

// The futures stay on the thread that made them (a browser's GPU objects cannot move).
#[allow(async_fn_in_trait)]
pub trait Backend {
    /// A (T, width) tensor of the pass: token rows.
    type Rows: Shaped;
    /// A per-head tensor of the pass: (heads, T, hd) or (heads, Tq, Tk).
    type Heads: Shaped + Clone;

    /// A short name for status lines and logs ("cpu", or the adapter's).
    fn name(&self) -> String;

    /// Rows computed on the CPU (the embeddings, an encoder's output) handed to the backend.
    fn rows(&self, x: Array2<f32>) -> Self::Rows;
    /// y (T, out) = x (T, in) · Wᵀ + b.
    fn linear(&self, x: &Self::Rows, layer: &Linear) -> Self::Rows;
    /// logits (T, vocab) = x (T, d) · Uᵀ, U (vocab, d) the unembedding.
    fn unembed(&self, x: &Self::Rows, unembedding: &Matrix) -> Self::Rows;
    /// The last row of x (T, d): (1, d).
    fn last_row(&self, x: &Self::Rows) -> Self::Rows;
    /// LayerNorm or RMSNorm of each row, with gamma and beta.
    fn norm(&self, kind: NormKind, w: &NormWeights, x: &Self::Rows, eps: f32) -> Self::Rows;
    /// (T, 4): each row's mean and standard deviation in `x`, then in `y` (a norm's input and
    /// output), for the layer-norm view.
    fn row_stats(&self, x: &Self::Rows, y: &Self::Rows) -> Self::Rows;
    /// x + y (T, d): a residual connection.
    fn add(&self, x: Self::Rows, y: &Self::Rows) -> Self::Rows;
    /// (T, heads · hd) -> (heads, T, hd)
    fn split_heads(&self, x: Self::Rows, heads: usize, head_dim: usize) -> Self::Heads;
    /// (heads, T, hd) -> (T, heads · hd)
    fn merge_heads(&self, x: Self::Heads) -> Self::Rows;
    /// (heads, Tq, Tk) = scale · q (heads, Tq, hd) · k (kv_heads, Tk, hd)ᵀ, query head h
    /// reading key head h / group; with `causal` = `Some(first)`, query i (at position
    /// first + i) sees keys 0..=first + i only, the others scoring -inf.
    fn scores(
        &self,
        q: &Self::Heads,
        k: &Self::Heads,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> Self::Heads;
    /// The causal mask on scores (heads, Tq, Tk) of queries at positions first, first + 1, ...
    fn mask(&self, scores: Self::Heads, first: usize) -> Self::Heads;
    /// Attention's core: the weights (heads, Tq, Tk), softmax of the scores (masked as
    /// `scores` says), and the head outputs (heads, Tq, hd) = weights · v (kv_heads, Tk, hd).
    fn attend(
        &self,
        q: &Self::Heads,
        k: &Self::Heads,
        v: &Self::Heads,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> (Self::Heads, Self::Heads);
    /// ReLU or GELU of every value, into a new tensor.
    fn pointwise(&self, hidden: &Self::Rows, activation: Activation) -> Self::Rows;
    /// SwiGLU's gating: up (T, d_ff) · SiLU(gate (T, d_ff)), into a new tensor.
    fn gate(&self, up: &Self::Rows, gate: &Self::Rows) -> Self::Rows;
    /// Rotary position embedding of (heads, T, hd) rows at positions first, first + 1, ...
    fn rotary(&self, x: Self::Heads, base: f32, adjacent_pairs: bool, first: usize) -> Self::Heads;
    /// `x` (T, width) with `overwrite`'s pieces written in (a pass's change, `edits`).
    fn overwrite_rows(&self, x: Self::Rows, overwrite: &Overwrite) -> Self::Rows;
    /// `x` (heads, T, hd) with `overwrite`'s pieces written in (a head switched off or patched).
    fn overwrite_heads(&self, x: Self::Heads, overwrite: &Overwrite) -> Self::Heads;
    /// (kv_heads, P, hd) then (kv_heads, n, hd) along the tokens: (kv_heads, P + n, hd), for
    /// the KV cache.
    fn append_tokens(&self, cached: &Self::Heads, new: &Self::Heads) -> Self::Heads;
    /// The first `n` tokens of (kv_heads, P, hd): (kv_heads, n, hd), as a KV cache keeps the
    /// tokens before the first one that changed.
    fn first_tokens(&self, x: &Self::Heads, n: usize) -> Self::Heads;

    /// The values of `x` for a recorder (on a GPU, filled by `finish`).
    fn trace_rows(&self, x: &Self::Rows) -> Tensor;
    /// The values of `x` for a recorder (on a GPU, filled by `finish`).
    fn trace_heads(&self, x: &Self::Heads) -> Tensor;
    /// `trace_rows` of a tensor the pass is done with (no copy on the CPU).
    fn rows_into_trace(&self, x: Self::Rows) -> Tensor;
    /// `trace_heads` of a tensor the pass is done with (no copy on the CPU).
    fn heads_into_trace(&self, x: Self::Heads) -> Tensor;
    /// Brings back every value asked for since the last `finish` (one readback on a GPU).
    /// False when the backend failed during the pass (a GPU's lost device, a failed kernel):
    /// the values are then zeros and the pass must be computed again elsewhere.
    async fn finish(&self) -> bool;
    /// The next `finish` keeps the values the last pass left on the device (its recorder's
    /// `Readback::Steps` did not ask for them) beside its own, instead of letting them go: an
    /// encoder-decoder's traced encoder and decoder passes make one trace, whose rest comes
    /// back together. Nothing to keep on the CPU, which leaves nothing on a device.
    fn keep_last_pass_rest(&self) {}
    /// Whether a value handed to a recorder holds its numbers at once (the CPU), rather than
    /// after the pass's readback (a GPU): a recorder that reads values during the pass
    /// (`trace::LayeredRecorder`) needs them so.
    fn values_at_once(&self) -> bool {
        false
    }
}

/// Runs a pass on `Cpu` to its end: every `Cpu` operation is ready when first polled, so
/// such a pass's future is complete at its first poll, with no executor and no waiting.
/// (Another backend's pass is awaited, or natively waited for with `pollster::block_on`.)
pub fn on_cpu<F: Future>(pass: F) -> F::Output {
    let mut future = pin!(pass);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(value) => value,
        Poll::Pending => unreachable!("a pass on the CPU backend never waits"),
    }
}
