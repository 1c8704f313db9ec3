//! A test-only mechanism that shows what adding a mechanism takes: this file and one line in
//! the registry (`mechanisms!` in [`super`]), nothing else. It releases the constant
//! θ = (scale, 0, …, 0) whatever the data: a release independent of the records is ε-DP for
//! every ε ≥ 0 (the output distributions on neighbouring datasets are equal), so it states the
//! ε and δ it was asked for.

use super::kind::{OptionSpec, OptionType, Registration};
use super::lambda::{AutoRule, PAPER_MAP_LAMBDA};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::Dataset;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use std::collections::BTreeMap;

/// Its name.
pub const NAME: &str = "example-constant";

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "tests only: a constant θ, independent of the data (so DP at any ε)",
    options: &[OptionSpec {
        name: "scale",
        default: 1.0,
        range: OptionType::POSITIVE,
        help: "the first coefficient of θ",
    }],
    proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
    node_replacement: None,
    auto_lambda: AutoRule::Fixed(PAPER_MAP_LAMBDA),
    neighbours: crate::privacy::guarantee::NeighbourRelation::ReplaceOne,
    doc: None,
    build: |r| {
        let scale = r.real("scale");
        if !OptionType::POSITIVE.contains(scale) {
            return Err(MechanismError::InvalidParameter {
                name: "scale",
                value: scale,
                requirement: "must be > 0",
            });
        }
        Ok(Box::new(Constant {
            epsilon: r.epsilon,
            delta: r.delta,
            scale,
        }))
    },
}];

/// The mechanism: θ = (scale, 0, …, 0).
struct Constant {
    epsilon: f64,
    delta: f64,
    scale: f64,
}

impl Mechanism for Constant {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "a data-independent release (tests only)"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, self.delta)
    }

    fn sample(
        &self,
        data: &Dataset,
        _noise: &mut NoiseSource,
        _stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let mut coefficients = vec![0.0; data.dim()];
        if let Some(first) = coefficients.first_mut() {
            *first = self.scale;
        }
        Ok(Sample {
            coefficients,
            parameters: BTreeMap::from([("scale".to_owned(), self.scale)]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::mechanism::{LearnerSpec, MechanismKind};

    #[test]
    fn a_registered_mechanism_is_named_built_and_released_like_the_others() {
        let kind = MechanismKind::from_name(NAME).expect("registered by its one line");
        assert!(MechanismKind::names().contains(NAME));
        assert!(kind.offered_by_nodes() && kind.is_proven());
        let mut spec = LearnerSpec::new(kind, 1.0, 0.0, 0.01);
        spec.options.insert("scale".into(), 2.0);
        assert!(spec.check_ranges().is_ok());
        let data = Dataset::new(vec![0.5, 0.0, 0.0, 0.5], vec![1.0, -1.0], 2);
        let release = spec
            .build()
            .expect("valid")
            .release(&data, &mut NoiseSource::seeded(1))
            .expect("released");
        assert_eq!(release.classifier.coefficients(), &[2.0, 0.0]);
        assert_eq!(release.metadata.mechanism, NAME);
        spec.options.insert("scale".into(), -1.0);
        assert!(spec.build().is_err());
        spec.options.insert("steps".into(), 1.0);
        assert!(spec.build().err().expect("unknown").to_string().contains("scale"));
        let json = serde_json::to_string(&LearnerSpec::new(kind, 1.0, 0.0, 0.01)).expect("json");
        let back: LearnerSpec = serde_json::from_str(&json).expect("valid");
        assert_eq!(back.kind, kind);
    }
}
