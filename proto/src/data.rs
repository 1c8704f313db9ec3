//! Data releases on the wire: [`DataSpec`] ⇄ `pb::DataSpec`, [`DataPayload`] ⇄ the
//! body's `payload`, [`PublishedData`] ⇄ `pb::DataReleaseBody` (the one place a served data
//! release becomes a domain type, with typed [`WireError`]s), and the signed envelope
//! `pb::DataRelease`.
//!
//! **The envelope.** A data release is `DataRelease { body, signature }` where `body` is the
//! serialised `DataReleaseBody` as the node stored it. The signature covers
//! `"dpagg.v1.DataRelease/1" ‖ organisation_id ‖ body` (each a big-endian u64 length then the
//! bytes): a client verifies the bytes it received, then decodes them — no canonical
//! re-encoding, so a client in any language checks it with a hash-free byte concatenation.

use crate::convert::{WireError, quote, relation};
use crate::signature::{ALGORITHM, SignatureError, SigningKey, VerifyingKey};
use crate::v1 as pb;
use dpagg_shared::privacy::data_release::{
    ClassStatistics, DataKind, DataPayload, DataSpec, FeatureHistogram, PublishedData,
};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use dpagg_shared::privacy::statistics::moments::ClassMoments;
use prost::Message;

/// Domain separation of the data-release signature (its version).
pub const DATA_DOMAIN: &str = "dpagg.v1.DataRelease/1";

impl From<&DataSpec> for pb::DataSpec {
    fn from(s: &DataSpec) -> Self {
        Self {
            kind: s.kind.name().to_owned(),
            epsilon: s.epsilon,
            delta: s.delta,
            options: s.options.clone(),
        }
    }
}

impl TryFrom<pb::DataSpec> for DataSpec {
    type Error = WireError;

    fn try_from(s: pb::DataSpec) -> Result<Self, WireError> {
        let kind = DataKind::parse(&s.kind).ok_or_else(|| WireError::Invalid {
            field: "spec.kind",
            value: quote(&s.kind),
            requirement: "an unknown data kind (DescribeResponse.data_kinds lists them)",
        })?;
        Ok(Self {
            kind,
            epsilon: s.epsilon,
            delta: s.delta,
            options: s.options,
        })
    }
}

impl From<&DataPayload> for pb::data_release_body::Payload {
    fn from(p: &DataPayload) -> Self {
        use pb::data_release_body::Payload;
        match p {
            DataPayload::Moments(classes) => Payload::Moments(pb::Moments {
                classes: classes
                    .iter()
                    .map(|c| {
                        let m = c.moments.clone();
                        pb::ClassMoments {
                            label: c.label,
                            count: m.count,
                            sum: m.sum,
                            mean: m.mean,
                            variance: m.variance,
                            covariance: m.covariance,
                        }
                    })
                    .collect(),
            }),
            DataPayload::Histograms(features) => Payload::Histograms(pb::Histograms {
                features: features
                    .iter()
                    .map(|h| pb::FeatureHistogram {
                        edges: h.edges.clone(),
                        negative: h.negative.clone(),
                        positive: h.positive.clone(),
                    })
                    .collect(),
            }),
            DataPayload::Medians(values) => Payload::Medians(pb::Medians {
                values: values.clone(),
            }),
            DataPayload::Coefficients {
                weights,
                blocks,
                block_size,
            } => Payload::Coefficients(pb::AggregatedCoefficients {
                weights: weights.clone(),
                blocks: u32::try_from(*blocks).unwrap_or(u32::MAX),
                block_size: *block_size as u64,
            }),
            DataPayload::Synthetic { dim, rows, values } => Payload::Synthetic(pb::SyntheticRows {
                dim: u32::try_from(*dim).unwrap_or(u32::MAX),
                rows: u32::try_from(*rows).unwrap_or(u32::MAX),
                values: values.clone(),
            }),
        }
    }
}

impl TryFrom<pb::data_release_body::Payload> for DataPayload {
    type Error = WireError;

    fn try_from(p: pb::data_release_body::Payload) -> Result<Self, WireError> {
        use pb::data_release_body::Payload;
        Ok(match p {
            Payload::Moments(m) => DataPayload::Moments(
                m.classes
                    .into_iter()
                    .map(|c| ClassStatistics {
                        label: c.label,
                        moments: ClassMoments {
                            count: c.count,
                            sum: c.sum,
                            mean: c.mean,
                            variance: c.variance,
                            covariance: c.covariance,
                        },
                    })
                    .collect(),
            ),
            Payload::Histograms(h) => DataPayload::Histograms(
                h.features
                    .into_iter()
                    .map(|f| FeatureHistogram {
                        edges: f.edges,
                        negative: f.negative,
                        positive: f.positive,
                    })
                    .collect(),
            ),
            Payload::Medians(m) => DataPayload::Medians(m.values),
            Payload::Coefficients(c) => DataPayload::Coefficients {
                weights: c.weights,
                blocks: c.blocks as usize,
                block_size: usize::try_from(c.block_size).unwrap_or(usize::MAX),
            },
            Payload::Synthetic(s) => {
                let (dim, rows) = (s.dim as usize, s.rows as usize);
                if dim == 0 || dim.checked_mul(rows) != Some(s.values.len()) {
                    return Err(WireError::Invalid {
                        field: "synthetic.values",
                        value: format!("{} values", s.values.len()),
                        requirement: "must be rows × dim values",
                    });
                }
                DataPayload::Synthetic {
                    dim,
                    rows,
                    values: s.values,
                }
            }
        })
    }
}

impl From<&PublishedData> for pb::DataReleaseBody {
    fn from(d: &PublishedData) -> Self {
        let g = d.guarantee;
        Self {
            release_id: d.release_id.clone(),
            created_unix_ms: d.created_unix_ms,
            created_at: dpagg_shared::util::time::rfc3339(d.created_unix_ms),
            organisation_id: d.organisation_id.clone(),
            schema_fingerprint: d.schema_fingerprint.clone(),
            spec: Some(pb::DataSpec::from(&d.spec)),
            mechanism: d.spec.kind.name().to_owned(),
            reference: d.spec.kind.reference().to_owned(),
            epsilon: g.epsilon,
            delta: g.delta,
            neighbour_relation: pb::NeighbourRelation::from(g.relation) as i32,
            seeded: d.seeded,
            n: d.n,
            features: d.features.clone(),
            parameters: d.parameters.clone(),
            payload: Some((&d.payload).into()),
        }
    }
}

impl TryFrom<pb::DataReleaseBody> for PublishedData {
    type Error = WireError;

    fn try_from(b: pb::DataReleaseBody) -> Result<Self, WireError> {
        let spec = DataSpec::try_from(b.spec.ok_or(WireError::Missing("spec"))?)?;
        if b.mechanism != spec.kind.name() {
            return Err(WireError::Invalid {
                field: "mechanism",
                value: quote(&b.mechanism),
                requirement: "must be the spec's kind",
            });
        }
        let payload = DataPayload::try_from(b.payload.ok_or(WireError::Missing("payload"))?)?;
        Ok(Self {
            release_id: b.release_id,
            created_unix_ms: b.created_unix_ms,
            organisation_id: b.organisation_id,
            schema_fingerprint: b.schema_fingerprint,
            spec,
            guarantee: PrivacyGuarantee {
                epsilon: b.epsilon,
                delta: b.delta,
                relation: relation(b.neighbour_relation, "neighbour_relation")?,
            },
            seeded: b.seeded,
            n: b.n,
            features: b.features,
            parameters: b.parameters,
            payload,
        })
    }
}

/// The message a data release's signature covers.
pub fn signed_bytes(organisation_id: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(40 + organisation_id.len() + body.len());
    for part in [DATA_DOMAIN.as_bytes(), organisation_id.as_bytes(), body] {
        out.extend_from_slice(&(part.len() as u64).to_be_bytes());
        out.extend_from_slice(part);
    }
    out
}

/// Signs a stored body as served by `organisation_id` (deterministic: the same bytes each time).
pub fn sign(key: &SigningKey, organisation_id: &str, body: &[u8]) -> pb::ReleaseSignature {
    pb::ReleaseSignature {
        algorithm: ALGORITHM.into(),
        organisation_id: organisation_id.into(),
        key_id: key.key_id(),
        signature: key.sign_bytes(&signed_bytes(organisation_id, body)),
    }
}

/// Checks a data release's signature by `key` for `organisation_id`.
pub fn verify(
    key: &VerifyingKey,
    organisation_id: &str,
    release: &pb::DataRelease,
) -> Result<(), SignatureError> {
    key.verify_signed(organisation_id, release.signature.as_ref(), || {
        Ok(signed_bytes(organisation_id, &release.body))
    })
}

/// Decodes a release's body as the domain type (after its signature was checked).
pub fn decode(release: &pb::DataRelease) -> Result<PublishedData, WireError> {
    PublishedData::try_from(body(release)?)
}

/// Decodes a release's body (after its signature was checked).
pub fn body(release: &pb::DataRelease) -> Result<pb::DataReleaseBody, WireError> {
    pb::DataReleaseBody::decode(release.body.as_slice()).map_err(|_| WireError::Invalid {
        field: "body",
        value: format!("{} bytes", release.body.len()),
        requirement: "must be a serialised DataReleaseBody",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_payloads_round_trip() {
        let mut spec = DataSpec::new(DataKind::HISTOGRAM, 0.5, 0.0);
        spec.options.insert("bins".into(), 7.0);
        let back = DataSpec::try_from(pb::DataSpec::from(&spec)).expect("round trip");
        assert_eq!(back, spec);
        let bad = pb::DataSpec {
            kind: "telepathy".into(),
            ..Default::default()
        };
        assert!(DataSpec::try_from(bad).is_err());
        let payload = DataPayload::Synthetic {
            dim: 2,
            rows: 2,
            values: vec![0.5, -1.0, 0.25, 1.0],
        };
        let wire = pb::data_release_body::Payload::from(&payload);
        assert_eq!(DataPayload::try_from(wire).expect("round trip"), payload);
        let short = pb::data_release_body::Payload::Synthetic(pb::SyntheticRows {
            dim: 3,
            rows: 2,
            values: vec![0.0; 5],
        });
        assert!(DataPayload::try_from(short).is_err());
    }

    #[test]
    fn published_data_round_trips_and_a_mismatched_mechanism_is_typed() {
        let spec = DataSpec::new(DataKind::HISTOGRAM, 0.5, 0.0);
        let published = PublishedData {
            release_id: "ab".repeat(16),
            created_unix_ms: 1_700_000_000_000,
            organisation_id: "org-1".into(),
            schema_fingerprint: "f".repeat(64),
            parameters: spec.parameters(),
            spec,
            guarantee: PrivacyGuarantee::replace_one(0.5, 0.0),
            seeded: false,
            n: 100,
            features: vec!["age".into()],
            payload: DataPayload::Medians(vec![1.5]),
        };
        let wire = pb::DataReleaseBody::from(&published);
        assert_eq!(wire.mechanism, "histogram");
        assert_eq!(
            PublishedData::try_from(wire.clone()).expect("round trip"),
            published
        );
        let mut other = wire.clone();
        other.mechanism = "moments-laplace".into();
        assert!(matches!(
            PublishedData::try_from(other),
            Err(WireError::Invalid {
                field: "mechanism",
                ..
            })
        ));
        let mut bare = wire;
        bare.payload = None;
        assert_eq!(
            PublishedData::try_from(bare),
            Err(WireError::Missing("payload"))
        );
    }

    #[test]
    fn signatures_cover_the_body_and_the_organisation() {
        let (key, _) = SigningKey::generate().expect("key");
        let public = VerifyingKey::from_hex(&crate::signature::hex(key.public_key()), "test")
            .expect("public key");
        let body = pb::DataReleaseBody {
            release_id: "ab".repeat(16),
            ..Default::default()
        }
        .encode_to_vec();
        let mut release = pb::DataRelease {
            signature: Some(sign(&key, "org-1", &body)),
            body,
        };
        verify(&public, "org-1", &release).expect("valid");
        assert_eq!(
            sign(&key, "org-1", &release.body),
            release.signature.clone().expect("signed"),
            "deterministic"
        );
        assert!(
            verify(&public, "org-2", &release).is_err(),
            "another organisation"
        );
        let last = release.body.len() - 1;
        release.body[last] ^= 1;
        assert!(
            verify(&public, "org-1", &release).is_err(),
            "a changed byte"
        );
    }
}
