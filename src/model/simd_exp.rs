//! exp(y) for y ≤ 0, four lanes at a time in WebAssembly: softmax's exponentials (scores minus
//! their row's largest) and GELU's exp(-z²). In a profile of the page's MiniLM pass at 32 tokens
//! on two threads, softmax's scalar `expf`, one call a value, took an eighth of the page
//! thread's time outside the work the threads share. Natively `exp_in_place` is `f32::exp`,
//! value by value.
//!
//! exp(y) = 2^n · exp(r), n = round(y / ln 2), r = y - n ln 2 in [-ln 2 / 2, ln 2 / 2]; exp(r)
//! from its degree-6 Taylor polynomial (relative error below 1.3e-7, under one unit in the
//! last place of an f32 plus the rounding of the steps). Below -87 (where exp(y) is no longer a
//! normal f32) and at -inf (a masked score) the result is exactly 0.

/// exp of every value in place; each value is at most 0, or -inf.
pub fn exp_in_place(values: &mut [f32]) {
    #[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
    {
        let mut chunks = values.chunks_exact_mut(4);
        for chunk in &mut chunks {
            lanes::exp_four(chunk);
        }
        // The last one to three values through the same lanes, so that a value's exp does not
        // depend on where it falls in the slice.
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let mut four = [f32::NEG_INFINITY; 4];
            four[..tail.len()].copy_from_slice(tail);
            lanes::exp_four(&mut four);
            tail.copy_from_slice(&four[..tail.len()]);
        }
    }
    #[cfg(not(all(target_arch = "wasm32", target_feature = "simd128")))]
    values.iter_mut().for_each(|v| *v = v.exp());
}

#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub mod lanes {
    use core::arch::wasm32::*;

    /// exp(y) in each lane, for y ≤ 0 (see the module's comment).
    #[inline(always)]
    pub fn exp4(y: v128) -> v128 {
        let underflow = f32x4_lt(y, f32x4_splat(-87.0)); // -inf too
        let y = f32x4_max(y, f32x4_splat(-87.0));
        let n = f32x4_nearest(f32x4_mul(y, f32x4_splat(std::f32::consts::LOG2_E)));
        // r = y - n ln 2, with ln 2 in two parts so that r keeps its low bits.
        let r = f32x4_sub(
            f32x4_sub(y, f32x4_mul(n, f32x4_splat(0.693_145_75))),
            f32x4_mul(n, f32x4_splat(1.428_606_8e-6)),
        );
        let mut p = f32x4_splat(1.0 / 720.0);
        for c in [1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0] {
            p = f32x4_add(f32x4_mul(p, r), f32x4_splat(c));
        }
        // 2^n from its exponent bits.
        let two_n = i32x4_shl(i32x4_add(i32x4_trunc_sat_f32x4(n), i32x4_splat(127)), 23);
        v128_andnot(f32x4_mul(p, two_n), underflow)
    }

    /// exp of four values in place.
    pub fn exp_four(four: &mut [f32]) {
        assert_eq!(four.len(), 4, "four lanes");
        // SAFETY: four values, checked above; wasm loads and stores need no alignment.
        unsafe {
            v128_store(
                four.as_mut_ptr() as *mut v128,
                exp4(v128_load(four.as_ptr() as *const v128)),
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_of_zero_negatives_and_masked_scores() {
        let mut v = vec![0.0, -1.0, -0.5, -10.0, -80.0, f32::NEG_INFINITY, -3.25];
        let want: Vec<f32> = v.iter().map(|x: &f32| x.exp()).collect();
        exp_in_place(&mut v);
        for (got, want) in v.iter().zip(&want) {
            assert!((got - want).abs() <= 2e-7 * want, "{got} against {want}");
        }
        assert_eq!(v[5], 0.0, "a masked score's weight is exactly zero");
    }
}
