//! A bias added to every row, as one candle operation with its own backward pass.
//!
//! candle's `broadcast_add` takes the bias's gradient by its general reduction, which walks the
//! (rows, width) gradient one element at a time through its index arithmetic; with eighteen
//! biased projections a step on 4,096 rows that reduction was the largest single cost of a
//! training step outside the matrix products and the exponentials. Here the forward pass writes
//! each row once and the backward pass sums the gradient's rows in one contiguous pass. No kept
//! crate offers this for candle's CPU backend, hence this file. `tests/engine/trainer.rs`
//! checks it against `broadcast_add`, value and gradients.

use super::cpu_values::f32_values;
use candle_core::{CpuStorage, CustomOp1, CustomOp2, Layout, Result as CResult, Shape, Tensor};

/// `x + bias` with `bias` (d,) added to every row of `x` (N, d), f32. Its backward pass
/// reaches both.
pub fn add_bias(x: &Tensor, bias: &Tensor) -> CResult<Tensor> {
    let (rows, d) = x.dims2()?; // (N, d)
    if bias.dims() != [d] {
        candle_core::bail!(
            "add bias: the bias has shape {:?}, the {rows} rows are {d} wide",
            bias.dims()
        );
    }
    x.contiguous()?.apply_op2(&bias.contiguous()?, AddBias) // (N, d)
}

struct AddBias;

impl CustomOp2 for AddBias {
    fn name(&self) -> &'static str {
        "add-bias"
    }

    fn cpu_fwd(
        &self,
        x: &CpuStorage,
        x_layout: &Layout,
        bias: &CpuStorage,
        bias_layout: &Layout,
    ) -> CResult<(CpuStorage, Shape)> {
        let x_values = f32_values(x, x_layout, "add bias")?; // (N*d)
        let bias = f32_values(bias, bias_layout, "add bias")?; // (d,)
        let mut out = Vec::with_capacity(x_values.len()); // (N*d)
        for row in x_values.chunks_exact(bias.len()) {
            out.extend(row.iter().zip(bias).map(|(&v, &b)| v + b));
        }
        Ok((CpuStorage::F32(out), x_layout.shape().clone()))
    }

    /// The input's gradient is the output's; the bias's is the sum of its rows.
    fn bwd(
        &self,
        _x: &Tensor,
        _bias: &Tensor,
        _out: &Tensor,
        grad: &Tensor,
    ) -> CResult<(Option<Tensor>, Option<Tensor>)> {
        let bias_grad = grad.contiguous()?.apply_op1_no_bwd(&RowSum)?; // (d,)
        Ok((Some(grad.clone()), Some(bias_grad)))
    }
}

/// The sum of the rows of (N, d), (N, d) -> (d,): in f32, row after row, the order candle's
/// reduction adds them in, so that a training run gives the same bits with either.
struct RowSum;

impl CustomOp1 for RowSum {
    fn name(&self) -> &'static str {
        "row-sum"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> CResult<(CpuStorage, Shape)> {
        let values = f32_values(storage, layout, "add bias")?; // (N*d)
        let &[_, d] = layout.dims() else {
            candle_core::bail!("add bias: a gradient of shape {:?}", layout.dims());
        };
        let mut sums = vec![0f32; d]; // (d,)
        for row in values.chunks_exact(d) {
            for (s, &v) in sums.iter_mut().zip(row) {
                *s += v;
            }
        }
        Ok((CpuStorage::F32(sums), Shape::from(d)))
    }
}
