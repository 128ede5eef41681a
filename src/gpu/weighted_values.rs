//! Host of `weighted_values.wgsl`: (heads, Tq, hd) = attention weights · values, per head.
//! CPU twin: `crate::model::attention::weighted_values`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{require_f32, size, Param};
use super::tensor::GpuTensor;

/// `weights` (heads, Tq, Tk) times values `v` (kv_heads, Tk, hd): (heads, Tq, hd).
pub fn weighted_values(
    ctx: &GpuContext,
    weights: &GpuTensor,
    v: &GpuTensor,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "weighted_values";
    let (&[heads, queries, keys], &[kv_heads, v_keys, head_dim]) = (weights.shape(), v.shape())
    else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "weights {:?} and v {:?} must be 3-d",
                weights.shape(),
                v.shape()
            ),
        });
    };
    if keys != v_keys || kv_heads == 0 || heads % kv_heads != 0 {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("weights {:?}, v {:?}", weights.shape(), v.shape()),
        });
    }
    require_f32(&[weights, v], WHAT)?;
    let out = GpuTensor::output(ctx, &[heads, queries, head_dim], "head outputs")?;
    let kernel = ctx.kernel(WHAT, include_str!("weighted_values.wgsl"))?;
    let params = [
        Param::U(size(heads, WHAT)?),
        Param::U(size(queries, WHAT)?),
        Param::U(size(keys, WHAT)?),
        Param::U(size(head_dim, WHAT)?),
        Param::U(size(heads / kv_heads, WHAT)?),
    ];
    let groups = [
        size(head_dim.div_ceil(16).max(1), WHAT)?,
        size(queries.div_ceil(16).max(1), WHAT)?,
        size(heads.max(1), WHAT)?,
    ];
    kernel.dispatch(ctx, &params, &[weights, v, &out], groups)?;
    Ok(out)
}
