//! What the one forward pass asks of the hardware: the products, norms and attention
//! arithmetic, in a small trait. `Cpu` is the reference (this crate's ndarray and WebAssembly
//! SIMD code, each product shared among the threads there are: `model::threads`); `crate::gpu::GpuBackend`
//! runs the same operations as WGSL kernels. The pass, its trace and every step's shape are
//! the same whichever backend computes them.
//!
//! The operations are asynchronous because a GPU's results come back asynchronously (in a
//! browser nothing may block on them); the CPU's are ready at once, so a pass on `Cpu` is
//! complete at its first poll (`on_cpu`).

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use ndarray::{Array2, Array3, ArrayView2, ArrayView3};

use super::attention::{apply_causal_mask_from, scaled_scores, softmax_heads, weighted_values};
use super::config::{Activation, NormKind};
use super::ffn::{apply_gate, apply_pointwise};
use super::linear::Linear;
use super::matrix::Matrix;
use super::norm;
use super::position::apply_rotary_from;
use super::weights::NormWeights;

// The futures stay on the thread that made them (a browser's GPU objects cannot move).
#[allow(async_fn_in_trait)]
pub trait Backend {
    /// A short name for status lines and logs ("cpu", or the adapter's).
    fn name(&self) -> String;
    /// y (T, out) = x (T, in) · Wᵀ + b.
    async fn linear(&self, x: ArrayView2<'_, f32>, layer: &Linear) -> Array2<f32>;
    /// logits (T, vocab) = x (T, d) · Uᵀ, U (vocab, d) the unembedding.
    async fn unembed(&self, x: ArrayView2<'_, f32>, unembedding: &Matrix) -> Array2<f32>;
    /// LayerNorm or RMSNorm of each row, with gamma and beta.
    async fn norm(&self, kind: NormKind, w: &NormWeights, x: ArrayView2<'_, f32>, eps: f32) -> Array2<f32>;
    /// (heads, Tq, Tk) = scale · q (heads, Tq, hd) · k (kv_heads, Tk, hd)ᵀ, query head h reading
    /// key head h / group.
    async fn scores(&self, q: ArrayView3<'_, f32>, k: ArrayView3<'_, f32>, group: usize, scale: f32) -> Array3<f32>;
    /// Softmax of every row of every head, in place.
    async fn softmax(&self, scores: &mut Array3<f32>);
    /// (heads, Tq, hd) = weights (heads, Tq, Tk) · v (kv_heads, Tk, hd), per head.
    async fn weighted_values(&self, weights: ArrayView3<'_, f32>, v: ArrayView3<'_, f32>, group: usize) -> Array3<f32>;
    /// ReLU or GELU of every value, in place.
    async fn pointwise(&self, hidden: &mut Array2<f32>, activation: Activation);
    /// SwiGLU's gating, in place: up (T, d_ff) · SiLU(gate (T, d_ff)).
    async fn gate(&self, up: &mut Array2<f32>, gate: ArrayView2<'_, f32>);
    /// Rotary position embedding of (heads, T, hd) rows at positions first, first + 1, ...
    async fn rotary(&self, x: &mut Array3<f32>, base: f32, adjacent_pairs: bool, first: usize);

    /// Attention's core in one call: the weights (heads, Tq, Tk) = softmax of the scores
    /// (`scores`), hidden where `causal` says (`Some(first)`: query i, at position first + i,
    /// sees keys 0..=first + i), and the head outputs (heads, Tq, hd) = weights · v. This
    /// default runs those operations one by one (with the mask on the CPU); a GPU keeps the
    /// scores and weights on the device between them (`crate::gpu::GpuBackend`).
    async fn attend(&self, q: ArrayView3<'_, f32>, k: ArrayView3<'_, f32>, v: ArrayView3<'_, f32>, group: usize, scale: f32, causal: Option<usize>) -> (Array3<f32>, Array3<f32>) {
        let mut scores = self.scores(q, k, group, scale).await; // (heads, Tq, Tk)
        if let Some(first) = causal {
            apply_causal_mask_from(&mut scores, first); // (heads, Tq, Tk)
        }
        self.softmax(&mut scores).await; // (heads, Tq, Tk), rows sum to 1
        let out = self.weighted_values(scores.view(), v, group).await; // (heads, Tq, hd)
        (scores, out)
    }
}

/// The CPU: the reference every other backend is checked against.
pub struct Cpu;

impl Backend for Cpu {
    fn name(&self) -> String {
        "cpu".into()
    }

    async fn linear(&self, x: ArrayView2<'_, f32>, layer: &Linear) -> Array2<f32> {
        layer.forward(x) // (T, out)
    }

    async fn unembed(&self, x: ArrayView2<'_, f32>, u: &Matrix) -> Array2<f32> {
        u.multiply_rows(x, 0, u.rows()) // (T, vocab)
    }

    async fn norm(&self, kind: NormKind, w: &NormWeights, x: ArrayView2<'_, f32>, eps: f32) -> Array2<f32> {
        norm::apply(kind, w, x, eps) // (T, d)
    }

    async fn scores(&self, q: ArrayView3<'_, f32>, k: ArrayView3<'_, f32>, group: usize, scale: f32) -> Array3<f32> {
        scaled_scores(q, k, group, scale) // (heads, Tq, Tk)
    }

    async fn softmax(&self, scores: &mut Array3<f32>) {
        softmax_heads(scores); // (heads, Tq, Tk)
    }

    async fn weighted_values(&self, weights: ArrayView3<'_, f32>, v: ArrayView3<'_, f32>, group: usize) -> Array3<f32> {
        weighted_values(weights, v, group) // (heads, Tq, hd)
    }

    async fn pointwise(&self, hidden: &mut Array2<f32>, activation: Activation) {
        apply_pointwise(hidden, activation);
    }

    async fn gate(&self, up: &mut Array2<f32>, gate: ArrayView2<'_, f32>) {
        apply_gate(up, gate);
    }

    async fn rotary(&self, x: &mut Array3<f32>, base: f32, adjacent_pairs: bool, first: usize) {
        apply_rotary_from(x, base, adjacent_pairs, first);
    }
}

/// Runs a pass on `Cpu` to its end: every `Cpu` operation is ready when first polled, so
/// such a pass's future is complete at its first poll, with no executor and no waiting.
/// (Another backend's pass is awaited, or natively waited for with `pollster::block_on`.)
pub fn on_cpu<F: Future>(pass: F) -> F::Output {
    let mut future = pin!(pass);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => value,
        Poll::Pending => unreachable!("a pass on the CPU backend never waits"),
    }
}
