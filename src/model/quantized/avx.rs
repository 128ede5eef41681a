//! The portable block dot products compiled for AVX2 and FMA, chosen at run time on x86-64
//! CPUs that have them (by `super::dot_q8_0` and `super::dot_q4_1_summed`): the build targets
//! baseline x86-64, whose 128-bit SSE2 the compiler otherwise sticks to. The same bodies, so
//! the same arithmetic in the same order; only the instructions differ.

/// `super::dot_q8_0` compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA, the features the function is compiled for.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn dot_q8_0(row: &[u8], x: &[f32]) -> f32 {
    super::dot_q8_0_body(row, x)
}

/// `super::dot_q4_1_summed` compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA, the features the function is compiled for.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn dot_q4_1(row: &[u8], x: &[f32], sums: &[f32]) -> f32 {
    super::dot_q4_1_body(row, x, sums)
}
