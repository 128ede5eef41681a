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

use ndarray::{concatenate, s, Array2, Array3, Axis};

use super::attention::{
    apply_causal_mask_from, merge_heads, scaled_scores, softmax_heads, split_heads, weighted_values,
};
use super::config::{Activation, NormKind};
use super::ffn::{activated, gated};
use super::linear::Linear;
use super::matrix::Matrix;
use super::norm::{self, row_mean_std};
use super::position::apply_rotary_from;
use super::weights::NormWeights;
use crate::trace::Tensor;

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
}

/// The CPU: the reference every other backend is checked against.
pub struct Cpu;

impl Backend for Cpu {
    type Rows = Array2<f32>;
    type Heads = Array3<f32>;

    fn name(&self) -> String {
        "cpu".into()
    }

    fn rows(&self, x: Array2<f32>) -> Array2<f32> {
        x
    }

    fn linear(&self, x: &Array2<f32>, layer: &Linear) -> Array2<f32> {
        layer.forward(x.view()) // (T, out)
    }

    fn unembed(&self, x: &Array2<f32>, u: &Matrix) -> Array2<f32> {
        u.multiply_rows(x.view(), 0, u.rows()) // (T, vocab)
    }

    fn last_row(&self, x: &Array2<f32>) -> Array2<f32> {
        x.slice(s![x.nrows().saturating_sub(1).., ..]).to_owned() // (1, d)
    }

    fn norm(&self, kind: NormKind, w: &NormWeights, x: &Array2<f32>, eps: f32) -> Array2<f32> {
        norm::apply(kind, w, x.view(), eps) // (T, d)
    }

    fn row_stats(&self, x: &Array2<f32>, y: &Array2<f32>) -> Array2<f32> {
        let (input_mean, input_std) = row_mean_std(x.view()); // (T), (T)
        let (output_mean, output_std) = row_mean_std(y.view()); // (T), (T)
        let columns = [&input_mean, &input_std, &output_mean, &output_std];
        Array2::from_shape_fn((x.nrows(), 4), |(i, k)| columns[k][i]) // (T, 4), row-major
    }

    fn add(&self, mut x: Array2<f32>, y: &Array2<f32>) -> Array2<f32> {
        x += y; // (T, d)
        x
    }

    fn split_heads(&self, x: Array2<f32>, heads: usize, head_dim: usize) -> Array3<f32> {
        split_heads(x, heads, head_dim) // (heads, T, hd)
    }

    fn merge_heads(&self, x: Array3<f32>) -> Array2<f32> {
        merge_heads(x) // (T, heads * hd)
    }

    fn scores(
        &self,
        q: &Array3<f32>,
        k: &Array3<f32>,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> Array3<f32> {
        let mut scores = scaled_scores(q.view(), k.view(), group, scale); // (heads, Tq, Tk)
        if let Some(first) = causal {
            apply_causal_mask_from(&mut scores, first);
        }
        scores
    }

    fn mask(&self, mut scores: Array3<f32>, first: usize) -> Array3<f32> {
        apply_causal_mask_from(&mut scores, first); // (heads, Tq, Tk)
        scores
    }

    fn attend(
        &self,
        q: &Array3<f32>,
        k: &Array3<f32>,
        v: &Array3<f32>,
        group: usize,
        scale: f32,
        causal: Option<usize>,
    ) -> (Array3<f32>, Array3<f32>) {
        let mut weights = self.scores(q, k, group, scale, causal); // (heads, Tq, Tk)
        softmax_heads(&mut weights); // (heads, Tq, Tk), rows sum to 1
        let out = weighted_values(weights.view(), v.view(), group); // (heads, Tq, hd)
        (weights, out)
    }

    fn pointwise(&self, hidden: &Array2<f32>, activation: Activation) -> Array2<f32> {
        activated(hidden.view(), activation) // (T, d_ff)
    }

    fn gate(&self, up: &Array2<f32>, gate: &Array2<f32>) -> Array2<f32> {
        gated(up.view(), gate.view()) // (T, d_ff)
    }

    fn rotary(
        &self,
        mut x: Array3<f32>,
        base: f32,
        adjacent_pairs: bool,
        first: usize,
    ) -> Array3<f32> {
        apply_rotary_from(&mut x, base, adjacent_pairs, first); // (heads, T, hd)
        x
    }

    fn append_tokens(&self, cached: &Array3<f32>, new: &Array3<f32>) -> Array3<f32> {
        concatenate(Axis(1), &[cached.view(), new.view()]).expect("same heads and width")
        // (kv, P + n, hd)
    }

    fn first_tokens(&self, x: &Array3<f32>, n: usize) -> Array3<f32> {
        x.slice(s![.., ..n, ..]).to_owned() // (kv, n, hd)
    }

    fn trace_rows(&self, x: &Array2<f32>) -> Tensor {
        Tensor::from_array(x.clone().into_dyn())
    }

    fn trace_heads(&self, x: &Array3<f32>) -> Tensor {
        Tensor::from_array(x.clone().into_dyn())
    }

    fn rows_into_trace(&self, x: Array2<f32>) -> Tensor {
        Tensor::from_array(x.into_dyn())
    }

    fn heads_into_trace(&self, x: Array3<f32>) -> Tensor {
        Tensor::from_array(x.into_dyn())
    }

    async fn finish(&self) -> bool {
        true
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
