//! Checks a fetched data release before its rows are pooled, as [`crate::validate`] does
//! for learners: signature by the organisation's key over the body bytes as served, identity
//! against the certificate, then the decoded [`PublishedData`] — schema fingerprint, maker,
//! kind, no seeded noise, the acceptance policy's ε and δ, and its shape. Anything else is
//! excluded with a [`DataViolation`] naming why.

use super::{Got, RawRows, SyntheticNode};
use crate::config::{Acceptance, SyntheticRequest};
use crate::fetch::Exclusion;
use crate::trust::Trust;
use crate::wire::clean;
use dpagg_proto::convert::WireError;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::data_release::{DataPayload, PublishedData};
use dpagg_shared::privacy::synthetic::mvn_release::from_unit_cube;

/// Why a data release is refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataViolation {
    /// Its signature is missing, wrong, or its organisation's key cannot be read.
    #[error(transparent)]
    Signature(#[from] Exclusion),
    /// The node's certificate names another organisation than the one it described.
    #[error("identity: the certificate is {certificate:?}'s")]
    Identity {
        /// The certificate's organisation.
        certificate: String,
    },
    /// The body cannot be read as a data release.
    #[error("malformed release: {0}")]
    Malformed(#[from] WireError),
    /// Made under another schema.
    #[error("invalid release: trained under another schema")]
    OtherSchema,
    /// Made by another organisation than the one serving it.
    #[error("invalid release: made by {made_by:?}, served by {served_by:?}")]
    OtherOrganisation {
        /// The organisation the body names (cleaned).
        made_by: String,
        /// The organisation that served it.
        served_by: String,
    },
    /// Another kind than the one asked for.
    #[error("invalid release: kind {0:?}")]
    OtherKind(String),
    /// Seeded noise: no privacy.
    #[error("invalid release: seeded noise: no privacy")]
    Seeded,
    /// A kind whose guarantee is not proven for its sampler as run, with `allow_unproven` off.
    #[error("unproven guarantee: {0} is not proven for its sampler as run (allow_unproven is off)")]
    Unproven(String),
    /// The guarantee, read under replace-one, is over the acceptance policy.
    #[error("invalid release: (ε, δ) = ({epsilon}, {delta}) over the acceptance policy")]
    OverPolicy {
        /// ε under replace-one.
        epsilon: f64,
        /// δ under replace-one.
        delta: f64,
    },
    /// The payload is not synthetic rows.
    #[error("invalid release: not synthetic rows")]
    NotSynthetic,
    /// The rows do not fit the schema, or a value is not a number.
    #[error(
        "invalid release: {found} columns, {expected} expected, or a value that is not a number"
    )]
    Shape {
        /// Columns received.
        found: usize,
        /// d + 1.
        expected: usize,
    },
}

/// Checks a release and returns its rows (raw units, labels ±1) with its report line.
pub(super) fn screen(
    got: &Got,
    request: &SyntheticRequest,
    schema: &Schema,
    fingerprint: &str,
    accept: &Acceptance,
    trust: &Trust,
) -> Result<(RawRows, SyntheticNode), DataViolation> {
    let signature = trust.check_data(&got.organisation_id, &got.release)?;
    if let Some(cert) = &got.certified
        && *cert != got.organisation_id
    {
        return Err(DataViolation::Identity {
            certificate: cert.clone(),
        });
    }
    let published = dpagg_proto::data::decode(&got.release)?;
    let values = validate(&published, got, request, schema, fingerprint, accept)?;
    let pooled: RawRows = values
        .chunks_exact(schema.features.len() + 1)
        .map(|point| from_unit_cube(&schema.features, point))
        .collect();
    let line = SyntheticNode {
        endpoint: String::new(),
        organisation_id: Some(got.organisation_id.clone()),
        status: "included",
        release_id: Some(clean(&published.release_id, 64)),
        epsilon: Some(published.guarantee.epsilon),
        delta: Some(published.guarantee.delta),
        rows: pooled.len(),
        signature,
        release_body: Some(dpagg_proto::signature::hex(&got.release.body)),
        exclusion: None,
    };
    Ok((pooled, line))
}

/// The acceptance checks of a decoded release; its synthetic values when it passes.
fn validate<'a>(
    published: &'a PublishedData,
    got: &Got,
    request: &SyntheticRequest,
    schema: &Schema,
    fingerprint: &str,
    accept: &Acceptance,
) -> Result<&'a [f64], DataViolation> {
    if published.schema_fingerprint != fingerprint || got.fingerprint != fingerprint {
        return Err(DataViolation::OtherSchema);
    }
    if published.organisation_id != got.organisation_id {
        return Err(DataViolation::OtherOrganisation {
            made_by: clean(&published.organisation_id, 80),
            served_by: got.organisation_id.clone(),
        });
    }
    if published.spec.kind != request.spec.kind {
        return Err(DataViolation::OtherKind(published.spec.kind.name().into()));
    }
    if published.seeded && !accept.allow_seeded {
        return Err(DataViolation::Seeded);
    }
    if !published.spec.kind.is_proven() && !accept.allow_unproven {
        return Err(DataViolation::Unproven(published.spec.kind.name().into()));
    }
    let g = published.guarantee.as_replace_one();
    if !(g.epsilon <= accept.max_epsilon && g.delta <= accept.max_delta) {
        return Err(DataViolation::OverPolicy {
            epsilon: g.epsilon,
            delta: g.delta,
        });
    }
    let DataPayload::Synthetic { dim, values, .. } = &published.payload else {
        return Err(DataViolation::NotSynthetic);
    };
    let expected = schema.features.len() + 1;
    if *dim != expected || values.iter().any(|v| !v.is_finite()) {
        return Err(DataViolation::Shape {
            found: *dim,
            expected,
        });
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::spec_for;
    use dpagg_proto::v1 as pb;
    use dpagg_shared::data::bundled::Bundled;
    use dpagg_shared::privacy::data_release::{DataKind, DataSpec};
    use dpagg_shared::privacy::guarantee::PrivacyGuarantee;

    fn accept() -> Acceptance {
        Acceptance {
            max_epsilon: 1.0,
            max_delta: 1e-5,
            schema_must_match: true,
            allow_seeded: false,
            allow_unproven: false,
            require_noise_as_sampled: false,
            min_learners: 1,
        }
    }

    /// A release of `spec` by org-1 under `schema`, with one all-zero synthetic row.
    fn release(spec: DataSpec, schema: &Schema) -> (PublishedData, Got) {
        let dim = schema.features.len() + 1;
        let published = PublishedData {
            release_id: "ab".repeat(16),
            created_unix_ms: 0,
            organisation_id: "org-1".into(),
            schema_fingerprint: schema.fingerprint(),
            parameters: spec.parameters(),
            guarantee: PrivacyGuarantee::replace_one(spec.epsilon, spec.delta),
            spec,
            seeded: false,
            n: 100,
            features: Vec::new(),
            payload: DataPayload::Synthetic {
                dim,
                rows: 1,
                values: vec![0.0; dim],
            },
        };
        let got = Got {
            organisation_id: "org-1".into(),
            certified: None,
            fingerprint: schema.fingerprint(),
            release: pb::DataRelease::default(),
        };
        (published, got)
    }

    #[test]
    fn violations_are_typed() {
        let schema = Bundled::Diabetes.schema();
        let fingerprint = schema.fingerprint();
        let request = SyntheticRequest {
            spec: spec_for(0.5, 1e-6, 10),
            publish: false,
        };
        let check = |p: &PublishedData, g: &Got| {
            validate(p, g, &request, &schema, &fingerprint, &accept()).map(<[f64]>::len)
        };
        let (ok, got) = release(request.spec.clone(), &schema);
        assert_eq!(check(&ok, &got), Ok(schema.features.len() + 1));
        let (mut seeded, _) = release(request.spec.clone(), &schema);
        seeded.seeded = true;
        assert_eq!(check(&seeded, &got), Err(DataViolation::Seeded));
        let (over, _) = release(spec_for(2.0, 1e-6, 10), &schema);
        assert!(matches!(
            check(&over, &got),
            Err(DataViolation::OverPolicy { .. })
        ));
        let (other, _) = release(DataSpec::new(DataKind::HISTOGRAM, 0.5, 0.0), &schema);
        assert_eq!(
            check(&other, &got),
            Err(DataViolation::OtherKind("histogram".into()))
        );
        let (mut foreign, _) = release(request.spec.clone(), &schema);
        foreign.organisation_id = "org-2".into();
        assert!(matches!(
            check(&foreign, &got),
            Err(DataViolation::OtherOrganisation { .. })
        ));
        let (mut narrow, _) = release(request.spec.clone(), &schema);
        narrow.payload = DataPayload::Synthetic {
            dim: 2,
            rows: 1,
            values: vec![0.0, f64::NAN],
        };
        assert!(matches!(
            check(&narrow, &got),
            Err(DataViolation::Shape { found: 2, .. })
        ));
    }

    #[test]
    fn an_unproven_kind_is_refused_unless_allowed() {
        let schema = Bundled::Diabetes.schema();
        let fingerprint = schema.fingerprint();
        let request = SyntheticRequest {
            spec: DataSpec::new(DataKind::MVN_SYNTHETIC, 0.0, 1e-6),
            publish: false,
        };
        let (plain, got) = release(request.spec.clone(), &schema);
        let refused = validate(&plain, &got, &request, &schema, &fingerprint, &accept());
        assert_eq!(
            refused.map(<[f64]>::len),
            Err(DataViolation::Unproven("mvn-synthetic".into()))
        );
        let allowing = Acceptance {
            allow_unproven: true,
            ..accept()
        };
        let kept = validate(&plain, &got, &request, &schema, &fingerprint, &allowing);
        assert_eq!(kept.map(<[f64]>::len), Ok(schema.features.len() + 1));
    }
}
