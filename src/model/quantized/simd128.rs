//! The block dot products written with WebAssembly's 128-bit SIMD, used when the build enables
//! `simd128` (`super::dot_q8_0`, `super::dot_q4_1_summed`): the compiler's own vectorisation of
//! the portable bodies converts the quants one lane at a time. Four f32 lanes, two
//! accumulators; summed across lanes once at the end.

use super::{f16_at, Q4_1_BLOCK_BYTES, Q8_0_BLOCK_BYTES, QK};
use core::arch::wasm32::*;

#[inline(always)]
fn load(xs: &[f32], at: usize) -> v128 {
    debug_assert!(at + 4 <= xs.len());
    // SAFETY: `at + 4 <= xs.len()` (blocks of 32 values, read 4 at a time).
    unsafe { v128_load(xs.as_ptr().add(at) as *const v128) }
}

#[inline(always)]
fn sum_lanes(v: v128) -> f32 {
    f32x4_extract_lane::<0>(v)
        + f32x4_extract_lane::<1>(v)
        + f32x4_extract_lane::<2>(v)
        + f32x4_extract_lane::<3>(v)
}

/// Sixteen quants, widened to two i16x8 (signed or not), times x[at..at + 16].
#[inline(always)]
fn dot16(q16_low: v128, q16_high: v128, xs: &[f32], at: usize, signed: bool) -> v128 {
    let (a, b, c, d) = if signed {
        (
            i32x4_extend_low_i16x8(q16_low),
            i32x4_extend_high_i16x8(q16_low),
            i32x4_extend_low_i16x8(q16_high),
            i32x4_extend_high_i16x8(q16_high),
        )
    } else {
        (
            u32x4_extend_low_u16x8(q16_low),
            u32x4_extend_high_u16x8(q16_low),
            u32x4_extend_low_u16x8(q16_high),
            u32x4_extend_high_u16x8(q16_high),
        )
    };
    let f = f32x4_convert_i32x4; // four i32 lanes as f32
    let p = f32x4_add(
        f32x4_mul(f(a), load(xs, at)),
        f32x4_mul(f(b), load(xs, at + 4)),
    );
    let q = f32x4_add(
        f32x4_mul(f(c), load(xs, at + 8)),
        f32x4_mul(f(d), load(xs, at + 12)),
    );
    f32x4_add(p, q)
}

pub fn dot_q8_0(row: &[u8], x: &[f32]) -> f32 {
    let mut acc = f32x4_splat(0.0);
    for (block, xs) in row.chunks_exact(Q8_0_BLOCK_BYTES).zip(x.chunks_exact(QK)) {
        let d = f16_at(block, 0);
        // SAFETY: a block holds 2 + 32 bytes: two 16-byte loads from byte 2.
        let (q0, q1) = unsafe {
            (
                v128_load(block.as_ptr().add(2) as *const v128),
                v128_load(block.as_ptr().add(18) as *const v128),
            )
        };
        let first = dot16(
            i16x8_extend_low_i8x16(q0),
            i16x8_extend_high_i8x16(q0),
            xs,
            0,
            true,
        );
        let second = dot16(
            i16x8_extend_low_i8x16(q1),
            i16x8_extend_high_i8x16(q1),
            xs,
            16,
            true,
        );
        acc = f32x4_add(acc, f32x4_mul(f32x4_splat(d), f32x4_add(first, second)));
    }
    sum_lanes(acc)
}

pub fn dot_q4_1(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    let mut acc = f32x4_splat(0.0);
    let mut offset = 0.0f32;
    let mask = u8x16_splat(0x0F);
    for ((block, xs), &sum) in row
        .chunks_exact(Q4_1_BLOCK_BYTES)
        .zip(x.chunks_exact(QK))
        .zip(sums)
    {
        let (d, m) = (f16_at(block, 0), f16_at(block, 2));
        // SAFETY: a block holds 4 + 16 bytes: one 16-byte load from byte 4.
        let v = unsafe { v128_load(block.as_ptr().add(4) as *const v128) };
        // Element j is the low nibble of byte j, element j + 16 its high nibble.
        let (low, high) = (v128_and(v, mask), u8x16_shr(v, 4));
        let first = dot16(
            u16x8_extend_low_u8x16(low),
            u16x8_extend_high_u8x16(low),
            xs,
            0,
            false,
        );
        let second = dot16(
            u16x8_extend_low_u8x16(high),
            u16x8_extend_high_u8x16(high),
            xs,
            16,
            false,
        );
        acc = f32x4_add(acc, f32x4_mul(f32x4_splat(d), f32x4_add(first, second)));
        offset += m * sum;
    }
    sum_lanes(acc) + offset
}
