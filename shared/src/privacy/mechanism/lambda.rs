//! The regulariser λ of a learner's objective (1/n)Σℓ + (λ/2)‖θ‖²: a number the user fixes, or
//! `auto`, a documented function of public quantities only — n (public in every release), the
//! dimension d of θ (intercept column included), ε, δ and the mechanism (invariant 2: never a
//! statistic of the data).
//!
//! # The `auto` rules
//!
//! Each mechanism's rule is a value of its registration ([`AutoRule`], in
//! [`super::kind::Registration::auto_lambda`]):
//!
//! | mechanism | λ_auto |
//! |---|---|
//! | objective perturbation, ε-DP and (ε, δ) (and CMS 2011 Algorithm 2) | 8√d / (n ε^{3/2}) |
//! | output perturbation; `langevin` (fitted on its own, C = 60) | 60√d / (n ε^{3/2}) |
//! | DP-SGD (accuracy is nearly flat in λ) | 0.056√d / n |
//! | Gibbs posterior, DP-SGD of BST 2014 | 0.01 (not calibrated: Minami et al. 2015, §5.1's value) |
//!
//! `dpagg-aggregator experiment lambda --mechanism NAME` re-runs such a fit for one mechanism
//! (three shapes of its own, the same 288-cell grid; docs/experiments/lambda-rule.md). It gives
//! back C = 8 for objective perturbation and 60–120 (flat) for output perturbation; for
//! `langevin`, whose stationary noise is that of Gaussian output perturbation, it gives C = 60 —
//! output perturbation's rule, which `langevin` uses.
//!
//! Every value is clamped to [10⁻⁴, 10]. The constants were fitted by simulation on synthetic
//! data of three shapes (isotropic, correlated, weak signal) over n ∈ {40, …, 2000},
//! d ∈ {5, 10, 20, 31} and ε ∈ {0.5, 1, 2, 5} — 288 cells, mean loss 0.4–0.8 accuracy points
//! against the best λ of each cell — and checked on the bundled sets (at most 1.1 points). They
//! hold for rows mapped by a **ball-mode** schema (centred features, row projection onto the
//! unit ball, intercept constant 0.2); with the `paper` map they are far too large (the learners
//! predict one class), so callers that know the schema resolve `auto` to [`PAPER_MAP_LAMBDA`]
//! there ([`Lambda::for_paper_map`]) and warn.
//!
//! Non-private learners (local baselines, the centralised reference) have no privacy noise to
//! balance, so `auto` means [`NON_PRIVATE_LAMBDA`] for them ([`Lambda::non_private`]).

use super::MechanismError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Smallest λ an `auto` rule returns.
pub const AUTO_MIN: f64 = 1e-4;
/// Largest λ an `auto` rule returns.
pub const AUTO_MAX: f64 = 10.0;
/// λ of Minami et al. 2015, §5.1: what `auto` means for mechanisms with no calibrated rule and for
/// rows mapped by a `paper`-mode schema.
pub const PAPER_MAP_LAMBDA: f64 = 0.01;
/// λ of the non-private learners (local-only baseline, centralised reference) when the private
/// learners' λ is `auto`.
pub const NON_PRIVATE_LAMBDA: f64 = 0.01;

/// λ: a fixed number or `auto`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lambda {
    /// This λ, whatever the data size.
    Fixed(f64),
    /// A function of (n, d, ε, δ, mechanism) only; see the [module documentation](self).
    Auto,
}

/// What `auto` means for one mechanism: a value of its registration
/// ([`super::kind::Registration::auto_lambda`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AutoRule {
    /// C√d / (n ε^{3/2}) (objective perturbation: C = 8; output perturbation and `langevin`:
    /// C = 60).
    Sqrt {
        /// C.
        constant: f64,
    },
    /// C√d / n, whatever ε (DP-SGD: C = 0.056; its accuracy is nearly flat in λ).
    SqrtOverN {
        /// C.
        constant: f64,
    },
    /// This λ whatever n, d and ε, not clamped: mechanisms without a calibrated rule use
    /// [`PAPER_MAP_LAMBDA`].
    Fixed(f64),
}

impl AutoRule {
    /// λ_auto for `n` rows of dimension `dim` at privacy level `epsilon`, clamped to
    /// [[`AUTO_MIN`], [`AUTO_MAX`]] (a [`AutoRule::Fixed`] value is returned as it is).
    pub fn lambda(self, n: usize, dim: usize, epsilon: f64) -> f64 {
        let (n, d) = (n.max(1) as f64, dim as f64);
        let v = match self {
            Self::Sqrt { constant } => constant * d.sqrt() / (n * epsilon.powf(1.5)),
            Self::SqrtOverN { constant } => constant * d.sqrt() / n,
            Self::Fixed(v) => return v,
        };
        v.clamp(AUTO_MIN, AUTO_MAX)
    }
}

impl Lambda {
    /// Checks a fixed λ (finite, > 0); `auto` is always valid.
    pub fn check(self) -> Result<Self, MechanismError> {
        if let Self::Fixed(l) = self {
            super::check_lambda(l)?;
        }
        Ok(self)
    }

    /// True for `auto`.
    pub fn is_auto(self) -> bool {
        matches!(self, Self::Auto)
    }

    /// The fixed value, if any.
    pub fn fixed(self) -> Option<f64> {
        match self {
            Self::Fixed(l) => Some(l),
            Self::Auto => None,
        }
    }

    /// The λ to train with on `n` rows of dimension `dim` at `epsilon`.
    pub fn resolve(self, rule: AutoRule, n: usize, dim: usize, epsilon: f64) -> f64 {
        match self {
            Self::Fixed(l) => l,
            Self::Auto => rule.lambda(n, dim, epsilon),
        }
    }

    /// λ of a non-private learner trained beside private ones with this λ.
    pub fn non_private(self) -> f64 {
        self.fixed().unwrap_or(NON_PRIVATE_LAMBDA)
    }

    /// This λ for rows mapped by a `paper`-mode schema, where the `auto` rules do not hold:
    /// `auto` becomes [`PAPER_MAP_LAMBDA`], with a warning naming the schema.
    pub fn for_paper_map(self, schema_name: &str) -> Self {
        if self.is_auto() {
            tracing::warn!(
                schema = schema_name,
                "lambda = auto is calibrated for ball-mode schemas; schema `{schema_name}` uses the paper map, so lambda = {PAPER_MAP_LAMBDA} is used (give a lambda to silence this)"
            );
            Self::Fixed(PAPER_MAP_LAMBDA)
        } else {
            self
        }
    }

    /// The recorded parameters of a release trained with `used` under this λ: `lambda` (the value
    /// used) and `lambda_auto` (1 when it came from the `auto` rule, else 0).
    pub fn parameters(self, used: f64) -> [(String, f64); 2] {
        [
            ("lambda".to_owned(), used),
            (
                "lambda_auto".to_owned(),
                f64::from(u8::from(self.is_auto())),
            ),
        ]
    }
}

impl From<f64> for Lambda {
    fn from(l: f64) -> Self {
        Self::Fixed(l)
    }
}

impl fmt::Display for Lambda {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(l) => write!(f, "{}", crate::util::num::Num(*l)),
            Self::Auto => f.write_str("auto"),
        }
    }
}

/// Why text is not a λ.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("`{0}` is not a lambda: give `auto` or a number > 0")]
pub struct ParseLambdaError(String);

impl std::str::FromStr for Lambda {
    type Err = ParseLambdaError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(Self::Auto);
        }
        match t.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Self::Fixed(v)),
            _ => Err(ParseLambdaError(s.to_owned())),
        }
    }
}

/// A fixed λ is stored as the number it has always been; `auto` as the string `"auto"`.
impl Serialize for Lambda {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Fixed(l) => s.serialize_f64(*l),
            Self::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for Lambda {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(v) => Ok(Self::Fixed(v)),
            Raw::Text(t) if t == "auto" => Ok(Self::Auto),
            Raw::Text(t) => Err(serde::de::Error::custom(format!(
                "lambda must be a number or \"auto\", got {t:?}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_rules_match_the_research_note() {
        // Diabetes (n = 600, d = 9) and Breast Cancer (n = 400, d = 31) at ε = 1.
        use crate::privacy::mechanism::MechanismKind;
        let op = MechanismKind::ObjectivePerturbation.auto_lambda();
        assert!((op.lambda(600, 9, 1.0) - 0.04).abs() < 1e-12);
        assert!((op.lambda(400, 31, 1.0) - 8.0 * 31f64.sqrt() / 400.0).abs() < 1e-12);
        assert!((op.lambda(400, 31, 1.0) - 0.1114).abs() < 1e-4);
        let rule = |k: MechanismKind| k.auto_lambda().lambda(600, 9, 1.0);
        assert!((rule(MechanismKind::OutputPerturbation) - 0.3).abs() < 1e-12);
        assert!((rule(MechanismKind::Langevin) - 0.3).abs() < 1e-12);
        assert!((rule(MechanismKind::DpSgd) - 0.056 * 3.0 / 600.0).abs() < 1e-15);
        assert_eq!(rule(MechanismKind::GibbsPosterior), 0.01);
        assert_eq!(rule(MechanismKind::DpSgdBst), 0.01);
        // Clamped at both ends.
        assert_eq!(op.lambda(2, 31, 0.01), AUTO_MAX);
        assert_eq!(op.lambda(10_000_000, 2, 10.0), AUTO_MIN);
    }

    #[test]
    fn auto_depends_on_n_d_epsilon_only() {
        let op = AutoRule::Sqrt { constant: 8.0 };
        assert!(op.lambda(60, 9, 1.0) > op.lambda(600, 9, 1.0));
        assert!(op.lambda(60, 9, 0.5) > op.lambda(60, 9, 2.0));
        assert!(op.lambda(60, 31, 1.0) > op.lambda(60, 9, 1.0));
        assert_eq!(Lambda::Fixed(0.3).resolve(op, 60, 9, 1.0), 0.3);
        assert_eq!(Lambda::Auto.resolve(op, 60, 9, 1.0), op.lambda(60, 9, 1.0));
    }

    #[test]
    fn parses_prints_and_serialises() {
        assert_eq!("auto".parse::<Lambda>(), Ok(Lambda::Auto));
        assert_eq!(" AUTO ".parse::<Lambda>(), Ok(Lambda::Auto));
        assert_eq!("0.01".parse::<Lambda>(), Ok(Lambda::Fixed(0.01)));
        for bad in ["0", "-1", "nan", "inf", "x", ""] {
            assert!(bad.parse::<Lambda>().is_err(), "{bad}");
        }
        assert_eq!(Lambda::Auto.to_string(), "auto");
        assert_eq!(Lambda::Fixed(0.01).to_string(), "0.01");
        assert_eq!(
            serde_json::to_string(&Lambda::Fixed(0.01)).expect("json"),
            "0.01"
        );
        assert_eq!(
            serde_json::to_string(&Lambda::Auto).expect("json"),
            "\"auto\""
        );
        let back: Lambda = serde_json::from_str("\"auto\"").expect("auto");
        assert_eq!(back, Lambda::Auto);
        let back: Lambda = serde_json::from_str("0.5").expect("number");
        assert_eq!(back, Lambda::Fixed(0.5));
        assert!(serde_json::from_str::<Lambda>("\"often\"").is_err());
    }

    #[test]
    fn paper_map_and_non_private_fallbacks() {
        assert_eq!(
            Lambda::Auto.for_paper_map("diabetes"),
            Lambda::Fixed(PAPER_MAP_LAMBDA)
        );
        assert_eq!(Lambda::Fixed(0.2).for_paper_map("x"), Lambda::Fixed(0.2));
        assert_eq!(Lambda::Auto.non_private(), NON_PRIVATE_LAMBDA);
        assert_eq!(Lambda::Fixed(0.2).non_private(), 0.2);
        assert!(Lambda::Fixed(0.0).check().is_err());
        assert!(Lambda::Auto.check().is_ok());
        assert_eq!(
            Lambda::Auto.parameters(0.04),
            [("lambda".to_owned(), 0.04), ("lambda_auto".to_owned(), 1.0)]
        );
    }
}
