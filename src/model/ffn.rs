//! The position-wise feed-forward network: expand, activate, project back.

use ndarray::{Array2, ArrayView2, Zip};

use super::config::Activation;
use super::weights::FfnWeights;
use crate::trace::{Op, Recorder};

/// x * Phi(x) with the exact error function, as BERT's "gelu".
pub fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + libm::erff(x / std::f32::consts::SQRT_2))
}

/// x * sigmoid(x)
pub fn silu(x: f32) -> f32 {
    x / (1.0 + (-x).exp())
}

pub fn feed_forward<R: Recorder>(
    x: ArrayView2<f32>,
    w: &FfnWeights,
    activation: Activation,
    layer: usize,
    input: Op,
    rec: &mut R,
) -> Array2<f32> {
    let l = Some(layer);
    let mut hidden = w.up.forward(x); // (T, d_ff)
    rec.step(Op::FfnUp, l, &[input], || hidden.clone().into_dyn());
    match (activation, &w.gate) {
        (Activation::Relu, _) => hidden.mapv_inplace(|v| v.max(0.0)),
        (Activation::Gelu, _) => hidden.mapv_inplace(gelu),
        (Activation::SwiGlu, Some(gate)) => {
            let g = gate.forward(x); // (T, d_ff)
            rec.step(Op::FfnGate, l, &[input], || g.clone().into_dyn());
            Zip::from(&mut hidden).and(&g).for_each(|h, &g| *h *= silu(g)); // (T, d_ff)
        }
        (Activation::SwiGlu, None) => unreachable!("Weights::check requires a gate for SwiGLU"),
    }
    rec.step(Op::FfnActivation, l, &[Op::FfnUp], || hidden.clone().into_dyn());
    let out = w.down.forward(hidden.view()); // (T, d_model)
    rec.step(Op::FfnDown, l, &[Op::FfnActivation], || out.clone().into_dyn());
    out
}
