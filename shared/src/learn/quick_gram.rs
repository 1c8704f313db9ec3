//! Σᵢ wᵢxᵢxᵢᵀ over one chunk of rows for the Hessians of large data sets, which only choose the
//! solver's search directions ([`crate::learn::curvature`]): any fixed order of the additions
//! will do, so this kernel is not bound to the dgemm bits of [`crate::learn::gram`] (the exact
//! Hessian of every smaller data set keeps those). It computes the lower triangle only — 231 of
//! 441 entries at d = 21 — from a block of rows transposed into columns, four entries of a row
//! of the result at a time from one load of the left column, with no allocation per block.
//!
//! The order is fixed by the chunk alone (blocks of [`BLOCK`] rows in row order, four lanes per
//! sum added in a fixed tree), so the result does not depend on the thread count.

/// Rows per block: the block's two transposed copies (x and w∘x, 2 · d · 128 values) stay in the
/// core's first- or second-level cache for the d(d + 1)/2 sums that read them.
const BLOCK: usize = 128;
/// Lanes per partial sum.
const LANES: usize = 4;
/// Result entries computed together from one load of the left column.
const GROUP: usize = 4;

/// Xᵀ diag(w) X of the row-major k × p chunk `x` with weights `w`, row-major p × p (both
/// triangles, mirrored from the lower). `fused`: multiply-adds as one instruction (only where the
/// CPU has them: without, `mul_add` is a slow software routine).
#[inline(always)]
pub(crate) fn lower_gram(x: &[f64], w: &[f64], p: usize, fused: bool) -> Vec<f64> {
    let mut h = vec![0.0; p * p];
    if p == 0 {
        return h;
    }
    let mut xt = vec![0.0; p * BLOCK];
    let mut wxt = vec![0.0; p * BLOCK];
    for (xb, wb) in x.chunks(BLOCK * p).zip(w.chunks(BLOCK)) {
        if wb.len() < BLOCK {
            // A short last block: zero rows add nothing.
            xt.iter_mut().for_each(|v| *v = 0.0);
            wxt.iter_mut().for_each(|v| *v = 0.0);
        }
        for (i, (row, &wi)) in xb.chunks_exact(p).zip(wb).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                xt[j * BLOCK + i] = v;
                wxt[j * BLOCK + i] = v * wi;
            }
        }
        for j in 0..p {
            let a: &[f64; BLOCK] = wxt[j * BLOCK..(j + 1) * BLOCK]
                .try_into()
                .expect("a whole block");
            for l0 in (0..=j).step_by(GROUP) {
                let sums = if fused {
                    group_sums::<true>(a, &xt, p, l0)
                } else {
                    group_sums::<false>(a, &xt, p, l0)
                };
                for (g, s) in sums.iter().enumerate().take(j + 1 - l0) {
                    h[j * p + l0 + g] += s;
                }
            }
        }
    }
    for j in 0..p {
        for l in j + 1..p {
            h[j * p + l] = h[l * p + j];
        }
    }
    h
}

/// ⟨a, xt\[l\]⟩ for the GROUP columns l0, l0 + 1, … of the transposed block (a column past p
/// repeats the last one; the caller drops it), each over LANES partial sums.
#[inline(always)]
fn group_sums<const FUSED: bool>(
    a: &[f64; BLOCK],
    xt: &[f64],
    p: usize,
    l0: usize,
) -> [f64; GROUP] {
    let cols: [&[f64; BLOCK]; GROUP] = std::array::from_fn(|g| {
        let l = (l0 + g).min(p - 1);
        xt[l * BLOCK..(l + 1) * BLOCK]
            .try_into()
            .expect("a whole block")
    });
    let mut acc = [[0.0; LANES]; GROUP];
    for c in 0..BLOCK / LANES {
        let av: [f64; LANES] = std::array::from_fn(|k| a[c * LANES + k]);
        for (s, col) in acc.iter_mut().zip(&cols) {
            for k in 0..LANES {
                s[k] = if FUSED {
                    av[k].mul_add(col[c * LANES + k], s[k])
                } else {
                    s[k] + av[k] * col[c * LANES + k]
                };
            }
        }
    }
    acc.map(|s| (s[0] + s[1]) + (s[2] + s[3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_plain_sums_for_any_width_and_row_count() {
        for (k, p) in [
            (1, 1),
            (5, 3),
            (127, 6),
            (128, 21),
            (300, 5),
            (4096, 21),
            (77, 33),
        ] {
            let x: Vec<f64> = (0..k * p)
                .map(|i| ((i * 7919 + 3) % 1013) as f64 / 1013.0 - 0.5)
                .collect();
            let w: Vec<f64> = (0..k).map(|i| ((i * 31) % 17) as f64 / 68.0).collect();
            for fused in [false, true] {
                let h = lower_gram(&x, &w, p, fused);
                for j in 0..p {
                    for l in 0..p {
                        let want: f64 = (0..k).map(|i| w[i] * x[i * p + j] * x[i * p + l]).sum();
                        let got = h[j * p + l];
                        assert!(
                            (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                            "{k}×{p} ({j},{l})"
                        );
                    }
                }
            }
        }
    }
}
