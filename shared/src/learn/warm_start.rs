//! The start of a large fit: the minimiser of the same objective on nested sub-samples of the
//! rows, coarse to fine, so that the passes over every row begin near the optimum.
//!
//! From θ = 0, Newton on a nearly separable data set with a small μ spends most of its steps far
//! from the optimum, where a sampled Hessian ([`crate::learn::curvature`]) contracts the gradient
//! too little and the fit falls back to the exact one, d times dearer than a pass computing F and
//! ∇F. Those far steps are as good on a sub-sample: the level of stride s is the objective over
//! every s-th chunk of [`CHUNK_ROWS`] rows,
//!
//! ```text
//! F_S(θ) = (1/|S|) Σ_{i∈S} ℓ(θ; xᵢ, yᵢ) + (μ/2)‖θ‖² + (1/n) bᵀθ,
//! ```
//!
//! (b/n as in F, so F_S estimates F), minimised by Newton with its own exact Hessian, from the
//! previous level's minimiser, until ‖∇F_S‖ ≤ 0.1/√|S| (a tenth of the sub-sample's own error
//! in ∇F, which is of order 1/√|S|: solving F_S further would not bring the start closer). The levels are the strides [`SAMPLE_STRIDE`]ᵏ whose sample passes the sampled
//! Hessian's size rule ([`Curvature::samples`]), sparsest first; the last is the sampled
//! Hessian's own sample, so the fit over every row starts where that Hessian is accurate.
//!
//! **Why the guarantee is unaffected.** A level's result is only the start of the fit over every
//! row. The levels are fixed chunks (no randomness) summed in chunk order, so the start is a
//! deterministic function of the data, the penalty and the caller's start, independent of the
//! thread count; the fit then stops, as every fit does, only when the exact ‖∇F‖ over every row
//! is at most the tolerance ([`crate::learn::solver`]). A level that fails (no convergence within
//! the budget, a non-finite value) leaves the start where it was.

use crate::data::dataset::Dataset;
use crate::learn::curvature::{Curvature, SAMPLE_STRIDE};
use crate::learn::hessian::CurvatureRows;
use crate::learn::logistic::{CHUNK_ROWS, Penalty};
use crate::learn::solver::{Objective, SolverOptions, newton};

/// A level stops at ‖∇F_S‖ ≤ this / √|S|: a tenth of the sub-sample's own error in ∇F.
const LEVEL_TOLERANCE: f64 = 0.1;

/// The strides of the levels, sparsest first (empty for data too small for a sampled Hessian).
pub(crate) fn levels(data: &Dataset) -> Vec<usize> {
    let chunks = data.len().div_ceil(CHUNK_ROWS);
    let mut strides = Vec::new();
    let mut stride = SAMPLE_STRIDE;
    while stride < chunks && Curvature::samples(data, stride) {
        strides.push(stride);
        stride *= SAMPLE_STRIDE;
    }
    strides.reverse();
    strides
}

/// The start of a fit with a sampled Hessian: `theta` moved through the levels' minimisers.
pub(crate) fn warm_start(
    data: &Dataset,
    penalty: Penalty<'_>,
    options: SolverOptions,
    mut theta: Vec<f64>,
) -> Vec<f64> {
    for stride in levels(data) {
        let rows = CurvatureRows::EveryNthChunk(stride);
        let objective = Objective {
            data,
            penalty,
            rows,
        };
        let level = SolverOptions {
            tolerance: options
                .tolerance
                .max(LEVEL_TOLERANCE / (rows.count(data.len()) as f64).sqrt()),
            ..options
        };
        let current = objective.evaluate(&theta);
        if let Ok(fit) = newton(
            objective,
            level,
            theta.clone(),
            current,
            1,
            Curvature::for_level(rows),
        ) {
            theta = fit.theta;
        }
    }
    theta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, d: usize) -> Dataset {
        Dataset::new(vec![0.0; n * d], vec![1.0; n], d)
    }

    #[test]
    fn levels_are_the_sub_samples_large_enough_sparsest_first() {
        // 245 chunks: strides 8 (31 chunks) and 64 (4); 512 would leave one chunk.
        assert_eq!(levels(&rows(1_000_000, 21)), vec![64, 8]);
        assert_eq!(levels(&rows(100_000, 21)), vec![8]);
        // Below MIN_CHUNKS_TO_SAMPLE chunks, or too few rows per dimension: none.
        assert!(levels(&rows(15 * CHUNK_ROWS, 2)).is_empty());
        assert!(levels(&rows(100_000, 200)).is_empty());
    }
}
