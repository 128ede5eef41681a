//! A dense layer, with the weight stored (out, in) as PyTorch and safetensors keep it.

use ndarray::{Array1, Array2, ArrayView2};

#[derive(Debug, Clone)]
pub struct Linear {
    /// (out, in)
    pub weight: Array2<f32>,
    /// (out)
    pub bias: Option<Array1<f32>>,
}

impl Linear {
    pub fn in_features(&self) -> usize {
        self.weight.ncols()
    }

    pub fn out_features(&self) -> usize {
        self.weight.nrows()
    }

    /// y = x W^T + b
    pub fn forward(&self, x: ArrayView2<f32>) -> Array2<f32> {
        let mut y = x.dot(&self.weight.t()); // (T, out) = (T, in) · (in, out)
        if let Some(b) = &self.bias {
            y += b; // (T, out) + (out)
        }
        y
    }
}
