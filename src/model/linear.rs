//! A dense layer, with the weight stored (out, in) as PyTorch and safetensors keep it.

use ndarray::{Array1, Array2, ArrayView2};

#[derive(Debug, Clone)]
pub struct Linear {
    /// (out, in)
    pub weight: Array2<f32>,
    /// (out)
    pub bias: Option<Array1<f32>>,
}

/// Up to this many tokens, WebAssembly uses the streaming kernel below rather than a GEMM
/// that first copies (packs) the whole weight matrix on every call.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
const STREAMING_MAX_TOKENS: usize = 96;

impl Linear {
    pub fn in_features(&self) -> usize {
        self.weight.ncols()
    }

    pub fn out_features(&self) -> usize {
        self.weight.nrows()
    }

    /// y = x W^T + b
    pub fn forward(&self, x: ArrayView2<f32>) -> Array2<f32> {
        #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
        if x.nrows() <= STREAMING_MAX_TOKENS {
            if let Some(y) = self.forward_streaming(x) {
                return y;
            }
        }
        let mut y = x.dot(&self.weight.t()); // (T, out) = (T, in) · (in, out)
        if let Some(b) = &self.bias {
            y += b; // (T, out) + (out)
        }
        y
    }

    /// Four weight rows at a time, each read once from memory and kept in cache while every
    /// token's dot products with them are taken, four SIMD lanes wide.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    fn forward_streaming(&self, x: ArrayView2<f32>) -> Option<Array2<f32>> {
        let x = x.as_standard_layout(); // (T, in)
        let (t, inp) = x.dim();
        let out = self.out_features();
        let xs = x.as_slice()?;
        let ws = self.weight.as_slice()?;
        let mut y = Array2::<f32>::zeros((t, out)); // (T, out)
        let ys = y.as_slice_mut()?;
        let mut o = 0;
        while o + 4 <= out {
            let rows = [&ws[o * inp..(o + 1) * inp], &ws[(o + 1) * inp..(o + 2) * inp], &ws[(o + 2) * inp..(o + 3) * inp], &ws[(o + 3) * inp..(o + 4) * inp]];
            let mut tok = 0;
            while tok + 4 <= t {
                let xrows = [0, 1, 2, 3].map(|k| &xs[(tok + k) * inp..(tok + k + 1) * inp]);
                let dots = simd::dot4x4(xrows, rows);
                for (k, d) in dots.iter().enumerate() {
                    ys[(tok + k) * out + o..(tok + k) * out + o + 4].copy_from_slice(d);
                }
                tok += 4;
            }
            for tok in tok..t {
                let dots = simd::dot4(&xs[tok * inp..(tok + 1) * inp], rows);
                ys[tok * out + o..tok * out + o + 4].copy_from_slice(&dots);
            }
            o += 4;
        }
        for o in o..out {
            let row = &ws[o * inp..(o + 1) * inp];
            for tok in 0..t {
                ys[tok * out + o] = xs[tok * inp..(tok + 1) * inp].iter().zip(row).map(|(a, b)| a * b).sum();
            }
        }
        if let Some(b) = &self.bias {
            y += b; // (T, out) + (out)
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

    /// Sixteen dot products: four token rows `x` with four weight rows `w`, each load of
    /// either shared by four multiply-adds.
    pub fn dot4x4(x: [&[f32]; 4], w: [&[f32]; 4]) -> [[f32; 4]; 4] {
        let n = x[0].len();
        let whole = n / 4 * 4;
        let mut acc = [[f32x4_splat(0.0); 4]; 4];
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 4 <= whole <= n = every row's length; wasm loads need no alignment.
            unsafe {
                let wv = w.map(|r| v128_load(r.as_ptr().add(i) as *const v128));
                for (acc_t, xr) in acc.iter_mut().zip(x.iter()) {
                    let xv = v128_load(xr.as_ptr().add(i) as *const v128);
                    for (a, wv) in acc_t.iter_mut().zip(wv.iter()) {
                        *a = f32x4_add(*a, f32x4_mul(xv, *wv));
                    }
                }
            }
            i += 4;
        }
        let mut out = [[0f32; 4]; 4];
        for t in 0..4 {
            for k in 0..4 {
                let mut s = hsum(acc[t][k]);
                for j in whole..n {
                    s += x[t][j] * w[k][j];
                }
                out[t][k] = s;
            }
        }
        out
    }

    /// The dot products of `x` with four rows at once, sharing each load of `x`.
    pub fn dot4(x: &[f32], rows: [&[f32]; 4]) -> [f32; 4] {
        let n = x.len();
        let whole = n / 4 * 4;
        let mut acc = [f32x4_splat(0.0); 4];
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 4 <= whole <= n = every row's length; wasm loads need no alignment.
            unsafe {
                let xv = v128_load(x.as_ptr().add(i) as *const v128);
                for (a, row) in acc.iter_mut().zip(rows.iter()) {
                    *a = f32x4_add(*a, f32x4_mul(xv, v128_load(row.as_ptr().add(i) as *const v128)));
                }
            }
            i += 4;
        }
        let mut out = [0f32; 4];
        for (k, a) in acc.iter().enumerate() {
            let mut s = hsum(*a);
            for j in whole..n {
                s += x[j] * rows[k][j];
            }
            out[k] = s;
        }
        out
    }
}
