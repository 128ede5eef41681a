//! LayerNorm and RMSNorm, per token (per row), with the statistics the layer-norm view shows.

use ndarray::{Array1, Array2, ArrayView2, Axis};

use super::config::NormKind;
use super::weights::NormWeights;

/// Mean (T) and population standard deviation (T) of each row.
pub fn row_mean_std(x: ArrayView2<f32>) -> (Array1<f32>, Array1<f32>) {
    let d = x.ncols() as f32;
    let mean = x.sum_axis(Axis(1)) / d; // (T)
    let var = x.map_axis(Axis(1), |row| {
        let m = row.sum() / d;
        row.iter().map(|v| (v - m) * (v - m)).sum::<f32>() / d
    }); // (T)
    (mean, var.mapv(f32::sqrt))
}

/// (x - mean) / sqrt(var + eps) per row, before gamma and beta: each row has mean 0 and
/// (up to eps) standard deviation 1.
pub fn standardize(x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    let (mean, std) = row_mean_std(x); // (T), (T)
    let mut out = x.to_owned(); // (T, d)
    for ((mut row, m), s) in out.rows_mut().into_iter().zip(mean.iter()).zip(std.iter()) {
        let inv = 1.0 / (s * s + eps).sqrt();
        row.mapv_inplace(|v| (v - m) * inv);
    }
    out
}

/// x / sqrt(mean(x^2) + eps) per row, before gamma.
pub fn rms_scale(x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    let d = x.ncols() as f32;
    let mut out = x.to_owned(); // (T, d)
    for mut row in out.rows_mut() {
        let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f32>() / d + eps).sqrt();
        row.mapv_inplace(|v| v * inv);
    }
    out
}

/// The full norm: standardise (or RMS-scale), then gamma and beta.
pub fn apply(kind: NormKind, w: &NormWeights, x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    let mut y = match kind {
        NormKind::Layer => standardize(x, eps), // (T, d)
        NormKind::Rms => rms_scale(x, eps),     // (T, d)
    };
    y *= &w.gamma; // (T, d) * (d)
    if let Some(b) = &w.beta {
        y += b; // (T, d) + (d)
    }
    y
}
