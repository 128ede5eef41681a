//! Host of `activation.wgsl`: ReLU, GELU or SiLU of every value.
//! CPU twins: `crate::model::ffn::activated` (ReLU, and GELU through `gelu`) and `silu`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;
use crate::model::config::Activation;

/// The pointwise `kind` of every value of `x` (any shape): same shape. SwiGLU's gate is
/// SiLU of the gate projection times the up projection; this kernel gives the SiLU.
pub fn activation(
    ctx: &GpuContext,
    kind: Activation,
    x: &GpuTensor,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "activation";
    require_f32(&[x], WHAT)?;
    let y = GpuTensor::output(ctx, x.shape(), "activation output")?;
    if x.is_empty() {
        return Ok(y);
    }
    let code = match kind {
        Activation::Relu => 0,
        Activation::Gelu => 1,
        Activation::SwiGlu => 2,
    };
    let kernel = ctx.kernel(WHAT, include_str!("activation.wgsl"))?;
    let params = [Param::U(size(x.len(), WHAT)?), Param::U(code)];
    kernel.dispatch(ctx, &params, &[x, &y], grid(x.len().div_ceil(256), WHAT)?)?;
    Ok(y)
}
