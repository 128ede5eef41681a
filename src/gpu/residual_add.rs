//! Host of `residual_add.wgsl`: a residual connection, x (T, d) + r (T, d).
//! CPU twin: ndarray's `+=` in `crate::model::cpu::Cpu::add`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;

/// `x` plus `r`, value by value (both the same shape): the same shape.
pub fn residual_add(ctx: &GpuContext, x: &GpuTensor, r: &GpuTensor) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "residual add";
    require_f32(&[x, r], WHAT)?;
    if x.shape() != r.shape() {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "x {:?} and r {:?} must have one shape",
                x.shape(),
                r.shape()
            ),
        });
    }
    let y = GpuTensor::output(ctx, x.shape(), "residual sum")?;
    if x.is_empty() {
        return Ok(y);
    }
    let kernel = ctx.kernel(WHAT, include_str!("residual_add.wgsl"))?;
    let params = [Param::U(size(x.len(), WHAT)?)];
    kernel.dispatch(
        ctx,
        &params,
        &[x, r, &y],
        grid(x.len().div_ceil(256), WHAT)?,
    )?;
    Ok(y)
}
