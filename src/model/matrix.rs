//! A weight matrix, (rows, cols), kept as its checkpoint stores it: f32 values, or GGUF's
//! quantized blocks. SmolLM2's weights are 98 MB as Q4_1/Q8_0 blocks and 538 MB as f32, so
//! quantized matrices stay quantized: the dense kernel dequantizes a panel of rows at a time
//! into a small buffer and multiplies that, which gives the numbers of dequantize-then-multiply
//! (the same dequantized values, the same products) without ever holding the f32 matrix.

use ndarray::{s, Array2, ArrayView1, ArrayView2, ArrayViewMut2};

use super::quantized::{
    block_sums, dequantize_row, dot_q4_1_summed, dot_row, GgmlType, GgufTensor, SharedBytes,
};
use super::threads;
use crate::error::{Result, VizError};

/// Rows dequantized at a time: 32 rows of 576 values are 72 KB of f32, which stay in the
/// cache while every token's dot products with them are taken.
const PANEL_ROWS: usize = 32;

/// Up to this many tokens, quantized rows are multiplied block by block as they are read
/// (`quantized::dot_row`) rather than dequantized into a panel first: with so few tokens there is
/// no one to share a dequantized row with.
const FUSED_MAX_TOKENS: usize = 2;

/// Weight rows the WebAssembly kernel takes at a time: threads split a product on a multiple.
const KERNEL_ROWS: usize = 2;

#[derive(Debug, Clone)]
pub enum Matrix {
    /// (rows, cols) f32.
    Dense(Array2<f32>),
    /// GGUF blocks, row after row; each row is a whole number of blocks.
    Quantized(GgufTensor<SharedBytes>),
}

impl From<Array2<f32>> for Matrix {
    fn from(values: Array2<f32>) -> Self {
        Matrix::Dense(values)
    }
}

impl Matrix {
    /// A quantized matrix from a GGUF tensor of two dimensions.
    pub fn quantized<B: AsRef<[u8]> + Into<SharedBytes>>(tensor: GgufTensor<B>) -> Result<Self> {
        if tensor.shape().len() != 2 {
            return Err(VizError::ShapeMismatch {
                name: tensor.name().into(),
                expected: vec![0, 0],
                found: tensor.shape().to_vec(),
            });
        }
        Ok(match tensor.kind() {
            // Plain floats gain nothing from block-wise reading: keep them as ndarray values.
            GgmlType::F32 | GgmlType::F16 => {
                let (rows, cols) = (tensor.rows(), tensor.cols());
                let values = tensor.to_f32()?;
                Matrix::Dense(
                    Array2::from_shape_vec((rows, cols), values)
                        .expect("to_f32 gives rows * cols values"),
                )
            }
            GgmlType::Q8_0 | GgmlType::Q4_1 => Matrix::Quantized(tensor.into_shared()),
        })
    }

    pub fn rows(&self) -> usize {
        match self {
            Matrix::Dense(m) => m.nrows(),
            Matrix::Quantized(q) => q.rows(),
        }
    }

    pub fn cols(&self) -> usize {
        match self {
            Matrix::Dense(m) => m.ncols(),
            Matrix::Quantized(q) => q.cols(),
        }
    }

    /// [rows, cols], as ndarray's `shape()` gives it.
    pub fn shape(&self) -> [usize; 2] {
        [self.rows(), self.cols()]
    }

    /// The storage type's name: "F32", "Q4_1", ...
    pub fn storage(&self) -> &'static str {
        match self {
            Matrix::Dense(_) => "F32",
            Matrix::Quantized(q) => q.kind().name(),
        }
    }

    /// Bytes the matrix holds in memory.
    pub fn bytes_in_memory(&self) -> usize {
        match self {
            Matrix::Dense(m) => m.len() * std::mem::size_of::<f32>(),
            Matrix::Quantized(q) => q.bytes().len(),
        }
    }

    /// Rows [lo, hi) as f32 into `out` ((hi - lo) * cols values, row-major).
    fn rows_into(&self, lo: usize, hi: usize, out: &mut [f32]) {
        match self {
            Matrix::Dense(m) => {
                let panel = m.slice(s![lo..hi, ..]); // (hi - lo, cols)
                match panel.as_slice() {
                    Some(values) => out.copy_from_slice(values), // a row-major matrix's rows: one copy
                    None => out.iter_mut().zip(panel.iter()).for_each(|(o, v)| *o = *v),
                }
            }
            Matrix::Quantized(q) => {
                let bytes = &q.bytes()[lo * q.row_bytes()..hi * q.row_bytes()];
                dequantize_row(q.kind(), bytes, out).expect("whole rows of a checked tensor");
            }
        }
    }

    /// Rows [lo, hi) as f32: (hi - lo, cols).
    pub fn rows_f32(&self, lo: usize, hi: usize) -> Array2<f32> {
        let mut out = Array2::<f32>::zeros((hi - lo, self.cols())); // (hi - lo, cols)
        self.rows_into(
            lo,
            hi,
            out.as_slice_mut().expect("fresh arrays are contiguous"),
        );
        out
    }

    /// Every value as f32, (rows, cols): for tests and small matrices only.
    pub fn to_dense(&self) -> Array2<f32> {
        self.rows_f32(0, self.rows())
    }

    /// The given rows (token ids of an embedding table), (ids.len(), cols); `None` if an id
    /// is out of range.
    pub fn select_rows(&self, ids: &[usize]) -> Option<Array2<f32>> {
        let cols = self.cols();
        let mut out = Array2::<f32>::zeros((ids.len(), cols)); // (n, cols)
        for (row, &id) in out.rows_mut().into_iter().zip(ids) {
            if id >= self.rows() {
                return None;
            }
            let values = row
                .into_slice()
                .expect("rows of a fresh array are contiguous");
            self.rows_into(id, id + 1, values);
        }
        Some(out)
    }

    /// x W[lo..hi]^T: every token of x (T, cols) against rows [lo, hi), giving (T, hi - lo),
    /// the rows shared among the threads (`threads::in_parts`; the same numbers as one thread's).
    pub fn multiply_rows(&self, x: ArrayView2<f32>, lo: usize, hi: usize) -> Array2<f32> {
        self.multiply_rows_plus(x, lo, hi, None)
    }

    /// `multiply_rows` plus `bias` (hi - lo) on every token's row: each run of features adds
    /// its part of the bias while its columns are in cache, on the thread that computed them
    /// (the same numbers as adding it afterwards: the product, then + b).
    pub fn multiply_rows_plus(
        &self,
        x: ArrayView2<f32>,
        lo: usize,
        hi: usize,
        bias: Option<ArrayView1<f32>>,
    ) -> Array2<f32> {
        threads::in_parts(
            x.nrows(),
            lo,
            hi,
            self.cols(),
            KERNEL_ROWS,
            |a, b, mut out| {
                self.multiply_rows_into(x, a, b, out.view_mut()); // (T, b - a)
                if let Some(bias) = &bias {
                    out += &bias.slice(s![a - lo..b - lo]); // (T, b - a) + (b - a)
                }
            },
        )
    }

    /// `multiply_rows` on this thread alone, into `y` (T, hi - lo).
    fn multiply_rows_into(
        &self,
        x: ArrayView2<f32>,
        lo: usize,
        hi: usize,
        mut y: ArrayViewMut2<f32>,
    ) {
        let t = x.nrows();
        match self {
            Matrix::Dense(m) => multiply_panel(x, m.slice(s![lo..hi, ..]), y),
            // A token or two (generation, a typed letter): each row's blocks are multiplied as
            // they are read, with no buffer to fill and no GEMM to pack.
            Matrix::Quantized(q) if t <= FUSED_MAX_TOKENS => {
                let xs = x.as_standard_layout(); // (T, cols)
                let xs: Vec<&[f32]> = xs
                    .rows()
                    .into_iter()
                    .map(|r| r.to_slice().expect("standard layout rows are contiguous"))
                    .collect();
                assert!(
                    xs.iter().all(|x| x.len() == q.cols()),
                    "x has as many columns as the matrix"
                );
                // Q4_1's m · Σx term: each token's block sums, once for all rows.
                let sums: Vec<Vec<f32>> = xs.iter().map(|x| block_sums(x)).collect();
                for o in lo..hi {
                    let row = &q.bytes()[o * q.row_bytes()..(o + 1) * q.row_bytes()];
                    for (tok, xrow) in xs.iter().enumerate() {
                        y[[tok, o - lo]] = match q.kind() {
                            GgmlType::Q4_1 => dot_q4_1_summed(row, xrow, &sums[tok]),
                            kind => {
                                dot_row(kind, row, xrow).expect("whole rows of a checked tensor")
                            }
                        };
                    }
                }
            }
            Matrix::Quantized(_) => {
                let mut panel = Array2::<f32>::zeros((PANEL_ROWS.min(hi - lo), self.cols())); // (PANEL_ROWS, cols)
                let mut start = lo;
                while start < hi {
                    let end = (start + PANEL_ROWS).min(hi);
                    let mut rows = panel.slice_mut(s![..end - start, ..]); // (end - start, cols)
                    self.rows_into(
                        start,
                        end,
                        rows.as_slice_mut()
                            .expect("leading rows of a contiguous array"),
                    );
                    let out = y.slice_mut(s![.., start - lo..end - lo]); // (T, end - start)
                    multiply_panel(x, panel.slice(s![..end - start, ..]), out);
                    start = end;
                }
            }
        }
    }
}

/// out = x w^T for x (T, in) and a panel of weight rows w (rows, in): out (T, rows).
fn multiply_panel(x: ArrayView2<f32>, w: ArrayView2<f32>, mut out: ArrayViewMut2<f32>) {
    // In WebAssembly, a kernel that streams the weight rows beats a GEMM that first copies
    // (packs) them on every call.
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    if let (Some(xs), Some(ws)) = (x.as_slice(), w.as_slice()) {
        return streaming::multiply(xs, ws, x.ncols(), out);
    }
    ndarray::linalg::general_mat_mul(1.0, &x, &w.t(), 0.0, &mut out); // (T, in) · (in, rows)
}

/// The WebAssembly SIMD kernel: a block of weight rows at a time, each read once from memory and
/// kept in cache while every token's dot products with them are taken, four tokens and four
/// SIMD lanes wide.
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod streaming {
    use core::arch::wasm32::*;
    use ndarray::ArrayViewMut2;

    /// Tokens taken at a time, so that their rows stay in the CPU's cache while every weight
    /// row passes by.
    const TOKENS_PER_CHUNK: usize = 64;
    /// Four tokens by two weight rows, eight accumulators: larger blocks run out of the sixteen
    /// SIMD registers browsers compile WebAssembly to on x86-64.
    const TOKENS_PER_BLOCK: usize = 4;
    const ROWS_PER_BLOCK: usize = 2;

    /// ys (T, rows) = xs (T, inp) · ws (rows, inp)^T, xs and ws row-major; ys any view (a
    /// thread's run writes its own columns of the product).
    pub fn multiply(xs: &[f32], ws: &[f32], inp: usize, mut ys: ArrayViewMut2<f32>) {
        const TB: usize = TOKENS_PER_BLOCK;
        const RB: usize = ROWS_PER_BLOCK;
        let t = xs.len() / inp;
        let out = ws.len() / inp;
        assert_eq!(
            ys.dim(),
            (t, out),
            "the output has a row per token and a column per weight row"
        );
        for start in (0..t).step_by(TOKENS_PER_CHUNK) {
            let end = (start + TOKENS_PER_CHUNK).min(t);
            let mut o = 0;
            while o + RB <= out {
                let rows: [&[f32]; RB] =
                    core::array::from_fn(|k| &ws[(o + k) * inp..(o + k + 1) * inp]);
                let mut tok = start;
                while tok + TB <= end {
                    let xrows: [&[f32]; TB] =
                        core::array::from_fn(|k| &xs[(tok + k) * inp..(tok + k + 1) * inp]);
                    let dots = dot_block::<TB, RB>(xrows, rows);
                    for (k, d) in dots.iter().enumerate() {
                        for (j, &v) in d.iter().enumerate() {
                            ys[[tok + k, o + j]] = v;
                        }
                    }
                    tok += TB;
                }
                for tok in tok..end {
                    let dots = dot_block::<1, RB>([&xs[tok * inp..(tok + 1) * inp]], rows);
                    for (j, &v) in dots[0].iter().enumerate() {
                        ys[[tok, o + j]] = v;
                    }
                }
                o += RB;
            }
            for o in o..out {
                let row = &ws[o * inp..(o + 1) * inp];
                for tok in start..end {
                    ys[[tok, o]] =
                        dot_block::<1, 1>([&xs[tok * inp..(tok + 1) * inp]], [row])[0][0];
                }
            }
        }
    }

    fn hsum(a: v128) -> f32 {
        f32x4_extract_lane::<0>(a)
            + f32x4_extract_lane::<1>(a)
            + f32x4_extract_lane::<2>(a)
            + f32x4_extract_lane::<3>(a)
    }

    /// The TB x RB dot products of token rows `x` with weight rows `w`: each load of a
    /// vector of either is shared by the multiply-adds of the other's rows. Every product
    /// is summed in the same order whatever the block, so a token's numbers do not depend on
    /// which block it fell in.
    #[inline(always)]
    fn dot_block<const TB: usize, const RB: usize>(
        x: [&[f32]; TB],
        w: [&[f32]; RB],
    ) -> [[f32; RB]; TB] {
        let n = x[0].len();
        let whole = n / 4 * 4;
        let mut acc = [[f32x4_splat(0.0); RB]; TB];
        let mut i = 0;
        while i < whole {
            // SAFETY: i + 4 <= whole <= n = every row's length; wasm loads need no alignment.
            unsafe {
                let wv: [v128; RB] =
                    core::array::from_fn(|k| v128_load(w[k].as_ptr().add(i) as *const v128));
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
