//! The mechanisms a user can name (command line, node configuration, RPC): [`MechanismKind`],
//! a handle on one [`Registration`] of the registry in [`super`].
//!
//! **A mechanism is one file.** Besides implementing [`Mechanism`], its file declares
//! `pub const REGISTERED: &[Registration]`: its name, a one-line summary with its reference, its
//! options ([`OptionSpec`]: name, default, range, meaning) and how it is built from
//! (ε, δ, λ, options) ([`Request`]). The registry is the list of those files in
//! [`super`]'s `mechanisms!` block, one line each; the command-line help, the names nodes offer
//! and the options `--option` accepts are read from it, and the proto comment on
//! `LearnerSpec.mechanism` is checked against it (`proto/tests/registry.rs`).
//!
//! Options are public hyper-parameters with documented defaults (never derived from data,
//! invariant 2); an option a mechanism does not take is an error, not ignored. On the wire and
//! in stored specs they stay a map of names to numbers ([`Options`]); a mechanism reads them
//! typed, through [`Request::real`] and [`Request::count`]. λ is a number or `auto`
//! ([`super::lambda`]).

use super::lambda::{AutoRule, Lambda};
use super::{Mechanism, MechanismError};
use crate::privacy::guarantee::{NeighbourRelation, ProofCoverage};
pub use crate::privacy::registry::{DocRow, OptionSpec, OptionType};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// Mechanism options by name (e.g. `gamma`, `steps`): the wire and storage form.
pub type Options = BTreeMap<String, f64>;

/// A mechanism as the registry knows it: what users name, what it takes and how it is built.
#[derive(Debug, Clone, Copy)]
pub struct Registration {
    /// The name users give (command line, configuration, `LearnerSpec.mechanism`).
    pub name: &'static str,
    /// One line: the guarantee, the neighbour relation, the paper and algorithm.
    pub summary: &'static str,
    /// The options it takes.
    pub options: &'static [OptionSpec],
    /// What the proof of its releases covers (nodes refuse `none` by default; aggregators
    /// accept `noise-as-sampled` and `real-arithmetic` by default).
    pub proof: ProofCoverage,
    /// For a mechanism kept only for the lab's reproductions, the name of the mechanism nodes
    /// release instead (the same algorithm made safe); `None` for those nodes offer.
    pub node_replacement: Option<&'static str>,
    /// What `λ = auto` means for it: a function of public quantities only
    /// ([`AutoRule::lambda`]), chosen for this mechanism with `dpagg-aggregator experiment
    /// lambda --mechanism NAME`.
    pub auto_lambda: AutoRule,
    /// The neighbour relation of its guarantee (what the built mechanism states).
    pub neighbours: NeighbourRelation,
    /// Its row of `docs/mechanisms.md` ([`super::docs_table`]); `None` only for the test-only
    /// example.
    pub doc: Option<DocRow>,
    /// Builds the mechanism for one request (parameters are validated here, before any data).
    pub build: fn(&Request<'_>) -> Result<Box<dyn Mechanism>, MechanismError>,
}

/// What a [`Registration::build`] gets: the privacy parameters, λ and the options, typed.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// ε > 0.
    pub epsilon: f64,
    /// δ ∈ [0, 1); 0 selects a pure ε-DP variant where there is one.
    pub delta: f64,
    /// λ, a number or `auto`.
    pub lambda: Lambda,
    given: &'a Options,
    registration: &'static Registration,
}

impl Request<'_> {
    /// A real option (its default when not given).
    pub fn real(&self, name: &'static str) -> f64 {
        self.given.get(name).copied().unwrap_or_else(|| {
            self.registration
                .options
                .iter()
                .find(|s| s.name == name)
                .map_or(f64::NAN, |s| s.default)
        })
    }

    /// A whole, positive count.
    pub fn count(&self, name: &'static str) -> Result<u64, MechanismError> {
        let v = self.real(name);
        if OptionType::Count.contains(v) {
            Ok(v as u64)
        } else {
            Err(MechanismError::InvalidParameter {
                name,
                value: v,
                requirement: "must be a whole number >= 1",
            })
        }
    }

    /// λ as a number, for mechanisms whose `auto` rule is a fixed value (Gibbs posterior, BST
    /// 2014: [`AutoRule::Fixed`] of [`super::lambda::PAPER_MAP_LAMBDA`]).
    pub fn fixed_lambda(&self) -> f64 {
        self.lambda
            .fixed()
            .unwrap_or_else(|| self.registration.auto_lambda.lambda(1, 1, self.epsilon))
    }

    /// δ must be 0 (output perturbation, which is pure ε-DP).
    pub fn require_pure(&self) -> Result<(), MechanismError> {
        if self.delta == 0.0 {
            Ok(())
        } else {
            Err(MechanismError::InvalidParameter {
                name: "delta",
                value: self.delta,
                requirement: "must be 0 for output-perturbation (it is pure ε-DP)",
            })
        }
    }
}

/// A mechanism users can name: a handle on its [`Registration`]. Equal when the names are.
/// Serialised as its name.
///
/// The associated constants name the registered mechanisms for code that picks one; they keep
/// the names the enum variants had, so call sites read as before.
#[derive(Clone, Copy)]
pub struct MechanismKind(&'static Registration);

#[allow(non_upper_case_globals)]
impl MechanismKind {
    /// [`super::objective_perturbation`]: the default ε-DP learner (and (ε, δ) when δ > 0).
    pub const ObjectivePerturbation: Self = Self(&super::objective_perturbation::REGISTERED[0]);
    /// [`super::objective_perturbation_cms2011`]: the published algorithms, for reproductions.
    pub const ObjectivePerturbationCms2011: Self =
        Self(&super::objective_perturbation_cms2011::REGISTERED[0]);
    /// [`super::output_perturbation`]: ε-DP, snapped.
    pub const OutputPerturbation: Self = Self(&super::output_perturbation::REGISTERED[0]);
    /// [`super::output_perturbation_cms2011`]: as published, f64 noise; lab only.
    pub const OutputPerturbationCms2011: Self =
        Self(&super::output_perturbation_cms2011::REGISTERED[0]);
    /// [`super::gibbs_posterior`] with Proposition 13's step count.
    pub const GibbsPosterior: Self = Self(&super::gibbs_posterior::REGISTERED[0]);
    /// [`super::gibbs_posterior`] with a chosen step count (not proven).
    pub const GibbsPosteriorUnproven: Self = Self(&super::gibbs_posterior::REGISTERED[1]);
    /// [`super::dp_sgd`].
    pub const DpSgd: Self = Self(&super::dp_sgd::REGISTERED[0]);
    /// [`super::dp_sgd_bst`].
    pub const DpSgdBst: Self = Self(&super::dp_sgd_bst::REGISTERED[0]);
    /// [`super::langevin`].
    pub const Langevin: Self = Self(&super::langevin::REGISTERED[0]);
}

impl MechanismKind {
    /// Every registered mechanism, in the registry's order.
    pub fn all() -> impl Iterator<Item = MechanismKind> {
        super::REGISTRY
            .iter()
            .flat_map(|g| g.iter())
            .map(MechanismKind)
    }

    /// Parses a command-line name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::all().find(|k| k.name() == name)
    }

    /// Parses a command-line name; the error lists the names there are.
    pub fn parse(name: &str) -> Result<Self, String> {
        Self::from_name(name)
            .ok_or_else(|| format!("unknown mechanism `{name}` (available: {})", Self::names()))
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// Its registration (summary, options, how it is built).
    pub fn registration(self) -> &'static Registration {
        self.0
    }

    /// Every command-line name, comma-separated (for messages).
    pub fn names() -> String {
        Self::all().map(Self::name).collect::<Vec<_>>().join(", ")
    }

    /// False for kinds kept only for the lab's reproductions, which nodes neither list nor
    /// release: `output-perturbation-cms2011`, whose f64 noise is exposed to Mironov's 2012
    /// attack ([`super::output_perturbation_cms2011`]).
    pub fn offered_by_nodes(self) -> bool {
        self.0.node_replacement.is_none()
    }

    /// Whether its releases carry a proven guarantee.
    pub fn is_proven(self) -> bool {
        self.0.proof.is_proven()
    }

    /// What the proof of its releases covers.
    pub fn proof(self) -> ProofCoverage {
        self.0.proof
    }

    /// For a kind nodes do not offer, the kind they release instead (the same algorithm made
    /// safe); `None` for the kinds nodes offer.
    pub fn node_replacement(self) -> Option<MechanismKind> {
        self.0.node_replacement.and_then(Self::from_name)
    }

    /// The options this mechanism takes.
    pub fn options(self) -> &'static [OptionSpec] {
        self.0.options
    }

    /// What `λ = auto` means for it.
    pub fn auto_lambda(self) -> AutoRule {
        self.0.auto_lambda
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
        let specs = self.options();
        if let Some(name) = options.keys().find(|k| !specs.iter().any(|s| s.name == *k)) {
            let accepted: Vec<&str> = specs.iter().map(|s| s.name).collect();
            return Err(MechanismError::UnknownOption {
                name: name.clone(),
                mechanism: self.name(),
                accepted: if accepted.is_empty() {
                    "no options".into()
                } else {
                    accepted.join(", ")
                },
            });
        }
        (self.0.build)(&Request {
            epsilon,
            delta,
            lambda: lambda.into(),
            given: options,
            registration: self.0,
        })
    }
}

impl PartialEq for MechanismKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for MechanismKind {}

impl fmt::Debug for MechanismKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MechanismKind({})", self.name())
    }
}

impl fmt::Display for MechanismKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for MechanismKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

impl Serialize for MechanismKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for MechanismKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Self::parse(&name).map_err(serde::de::Error::custom)
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
        for kind in MechanismKind::all() {
            assert_eq!(MechanismKind::from_name(kind.name()), Some(kind));
        }
        assert_eq!(MechanismKind::from_name("laplace"), None);
        let names: Vec<&str> = MechanismKind::all().map(MechanismKind::name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "names are unique: {names:?}");
    }

    /// The order users see (node listings, help texts) is the registry's, unchanged.
    #[test]
    fn the_registry_lists_the_mechanisms_in_their_order() {
        let names: Vec<&str> = MechanismKind::all().map(MechanismKind::name).collect();
        assert_eq!(
            names[..9],
            [
                "objective-perturbation",
                "objective-perturbation-cms2011",
                "output-perturbation",
                "output-perturbation-cms2011",
                "gibbs-posterior",
                "gibbs-posterior-unproven",
                "dp-sgd",
                "dp-sgd-bst",
                "langevin",
            ]
        );
    }

    /// A registration's proof label is the one its releases carry, and only snapped or exact
    /// discrete noise is labelled as covered when sampled.
    #[test]
    fn every_registered_proof_label_is_the_built_mechanisms() {
        for kind in MechanismKind::all() {
            let delta = if kind.name().starts_with("output") {
                0.0
            } else {
                1e-5
            };
            let m = kind.build(0.5, delta, 0.1).expect("builds at defaults");
            assert_eq!(m.proof(), kind.proof(), "{}", kind.name());
            assert_eq!(m.is_proven(), kind.is_proven(), "{}", kind.name());
            let relation = m.guarantee().relation;
            assert_eq!(relation, kind.registration().neighbours, "{}", kind.name());
            // Every mechanism but the test-only example has its row in docs/mechanisms.md.
            let example = kind.name() == super::super::example::NAME;
            assert_eq!(
                kind.registration().doc.is_none(),
                example,
                "{}",
                kind.name()
            );
        }
        let sampled: Vec<&str> = MechanismKind::all()
            .filter(|k| k.proof() == ProofCoverage::NoiseAsSampled)
            .map(MechanismKind::name)
            .collect();
        assert_eq!(sampled, ["output-perturbation", "dp-sgd", "dp-sgd-bst"]);
    }

    /// Every declared option range is what the mechanism enforces: its default builds, and a
    /// value just outside each end of the range is refused.
    #[test]
    fn declared_option_ranges_are_the_ones_enforced() {
        for kind in MechanismKind::all() {
            let delta = if kind.name().starts_with("output") {
                0.0
            } else {
                1e-5
            };
            for o in kind.options() {
                assert!(o.range.contains(o.default), "{} {}", kind.name(), o.name);
                let build = |v: f64| {
                    let options = Options::from([(o.name.to_owned(), v)]);
                    kind.build_with(1.0, delta, 0.1, &options)
                };
                assert!(build(o.default).is_ok(), "{} {}", kind.name(), o.name);
                for v in o.range.just_outside() {
                    assert!(build(v).is_err(), "{} {} = {v}", kind.name(), o.name);
                }
            }
        }
    }

    #[test]
    fn only_the_unsnapped_reproduction_is_withheld_from_nodes() {
        for kind in MechanismKind::all() {
            assert_eq!(
                kind.offered_by_nodes(),
                kind.name() != "output-perturbation-cms2011",
                "{kind}"
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
