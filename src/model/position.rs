//! Positional encodings: the sinusoidal table of the original paper, and rotary embedding.

use ndarray::{Array2, Array3};

/// The sinusoidal table (positions, d_model), exactly as the notes define it:
/// PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(p / 10000^(2i/d)).
pub fn sinusoidal_table(positions: usize, d_model: usize) -> Array2<f32> {
    sinusoidal_rows(0, positions, d_model)
}

/// Rows [first, end) of the sinusoidal table: (end - first, d_model).
pub fn sinusoidal_rows(first: usize, end: usize, d_model: usize) -> Array2<f32> {
    let mut table = Array2::<f32>::zeros((end - first, d_model)); // (end - first, d)
    for p in first..end {
        for i in 0..d_model / 2 {
            let angle = p as f64 / 10000f64.powf((2 * i) as f64 / d_model as f64);
            table[[p - first, 2 * i]] = angle.sin() as f32;
            table[[p - first, 2 * i + 1]] = angle.cos() as f32;
        }
    }
    table
}

/// Rotary frequencies theta_i = base^(-2i/head_dim), one per pair of features.
pub fn rotary_frequencies(head_dim: usize, base: f32) -> Vec<f32> {
    (0..head_dim / 2)
        .map(|i| (base as f64).powf(-((2 * i) as f64) / head_dim as f64) as f32)
        .collect()
}

/// Rotates every pair of features of x (heads, T, head_dim) by position * theta_i.
/// `adjacent_pairs`: pairs are (2i, 2i+1) (GGUF layout); otherwise (i, i + head_dim/2).
pub fn apply_rotary(x: &mut Array3<f32>, base: f32, adjacent_pairs: bool) {
    apply_rotary_from(x, base, adjacent_pairs, 0);
}

/// `apply_rotary` for rows that sit at positions `first`, `first + 1`, ... (the new tokens
/// of a pass that reuses cached keys).
pub fn apply_rotary_from(x: &mut Array3<f32>, base: f32, adjacent_pairs: bool, first: usize) {
    let (heads, t, hd) = x.dim();
    let freqs = rotary_frequencies(hd, base); // (hd/2)
    for h in 0..heads {
        for row in 0..t {
            let p = first + row;
            for (i, theta) in freqs.iter().enumerate() {
                let (sin, cos) = ((p as f64) * (*theta as f64)).sin_cos();
                let (a, b) = if adjacent_pairs {
                    (2 * i, 2 * i + 1)
                } else {
                    (i, i + hd / 2)
                };
                let (xa, xb) = (x[[h, row, a]] as f64, x[[h, row, b]] as f64);
                x[[h, row, a]] = (xa * cos - xb * sin) as f32;
                x[[h, row, b]] = (xa * sin + xb * cos) as f32;
            }
        }
    }
}
