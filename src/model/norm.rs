//! LayerNorm and RMSNorm, per token (per row), with the statistics the layer-norm view shows.

use ndarray::{Array1, Array2, ArrayView2};

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

/// A row's mean and population standard deviation.
fn mean_std(values: &[f32]) -> (f32, f32) {
    let d = values.len() as f32;
    let mean = lane_sum(values, |v| v) / d;
    let std = (lane_sum(values, |v| (v - mean) * (v - mean)) / d).sqrt();
    (mean, std)
}

/// Mean (T) and population standard deviation (T) of each row.
pub fn row_mean_std(x: ArrayView2<f32>) -> (Array1<f32>, Array1<f32>) {
    let x = x.as_standard_layout(); // (T, d)
    let rows: Vec<(f32, f32)> = x
        .rows()
        .into_iter()
        .map(|row| {
            mean_std(
                row.to_slice()
                    .expect("rows of a standard-layout array are contiguous"),
            )
        })
        .collect();
    (
        rows.iter().map(|r| r.0).collect(),
        rows.iter().map(|r| r.1).collect(),
    ) // (T), (T)
}

/// A row's shift and scale: LayerNorm's (mean, 1 / sqrt(var + eps)), RMSNorm's
/// (0, 1 / sqrt(mean(x^2) + eps)). The row normalised is (x - shift) * scale.
fn shift_and_scale(kind: NormKind, row: &[f32], eps: f32) -> (f32, f32) {
    match kind {
        NormKind::Layer => {
            let (mean, std) = mean_std(row);
            (mean, 1.0 / (std * std + eps).sqrt())
        }
        NormKind::Rms => (
            0.0,
            1.0 / (lane_sum(row, |v| v * v) / row.len() as f32 + eps).sqrt(),
        ),
    }
}

/// Every row of x (T, d) normalised, before gamma and beta: (T, d).
fn normalised(kind: NormKind, x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    let mut out = x.as_standard_layout().into_owned(); // (T, d)
    for mut row in out.rows_mut() {
        let values = row
            .as_slice_mut()
            .expect("rows of a standard-layout array are contiguous");
        let (shift, scale) = shift_and_scale(kind, values, eps);
        values.iter_mut().for_each(|v| *v = (*v - shift) * scale);
    }
    out
}

/// (x - mean) / sqrt(var + eps) per row, before gamma and beta: each row has mean 0 and
/// (up to eps) standard deviation 1.
pub fn standardize(x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    normalised(NormKind::Layer, x, eps)
}

/// x / sqrt(mean(x^2) + eps) per row, before gamma.
pub fn rms_scale(x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    normalised(NormKind::Rms, x, eps)
}

/// What normalising a value, then gamma and beta, costs, in multiply-adds of a product: the rows
/// are shared among the threads when a norm is long enough (`threads::for_each_piece`).
const NORM_COST_PER_VALUE: usize = 8;

/// Rows a thread takes at a time.
const NORM_ROWS: usize = 8;

/// The full norm: standardise (or RMS-scale), then gamma and beta, each row in one go, the rows
/// shared among the threads (the same numbers, value for value, as `standardize` then
/// `* gamma + beta`).
pub fn apply(kind: NormKind, w: &NormWeights, x: ArrayView2<f32>, eps: f32) -> Array2<f32> {
    let d = x.ncols();
    let x = x.as_standard_layout(); // (T, d)
    let xs = x.as_slice().expect("standard layout is contiguous");
    let gamma = w.gamma.to_vec(); // (d)
    let beta = w.beta.as_ref().map(|b| b.to_vec()); // (d)
    let mut y = Array2::<f32>::zeros(x.dim()); // (T, d)
    let out = y.as_slice_mut().expect("fresh arrays are contiguous");
    if d == 0 {
        return y;
    }
    super::threads::for_each_piece(
        out,
        NORM_ROWS * d,
        NORM_ROWS * d * NORM_COST_PER_VALUE,
        |k, piece| {
            for (r, out_row) in piece.chunks_mut(d).enumerate() {
                let row = &xs[(k * NORM_ROWS + r) * d..][..d]; // (d)
                let (shift, scale) = shift_and_scale(kind, row, eps);
                match &beta {
                    Some(beta) => {
                        for (((o, &v), &g), &b) in out_row.iter_mut().zip(row).zip(&gamma).zip(beta)
                        {
                            *o = (v - shift) * scale * g + b;
                        }
                    }
                    None => {
                        for ((o, &v), &g) in out_row.iter_mut().zip(row).zip(&gamma) {
                            *o = (v - shift) * scale * g;
                        }
                    }
                }
            }
        },
    );
    y
}
