//! Damped Newton solver for the (possibly perturbed) L2-regularised logistic objective.
//!
//! Minimises F(θ) = (1/n) Σ log(1 + exp(−yᵢ⟨θ,xᵢ⟩)) + (μ/2)||θ||² + (1/n) bᵀθ (see
//! [`crate::learn::logistic`]). Each iteration takes a Hessian at the current point — the exact
//! ∇²F, or on large data one formed over a fixed sub-sample of the rows and kept for the next
//! steps while they contract ∇F well ([`crate::learn::curvature`]) —, solves the Newton system by
//! Cholesky, and backtracks (Armijo) from the full step, evaluating only F and ∇F at each
//! candidate (a Hessian is formed only at accepted points that are not yet optimal, never at a
//! rejected candidate or at the final point). On large data the iteration starts from the
//! minimisers of the same objective on nested sub-samples ([`crate::learn::warm_start`]). With
//! μ > 0 the objective is strongly convex; with the exact Hessian Newton converges
//! quadratically, with a sampled or kept one linearly at a rate near its relative error.
//! Convergence means ||∇F||₂ ≤ `tolerance` (default
//! 1e-8) for the exact gradient of the exact objective over every row. A problem that does not
//! converge within the iteration budget (e.g. separable data with μ = 0, whose minimiser is at
//! infinity) is reported as [`SolverError::NotConverged`], never returned as if it were an optimum.
//!
//! **Why the privacy proofs are unaffected by how the step is computed.** Every guarantee that
//! rests on this solver (objective perturbation with its output stage,
//! `docs/proofs/objective-perturbation-inexact.md`; output perturbation,
//! `docs/proofs/output-perturbation-snapping.md`) uses only two facts: the solver is a
//! deterministic function of its input (data, penalty, start), and the point it returns has
//! ‖∇F‖₂ ≤ γ = `tolerance` for the exact F, so by μ-strong convexity it is within γ/μ of the
//! exact minimiser. The Hessian and the warm start only choose where the iteration goes: the
//! sub-samples are fixed chunks (no randomness), keeping or re-forming a Hessian depends on
//! computed values only, and all sums run in chunk order, so the solver stays deterministic and
//! bit-identical for any thread count; the stopping test is unchanged. Both facts therefore hold
//! as before.

use crate::data::dataset::{Dataset, dot};
use crate::learn::classifier::LinearClassifier;
use crate::learn::curvature::Curvature;
use crate::learn::hessian::CurvatureRows;
use crate::learn::logistic::{DataSums, Evaluation, Penalty, data_sums_over};
use crate::learn::warm_start::warm_start;

/// Solver settings.
#[derive(Debug, Clone, Copy)]
pub struct SolverOptions {
    /// Stop when ||∇F||₂ ≤ tolerance.
    pub tolerance: f64,
    /// Newton iterations allowed before giving up.
    pub max_iterations: usize,
}

impl Default for SolverOptions {
    fn default() -> Self {
        Self {
            tolerance: 1e-8,
            max_iterations: 100,
        }
    }
}

/// The minimiser and what it cost.
#[derive(Debug, Clone)]
pub struct Fit {
    /// argmin F.
    pub theta: Vec<f64>,
    /// F at the minimiser.
    pub value: f64,
    /// ||∇F(θ)||₂ at the minimiser.
    pub gradient_norm: f64,
    /// Newton iterations taken.
    pub iterations: usize,
    /// Passes over the data computing F and ∇F (one per objective evaluation).
    pub passes: usize,
    /// Rows over which Hessians were formed, summed over iterations (n per exact Hessian).
    pub hessian_rows: usize,
    /// The data's sums at θ (what a fit at another λ on the same rows starts from; see
    /// [`RidgePath`]).
    pub(crate) sums: DataSums,
}

impl Fit {
    /// The fitted classifier sign⟨θ, x⟩.
    pub fn classifier(&self) -> LinearClassifier {
        LinearClassifier::new(self.theta.clone())
    }
}

/// Why a fit failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SolverError {
    /// The gradient did not reach the tolerance within the iteration budget.
    #[error(
        "logistic regression did not converge: ||∇F|| = {gradient_norm:.3e} after {iterations} Newton iterations (tolerance {tolerance:.1e}); is the data separable with no regularisation?"
    )]
    NotConverged {
        /// Iterations taken.
        iterations: usize,
        /// Final gradient norm.
        gradient_norm: f64,
        /// The tolerance asked for.
        tolerance: f64,
    },
    /// The Hessian was not positive definite (only possible with μ ≤ 0).
    #[error(
        "the Hessian is not positive definite at iteration {iteration}; use a positive regulariser"
    )]
    NotPositiveDefinite {
        /// Iteration at which it happened.
        iteration: usize,
    },
    /// The objective could not be evaluated at a finite value.
    #[error("the objective is not finite; check the data and parameters")]
    NonFinite,
    /// The dataset has no rows.
    #[error("cannot fit a model to an empty dataset")]
    EmptyData,
}

fn norm(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// Minimises F for the given penalty starting from θ = 0.
pub fn minimise(
    data: &Dataset,
    penalty: Penalty<'_>,
    options: SolverOptions,
) -> Result<Fit, SolverError> {
    minimise_from(data, penalty, options, &vec![0.0; data.dim()])
}

/// Minimises F starting from `start` (a warm start, e.g. the minimiser at a nearby λ on a
/// regularisation path). The stopping rule is the same, ‖∇F‖ ≤ tolerance, so the result is the
/// same minimiser to the solver's tolerance whatever the start; a start of the wrong length is
/// replaced by θ = 0.
pub fn minimise_from(
    data: &Dataset,
    penalty: Penalty<'_>,
    options: SolverOptions,
    start: &[f64],
) -> Result<Fit, SolverError> {
    minimise_with(
        data,
        penalty,
        options,
        start,
        None,
        Curvature::for_data(data),
    )
}

/// The function one Newton iteration minimises: F over every row of `data`, or over a warm-start
/// level's sub-sample of chunks ((1/|S|) Σ_S ℓ + (μ/2)‖θ‖² + (1/n) bᵀθ, [`crate::learn::warm_start`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Objective<'a> {
    pub(crate) data: &'a Dataset,
    pub(crate) penalty: Penalty<'a>,
    pub(crate) rows: CurvatureRows,
}

impl Objective<'_> {
    /// Value and gradient at `theta`, one pass over the rows summed over.
    pub(crate) fn evaluate(&self, theta: &[f64]) -> Evaluation {
        data_sums_over(self.data, theta, self.rows).evaluation(theta, self.penalty)
    }
}

/// [`minimise_from`] with the given choice of Hessian. Without `start_sums`, a fit with a
/// sampled Hessian starts from the warm start of [`crate::learn::warm_start`] (a deterministic
/// function of the data, the penalty and `start`); the stopping test is the same either way.
pub(crate) fn minimise_with(
    data: &Dataset,
    penalty: Penalty<'_>,
    options: SolverOptions,
    start: &[f64],
    start_sums: Option<DataSums>,
    curvature: Curvature,
) -> Result<Fit, SolverError> {
    if data.is_empty() {
        return Err(SolverError::EmptyData);
    }
    let p = data.dim();
    let valid = start.len() == p && start.iter().all(|v| v.is_finite());
    let mut theta = if valid { start.to_vec() } else { vec![0.0; p] };
    let objective = Objective {
        data,
        penalty,
        rows: CurvatureRows::All,
    };
    let (current, passes) = match start_sums {
        Some(sums) if valid && sums.rows == data.len() && sums.stride == 1 => {
            (sums.evaluation(&theta, penalty), 0)
        }
        _ => {
            if curvature.is_large() {
                theta = warm_start(data, penalty, options, theta);
            }
            (objective.evaluate(&theta), 1)
        }
    };
    newton(objective, options, theta, current, passes, curvature)
}

/// Damped Newton on `objective` from `theta`, where it evaluates to `current` (after `passes`
/// passes), until ‖∇F‖ ≤ `options.tolerance`.
pub(crate) fn newton(
    objective: Objective<'_>,
    options: SolverOptions,
    mut theta: Vec<f64>,
    mut current: Evaluation,
    mut passes: usize,
    mut curvature: Curvature,
) -> Result<Fit, SolverError> {
    let mut hessian_rows = 0;
    for iteration in 0..=options.max_iterations {
        if !current.value.is_finite() || current.gradient.iter().any(|g| !g.is_finite()) {
            return Err(SolverError::NonFinite);
        }
        let gnorm = norm(&current.gradient);
        if gnorm <= options.tolerance {
            return Ok(Fit {
                theta,
                value: current.value,
                gradient_norm: gnorm,
                iterations: iteration,
                passes,
                hessian_rows,
                sums: current.sums,
            });
        }
        if iteration == options.max_iterations {
            break;
        }
        let (direction, rows) = curvature
            .direction(objective.data, &theta, objective.penalty.mu, &current)
            .ok_or(SolverError::NotPositiveDefinite { iteration })?;
        hessian_rows += rows;
        let (step, next, tried) = line_search(objective, &theta, &direction, &current).ok_or(
            SolverError::NotConverged {
                iterations: iteration,
                gradient_norm: gnorm,
                tolerance: options.tolerance,
            },
        )?;
        passes += tried;
        curvature.observe(step, gnorm, norm(&next.gradient));
        for (t, d) in theta.iter_mut().zip(&direction) {
            *t += step * d;
        }
        current = next;
    }
    Err(SolverError::NotConverged {
        iterations: options.max_iterations,
        gradient_norm: norm(&current.gradient),
        tolerance: options.tolerance,
    })
}

/// Armijo backtracking from the full Newton step: the accepted step length, the evaluation there
/// (value and gradient only) and the number of evaluations tried; `None` when the step shrank
/// below 1e-12 without an acceptable point.
fn line_search(
    objective: Objective<'_>,
    theta: &[f64],
    direction: &[f64],
    current: &Evaluation,
) -> Option<(f64, Evaluation, usize)> {
    let gnorm = norm(&current.gradient);
    let slope = dot(&current.gradient, direction);
    let mut step = 1.0;
    let mut tried = 0;
    loop {
        let candidate: Vec<f64> = theta
            .iter()
            .zip(direction)
            .map(|(t, d)| t + step * d)
            .collect();
        let next = objective.evaluate(&candidate);
        tried += 1;
        // Armijo decrease; near the optimum F is flat to rounding, so also accept a step that
        // reduces the gradient norm when the predicted decrease is below F's resolution.
        let armijo = next.value <= current.value + 1e-4 * step * slope;
        let flat = -slope <= 1e-13 * (1.0 + current.value.abs()) && norm(&next.gradient) < gnorm;
        if armijo || flat {
            return Some((step, next, tried));
        }
        step *= 0.5;
        if step < 1e-12 {
            return None;
        }
    }
}

/// Non-private L2-regularised logistic regression: argmin (1/n)Σℓ + (λ/2)||θ||².
pub fn fit_logistic(data: &Dataset, lambda: f64) -> Result<Fit, SolverError> {
    minimise(data, Penalty::ridge(lambda), SolverOptions::default())
}

/// [`fit_logistic`] from a warm start (see [`minimise_from`]).
pub fn fit_logistic_from(data: &Dataset, lambda: f64, start: &[f64]) -> Result<Fit, SolverError> {
    minimise_from(
        data,
        Penalty::ridge(lambda),
        SolverOptions::default(),
        start,
    )
}

/// Ridge fits of one data set along a regularisation path: each fit starts at the last
/// successful minimiser (a warm start, [`fit_logistic_from`]) and takes F and ∇F there from that
/// fit's data sums instead of a pass over the rows. The result is bit-identical to
/// `fit_logistic_from(data, λ, last θ)`: the sums are those that pass would compute, at the same
/// θ. A failed fit leaves the start where it was.
pub struct RidgePath<'a> {
    data: &'a Dataset,
    start: Vec<f64>,
    sums: Option<DataSums>,
}

impl<'a> RidgePath<'a> {
    /// A path on `data` starting at θ = 0.
    pub fn new(data: &'a Dataset) -> Self {
        Self {
            data,
            start: vec![0.0; data.dim()],
            sums: None,
        }
    }

    /// The fit at `lambda` from the path's current start; on success it becomes the start.
    pub fn fit(&mut self, lambda: f64) -> Result<Fit, SolverError> {
        let fit = minimise_with(
            self.data,
            Penalty::ridge(lambda),
            SolverOptions::default(),
            &self.start,
            self.sums.clone(),
            Curvature::for_data(self.data),
        );
        if let Ok(f) = &fit {
            self.start.clone_from(&f.theta);
            self.sums = Some(f.sums.clone());
        }
        fit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::logistic::Penalty;
    use crate::util::fastmath::sigmoid;

    /// n1 rows (x=1, y=+1) and n0 rows (x=1, y=−1), one feature.
    fn two_point(n1: usize, n0: usize) -> Dataset {
        let n = n1 + n0;
        let y = (0..n).map(|i| if i < n1 { 1.0 } else { -1.0 }).collect();
        Dataset::new(vec![1.0; n], y, 1)
    }

    #[test]
    fn closed_form_without_regulariser() {
        // ∇F = −(n1/n)σ(−θ) + (n0/n)σ(θ) = 0  ⇔  σ(θ) = n1/n  ⇔  θ = log(n1/n0).
        let fit = minimise(
            &two_point(30, 10),
            Penalty::ridge(0.0),
            SolverOptions::default(),
        )
        .expect("converges");
        assert!((fit.theta[0] - 3f64.ln()).abs() < 1e-9, "{}", fit.theta[0]);
        assert!(fit.gradient_norm <= 1e-8);
    }

    #[test]
    fn closed_form_with_linear_term() {
        // With (1/n)bθ: σ(θ) = (n1 − b)/n.
        let b = [5.0];
        let pen = Penalty {
            mu: 0.0,
            linear: Some(&b),
        };
        let fit = minimise(&two_point(30, 10), pen, SolverOptions::default()).expect("converges");
        let expected = ((30.0 - 5.0) / 40.0_f64 / (1.0 - 25.0 / 40.0)).ln();
        assert!((fit.theta[0] - expected).abs() < 1e-9);
    }

    #[test]
    fn ridge_optimum_satisfies_the_one_dimensional_equation() {
        // Independent check by bisection on the scalar stationarity equation.
        let lambda = 0.3;
        let fit = fit_logistic(&two_point(25, 15), lambda).expect("converges");
        let f = |t: f64| -(25.0 / 40.0) * sigmoid(-t) + (15.0 / 40.0) * sigmoid(t) + lambda * t;
        let (mut lo, mut hi) = (-10.0, 10.0);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if f(mid) > 0.0 { hi = mid } else { lo = mid }
        }
        // ||∇F|| ≤ 1e-8 and curvature ≥ λ bound the error by 1e-8/λ.
        assert!((fit.theta[0] - 0.5 * (lo + hi)).abs() < 1e-8 / lambda);
    }

    #[test]
    fn multivariate_fit_has_zero_gradient() {
        let x = vec![
            0.5, 0.1, 0.2, -0.3, 0.4, 0.1, -0.2, -0.5, 0.3, 0.6, -0.1, 0.2, 0.0, 0.3, -0.4, -0.2,
            0.2, 0.1,
        ];
        let y = vec![1.0, -1.0, -1.0, 1.0, 1.0, -1.0];
        let data = Dataset::new(x, y, 3);
        let fit = fit_logistic(&data, 0.01).expect("converges");
        let e = crate::learn::logistic::evaluate(&data, &fit.theta, Penalty::ridge(0.01), false);
        assert!(norm(&e.gradient) <= 1e-8);
        // A nearby point is worse in every direction (strict convexity).
        for j in 0..3 {
            let mut t = fit.theta.clone();
            t[j] += 1e-3;
            assert!(
                crate::learn::logistic::evaluate(&data, &t, Penalty::ridge(0.01), false).value
                    > e.value
            );
        }
    }

    #[test]
    fn a_ridge_path_is_bit_identical_to_warm_started_fits_and_skips_their_first_pass() {
        let x: Vec<f64> = (0..40 * 3)
            .map(|k| ((k * 7919 % 997) as f64 / 498.5 - 1.0) / 2.0)
            .collect();
        let y: Vec<f64> = (0..40)
            .map(|i| if (i * 31) % 7 < 4 { 1.0 } else { -1.0 })
            .collect();
        let data = Dataset::new(x, y, 3);
        let mut path = RidgePath::new(&data);
        let mut start = vec![0.0; 3];
        for (k, lambda) in [1.0, 0.3, 0.1, 0.03, 0.01].into_iter().enumerate() {
            let reused = path.fit(lambda).expect("converges");
            let fresh = fit_logistic_from(&data, lambda, &start).expect("converges");
            let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&reused.theta), bits(&fresh.theta), "λ = {lambda}");
            assert_eq!(reused.value.to_bits(), fresh.value.to_bits());
            // The first fit starts at θ = 0 with a pass; later ones reuse the sums.
            let skipped = usize::from(k > 0);
            assert_eq!(reused.passes + skipped, fresh.passes, "λ = {lambda}");
            start = fresh.theta;
        }
    }

    #[test]
    fn separable_data_without_regulariser_is_an_error() {
        // The infimum is at θ → ∞; the gradient only decays like e^{−θ}, one unit of θ per Newton
        // step, so the default tolerance is out of reach within a short budget.
        let data = Dataset::new(vec![1.0, -1.0], vec![1.0, -1.0], 1);
        let err = minimise(
            &data,
            Penalty::ridge(0.0),
            SolverOptions {
                tolerance: 1e-8,
                max_iterations: 10,
            },
        )
        .expect_err("must fail");
        assert!(
            matches!(
                err,
                SolverError::NotConverged { .. } | SolverError::NotPositiveDefinite { .. }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn empty_data_is_an_error() {
        let data = Dataset::new(vec![], vec![], 2);
        assert_eq!(
            fit_logistic(&data, 0.1).expect_err("must fail"),
            SolverError::EmptyData
        );
    }
}
