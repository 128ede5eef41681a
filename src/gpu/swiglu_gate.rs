//! Host of `swiglu_gate.wgsl`: SwiGLU's gating, up (T, d_ff) · SiLU(gate (T, d_ff)).
//! CPU twin: `crate::model::ffn::gated`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;

/// `up` times SiLU of `gate`, value by value (both the same shape): the same shape.
pub fn swiglu_gate(
    ctx: &GpuContext,
    up: &GpuTensor,
    gate: &GpuTensor,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "SwiGLU gate";
    require_f32(&[up, gate], WHAT)?;
    if up.shape() != gate.shape() {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "up {:?} and gate {:?} must have one shape",
                up.shape(),
                gate.shape()
            ),
        });
    }
    let y = GpuTensor::output(ctx, up.shape(), "gated output")?;
    if up.is_empty() {
        return Ok(y);
    }
    let kernel = ctx.kernel(WHAT, include_str!("swiglu_gate.wgsl"))?;
    let params = [Param::U(size(up.len(), WHAT)?)];
    kernel.dispatch(
        ctx,
        &params,
        &[up, gate, &y],
        grid(up.len().div_ceil(256), WHAT)?,
    )?;
    Ok(y)
}
