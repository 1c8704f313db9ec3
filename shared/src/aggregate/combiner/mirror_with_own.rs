//! Mirror averaging (Minami et al. 2015, eq. 17) with the aggregator's own model as one more
//! expert: never much worse than the better of the two on the own rows (eq. 20's oracle
//! inequality).

use super::{Combined, Combiner, Inputs, Simulated};
use crate::aggregate::MirrorAveraging;
use crate::aggregate::select::SelectError;
use crate::learn::classifier::LinearClassifier;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &dyn Combiner = &MirrorWithOwn;

/// Eq. 17 over the others' learners and the local model (the last expert).
#[derive(Debug, Clone, Copy)]
pub struct MirrorWithOwn;

impl Combiner for MirrorWithOwn {
    fn name(&self) -> &'static str {
        "mirror-averaging+own"
    }

    fn definition(&self) -> &'static str {
        "the same with the local model as one more expert"
    }

    fn label(&self) -> &'static str {
        "mirror averaging + own learner"
    }

    fn report_key(&self) -> Option<&'static str> {
        Some("with_own_learner_accuracy")
    }

    fn simulated(&self) -> Option<Simulated> {
        Some(Simulated {
            column: "with_own_accuracy",
            table_name: "mirror-averaging-with-own",
            purpose: 5,
        })
    }

    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        let mut with_own: Vec<LinearClassifier> = inputs.experts.to_vec();
        with_own.push(inputs.own.clone());
        let mirror = MirrorAveraging::new(inputs.beta)?;
        Ok(mirror.aggregate(&with_own, inputs.data, rng)?.into())
    }
}
