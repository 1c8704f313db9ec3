//! The mechanisms a user can name (command line, node configuration, RPC), their options and
//! how each is built from (ε, δ, λ, options). λ is a number or `auto` ([`super::lambda`]).
//!
//! Options are public hyper-parameters with documented defaults (never derived from data,
//! invariant 2); an option a mechanism does not take is an error, not ignored.

use super::lambda::{AutoRule, Lambda};
use super::objective_perturbation::DEFAULT_OUTPUT_FRACTION;
use super::{
    BstDpSgd, DpSgd, DpSgdConfig, GaussianObjectivePerturbation, GibbsPosterior, GibbsSampler,
    Langevin, Mechanism, MechanismError, ObjectivePerturbation, ObjectivePerturbationCms2011,
    OutputPerturbation, OutputPerturbationCms2011, StepSize,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mechanism options by name (e.g. `gamma`, `steps`).
pub type Options = BTreeMap<String, f64>;

/// One option a mechanism takes: name, default and meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptionSpec {
    /// Its name.
    pub name: &'static str,
    /// The value used when it is not given.
    pub default: f64,
    /// What it means.
    pub help: &'static str,
}

const OBJECTIVE_PERTURBATION_OPTIONS: &[OptionSpec] = &[OptionSpec {
    name: "output_fraction",
    default: DEFAULT_OUTPUT_FRACTION,
    help: "share of ε spent on the snapped output noise that covers the solver's inexact minimiser, in (0, 0.5]",
}];

const GIBBS_PROVEN_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "gamma",
        default: 1e-3,
        help: "total-variation target γ of Proposition 13; the release is (ε, δ + (1 + e^ε)γ)-DP",
    },
    OptionSpec {
        name: "max_steps",
        default: 1e9,
        help: "refuse to release when Proposition 13 needs more Langevin steps than this",
    },
];

const GIBBS_UNPROVEN_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "steps",
        default: 1000.0,
        help: "Langevin steps (no theorem bounds the sampler's error)",
    },
    OptionSpec {
        name: "step_scale",
        default: 0.5,
        help: "step size h = step_scale / M, in (0, 1]",
    },
];

const DP_SGD_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "clip_norm",
        default: 1.0,
        help: "C: per-example gradients are clipped to this norm (1 = the logistic gradient bound)",
    },
    OptionSpec {
        name: "sampling_rate",
        default: 0.1,
        help: "q: Poisson sampling probability of each record per step",
    },
    OptionSpec {
        name: "steps",
        default: 200.0,
        help: "T: number of noisy steps",
    },
    OptionSpec {
        name: "learning_rate",
        default: 1.0,
        help: "η of the cosine-decayed step size η_t",
    },
];

const LANGEVIN_OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "step_scale",
        default: super::langevin::DEFAULT_STEP_SCALE,
        help: "step size η = step_scale / β with β = 1/4 + λ, in (0, 1]",
    },
    OptionSpec {
        name: "tolerance",
        default: super::langevin::DEFAULT_TOLERANCE,
        help: "steps K: the smallest with c^K ≤ tolerance (c = 1 − ηλ; capped at 10^6), in (0, 1); the guarantee holds for every K",
    },
];

/// The mechanisms a user can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MechanismKind {
    /// Objective perturbation: ε-DP when δ = 0 (CMS 2011 Theorem 9 with the Δ rule and an output
    /// stage for the inexact minimiser), else (ε, δ)-DP (KST 2012 with the Δ rule).
    ObjectivePerturbation,
    /// Objective perturbation as published, for the reproduction: CMS 2011 Algorithm 2 when
    /// δ = 0, seed 001 Algorithm 1 / KST 2012 with Δ = 2λ_max/ε otherwise.
    #[serde(rename = "objective-perturbation-cms2011")]
    ObjectivePerturbationCms2011,
    /// Output perturbation: ε-DP (CMS 2011 Alg. 1 with per-coordinate Laplace noise snapped as
    /// Mironov 2012 prescribes, so that the f64 release does not leak); δ must be 0.
    OutputPerturbation,
    /// Output perturbation as published (CMS 2011 Alg. 1, Gamma-ball noise in f64), for the
    /// lab's reproductions only: exposed to Mironov's 2012 floating-point attack, so nodes do not
    /// offer it ([`MechanismKind::offered_by_nodes`]); δ must be 0.
    #[serde(rename = "output-perturbation-cms2011")]
    OutputPerturbationCms2011,
    /// A Gibbs-posterior sample by Langevin Monte Carlo with Proposition 13's step count
    /// (Minami et al. 2016): (ε, δ + (1 + e^ε)γ)-DP.
    GibbsPosterior,
    /// The same chain with a user-chosen step count: the stated (ε, δ) is that of an exact
    /// sample, not proven for the sampler (releases say so; nodes refuse them by default).
    GibbsPosteriorUnproven,
    /// DP-SGD with Poisson subsampling, clipping and the Gaussian mechanism, σ calibrated by the
    /// RDP accountant: (ε, δ)-DP under add/remove-one; δ must be > 0.
    DpSgd,
    /// Bassily, Smith & Thakurta 2014 (seed 001 Algorithm 2): n² noisy single-record steps,
    /// (ε, δ)-DP under replace-one; δ must be > 0.
    DpSgdBst,
    /// Noisy full-batch gradient descent (the Langevin chain of Minami et al. eq. 14), proven at
    /// any step count by shifted Rényi divergences: (ε, δ)-DP under replace-one with an RDP
    /// curve; δ must be > 0.
    Langevin,
}

impl MechanismKind {
    /// All kinds with their command-line names.
    pub const ALL: [(&'static str, MechanismKind); 9] = [
        (
            "objective-perturbation",
            MechanismKind::ObjectivePerturbation,
        ),
        (
            super::objective_perturbation_cms2011::NAME,
            MechanismKind::ObjectivePerturbationCms2011,
        ),
        ("output-perturbation", MechanismKind::OutputPerturbation),
        (
            super::output_perturbation_cms2011::NAME,
            MechanismKind::OutputPerturbationCms2011,
        ),
        (super::gibbs_posterior::NAME, MechanismKind::GibbsPosterior),
        (
            super::gibbs_posterior::NAME_UNPROVEN,
            MechanismKind::GibbsPosteriorUnproven,
        ),
        (super::dp_sgd::NAME, MechanismKind::DpSgd),
        (super::dp_sgd_bst::NAME, MechanismKind::DpSgdBst),
        (super::langevin::NAME, MechanismKind::Langevin),
    ];

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// Every command-line name, comma-separated (for messages).
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// False for kinds kept only for the lab's reproductions, which nodes neither list nor
    /// release: `output-perturbation-cms2011`, whose f64 noise is exposed to Mironov's 2012
    /// attack ([`super::output_perturbation_cms2011`]).
    pub fn offered_by_nodes(self) -> bool {
        self.node_replacement().is_none()
    }

    /// For a kind nodes do not offer, the kind they release instead (the same algorithm made
    /// safe); `None` for the kinds nodes offer.
    pub fn node_replacement(self) -> Option<MechanismKind> {
        match self {
            Self::OutputPerturbationCms2011 => Some(Self::OutputPerturbation),
            _ => None,
        }
    }

    /// The options this mechanism takes.
    pub fn options(self) -> &'static [OptionSpec] {
        match self {
            Self::ObjectivePerturbation => OBJECTIVE_PERTURBATION_OPTIONS,
            Self::ObjectivePerturbationCms2011
            | Self::OutputPerturbation
            | Self::OutputPerturbationCms2011
            | Self::DpSgdBst => &[],
            Self::DpSgd => DP_SGD_OPTIONS,
            Self::Langevin => LANGEVIN_OPTIONS,
            Self::GibbsPosterior => GIBBS_PROVEN_OPTIONS,
            Self::GibbsPosteriorUnproven => GIBBS_UNPROVEN_OPTIONS,
        }
    }

    /// Builds the mechanism with default options. `delta = 0` selects a pure ε-DP variant where
    /// there is one.
    pub fn build(
        self,
        epsilon: f64,
        delta: f64,
        lambda: impl Into<Lambda>,
    ) -> Result<Box<dyn Mechanism>, MechanismError> {
        self.build_with(epsilon, delta, lambda, &Options::new())
    }

    /// Builds the mechanism for one privacy level with `options` (unknown names are an error,
    /// missing ones take their defaults). Mechanisms without a calibrated `auto` rule (Gibbs
    /// posterior, BST 2014) take λ = [`super::lambda::PAPER_MAP_LAMBDA`] for `auto`.
    pub fn build_with(
        self,
        epsilon: f64,
        delta: f64,
        lambda: impl Into<Lambda>,
        options: &Options,
    ) -> Result<Box<dyn Mechanism>, MechanismError> {
        let lambda: Lambda = lambda.into();
        let o = Resolved::new(self, options)?;
        let fixed = lambda
            .fixed()
            .unwrap_or_else(|| AutoRule::Uncalibrated.lambda(1, 1, epsilon));
        Ok(match self {
            Self::ObjectivePerturbation if delta == 0.0 => {
                Box::new(ObjectivePerturbation::with_output_fraction(
                    epsilon,
                    lambda,
                    o.get("output_fraction"),
                )?)
            }
            Self::ObjectivePerturbation => {
                Box::new(GaussianObjectivePerturbation::with_output_fraction(
                    epsilon,
                    delta,
                    lambda,
                    o.get("output_fraction"),
                )?)
            }
            Self::ObjectivePerturbationCms2011 if delta == 0.0 => {
                Box::new(ObjectivePerturbationCms2011::new(epsilon, lambda)?)
            }
            Self::ObjectivePerturbationCms2011 => {
                Box::new(GaussianObjectivePerturbation::new(epsilon, delta, lambda)?)
            }
            Self::OutputPerturbation if delta == 0.0 => {
                Box::new(OutputPerturbation::new(epsilon, lambda)?)
            }
            Self::OutputPerturbationCms2011 if delta == 0.0 => {
                Box::new(OutputPerturbationCms2011::new(epsilon, lambda)?)
            }
            Self::OutputPerturbation | Self::OutputPerturbationCms2011 => {
                return Err(MechanismError::InvalidParameter {
                    name: "delta",
                    value: delta,
                    requirement: "must be 0 for output-perturbation (it is pure ε-DP)",
                });
            }
            Self::GibbsPosterior => Box::new(GibbsPosterior::new(
                epsilon,
                delta,
                fixed,
                GibbsSampler::Proven {
                    gamma: o.get("gamma"),
                    max_steps: o.count("max_steps")?,
                },
            )?),
            Self::GibbsPosteriorUnproven => Box::new(GibbsPosterior::new(
                epsilon,
                delta,
                fixed,
                GibbsSampler::Unproven {
                    steps: o.count("steps")?,
                    step_scale: o.get("step_scale"),
                },
            )?),
            Self::DpSgd => Box::new(DpSgd::new(
                epsilon,
                delta,
                lambda,
                DpSgdConfig {
                    clip_norm: o.get("clip_norm"),
                    sampling_rate: o.get("sampling_rate"),
                    steps: o.count("steps")?,
                    step_size: StepSize::Cosine(o.get("learning_rate")),
                    batch_divisor: None,
                },
            )?),
            Self::DpSgdBst => Box::new(BstDpSgd::new(epsilon, delta, fixed)?),
            Self::Langevin => Box::new(Langevin::new(
                epsilon,
                delta,
                lambda,
                o.get("step_scale"),
                o.get("tolerance"),
            )?),
        })
    }
}

/// Options with defaults filled in, checked against what the mechanism takes.
struct Resolved<'a> {
    given: &'a Options,
    specs: &'static [OptionSpec],
}

impl<'a> Resolved<'a> {
    fn new(kind: MechanismKind, given: &'a Options) -> Result<Self, MechanismError> {
        let specs = kind.options();
        if let Some(name) = given.keys().find(|k| !specs.iter().any(|s| s.name == *k)) {
            let accepted: Vec<&str> = specs.iter().map(|s| s.name).collect();
            return Err(MechanismError::UnknownOption {
                name: name.clone(),
                mechanism: kind.name(),
                accepted: if accepted.is_empty() {
                    "no options".into()
                } else {
                    accepted.join(", ")
                },
            });
        }
        Ok(Self { given, specs })
    }

    fn get(&self, name: &'static str) -> f64 {
        self.given.get(name).copied().unwrap_or_else(|| {
            self.specs
                .iter()
                .find(|s| s.name == name)
                .map_or(f64::NAN, |s| s.default)
        })
    }

    /// A whole, positive count.
    fn count(&self, name: &'static str) -> Result<u64, MechanismError> {
        let v = self.get(name);
        if v.is_finite() && v >= 1.0 && v.fract() == 0.0 && v <= u64::MAX as f64 {
            Ok(v as u64)
        } else {
            Err(MechanismError::InvalidParameter {
                name,
                value: v,
                requirement: "must be a whole number >= 1",
            })
        }
    }
}

/// Parses `name=value` (command-line options of mechanisms).
pub fn parse_option(text: &str) -> Result<(String, f64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}`: expected name=value"))?;
    let v: f64 = value
        .trim()
        .parse()
        .map_err(|_| format!("`{text}`: `{value}` is not a number"))?;
    Ok((name.trim().to_owned(), v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for (name, kind) in MechanismKind::ALL {
            assert_eq!(MechanismKind::from_name(name), Some(kind));
            assert_eq!(kind.name(), name);
        }
        assert_eq!(MechanismKind::from_name("laplace"), None);
    }

    #[test]
    fn only_the_unsnapped_reproduction_is_withheld_from_nodes() {
        for (name, kind) in MechanismKind::ALL {
            assert_eq!(
                kind.offered_by_nodes(),
                name != "output-perturbation-cms2011",
                "{name}"
            );
        }
        let published = MechanismKind::OutputPerturbationCms2011
            .build(1.0, 0.0, 0.01)
            .expect("valid");
        assert_eq!(published.name(), "output-perturbation-cms2011");
        let snapped = MechanismKind::OutputPerturbation
            .build(1.0, 0.0, 0.01)
            .expect("valid");
        assert_eq!(snapped.name(), "output-perturbation");
        assert!(
            MechanismKind::OutputPerturbationCms2011
                .build(1.0, 1e-5, 0.01)
                .is_err()
        );
    }

    #[test]
    fn unknown_and_invalid_options_are_errors() {
        let mut o = Options::new();
        o.insert("gama".into(), 0.1);
        let e = MechanismKind::GibbsPosterior
            .build_with(1.0, 1e-5, 0.01, &o)
            .err()
            .expect("unknown option");
        assert!(e.to_string().contains("gama") && e.to_string().contains("gamma"));
        let e = MechanismKind::ObjectivePerturbationCms2011
            .build_with(1.0, 0.0, 0.01, &o)
            .err()
            .expect("no options");
        assert!(e.to_string().contains("no options"));
        let mut o = Options::new();
        o.insert("steps".into(), 10.5);
        assert!(
            MechanismKind::GibbsPosteriorUnproven
                .build_with(1.0, 1e-5, 0.01, &o)
                .is_err()
        );
    }

    #[test]
    fn gibbs_kinds_build_with_defaults_and_report_proof_status() {
        let proven = MechanismKind::GibbsPosterior
            .build(1.0, 1e-5, 0.01)
            .expect("valid");
        assert!(proven.is_proven());
        let unproven = MechanismKind::GibbsPosteriorUnproven
            .build(1.0, 1e-5, 0.01)
            .expect("valid");
        assert!(!unproven.is_proven());
        assert_eq!(unproven.name(), "gibbs-posterior-unproven");
        assert!(
            MechanismKind::ObjectivePerturbation
                .build(1.0, 0.0, 0.01)
                .expect("valid")
                .is_proven()
        );
    }

    #[test]
    fn dp_sgd_kinds_carry_their_relation_and_curve() {
        use crate::privacy::guarantee::NeighbourRelation;
        let m = MechanismKind::DpSgd.build(1.0, 1e-5, 0.01).expect("valid");
        assert_eq!(m.guarantee().relation, NeighbourRelation::AddRemoveOne);
        let curve = m.rdp().expect("DP-SGD is analysed in RDP");
        let eps = curve.epsilon(1e-5).expect("finite").epsilon;
        assert!(eps <= 1.0 && eps > 0.99, "calibrated to the target: {eps}");
        let b = MechanismKind::DpSgdBst
            .build(1.0, 1e-5, 0.01)
            .expect("valid");
        assert_eq!(b.guarantee().relation, NeighbourRelation::ReplaceOne);
        assert!(b.rdp().is_none());
        assert!(MechanismKind::DpSgd.build(1.0, 0.0, 0.01).is_err(), "δ = 0");
    }

    #[test]
    fn options_parse() {
        assert_eq!(parse_option("gamma=0.01"), Ok(("gamma".into(), 0.01)));
        assert!(parse_option("gamma").is_err());
        assert!(parse_option("gamma=x").is_err());
    }
}
