//! Host of `causal_mask.wgsl`: the causal mask on (heads, Tq, Tk) scores.
//! CPU twin: `crate::model::attention::apply_causal_mask_from`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;

/// `scores` (heads, Tq, Tk) with query i (at position `first + i`) hiding keys past
/// `first + i`: the same shape.
pub fn causal_mask(
    ctx: &GpuContext,
    scores: &GpuTensor,
    first: usize,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "causal mask";
    let &[heads, queries, keys] = scores.shape() else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("scores {:?} must be (heads, Tq, Tk)", scores.shape()),
        });
    };
    require_f32(&[scores], WHAT)?;
    let y = GpuTensor::output(ctx, scores.shape(), "masked scores")?;
    if scores.is_empty() {
        return Ok(y);
    }
    let kernel = ctx.kernel(WHAT, include_str!("causal_mask.wgsl"))?;
    let params = [
        Param::U(size(heads, WHAT)?),
        Param::U(size(queries, WHAT)?),
        Param::U(size(keys, WHAT)?),
        Param::U(size(first, WHAT)?),
        Param::F(f32::NEG_INFINITY),
    ];
    kernel.dispatch(
        ctx,
        &params,
        &[scores, &y],
        grid(scores.len().div_ceil(256), WHAT)?,
    )?;
    Ok(y)
}
