//! A dense layer, with the weight stored (out, in) as PyTorch and safetensors keep it.

use ndarray::{s, Array1, Array2, ArrayView2};

use super::team::{self, Team};

#[derive(Debug, Clone)]
pub struct Linear {
    /// (out, in)
    pub weight: Array2<f32>,
    /// (out)
    pub bias: Option<Array1<f32>>,
}

/// The streaming kernel takes the tokens this many at a time, so that their rows stay in
/// the CPU's cache while every weight row passes by.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const TOKENS_PER_CHUNK: usize = 64;
/// The streaming kernel's block: four tokens by two weight rows, eight accumulators. Larger
/// blocks run out of the sixteen SIMD registers browsers compile WebAssembly to on x86-64.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const TOKENS_PER_BLOCK: usize = 4;
/// Also where a team splits the output features, so that both halves keep whole blocks.
const ROWS_PER_BLOCK: usize = 2;

impl Linear {
    pub fn in_features(&self) -> usize {
        self.weight.ncols()
    }

    pub fn out_features(&self) -> usize {
        self.weight.nrows()
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
        // In WebAssembly, a kernel that streams the weights beats a GEMM that first copies
        // (packs) the whole weight matrix on every call.
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        if let Some(y) = self.forward_streaming(x, lo, hi) {
            return y;
        }
        let w = self.weight.slice(s![lo..hi, ..]); // (hi - lo, in)
        let mut y = x.dot(&w.t()); // (T, hi - lo) = (T, in) · (in, hi - lo)
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

    /// A block of weight rows at a time, each read once from memory and kept in cache while
    /// every token's dot products with them are taken, four tokens and four SIMD lanes wide.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    fn forward_streaming(&self, x: ArrayView2<f32>, lo: usize, hi: usize) -> Option<Array2<f32>> {
        const TB: usize = TOKENS_PER_BLOCK;
        const RB: usize = ROWS_PER_BLOCK;
        let x = x.as_standard_layout(); // (T, in)
        let (t, inp) = x.dim();
        let out = hi - lo;
        let xs = x.as_slice()?;
        let ws = &self.weight.as_slice()?[lo * inp..hi * inp]; // rows lo..hi of (out, in)
        let mut y = Array2::<f32>::zeros((t, out)); // (T, out)
        let ys = y.as_slice_mut()?;
        for start in (0..t).step_by(TOKENS_PER_CHUNK) {
            let end = (start + TOKENS_PER_CHUNK).min(t);
            let mut o = 0;
            while o + RB <= out {
                let rows: [&[f32]; RB] = core::array::from_fn(|k| &ws[(o + k) * inp..(o + k + 1) * inp]);
                let mut tok = start;
                while tok + TB <= end {
                    let xrows: [&[f32]; TB] = core::array::from_fn(|k| &xs[(tok + k) * inp..(tok + k + 1) * inp]);
                    let dots = simd::dot_block::<TB, RB>(xrows, rows);
                    for (k, d) in dots.iter().enumerate() {
                        ys[(tok + k) * out + o..(tok + k) * out + o + RB].copy_from_slice(d);
                    }
                    tok += TB;
                }
                for tok in tok..end {
                    let dots = simd::dot_block::<1, RB>([&xs[tok * inp..(tok + 1) * inp]], rows);
                    ys[tok * out + o..tok * out + o + RB].copy_from_slice(&dots[0]);
                }
                o += RB;
            }
            for o in o..out {
                let row = &ws[o * inp..(o + 1) * inp];
                for tok in start..end {
                    ys[tok * out + o] = xs[tok * inp..(tok + 1) * inp].iter().zip(row).map(|(a, b)| a * b).sum();
                }
            }
        }
        if let Some(b) = &self.bias {
            y += &b.slice(s![lo..hi]); // (T, hi - lo) + (hi - lo)
        }
        Some(y)
    }
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd {
    use core::arch::wasm32::*;

    fn hsum(a: v128) -> f32 {
        f32x4_extract_lane::<0>(a) + f32x4_extract_lane::<1>(a) + f32x4_extract_lane::<2>(a) + f32x4_extract_lane::<3>(a)
    }

    /// The TB x RB dot products of token rows `x` with weight rows `w`: each load of a
    /// vector of either is shared by the multiply-adds of the other's rows.
    #[inline(always)]
    pub fn dot_block<const TB: usize, const RB: usize>(x: [&[f32]; TB], w: [&[f32]; RB]) -> [[f32; RB]; TB] {
        let n = x[0].len();
        let whole = n / 4 * 4;
        let mut acc = [[f32x4_splat(0.0); RB]; TB];
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 4 <= whole <= n = every row's length; wasm loads need no alignment.
            unsafe {
                let wv: [v128; RB] = core::array::from_fn(|k| v128_load(w[k].as_ptr().add(i) as *const v128));
                for (acc_t, xr) in acc.iter_mut().zip(x.iter()) {
                    let xv = v128_load(xr.as_ptr().add(i) as *const v128);
                    for (a, wv) in acc_t.iter_mut().zip(wv.iter()) {
                        *a = f32x4_add(*a, f32x4_mul(xv, *wv));
                    }
                }
            }
            i += 4;
        }
        let mut out = [[0f32; RB]; TB];
        for t in 0..TB {
            for k in 0..RB {
                let mut s = hsum(acc[t][k]);
                for j in whole..n {
                    s += x[t][j] * w[k][j];
                }
                out[t][k] = s;
            }
        }
        out
    }
}
