//! The uniform average (1/M) Σ θ_m of the other organisations' learners: a comparator, reported
//! but never chosen.

use super::{Combined, Combiner, Inputs, Simulated};
use crate::aggregate::select::SelectError;
use crate::aggregate::uniform_average;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &dyn Combiner = &UniformAverage;

/// (1/M) Σ θ_m; without experts, the local model.
#[derive(Debug, Clone, Copy)]
pub struct UniformAverage;

impl Combiner for UniformAverage {
    fn name(&self) -> &'static str {
        "uniform-average"
    }

    fn definition(&self) -> &'static str {
        "the learners' parameters averaged with equal weights"
    }

    fn label(&self) -> &'static str {
        "uniform average"
    }

    fn report_key(&self) -> Option<&'static str> {
        Some("uniform_average_accuracy")
    }

    fn simulated(&self) -> Option<Simulated> {
        Some(Simulated {
            column: "uniform_average_accuracy",
            table_name: "uniform-average",
            purpose: 7,
        })
    }

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
