//! [`LearnerSpec`]: what to train — a mechanism, its privacy parameters, the L2 regulariser and
//! the mechanism's options. The one type used by the node (what a client asks for, the identity
//! of a stored release), the aggregator (what it requests and checks) and the lab.

use super::{Lambda, Mechanism, MechanismError, MechanismKind, Options};
use serde::{Deserialize, Serialize};

/// What to train. Serialised with the field names nodes have always stored (`mechanism`,
/// `lambda`), so specs recorded by earlier versions keep their identity; a fixed λ is stored as
/// the number it always was and `auto` as the string `"auto"`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnerSpec {
    /// The mechanism.
    #[serde(rename = "mechanism")]
    pub kind: MechanismKind,
    /// ε > 0.
    pub epsilon: f64,
    /// δ ∈ [0, 1); 0 selects a pure ε-DP variant where there is one.
    pub delta: f64,
    /// λ > 0 of the objective's L2 regulariser (λ/2)‖θ‖², or `auto` (a function of n, d, ε and
    /// the mechanism only; see [`super::lambda`]).
    #[serde(rename = "lambda")]
    pub l2: Lambda,
    /// Mechanism options by name (absent in specs stored before options existed).
    #[serde(default)]
    pub options: Options,
}

impl LearnerSpec {
    /// A spec with default options.
    pub fn new(kind: MechanismKind, epsilon: f64, delta: f64, l2: impl Into<Lambda>) -> Self {
        Self {
            kind,
            epsilon,
            delta,
            l2: l2.into(),
            options: Options::new(),
        }
    }

    /// Builds the mechanism (parameters are validated here, before any data is touched).
    pub fn build(&self) -> Result<Box<dyn Mechanism>, MechanismError> {
        self.kind
            .build_with(self.epsilon, self.delta, self.l2, &self.options)
    }

    /// One line for people, e.g. `dp-sgd ε = 1 δ = 0.00001 λ = 0.01 steps = 500` (or `λ = auto`).
    pub fn describe(&self) -> String {
        let options: String = self
            .options
            .iter()
            .map(|(k, v)| format!(" {k} = {v}"))
            .collect();
        format!(
            "{} ε = {} δ = {} λ = {}{options}",
            self.kind.name(),
            self.epsilon,
            self.delta,
            self.l2
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_specs_stored_by_earlier_versions() {
        let old =
            r#"{"mechanism":"objective-perturbation","epsilon":1.0,"delta":0.0,"lambda":0.01}"#;
        let s: LearnerSpec = serde_json::from_str(old).expect("valid");
        assert_eq!(
            s,
            LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, 0.01)
        );
        let json = serde_json::to_string(&s).expect("json");
        assert!(
            json.contains("\"mechanism\":\"objective-perturbation\""),
            "{json}"
        );
        assert!(json.contains("\"lambda\":0.01"), "{json}");
        assert!(serde_json::from_str::<LearnerSpec>(&old.replace("objective", "x")).is_err());
        assert_eq!(s.describe(), "objective-perturbation ε = 1 δ = 0 λ = 0.01");
    }

    #[test]
    fn auto_is_stored_as_a_string_and_differs_from_every_number() {
        let auto = LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, Lambda::Auto);
        let json = serde_json::to_string(&auto).expect("json");
        assert!(json.contains("\"lambda\":\"auto\""), "{json}");
        let back: LearnerSpec = serde_json::from_str(&json).expect("valid");
        assert_eq!(back, auto);
        assert_ne!(
            auto,
            LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, 0.01)
        );
        assert_eq!(
            auto.describe(),
            "objective-perturbation ε = 1 δ = 0 λ = auto"
        );
        assert!(auto.build().is_ok());
    }
}
