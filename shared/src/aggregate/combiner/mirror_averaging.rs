//! Mirror averaging of the other organisations' learners (Minami et al. 2015, §3.2, eq. 15–17): the
//! paper's method, always reported. Without experts it is the local model.

use super::{Combined, Combiner, Inputs, Registration, Simulated};
use crate::aggregate::MirrorAveraging as Mirror;
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "mirror-averaging",
    definition: "mirror averaging of the included learners (Minami et al. 2015, eq. 17), weighted by their loss on the own training rows",
    label: "mirror averaging",
    report_key: Some("mirror_averaged_accuracy"),
    simulated: Some(Simulated {
        column: "aggregate_accuracy",
        table_name: "mirror-averaging",
        purpose: 4,
    }),
    combiner: &MirrorAverage,
}];

/// θ_agg = Σ λ_m θ_m over the others' learners, λ_m from their losses on the own rows: the
/// combiner beside [`super::uniform_average::UniformAverage`] that runs [`Mirror`], the algorithm.
#[derive(Debug, Clone, Copy)]
pub struct MirrorAverage;

impl Combiner for MirrorAverage {
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
