//! Host of `rotary.wgsl`: rotary position embedding of queries or keys (heads, T, hd).
//! CPU twin: `crate::model::position::apply_rotary_from`.

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{require_f32, size, Param};
use super::tensor::GpuTensor;
use crate::model::position::rotary_frequencies;

/// `x` (heads, T, hd) with row t at position `first + t`, each pair turned by its angle
/// (frequencies `base`^(-2i/hd)); `adjacent_pairs` as the CPU twin.
pub fn rotary(
    ctx: &GpuContext,
    x: &GpuTensor,
    base: f32,
    adjacent_pairs: bool,
    first: usize,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "rotary";
    let &[heads, rows, head_dim] = x.shape() else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("x {:?} must be (heads, T, head_dim)", x.shape()),
        });
    };
    if head_dim % 2 != 0 {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("head_dim {head_dim} must be even"),
        });
    }
    require_f32(&[x], WHAT)?;
    let half = head_dim / 2;
    // The angles as the CPU twin computes them: f32 frequencies, products and sines in f64.
    let frequencies = rotary_frequencies(head_dim, base); // (hd/2)
    GpuTensor::checked_bytes(ctx, rows.saturating_mul(head_dim), "rotary angles")?;
    let mut angles = Vec::with_capacity(rows * head_dim); // (T, hd/2, 2)
    for t in 0..rows {
        for theta in &frequencies {
            let (sin, cos) = ((first + t) as f64 * *theta as f64).sin_cos();
            angles.extend([cos as f32, sin as f32]);
        }
    }
    let angles = GpuTensor::upload(ctx, &angles, &[rows, half, 2], "rotary angles")?;
    let y = GpuTensor::output(ctx, x.shape(), "rotated")?;
    let kernel = ctx.kernel(WHAT, include_str!("rotary.wgsl"))?;
    let params = [
        Param::U(size(heads, WHAT)?),
        Param::U(size(rows, WHAT)?),
        Param::U(size(head_dim, WHAT)?),
        Param::U(adjacent_pairs as u32),
    ];
    let groups = [
        size(half.div_ceil(16).max(1), WHAT)?,
        size(rows.div_ceil(16).max(1), WHAT)?,
        size(heads.max(1), WHAT)?,
    ];
    kernel.dispatch(ctx, &params, &[x, &angles, &y], groups)?;
    Ok(y)
}
