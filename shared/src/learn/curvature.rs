//! The curvature behind each Newton step: the exact Hessian, or one formed over a fixed
//! sub-sample of the rows when the data is large.
//!
//! Forming ∇²F costs n·d² multiply-adds, d times a pass computing F and ∇F; at 2e5 × 100 it was
//! most of a fit. A Hessian over every [`SAMPLE_STRIDE`]-th chunk of [`CHUNK_ROWS`] rows — fixed
//! chunks, so the choice is deterministic — costs an eighth of that, and on large data it
//! estimates ∇²F well enough that the iteration still converges in a few steps (sub-sampled
//! Newton: each step contracts the gradient by roughly the relative error of the estimate, under
//! 1 % on the bench's shapes, against quadratic convergence with the exact Hessian). Only the
//! step direction changes: every step is still accepted by the Armijo test on the exact F, and
//! the solver still stops only when the exact ‖∇F‖ ≤ tolerance (see [`crate::learn::solver`]).
//!
//! The sub-sample is used only when the data has at least [`MIN_CHUNKS_TO_SAMPLE`] chunks and
//! the sample has at least [`MIN_ROWS_PER_DIM`]·d rows; smaller data (every data set of the
//! paper's experiments) gets the exact Hessian, as before. After a step with the sampled
//! Hessian that needed backtracking or contracted ‖∇F‖ by less than [`MIN_CONTRACTION`], the
//! rest of the fit uses the exact Hessian, so a sample that misrepresents the data (rows sorted by
//! label, say) costs at most a few passes over plain Newton, never convergence.

use crate::data::dataset::Dataset;
use crate::learn::cholesky::cholesky;
use crate::learn::logistic::{CHUNK_ROWS, CurvatureRows, Evaluation, hessian_at};
use nalgebra::DVector;

/// Every this-many-th chunk is in the Hessian's sample.
pub const SAMPLE_STRIDE: usize = 8;
/// Data with fewer chunks than this gets the exact Hessian.
pub const MIN_CHUNKS_TO_SAMPLE: usize = 16;
/// The sample must have at least this many rows per dimension.
pub const MIN_ROWS_PER_DIM: usize = 64;
/// A sampled step must shrink ‖∇F‖ by at least this factor (and be a full step), or the fit
/// switches to the exact Hessian.
pub const MIN_CONTRACTION: f64 = 0.25;

/// The solver's choice of Hessian, which can fall back from sampled to exact during a fit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Curvature {
    rows: CurvatureRows,
}

impl Curvature {
    /// The exact Hessian throughout (the tests' reference).
    #[cfg(test)]
    pub(crate) fn exact() -> Self {
        Self {
            rows: CurvatureRows::All,
        }
    }

    /// Sampled for large data, exact otherwise.
    pub(crate) fn for_data(data: &Dataset) -> Self {
        let chunks = data.len().div_ceil(CHUNK_ROWS);
        let sampled_rows = chunks.div_ceil(SAMPLE_STRIDE).saturating_sub(1) * CHUNK_ROWS;
        let rows =
            if chunks >= MIN_CHUNKS_TO_SAMPLE && sampled_rows >= MIN_ROWS_PER_DIM * data.dim() {
                CurvatureRows::EveryNthChunk(SAMPLE_STRIDE)
            } else {
                CurvatureRows::All
            };
        Self { rows }
    }

    /// The Newton direction −H⁻¹∇F at `theta` and the rows H was formed over; with a sampled
    /// H that is not positive definite, the exact one (from then on). `None` when the exact
    /// Hessian is not positive definite either.
    pub(crate) fn direction(
        &mut self,
        data: &Dataset,
        theta: &[f64],
        mu: f64,
        at: &Evaluation,
    ) -> Option<(Vec<f64>, usize)> {
        // `at` is F at θ on `data`, so its sums hold the rows' curvatures at θ.
        let sums = Some(&at.sums);
        let (h, used) = hessian_at(data, theta, mu, self.rows, sums);
        if let Some(d) = newton_direction(&h, &at.gradient) {
            return Some((d, used));
        }
        if self.rows == CurvatureRows::All {
            return None;
        }
        self.rows = CurvatureRows::All;
        let (h, exact) = hessian_at(data, theta, mu, self.rows, sums);
        newton_direction(&h, &at.gradient).map(|d| (d, used + exact))
    }

    /// After a step of length `step` that took ‖∇F‖ from `before` to `after`: a sampled Hessian
    /// that did poorly is replaced by the exact one for the rest of the fit.
    pub(crate) fn observe(&mut self, step: f64, before: f64, after: f64) {
        if self.rows != CurvatureRows::All && (step < 1.0 || after > MIN_CONTRACTION * before) {
            self.rows = CurvatureRows::All;
        }
    }
}

/// Solves H d = −g by Cholesky; `None` when H (row-major) is not positive definite.
fn newton_direction(h: &[f64], gradient: &[f64]) -> Option<Vec<f64>> {
    let p = gradient.len();
    let chol = cholesky(p, h)?;
    let g = DVector::from_iterator(p, gradient.iter().map(|g| -g));
    let d = chol.solve(&g);
    d.iter()
        .all(|v| v.is_finite())
        .then(|| d.iter().copied().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::logistic::Penalty;
    use crate::learn::solver::{SolverOptions, minimise_with};

    /// n rows in the unit ball of ℝ^p labelled by a fixed hyperplane with 10 % flipped; sorted
    /// by label when `sorted` (the worst order for a chunk sample).
    fn data(n: usize, p: usize, sorted: bool) -> Dataset {
        let mut rows: Vec<(Vec<f64>, f64)> = (0..n)
            .map(|i| {
                let x: Vec<f64> = (0..p)
                    .map(|j| (((i * 7919 + j * 104_729) % 1000) as f64 / 1000.0 - 0.5) / p as f64)
                    .collect();
                let s: f64 = x
                    .iter()
                    .enumerate()
                    .map(|(j, v)| v * (j as f64 - 1.5))
                    .sum();
                let y = if (s >= 0.0) != (i % 10 == 0) {
                    1.0
                } else {
                    -1.0
                };
                (x, y)
            })
            .collect();
        if sorted {
            rows.sort_by(|a, b| a.1.total_cmp(&b.1));
        }
        let y = rows.iter().map(|r| r.1).collect();
        Dataset::new(rows.into_iter().flat_map(|r| r.0).collect(), y, p)
    }

    fn fits(d: &Dataset) -> (crate::learn::solver::Fit, crate::learn::solver::Fit) {
        let b = [3.0, -2.0, 1.0, 0.5, -0.25];
        let pen = Penalty {
            mu: 0.01,
            linear: Some(&b[..d.dim()]),
        };
        let run =
            |c| minimise_with(d, pen, SolverOptions::default(), &[0.0; 5], None, c).expect("fit");
        (run(Curvature::for_data(d)), run(Curvature::exact()))
    }

    #[test]
    fn sampled_and_exact_hessians_reach_the_same_minimiser() {
        let d = data(MIN_CHUNKS_TO_SAMPLE * CHUNK_ROWS + 100, 5, false);
        let (sampled, exact) = fits(&d);
        // It did sample: fewer Hessian rows than one exact Hessian per iteration.
        assert!(sampled.hessian_rows < sampled.iterations * d.len() / 2);
        assert_eq!(exact.hessian_rows, exact.iterations * d.len());
        // Both stop at ‖∇F‖ ≤ 1e-8 and F is μ-strongly convex: ‖θ − θ*‖ ≤ 1e-8/μ each.
        assert!(sampled.gradient_norm <= 1e-8 && exact.gradient_norm <= 1e-8);
        for (a, b) in sampled.theta.iter().zip(&exact.theta) {
            assert!((a - b).abs() <= 2e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn a_misleading_sample_falls_back_to_the_exact_hessian() {
        // Sorted by label: every sampled chunk holds one class only, yet the fit converges.
        let d = data(MIN_CHUNKS_TO_SAMPLE * CHUNK_ROWS, 5, true);
        let (sampled, exact) = fits(&d);
        assert!(sampled.gradient_norm <= 1e-8);
        for (a, b) in sampled.theta.iter().zip(&exact.theta) {
            assert!((a - b).abs() <= 2e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn sampled_fits_are_bit_identical_for_any_thread_count() {
        let d = data(MIN_CHUNKS_TO_SAMPLE * CHUNK_ROWS + 7, 5, false);
        let in_pool = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("pool")
                .install(|| fits(&d).0)
        };
        let (one, three) = (in_pool(1), in_pool(3));
        assert_eq!(one.theta, three.theta);
        assert_eq!(one.hessian_rows, three.hessian_rows);
    }

    #[test]
    fn small_data_gets_the_exact_hessian() {
        let d = data(CHUNK_ROWS * 4, 5, false);
        let (chosen, exact) = fits(&d);
        assert_eq!(chosen.theta, exact.theta);
        assert_eq!(chosen.hessian_rows, exact.hessian_rows);
    }
}
