//! Mirror averaging of the other organisations' learners (Minami et al. 2015, §3.2, eq. 15–17): the
//! paper's method, always reported. Without experts it is the local model.

use super::{Combined, Combiner, Inputs, Simulated};
use crate::aggregate::MirrorAveraging as Mirror;
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &dyn Combiner = &MirrorAverage;

/// θ_agg = Σ λ_m θ_m over the others' learners, λ_m from their losses on the own rows: the
/// combiner beside [`super::uniform_average::UniformAverage`] that runs [`Mirror`], the algorithm.
#[derive(Debug, Clone, Copy)]
pub struct MirrorAverage;

impl Combiner for MirrorAverage {
    fn name(&self) -> &'static str {
        "mirror-averaging"
    }

    fn definition(&self) -> &'static str {
        "mirror averaging of the included learners (Minami et al. 2015, eq. 17), weighted by their loss on the own training rows"
    }

    fn label(&self) -> &'static str {
        "mirror averaging"
    }

    fn report_key(&self) -> Option<&'static str> {
        Some("mirror_averaged_accuracy")
    }

    fn simulated(&self) -> Option<Simulated> {
        Some(Simulated {
            column: "aggregate_accuracy",
            table_name: "mirror-averaging",
            purpose: 4,
        })
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        // β is checked even when there is nothing to combine.
        Mirror::new(inputs.beta)?;
        match inputs.own_without_experts() {
            Some(own) => Ok(own),
            None => Ok(inputs.mirror_aggregate(inputs.experts, rng)?.into()),
        }
    }
}
