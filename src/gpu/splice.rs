//! Host of `splice.wgsl`: a pass's change (a head's output or a token's stream replaced, see
//! `crate::model::edits`) written into a tensor of any shape.
//! CPU twin: `crate::model::edits::Overwrite::apply`, through `Cpu::overwrite_rows`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;
use crate::model::edits::Overwrite;

/// `x` with `overwrite`'s pieces written in: the same shape.
pub fn splice(
    ctx: &GpuContext,
    x: &GpuTensor,
    overwrite: &Overwrite,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "splice";
    require_f32(&[x], WHAT)?;
    if let Some((offset, piece)) = overwrite.pieces.iter().find(|(o, p)| o + p.len() > x.len()) {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "{} values from {offset} do not fit a tensor of {:?}",
                piece.len(),
                x.shape()
            ),
        });
    }
    let y = GpuTensor::output(ctx, x.shape(), "spliced values")?;
    if x.is_empty() {
        return Ok(y);
    }
    let (values, take) = overwrite.spread(x.len());
    let values = GpuTensor::upload(ctx, &values, x.shape(), "replacement")?;
    let take = GpuTensor::upload(ctx, &take, x.shape(), "replaced values")?;
    let kernel = ctx.kernel(WHAT, include_str!("splice.wgsl"))?;
    let params = [Param::U(size(x.len(), WHAT)?)];
    kernel.dispatch(
        ctx,
        &params,
        &[x, &values, &take, &y],
        grid(x.len().div_ceil(256), WHAT)?,
    )?;
    Ok(y)
}
