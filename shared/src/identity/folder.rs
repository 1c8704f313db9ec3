//! Identity folders: `ca.pem`, `cert.pem`, `key.pem` and `signing.key` read, checked (a private
//! key readable by other users is refused) and held for the client and server configurations.

use super::{ClientTls, TlsError, organisation_of};
use crate::util::files::readable_by_others;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_rustls::rustls;

/// The files of an identity folder.
pub const CA_FILE: &str = "ca.pem";
/// The organisation's certificate.
pub const CERT_FILE: &str = "cert.pem";
/// The organisation's TLS private key.
pub const KEY_FILE: &str = "key.pem";
/// The organisation's release-signing key (Ed25519, PKCS#8 PEM).
pub const SIGNING_KEY_FILE: &str = "signing.key";

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::File {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

fn certificates(path: &Path, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::File {
            path: path.to_owned(),
            reason: format!("bad PEM ({e})"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::File {
            path: path.to_owned(),
            reason: "no CERTIFICATE in the file".into(),
        });
    }
    Ok(certs)
}

/// An organisation's TLS identity and the federation's CA, read from an identity folder.
#[derive(Debug, Clone)]
pub struct IdentityDir {
    /// The folder.
    pub dir: PathBuf,
    /// The organisation named by `cert.pem`.
    pub organisation_id: String,
    key_pem: Vec<u8>,
    ca: Vec<CertificateDer<'static>>,
    chain: Vec<CertificateDer<'static>>,
}

impl IdentityDir {
    /// Reads `ca.pem`, `cert.pem` and `key.pem` from `dir` and the identity of `cert.pem`.
    pub fn load(dir: &Path) -> Result<Self, TlsError> {
        let (ca_path, cert_path, key_path) =
            (dir.join(CA_FILE), dir.join(CERT_FILE), dir.join(KEY_FILE));
        let ca_pem = read(&ca_path)?;
        let cert_pem = read(&cert_path)?;
        // A private key other users can read is no longer the organisation's alone.
        for secret in [key_path.clone(), dir.join(SIGNING_KEY_FILE)] {
            if secret.exists() && readable_by_others(&secret).unwrap_or(false) {
                return Err(TlsError::File {
                    reason: format!(
                        "a private key readable by other users: `chmod 600 {}` (and consider it disclosed)",
                        secret.display()
                    ),
                    path: secret,
                });
            }
        }
        let key_pem = read(&key_path)?;
        let ca = certificates(&ca_path, &ca_pem)?;
        let chain = certificates(&cert_path, &cert_pem)?;
        PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::File {
            path: key_path.clone(),
            reason: format!("no usable PRIVATE KEY ({e})"),
        })?;
        let organisation_id = organisation_of(&chain[0]).map_err(|e| TlsError::File {
            path: cert_path,
            reason: e.to_string(),
        })?;
        Ok(Self {
            dir: dir.to_owned(),
            organisation_id,
            key_pem,
            ca,
            chain,
        })
    }

    /// The path of the signing key in this folder.
    pub fn signing_key_path(&self) -> PathBuf {
        self.dir.join(SIGNING_KEY_FILE)
    }

    /// The federation's CA certificates (`ca.pem`).
    pub fn ca_certificates(&self) -> &[CertificateDer<'static>] {
        &self.ca
    }

    /// This organisation's certificate chain (`cert.pem`), end-entity first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    /// This organisation's TLS private key (`key.pem`).
    pub fn private_key(&self) -> Result<PrivateKeyDer<'static>, TlsError> {
        PrivateKeyDer::from_pem_slice(&self.key_pem)
            .map_err(|e| TlsError::Config(format!("{KEY_FILE}: {e}")))
    }

    /// When `cert.pem` stops being valid, in seconds since the Unix epoch.
    pub fn not_after(&self) -> Option<i64> {
        let (_, parsed) = x509_parser::parse_x509_certificate(&self.chain[0]).ok()?;
        Some(parsed.validity().not_after.timestamp())
    }

    /// The federation's CA as the only trusted root, for both sides of a connection.
    pub(super) fn roots(&self) -> Result<rustls::RootCertStore, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in &self.ca {
            roots
                .add(c.clone())
                .map_err(|e| TlsError::Config(format!("{}: {e}", CA_FILE)))?;
        }
        Ok(roots)
    }

    /// The client side: trusts only the federation's CA and presents this identity.
    pub fn client(&self) -> Result<ClientTls, TlsError> {
        let key = self.private_key()?;
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(self.roots()?)
            .with_client_auth_cert(self.chain.clone(), key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }
}
