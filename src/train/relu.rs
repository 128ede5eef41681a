//! ReLU as one candle operation with its own backward pass.
//!
//! candle's `relu` takes its gradient in four walks over the FFN's (rows, d_ff) hidden values,
//! each into a freshly allocated tensor: zeros, a comparison with them, its conversion to
//! floats, and a product with the gradient. Here the backward pass is one walk. No kept crate
//! offers this for candle's CPU backend, hence this file. `tests/engine/trainer.rs` checks it
//! against candle's `relu`, value and gradient.

use super::cpu_values::f32_values;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result as CResult, Shape, Tensor};

/// max(0, x) of every element of `x`, f32. Its gradient passes where x ≥ 0, as candle's does.
pub fn relu(x: &Tensor) -> CResult<Tensor> {
    x.contiguous()?.apply_op1(Relu) // (same shape)
}

struct Relu;

impl CustomOp1 for Relu {
    fn name(&self) -> &'static str {
        "relu"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> CResult<(CpuStorage, Shape)> {
        let x = f32_values(storage, layout, "relu")?; // (n,)
        let out: Vec<f32> = x.iter().map(|&v| v.max(0.0)).collect(); // (n,)
        Ok((CpuStorage::F32(out), layout.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, _out: &Tensor, grad: &Tensor) -> CResult<Option<Tensor>> {
        Ok(Some(
            x.apply_op2_no_bwd(&grad.contiguous()?, &ReluBackward)?,
        )) // (same shape)
    }
}

/// `ReLU`'s gradient: (x, dy) -> dy where x ≥ 0, else 0.
struct ReluBackward;

impl CustomOp2 for ReluBackward {
    fn name(&self) -> &'static str {
        "relu-backward"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        grad: &CpuStorage,
        grad_layout: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let x_values = f32_values(x, x_layout, "relu")?; // (n,)
        let grad = f32_values(grad, grad_layout, "relu")?; // (n,)
        if grad.len() != x_values.len() {
            candle_core::bail!(
                "relu: a gradient of {} values for {}",
                grad.len(),
                x_values.len()
            );
        }
        let out: Vec<f32> = x_values
            .iter()
            .zip(grad)
            .map(|(&v, &g)| if v >= 0.0 { g } else { 0.0 })
            .collect(); // (n,)
        Ok((CpuStorage::F32(out), x_layout.shape().clone()))
    }
}
