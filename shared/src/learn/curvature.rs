//! The curvature behind each Newton step: the exact Hessian with the dgemm bits on small data,
//! and on large data a Hessian formed by the quick kernel and kept while it serves.
//!
//! Forming ∇²F costs n·d² multiply-adds, d times a pass computing F and ∇F. On large data (at
//! least [`MIN_CHUNKS_TO_SAMPLE`] chunks of [`CHUNK_ROWS`] rows, with at least
//! [`MIN_ROWS_PER_DIM`]·d rows in every [`SAMPLE_STRIDE`]-th chunk) the fit starts near the
//! optimum, from the minimisers of the same objective on sub-samples of chunks
//! ([`crate::learn::warm_start`]), where the Hessian changes little from step to step: it is
//! formed by [`crate::learn::quick_gram`] (its own fixed order of additions, not dgemm's) over a
//! fixed sub-sample of chunks of at least [`MIN_HESSIAN_ROWS`] rows, or over every row when the
//! data has no such sub-sample, and its Cholesky factor is reused for the next steps as long as
//! each is a full step that shrinks ‖∇F‖ by at least [`MIN_CONTRACTION`] (each step contracts
//! ‖∇F‖ by about the relative error of the sub-sample's estimate plus the change of ∇²F since the
//! factor was formed); after a step that does not, the next Hessian is formed afresh at the
//! current point, over every row if the sub-sample's fresh one failed. Only the step direction changes: every step is
//! still accepted by the Armijo test on the exact F, and the solver still stops only when the
//! exact ‖∇F‖ ≤ tolerance (see [`crate::learn::solver`]), so a Hessian that serves badly costs
//! passes, never convergence. Smaller data (every data set of the paper's experiments) gets the
//! exact Hessian at every step, as before.

use crate::data::dataset::Dataset;
use crate::learn::cholesky::cholesky;
use crate::learn::hessian::{CurvatureRows, Kernel, hessian_at};
use crate::learn::logistic::{CHUNK_ROWS, Evaluation};
use nalgebra::{DVector, Dyn};

/// The sub-samples of the warm start take every this-many-th chunk (and every this-many-th of
/// those, and so on).
pub const SAMPLE_STRIDE: usize = 8;
/// Data with fewer chunks than this gets the exact Hessian (and no warm start).
pub const MIN_CHUNKS_TO_SAMPLE: usize = 16;
/// A sub-sample must have at least this many rows per dimension.
pub const MIN_ROWS_PER_DIM: usize = 64;
/// A step with a kept Hessian must be a full step shrinking ‖∇F‖ by at least this factor, or the
/// next Hessian is formed afresh.
pub const MIN_CONTRACTION: f64 = 0.25;
/// On large data the Hessian is formed over the sparsest sub-sample of chunks (stride a power
/// of [`SAMPLE_STRIDE`]) with at least this many rows, or over every row when none has: the
/// relative error of a sampled Hessian, which sets the rate of the steps it gives, shrinks like
/// 1/√rows, and below this size a step contracted ‖∇F‖ too little to make up for the passes.
pub const MIN_HESSIAN_ROWS: usize = 100_000;

/// The solver's choice of Hessian for one objective.
#[derive(Debug, Clone)]
pub(crate) struct Curvature {
    /// The rows of the objective, which its Hessian is formed over.
    rows: CurvatureRows,
    kernel: Kernel,
    /// Whether a factor is kept for the next steps.
    reuse: bool,
    factor: Option<nalgebra::Cholesky<f64, Dyn>>,
    /// Whether the factor was formed for the last step (not kept from an earlier one).
    fresh: bool,
}

impl Curvature {
    /// The exact Hessian at every step (the tests' reference).
    #[cfg(test)]
    pub(crate) fn exact() -> Self {
        Self {
            rows: CurvatureRows::All,
            kernel: Kernel::Exact,
            reuse: false,
            factor: None,
            fresh: false,
        }
    }

    /// Whether every `stride`-th chunk of `data` is a large enough sub-sample: the data has at
    /// least [`MIN_CHUNKS_TO_SAMPLE`] chunks, and the sub-sample at least [`MIN_ROWS_PER_DIM`]·d
    /// rows (not counting its last chunk, which may be short).
    pub(crate) fn samples(data: &Dataset, stride: usize) -> bool {
        let chunks = data.len().div_ceil(CHUNK_ROWS);
        let sampled_rows = chunks.div_ceil(stride).saturating_sub(1) * CHUNK_ROWS;
        chunks >= MIN_CHUNKS_TO_SAMPLE && sampled_rows >= MIN_ROWS_PER_DIM * data.dim()
    }

    /// The quick Hessian (over a sub-sample of at least [`MIN_HESSIAN_ROWS`] rows, or every
    /// row), kept while it serves, for large data; the exact one otherwise.
    pub(crate) fn for_data(data: &Dataset) -> Self {
        let large = Self::samples(data, SAMPLE_STRIDE);
        let mut rows = CurvatureRows::All;
        let mut stride = SAMPLE_STRIDE;
        while large && CurvatureRows::EveryNthChunk(stride).count(data.len()) >= MIN_HESSIAN_ROWS {
            rows = CurvatureRows::EveryNthChunk(stride);
            stride *= SAMPLE_STRIDE;
        }
        Self {
            rows,
            kernel: if large { Kernel::Quick } else { Kernel::Exact },
            reuse: large,
            factor: None,
            fresh: false,
        }
    }

    /// The Hessian of a warm-start level's objective over `rows`, by the quick kernel.
    pub(crate) fn for_level(rows: CurvatureRows) -> Self {
        Self {
            rows,
            kernel: Kernel::Quick,
            reuse: false,
            factor: None,
            fresh: false,
        }
    }

    /// Whether this is a large data set's curvature (which the warm start goes with).
    pub(crate) fn is_large(&self) -> bool {
        self.reuse
    }

    /// The Newton direction −H⁻¹∇F at `theta` and the rows a Hessian was formed over for it (0
    /// with a kept factor); `None` when the Hessian is not positive definite.
    pub(crate) fn direction(
        &mut self,
        data: &Dataset,
        theta: &[f64],
        mu: f64,
        at: &Evaluation,
    ) -> Option<(Vec<f64>, usize)> {
        if let Some(d) = self.factor.as_ref().and_then(|f| solve(f, &at.gradient)) {
            self.fresh = false;
            return Some((d, 0));
        }
        // `at` is F at θ on `data`, so its sums hold the rows' curvatures at θ.
        let (h, used) = hessian_at(data, theta, mu, self.rows, self.kernel, Some(&at.sums));
        let factor = cholesky(at.gradient.len(), &h)?;
        let d = solve(&factor, &at.gradient)?;
        if self.reuse {
            self.factor = Some(factor);
            self.fresh = true;
        }
        Some((d, used))
    }

    /// After a step of length `step` that took ‖∇F‖ from `before` to `after`: a kept factor
    /// that did poorly is dropped, so the next step forms the Hessian afresh — over every row
    /// from then on if it was a sub-sample's formed for this very step (a sample that
    /// misrepresents the data, rows sorted by label say).
    pub(crate) fn observe(&mut self, step: f64, before: f64, after: f64) {
        if self.factor.is_some() && (step < 1.0 || after > MIN_CONTRACTION * before) {
            if self.fresh {
                self.rows = CurvatureRows::All;
            }
            self.factor = None;
        }
    }
}

/// Solves H d = −g with H's Cholesky factor; `None` when d is not finite.
fn solve(factor: &nalgebra::Cholesky<f64, Dyn>, gradient: &[f64]) -> Option<Vec<f64>> {
    let g = DVector::from_iterator(gradient.len(), gradient.iter().map(|g| -g));
    let d = factor.solve(&g);
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
    fn kept_and_exact_hessians_reach_the_same_minimiser() {
        let d = data(MIN_CHUNKS_TO_SAMPLE * CHUNK_ROWS + 100, 5, false);
        let (sampled, exact) = fits(&d);
        // It started warm: fewer steps over every row than Newton from θ = 0.
        assert!(sampled.iterations < exact.iterations);
        assert!(sampled.hessian_rows <= sampled.iterations * d.len());
        assert_eq!(exact.hessian_rows, exact.iterations * d.len());
        // Both stop at ‖∇F‖ ≤ 1e-8 and F is μ-strongly convex: ‖θ − θ*‖ ≤ 1e-8/μ each.
        assert!(sampled.gradient_norm <= 1e-8 && exact.gradient_norm <= 1e-8);
        for (a, b) in sampled.theta.iter().zip(&exact.theta) {
            assert!((a - b).abs() <= 2e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn a_factor_is_kept_while_steps_contract_and_formed_afresh_after_one_that_does_not() {
        let d = data(MIN_CHUNKS_TO_SAMPLE * CHUNK_ROWS, 5, false);
        let mut c = Curvature::for_data(&d);
        let theta = [0.1, -0.2, 0.3, 0.0, 0.05];
        let at = crate::learn::logistic::evaluate(&d, &theta, Penalty::ridge(0.01), false);
        let (first, rows) = c
            .direction(&d, &theta, 0.01, &at)
            .expect("positive definite");
        assert_eq!(rows, d.len());
        c.observe(1.0, 1.0, 0.1);
        let (kept, rows) = c.direction(&d, &theta, 0.01, &at).expect("kept");
        assert_eq!((kept, rows), (first.clone(), 0));
        c.observe(0.5, 1.0, 0.1);
        let (fresh, rows) = c.direction(&d, &theta, 0.01, &at).expect("formed again");
        assert_eq!((fresh, rows), (first, d.len()));
        // Small data keeps nothing: every step forms the exact Hessian.
        let small = data(CHUNK_ROWS, 5, false);
        let mut e = Curvature::for_data(&small);
        let at = crate::learn::logistic::evaluate(&small, &theta, Penalty::ridge(0.01), false);
        for _ in 0..2 {
            assert_eq!(
                e.direction(&small, &theta, 0.01, &at).expect("pd").1,
                small.len()
            );
            e.observe(1.0, 1.0, 0.1);
        }
    }

    #[test]
    fn misleading_sub_samples_still_reach_the_minimiser() {
        // Sorted by label: every chunk of the warm start's sub-samples holds one class only, yet
        // the fit converges to the same minimiser.
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
