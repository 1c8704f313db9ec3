//! What leaves a node: a [`Release`] (a [`LinearClassifier`] and the [`ReleaseMetadata`] saying
//! how it was made and what it guarantees) and, once recorded by a node, a [`PublishedLearner`].
//!
//! These are the domain types; `dpagg_proto::convert` is the one place that turns them into
//! protobuf messages and back.

use super::guarantee::{Assumptions, PrivacyGuarantee, ProofCoverage};
use super::mechanism::LearnerSpec;
use crate::learn::classifier::LinearClassifier;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Mechanism parameters by name (λ, ε′, Δ, noise scale, …), in name order.
pub type Parameters = BTreeMap<String, f64>;

/// Everything a consumer of a released learner needs to know about how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredMetadata")]
pub struct ReleaseMetadata {
    /// Mechanism identifier, e.g. `objective-perturbation` (the variant actually run).
    pub mechanism: String,
    /// The paper, algorithm and equation implemented.
    pub reference: String,
    /// Mechanism parameters (λ, ε′, Δ, noise scale, …) by name.
    pub parameters: Parameters,
    /// The guarantee this release satisfies.
    pub guarantee: PrivacyGuarantee,
    /// What the proof of that guarantee assumes.
    pub assumptions: Assumptions,
    /// Number of training rows (public under replace-one neighbours).
    pub n: usize,
    /// Dimension of θ.
    pub dim: usize,
    /// True when the noise came from a seeded generator: such a release gives NO privacy.
    pub seeded: bool,
    /// False when the stated guarantee is not proven for the algorithm as run (e.g. an
    /// approximate sampler with no convergence bound); clients that need a proof refuse it.
    pub proven: bool,
    /// What the proof covers: the noise as sampled, real arithmetic only, or nothing
    /// (`none` exactly when `proven` is false).
    pub proof: ProofCoverage,
}

/// [`ReleaseMetadata`] as stored by earlier versions, which had no `proven` field and recorded
/// an unproven release as `parameters["proven"] = 0` (and proven Gibbs releases as 1).
#[derive(Deserialize)]
struct StoredMetadata {
    mechanism: String,
    reference: String,
    parameters: Parameters,
    guarantee: PrivacyGuarantee,
    assumptions: Assumptions,
    n: usize,
    dim: usize,
    seeded: bool,
    proven: Option<bool>,
    proof: Option<ProofCoverage>,
}

impl From<StoredMetadata> for ReleaseMetadata {
    fn from(s: StoredMetadata) -> Self {
        let mut parameters = s.parameters;
        let legacy = parameters.remove("proven");
        let proven = s.proven.unwrap_or(legacy != Some(0.0));
        Self {
            mechanism: s.mechanism,
            reference: s.reference,
            parameters,
            guarantee: s.guarantee,
            assumptions: s.assumptions,
            n: s.n,
            dim: s.dim,
            seeded: s.seeded,
            proven,
            proof: s.proof.unwrap_or(ProofCoverage::of_legacy(proven)),
        }
    }
}

/// A released learner and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Release {
    /// The classifier.
    pub classifier: LinearClassifier,
    /// How it was produced.
    pub metadata: ReleaseMetadata,
}

/// A release as a node recorded and serves it: the release plus its identity.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedLearner {
    /// Unique id (32 lowercase hex characters from the OS RNG).
    pub release_id: String,
    /// When the release was recorded, in milliseconds since the Unix epoch.
    pub created_unix_ms: i64,
    /// The spec that was asked for.
    pub spec: LearnerSpec,
    /// Fingerprint of the public schema the learner was trained under.
    pub schema_fingerprint: String,
    /// The classifier and its metadata.
    pub release: Release,
}

impl PublishedLearner {
    /// The release's metadata.
    pub fn metadata(&self) -> &ReleaseMetadata {
        &self.release.metadata
    }

    /// The released classifier.
    pub fn classifier(&self) -> &LinearClassifier {
        &self.release.classifier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_proven_parameter_becomes_the_field() {
        let base = r#"{"mechanism":"m","reference":"r","guarantee":{"epsilon":1.0,"delta":0.0,"relation":"replace-one"},"assumptions":{"max_row_norm":1.0,"loss_gradient_bound":1.0,"loss_hessian_bound":0.25},"n":3,"dim":2,"seeded":false,"#;
        let read = |tail: &str| -> ReleaseMetadata {
            serde_json::from_str(&format!("{base}{tail}")).expect("valid metadata")
        };
        let old_unproven = read(r#""parameters":{"lambda":0.1,"proven":0.0}}"#);
        assert!(!old_unproven.proven);
        assert_eq!(old_unproven.parameters.len(), 1);
        assert!(read(r#""parameters":{"proven":1.0}}"#).proven);
        assert!(read(r#""parameters":{}}"#).proven);
        let new = read(r#""parameters":{},"proven":false}"#);
        assert!(!new.proven);
        let again: ReleaseMetadata =
            serde_json::from_str(&serde_json::to_string(&new).expect("json")).expect("valid");
        assert_eq!(again, new);
    }
}
