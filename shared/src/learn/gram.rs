//! Xᵀ S for one chunk of rows (S = diag(w)X, so Xᵀ S is the chunk's Hessian Σᵢ wᵢxᵢxᵢᵀ), with
//! the arithmetic of the `matrixmultiply` dgemm that nalgebra's `gemm` ran for it — on a CPU with
//! fused multiply-add, where every dgemm kernel (AVX-512, AVX2 + FMA) computes each entry the
//! same way: the rows in blocks of [`KC`]; within a block one fused multiply-add chain from +0 in
//! row order; the blocks' sums added to the entry in block order. The same bits, without
//! packing both operands into panels and without computing 8 × 8 tiles of which a small
//! p × p result (p = 10: four tiles, 100 of 256 entries wanted) uses part.
//!
//! nalgebra calls dgemm only when p and the chunk's rows both exceed 5 ([`USES_DGEMM_ABOVE`]);
//! smaller products keep nalgebra's own loop ([`crate::learn::logistic`] decides). Inlined into a
//! [`crate::util::simd::Kernel`] so the multiply-adds are vector FMA instructions. On a CPU
//! without FMA, `f64::mul_add` is still one rounding, computed in software (slow): the results
//! are those of FMA CPUs, where dgemm's non-FMA kernel would have rounded every product.
//! `has_the_bits_of_nalgebras_dgemm` checks the bits against nalgebra's `gemm` for p = 6..20,
//! 31, 33, 40 and chunks that end a block part-way.

/// Rows per block of the sums: matrixmultiply's `D_KC` for f64.
const KC: usize = 256;
/// nalgebra's `gemm` hands a product to dgemm only when both dimensions exceed this.
pub(crate) const USES_DGEMM_ABOVE: usize = 5;
/// Columns of S per stored row: rows of S are padded to a multiple of this.
const W: usize = 8;

/// Row stride of a block of S: p rounded up to whole vectors (zeros after each row's p values).
fn padded(p: usize) -> usize {
    p.div_ceil(W) * W
}

/// The p × p product Xᵀ diag(w) X, column-major (entry (i, j) at `j·p + i`), of the row-major
/// k × p matrix `x` and the k weights `w`. S = diag(w)X is formed one block at a time
/// (sᵢⱼ = xᵢⱼ·wᵢ, as nalgebra's operand was) in a buffer padded to whole vectors and reused.
/// `f64_lanes` (f64 values per SIMD register of the compiled copy) only picks the tile shape
/// ([`tile_block`]); every shape computes each entry by the same chain, so the bits are the same.
#[inline(always)]
pub(crate) fn gram(x: &[f64], w: &[f64], p: usize, f64_lanes: usize) -> Vec<f64> {
    let mut out = vec![0.0; p * p];
    let stride = padded(p);
    let mut s = vec![0.0; KC.min(w.len()) * stride];
    for (b, (xb, wb)) in x.chunks(KC * p).zip(w.chunks(KC)).enumerate() {
        for ((si, xi), wi) in s.chunks_exact_mut(stride).zip(xb.chunks_exact(p)).zip(wb) {
            for (sv, v) in si.iter_mut().zip(xi) {
                *sv = v * wi;
            }
        }
        let sb = &s[..wb.len() * stride];
        tile_block(xb, sb, p, &mut out, b == 0, f64_lanes);
    }
    out
}

/// One block's sums into `out`, in tiles of NI result rows × 8 result columns whose
/// accumulators stay in registers. With AVX-512 (32 registers of 8 lanes), all result rows up
/// to p = 12 at once, else 8 (the result of p = 31 as 4 × 4 tiles, as dgemm's kernels cut it).
/// With AVX2 (16 registers of 4 lanes) 6 rows where that covers the result in fewer passes
/// (p = 6, 11, 12), else 5 (10 or 12 accumulator registers): the AVX-512 shapes spilled
/// accumulators to the stack at every multiply-add there (per 4,096 rows, p = 10: 113 → 88 µs;
/// p = 31: 732 → 497 µs; p = 100, 8 rows against 5: 9.1 → 5.6–7.3 ms). LLVM does not vectorise
/// every shape well: 4 rows ran 4× slower than 5 or 6, and a 4-column tile was left scalar.
#[inline(always)]
fn tile_block(x: &[f64], s: &[f64], p: usize, out: &mut [f64], first: bool, f64_lanes: usize) {
    if f64_lanes >= 8 {
        match p {
            6 => tiles::<6>(x, s, p, out, first),
            7 => tiles::<7>(x, s, p, out, first),
            9 => tiles::<9>(x, s, p, out, first),
            10 => tiles::<10>(x, s, p, out, first),
            11 => tiles::<11>(x, s, p, out, first),
            12 => tiles::<12>(x, s, p, out, first),
            _ => tiles::<8>(x, s, p, out, first),
        }
    } else {
        match p {
            6 | 11 | 12 => tiles::<6>(x, s, p, out, first),
            _ => tiles::<5>(x, s, p, out, first),
        }
    }
}

/// One block's sums into `out`, NI result rows and 8 result columns at a time.
#[inline(always)]
fn tiles<const NI: usize>(x: &[f64], s: &[f64], p: usize, out: &mut [f64], first: bool) {
    for i0 in (0..p).step_by(NI) {
        for j0 in (0..p).step_by(W) {
            let block = block_sums::<NI>(x, s, p, i0, j0);
            store(out, &block, p, i0, j0, first);
        }
    }
}

/// The block's fused multiply-add chains for result rows i0..i0 + NI (clamped to p) and result
/// columns j0..j0 + 8 (of the padded S).
#[inline(always)]
fn block_sums<const NI: usize>(
    x: &[f64],
    s: &[f64],
    p: usize,
    i0: usize,
    j0: usize,
) -> [[f64; W]; NI] {
    // Rows of the result past p repeat row p − 1 (in bounds; `store` drops them).
    let idx: [usize; NI] = std::array::from_fn(|r| (i0 + r).min(p - 1));
    let mut acc = [[0.0; W]; NI];
    for (xr, sr) in x.chunks_exact(p).zip(s.chunks_exact(padded(p))) {
        let sv: &[f64; W] = sr[j0..j0 + W].try_into().expect("a whole vector");
        for (a, &i) in acc.iter_mut().zip(&idx) {
            let xi = xr[i];
            for k in 0..W {
                a[k] = xi.mul_add(sv[k], a[k]);
            }
        }
    }
    acc
}

/// Adds a block's sums into `out` (or sets them, for the first block): entry (i, j) is
/// `out[j·p + i]`.
#[inline(always)]
fn store<const NI: usize>(
    out: &mut [f64],
    block: &[[f64; W]; NI],
    p: usize,
    i0: usize,
    j0: usize,
    first: bool,
) {
    for (r, row) in block.iter().enumerate().take(p.saturating_sub(i0)) {
        for (k, &v) in row.iter().enumerate().take(p.saturating_sub(j0)) {
            let o = &mut out[(j0 + k) * p + i0 + r];
            *o = if first { v } else { *o + v };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::simd::{Kernel, vectorised};
    use nalgebra::{DMatrix, DMatrixView};

    /// Operands and the register width whose tile shapes to use.
    struct G<'a>(&'a [f64], &'a [f64], usize, usize);
    impl Kernel for G<'_> {
        type Output = Vec<f64>;
        #[inline(always)]
        fn run(self) -> Vec<f64> {
            gram(self.0, self.1, self.2, self.3)
        }
    }

    /// nalgebra's gemm of the same operands, as chunk_hessian called it before.
    fn nalgebra_gram(x: &[f64], s: &[f64], p: usize) -> Vec<f64> {
        let k = x.len() / p;
        let xt = DMatrixView::from_slice(x, p, k);
        let sx = DMatrixView::from_slice_with_strides(s, k, p, p, 1);
        let mut h = DMatrix::<f64>::zeros(p, p);
        h.gemm(1.0, &xt, &sx, 0.0);
        h.as_slice().to_vec()
    }

    /// Whether nalgebra's dgemm runs an FMA kernel here (the x86 CPUs this is pinned on).
    fn dgemm_uses_fma() -> bool {
        #[cfg(target_arch = "x86_64")]
        return std::arch::is_x86_feature_detected!("fma");
        #[cfg(not(target_arch = "x86_64"))]
        return false;
    }

    #[test]
    fn has_the_bits_of_nalgebras_dgemm() {
        let fma = dgemm_uses_fma();
        for p in (6..=20).chain([31, 33, 40]) {
            for k in [6, 7, 100, KC - 1, KC, KC + 1, 3 * KC + 17, 4096] {
                let x: Vec<f64> = (0..k * p)
                    .map(|i| ((i * 7919 + 13) % 1009) as f64 / 1009.0 - 0.47)
                    .collect();
                let w: Vec<f64> = (0..k)
                    .map(|i| (i * 31 % 97) as f64 / 400.0 + 0.01)
                    .collect();
                let s: Vec<f64> = x.iter().enumerate().map(|(i, v)| v * w[i / p]).collect();
                let want = nalgebra_gram(&x, &s, p);
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                // Both tile shapes, whatever this CPU's registers.
                for lanes in [4, 8] {
                    let got = vectorised(G(&x, &w, p, lanes));
                    if fma {
                        assert_eq!(bits(&got), bits(&want), "p = {p}, k = {k}, {lanes} lanes");
                    } else {
                        for (g, w) in got.iter().zip(&want) {
                            assert!(
                                (g - w).abs() <= 1e-12 * w.abs().max(1.0),
                                "p = {p}, k = {k}"
                            );
                        }
                    }
                }
            }
        }
    }
}
