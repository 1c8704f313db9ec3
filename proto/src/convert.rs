//! Conversions between the `dpagg.v1` messages and the domain types of `dpagg-shared`, in one
//! place: `From` towards the wire (always possible), `TryFrom` from the wire with a typed
//! [`WireError`] naming the field (a message from a peer may be anything).
//!
//! Compatibility rules kept here:
//! - `ReleaseMetadata.proven` is new: a message without it is read from the legacy
//!   `parameters["proven"]` (0 means not proven, absent means proven), and an unproven release
//!   still carries that legacy entry for clients older than the field.
//! - Field names on the wire keep their original spelling (`weights` for the coefficients θ,
//!   `lambda` for the L2 regulariser).
//! - `LearnerSpec.lambda_auto` is new: a message without it (every older client) asks for the
//!   fixed `lambda` it carries, as before; with it set, `lambda` must be 0 (unset).

use crate::v1 as pb;
use dpagg_shared::LinearClassifier;
use dpagg_shared::privacy::accounting::admission::BudgetPolicy;
use dpagg_shared::privacy::accounting::ledger::{Composition, RelationSpend};
use dpagg_shared::privacy::guarantee::{
    Assumptions, NeighbourRelation, PrivacyGuarantee, ProofCoverage,
};
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismKind};
use dpagg_shared::privacy::release::{PublishedLearner, Release, ReleaseMetadata};
use dpagg_shared::util::num::Num;
use dpagg_shared::util::time::rfc3339;

/// The legacy parameter that marked unproven releases before `ReleaseMetadata.proven`.
pub const LEGACY_PROVEN_PARAMETER: &str = "proven";

/// Longest piece of a peer's text quoted back in an error.
const QUOTE_LIMIT: usize = 64;

/// Why a message cannot become a domain value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    /// A required field is absent.
    #[error("`{0}` is required")]
    Missing(&'static str),
    /// The mechanism name is not one dpagg knows.
    #[error("unknown mechanism {0}")]
    UnknownMechanism(String),
    /// The neighbour relation is unspecified or unknown.
    #[error("`{field}`: unknown neighbour relation {value}")]
    UnknownRelation {
        /// The field.
        field: &'static str,
        /// Its value.
        value: i32,
    },
    /// A number does not fit the domain type.
    #[error("`{field}` = {value}: {requirement}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Its value, as text.
        value: String,
        /// What it must be.
        requirement: &'static str,
    },
    /// An agreed map's transform is not one dpagg knows.
    #[error("`map.features.transform`: unknown transform {0}")]
    UnknownTransform(String),
}

impl WireError {
    /// A stable short code for reports and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Missing("metadata") => "missing_metadata",
            Self::UnknownRelation { .. } => "no_relation",
            _ => "malformed",
        }
    }
}

/// `text` quoted for an error message, cut to `QUOTE_LIMIT` characters and with control
/// characters escaped, so that a peer cannot make an error huge or inject terminal sequences.
pub fn quote(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(QUOTE_LIMIT)
        .flat_map(char::escape_debug)
        .collect();
    if text.chars().count() > QUOTE_LIMIT {
        out.push('…');
    }
    format!("`{out}`")
}

impl From<NeighbourRelation> for pb::NeighbourRelation {
    fn from(r: NeighbourRelation) -> Self {
        match r {
            NeighbourRelation::ReplaceOne => Self::ReplaceOne,
            NeighbourRelation::AddRemoveOne => Self::AddRemoveOne,
        }
    }
}

/// The relation of a wire enum value (`field` names it in the error).
pub fn relation(value: i32, field: &'static str) -> Result<NeighbourRelation, WireError> {
    match pb::NeighbourRelation::try_from(value) {
        Ok(pb::NeighbourRelation::ReplaceOne) => Ok(NeighbourRelation::ReplaceOne),
        Ok(pb::NeighbourRelation::AddRemoveOne) => Ok(NeighbourRelation::AddRemoveOne),
        _ => Err(WireError::UnknownRelation { field, value }),
    }
}

/// The display name of a wire relation (`unspecified` when it is not one).
pub fn relation_name(value: i32) -> String {
    relation(value, "neighbour_relation").map_or_else(|_| "unspecified".into(), |r| r.to_string())
}

impl From<&LearnerSpec> for pb::LearnerSpec {
    fn from(s: &LearnerSpec) -> Self {
        Self {
            mechanism: s.kind.name().to_owned(),
            epsilon: s.epsilon,
            delta: s.delta,
            lambda: s.l2.fixed().unwrap_or(0.0),
            options: s.options.clone(),
            lambda_auto: s.l2.is_auto(),
            map: s.map.as_deref().map(Into::into),
        }
    }
}

impl TryFrom<pb::LearnerSpec> for LearnerSpec {
    type Error = WireError;

    fn try_from(s: pb::LearnerSpec) -> Result<Self, WireError> {
        let kind = MechanismKind::from_name(&s.mechanism)
            .ok_or_else(|| WireError::UnknownMechanism(quote(&s.mechanism)))?;
        let l2 = match (s.lambda_auto, s.lambda) {
            (false, l) => Lambda::Fixed(l),
            (true, 0.0) => Lambda::Auto,
            (true, l) => {
                return Err(WireError::Invalid {
                    field: "lambda",
                    value: Num(l).to_string(),
                    requirement: "must be 0 (unset) when lambda_auto is true",
                });
            }
        };
        Ok(Self {
            kind,
            epsilon: s.epsilon,
            delta: s.delta,
            l2,
            options: s.options,
            map: s
                .map
                .map(dpagg_shared::data::agreed_map::AgreedMap::try_from)
                .transpose()?
                .map(Box::new),
        })
    }
}

impl From<&PublishedLearner> for pb::PrivateLearner {
    fn from(p: &PublishedLearner) -> Self {
        let m = &p.release.metadata;
        let mut parameters = m.parameters.clone();
        if !m.proven {
            parameters.insert(LEGACY_PROVEN_PARAMETER.to_owned(), 0.0);
        }
        let relation: pb::NeighbourRelation = m.guarantee.relation.into();
        Self {
            weights: p.release.classifier.coefficients().to_vec(),
            metadata: Some(pb::ReleaseMetadata {
                release_id: p.release_id.clone(),
                created_unix_ms: p.created_unix_ms,
                created_at: rfc3339(p.created_unix_ms),
                mechanism: m.mechanism.clone(),
                reference: m.reference.clone(),
                parameters,
                epsilon: m.guarantee.epsilon,
                delta: m.guarantee.delta,
                neighbour_relation: relation as i32,
                max_row_norm: m.assumptions.max_row_norm,
                loss_gradient_bound: m.assumptions.loss_gradient_bound,
                loss_hessian_bound: m.assumptions.loss_hessian_bound,
                schema_fingerprint: p.schema_fingerprint.clone(),
                seeded: m.seeded,
                n: m.n as u64,
                dim: m.dim as u32,
                spec: Some((&p.spec).into()),
                proven: Some(m.proven),
                proof: Some(m.proof.name().to_owned()),
            }),
            // The node signs when it serves (dpagg_proto::signature).
            signature: None,
        }
    }
}

impl TryFrom<pb::PrivateLearner> for PublishedLearner {
    type Error = WireError;

    fn try_from(l: pb::PrivateLearner) -> Result<Self, WireError> {
        let m = l.metadata.ok_or(WireError::Missing("metadata"))?;
        let spec = m
            .spec
            .ok_or(WireError::Missing("metadata.spec"))?
            .try_into()?;
        let mut parameters = m.parameters;
        let legacy = parameters.remove(LEGACY_PROVEN_PARAMETER);
        let n = usize::try_from(m.n).map_err(|_| WireError::Invalid {
            field: "metadata.n",
            value: m.n.to_string(),
            requirement: "must fit this machine's memory",
        })?;
        let proven = m.proven.unwrap_or(legacy != Some(0.0));
        let proof = match m.proof.as_deref() {
            None => ProofCoverage::of_legacy(proven),
            Some(p) => ProofCoverage::parse(p)
                .filter(|p| p.is_proven() == proven)
                .ok_or_else(|| WireError::Invalid {
                    field: "metadata.proof",
                    value: format!("{:?}", p.chars().take(32).collect::<String>()),
                    requirement: "must be noise-as-sampled or real-arithmetic when proven, none when not",
                })?,
        };
        let metadata = ReleaseMetadata {
            mechanism: m.mechanism,
            reference: m.reference,
            parameters,
            guarantee: PrivacyGuarantee {
                epsilon: m.epsilon,
                delta: m.delta,
                relation: relation(m.neighbour_relation, "metadata.neighbour_relation")?,
            },
            assumptions: Assumptions {
                max_row_norm: m.max_row_norm,
                loss_gradient_bound: m.loss_gradient_bound,
                loss_hessian_bound: m.loss_hessian_bound,
            },
            n,
            dim: m.dim as usize,
            seeded: m.seeded,
            proven,
            proof,
        };
        Ok(Self {
            release_id: m.release_id,
            created_unix_ms: m.created_unix_ms,
            spec,
            schema_fingerprint: m.schema_fingerprint,
            release: Release {
                classifier: LinearClassifier::new(l.weights),
                metadata,
            },
        })
    }
}

impl From<&RelationSpend> for pb::RelationSpend {
    fn from(r: &RelationSpend) -> Self {
        Self {
            epsilon: r.epsilon,
            delta: r.delta,
            basic_epsilon: r.basic_epsilon,
            accounting: r.accounting.to_string(),
            releases: u32::try_from(r.charges).unwrap_or(u32::MAX),
        }
    }
}

/// The wire form of a node's budget: its policy, what it has spent, and whether it publishes
/// unproven releases.
pub fn budget(policy: &BudgetPolicy, spent: &Composition, unproven_allowed: bool) -> pb::Budget {
    pb::Budget {
        epsilon_total: policy.epsilon_total,
        delta_total: policy.delta_total,
        epsilon_spent: spent.epsilon,
        delta_spent: spent.delta,
        epsilon_remaining: policy.epsilon_remaining(spent),
        delta_remaining: policy.delta_remaining(spent),
        max_epsilon_per_release: policy.max_epsilon_per_release,
        replace_one: Some((&spent.replace_one).into()),
        add_remove_one: Some((&spent.add_remove_one).into()),
        unproven_allowed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::privacy::guarantee::LOGISTIC_UNIT_BALL;

    fn published(proven: bool) -> PublishedLearner {
        let mut spec = LearnerSpec::new(MechanismKind::DpSgd, 1.0, 1e-5, 0.01);
        spec.options.insert("steps".into(), 500.0);
        PublishedLearner {
            release_id: "0123".into(),
            created_unix_ms: 1_700_000_000_000,
            spec,
            schema_fingerprint: "fp".into(),
            release: Release {
                classifier: LinearClassifier::new(vec![0.5, -1.0]),
                metadata: ReleaseMetadata {
                    mechanism: "dp-sgd".into(),
                    reference: "ref".into(),
                    parameters: [("lambda".to_owned(), 0.01)].into(),
                    guarantee: PrivacyGuarantee::add_remove_one(1.0, 1e-5),
                    assumptions: LOGISTIC_UNIT_BALL,
                    n: 60,
                    dim: 2,
                    seeded: false,
                    proven,
                    proof: ProofCoverage::of_legacy(proven),
                },
            },
        }
    }

    #[test]
    fn a_published_learner_round_trips() {
        for proven in [true, false] {
            let p = published(proven);
            let wire = pb::PrivateLearner::from(&p);
            let m = wire.metadata.as_ref().expect("metadata");
            assert_eq!(m.proven, Some(proven));
            assert_eq!(
                m.parameters.contains_key("proven"),
                !proven,
                "legacy marker"
            );
            assert_eq!(PublishedLearner::try_from(wire), Ok(p));
        }
    }

    /// The proof label travels; an older node's release (no label) reads as `real-arithmetic`
    /// when proven, and a label that contradicts `proven` is refused.
    #[test]
    fn the_proof_label_round_trips_defaults_for_old_nodes_and_must_agree_with_proven() {
        let mut p = published(true);
        p.release.metadata.proof = ProofCoverage::NoiseAsSampled;
        let wire = pb::PrivateLearner::from(&p);
        let m = wire.metadata.as_ref().expect("metadata");
        assert_eq!(m.proof.as_deref(), Some("noise-as-sampled"));
        assert_eq!(PublishedLearner::try_from(wire.clone()), Ok(p.clone()));
        let mut old = wire.clone();
        old.metadata.as_mut().expect("metadata").proof = None;
        let read = PublishedLearner::try_from(old).expect("an old release reads");
        assert_eq!(read.metadata().proof, ProofCoverage::RealArithmetic);
        for bad in ["none", "exact", ""] {
            let mut l = wire.clone();
            l.metadata.as_mut().expect("metadata").proof = Some(bad.into());
            let e = PublishedLearner::try_from(l).expect_err(bad).to_string();
            assert!(e.contains("metadata.proof"), "{e}");
        }
    }

    #[test]
    fn messages_of_older_nodes_are_read_from_the_legacy_parameter() {
        let mut wire = pb::PrivateLearner::from(&published(true));
        let m = wire.metadata.as_mut().expect("metadata");
        m.proven = None;
        m.proof = None;
        assert!(
            PublishedLearner::try_from(wire.clone())
                .expect("valid")
                .metadata()
                .proven
        );
        let m = wire.metadata.as_mut().expect("metadata");
        m.parameters.insert("proven".into(), 0.0);
        let read = PublishedLearner::try_from(wire).expect("valid");
        assert!(!read.metadata().proven);
        assert_eq!(read.metadata().proof, ProofCoverage::None);
        assert!(!read.metadata().parameters.contains_key("proven"));
    }

    #[test]
    fn malformed_messages_name_the_field() {
        let mut wire = pb::PrivateLearner::from(&published(true));
        wire.metadata.as_mut().expect("metadata").neighbour_relation = 7;
        let e = PublishedLearner::try_from(wire).expect_err("relation 7");
        assert_eq!(e.code(), "no_relation");
        let e = PublishedLearner::try_from(pb::PrivateLearner::default()).expect_err("empty");
        assert_eq!(e.code(), "missing_metadata");
        let long = "x".repeat(1 << 20);
        let e = LearnerSpec::try_from(pb::LearnerSpec {
            mechanism: format!("\u{1b}[31m{long}"),
            ..Default::default()
        })
        .expect_err("unknown");
        let text = e.to_string();
        assert!(text.len() < 200 && !text.contains('\u{1b}'), "{text}");
    }

    #[test]
    fn lambda_auto_round_trips_and_fixed_specs_keep_their_wire_form() {
        let fixed = LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, 0.01);
        let wire = pb::LearnerSpec::from(&fixed);
        assert_eq!((wire.lambda, wire.lambda_auto), (0.01, false));
        assert_eq!(LearnerSpec::try_from(wire), Ok(fixed));
        let auto = LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, Lambda::Auto);
        let wire = pb::LearnerSpec::from(&auto);
        assert_eq!((wire.lambda, wire.lambda_auto), (0.0, true));
        assert_eq!(LearnerSpec::try_from(wire.clone()), Ok(auto));
        // An older client that never sets lambda_auto and sends no lambda asks for λ = 0, which
        // the mechanism refuses, exactly as before.
        let old = pb::LearnerSpec {
            lambda_auto: false,
            lambda: 0.0,
            ..wire.clone()
        };
        assert_eq!(
            LearnerSpec::try_from(old).expect("read").l2,
            Lambda::Fixed(0.0)
        );
        let both = pb::LearnerSpec {
            lambda: 0.5,
            ..wire
        };
        let e = LearnerSpec::try_from(both.clone()).expect_err("auto and a number");
        assert!(e.to_string().contains("lambda_auto"), "{e}");
        let huge = pb::LearnerSpec {
            lambda: 1e308,
            ..both
        };
        let e = LearnerSpec::try_from(huge).expect_err("auto and a number");
        assert!(e.to_string().starts_with("`lambda` = 1e308:"), "{e}");
    }

    #[test]
    fn a_learner_of_any_creation_time_goes_back_to_the_wire() {
        // Found by proto/tests/fuzz.rs: a peer's release dated after year 9999 was read, then
        // panicked when written back (rfc3339 of its creation time).
        let mut p = published(true);
        for t in [i64::MAX, i64::MIN, 253_402_300_800_000] {
            p.created_unix_ms = t;
            let wire = pb::PrivateLearner::from(&p);
            let m = wire.metadata.as_ref().expect("metadata");
            assert_eq!(m.created_unix_ms, t);
            assert!(m.created_at.starts_with("9999-") || m.created_at.starts_with("1970-"));
            assert_eq!(PublishedLearner::try_from(wire), Ok(p.clone()));
        }
    }

    #[test]
    fn maps_encode_in_the_same_order_every_time() {
        use prost::Message;
        let mut p = published(false);
        for k in ["zeta", "alpha", "mid", "beta", "omega"] {
            p.release.metadata.parameters.insert(k.into(), 1.0);
        }
        let first = pb::PrivateLearner::from(&p).encode_to_vec();
        for _ in 0..20 {
            assert_eq!(pb::PrivateLearner::from(&p).encode_to_vec(), first);
        }
    }
}
