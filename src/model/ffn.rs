//! The position-wise feed-forward network: expand, activate, project back.

use ndarray::{Array, Array2, ArrayView, ArrayView2, Dimension, Zip};

use super::backend::{Backend, Shaped};
use super::config::Activation;
use super::edits::Overwrite;
use super::record::{Op, Recorder};
use super::weights::FfnWeights;

/// x * Phi(x) with the exact error function, as BERT's "gelu".
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x / std::f32::consts::SQRT_2))
}

/// GELU over a whole tensor. In WebAssembly it runs four lanes at a time with an erf
/// accurate to 1.5e-7 (below), since one call per element to the exact scalar erf took a
/// tenth of a forward pass there; natively it is the exact `gelu` above.
pub fn gelu_in_place(values: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        let whole = values.len() / 4 * 4;
        let (head, tail) = values.split_at_mut(whole);
        for chunk in head.chunks_exact_mut(4) {
            simd_gelu::gelu4(chunk);
        }
        tail.iter_mut().for_each(|v| *v = gelu(*v));
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    values.iter_mut().for_each(|v| *v = gelu(*v));
}

/// x * sigmoid(x)
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

/// SwiGLU's gating: up (T, d_ff) times SiLU of the gate projection (T, d_ff), as a new
/// tensor (the pass moves `up` and `gate` into its trace afterwards, uncopied).
pub fn gated(up: ArrayView2<f32>, gate: ArrayView2<f32>) -> Array2<f32> {
    Zip::from(up).and(gate).map_collect(|&h, &g| h * silu(g)) // (T, d_ff)
}

/// Values a thread takes at a time for GELU.
const GELU_RUN: usize = 4096;

/// ReLU or GELU of every value of `x`, as a new tensor (the pass moves `x`, the expansion,
/// into its trace afterwards, uncopied). SwiGLU needs its gate: `gated`.
pub(crate) fn activated<D: Dimension>(
    x: ArrayView<f32, D>,
    activation: Activation,
) -> Array<f32, D> {
    match activation {
        Activation::Relu => x.mapv(|v| v.max(0.0)),
        // Runs of GELU_RUN values (a multiple of four, so each lands in the same lanes as in
        // one run over the whole tensor), each copied and activated by the thread that takes
        // it.
        Activation::Gelu => match x.as_slice() {
            Some(values) => {
                let mut out = Array::<f32, D>::zeros(x.raw_dim()); // the shape of x
                let runs = out.as_slice_mut().expect("fresh arrays are contiguous");
                super::threads::for_each_piece(runs, GELU_RUN, GELU_RUN * 8, |i, run| {
                    let start = i * GELU_RUN;
                    run.copy_from_slice(&values[start..start + run.len()]);
                    gelu_in_place(run);
                });
                out
            }
            None => x.mapv(gelu),
        },
        Activation::SwiGlu => {
            unreachable!("SwiGLU is not pointwise: feed_forward multiplies by the gate")
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub fn feed_forward<B: Backend, R: Recorder>(
    backend: &B,
    x: &B::Rows,
    w: &FfnWeights,
    activation: Activation,
    layer: usize,
    input: Op,
    rec: &mut R,
    overwrite: Option<&Overwrite>,
) -> B::Rows {
    let l = Some(layer);
    let up = backend.linear(x, &w.up); // (T, d_ff)
                                       // The activation is computed into a new tensor, so that the expansion (and the gate)
                                       // move into the trace afterwards rather than being copied there: the largest tensors
                                       // of a layer.
    let hidden = match (activation, &w.gate) {
        (Activation::SwiGlu, Some(gate)) => {
            let g = backend.linear(x, gate); // (T, d_ff)
            let hidden = backend.gate(&up, &g); // (T, d_ff): up · SiLU(gate)
            rec.step(Op::FfnUp, l, &[input], || backend.rows_into_trace(up));
            rec.step(Op::FfnGate, l, &[input], || backend.rows_into_trace(g));
            rec.step(Op::FfnActivation, l, &[Op::FfnUp], || {
                backend.trace_rows(&hidden)
            });
            hidden
        }
        (Activation::SwiGlu, None) => unreachable!("Weights::check requires a gate for SwiGLU"),
        (pointwise, _) => {
            let shape = [up.dims()[0], up.dims()[1]];
            let hidden = backend.pointwise(&up, pointwise); // (T, d_ff)
            rec.step(Op::FfnUp, l, &[input], || backend.rows_into_trace(up));
            // The trace keeps the expansion; its activation is computed again when read.
            rec.derived_step(
                Op::FfnActivation,
                l,
                &[Op::FfnUp],
                &shape,
                || backend.trace_rows(&hidden),
                move |up| {
                    activated(up[0].view(), pointwise) // (T, d_ff)
                },
            );
            hidden
        }
    };
    let out = backend.linear(&hidden, &w.down); // (T, d_model)
                                                // Switched off or patched (`edits`): the layer's output is what the stream receives.
    let out = match overwrite {
        Some(o) => backend.overwrite_rows(out, o), // (T, d_model)
        None => out,
    };
    rec.step(Op::FfnDown, l, &[Op::FfnActivation], || {
        backend.trace_rows(&out)
    });
    out
}

/// GELU four lanes at a time: 0.5 x (1 + erf(x / sqrt 2)), with erf from Abramowitz and
/// Stegun's formula 7.1.26, erf(z) = 1 - t (a1 + t (a2 + ... + t a5)) exp(-z^2) with
/// t = 1 / (1 + p |z|) (absolute error at most 1.5e-7), and exp from `simd_exp`.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd_gelu {
    use super::super::simd_exp::lanes::exp4;
    use core::arch::wasm32::*;

    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ];

    pub fn gelu4(chunk: &mut [f32]) {
        // SAFETY: the caller passes exactly four values; wasm loads and stores need no alignment.
        let x = unsafe { v128_load(chunk.as_ptr() as *const v128) };
        let z = f32x4_mul(x, f32x4_splat(std::f32::consts::FRAC_1_SQRT_2));
        let az = f32x4_abs(z);
        let t = f32x4_div(
            f32x4_splat(1.0),
            f32x4_add(f32x4_splat(1.0), f32x4_mul(f32x4_splat(P), az)),
        );
        let mut poly = f32x4_splat(A[4]);
        for &a in A[..4].iter().rev() {
            poly = f32x4_add(f32x4_mul(poly, t), f32x4_splat(a));
        }
        poly = f32x4_mul(poly, t);
        let erf_abs = f32x4_sub(
            f32x4_splat(1.0),
            f32x4_mul(poly, exp4(f32x4_neg(f32x4_mul(z, z)))),
        );
        // erf is odd: give erf(|z|) the sign of z.
        let sign = v128_and(z, f32x4_splat(-0.0));
        let erf = v128_or(erf_abs, sign);
        let y = f32x4_mul(
            f32x4_mul(f32x4_splat(0.5), x),
            f32x4_add(f32x4_splat(1.0), erf),
        );
        // SAFETY: as for the load above.
        unsafe { v128_store(chunk.as_mut_ptr() as *mut v128, y) };
    }
}
