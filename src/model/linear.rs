//! A dense layer, with the weight stored (out, in) as PyTorch, safetensors and GGUF keep it.

use ndarray::{Array1, Array2, ArrayView2};

use super::matrix::Matrix;

#[derive(Debug, Clone)]
pub struct Linear {
    /// (out, in), f32 or quantized blocks.
    pub weight: Matrix,
    /// (out)
    pub bias: Option<Array1<f32>>,
}

impl Linear {
    pub fn in_features(&self) -> usize {
        self.weight.cols()
    }

    pub fn out_features(&self) -> usize {
        self.weight.rows()
    }

    /// y = x W^T + b (the product and the bias shared among the threads:
    /// `Matrix::multiply_rows_plus`).
    pub fn forward(&self, x: ArrayView2<f32>) -> Array2<f32> {
        let x = x.as_standard_layout(); // (T, in)
        let bias = self.bias.as_ref().map(|b| b.view()); // (out)
        self.weight
            .multiply_rows_plus(x.view(), 0, self.out_features(), bias) // (T, out) = (T, in) · (in, out) + (out)
    }
}
