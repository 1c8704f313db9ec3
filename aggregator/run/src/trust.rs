//! Signed learners and signed reports.
//!
//! - [`Trust::check`]: a learner is aggregated only if it carries a valid Ed25519 signature by
//!   its organisation's key, read from the aggregator's own folder of trusted keys
//!   (`signing_keys/<organisation>.pub`), never from the node. With `--insecure`, unsigned
//!   learners are accepted, but a signature that is present is still checked when a key is
//!   known.
//! - [`sign_report`]: the aggregator signs `report.json` with its own key, over the report's
//!   canonical JSON ([`canonical_report`]).
//! - [`verify_report`]: `dpagg-aggregator verify report.json --signing-keys DIR` re-checks every
//!   included release's signature over the bytes the node served (kept in the report) and that
//!   the report's lines match them, then the aggregator's signature over the whole report, so a
//!   report copied anywhere can be checked offline.

use crate::config::Security;
use crate::fetch::Exclusion;
use crate::wire::{MAX_MECHANISM, MAX_RELEASE_ID, MAX_TEXT, clean};
use dpagg_proto::signature::{ALGORITHM, SignatureError, SigningKey, VerifyingKey, hex, unhex};
use dpagg_proto::v1 as pb;
use dpagg_shared::identity::check_organisation_id;
use prost::Message;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Domain separation of the report signature (the first bytes of the signed message).
pub const REPORT_DOMAIN: &str = "dpagg.report.json/1\n";

/// A signature as a report records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct SignatureView {
    /// "ed25519".
    pub algorithm: String,
    /// The organisation that signed.
    pub organisation_id: String,
    /// The key id (see `dpagg_proto::signature::key_id`).
    pub key_id: String,
    /// The signature, in hex.
    pub signature: String,
}

impl From<&pb::ReleaseSignature> for SignatureView {
    fn from(s: &pb::ReleaseSignature) -> Self {
        Self {
            algorithm: clean(&s.algorithm, 32),
            organisation_id: clean(&s.organisation_id, 80),
            key_id: clean(&s.key_id, 80),
            signature: hex(&s.signature),
        }
    }
}

/// The path of `organisation`'s trusted key in `dir` (ids are checked first, so a hostile id
/// cannot name another file).
pub fn key_path(dir: &Path, organisation: &str) -> Result<PathBuf, String> {
    check_organisation_id(organisation).map_err(|why| {
        format!(
            "{:?} is not an organisation id ({why})",
            clean(organisation, 80)
        )
    })?;
    Ok(dir.join(format!("{organisation}.pub")))
}

/// Which signatures the aggregator requires and the keys it checks them with.
#[derive(Debug, Clone)]
pub struct Trust {
    keys: Option<PathBuf>,
    required: bool,
}

impl Trust {
    /// Required signatures with TLS; optional ones in plain text.
    pub fn new(security: &Security) -> Self {
        Self {
            keys: security.signing_keys().map(Path::to_owned),
            required: matches!(security, Security::Tls { .. }),
        }
    }

    /// Checks `learner`'s signature by `organisation`.
    pub fn check(
        &self,
        organisation: &str,
        learner: &pb::PrivateLearner,
    ) -> Result<Option<SignatureView>, Exclusion> {
        let key = self.key_for(organisation)?;
        match (key, &learner.signature) {
            (Some(key), _) => key
                .verify(organisation, learner)
                .map_err(|e| Exclusion::Signature(clean(&e.to_string(), MAX_TEXT)))?,
            (None, Some(_)) => tracing::warn!(
                organisation,
                "a signed learner was accepted without checking: no key for its organisation"
            ),
            (None, None) => {}
        }
        Ok(learner.signature.as_ref().map(SignatureView::from))
    }

    /// [`Trust::check`] for a data release: the signature over its body as served
    /// ([`dpagg_proto::data`]).
    pub fn check_data(
        &self,
        organisation: &str,
        release: &pb::DataRelease,
    ) -> Result<Option<SignatureView>, Exclusion> {
        match (self.key_for(organisation)?, &release.signature) {
            (Some(key), _) => dpagg_proto::data::verify(&key, organisation, release)
                .map_err(|e| Exclusion::Signature(clean(&e.to_string(), MAX_TEXT)))?,
            (None, Some(_)) => tracing::warn!(
                organisation,
                "a signed data release was accepted without checking: no key for its organisation"
            ),
            (None, None) => {}
        }
        Ok(release.signature.as_ref().map(SignatureView::from))
    }

    /// The trusted key of `organisation`: required with TLS, optional in plain text.
    fn key_for(&self, organisation: &str) -> Result<Option<VerifyingKey>, Exclusion> {
        Ok(match &self.keys {
            Some(dir) => {
                let path = key_path(dir, organisation).map_err(Exclusion::Signature)?;
                if path.exists() {
                    Some(
                        VerifyingKey::load(&path)
                            .map_err(|e| Exclusion::Signature(e.to_string()))?,
                    )
                } else if self.required {
                    return Err(Exclusion::Signature(format!(
                        "no trusted key for {organisation:?} ({} does not exist)",
                        path.display()
                    )));
                } else {
                    None
                }
            }
            None => None,
        })
    }
}

/// Checks the signed data releases of a `--train-on synthetic` report (none without it): each
/// included body verifies with its organisation's key and matches its report line.
fn verify_synthetic(
    report: &serde_json::Value,
    origin: &str,
    keys: &Path,
) -> Result<Vec<(String, String)>, String> {
    let Some(nodes) = report["synthetic"]["nodes"].as_array() else {
        return Ok(Vec::new());
    };
    let mut releases = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        if node["status"] != "included" {
            continue;
        }
        let at = |what: &str| format!("{origin}: synthetic.nodes[{i}]: {what}");
        let org = node["organisation_id"]
            .as_str()
            .ok_or_else(|| at("no organisation_id"))?;
        let body = node["release_body"]
            .as_str()
            .and_then(unhex)
            .ok_or_else(|| at("no release_body"))?;
        let sig: SignatureView = serde_json::from_value(node["signature"].clone())
            .map_err(|_| at("unsigned (a plain-text run?)"))?;
        let bytes = unhex(&sig.signature).ok_or_else(|| at("the signature is not hex"))?;
        let key = VerifyingKey::load(&key_path(keys, org).map_err(|e| at(&e))?)
            .map_err(|e| at(&e.to_string()))?;
        if sig.organisation_id != org {
            return Err(at(&format!(
                "signed by {:?}, not {org:?}",
                sig.organisation_id
            )));
        }
        key.verify_bytes(
            &dpagg_proto::data::signed_bytes(org, &body),
            &sig.key_id,
            &bytes,
        )
        .map_err(|e| at(&format!("the synthetic release of {org:?}: {e}")))?;
        let decoded = pb::DataReleaseBody::decode(body.as_slice())
            .map_err(|e| at(&format!("release_body does not decode ({e})")))?;
        let recorded = [
            (
                "release_id",
                node["release_id"] == decoded.release_id.as_str(),
            ),
            ("epsilon", node["epsilon"].as_f64() == Some(decoded.epsilon)),
            ("delta", node["delta"].as_f64() == Some(decoded.delta)),
        ];
        if let Some((field, _)) = recorded.iter().find(|(_, same)| !same) {
            return Err(at(&format!(
                "`{field}` differs from the signed release of {org:?}"
            )));
        }
        releases.push((org.to_owned(), decoded.release_id));
    }
    Ok(releases)
}

/// The canonical bytes of a report: `REPORT_DOMAIN` then its JSON without the `signature` key,
/// compact, object keys in sorted order (serde_json's map is ordered; the report round-trips
/// exactly because numbers are written and read back bit-exact).
pub fn canonical_report(report: &serde_json::Value) -> Result<Vec<u8>, String> {
    let mut value = report.clone();
    value
        .as_object_mut()
        .ok_or("the report is not a JSON object")?
        .remove("signature");
    let mut bytes = REPORT_DOMAIN.as_bytes().to_vec();
    serde_json::to_writer(&mut bytes, &sort(value)).map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// The value with every object's keys in sorted order, whatever order the map keeps.
fn sort(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sort(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sort).collect()),
        other => other,
    }
}

/// The report's signature by `organisation` with `key`.
pub fn sign_report(
    report: &serde_json::Value,
    key: &SigningKey,
    organisation: &str,
) -> Result<SignatureView, String> {
    let message = canonical_report(report)?;
    let pb = key.sign_bytes(&message);
    Ok(SignatureView {
        algorithm: ALGORITHM.into(),
        organisation_id: organisation.into(),
        key_id: key.key_id(),
        signature: hex(&pb),
    })
}

/// What `verify` checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// (organisation, release id) of every included release whose signature verified.
    pub releases: Vec<(String, String)>,
    /// The organisation whose signature over the report verified.
    pub report_signed_by: String,
}

/// Checks one included node of a report (`place` names it in errors): its served release is
/// signed by the organisation it names, and the report's copy of its metadata matches.
fn verify_node(
    node: &serde_json::Value,
    place: &str,
    keys: &Path,
) -> Result<(String, String), String> {
    let at = |what: &str| format!("{place}: {what}");
    let org = node["organisation_id"]
        .as_str()
        .ok_or_else(|| at("no organisation_id"))?;
    let bytes = node["release_protobuf"]
        .as_str()
        .and_then(unhex)
        .ok_or_else(|| at("no release_protobuf (an unsigned, plain-text run?)"))?;
    let learner = pb::PrivateLearner::decode(bytes.as_slice())
        .map_err(|e| at(&format!("release_protobuf does not decode ({e})")))?;
    let key_file = key_path(keys, org).map_err(|e| at(&e))?;
    let key = VerifyingKey::load(&key_file).map_err(|e| at(&e.to_string()))?;
    key.verify(org, &learner)
        .map_err(|e| at(&format!("the release of {org:?}: {e}")))?;
    let m = learner.metadata.as_ref().ok_or_else(|| at("no metadata"))?;
    // The report records node text cleaned (with `run::wire`'s limits), so compare it that way.
    let release_id = clean(&m.release_id, MAX_RELEASE_ID);
    let recorded = [
        ("release_id", node["release_id"] == release_id.as_str()),
        (
            "mechanism",
            node["mechanism"] == clean(&m.mechanism, MAX_MECHANISM).as_str(),
        ),
        ("epsilon", node["epsilon"].as_f64() == Some(m.epsilon)),
        ("delta", node["delta"].as_f64() == Some(m.delta)),
    ];
    if let Some((field, _)) = recorded.iter().find(|(_, same)| !same) {
        return Err(at(&format!(
            "`{field}` differs from the signed release of {org:?}"
        )));
    }
    Ok((org.to_owned(), release_id))
}

/// Verifies a `report.json` offline with the trusted keys in `keys` (`<organisation>.pub`);
/// with `signer`, the report must be signed by that organisation (any trusted member's signature
/// is not enough).
pub fn verify_report(path: &Path, keys: &Path, signer: Option<&str>) -> Result<Verified, String> {
    let origin = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{origin}: {e}"))?;
    let report: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{origin}: not JSON ({e})"))?;
    let mut releases = Vec::new();
    let nodes = report["nodes"]
        .as_array()
        .ok_or_else(|| format!("{origin}: no `nodes` list"))?;
    for (i, node) in nodes.iter().enumerate() {
        if node["status"] == "included" {
            releases.push(verify_node(node, &format!("{origin}: nodes[{i}]"), keys)?);
        }
    }
    releases.extend(verify_synthetic(&report, &origin.to_string(), keys)?);
    let signature: SignatureView = serde_json::from_value(report["signature"].clone())
        .map_err(|_| format!("{origin}: the report is not signed (no `signature`)"))?;
    let signed_by = report["signed_by"].as_str().unwrap_or_default();
    if let Some(wanted) = signer
        && wanted != signed_by
    {
        return Err(format!(
            "{origin}: the report is signed by {:?}, not by {wanted:?} (--signer)",
            clean(signed_by, 80)
        ));
    }
    let signer = signed_by;
    if signer != signature.organisation_id {
        return Err(format!(
            "{origin}: `signed_by` is {signer:?} but the signature is {:?}'s",
            signature.organisation_id
        ));
    }
    let key = VerifyingKey::load(&key_path(keys, signer).map_err(|e| format!("{origin}: {e}"))?)
        .map_err(|e| format!("{origin}: {e}"))?;
    let message = canonical_report(&report).map_err(|e| format!("{origin}: {e}"))?;
    let sig =
        unhex(&signature.signature).ok_or_else(|| format!("{origin}: the signature is not hex"))?;
    key.verify_bytes(&message, &signature.key_id, &sig)
        .map_err(|e| match e {
            SignatureError::Mismatch => format!(
                "{origin}: the report's signature does not match: the report was modified \
                 after {signer:?} signed it"
            ),
            e => format!("{origin}: {e}"),
        })?;
    Ok(Verified {
        releases,
        report_signed_by: signer.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_reports_ignore_key_order_and_the_signature() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b":1.5,"a":[{"y":1,"x":2}],"signature":{"k":1}}"#)
                .expect("json");
        let b: serde_json::Value =
            serde_json::from_str(r#"{"a":[{"x":2,"y":1}],"b":1.5}"#).expect("json");
        assert_eq!(canonical_report(&a), canonical_report(&b));
        let c: serde_json::Value =
            serde_json::from_str(r#"{"a":[{"x":2,"y":1}],"b":1.5000000000000002}"#).expect("json");
        assert_ne!(canonical_report(&b), canonical_report(&c));
    }

    #[test]
    fn key_paths_refuse_hostile_ids() {
        let dir = Path::new("/keys");
        assert_eq!(key_path(dir, "org-1"), Ok(PathBuf::from("/keys/org-1.pub")));
        assert!(key_path(dir, "../etc/passwd").is_err());
        assert!(key_path(dir, "").is_err());
    }
}
