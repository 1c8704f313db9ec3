//! The final model: what the aggregator uses, chosen on its own training rows so that joining
//! never leaves it worse off than what it knows alone.
//!
//! **Candidates**, each fitted on the aggregator's own training rows:
//! - [`Candidate::Local`]: non-private L2 logistic regression, λ chosen by stratified k-fold
//!   cross-validation over [`lambda_grid`] (held-out logistic loss): the C range of
//!   scikit-learn's `LogisticRegressionCV` translated to the rows' scale, n and d. This is the honest baseline:
//!   what an organisation has without anyone else.
//! - [`Candidate::MirrorAveraging`]: eq. 17 over the other organisations' learners (Minami et al. 2015;
//!   always reported, it is the paper's method).
//! - [`Candidate::MirrorWithOwn`]: eq. 17 with the local model as one more expert, weighted
//!   by its cross-fitted losses (its loss on each row from a fit that did not see the row).
//! - [`Candidate::Stacking`]: a combiner in prediction space. Averaging parameter vectors lets a
//!   noisy expert with a large norm dominate Σλθ; stacking instead fits an L2 logistic regression
//!   on z = [x, ⟨u₁, x⟩, …, ⟨u_M, x⟩] with u_m = θ_m/‖θ_m‖₂ (the norm is public, part of the
//!   release; ‖z‖₂² ≤ M + 1 for ‖x‖₂ ≤ 1). Its score w_xᵀx + Σ w_m⟨u_m, x⟩ is linear in x, so the
//!   result is again one weight vector θ = w_x + Σ_m w_m u_m, usable without the experts.
//! - [`Candidate::StackingMargins`]: the same on the margins only (θ = Σ_m w_m u_m): fewer
//!   parameters, better when the experts carry most of the signal and the own rows are few.
//!
//! **Selection.** Repeated stratified k-fold cross-validation on the training rows:
//! in each fold every candidate is rebuilt on the other folds and scored row by row on the
//! held-out fold, paired with the local model, by accuracy and by held-out logistic loss after
//! a one-scale calibration fitted on the fold's fit rows ([`super::calibrate`]: accuracy
//! ignores a model's scale, raw log-loss would punish mirror averaging for its experts' norms).
//! Each row's paired differences are averaged over the repeats, so standard errors are over the
//! n rows — the independent units — not over the n × repeats correlated scores, which
//! understated them by up to √repeats. A candidate other than local is *eligible* when its
//! mean accuracy gain is positive and exceeds [`SelectionConfig::z_accuracy`] standard errors
//! **and** its calibrated log-loss reduction exceeds [`SelectionConfig::z_loss`] standard errors
//! (the log-loss sees every row's margin, not only the rows the two models disagree on, so it
//! separates a real gain from a lucky row or two). Among the eligible the largest accuracy gain
//! wins; with none the final model is the local one. The λ of the local model and of the
//! stackers are chosen once on all training rows and held fixed inside the folds (a small
//! optimism shared by them). Test rows are never passed here.
//!
//! **The agreement gate.** Those thresholds apply when the others' learners agree
//! ([`agreement`] ≥ [`SelectionConfig::min_agreement`], 0.97: the average of their directions
//! is within about 10° of what they share); otherwise both rise to
//! [`SelectionConfig::z_disagree`] (3). Why (docs/experiments/utility.md): on 20 to
//! 100 own rows cross-validation has little power, and no threshold on it alone (0 to 3 s.e.,
//! Bonferroni, nested λ, fewer candidates) kept every cell of `experiment utility` at or above
//! local with the clinic's and synthetic data's gains (best: −0.37 point). The learners'
//! agreement, read from the releases alone, separates the two: 0.99+ in the clinic at ε ≥ 1 and
//! on the synthetic data at ε = 5, at most 0.96 on Diabetes, Breast Cancer and 20 own rows (30
//! trials per cell). With
//! the gate every cell is ≥ 0 on seeds 1, 2 and 3 and the planted noise case keeps local in 200
//! of 200 seeds. The threshold was read off those scenarios; its price is that one excellent
//! learner among disagreeing ones needs strong evidence (`select/tests.rs`), and that the clinic
//! at ε = 0.5 (agreement about 0.96) gains 0.6 point instead of 3.5.
//!
//! **Privacy.** The final model is a function of released learners and the aggregator's own
//! rows, so it keeps every other organisation's guarantee with respect to that organisation's
//! records (Minami et al. 2015, Proposition 4.1, post-processing). It is *not* differentially private with
//! respect to the aggregator's own records, which it uses without noise: it must not be
//! published as if it were.

use super::AggregateError;
pub use super::agreement::agreement;
use super::calibrate::fit_scale;
pub use super::combiner::Candidate;
use tuning::tuning_folds;
pub use tuning::{
    C_RANGE, GRID_PER_DECADE, LAMBDA_MAX, lambda_grid, stratified_folds, tuned_logistic,
};
pub(crate) use tuning::{complement, cv_lambda, fit_on_path};

mod tuning;
use super::combiner::{Combined, Inputs, Tuning};
use crate::data::dataset::Dataset;
use crate::learn::classifier::LinearClassifier;
use crate::learn::logistic::logistic_loss;
use crate::learn::solver::SolverError;
use crate::util::seed::derived_rng;
use serde::Serialize;

/// How the final model is chosen.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectionConfig {
    /// Folds of each cross-validation (at least 2).
    pub folds: usize,
    /// Repeats of the selection's cross-validation, each with its own fold assignment.
    pub repeats: usize,
    /// A candidate's cross-validated accuracy gain over local must exceed this many of its
    /// standard errors.
    pub z_accuracy: f64,
    /// Its reduction of the calibrated held-out log-loss must exceed this many of its standard
    /// errors.
    pub z_loss: f64,
    /// Below this [`agreement`] of the others' learners, both thresholds become
    /// [`Self::z_disagree`].
    pub min_agreement: f64,
    /// The accuracy and log-loss thresholds when the others' learners do not agree.
    pub z_disagree: f64,
    /// Mirror-averaging temperature β.
    pub beta: f64,
    /// Seed of the folds and visiting orders (the aggregator's own randomness).
    pub seed: u64,
    /// When the own rows hold two maps side by side (the own model's, then the learners'
    /// agreed map, [`crate::data::agreed_map`]): the number of leading columns the local model
    /// and the stacker's own features read. `None`: every column (one map for all).
    pub own_columns: Option<usize>,
}

impl Default for SelectionConfig {
    fn default() -> Self {
        Self {
            folds: 5,
            repeats: 3,
            z_accuracy: 0.75,
            z_loss: 1.0,
            min_agreement: 0.97,
            z_disagree: 3.0,
            beta: 3.0,
            seed: 1,
            own_columns: None,
        }
    }
}

impl SelectionConfig {
    /// The rule for learners of agreement `alpha`: this one, or with both thresholds raised to
    /// [`Self::z_disagree`] (never lowered) when `alpha` < [`Self::min_agreement`].
    pub fn for_agreement(&self, alpha: f64) -> Self {
        if alpha >= self.min_agreement {
            return *self;
        }
        Self {
            z_accuracy: self.z_accuracy.max(self.z_disagree),
            z_loss: self.z_loss.max(self.z_disagree),
            ..*self
        }
    }
}

/// Why no final model could be built.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// Too few training rows for the folds.
    #[error("{rows} own training row(s) are too few for {folds}-fold cross-validation")]
    TooFewRows {
        /// Training rows.
        rows: usize,
        /// Folds asked for.
        folds: usize,
    },
    /// A logistic regression failed.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// Mirror averaging failed.
    #[error(transparent)]
    Aggregate(#[from] AggregateError),
}

/// One candidate's cross-validated standing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CvEstimate {
    /// The candidate.
    pub candidate: Candidate,
    /// Mean held-out accuracy over all folds and repeats.
    pub accuracy: f64,
    /// Mean paired gain over local (accuracy points as a fraction).
    pub gain: f64,
    /// Standard error of that gain.
    pub gain_se: f64,
    /// Mean paired reduction of the held-out logistic loss against local, each model's
    /// margins calibrated by one scale fitted on its fold's fit rows
    /// ([`super::calibrate`]; nats per row; positive: the candidate ranks rows better).
    pub loss_gain: f64,
    /// Standard error of that reduction.
    pub loss_gain_se: f64,
}

/// The chosen model, every candidate fitted on all training rows, and the evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalModel {
    /// The candidate chosen.
    pub chosen: Candidate,
    /// Each candidate fitted on all training rows, in [`Candidate::all`] order.
    pub candidates: Vec<(Candidate, LinearClassifier)>,
    /// The comparators ([`Candidate::comparators`]: never chosen, reported) fitted on all
    /// training rows.
    pub comparators: Vec<(Candidate, LinearClassifier)>,
    /// Each candidate's cross-validated standing, same order.
    pub cv: Vec<CvEstimate>,
    /// The experts' mirror-averaging weights λ_m on all training rows (eq. 16).
    pub mixing_weights: Vec<f64>,
    /// The same with the local model as the last expert.
    pub mixing_weights_with_own: Vec<f64>,
    /// λ of the local model.
    pub local_lambda: f64,
    /// λ of the stacker.
    pub stacking_lambda: f64,
    /// λ of the margins-only stacker.
    pub margins_lambda: f64,
    /// The rule it was chosen by (thresholds raised when the learners do not agree).
    pub config: SelectionConfig,
    /// The others' learners' [`agreement`].
    pub agreement: f64,
    /// Own training rows the selection saw.
    pub rows: usize,
    /// Own training rows its cross-validated evidence was read on (fewer than `rows` when the
    /// labels of the others chose the learners' subspace).
    pub evidence_rows: usize,
}

impl FinalModel {
    /// The chosen candidate's classifier.
    pub fn classifier(&self) -> &LinearClassifier {
        self.model(self.chosen)
    }

    /// A candidate's (or a comparator's) classifier.
    pub fn model(&self, c: Candidate) -> &LinearClassifier {
        &self
            .candidates
            .iter()
            .chain(&self.comparators)
            .find(|(k, _)| *k == c)
            .expect("every registered combiner is fitted")
            .1
    }
}

/// The columns of `data` the local model reads ([`SelectionConfig::own_columns`]).
fn own_rows<'a>(data: &'a Dataset, config: &SelectionConfig) -> std::borrow::Cow<'a, Dataset> {
    match config.own_columns {
        Some(k) if k < data.dim() => std::borrow::Cow::Owned(data.leading_columns(k)),
        _ => std::borrow::Cow::Borrowed(data),
    }
}

/// The number of leading columns the local model reads.
fn own_dim(data: &Dataset, config: &SelectionConfig) -> usize {
    config.own_columns.map_or(data.dim(), |k| k.min(data.dim()))
}

/// The local model at `lambda` on the own columns of `data`, with zero weights on the others.
fn fit_local(
    data: &Dataset,
    lambda: f64,
    config: &SelectionConfig,
) -> Result<LinearClassifier, SolverError> {
    let own = fit_on_path(&own_rows(data, config), lambda)?.classifier();
    if own.dim() == data.dim() {
        return Ok(own);
    }
    let mut theta = own.into_coefficients();
    theta.resize(data.dim(), 0.0);
    Ok(LinearClassifier::new(theta))
}

/// Every candidate fitted on `data` at its tuned value (in [`Candidate::all`] order, sharing
/// one visiting-order stream derived from `purpose`), with their mixing weights.
fn fit_all(
    experts: &[LinearClassifier],
    data: &Dataset,
    tuned: &[(Candidate, Option<f64>)],
    config: &SelectionConfig,
    purpose: &[u64],
) -> Result<Vec<(Candidate, Combined)>, SelectError> {
    let local_lambda = tuned[0].1.expect("the local model's λ is tuned");
    let own = fit_local(data, local_lambda, config)?;
    let inputs = Inputs {
        own_dim: own_dim(data, config),
        ..Inputs::new(experts, data, &own, config.beta)
    };
    let mut rng = derived_rng(config.seed, purpose);
    tuned
        .iter()
        .map(|&(c, value)| Ok((c, c.combiner().fit(&inputs, value, &mut rng)?)))
        .collect()
}

/// The comparators fitted on `data` (untuned; they draw no randomness of the selection's).
fn fit_comparators(
    experts: &[LinearClassifier],
    data: &Dataset,
    own: &LinearClassifier,
    config: &SelectionConfig,
) -> Result<Vec<(Candidate, LinearClassifier)>, SelectError> {
    let inputs = Inputs {
        own_dim: own_dim(data, config),
        ..Inputs::new(experts, data, own, config.beta)
    };
    let mut rng = derived_rng(config.seed, &[14]);
    Candidate::comparators()
        .map(|c| Ok((c, c.combiner().fit(&inputs, None, &mut rng)?.classifier)))
        .collect()
}

/// 1 if `model` classifies row `i` of `data` correctly (a zero margin predicts +1, as in
/// [`LinearClassifier::accuracy`]), else 0.
fn right(model: &LinearClassifier, data: &Dataset, i: usize) -> f64 {
    let predicted = if model.margin(data.row(i)) >= 0.0 {
        1.0
    } else {
        -1.0
    };
    if predicted == data.label(i) { 1.0 } else { 0.0 }
}

/// Mean and standard error of `values`.
fn mean_se(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

/// Each candidate's cross-validated standing: repeated stratified folds of `train`, every
/// candidate rebuilt on the other folds at its tuned value and scored row by row on the
/// held-out fold, paired with the local model (the first candidate).
///
/// Each row is held out once per repeat; its paired difference is averaged over the repeats
/// first, so the standard error is over the n rows — the independent units — and not over
/// the n × repeats scores, which are correlated (the same row, nearly the same fits) and
/// would understate it by up to √repeats.
fn cross_validate(
    experts: &[LinearClassifier],
    train: &Dataset,
    tuned: &[(Candidate, Option<f64>)],
    config: &SelectionConfig,
    scored: Option<&[bool]>,
) -> Result<Vec<CvEstimate>, SelectError> {
    let k = config.folds.max(2);
    let repeats = config.repeats.max(1);
    // hits[c][r]: in how many repeats candidate c got training row r right; loss[c][r]: its
    // held-out logistic loss on row r summed over the repeats.
    let mut hits: Vec<Vec<f64>> = vec![vec![0.0; train.len()]; tuned.len()];
    let mut loss: Vec<Vec<f64>> = vec![vec![0.0; train.len()]; tuned.len()];
    for repeat in 0..repeats as u64 {
        let folds = stratified_folds(
            train.labels(),
            k,
            &mut derived_rng(config.seed, &[11, repeat]),
        );
        for (f, held) in folds.iter().enumerate() {
            let fit_rows = train.subset(&complement(train.len(), held));
            let fitted = fit_all(experts, &fit_rows, tuned, config, &[12, repeat, f as u64])?;
            for (c, (_, model)) in fitted.iter().enumerate() {
                let theta = &model.classifier;
                let signed: Vec<f64> = (0..fit_rows.len())
                    .map(|i| fit_rows.label(i) * theta.margin(fit_rows.row(i)))
                    .collect();
                let scale = fit_scale(&signed);
                for &i in held {
                    hits[c][i] += right(theta, train, i);
                    let margin = scale * theta.margin(train.row(i));
                    loss[c][i] += logistic_loss(margin, train.label(i));
                }
            }
        }
    }
    let r = repeats as f64;
    let counted = |i: usize| scored.is_none_or(|s| s[i]);
    let paired = |a: &[f64], b: &[f64]| {
        let diffs: Vec<f64> = (0..a.len())
            .filter(|&i| counted(i))
            .map(|i| (a[i] - b[i]) / r)
            .collect();
        mean_se(&diffs)
    };
    let scored_rows = (0..train.len()).filter(|&i| counted(i)).count();
    Ok(tuned
        .iter()
        .enumerate()
        .map(|(c, &(candidate, _))| {
            let (gain, gain_se) = paired(&hits[c], &hits[0]);
            let (loss_gain, loss_gain_se) = paired(&loss[0], &loss[c]);
            CvEstimate {
                candidate,
                accuracy: (0..train.len())
                    .filter(|&i| counted(i))
                    .map(|i| hits[c][i])
                    .sum::<f64>()
                    / (r * scored_rows as f64),
                gain,
                gain_se,
                loss_gain,
                loss_gain_se,
            }
        })
        .collect())
}

/// The selection rule (see the module docs): the candidates whose cross-validated accuracy
/// gain over local is positive and clears `z_accuracy` standard errors, and whose calibrated
/// log-loss reduction clears `z_loss` of its own; among them the largest accuracy gain; local
/// when there is none.
pub fn select(cv: &[CvEstimate], config: &SelectionConfig) -> Candidate {
    cv.iter()
        .filter(|e| {
            e.candidate != Candidate::Local
                && e.gain > 0.0
                && e.gain - config.z_accuracy * e.gain_se > 0.0
                && e.loss_gain - config.z_loss * e.loss_gain_se > 0.0
        })
        .max_by(|a, b| a.gain.total_cmp(&b.gain))
        .map_or(Candidate::Local, |e| e.candidate)
}

/// The seed-path purpose of the fits on all training rows (one visiting-order stream shared
/// by the candidates in registry order).
const FINAL_FITS: u64 = 13;

/// The selection's fold count, if `train` has at least two rows per fold.
fn enough_rows(train: &Dataset, config: &SelectionConfig) -> Result<usize, SelectError> {
    let k = config.folds.max(2);
    if train.len() < 2 * k {
        return Err(SelectError::TooFewRows {
            rows: train.len(),
            folds: k,
        });
    }
    Ok(k)
}

/// The local model and mirror averaging exactly as [`choose_final`] fits them on all of
/// `train` (same λ, same visiting order), without its cross-validation or the other
/// candidates: for experiments that only compare those two.
pub fn local_and_mirror(
    experts: &[LinearClassifier],
    train: &Dataset,
    config: &SelectionConfig,
) -> Result<(LinearClassifier, LinearClassifier), SelectError> {
    let k = enough_rows(train, config)?;
    let lambda = cv_lambda(
        &own_rows(train, config),
        &tuning_folds(train, k, config.seed),
    )?;
    let own = fit_local(train, lambda, config)?;
    let inputs = Inputs {
        own_dim: own_dim(train, config),
        ..Inputs::new(experts, train, &own, config.beta)
    };
    // `fit_all`'s stream: the local model draws nothing from it, mirror averaging comes next.
    let mut rng = derived_rng(config.seed, &[FINAL_FITS]);
    let mirror = Candidate::MirrorAveraging
        .combiner()
        .fit(&inputs, None, &mut rng)?
        .classifier;
    Ok((own, mirror))
}

/// Builds every candidate on `train` and chooses the final model (see the module docs).
pub fn choose_final(
    experts: &[LinearClassifier],
    train: &Dataset,
    config: &SelectionConfig,
) -> Result<FinalModel, SelectError> {
    choose_final_scored(experts, train, config, None)
}

/// [`choose_final`] with the cross-validated evidence read only on the rows `scored` marks
/// (every row is still fitted on and held out): when the labels of the other rows chose the
/// learners' subspace ([`crate::data::agreed_map::derive_split`]), their held-out scores would
/// flatter every candidate built on the learners.
///
/// # Panics
/// If `scored` is given with a length other than `train`'s (a programming error).
pub fn choose_final_scored(
    experts: &[LinearClassifier],
    train: &Dataset,
    config: &SelectionConfig,
    scored: Option<&[bool]>,
) -> Result<FinalModel, SelectError> {
    if let Some(s) = scored {
        assert_eq!(s.len(), train.len(), "one mark per training row");
    }
    let k = enough_rows(train, config)?;
    let folds = tuning_folds(train, k, config.seed);
    let tuning = Tuning {
        experts,
        data: train,
        folds: &folds,
        local_lambda: cv_lambda(&own_rows(train, config), &folds)?,
        own_dim: own_dim(train, config),
    };
    let tuned: Vec<(Candidate, Option<f64>)> = Candidate::all()
        .map(|c| Ok((c, c.combiner().tune(&tuning)?)))
        .collect::<Result<_, SelectError>>()?;
    let cv = cross_validate(experts, train, &tuned, config, scored)?;
    let alpha = agreement(experts);
    // Learners confined to a subspace chosen from the own rows agree whatever they carry: their
    // agreement is no evidence there, and the strict thresholds apply
    // (docs/experiments/wide-tables.md).
    let rule = if config.own_columns.is_some() {
        config.for_agreement(f64::NEG_INFINITY)
    } else {
        config.for_agreement(alpha)
    };
    let chosen = select(&cv, &rule);
    let all = fit_all(experts, train, &tuned, config, &[FINAL_FITS])?;
    let comparators = fit_comparators(experts, train, &all[0].1.classifier, config)?;
    let weights = |c: Candidate| {
        all.iter()
            .find(|(k, _)| *k == c)
            .map_or_else(Vec::new, |(_, m)| m.mixing_weights.clone())
    };
    let lambda = |c: Candidate| tuned.iter().find(|(k, _)| *k == c).and_then(|(_, v)| *v);
    Ok(FinalModel {
        chosen,
        mixing_weights: weights(Candidate::MirrorAveraging),
        mixing_weights_with_own: weights(Candidate::MirrorWithOwn),
        local_lambda: tuning.local_lambda,
        stacking_lambda: lambda(Candidate::Stacking).unwrap_or(tuning.local_lambda),
        margins_lambda: lambda(Candidate::StackingMargins).unwrap_or(tuning.local_lambda),
        candidates: all.into_iter().map(|(c, m)| (c, m.classifier)).collect(),
        comparators,
        cv,
        config: rule,
        agreement: alpha,
        rows: train.len(),
        evidence_rows: scored.map_or(train.len(), |s| s.iter().filter(|&&b| b).count()),
    })
}

/// The paired difference of accuracies of `a` and `b` on `test` rows, as (mean, low, high) with
/// a 95 % normal interval of the per-row differences d_i ∈ {−1, 0, 1}.
pub fn paired_gain(a: &LinearClassifier, b: &LinearClassifier, test: &Dataset) -> (f64, f64, f64) {
    let diffs: Vec<f64> = (0..test.len())
        .map(|i| right(a, test, i) - right(b, test, i))
        .collect();
    let (mean, se) = mean_se(&diffs);
    (mean, mean - 1.96 * se, mean + 1.96 * se)
}

#[cfg(test)]
mod tests;
