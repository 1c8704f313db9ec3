//! The uniform average (1/M) Σ θ_m of the other organisations' learners: a comparator, reported
//! but never chosen.

use super::{Combined, Combiner, Inputs, Registration, Simulated};
use crate::aggregate::select::SelectError;
use crate::aggregate::uniform_average;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "uniform-average",
    definition: "the learners' parameters averaged with equal weights",
    label: "uniform average",
    report_key: Some("uniform_average_accuracy"),
    simulated: Some(Simulated {
        column: "uniform_average_accuracy",
        table_name: "uniform-average",
        purpose: 7,
    }),
    combiner: &UniformAverage,
}];

/// (1/M) Σ θ_m; without experts, the local model.
#[derive(Debug, Clone, Copy)]
pub struct UniformAverage;

impl Combiner for UniformAverage {
    fn selectable(&self) -> bool {
        false
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        _rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        Ok(inputs
            .own_without_experts()
            .unwrap_or_else(|| uniform_average(inputs.experts).into()))
    }
}
