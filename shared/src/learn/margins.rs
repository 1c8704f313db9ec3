//! The margins mᵢ = yᵢ⟨θ, xᵢ⟩ of a block of rows, with the bits of `yᵢ · dot_by_lanes(xᵢ, θ)`
//! ([`crate::learn::logistic::dot_by_lanes`]): four accumulators, accumulator k taking the products of
//! features j ≡ k (mod 4) of the whole groups of four in increasing j, each product rounded
//! then added (no fused multiply-add); then `(a₀ + a₁) + (a₂ + a₃)`, plus the sum of the last
//! p mod 4 products in order, times yᵢ.
//!
//! On x86-64 with AVX2 (also under AVX-512) four rows go at once with explicit 256-bit
//! operations through `pulp`'s safe intrinsics: one register of accumulators per row, and the
//! four rows' `(a₀ + a₁) + (a₂ + a₃)` by one transpose-and-add instead of four horizontal
//! reductions. LLVM had compiled `dot_by_lanes` per row to 128-bit halves with shuffles. Each lane does
//! the scalar code's operations on the same operands in the same order, so the bits are the
//! same (`have_the_bits_of_dot4` checks p = 1..40 and every row count mod 4). Elsewhere, and
//! for the last rows of a block that do not fill a group of four, one row at a time by `dot_by_lanes`.

use crate::learn::logistic::dot_by_lanes;

/// mᵢ = yᵢ⟨θ, xᵢ⟩ for the rows of `x` (row-major, `theta.len()` columns) into `out`.
#[inline(always)]
pub(crate) fn margins_into(x: &[f64], y: &[f64], theta: &[f64], out: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(simd) = pulp::x86::V3::try_new() {
        let done = avx2::margins(simd, x, y, theta, out);
        let p = theta.len();
        return one_at_a_time(&x[done * p..], &y[done..], theta, &mut out[done..]);
    }
    one_at_a_time(x, y, theta, out);
}

/// [`margins_into`] one row at a time by `dot_by_lanes`.
#[inline(always)]
fn one_at_a_time(x: &[f64], y: &[f64], theta: &[f64], out: &mut [f64]) {
    for ((m, xi), yi) in out.iter_mut().zip(x.chunks_exact(theta.len())).zip(y) {
        *m = yi * dot_by_lanes(xi, theta);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use core::arch::x86_64::__m256d;
    use pulp::{cast, x86::V3};

    /// The margins of the rows in whole groups of four; returns how many rows that was.
    #[inline(always)]
    pub(super) fn margins(simd: V3, x: &[f64], y: &[f64], theta: &[f64], out: &mut [f64]) -> usize {
        let p = theta.len();
        if p == 0 {
            return 0;
        }
        let groups = out.len().min(y.len()).min(x.len() / p) / 4;
        for ((o, yg), xg) in out
            .chunks_exact_mut(4)
            .zip(y.chunks_exact(4))
            .zip(x.chunks_exact(4 * p))
            .take(groups)
        {
            let sums = pair_sums(simd, xg, theta);
            // The tails as `dot_by_lanes` sums them (the same expression, so an empty tail is the same
            // zero), one row at a time.
            let whole = p / 4 * 4;
            let tails: [f64; 4] = std::array::from_fn(|r| {
                let xr = &xg[r * p + whole..(r + 1) * p];
                xr.iter().zip(&theta[whole..]).map(|(a, b)| a * b).sum()
            });
            let dots = simd.avx._mm256_add_pd(sums, cast(tails));
            let yv: [f64; 4] = yg.try_into().expect("four labels");
            let m: [f64; 4] = cast(simd.avx._mm256_mul_pd(cast(yv), dots));
            o.copy_from_slice(&m);
        }
        groups * 4
    }

    /// `(a₀ + a₁) + (a₂ + a₃)` of four rows (lane r for row r of `xg`).
    #[inline(always)]
    fn pair_sums(simd: V3, xg: &[f64], theta: &[f64]) -> __m256d {
        let p = theta.len();
        let avx = simd.avx;
        let (tc, _) = theta.as_chunks::<4>();
        // Row by row, so the rows are read in memory order (four rows' chunks in turn had made
        // a 2e5 × 100 pass out of cache 1.7× slower); the rows' chains are independent.
        let mut acc = [avx._mm256_setzero_pd(); 4];
        for (a, xr) in acc.iter_mut().zip(xg.chunks_exact(p)) {
            let (xc, _) = xr.as_chunks::<4>();
            for (x, t) in xc.iter().zip(tc) {
                *a = avx._mm256_add_pd(*a, avx._mm256_mul_pd(cast(*x), cast(*t)));
            }
        }
        // Lanes (r, k) → per row: unpacklo/hi pair rows 0,1 and 2,3 by accumulator, so
        // lo + hi holds (a₀ + a₁) and (a₂ + a₃) of two rows per 128-bit half.
        let s01 = avx._mm256_add_pd(
            avx._mm256_unpacklo_pd(acc[0], acc[1]),
            avx._mm256_unpackhi_pd(acc[0], acc[1]),
        );
        let s23 = avx._mm256_add_pd(
            avx._mm256_unpacklo_pd(acc[2], acc[3]),
            avx._mm256_unpackhi_pd(acc[2], acc[3]),
        );
        // (a₀ + a₁) of rows 0..4 and (a₂ + a₃) of rows 0..4.
        let first = avx._mm256_permute2f128_pd::<0x20>(s01, s23);
        let second = avx._mm256_permute2f128_pd::<0x31>(s01, s23);
        avx._mm256_add_pd(first, second)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::simd::{Kernel, vectorised};

    struct Margins<'a>(&'a [f64], &'a [f64], &'a [f64]);
    impl Kernel for Margins<'_> {
        type Output = Vec<f64>;
        #[inline(always)]
        fn run(self) -> Vec<f64> {
            let mut out = vec![f64::NAN; self.1.len()];
            margins_into(self.0, self.1, self.2, &mut out);
            out
        }
    }

    #[test]
    fn have_the_bits_of_dot4() {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for p in 1..=40 {
            for n in [0, 1, 3, 4, 5, 7, 8, 13, 256] {
                let x: Vec<f64> = (0..n * p)
                    .map(|i| match i % 23 {
                        0 => -0.0,
                        1 => 0.0,
                        2 => 1e300,
                        _ => ((i * 7919 + 13) % 1009) as f64 / 1009.0 - 0.47,
                    })
                    .collect();
                let y: Vec<f64> = (0..n)
                    .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
                    .collect();
                let theta: Vec<f64> = (0..p)
                    .map(|j| {
                        if j % 5 == 4 {
                            -0.0
                        } else {
                            j as f64 / 7.0 - 1.3
                        }
                    })
                    .collect();
                let want: Vec<f64> = (0..n)
                    .map(|i| y[i] * dot_by_lanes(&x[i * p..(i + 1) * p], &theta))
                    .collect();
                let got = vectorised(Margins(&x, &y, &theta));
                assert_eq!(bits(&got), bits(&want), "p = {p}, n = {n}");
            }
        }
    }
}
