//! The best single learner: the other organisation's learner with the smallest empirical
//! logistic risk on the own rows it is fitted on (chosen without the test rows). A comparator,
//! reported but never chosen.

use super::{Combined, Combiner, Inputs, Registration, Simulated};
use crate::aggregate::{best_single, best_single_from_table};
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "best-single",
    definition: "the one organisation's learner with the smallest logistic loss on the own training rows",
    label: "best single learner",
    report_key: Some("best_single_accuracy"),
    simulated: Some(Simulated {
        column: "best_single_accuracy",
        table_name: "best-single",
        purpose: 8,
    }),
    combiner: &BestSingle,
}];

/// argmin_m Σ_i ℓ(⟨θ_m, x_i⟩, y_i) (first on ties); without experts, the local model.
#[derive(Debug, Clone, Copy)]
pub struct BestSingle;

impl Combiner for BestSingle {
    fn selectable(&self) -> bool {
        false
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        _rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        if let Some(own) = inputs.own_without_experts() {
            return Ok(own);
        }
        let best = match inputs.losses {
            Some(table) => best_single_from_table(table, inputs.experts.len())?,
            None => best_single(inputs.experts, inputs.data)?,
        };
        Ok(inputs.experts[best].clone().into())
    }
}
