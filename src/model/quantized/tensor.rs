//! A tensor kept as its checkpoint stores it: row-major shape, ggml type and raw bytes (whole
//! blocks for the quantized types), read a row at a time, dequantized or multiplied block by
//! block; its bytes borrowed, owned, or a range of a file held once in memory (`SharedBytes`).

use std::sync::Arc;

use super::{corrupt, dequantize_row, dot_row, GgmlType, MAX_DIMS};
use crate::error::{Result, VizError};

/// One tensor as stored: its row-major shape, its ggml type and its raw bytes (blocks for the
/// quantized types). `B` is `&[u8]` when borrowed from the file, `Vec<u8>` when owned.
/// A matrix's rows are `shape[..n-1]` flattened; each row is `cols()` values, a whole number
/// of blocks, stored one after the other.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufTensor<B> {
    name: String,
    shape: Vec<usize>,
    kind: GgmlType,
    bytes: B,
}

impl<B: AsRef<[u8]>> GgufTensor<B> {
    /// Checks that `bytes` holds exactly `shape` values of `kind` in whole-block rows.
    pub fn new(
        name: impl Into<String>,
        shape: Vec<usize>,
        kind: GgmlType,
        bytes: B,
    ) -> Result<Self> {
        let name = name.into();
        if !fits(&shape, kind, bytes.as_ref().len()) {
            return Err(corrupt(format!(
                "tensor `{name}`: {} bytes do not hold shape {shape:?} of {} in whole-block rows",
                bytes.as_ref().len(),
                kind.name()
            )));
        }
        Ok(GgufTensor {
            name,
            shape,
            kind,
            bytes,
        })
    }

    /// `new` for a reader that has already checked what `new` checks (as `Gguf::parse` does
    /// for every tensor of its table), so that handing out a tensor cannot fail.
    pub(crate) fn from_checked_parts(
        name: String,
        shape: Vec<usize>,
        kind: GgmlType,
        bytes: B,
    ) -> Self {
        debug_assert!(fits(&shape, kind, bytes.as_ref().len()));
        GgufTensor {
            name,
            shape,
            kind,
            bytes,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Row-major shape (GGUF's `ne` reversed).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn kind(&self) -> GgmlType {
        self.kind
    }

    /// The raw stored bytes.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// Values per row: the last row-major dimension, GGUF's `ne[0]`.
    pub fn cols(&self) -> usize {
        self.shape.last().copied().unwrap_or(0)
    }

    /// Number of rows: every dimension but the last, multiplied (1 for a vector).
    pub fn rows(&self) -> usize {
        self.shape[..self.shape.len().saturating_sub(1)]
            .iter()
            .product()
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        self.cols() / self.kind.block_len() * self.kind.block_bytes()
    }

    /// The raw bytes of row `i`.
    pub fn row(&self, i: usize) -> Result<&[u8]> {
        if i >= self.rows() {
            return Err(VizError::BadConfig(format!(
                "row {i} of tensor `{}` is out of range ({} rows)",
                self.name,
                self.rows()
            )));
        }
        let n = self.row_bytes();
        Ok(&self.bytes()[i * n..(i + 1) * n])
    }

    /// Row `i` dequantized into `out` (`cols()` values).
    pub fn dequantize_row_into(&self, i: usize, out: &mut [f32]) -> Result<()> {
        if out.len() != self.cols() {
            return Err(VizError::ShapeMismatch {
                name: self.name.clone(),
                expected: vec![self.cols()],
                found: vec![out.len()],
            });
        }
        dequantize_row(self.kind, self.row(i)?, out)
    }

    /// Every value as f32, row-major. For tests and small tensors: a Q4_1 matrix grows 6.4×.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        let n_values = self.rows() * self.cols();
        let mut out = vec![0.0; n_values];
        dequantize_row(self.kind, self.bytes(), &mut out)?;
        Ok(out)
    }

    /// Row `i` times the vector `x` (`cols()` values), block by block, without dequantizing
    /// the row.
    pub fn dot_row(&self, i: usize, x: &[f32]) -> Result<f32> {
        if x.len() != self.cols() {
            return Err(VizError::ShapeMismatch {
                name: self.name.clone(),
                expected: vec![self.cols()],
                found: vec![x.len()],
            });
        }
        dot_row(self.kind, self.row(i)?, x)
    }

    /// The same tensor owning a copy of its bytes.
    pub fn to_owned(&self) -> GgufTensor<Vec<u8>> {
        GgufTensor {
            name: self.name.clone(),
            shape: self.shape.clone(),
            kind: self.kind,
            bytes: self.bytes().to_vec(),
        }
    }

    /// The same tensor holding its bytes as `SharedBytes` (no copy when they are already).
    pub fn into_shared(self) -> GgufTensor<SharedBytes>
    where
        B: Into<SharedBytes>,
    {
        GgufTensor {
            name: self.name,
            shape: self.shape,
            kind: self.kind,
            bytes: self.bytes.into(),
        }
    }
}

impl GgufTensor<&[u8]> {
    /// The same tensor reading its bytes from `file`, the buffer this tensor was parsed from,
    /// instead of copying them: a model keeps the file and its tensors point into it.
    pub fn within(&self, file: &Arc<Vec<u8>>) -> Result<GgufTensor<SharedBytes>> {
        let start = (self.bytes.as_ptr() as usize).wrapping_sub(file.as_ptr() as usize);
        let end = start
            .checked_add(self.bytes.len())
            .filter(|&end| end <= file.len());
        let Some(end) = end else {
            return Err(corrupt(format!(
                "tensor {} is not inside the file it was read from",
                self.name
            )));
        };
        let bytes = SharedBytes {
            file: file.clone(),
            start,
            end,
        };
        Ok(GgufTensor {
            name: self.name.clone(),
            shape: self.shape.clone(),
            kind: self.kind,
            bytes,
        })
    }
}

/// A range of a file's bytes held in memory once and shared by every tensor that lives in it
/// (SmolLM2: 98 MB kept once rather than the file plus a copy of each tensor).
#[derive(Debug, Clone, PartialEq)]
pub struct SharedBytes {
    file: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.file[self.start..self.end]
    }
}

impl From<Vec<u8>> for SharedBytes {
    fn from(bytes: Vec<u8>) -> Self {
        let end = bytes.len();
        SharedBytes {
            file: Arc::new(bytes),
            start: 0,
            end,
        }
    }
}

/// Whether `n_bytes` hold exactly `shape` values of `kind` in whole-block rows (1 to 4
/// dimensions, as ggml has).
fn fits(shape: &[usize], kind: GgmlType, n_bytes: usize) -> bool {
    let cols = shape.last().copied().unwrap_or(0);
    let n_values = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    !shape.is_empty()
        && shape.len() <= MAX_DIMS
        && cols % kind.block_len() == 0
        && n_values.and_then(|n| kind.bytes_for(n)) == Some(n_bytes)
}
