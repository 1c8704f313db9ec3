//! The Cholesky factor of the solver's Newton steps, with the bits of nalgebra's
//! `DMatrix::from_row_slice(p, p, h).cholesky()`.
//!
//! nalgebra's factorisation updates column j by an `axpy` of every earlier column k in turn,
//! through a generic strided loop, and was a third of `experiment utility`. [`Cholesky`] does
//! the same operations on every element in the same order, but keeps a block of rows of column
//! j in registers through all k, compiled for the widest SIMD; below [`BLOCKED_FROM`] columns
//! nalgebra's own loop is faster and is used. Either way the factor (and the solve, which reads
//! only its lower triangle) has the same bits
//! (`the_blocked_factor_has_the_bits_of_nalgebras_cholesky`).

use crate::util::simd::{Kernel, vectorised};
use nalgebra::{DMatrix, Dyn};

/// `DMatrix::from_row_slice(p, p, h).cholesky()` for the row-major p × p `h`.
pub(crate) fn cholesky(p: usize, h: &[f64]) -> Option<nalgebra::Cholesky<f64, Dyn>> {
    if p < BLOCKED_FROM {
        DMatrix::from_row_slice(p, p, h).cholesky()
    } else {
        blocked_cholesky(p, h)
    }
}

/// Dimensions from which [`Cholesky`] factors the Hessian.
const BLOCKED_FROM: usize = 16;

/// `DMatrix::from_row_slice(p, p, h).cholesky()`, bit for bit, by the [`Cholesky`] kernel.
fn blocked_cholesky(p: usize, h: &[f64]) -> Option<nalgebra::Cholesky<f64, Dyn>> {
    // Column-major, as `DMatrix::from_row_slice` stores it.
    let mut a = vec![0.0; p * p];
    for (i, row) in h.chunks_exact(p.max(1)).enumerate() {
        for (j, &v) in row.iter().enumerate() {
            a[j * p + i] = v;
        }
    }
    vectorised(Cholesky { p, a: &mut a })
        .then(|| nalgebra::Cholesky::pack_dirty(DMatrix::from_vec(p, p, a)))
}

/// nalgebra's `Cholesky::new` on the p × p column-major `a`, in place and with its bits: column
/// by column, column j's rows j.. take `(−a_jk)·a_ik + a_ij` for k = 0, …, j − 1 in turn (its
/// `axpy`), then its diagonal its square root and the rows below it a division by that root.
/// Only the lower triangle is read or written. Each element's operations are nalgebra's, in
/// its order; the rows go [`ROWS`] (or 8, 4, 2, 1) at a time with their running values in
/// registers through all k, compiled for the widest SIMD. False, as nalgebra's `None`, when a
/// pivot is zero or not a number ≥ 0.
struct Cholesky<'a> {
    p: usize,
    a: &'a mut [f64],
}

/// Rows of a column updated together.
const ROWS: usize = 16;

impl Kernel for Cholesky<'_> {
    type Output = bool;

    #[inline(always)]
    fn run(self) -> bool {
        let Cholesky { p, a } = self;
        for j in 0..p {
            let (left, right) = a.split_at_mut(j * p);
            let col_j = &mut right[j..p];
            update_column(left, p, j, col_j);
            let diag = col_j[0];
            if diag.is_nan() || diag <= 0.0 {
                return false;
            }
            let root = diag.sqrt();
            col_j[0] = root;
            col_j[1..].iter_mut().for_each(|v| *v /= root);
        }
        true
    }
}

/// Rows j.. of column j (`col_j`) through the updates of every column k < j (the columns of
/// `left`), in blocks of 16, 8, 4, 2 and 1 rows held in registers.
#[inline(always)]
fn update_column(left: &[f64], p: usize, j: usize, col_j: &mut [f64]) {
    let mut first = j;
    let mut rest = col_j;
    while rest.len() >= ROWS {
        rest = update_rows::<ROWS>(left, p, j, &mut first, rest);
    }
    for_size::<8>(left, p, j, &mut first, &mut rest);
    for_size::<4>(left, p, j, &mut first, &mut rest);
    for_size::<2>(left, p, j, &mut first, &mut rest);
    for_size::<1>(left, p, j, &mut first, &mut rest);
}

/// One block of N rows when at least N are left.
#[inline(always)]
fn for_size<const N: usize>(
    left: &[f64],
    p: usize,
    j: usize,
    first: &mut usize,
    rest: &mut &mut [f64],
) {
    if rest.len() >= N {
        *rest = update_rows::<N>(left, p, j, first, std::mem::take(rest));
    }
}

/// Rows `first`, …, `first` + N − 1 of column j (the front of `rows`) through the updates of
/// every column k < j, in order of k; returns the rows after them and moves `first` past them.
#[inline(always)]
fn update_rows<'r, const N: usize>(
    left: &[f64],
    p: usize,
    j: usize,
    first: &mut usize,
    rows: &'r mut [f64],
) -> &'r mut [f64] {
    let (block, rest) = rows.split_at_mut(N);
    let mut acc: [f64; N] = (&*block).try_into().expect("N rows");
    for col_k in left.chunks_exact(p) {
        let factor = -col_k[j];
        let x: &[f64; N] = col_k[*first..*first + N].try_into().expect("N rows");
        for (y, x) in acc.iter_mut().zip(x) {
            *y += factor * x;
        }
    }
    block.copy_from_slice(&acc);
    *first += N;
    rest
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::DVector;

    #[test]
    fn the_blocked_factor_has_the_bits_of_nalgebras_cholesky() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::ChaCha20Rng::seed_from_u64(7);
        let mut next = move || rng.random_range(-0.5..0.5);
        for p in 0..40 {
            // XᵀX/n + shift: positive definite, ill-conditioned for small shifts, and (shift < 0)
            // not positive definite.
            for shift in [1e-3, 1e-9, 0.0, -1e-3] {
                let n = p + 3;
                let x: Vec<f64> = (0..n * p).map(|_| next()).collect();
                let mut h = vec![0.0; p * p];
                for i in 0..p {
                    for j in 0..p {
                        let s: f64 = (0..n).map(|r| x[r * p + i] * x[r * p + j]).sum();
                        h[i * p + j] = s / n as f64 + if i == j { shift } else { 0.0 };
                    }
                }
                let factor = |c: Option<nalgebra::Cholesky<f64, Dyn>>| {
                    c.map(|c| {
                        let l = c.unpack_dirty();
                        // The lower triangle: the upper one is not the factor's.
                        (0..p)
                            .flat_map(|j| (j..p).map(move |i| (i, j)))
                            .map(|ij| l[ij].to_bits())
                            .collect::<Vec<_>>()
                    })
                };
                let theirs = DMatrix::from_row_slice(p, p, &h).cholesky();
                // The solve reads only the lower triangle, so the directions agree too.
                let g: Vec<f64> = (0..p).map(|_| next()).collect();
                let direction = theirs.clone().map(|c| {
                    let d = c.solve(&DVector::from_iterator(p, g.iter().map(|g| -g)));
                    d.iter().copied().collect::<Vec<_>>()
                });
                let ours = blocked_cholesky(p, &h).map(|c| {
                    let d = c.solve(&DVector::from_iterator(p, g.iter().map(|g| -g)));
                    d.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                });
                let want = direction.map(|d| d.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
                assert_eq!(ours, want, "p = {p}, shift {shift}");
                assert_eq!(
                    factor(blocked_cholesky(p, &h)),
                    factor(theirs),
                    "p = {p}, shift {shift}"
                );
            }
        }
        // Pivots nalgebra refuses: zero, negative, not a number.
        for bad in [0.0, -0.0, -1.0, f64::NAN] {
            let h = [bad, 0.0, 0.0, 1.0];
            assert!(blocked_cholesky(2, &h).is_none(), "{bad}");
            assert!(
                DMatrix::from_row_slice(2, 2, &h).cholesky().is_none(),
                "{bad}"
            );
        }
    }
}
