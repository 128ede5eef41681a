//! Host of `softmax.wgsl`: the softmax of each row of the last axis.
//! CPU twin: `crate::model::attention::softmax_rows`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;

/// The softmax along the last axis of `x` (any shape, e.g. (heads, Tq, Tk)): same shape.
pub fn softmax_rows(ctx: &GpuContext, x: &GpuTensor) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "softmax";
    let Some((&width, outer)) = x.shape().split_last() else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: "a scalar has no rows".into(),
        });
    };
    require_f32(&[x], WHAT)?;
    let rows: usize = outer.iter().product();
    let y = GpuTensor::output(ctx, x.shape(), "softmax output")?;
    if width == 0 || rows == 0 {
        return Ok(y);
    }
    let kernel = ctx.kernel(WHAT, include_str!("softmax.wgsl"))?;
    let params = [Param::U(size(rows, WHAT)?), Param::U(size(width, WHAT)?)];
    kernel.dispatch(ctx, &params, &[x, &y], grid(rows, WHAT)?)?;
    Ok(y)
}
