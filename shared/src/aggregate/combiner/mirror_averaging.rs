//! Mirror averaging of the other organisations' learners (seed 001 §3.2, eq. 15–17): the
//! paper's method, always reported. Without experts it is the local model.

use super::{Combined, Combiner, Inputs};
use crate::aggregate::MirrorAveraging as Mirror;
use crate::aggregate::select::SelectError;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &dyn Combiner = &MirrorAveraging;

/// θ_agg = Σ λ_m θ_m over the others' learners, λ_m from their losses on the own rows.
#[derive(Debug, Clone, Copy)]
pub struct MirrorAveraging;

impl Combiner for MirrorAveraging {
    fn name(&self) -> &'static str {
        "mirror-averaging"
    }

    fn definition(&self) -> &'static str {
        "mirror averaging of the included learners (seed 001 eq. 17), weighted by their loss on the own training rows"
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        let mirror = Mirror::new(inputs.beta)?;
        match inputs.own_without_experts() {
            Some(own) => Ok(own),
            None => Ok(mirror.aggregate(inputs.experts, inputs.data, rng)?.into()),
        }
    }
}
