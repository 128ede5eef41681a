//! Attention's weights from its scores, scaled, masked and normalised in one candle operation
//! with its own backward pass.
//!
//! Put together from candle's tensor operations (a division by sqrt(head width), the mask
//! added, then softmax's maximum, subtraction, exponential, sum and division), the weights of
//! a training step's 4,096 queries walk every (query, key) score seven times forward and more
//! than twice that backward, each time into a freshly allocated tensor. Here the forward pass
//! reads each row once and writes it once, and the backward pass reads the weights and their
//! gradient once. candle-nn's `softmax_last_dim` fuses the softmax forward only (it has no
//! backward pass), hence this file. `tests/engine/trainer.rs` checks it against the composed
//! operations, value and gradient.

use super::cpu_values::f32_values;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result as CResult, Shape, Tensor};

/// softmax over the last axis of `scale · scores` (B, H, T, S), f32; with `causal` (then
/// T = S) query t gives no weight to the keys after it, as adding -inf to their scores would.
pub fn attention_weights(scores: &Tensor, scale: f32, causal: bool) -> CResult<Tensor> {
    let dims = scores.dims();
    let [.., t, s] = dims else {
        candle_core::bail!("attention weights: scores of shape {dims:?} have no (query, key) axes");
    };
    if causal && t != s {
        candle_core::bail!(
            "attention weights: a causal mask needs as many keys as queries, not {s} and {t}"
        );
    }
    if *s == 0 {
        candle_core::bail!("attention weights: no key to attend to");
    }
    if !(scale.is_finite() && scale > 0.0) {
        candle_core::bail!("attention weights: the scale must be a positive number, not {scale}");
    }
    scores.contiguous()?.apply_op1(AttentionWeights {
        scale,
        queries: *t,
        causal,
    }) // (B, H, T, S)
}

struct AttentionWeights {
    scale: f32,
    /// T: a row's query position is its index modulo T.
    queries: usize,
    causal: bool,
}

impl AttentionWeights {
    /// How many keys row `r` sees: all of them, or those up to its query's position.
    fn seen(&self, r: usize, keys: usize) -> usize {
        if self.causal {
            r % self.queries + 1
        } else {
            keys
        }
    }
}

impl CustomOp1 for AttentionWeights {
    fn name(&self) -> &'static str {
        "attention-weights"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> CResult<(CpuStorage, Shape)> {
        let scores = f32_values(storage, layout, "attention weights")?; // (B*H*T*S)
        let keys = *layout.dims().last().expect("checked: a key axis");
        let mut out = vec![0f32; scores.len()]; // (B*H*T*S): the hidden keys stay 0
        for (r, (row, weights)) in scores
            .chunks_exact(keys)
            .zip(out.chunks_exact_mut(keys))
            .enumerate()
        {
            let seen = self.seen(r, keys);
            let max = row[..seen]
                .iter()
                .copied()
                .fold(f32::NEG_INFINITY, f32::max);
            let mut sum = 0f32;
            for (w, &v) in weights[..seen].iter_mut().zip(&row[..seen]) {
                *w = ((v - max) * self.scale).exp();
                sum += *w;
            }
            let inverse = 1.0 / sum;
            weights[..seen].iter_mut().for_each(|w| *w *= inverse);
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }

    fn bwd(&self, _scores: &Tensor, weights: &Tensor, grad: &Tensor) -> CResult<Option<Tensor>> {
        let op = AttentionWeightsBackward { scale: self.scale };
        Ok(Some(weights.apply_op2_no_bwd(&grad.contiguous()?, &op)?)) // (B, H, T, S)
    }
}

/// d scores = scale · w · (dw - Σ_keys dw · w), each row: (weights, their gradient) -> the
/// scores' gradient. A hidden key's weight is 0, so its gradient is too.
struct AttentionWeightsBackward {
    scale: f32,
}

impl CustomOp2 for AttentionWeightsBackward {
    fn name(&self) -> &'static str {
        "attention-weights-backward"
    }

    fn cpu_fwd(
        &self,
        weights: &CpuStorage,
        weights_layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let w = f32_values(weights, weights_layout, "attention weights")?; // (B*H*T*S)
        let g = f32_values(grad, grad_layout, "attention weights")?; // (B*H*T*S)
        let keys = *weights_layout.dims().last().expect("a key axis");
        let mut out = Vec::with_capacity(w.len()); // (B*H*T*S)
        for (w, g) in w.chunks_exact(keys).zip(g.chunks_exact(keys)) {
            let dot: f32 = w.iter().zip(g).map(|(a, b)| a * b).sum();
            out.extend(w.iter().zip(g).map(|(&a, &b)| self.scale * a * (b - dot)));
        }
        Ok((CpuStorage::F32(out), weights_layout.shape().clone()))
    }
}
