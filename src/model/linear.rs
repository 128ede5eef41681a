//! A dense layer, with the weight stored (out, in) as PyTorch, safetensors and GGUF keep it.

use ndarray::{s, Array1, Array2, ArrayView2};

use super::matrix::Matrix;
use super::team::{self, Team};

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

    /// y = x W^T + b
    pub fn forward(&self, x: ArrayView2<f32>) -> Array2<f32> {
        if let Some(team) = team::current() {
            return self.forward_shared(x, &*team);
        }
        self.forward_features(x, 0, self.out_features())
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

    /// This member's half of the output features, swapped with the partner's half.
    fn forward_shared(&self, x: ArrayView2<f32>, team: &dyn Team) -> Array2<f32> {
        let (t, out) = (x.nrows(), self.out_features());
        let halves = team::halves(out, ROWS_PER_BLOCK);
        let member = team.member().min(1);
        let ((lo, hi), (other_lo, other_hi)) = (halves[member], halves[1 - member]);
        let mine = self.forward_features(x, lo, hi); // (T, hi - lo), standard layout
        let mut theirs = Array2::<f32>::zeros((t, other_hi - other_lo)); // (T, other half)
        let swapped = match (mine.as_slice(), theirs.as_slice_mut()) {
            (Some(m), Some(o)) => team.exchange(m, o),
            _ => false,
        };
        if !swapped {
            // The partner did not answer (or this half could not be sent): finish alone.
            team::leave();
            theirs = self.forward_features(x, other_lo, other_hi);
        }
        let mut y = Array2::<f32>::zeros((t, out)); // (T, out)
        y.slice_mut(s![.., lo..hi]).assign(&mine);
        y.slice_mut(s![.., other_lo..other_hi]).assign(&theirs);
        y
    }
}
