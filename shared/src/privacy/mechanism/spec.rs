//! [`LearnerSpec`]: what to train — a mechanism, its privacy parameters, the L2 regulariser and
//! the mechanism's options. The one type used by the node (what a client asks for, the identity
//! of a stored release), the aggregator (what it requests and checks) and the lab.

use super::{Lambda, Mechanism, MechanismError, MechanismKind, Options};
use crate::data::agreed_map::AgreedMap;
use crate::util::num::Num;
use serde::{Deserialize, Serialize};

/// The smallest ε a node accepts (see [`LearnerSpec::check_ranges`]).
pub const EPSILON_MIN: f64 = 1e-6;
/// The largest ε a node accepts.
pub const EPSILON_MAX: f64 = 100.0;
/// The smallest fixed λ a node accepts.
pub const LAMBDA_MIN: f64 = 1e-9;
/// The largest fixed λ a node accepts.
pub const LAMBDA_MAX: f64 = 1e3;

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
    /// The agreed map the rows go through before training (absent: the schema's own map; left
    /// out of the stored form then, so specs without one keep their identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub map: Option<Box<AgreedMap>>,
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
            map: None,
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
            .map(|(k, v)| format!(" {k} = {}", Num(*v)))
            .collect();
        let map = match self.map.as_deref().and_then(AgreedMap::components) {
            Some(k) => format!(" map = agreed ({k} components)"),
            None if self.map.is_some() => " map = agreed".to_owned(),
            None => String::new(),
        };
        format!(
            "{} ε = {} δ = {} λ = {}{options}{map}",
            self.kind.name(),
            Num(self.epsilon),
            Num(self.delta),
            self.l2
        )
    }

    /// The ranges a node accepts in a release request, checked before anything is charged.
    /// Beyond them a release is refused as an invalid argument rather than trained: below
    /// [`EPSILON_MIN`] the noise scales (1/ε) overflow or swamp any learner; above
    /// [`EPSILON_MAX`] the accounting's e^ε terms lose all precision and the release is not
    /// private in any useful sense; above [`LAMBDA_MAX`] every weight is below 10⁻³ (for
    /// ‖x‖₂ ≤ 1 and a 1-Lipschitz loss the minimiser has ‖θ‖₂ ≤ 1/λ), so the budget would buy
    /// a learner that predicts nothing; below [`LAMBDA_MIN`] the output-perturbation and Gibbs
    /// scales (∝ 1/λ) overflow. Kinds kept for reproductions
    /// ([`MechanismKind::offered_by_nodes`] false) are refused whatever the numbers.
    pub fn check_ranges(&self) -> Result<(), MechanismError> {
        if let Some(instead) = self.kind.node_replacement() {
            return Err(MechanismError::ReproductionOnly {
                mechanism: self.kind.name(),
                instead: instead.name(),
            });
        }
        let out = |name, value, requirement| {
            Err(MechanismError::InvalidParameter {
                name,
                value,
                requirement,
            })
        };
        if !(EPSILON_MIN..=EPSILON_MAX).contains(&self.epsilon) {
            return out("epsilon", self.epsilon, "must be in [1e-6, 100]");
        }
        match self.l2.fixed() {
            Some(l) if !(LAMBDA_MIN..=LAMBDA_MAX).contains(&l) => {
                out("lambda", l, "must be in [1e-9, 1000] or `auto`")
            }
            _ => Ok(()),
        }
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

    #[test]
    fn requests_outside_the_ranges_are_invalid_arguments_with_short_numbers() {
        let op = |epsilon, lambda: Lambda| {
            LearnerSpec::new(MechanismKind::ObjectivePerturbation, epsilon, 0.0, lambda)
        };
        assert!(op(1.0, Lambda::Auto).check_ranges().is_ok());
        assert!(op(EPSILON_MIN, LAMBDA_MAX.into()).check_ranges().is_ok());
        assert!(op(EPSILON_MAX, LAMBDA_MIN.into()).check_ranges().is_ok());
        for (spec, text) in [
            (op(5e-324, Lambda::Auto), "invalid epsilon = 5e-324"),
            (op(1e308, Lambda::Auto), "invalid epsilon = 1e308"),
            (op(f64::NAN, Lambda::Auto), "invalid epsilon = NaN"),
            (op(1.0, 1e300.into()), "invalid lambda = 1e300"),
            (op(1.0, 1e-300.into()), "invalid lambda = 1e-300"),
        ] {
            let e = spec.check_ranges().expect_err("out of range");
            assert!(e.to_string().starts_with(text), "{e}");
        }
        let reproduction =
            LearnerSpec::new(MechanismKind::OutputPerturbationCms2011, 1.0, 0.0, 0.01);
        let e = reproduction.check_ranges().expect_err("not offered");
        assert!(
            e.to_string()
                .starts_with("output-perturbation-cms2011 is kept for reproductions"),
            "{e}"
        );
    }
}
