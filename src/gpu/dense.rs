//! Host of `dense.wgsl`: y (T, out) = x (T, in) · w (out, in)ᵀ + b (out), with f32 weights
//! (`dense_f32_weights.wgsl`), f16 ones (`dense_f16_weights.wgsl`, widened in the kernel) or
//! GGUF blocks (`dense_q8_0_weights.wgsl`, `dense_q4_1_weights.wgsl`, dequantized in the kernel).
//! CPU twin: `crate::model::linear::Linear::forward` (for blocks, `Matrix::Quantized`'s product).

use super::context::GpuContext;
use super::error::GpuError;
use super::kernel::{size, Param};
use super::tensor::{GpuDtype, GpuTensor};

const TILE: usize = 16;

/// `x` (T, in, f32) through the weight `w` (out, in, f32 or f16) and the optional bias `b`
/// (out, f32): (T, out).
pub fn dense(
    ctx: &GpuContext,
    x: &GpuTensor,
    w: &GpuTensor,
    b: Option<&GpuTensor>,
) -> Result<GpuTensor, GpuError> {
    const WHAT: &str = "dense";
    let (&[t, inputs], &[outputs, w_inputs]) = (x.shape(), w.shape()) else {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!(
                "x {:?} and w {:?} must both be matrices",
                x.shape(),
                w.shape()
            ),
        });
    };
    if inputs != w_inputs || b.is_some_and(|b| b.shape() != [outputs]) {
        let bias = b
            .map(|b| format!(", b {:?}", b.shape()))
            .unwrap_or_default();
        return Err(GpuError::Shape {
            what: WHAT,
            detail: format!("x {:?}, w {:?}{bias}", x.shape(), w.shape()),
        });
    }
    let y = GpuTensor::output(ctx, &[t, outputs], "dense output")?;
    let no_bias;
    let bias = match b {
        Some(b) => b,
        None => {
            no_bias = GpuTensor::output(ctx, &[1], "no bias")?;
            &no_bias
        }
    };
    if x.dtype() != GpuDtype::F32 || bias.dtype() != GpuDtype::F32 {
        return Err(GpuError::Shape {
            what: WHAT,
            detail: "inputs and biases are f32; only weights may be f16 or GGUF blocks".into(),
        });
    }
    let kernel = match w.dtype() {
        GpuDtype::F32 => ctx.kernel(
            "dense (f32 weights)",
            concat!(
                include_str!("dense.wgsl"),
                include_str!("dense_f32_weights.wgsl")
            ),
        )?,
        GpuDtype::F16 => ctx.kernel(
            "dense (f16 weights)",
            concat!(
                include_str!("dense.wgsl"),
                include_str!("dense_f16_weights.wgsl")
            ),
        )?,
        GpuDtype::Q8_0 => ctx.kernel(
            "dense (Q8_0 weights)",
            concat!(
                include_str!("dense.wgsl"),
                include_str!("dense_q8_0_weights.wgsl")
            ),
        )?,
        GpuDtype::Q4_1 => ctx.kernel(
            "dense (Q4_1 weights)",
            concat!(
                include_str!("dense.wgsl"),
                include_str!("dense_q4_1_weights.wgsl")
            ),
        )?,
    };
    let params = [
        Param::U(size(t, WHAT)?),
        Param::U(size(inputs, WHAT)?),
        Param::U(size(outputs, WHAT)?),
        Param::U(b.is_some() as u32),
    ];
    let groups = [
        size(outputs.div_ceil(TILE).max(1), WHAT)?,
        size(t.div_ceil(TILE).max(1), WHAT)?,
        1,
    ];
    kernel.dispatch(ctx, &params, &[x, w, bias, &y], groups)?;
    Ok(y)
}
