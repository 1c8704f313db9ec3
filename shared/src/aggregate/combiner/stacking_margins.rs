//! Stacking on the experts' normalised margins only (θ = Σ_m w_m u_m, no own features): fewer
//! parameters, better when the experts carry most of the signal and the own rows are few. The
//! helpers are [`super::stacking`]'s.

use super::stacking::{fit_stacker, stacker_lambda};
use super::{Combined, Combiner, Inputs, Registration, Tuning};
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "stacking-margins",
    definition: "the same on the learners' normalised margins only, without the own features (fewer parameters: better when the learners carry most of the signal and the own rows are few)",
    label: "stacking (margins)",
    report_key: Some("stacking_margins_accuracy"),
    simulated: None,
    combiner: &StackingMargins,
}];

/// Stacking on the experts' normalised margins only.
#[derive(Debug, Clone, Copy)]
pub struct StackingMargins;

impl Combiner for StackingMargins {
    fn tune(&self, tuning: &Tuning<'_>) -> Result<Option<f64>, SelectError> {
        stacker_lambda(tuning, false)
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        tuned: Option<f64>,
        _rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        fit_stacker(inputs, tuned, false)
    }
}
