//! Mirror averaging (Minami et al. 2015, eq. 17) with the aggregator's own model as one more
//! expert: never much worse than the better of the two on the own rows (eq. 20's oracle
//! inequality).
//!
//! **Cross-fitted.** Eq. 15 weights each expert by its losses on the rows. The others' learners
//! never saw the aggregator's rows, but the own model was fitted on them, so its in-sample
//! losses flatter it and it takes weight it has not earned. Here the own expert's loss on each
//! row comes from a model fitted on the other [`CROSS_FOLDS`] − 1 folds (stratified, drawn from
//! the fold's randomness), so every expert is scored on rows it did not see; the aggregate
//! then mixes the own model fitted on all rows with the weights so earned.
//!
//! Without a tuned λ (the simulation of the paper's experiments fits its combiners untuned)
//! the own model cannot be refitted, and the own expert is scored in-sample, as the paper's
//! protocol does: those columns of `experiment paper` are unchanged.

use super::{Combined, Combiner, Inputs, Registration, Simulated, Tuning};
use crate::aggregate::MirrorAveraging;
use crate::aggregate::comparators::combine;
use crate::aggregate::select::{SelectError, complement, fit_on_path, stratified_folds};
use crate::data::dataset::Dataset;
use crate::learn::classifier::LinearClassifier;
use crate::learn::logistic::logistic_loss;
use rand::rngs::ChaCha20Rng;
use rand::seq::SliceRandom;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "mirror-averaging+own",
    definition: "the same with the local model as one more expert, weighted by its cross-fitted losses (each row scored by a fit that did not see it)",
    label: "mirror averaging + own learner",
    report_key: Some("with_own_learner_accuracy"),
    simulated: Some(Simulated {
        column: "with_own_accuracy",
        table_name: "mirror-averaging-with-own",
        purpose: 5,
    }),
    combiner: &MirrorWithOwn,
}];

/// Folds of the own model's cross-fitting.
pub const CROSS_FOLDS: usize = 5;

/// Eq. 17 over the others' learners and the local model (the last expert).
#[derive(Debug, Clone, Copy)]
pub struct MirrorWithOwn;

impl Combiner for MirrorWithOwn {
    fn tune(&self, tuning: &Tuning<'_>) -> Result<Option<f64>, SelectError> {
        Ok(Some(tuning.local_lambda))
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        tuned: Option<f64>,
        rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        let mut with_own: Vec<LinearClassifier> = inputs.experts.to_vec();
        with_own.push(inputs.own.clone());
        let mirror = MirrorAveraging::new(inputs.beta)?;
        let Some(lambda) = tuned else {
            // The paper's protocol: the own model scored on the rows it was fitted to.
            return Ok(inputs.mirror_aggregate(&with_own, rng)?.into());
        };
        crate::aggregate::validate(&with_own, inputs.data)?;
        let own_margins = cross_fitted_margins(inputs.data, lambda, rng)?;
        let mut order: Vec<usize> = (0..inputs.data.len()).collect();
        order.shuffle(rng);
        let m = inputs.experts.len() + 1;
        let mut losses = Vec::with_capacity(order.len() * m);
        for &t in &order {
            let (x, y) = (inputs.data.row(t), inputs.data.label(t));
            losses.extend(inputs.experts.iter().map(|e| logistic_loss(e.margin(x), y)));
            losses.push(logistic_loss(own_margins[t], y));
        }
        let mixing_weights = mirror.mixing_weights_from_losses(&losses, m)?;
        Ok(Combined {
            classifier: combine(&with_own, &mixing_weights),
            mixing_weights,
        })
    }
}

/// The own model's margin on each row of `data`, from a fit at `lambda` on the other folds.
/// With too few rows for [`CROSS_FOLDS`] folds, as many folds as there are row pairs (at least
/// two).
fn cross_fitted_margins(
    data: &Dataset,
    lambda: f64,
    rng: &mut ChaCha20Rng,
) -> Result<Vec<f64>, SelectError> {
    let k = CROSS_FOLDS.min(data.len() / 2).max(2);
    let mut margins = vec![0.0; data.len()];
    for held in stratified_folds(data.labels(), k, rng) {
        let rows = complement(data.len(), &held);
        let fit = fit_on_path(&data.subset(&rows), lambda)?.classifier();
        for &i in &held {
            margins[i] = fit.margin(data.row(i));
        }
    }
    Ok(margins)
}
