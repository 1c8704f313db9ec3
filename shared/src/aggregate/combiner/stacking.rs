//! Stacking: a combiner in prediction space. Averaging parameter vectors lets a noisy expert
//! with a large norm dominate Σλθ; stacking instead fits an L2 logistic regression on
//! z = [x, ⟨u₁, x⟩, …, ⟨u_M, x⟩] with u_m = θ_m/‖θ_m‖₂ (the norm is public, part of the
//! release; ‖z‖₂² ≤ M + 1 for ‖x‖₂ ≤ 1). Its score w_xᵀx + Σ w_m⟨u_m, x⟩ is linear in x, so the
//! result is again one weight vector θ = w_x + Σ_m w_m u_m, usable without the experts. Its λ
//! is chosen once by cross-validation on the stacked training rows. The helpers here are
//! shared with [`super::stacking_margins`].

use super::{Combined, Combiner, Inputs, Registration, Tuning};
use crate::aggregate::select::{SelectError, cv_lambda, fit_on_path};
use crate::data::dataset::{Dataset, dot};
use crate::learn::classifier::LinearClassifier;
use crate::learn::solver::SolverError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "stacking",
    definition: "a regularised logistic regression on the own features and the learners' normalised margins ⟨θ_m/‖θ_m‖, x⟩ (a noisy learner with a large norm cannot dominate)",
    label: "stacking",
    report_key: Some("stacking_accuracy"),
    simulated: None,
    combiner: &Stacking,
}];

/// Stacking on the own features and the experts' normalised margins.
#[derive(Debug, Clone, Copy)]
pub struct Stacking;

impl Combiner for Stacking {
    fn tune(&self, tuning: &Tuning<'_>) -> Result<Option<f64>, SelectError> {
        stacker_lambda(tuning, true)
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        tuned: Option<f64>,
        _rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        fit_stacker(inputs, tuned, true)
    }
}

/// The stacker's λ by cross-validation on the stacked rows (the local λ without experts).
pub(super) fn stacker_lambda(
    tuning: &Tuning<'_>,
    own_features: bool,
) -> Result<Option<f64>, SelectError> {
    if tuning.experts.is_empty() {
        return Ok(Some(tuning.local_lambda));
    }
    let u = directions(tuning.experts);
    let own = own_features.then_some(tuning.own_dim);
    let stacked_rows = stacked(tuning.data, &u, own);
    Ok(Some(cv_lambda(&stacked_rows, tuning.folds)?))
}

/// The stacker fitted on the inputs' rows at the tuned λ.
pub(super) fn fit_stacker(
    inputs: &Inputs<'_>,
    tuned: Option<f64>,
    own_features: bool,
) -> Result<Combined, SelectError> {
    let lambda = tuned.expect("a stacker is tuned before it is fitted");
    let u = directions(inputs.experts);
    let own = own_features.then_some(inputs.own_dim);
    Ok(fit_stacking(inputs.data, &u, lambda, own)?.into())
}

/// The experts' directions u_m = θ_m/‖θ_m‖₂ (zero for a zero expert).
pub(crate) fn directions(experts: &[LinearClassifier]) -> Vec<Vec<f64>> {
    experts
        .iter()
        .map(|e| {
            let norm = dot(e.coefficients(), e.coefficients()).sqrt();
            let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
            e.coefficients().iter().map(|v| v * scale).collect()
        })
        .collect()
}

/// The stacking features of every row: [x, ⟨u₁, x⟩, …] with the own features (the first
/// `own` columns of x), [⟨u₁, x⟩, …] without.
pub(crate) fn stacked(data: &Dataset, directions: &[Vec<f64>], own: Option<usize>) -> Dataset {
    let d = own.map_or(0, |k| k.min(data.dim()));
    let width = d + directions.len();
    let mut x = Vec::with_capacity(data.len() * width);
    for i in 0..data.len() {
        let row = data.row(i);
        x.extend_from_slice(&row[..d]);
        x.extend(directions.iter().map(|u| dot(u, row)));
    }
    Dataset::new(x, data.labels().to_vec(), width)
}

/// The stacker fitted on `data` as one weight vector in x-space: w_x + Σ w_m u_m (w_x on the
/// first `own` columns; none without the own features).
pub(crate) fn fit_stacking(
    data: &Dataset,
    directions: &[Vec<f64>],
    lambda: f64,
    own: Option<usize>,
) -> Result<LinearClassifier, SolverError> {
    let w = fit_on_path(&stacked(data, directions, own), lambda)?.classifier();
    let d = own.map_or(0, |k| k.min(data.dim()));
    let mut theta = vec![0.0; data.dim()];
    theta[..d].copy_from_slice(&w.coefficients()[..d]);
    for (u, wm) in directions.iter().zip(&w.coefficients()[d..]) {
        for (t, v) in theta.iter_mut().zip(u) {
            *t += wm * v;
        }
    }
    Ok(LinearClassifier::new(theta))
}
