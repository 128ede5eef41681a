//! LayerNorm and RMSNorm, per token (per row), with the statistics the layer-norm view shows.

use ndarray::{Array1, Array2, ArrayView1, ArrayView2, Axis, Zip};

use super::config::NormKind;
use super::weights::NormWeights;

/// Partial sums a row's sums keep side by side (lane k adds values k, k + 8, ...).
const LANES: usize = 8;

/// Σ f(v) over `values`: eight partial sums, then those pairwise, then the last few values.
/// One running total cannot be vectorised (each addition waits for the one before): in a profile
/// of the page's MiniLM pass at 32 tokens on two threads, the norms' statistics took a fifth of
/// the page thread's time outside the work the threads share. Eight side by side compile to
/// SIMD, and lose less precision too.
fn lane_sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut partial = [0f32; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (p, &v) in partial.iter_mut().zip(chunk) {
            *p += f(v);
        }
    }
    let [a, b, c, d, e, g, h, i] = partial;
    let mut sum = ((a + e) + (c + h)) + ((b + g) + (d + i));
    for &v in chunks.remainder() {
        sum += f(v);
    }
    sum
}

/// `lane_sum` of one row of any layout.
fn row_sum(row: ArrayView1<f32>, f: impl Fn(f32) -> f32) -> f32 {
    match row.as_slice() {
        Some(values) => lane_sum(values, f),
        None => lane_sum(&row.to_vec(), f),
    }
}

/// Mean (T) and population standard deviation (T) of each row.
pub fn row_mean_std(x: ArrayView2<f32>) -> (Array1<f32>, Array1<f32>) {
    let d = x.ncols() as f32;
    let mean = x.map_axis(Axis(1), |row| row_sum(row, |v| v) / d); // (T)
    let std = Zip::from(x.rows()).and(&mean).map_collect(|row, &m| (row_sum(row, |v| (v - m) * (v - m)) / d).sqrt()); // (T)
    (mean, std)
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
        let inv = 1.0 / (row_sum(row.view(), |v| v * v) / d + eps).sqrt();
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
