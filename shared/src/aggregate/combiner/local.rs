//! The local model: the aggregator's own non-private L2 logistic regression, λ chosen by
//! stratified k-fold cross-validation over [`super::super::select::lambda_grid`] — what an
//! organisation has without anyone else, the baseline every other candidate must beat.

use super::{Combined, Combiner, Inputs, Tuning};
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &dyn Combiner = &Local;

/// The own tuned logistic regression ([`Inputs::own`], fitted by the selection at the λ its
/// [`Combiner::tune`] returns).
#[derive(Debug, Clone, Copy)]
pub struct Local;

impl Combiner for Local {
    fn name(&self) -> &'static str {
        "local"
    }

    fn definition(&self) -> &'static str {
        "the local baseline: a non-private logistic regression on the own training rows, λ tuned by cross-validation"
    }

    fn label(&self) -> &'static str {
        "local baseline (tuned, own data only)"
    }

    fn report_key(&self) -> Option<&'static str> {
        Some("local_baseline_accuracy")
    }

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
