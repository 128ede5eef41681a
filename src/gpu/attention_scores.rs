//! Host of `attention_scores.wgsl`: (heads, Tq, Tk) scaled scores with the causal mask.
//! CPU twins: `crate::model::attention::scaled_scores` then `apply_causal_mask_from`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{require_f32, size, Param};
use super::tensor::GpuTensor;

/// Scores of queries `q` (heads, Tq, hd) against keys `k` (kv_heads, Tk, hd), times `scale`;
/// with `causal`, query i (at position `first + i`) sees keys 0..=first + i only.
pub fn attention_scores(
    ctx: &GpuContext,
    q: &GpuTensor,
    k: &GpuTensor,
    scale: f32,
    causal: bool,
    first: usize,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "attention_scores";
    let (&[heads, queries, head_dim], &[kv_heads, keys, k_dim]) = (q.shape(), k.shape()) else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "q {:?} and k {:?} must be (heads, T, head_dim)",
                q.shape(),
                k.shape()
            ),
        });
    };
    if head_dim != k_dim || kv_heads == 0 || heads % kv_heads != 0 {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("q {:?}, k {:?}", q.shape(), k.shape()),
        });
    }
    require_f32(&[q, k], WHAT)?;
    let scores = GpuTensor::output(ctx, &[heads, queries, keys], "attention scores")?;
    let kernel = ctx.kernel(WHAT, include_str!("attention_scores.wgsl"))?;
    let params = [
        Param::U(size(heads, WHAT)?),
        Param::U(size(queries, WHAT)?),
        Param::U(size(keys, WHAT)?),
        Param::U(size(head_dim, WHAT)?),
        Param::U(size(heads / kv_heads, WHAT)?),
        Param::U(causal as u32),
        Param::U(size(first, WHAT)?),
        Param::F(scale),
        Param::F(f32::NEG_INFINITY),
    ];
    let groups = [
        size(keys.div_ceil(16).max(1), WHAT)?,
        size(queries.div_ceil(16).max(1), WHAT)?,
        size(heads.max(1), WHAT)?,
    ];
    kernel.dispatch(ctx, &params, &[q, k, &scores], groups)?;
    Ok(scores)
}
