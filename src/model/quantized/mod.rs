//! ggml's quantized block formats and their arithmetic, apart from any file format (as
//! candle's `quantized/`): what a block of Q8_0 or Q4_1 holds, dequantizing rows of blocks, and
//! multiplying a row by a vector block by block (`dot_q8_0`, `dot_q4_1`) without dequantizing
//! it, which is what lets a 98 MB Q4_1 model run without its 538 MB f32 expansion.
//!
//! - this file: the block formats (`GgmlType`, `QK`, the block sizes), the portable dequantize
//!   and dot products, and the dispatch that picks a kernel for the CPU;
//! - `avx`: the portable dot products compiled for AVX2 and FMA, chosen at run time (x86-64);
//! - `simd128`: the dot products written with WebAssembly SIMD (when the build enables it);
//! - `tensor`: a tensor kept as its blocks (`GgufTensor`), its rows, and the shared bytes it
//!   can point into (`SharedBytes`).
//!
//! The GGUF reader (`formats::gguf`) hands out these tensors; this module knows nothing of it.

#[cfg(target_arch = "x86_64")]
mod avx;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;
mod tensor;

pub use tensor::{GgufTensor, SharedBytes};

use half::f16;

use crate::error::{Result, VizError};

/// ggml tensors have at most four dimensions.
pub const MAX_DIMS: usize = 4;

/// Values per block of the quantized types below (ggml's QK8_0 and QK4_1).
pub const QK: usize = 32;
/// Q8_0 block: f16 scale d, then 32 signed bytes q; x = d·q.
pub const Q8_0_BLOCK_BYTES: usize = 2 + QK;
/// Q4_1 block: f16 scale d, f16 minimum m, then 16 bytes holding 32 four-bit q; x = d·q + m.
pub const Q4_1_BLOCK_BYTES: usize = 2 + 2 + QK / 2;

/// A block size that does not fit: the same error a GGUF file's bad tensor gives.
fn corrupt(message: impl Into<String>) -> VizError {
    VizError::CorruptGguf(message.into())
}

// ---------------------------------------------------------------------------------------------
// Block formats
// ---------------------------------------------------------------------------------------------

/// The ggml tensor types this engine stores and computes with (`code` is ggml's `ggml_type`).
/// A reader refuses others with the tensor's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum GgmlType {
    F32,
    F16,
    Q4_1,
    Q8_0,
}

impl GgmlType {
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(GgmlType::F32),
            1 => Some(GgmlType::F16),
            3 => Some(GgmlType::Q4_1),
            8 => Some(GgmlType::Q8_0),
            _ => None,
        }
    }

    pub fn code(self) -> u32 {
        match self {
            GgmlType::F32 => 0,
            GgmlType::F16 => 1,
            GgmlType::Q4_1 => 3,
            GgmlType::Q8_0 => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q8_0 => "Q8_0",
        }
    }

    /// Values per block (1 for the plain float types).
    pub fn block_len(self) -> usize {
        match self {
            GgmlType::F32 | GgmlType::F16 => 1,
            GgmlType::Q4_1 | GgmlType::Q8_0 => QK,
        }
    }

    /// Bytes per block.
    pub fn block_bytes(self) -> usize {
        match self {
            GgmlType::F32 => 4,
            GgmlType::F16 => 2,
            GgmlType::Q4_1 => Q4_1_BLOCK_BYTES,
            GgmlType::Q8_0 => Q8_0_BLOCK_BYTES,
        }
    }

    /// Bytes that `n_values` values take, or None when they are not a whole number of blocks
    /// or the size overflows.
    pub fn bytes_for(self, n_values: usize) -> Option<usize> {
        if n_values % self.block_len() != 0 {
            return None;
        }
        (n_values / self.block_len()).checked_mul(self.block_bytes())
    }
}

/// ggml's name for any type code, for error messages ("Q4_K", "type 99").
pub fn ggml_type_name(code: u32) -> String {
    const NAMES: [&str; 31] = [
        "F32", "F16", "Q4_0", "Q4_1", "Q4_2", "Q4_3", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K",
        "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
        "IQ3_S", "IQ2_S", "IQ4_XS", "I8", "I16", "I32", "I64", "F64", "IQ1_M", "BF16",
    ];
    match NAMES.get(code as usize) {
        Some(name) => format!("{name} (ggml type {code})"),
        None => format!("ggml type {code}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Dequantization and block-wise dot products
// ---------------------------------------------------------------------------------------------

/// The f16 at `at`, as f32. Written out rather than through `half` so that it inlines into
/// the block loops (two per block of 32 values); it gives `half`'s values (tested).
#[inline(always)]
fn f16_at(bytes: &[u8], at: usize) -> f32 {
    f16_bits_to_f32(u16::from_le_bytes([bytes[at], bytes[at + 1]]))
}

/// IEEE half to single precision, exactly (every f16 is an f32).
#[inline(always)]
pub fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exponent = u32::from((h >> 10) & 0x1F);
    let mantissa = u32::from(h & 0x03FF);
    match exponent {
        // Zero and subnormals: mantissa · 2^-24.
        0 => f32::from_bits((mantissa as f32 * (1.0 / 16_777_216.0)).to_bits() | sign),
        // Infinities and NaNs.
        0x1F => f32::from_bits(sign | 0x7F80_0000 | (mantissa << 13)),
        // Normal numbers: rebias the exponent from 15 to 127.
        _ => f32::from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13)),
    }
}

fn check_row(kind: GgmlType, bytes: &[u8], n_values: usize) -> Result<()> {
    if kind.bytes_for(n_values) != Some(bytes.len()) {
        return Err(corrupt(format!(
            "{} bytes do not hold {n_values} {} values in whole blocks",
            bytes.len(),
            kind.name()
        )));
    }
    Ok(())
}

/// Dequantizes values stored as `kind` (one row or several whole rows) into `out`, as ggml's
/// reference `dequantize_row_*` does: Q8_0 x = d·q; Q4_1 x = d·q + m, where byte j of a
/// block's 16 nibble bytes holds element j in its low nibble and element j + 16 in its high
/// nibble (ggml-quants.c, `dequantize_row_q4_1`).
pub fn dequantize_row(kind: GgmlType, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    check_row(kind, bytes, out.len())?;
    match kind {
        GgmlType::F32 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
            }
        }
        GgmlType::Q8_0 => {
            for (block, o) in bytes
                .chunks_exact(Q8_0_BLOCK_BYTES)
                .zip(out.chunks_exact_mut(QK))
            {
                let d = f16_at(block, 0);
                for (o, &q) in o.iter_mut().zip(&block[2..]) {
                    *o = d * f32::from(q as i8);
                }
            }
        }
        GgmlType::Q4_1 => {
            for (block, o) in bytes
                .chunks_exact(Q4_1_BLOCK_BYTES)
                .zip(out.chunks_exact_mut(QK))
            {
                let (d, m) = (f16_at(block, 0), f16_at(block, 2));
                let (low, high) = o.split_at_mut(QK / 2);
                for ((lo, hi), &b) in low.iter_mut().zip(high).zip(&block[4..]) {
                    *lo = d * f32::from(b & 0x0F) + m;
                    *hi = d * f32::from(b >> 4) + m;
                }
            }
        }
    }
    Ok(())
}

/// The first block of `bytes` (whole blocks of `kind`) holding a float that is not finite: a
/// plain value (F32, F16), or a block's scale or minimum (Q8_0's d, Q4_1's d and m). A NaN or
/// infinite scale makes every value of its block NaN or infinite, which no pass survives.
pub fn first_non_finite_block(kind: GgmlType, bytes: &[u8]) -> Option<usize> {
    let block = kind.block_bytes();
    bytes.chunks_exact(block).position(|b| match kind {
        GgmlType::F32 => !f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite(),
        GgmlType::F16 | GgmlType::Q8_0 => !f16_at(b, 0).is_finite(),
        GgmlType::Q4_1 => !(f16_at(b, 0).is_finite() && f16_at(b, 2).is_finite()),
    })
}

/// A Q8_0 row times `x`, block by block: Σ_blocks d · Σ_j q_j x_j.
/// `row` must be `x.len() / 32` whole blocks (checked by `dot_row` and `GgufTensor::dot_row`;
/// here only in debug builds, since this is the inner loop of the dense layers; extra blocks
/// or values on either side are ignored).
pub fn dot_q8_0(row: &[u8], x: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { avx::dot_q8_0(row, x) };
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd128::dot_q8_0(row, x);
    #[allow(unreachable_code)]
    dot_q8_0_body(row, x)
}

#[inline(always)]
fn dot_q8_0_body(row: &[u8], x: &[f32]) -> f32 {
    debug_assert_eq!(row.len(), x.len() / QK * Q8_0_BLOCK_BYTES);
    // Eight lanes of d · q · x, summed across lanes once at the end: fixed-size arrays and
    // lane-wise sums, which the compiler turns into SIMD code.
    let mut acc = [0.0f32; 8];
    for (block, xs) in row.chunks_exact(Q8_0_BLOCK_BYTES).zip(x.chunks_exact(QK)) {
        let d = f16_at(block, 0);
        let qs: &[u8; QK] = block[2..].try_into().expect("a Q8_0 block holds 32 quants");
        let xs: &[f32; QK] = xs.try_into().expect("chunks of 32");
        let mut qx = [0.0f32; 8];
        for j in 0..QK {
            qx[j % 8] += f32::from(qs[j] as i8) * xs[j];
        }
        for lane in 0..8 {
            acc[lane] += d * qx[lane];
        }
    }
    acc.iter().sum()
}

/// A Q4_1 row times `x`, block by block: Σ_blocks d · Σ_j q_j x_j + m · Σ_j x_j.
/// Same contract as `dot_q8_0` (`row` is `x.len() / 32` whole blocks of 20 bytes).
pub fn dot_q4_1(row: &[u8], x: &[f32]) -> f32 {
    dot_q4_1_summed(row, x, &block_sums(x))
}

/// The sum of each block of 32 values of `x`: Q4_1's m · Σ_j x_j term needs it for every
/// block of every row, so a product of many rows with one `x` computes it once.
pub fn block_sums(x: &[f32]) -> Vec<f32> {
    x.chunks_exact(QK).map(|xs| xs.iter().sum()).collect()
}

/// `dot_q4_1` with `x`'s `block_sums` given.
pub fn dot_q4_1_summed(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return unsafe { avx::dot_q4_1(row, x, sums) };
    }
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    return simd128::dot_q4_1(row, x, sums);
    #[allow(unreachable_code)]
    dot_q4_1_body(row, x, sums)
}

#[inline(always)]
fn dot_q4_1_body(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    debug_assert_eq!(row.len(), x.len() / QK * Q4_1_BLOCK_BYTES);
    debug_assert_eq!(sums.len(), x.len() / QK);
    let mut acc = [0.0f32; 8]; // eight lanes of d · Σ q x, summed once at the end
    let mut offset = 0.0f32; // Σ_blocks m · Σ x
    for ((block, xs), &sum) in row
        .chunks_exact(Q4_1_BLOCK_BYTES)
        .zip(x.chunks_exact(QK))
        .zip(sums)
    {
        let (d, m) = (f16_at(block, 0), f16_at(block, 2));
        let nibbles: &[u8; QK / 2] = block[4..]
            .try_into()
            .expect("a Q4_1 block holds 16 bytes of nibbles");
        let xs: &[f32; QK] = xs.try_into().expect("chunks of 32");
        // Element j is the low nibble of byte j, element j + 16 its high nibble.
        let mut qx = [0.0f32; 8];
        for j in 0..QK / 2 {
            qx[j % 8] +=
                f32::from(nibbles[j] & 0x0F) * xs[j] + f32::from(nibbles[j] >> 4) * xs[j + QK / 2];
        }
        for lane in 0..8 {
            acc[lane] += d * qx[lane];
        }
        offset += m * sum;
    }
    acc.iter().sum::<f32>() + offset
}

/// Stored values (one row of `kind`) times `x`, with the sizes checked.
pub fn dot_row(kind: GgmlType, row: &[u8], x: &[f32]) -> Result<f32> {
    check_row(kind, row, x.len())?;
    Ok(match kind {
        GgmlType::Q8_0 => dot_q8_0(row, x),
        GgmlType::Q4_1 => dot_q4_1(row, x),
        GgmlType::F32 => row
            .chunks_exact(4)
            .zip(x)
            .map(|(b, x)| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) * x)
            .sum(),
        GgmlType::F16 => row
            .chunks_exact(2)
            .zip(x)
            .map(|(b, x)| f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32() * x)
            .sum(),
    })
}
