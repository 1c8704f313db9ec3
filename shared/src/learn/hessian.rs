//! The Hessian of the logistic objective over every row or over a fixed sub-sample of chunks:
//! (1/|S|) Σ_{i∈S} ℓ''ᵢxᵢxᵢᵀ + μI, each chunk's part computed in parallel and the parts summed in
//! chunk order, so the result is bit-identical for any thread count.
//!
//! Two kernels per chunk ([`Kernel`]): the **exact** one of every data set small enough for the
//! exact Hessian ([`crate::learn::curvature`]), with the bits of the dgemm nalgebra used to call
//! ([`gram`], or nalgebra's own loop for the smallest products); and the **quick** one
//! ([`quick_gram`]: the lower triangle, in its own fixed order) for large data, where the Hessian
//! only chooses the solver's search directions and is formed over sub-samples as often as over
//! every row.

use crate::data::dataset::Dataset;
use crate::learn::gram;
use crate::learn::logistic::{CHUNK_ROWS, Chunk, DataSums, add_into, chunk_range};
use crate::learn::margins::margins_into;
use crate::learn::quick_gram;
use crate::util::fastmath;
use crate::util::simd::{Kernel as SimdKernel, vectorised};
use nalgebra::{DMatrix, DMatrixView};
use rayon::prelude::*;

/// Which per-chunk arithmetic a Hessian uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// The bits of nalgebra's `gemm` ([`gram`]): every exact Hessian of a small data set.
    Exact,
    /// [`quick_gram`]: large data, whose Hessians only choose directions.
    Quick,
}

/// wᵢ = ℓ''(mᵢ) for the rows of one chunk: the weights of its Hessian Xᵀ diag(w) X.
#[inline(always)]
fn curvatures(chunk: &Chunk<'_>) -> Vec<f64> {
    let mut w = vec![0.0; chunk.y.len()];
    margins_into(chunk.x, chunk.y, chunk.theta, &mut w);
    for wi in w.iter_mut() {
        *wi = fastmath::logistic_terms(*wi).curvature;
    }
    w
}

/// The chunk's weights: `known` (from the pass that evaluated F at the same θ) or [`curvatures`].
#[inline(always)]
fn weights<'w>(chunk: &Chunk<'_>, known: Option<&'w [f64]>) -> std::borrow::Cow<'w, [f64]> {
    known.map_or_else(|| curvatures(chunk).into(), Into::into)
}

/// diag(w)X for one chunk, w from [`weights`]: the right factor of its Hessian.
struct CurvatureScaled<'a>(Chunk<'a>, Option<&'a [f64]>);

impl SimdKernel for CurvatureScaled<'_> {
    type Output = Vec<f64>;

    #[inline(always)]
    fn run(self) -> Vec<f64> {
        let w = weights(&self.0, self.1);
        // Written once, not zeroed first (the zeroing was a whole extra pass).
        let mut scaled = Vec::with_capacity(self.0.x.len());
        for (xi, wi) in self.0.x.chunks_exact(self.0.theta.len()).zip(w.iter()) {
            scaled.extend(xi.iter().map(|v| v * wi));
        }
        scaled
    }
}

/// Σᵢ wᵢxᵢxᵢᵀ over one chunk as one matrix product Xᵀ diag(w) X (column-major p × p, both
/// triangles): by [`gram::gram`] where nalgebra's `gemm` would call dgemm (the same bits),
/// by nalgebra's own loop for the smallest products.
fn chunk_hessian(chunk: Chunk<'_>, known: Option<&[f64]>) -> DMatrix<f64> {
    let (x, p, k) = (chunk.x, chunk.theta.len(), chunk.y.len());
    if p > gram::USES_DGEMM_ABOVE && k > gram::USES_DGEMM_ABOVE {
        return DMatrix::from_vec(p, p, vectorised(Gram(chunk, known, Kernel::Exact)));
    }
    let scaled = vectorised(CurvatureScaled(chunk, known));
    // Xᵀ as a p × k column-major view of the row-major chunk, and diag(w)X as k × p.
    let xt = DMatrixView::from_slice(x, p, k);
    let wx = DMatrixView::from_slice_with_strides(&scaled, k, p, p, 1);
    let mut h = DMatrix::<f64>::zeros(p, p);
    h.gemm(1.0, &xt, &wx, 0.0);
    h
}

/// Xᵀ diag(w) X of one chunk, w from [`weights`], by [`gram::gram`] (the exact kernel) or
/// [`quick_gram`], as a SIMD kernel.
struct Gram<'a>(Chunk<'a>, Option<&'a [f64]>, Kernel);

impl SimdKernel for Gram<'_> {
    type Output = Vec<f64>;

    /// Outside the dispatcher (nothing calls it so): the narrow registers' tile shapes, no
    /// fused multiply-add in the quick kernel.
    #[inline(always)]
    fn run(self) -> Vec<f64> {
        self.run_with(1)
    }

    /// AVX2 and AVX-512 (4 or 8 lanes) come with fused multiply-add in `pulp`'s levels.
    #[inline(always)]
    fn run_with(self, f64_lanes: usize) -> Vec<f64> {
        let p = self.0.theta.len();
        let w = weights(&self.0, self.1);
        match self.2 {
            Kernel::Exact => gram::gram(self.0.x, &w, p, f64_lanes),
            Kernel::Quick => quick_gram::lower_gram(self.0.x, &w, p, f64_lanes >= 4),
        }
    }
}

/// Which rows the Hessian is formed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurvatureRows {
    /// Every row: the exact ∇²F.
    All,
    /// The rows of every `stride`-th chunk of [`CHUNK_ROWS`] rows (chunks 0, stride, 2·stride, …),
    /// a deterministic sub-sample: (1/|S|) Σ_{i∈S} ℓ''ᵢxᵢxᵢᵀ + μI estimates ∇²F.
    EveryNthChunk(usize),
}

impl CurvatureRows {
    /// Every how-many-th chunk this selects (1 for every row).
    pub(crate) fn stride(self) -> usize {
        match self {
            CurvatureRows::All => 1,
            CurvatureRows::EveryNthChunk(s) => s.max(1),
        }
    }

    /// The chunks of an n-row data set this selects.
    pub(crate) fn chunks(self, n: usize) -> impl Iterator<Item = usize> {
        (0..n.div_ceil(CHUNK_ROWS)).step_by(self.stride())
    }

    /// The number of rows of an n-row data set this selects.
    pub(crate) fn count(self, n: usize) -> usize {
        self.chunks(n).map(|c| chunk_range(c, n).len()).sum()
    }
}

/// The Hessian (row-major p × p) of F at `theta` over the rows `rows` selects: (1/|S|) Σ_{i∈S}
/// ℓ''ᵢxᵢxᵢᵀ + μI, chunk results summed in chunk order (bit-identical for any thread count), with
/// the number of rows |S| it used. With [`CurvatureRows::All`] this is exactly ∇²F, by the
/// exact kernel; a sub-sample's by the quick one.
///
/// # Panics
/// If `theta` does not have the data's dimension.
pub fn hessian(data: &Dataset, theta: &[f64], mu: f64, rows: CurvatureRows) -> (Vec<f64>, usize) {
    let kernel = match rows {
        CurvatureRows::All => Kernel::Exact,
        CurvatureRows::EveryNthChunk(_) => Kernel::Quick,
    };
    hessian_at(data, theta, mu, rows, kernel, None)
}

/// [`hessian`] by `kernel`, taking the rows' curvatures from `sums` when given: the
/// [`crate::learn::logistic::data_sums`] of `data` at this same `theta` computed them with the
/// loss (the same bits, one pass of margins and exponentials fewer per Newton step) — sums over
/// a sub-sample of chunks serve a Hessian over the same chunks or a sparser sub-sample of them.
pub(crate) fn hessian_at(
    data: &Dataset,
    theta: &[f64],
    mu: f64,
    rows: CurvatureRows,
    kernel: Kernel,
    sums: Option<&DataSums>,
) -> (Vec<f64>, usize) {
    let p = data.dim();
    assert_eq!(theta.len(), p, "θ has the wrong dimension");
    let n = data.len();
    let selected: Vec<usize> = rows.chunks(n).collect();
    let known = sums.filter(|s| s.data_rows == n && rows.stride().is_multiple_of(s.stride));
    let parts: Vec<DMatrix<f64>> = selected
        .par_iter()
        .map(|&c| {
            let chunk = Chunk::new(data, chunk_range(c, n), theta);
            let known = known.map(|s| s.curvature[c / s.stride].as_slice());
            match kernel {
                Kernel::Exact => chunk_hessian(chunk, known),
                Kernel::Quick => {
                    DMatrix::from_vec(p, p, vectorised(Gram(chunk, known, Kernel::Quick)))
                }
            }
        })
        .collect();
    let mut total = vec![0.0; p * p];
    for h in &parts {
        add_into(&mut total, h.as_slice());
    }
    let used: usize = selected.iter().map(|&c| chunk_range(c, n).len()).sum();
    let inv = if used == 0 { 0.0 } else { 1.0 / used as f64 };
    // Symmetrise (the matrix product need not round both triangles alike) and add μI.
    let mut out = vec![0.0; p * p];
    for j in 0..p {
        for l in 0..p {
            out[j * p + l] = 0.5 * (total[j * p + l] + total[l * p + j]) * inv;
        }
        out[j * p + j] += mu;
    }
    (out, used)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dataset::dot;
    use crate::learn::logistic::data_sums;
    use crate::learn::logistic::tests::patterned;

    /// Σ ℓ''(mᵢ)xᵢxᵢᵀ/|rows| + μI over `rows`, one row at a time.
    fn serial_hessian(data: &Dataset, theta: &[f64], mu: f64, rows: &[usize]) -> Vec<f64> {
        let p = data.dim();
        let mut h = vec![0.0; p * p];
        for &i in rows {
            let m = data.label(i) * dot(data.row(i), theta);
            let w = fastmath::logistic_terms(m).curvature;
            for j in 0..p {
                for l in 0..p {
                    h[j * p + l] += w * data.row(i)[j] * data.row(i)[l] / rows.len() as f64;
                }
            }
        }
        for j in 0..p {
            h[j * p + j] += mu;
        }
        h
    }

    #[test]
    fn exact_and_sampled_hessians_match_serial_sums() {
        let n = CHUNK_ROWS * 4 + 300;
        let data = patterned(n, 3, (53, 97), 0.5, 4);
        let theta = [0.7, -1.2, 0.4];
        let all: Vec<usize> = (0..n).collect();
        // Stride 3 selects chunks 0 and 3.
        let sample: Vec<usize> = (0..CHUNK_ROWS)
            .chain(3 * CHUNK_ROWS..4 * CHUNK_ROWS)
            .collect();
        for (rows, which, tol) in [
            (CurvatureRows::All, &all, 1e-12),
            (CurvatureRows::EveryNthChunk(3), &sample, 1e-5),
        ] {
            let (h, used) = hessian(&data, &theta, 0.05, rows);
            assert_eq!(used, which.len());
            let want = serial_hessian(&data, &theta, 0.05, which);
            for (a, b) in h.iter().zip(&want) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1e-3),
                    "{rows:?}: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn hessian_from_the_evaluations_curvatures_has_the_same_bits() {
        let p = 7;
        let n = 2 * CHUNK_ROWS + 300;
        let x: Vec<f64> = (0..n * p)
            .map(|i| ((i * 7919 + 5) % 1013) as f64 / 1013.0 - 0.5)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| if (i * 37) % 5 < 2 { 1.0 } else { -1.0 })
            .collect();
        let data = Dataset::new(x, y, p);
        let theta: Vec<f64> = (0..p).map(|j| 0.4 - 0.15 * j as f64).collect();
        let sums = data_sums(&data, &theta);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for rows in [CurvatureRows::All, CurvatureRows::EveryNthChunk(2)] {
            let (want, _) = hessian(&data, &theta, 0.01, rows);
            let kernel = match rows {
                CurvatureRows::All => Kernel::Exact,
                CurvatureRows::EveryNthChunk(_) => Kernel::Quick,
            };
            let (got, _) = hessian_at(&data, &theta, 0.01, rows, kernel, Some(&sums));
            assert_eq!(bits(&got), bits(&want), "{rows:?}");
        }
    }
}
