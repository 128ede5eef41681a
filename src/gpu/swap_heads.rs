//! Host of `swap_heads.wgsl`: the first two axes of (A, B, C) swapped, to split a
//! projection's (T, heads · hd) rows into (heads, T, hd) and to merge them back.
//! CPU twins: `crate::model::attention::split_heads` and `merge_heads`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{grid, require_f32, size, Param};
use super::tensor::GpuTensor;

/// `x` read as (a, b, c), written as (b, a, c), with the shape `shape` (of b · a · c values:
/// (heads, T, hd) to split, (T, heads · hd) to merge).
pub fn swap_heads(
    ctx: &GpuContext,
    x: &GpuTensor,
    [a, b, c]: [usize; 3],
    shape: &[usize],
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "swap heads";
    require_f32(&[x], WHAT)?;
    let count = a.checked_mul(b).and_then(|n| n.checked_mul(c));
    if count != Some(x.len())
        || shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) != Some(x.len())
    {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "x {:?} read as ({a}, {b}, {c}), written as {shape:?}",
                x.shape()
            ),
        });
    }
    let y = GpuTensor::output(ctx, shape, "heads swapped")?;
    if x.is_empty() {
        return Ok(y);
    }
    let kernel = ctx.kernel(WHAT, include_str!("swap_heads.wgsl"))?;
    let params = [
        Param::U(size(a, WHAT)?),
        Param::U(size(b, WHAT)?),
        Param::U(size(c, WHAT)?),
    ];
    kernel.dispatch(ctx, &params, &[x, &y], grid(x.len().div_ceil(256), WHAT)?)?;
    Ok(y)
}
