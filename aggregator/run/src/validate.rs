//! Checks a learner received from a node before it may be aggregated.
//!
//! A learner is aggregated only if its weights fit the aggregator's schema (dimension, all finite),
//! its stated guarantee is within the acceptance policy, it was trained under the same public
//! schema, it says it was made with a secure RNG (seeded noise gives no privacy), its proof's
//! norm assumption is the one the schema normalisation guarantees, and — when a spec was asked
//! for — it is a release of that spec. Anything else is excluded with a [`Violation`] naming why.

use crate::config::{Acceptance, LearnerRequest};
use crate::wire::{MAX_TEXT, clean};
use dpagg_proto::convert::WireError;
use dpagg_proto::v1 as pb;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::guarantee::{NeighbourRelation, ProofCoverage};
use dpagg_shared::privacy::release::PublishedLearner;

/// Why a learner is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Violation {
    /// The learner has no release metadata, so its guarantee is unknown.
    #[error("no release metadata: the guarantee is unknown")]
    MissingMetadata,
    /// The message cannot be read as a release (a missing spec, an unknown mechanism, …).
    #[error("malformed release: {0}")]
    Malformed(WireError),
    /// The weights do not fit the schema.
    #[error("dimension mismatch: {found} coefficients, the schema has {expected} columns")]
    DimensionMismatch {
        /// Number of weights received.
        found: usize,
        /// The schema's dimension.
        expected: usize,
    },
    /// A weight is NaN or infinite.
    #[error("non-finite weight at index {index}")]
    NonFinite {
        /// Its index.
        index: usize,
    },
    /// A guarantee no mechanism that looks at the data can give: ε below
    /// [`MIN_PLAUSIBLE_EPSILON`] (0, negative, or a subnormal such as 5e-324), or a negative δ.
    #[error(
        "implausible guarantee: ε = {epsilon}, δ = {delta} (a learner trained on data claims ε ≥ {MIN_PLAUSIBLE_EPSILON:e})"
    )]
    ImplausibleGuarantee {
        /// The claimed ε.
        epsilon: f64,
        /// The claimed δ.
        delta: f64,
    },
    /// The weights are larger than any learner of this federation can be.
    #[error(
        "weights out of bound: ‖w‖₂ = {norm:.3e} exceeds {bound:.0e}, the largest norm accepted \
         (rows lie in the unit ball, so such a learner only outputs saturated 0/1 predictions)"
    )]
    WeightsOutOfBound {
        /// ‖w‖₂.
        norm: f64,
        /// [`MAX_WEIGHT_NORM`].
        bound: f64,
    },
    /// ε (or a malformed ε) over the policy.
    #[error(
        "over policy: ε = {epsilon}{converted} exceeds the accepted maximum {max} (replace-one)"
    )]
    EpsilonOverPolicy {
        /// The learner's ε.
        epsilon: f64,
        /// How it reads under replace-one, when it was stated under another relation.
        converted: String,
        /// The policy's maximum.
        max: f64,
    },
    /// δ over the policy.
    #[error("over policy: δ = {delta}{converted} exceeds the accepted maximum {max} (replace-one)")]
    DeltaOverPolicy {
        /// The learner's δ.
        delta: f64,
        /// How it reads under replace-one, when it was stated under another relation.
        converted: String,
        /// The policy's maximum.
        max: f64,
    },
    /// Trained under another schema.
    #[error(
        "schema mismatch{}: learner fingerprint {}, ours {}",
        differs_text(differs),
        short_fingerprint(theirs),
        short_fingerprint(ours)
    )]
    SchemaMismatch {
        /// Its fingerprint.
        theirs: String,
        /// Ours.
        ours: String,
        /// The keys in which the node's described schema differs from ours
        /// ([`explain_mismatch`]; empty until it is filled in).
        differs: Vec<String>,
    },
    /// Made with seeded noise.
    #[error("seeded release: its noise came from a seeded generator, so it has no privacy")]
    Seeded,
    /// Its guarantee is not proven for the sampler used.
    #[error(
        "unproven guarantee: the release says its guarantee is not proven (allow_unproven is off)"
    )]
    Unproven,
    /// Its proof does not cover the noise as sampled, and the policy requires one that does.
    #[error(
        "proof covers {proof}: require_noise_as_sampled is on (this policy accepts only releases whose proof covers the noise as sampled)"
    )]
    ProofBelowPolicy {
        /// What the release's proof covers.
        proof: ProofCoverage,
    },
    /// The proof assumed a larger row norm than the schema guarantees.
    #[error("norm assumption {bound} differs from the unit ball the schema guarantees")]
    NormAssumption {
        /// The assumed bound.
        bound: f64,
    },
    /// The guarantee has no neighbour relation, so it cannot be interpreted.
    #[error("no neighbour relation: the guarantee cannot be interpreted")]
    NoRelation,
    /// Not a release of the requested spec.
    #[error("spec mismatch: asked for {asked}, got {got}")]
    SpecMismatch {
        /// What was asked for.
        asked: String,
        /// What came.
        got: String,
    },
}

impl Violation {
    /// A stable short code for reports and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Self::MissingMetadata => "missing_metadata",
            Self::Malformed(_) => "malformed",
            Self::DimensionMismatch { .. } => "dimension_mismatch",
            Self::NonFinite { .. } => "non_finite",
            Self::ImplausibleGuarantee { .. } => "implausible_guarantee",
            Self::WeightsOutOfBound { .. } => "weights_out_of_bound",
            Self::EpsilonOverPolicy { .. } | Self::DeltaOverPolicy { .. } => "over_policy",
            Self::SchemaMismatch { .. } => "schema_mismatch",
            Self::Seeded => "seeded",
            Self::Unproven => "unproven",
            Self::ProofBelowPolicy { .. } => "proof_below_policy",
            Self::NormAssumption { .. } => "norm_assumption",
            Self::NoRelation => "no_relation",
            Self::SpecMismatch { .. } => "spec_mismatch",
        }
    }
}

/// The largest ‖w‖₂ accepted. Every row the aggregator scores lies in the unit ball, so a
/// learner's margin |w·x| is at most ‖w‖₂; every mechanism here releases a regularised
/// minimiser (‖w*‖₂ ≤ 1/λ, since the logistic loss has gradients of norm ≤ 1) plus noise whose
/// norm exceeds 10⁶ with negligible probability at any accepted ε and λ ≥ 10⁻⁶. Finite weights of
/// 10³⁰⁰ would otherwise reach the mirror-averaging losses and overflow them.
pub const MAX_WEIGHT_NORM: f64 = 1e6;

/// What the aggregator checks a learner against.
#[derive(Debug, Clone)]
pub struct Context<'a> {
    /// The dimension of the learners' rows (the schema's, or the agreed map's).
    pub dim: usize,
    /// The fingerprint learners must carry: the schema's, or the schema with the agreed map
    /// applied.
    pub fingerprint: &'a str,
    /// The public schema's fingerprint, which every node must describe.
    pub public_fingerprint: &'a str,
    /// The public schema itself, to name the keys a node's schema differs in (`None`: only
    /// the fingerprints are compared).
    pub public_schema: Option<&'a Schema>,
    /// The policy.
    pub accept: Acceptance,
    /// What was asked for.
    pub request: &'a LearnerRequest,
}

impl From<WireError> for Violation {
    fn from(e: WireError) -> Self {
        match e.code() {
            "missing_metadata" => Self::MissingMetadata,
            "no_relation" => Self::NoRelation,
            _ => Self::Malformed(e),
        }
    }
}

/// " (the node's schema differs in: …)" for a mismatch's differences, or nothing; first in
/// the message, since a report keeps its first [`MAX_TEXT`] characters.
fn differs_text(differs: &[String]) -> String {
    if differs.is_empty() {
        String::new()
    } else {
        format!(" (the node's schema differs in: {})", differs.join("; "))
    }
}

/// A fingerprint's first 16 characters (enough to tell two apart by eye).
fn short_fingerprint(f: &str) -> String {
    match f.char_indices().nth(16) {
        Some((at, _)) => format!("{}…", &f[..at]),
        None => f.to_owned(),
    }
}

/// Names what a schema mismatch is about: the keys in which `described_schema` (the TOML text
/// the node's `Describe` served, public) differs from the public schema, or — when they agree —
/// that the learner was trained under another agreed map. Each key is cleaned of control
/// characters, since a node wrote it.
pub fn explain_mismatch(v: &mut Violation, described_schema: &str, cx: &Context<'_>) {
    let (Violation::SchemaMismatch { differs, .. }, Some(ours)) = (v, cx.public_schema) else {
        return;
    };
    *differs = match Schema::from_toml_str(described_schema, "the node's schema") {
        Ok(theirs) => {
            let keys = ours.differences(&theirs);
            if keys.is_empty() {
                vec![
                    "nothing of the node's schema: the learner was trained under another \
                     agreed map than this run's (or none)"
                        .to_owned(),
                ]
            } else {
                keys
            }
        }
        Err(e) => vec![format!("the node's described schema does not read: {e}")],
    }
    .iter()
    .map(|d| clean(d, MAX_TEXT))
    .collect();
}

/// Reads `learner` (whose node described its schema as `described_fingerprint`) and checks it:
/// the accepted release, or why it is refused.
pub fn validate(
    learner: &pb::PrivateLearner,
    described_fingerprint: &str,
    cx: &Context<'_>,
) -> Result<PublishedLearner, Violation> {
    let published = PublishedLearner::try_from(learner.clone())?;
    check_shape(&published, cx)?;
    check_policy(&published, cx)?;
    check_provenance(&published, described_fingerprint, cx)?;
    check_spec(&published, cx)?;
    Ok(published)
}

/// Dimension of the coefficients and of the metadata; every coefficient finite.
fn check_shape(p: &PublishedLearner, cx: &Context<'_>) -> Result<(), Violation> {
    let coefficients = p.classifier().coefficients();
    if coefficients.len() != cx.dim || p.metadata().dim != cx.dim {
        return Err(Violation::DimensionMismatch {
            found: coefficients.len(),
            expected: cx.dim,
        });
    }
    if let Some(index) = coefficients.iter().position(|w| !w.is_finite()) {
        return Err(Violation::NonFinite { index });
    }
    // Scaled so that weights near f64::MAX do not overflow the norm itself.
    let largest = coefficients.iter().fold(0.0_f64, |m, w| m.max(w.abs()));
    let norm = if largest > 0.0 {
        largest
            * coefficients
                .iter()
                .map(|w| (w / largest).powi(2))
                .sum::<f64>()
                .sqrt()
    } else {
        0.0
    };
    if norm > MAX_WEIGHT_NORM {
        return Err(Violation::WeightsOutOfBound {
            norm,
            bound: MAX_WEIGHT_NORM,
        });
    }
    Ok(())
}

/// The guarantee within the acceptance policy. The policy is stated under replace-one; an
/// add/remove-one guarantee is compared as what it implies there. A NaN guarantee is outside
/// every range, so it is refused too.
/// The smallest ε a learner may claim. Below it every mechanism here would add noise millions of
/// times the weights' bound, so such a learner is noise, and a claim like 5e-324 (the smallest
/// subnormal) says only that its node's metadata cannot be taken at its word. Public, and far
/// below any ε a federation asks for.
pub const MIN_PLAUSIBLE_EPSILON: f64 = 1e-6;

fn check_policy(p: &PublishedLearner, cx: &Context<'_>) -> Result<(), Violation> {
    let stated = p.metadata().guarantee;
    let relation = stated.relation;
    let r = stated.as_replace_one();
    let restated = stated.restated(NeighbourRelation::ReplaceOne).is_some();
    let note = |v: f64| {
        if restated {
            format!(" ({relation}; {v} under replace-one)")
        } else {
            String::new()
        }
    };
    if stated.epsilon < MIN_PLAUSIBLE_EPSILON || stated.delta < 0.0 {
        return Err(Violation::ImplausibleGuarantee {
            epsilon: stated.epsilon,
            delta: stated.delta,
        });
    }
    if !(0.0..=cx.accept.max_epsilon).contains(&r.epsilon) {
        return Err(Violation::EpsilonOverPolicy {
            epsilon: stated.epsilon,
            converted: note(r.epsilon),
            max: cx.accept.max_epsilon,
        });
    }
    if !(0.0..=cx.accept.max_delta).contains(&r.delta) {
        return Err(Violation::DeltaOverPolicy {
            delta: stated.delta,
            converted: note(r.delta),
            max: cx.accept.max_delta,
        });
    }
    Ok(())
}

/// Same schema (on the release and as described), a secure RNG, a proven guarantee and the norm
/// assumption the schema normalisation guarantees.
fn check_provenance(
    p: &PublishedLearner,
    described_fingerprint: &str,
    cx: &Context<'_>,
) -> Result<(), Violation> {
    let m = p.metadata();
    if cx.accept.schema_must_match {
        for (theirs, ours) in [
            (p.schema_fingerprint.as_str(), cx.fingerprint),
            (described_fingerprint, cx.public_fingerprint),
        ] {
            if theirs != ours {
                return Err(Violation::SchemaMismatch {
                    theirs: theirs.to_owned(),
                    ours: ours.to_owned(),
                    differs: Vec::new(),
                });
            }
        }
    }
    if m.seeded && !cx.accept.allow_seeded {
        return Err(Violation::Seeded);
    }
    if !m.proven && !cx.accept.allow_unproven {
        return Err(Violation::Unproven);
    }
    if m.proof != ProofCoverage::NoiseAsSampled && cx.accept.require_noise_as_sampled {
        return Err(Violation::ProofBelowPolicy { proof: m.proof });
    }
    let bound = m.assumptions.max_row_norm;
    if !(bound > 0.0 && bound <= 1.0) {
        return Err(Violation::NormAssumption { bound });
    }
    Ok(())
}

/// When a spec was asked for, the release is one of exactly that spec.
fn check_spec(p: &PublishedLearner, cx: &Context<'_>) -> Result<(), Violation> {
    match cx.request {
        LearnerRequest::Spec { spec, .. } if *spec != p.spec => Err(Violation::SpecMismatch {
            asked: spec.describe(),
            got: p.spec.describe(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FP: &str = "abc";

    fn request() -> LearnerRequest {
        LearnerRequest::Spec {
            spec: dpagg_shared::LearnerSpec::new(
                dpagg_shared::MechanismKind::ObjectivePerturbation,
                1.0,
                0.0,
                0.01,
            ),
            publish: false,
        }
    }

    fn accept() -> Acceptance {
        Acceptance {
            max_epsilon: 2.0,
            max_delta: 1e-5,
            schema_must_match: true,
            allow_seeded: false,
            allow_unproven: false,
            require_noise_as_sampled: false,
            min_learners: 1,
        }
    }

    fn good() -> pb::PrivateLearner {
        pb::PrivateLearner {
            weights: vec![0.5, -0.25, 1.0],
            metadata: Some(pb::ReleaseMetadata {
                epsilon: 1.0,
                delta: 0.0,
                neighbour_relation: pb::NeighbourRelation::ReplaceOne as i32,
                max_row_norm: 1.0,
                schema_fingerprint: FP.into(),
                dim: 3,
                spec: Some(pb::LearnerSpec {
                    mechanism: "objective-perturbation".into(),
                    epsilon: 1.0,
                    delta: 0.0,
                    lambda: 0.01,
                    options: Default::default(),
                    lambda_auto: false,
                    map: None,
                }),
                ..Default::default()
            }),
            signature: None,
        }
    }

    fn check(l: &pb::PrivateLearner) -> Result<(), Violation> {
        let r = request();
        validate(
            l,
            FP,
            &Context {
                dim: 3,
                fingerprint: FP,
                public_fingerprint: FP,
                public_schema: None,
                accept: accept(),
                request: &r,
            },
        )
        .map(|_| ())
    }

    fn with(f: impl FnOnce(&mut pb::PrivateLearner)) -> pb::PrivateLearner {
        let mut l = good();
        f(&mut l);
        l
    }

    fn meta(l: &mut pb::PrivateLearner) -> &mut pb::ReleaseMetadata {
        l.metadata.as_mut().expect("metadata")
    }

    #[test]
    fn a_valid_learner_passes() {
        assert_eq!(check(&good()), Ok(()));
    }

    #[test]
    fn each_violation_is_named() {
        let cases: Vec<(pb::PrivateLearner, &str)> = vec![
            (with(|l| l.metadata = None), "missing_metadata"),
            (with(|l| l.weights.push(0.0)), "dimension_mismatch"),
            (with(|l| l.weights[1] = f64::NAN), "non_finite"),
            (with(|l| l.weights[2] = f64::INFINITY), "non_finite"),
            (with(|l| l.weights[2] = 1e300), "weights_out_of_bound"),
            (with(|l| l.weights[0] = 1.0001e6), "weights_out_of_bound"),
            (with(|l| l.weights.fill(f64::MAX)), "weights_out_of_bound"),
            (with(|l| meta(l).epsilon = 0.0), "implausible_guarantee"),
            (with(|l| meta(l).epsilon = -1.0), "implausible_guarantee"),
            (with(|l| meta(l).epsilon = 5e-324), "implausible_guarantee"),
            (with(|l| meta(l).epsilon = 9e-7), "implausible_guarantee"),
            (with(|l| meta(l).delta = -1e-9), "implausible_guarantee"),
            (with(|l| meta(l).epsilon = 2.5), "over_policy"),
            (with(|l| meta(l).epsilon = f64::NAN), "over_policy"),
            (with(|l| meta(l).delta = 1e-3), "over_policy"),
            (
                with(|l| meta(l).schema_fingerprint = "other".into()),
                "schema_mismatch",
            ),
            (with(|l| meta(l).seeded = true), "seeded"),
            (
                with(|l| {
                    meta(l).parameters.insert("proven".into(), 0.0);
                }),
                "unproven",
            ),
            (with(|l| meta(l).max_row_norm = 2.0), "norm_assumption"),
            (with(|l| meta(l).neighbour_relation = 0), "no_relation"),
            (with(|l| meta(l).neighbour_relation = 7), "no_relation"),
            (
                with(|l| meta(l).spec.as_mut().expect("spec").lambda = 0.1),
                "spec_mismatch",
            ),
            (with(|l| meta(l).spec = None), "malformed"),
            (
                with(|l| meta(l).spec.as_mut().expect("spec").mechanism = "x".into()),
                "malformed",
            ),
            (with(|l| meta(l).proven = Some(false)), "unproven"),
            (with(|l| meta(l).proof = Some("exact".into())), "malformed"),
        ];
        for (learner, code) in cases {
            let got = check(&learner).expect_err(code);
            assert_eq!(got.code(), code, "{got}");
        }
    }

    /// By default a proof of real arithmetic is accepted (an older node's release reads as one);
    /// `require_noise_as_sampled` refuses it and keeps releases whose noise the proof covers.
    #[test]
    fn require_noise_as_sampled_refuses_a_proof_of_real_arithmetic_only() {
        let r = request();
        let strict = |l: &pb::PrivateLearner| {
            let accept = Acceptance {
                require_noise_as_sampled: true,
                ..accept()
            };
            let cx = Context {
                dim: 3,
                fingerprint: FP,
                public_fingerprint: FP,
                public_schema: None,
                accept,
                request: &r,
            };
            validate(l, FP, &cx).map(|_| ()).map_err(|v| v.code())
        };
        let real = with(|l| meta(l).proof = Some("real-arithmetic".into()));
        let sampled = with(|l| meta(l).proof = Some("noise-as-sampled".into()));
        assert_eq!(check(&real), Ok(()));
        assert_eq!(check(&good()), Ok(()), "no label: an older node's release");
        assert_eq!(strict(&real), Err("proof_below_policy"));
        assert_eq!(strict(&good()), Err("proof_below_policy"));
        assert_eq!(strict(&sampled), Ok(()));
    }

    #[test]
    fn add_remove_one_guarantees_are_compared_under_replace_one() {
        // ε = 1.2 add/remove-one is 2.4 under replace-one: over a maximum of 2.
        let l = with(|l| {
            meta(l).neighbour_relation = pb::NeighbourRelation::AddRemoveOne as i32;
            meta(l).epsilon = 1.2;
        });
        let e = check(&l).expect_err("2.4 > 2");
        assert_eq!(e.code(), "over_policy");
        assert!(e.to_string().contains("2.4 under replace-one"), "{e}");
        // δ = 4e-6 add/remove at ε = 0.9 is (1 + e^0.9)·4e-6 ≈ 1.38e-5 > 1e-5.
        let l = with(|l| {
            meta(l).neighbour_relation = pb::NeighbourRelation::AddRemoveOne as i32;
            meta(l).epsilon = 0.9;
            meta(l).delta = 4e-6;
        });
        assert_eq!(check(&l).expect_err("δ").code(), "over_policy");
        let l = with(|l| {
            meta(l).neighbour_relation = pb::NeighbourRelation::AddRemoveOne as i32;
            meta(l).epsilon = 0.9;
        });
        assert_eq!(check(&l), Ok(()));
    }

    #[test]
    fn described_schema_must_match_too() {
        let r = request();
        let cx = Context {
            dim: 3,
            fingerprint: FP,
            public_fingerprint: FP,
            public_schema: None,
            accept: accept(),
            request: &r,
        };
        let e = validate(&good(), "other", &cx).expect_err("described schema differs");
        assert_eq!(e.code(), "schema_mismatch");
    }

    #[test]
    fn latest_accepts_any_spec_within_policy() {
        let r = LearnerRequest::Latest;
        let l = with(|l| meta(l).spec.as_mut().expect("spec").lambda = 0.1);
        let cx = Context {
            dim: 3,
            fingerprint: FP,
            public_fingerprint: FP,
            public_schema: None,
            accept: accept(),
            request: &r,
        };
        assert!(validate(&l, FP, &cx).is_ok());
    }
}
