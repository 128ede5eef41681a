//! The mean cross-entropy of a batch's logits against the tokens that came next, as one candle
//! operation with its own backward pass.
//!
//! candle-nn's `cross_entropy` is put together from a maximum, two subtractions, an
//! exponential, a sum, a logarithm and a gather, and the backward passes of those walk the
//! (tokens, vocabulary) logits a dozen times more, each time into a freshly allocated tensor.
//! With 4,096 tokens a step and a vocabulary of 4,608 words a walk is 75 MB, and together they
//! were most of a training step's time outside the matrix products. Here the forward pass reads
//! each row twice (its largest logit, then the sum of the exponentials) and the backward pass
//! once, writing softmax minus the one-hot target straight into the gradient. No kept crate
//! offers this for candle's CPU backend (candle-nn fuses the softmax alone), hence this file.
//! `tests/engine/trainer.rs` checks it against candle-nn's, value and gradient.

use super::cpu_values::f32_values;
use candle_core::{CpuStorage, CustomOp1, Layout, Result as CResult, Shape, Tensor};

/// Mean over rows of `log Σ_j exp(logits[i, j]) - logits[i, targets[i]]`: `logits` (N, V)
/// f32, `targets` (N,) u32 ids below V. A scalar tensor whose backward pass reaches `logits`.
pub fn cross_entropy(logits: &Tensor, targets: &Tensor) -> CResult<Tensor> {
    let (rows, vocab) = logits.dims2()?; // (N, V)
    if rows == 0 || vocab == 0 {
        candle_core::bail!("cross-entropy: logits of shape ({rows}, {vocab}) hold no row to score");
    }
    let targets = targets.to_vec1::<u32>()?; // (N,)
    if targets.len() != rows {
        candle_core::bail!(
            "cross-entropy: {} targets for {rows} rows of logits",
            targets.len()
        );
    }
    if let Some(t) = targets.iter().find(|&&t| t as usize >= vocab) {
        candle_core::bail!("cross-entropy: target id {t} is not below the vocabulary's {vocab}");
    }
    let losses = logits
        .contiguous()? // (N, V)
        .apply_op1(RowLosses { targets, vocab })?; // (N,)
    losses.mean_all() // ()
}

/// Each row's cross-entropy, (N, V) -> (N,).
struct RowLosses {
    targets: Vec<u32>,
    vocab: usize,
}

/// log Σ exp(row), shifted by the row's largest value so that no exponential overflows; the
/// sum is kept in f64, 4,608 terms of at most 1.
fn log_sum_exp(row: &[f32]) -> f32 {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f64 = row.iter().map(|&x| (x - max).exp() as f64).sum();
    max + sum.ln() as f32
}

impl CustomOp1 for RowLosses {
    fn name(&self) -> &'static str {
        "row-cross-entropy"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> CResult<(CpuStorage, Shape)> {
        let logits = f32_values(storage, layout, "cross-entropy")?; // (N*V)
        let losses: Vec<f32> = logits
            .chunks_exact(self.vocab)
            .zip(&self.targets)
            .map(|(row, &t)| log_sum_exp(row) - row[t as usize])
            .collect(); // (N,)
        Ok((CpuStorage::F32(losses), Shape::from(self.targets.len())))
    }

    /// d loss_i / d logits[i, j] = softmax(logits[i])_j - [j = target_i], times the row's
    /// incoming gradient. The row's log Σ exp is its loss plus its target's logit, so it is
    /// not summed again.
    fn bwd(&self, logits: &Tensor, losses: &Tensor, grad: &Tensor) -> CResult<Option<Tensor>> {
        let op = SoftmaxMinusTarget {
            targets: self.targets.clone(),
            vocab: self.vocab,
            losses: losses.to_vec1()?, // (N,)
            grads: grad.to_vec1()?,    // (N,)
        };
        Ok(Some(logits.apply_op1_no_bwd(&op)?)) // (N, V)
    }
}

/// The gradient of `RowLosses` with respect to its logits, (N, V) -> (N, V).
struct SoftmaxMinusTarget {
    targets: Vec<u32>,
    vocab: usize,
    losses: Vec<f32>,
    grads: Vec<f32>,
}

impl CustomOp1 for SoftmaxMinusTarget {
    fn name(&self) -> &'static str {
        "row-cross-entropy-backward"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> CResult<(CpuStorage, Shape)> {
        let logits = f32_values(storage, layout, "cross-entropy")?; // (N*V)
        let mut out = Vec::with_capacity(logits.len()); // (N*V)
        for (i, row) in logits.chunks_exact(self.vocab).enumerate() {
            let t = self.targets[i] as usize;
            let log_sum = self.losses[i] + row[t];
            let g = self.grads[i];
            let start = out.len();
            out.extend(row.iter().map(|&x| g * (x - log_sum).exp()));
            out[start + t] -= g;
        }
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }
}
