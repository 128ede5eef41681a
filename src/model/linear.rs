//! A dense layer, with the weight stored (out, in) as PyTorch, safetensors and GGUF keep it.

use ndarray::{s, Array1, Array2, ArrayView2};

use super::matrix::Matrix;
use super::team;

#[derive(Debug, Clone)]
pub struct Linear {
    /// (out, in), f32 or quantized blocks.
    pub weight: Matrix,
    /// (out)
    pub bias: Option<Array1<f32>>,
}

/// Where a team splits the output features, so that both halves keep whole blocks of the
/// WebAssembly kernel (two weight rows).
const ROWS_PER_BLOCK: usize = 2;

impl Linear {
    pub fn in_features(&self) -> usize {
        self.weight.cols()
    }

    pub fn out_features(&self) -> usize {
        self.weight.rows()
    }

    /// y = x W^T + b, shared with the team (if any): see `team::shared_product`.
    pub fn forward(&self, x: ArrayView2<f32>) -> Array2<f32> {
        team::shared_product(x.nrows(), self.out_features(), ROWS_PER_BLOCK, |lo, hi| self.forward_features(x, lo, hi))
    }

    /// Output features [lo, hi) only: x W[lo..hi]^T + b[lo..hi].
    pub fn forward_features(&self, x: ArrayView2<f32>, lo: usize, hi: usize) -> Array2<f32> {
        let x = x.as_standard_layout(); // (T, in)
        let mut y = self.weight.multiply_rows(x.view(), lo, hi); // (T, hi - lo) = (T, in) · (in, hi - lo)
        if let Some(b) = &self.bias {
            y += &b.slice(s![lo..hi]); // (T, hi - lo) + (hi - lo)
        }
        y
    }
}
