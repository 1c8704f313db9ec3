//! The local model: the aggregator's own non-private L2 logistic regression, λ chosen by
//! stratified k-fold cross-validation over [`super::super::select::lambda_grid`] — what an
//! organisation has without anyone else, the baseline every other candidate must beat.

use super::{Combined, Combiner, Inputs, Registration, Tuning};
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "local",
    definition: "the local baseline: a non-private logistic regression on the own training rows, λ tuned by cross-validation",
    label: "local baseline (tuned, own data only)",
    report_key: Some("local_baseline_accuracy"),
    simulated: None,
    combiner: &Local,
}];

/// The own tuned logistic regression ([`Inputs::own`], fitted by the selection at the λ its
/// [`Combiner::tune`] returns).
#[derive(Debug, Clone, Copy)]
pub struct Local;

impl Combiner for Local {
    fn tune(&self, tuning: &Tuning<'_>) -> Result<Option<f64>, SelectError> {
        Ok(Some(tuning.local_lambda))
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        _rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        Ok(inputs.own.clone().into())
    }
}
