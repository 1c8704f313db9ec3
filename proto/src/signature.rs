//! Signed releases: Ed25519 (RFC 8032) signatures by an organisation over the canonical encoding
//! of a [`pb::PrivateLearner`], as `proto/dpagg/v1/node.proto` documents it (message
//! `ReleaseSignature`).
//!
//! A node signs with its organisation's [`SigningKey`] when it serves a release; an aggregator
//! checks the signature with the organisation's [`VerifyingKey`] (from its own configuration,
//! never from the node) and excludes a learner whose signature fails; `dpagg-aggregator verify`
//! checks them again offline from a report. Ed25519 is deterministic, so a release is served with
//! the same signature on every request.
//!
//! The crypto is `ring`'s, the provider the TLS stack uses too (see `dpagg_shared::identity`).

use crate::v1 as pb;
use ring::signature::{ED25519, Ed25519KeyPair, KeyPair, UnparsedPublicKey};
use rustls_pki_types::PrivatePkcs8KeyDer;
use rustls_pki_types::pem::PemObject;
use sha2::{Digest, Sha256};
use std::path::Path;

/// `ReleaseSignature.algorithm` of every signature dpagg makes.
pub const ALGORITHM: &str = "ed25519";

/// Domain separation and version of the canonical encoding (its first field).
pub const DOMAIN: &str = "dpagg.v1.ReleaseSignature/1";

/// Why a signature could not be made, read or checked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The learner has no metadata: there is nothing meaningful to sign.
    #[error("the learner has no metadata")]
    NoMetadata,
    /// The learner carries no signature.
    #[error("the learner is not signed")]
    Unsigned,
    /// The signature names another algorithm.
    #[error("unsupported signature algorithm {0:?} (expected \"ed25519\")")]
    Algorithm(String),
    /// The signature was made by another organisation than the one that served it.
    #[error("signed by {signed:?}, but served by {served:?}")]
    Organisation {
        /// The organisation named in the signature.
        signed: String,
        /// The organisation the learner is attributed to.
        served: String,
    },
    /// The signature's key id is not the trusted key's.
    #[error("signed with key {signed:?}, but the trusted key of {organisation:?} is {trusted}")]
    KeyId {
        /// The organisation.
        organisation: String,
        /// The key id in the signature.
        signed: String,
        /// The key id of the trusted key.
        trusted: String,
    },
    /// The signature does not match the release: it was altered or signed by another key.
    #[error("the signature does not match the release (altered, or signed with another key)")]
    Mismatch,
    /// A key file is unreadable or malformed.
    #[error("{path}: {reason}")]
    KeyFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The canonical encoding of `learner` as served by `organisation_id` (the message the signature
/// covers; the layout is documented on `ReleaseSignature` in the proto).
pub fn canonical_release(
    organisation_id: &str,
    learner: &pb::PrivateLearner,
) -> Result<Vec<u8>, SignatureError> {
    let m = learner
        .metadata
        .as_ref()
        .ok_or(SignatureError::NoMetadata)?;
    let mut w = Canonical(Vec::with_capacity(256 + 8 * learner.weights.len()));
    w.str(DOMAIN);
    w.str(organisation_id);
    w.u64(learner.weights.len() as u64);
    learner.weights.iter().for_each(|&x| w.f64(x));
    w.str(&m.release_id);
    w.0.extend_from_slice(&m.created_unix_ms.to_be_bytes());
    w.str(&m.created_at);
    w.str(&m.mechanism);
    w.str(&m.reference);
    w.map(&m.parameters);
    w.scalar(m.epsilon);
    w.scalar(m.delta);
    w.0.extend_from_slice(&m.neighbour_relation.to_be_bytes());
    w.scalar(m.max_row_norm);
    w.scalar(m.loss_gradient_bound);
    w.scalar(m.loss_hessian_bound);
    w.str(&m.schema_fingerprint);
    w.bool(m.seeded);
    w.u64(m.n);
    w.0.extend_from_slice(&m.dim.to_be_bytes());
    match &m.spec {
        None => w.0.push(0),
        Some(s) => {
            w.0.push(1);
            w.str(&s.mechanism);
            w.scalar(s.epsilon);
            w.scalar(s.delta);
            w.scalar(s.lambda);
            w.map(&s.options);
            w.bool(s.lambda_auto);
            if let Some(map) = &s.map {
                w.0.push(1);
                w.agreed_map(map);
            }
        }
    }
    w.0.push(match m.proven {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    });
    if let Some(proof) = &m.proof {
        w.0.push(1);
        w.str(proof);
    }
    Ok(w.0)
}

/// Builds the canonical encoding.
struct Canonical(Vec<u8>);

impl Canonical {
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }
    /// A double of a singular field or a map value: −0 is taken as +0, since proto3 leaves out
    /// a field (and prost a map value) equal to its default, so a −0 arrives as +0. Weights, a
    /// packed repeated field, keep every bit.
    fn scalar(&mut self, v: f64) {
        self.f64(if v == 0.0 { 0.0 } else { v });
    }
    fn bool(&mut self, v: bool) {
        self.0.push(u8::from(v));
    }
    fn str(&mut self, s: &str) {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    /// An agreed map (the layout is documented on `ReleaseSignature` in the proto).
    fn agreed_map(&mut self, m: &pb::AgreedMap) {
        self.str(&m.schema_fingerprint);
        self.str(&m.source);
        self.scalar(m.row_scale);
        self.scalar(m.intercept_value);
        self.u64(m.features.len() as u64);
        for f in &m.features {
            self.str(&f.name);
            self.str(&f.transform);
            match f.unit {
                None => self.0.push(0),
                Some(u) => {
                    self.0.push(1);
                    self.f64(u);
                }
            }
            self.scalar(f.center);
            self.scalar(f.scale);
        }
        self.0.extend_from_slice(&m.components.to_be_bytes());
        self.u64(m.directions.len() as u64);
        m.directions.iter().for_each(|&v| self.f64(v));
    }
    /// Entries in ascending byte order of the keys (a `BTreeMap<String, _>` iterates so).
    fn map(&mut self, m: &std::collections::BTreeMap<String, f64>) {
        self.u64(m.len() as u64);
        for (k, &v) in m {
            self.str(k);
            self.scalar(v);
        }
    }
}

/// The key id of a raw Ed25519 public key: the first 16 bytes of its SHA-256, in lowercase hex.
pub fn key_id(public_key: &[u8]) -> String {
    hex(&Sha256::digest(public_key)[..16])
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes from hex (surrounding whitespace ignored); `None` unless it is hex.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    let t = text.trim();
    if !t.len().is_multiple_of(2) || !t.is_ascii() {
        return None;
    }
    (0..t.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&t[i..i + 2], 16).ok())
        .collect()
}

/// An organisation's private signing key.
pub struct SigningKey {
    pair: Ed25519KeyPair,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("key_id", &self.key_id())
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// A new key from the operating system's CSPRNG, with its PKCS#8 (v2) DER encoding to store.
    pub fn generate() -> Result<(Self, Vec<u8>), SignatureError> {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).map_err(|_| SignatureError::KeyFile {
            path: "(new key)".into(),
            reason: "the operating system's random generator failed".into(),
        })?;
        let der = pkcs8.as_ref().to_vec();
        Ok((Self::from_pkcs8(&der, "(new key)")?, der))
    }

    /// A key from PKCS#8 DER; `origin` names it in errors.
    pub fn from_pkcs8(der: &[u8], origin: &str) -> Result<Self, SignatureError> {
        let pair = Ed25519KeyPair::from_pkcs8_maybe_unchecked(der).map_err(|e| {
            SignatureError::KeyFile {
                path: origin.to_owned(),
                reason: format!("not an Ed25519 PKCS#8 private key ({e})"),
            }
        })?;
        Ok(Self { pair })
    }

    /// Reads a PEM file holding one `PRIVATE KEY` (PKCS#8), as `dpagg-node certs` writes.
    pub fn load(path: &Path) -> Result<Self, SignatureError> {
        let origin = path.display().to_string();
        let der = PrivatePkcs8KeyDer::from_pem_file(path).map_err(|e| SignatureError::KeyFile {
            path: origin.clone(),
            reason: format!("cannot read a PEM `PRIVATE KEY`: {e}"),
        })?;
        Self::from_pkcs8(der.secret_pkcs8_der(), &origin)
    }

    /// The raw 32-byte public key.
    pub fn public_key(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// The public key's id.
    pub fn key_id(&self) -> String {
        key_id(self.public_key())
    }

    /// Signs arbitrary bytes (callers add their own domain separation, e.g. the aggregator's
    /// report signature).
    pub fn sign_bytes(&self, message: &[u8]) -> Vec<u8> {
        self.pair.sign(message).as_ref().to_vec()
    }

    /// Signs `learner` as served by `organisation_id`.
    pub fn sign(
        &self,
        organisation_id: &str,
        learner: &pb::PrivateLearner,
    ) -> Result<pb::ReleaseSignature, SignatureError> {
        let message = canonical_release(organisation_id, learner)?;
        Ok(pb::ReleaseSignature {
            algorithm: ALGORITHM.into(),
            organisation_id: organisation_id.into(),
            key_id: self.key_id(),
            signature: self.pair.sign(&message).as_ref().to_vec(),
        })
    }
}

/// An organisation's public key, as an aggregator trusts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyingKey {
    bytes: Vec<u8>,
}

impl VerifyingKey {
    /// A key from its 64 hex characters (the format of `dpagg-node certs`' `.pub` files);
    /// `origin` names it in errors.
    pub fn from_hex(text: &str, origin: &str) -> Result<Self, SignatureError> {
        match unhex(text) {
            Some(bytes) if bytes.len() == 32 => Ok(Self { bytes }),
            _ => Err(SignatureError::KeyFile {
                path: origin.to_owned(),
                reason: "expected an Ed25519 public key as 64 hex characters".into(),
            }),
        }
    }

    /// Reads a `.pub` file (64 hex characters).
    pub fn load(path: &Path) -> Result<Self, SignatureError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| SignatureError::KeyFile {
            path: origin.clone(),
            reason: e.to_string(),
        })?;
        Self::from_hex(&text, &origin)
    }

    /// The raw public key.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Its id.
    pub fn key_id(&self) -> String {
        key_id(&self.bytes)
    }

    /// Checks a signature over arbitrary bytes made with [`SigningKey::sign_bytes`] by the key
    /// named `key_id`.
    pub fn verify_bytes(
        &self,
        message: &[u8],
        key_id: &str,
        signature: &[u8],
    ) -> Result<(), SignatureError> {
        if key_id != self.key_id() {
            return Err(SignatureError::KeyId {
                organisation: String::new(),
                signed: key_id.to_owned(),
                trusted: self.key_id(),
            });
        }
        UnparsedPublicKey::new(&ED25519, &self.bytes)
            .verify(message, signature)
            .map_err(|_| SignatureError::Mismatch)
    }

    /// Checks `learner`'s signature: by this key, naming `organisation_id`, over the release as
    /// served (weights and every metadata field).
    pub fn verify(
        &self,
        organisation_id: &str,
        learner: &pb::PrivateLearner,
    ) -> Result<(), SignatureError> {
        self.verify_signed(organisation_id, learner.signature.as_ref(), || {
            canonical_release(organisation_id, learner)
        })
    }

    /// Checks a release's `signature`: present, of [`ALGORITHM`], naming `organisation_id`, by
    /// this key, over the bytes `message` makes (called only once the header checks pass).
    pub fn verify_signed(
        &self,
        organisation_id: &str,
        signature: Option<&pb::ReleaseSignature>,
        message: impl FnOnce() -> Result<Vec<u8>, SignatureError>,
    ) -> Result<(), SignatureError> {
        let sig = signature.ok_or(SignatureError::Unsigned)?;
        if sig.algorithm != ALGORITHM {
            return Err(SignatureError::Algorithm(sig.algorithm.clone()));
        }
        if sig.organisation_id != organisation_id {
            return Err(SignatureError::Organisation {
                signed: sig.organisation_id.clone(),
                served: organisation_id.to_owned(),
            });
        }
        if sig.key_id != self.key_id() {
            return Err(SignatureError::KeyId {
                organisation: organisation_id.to_owned(),
                signed: sig.key_id.clone(),
                trusted: self.key_id(),
            });
        }
        UnparsedPublicKey::new(&ED25519, &self.bytes)
            .verify(&message()?, &sig.signature)
            .map_err(|_| SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests;
