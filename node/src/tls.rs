//! Mutual TLS between organisations: identity folders, organisation identities in certificates,
//! the node's server configuration and the client connector aggregators (and `dpagg-node
//! health`) use.
//!
//! **Crypto provider.** rustls with `ring`: `ring` builds from crates.io with a C compiler only
//! (no cmake, Go or NASM, which `aws-lc-rs` needs), it is what tonic's `tls-ring` feature selects,
//! and the release signatures (`dpagg_proto::signature`) use the same library, so one
//! implementation of the primitives is audited and shipped.
//!
//! **Identity.** An organisation is named by one URI subject alternative name,
//! `dpagg://org/<organisation_id>`, in a certificate signed by the federation's CA. A node
//! requires a client certificate from that CA on every connection (the handshake fails
//! otherwise: another CA, an expired certificate, no certificate) and authorises by that
//! identity (`crate::access`). An aggregator checks that the identity of the node's
//! certificate equals the `organisation_id` the node describes itself with
//! ([`ClientTls::connect`] returns the identity). Host names are checked as usual: the node's
//! certificate must also name the host the client dials (`dpagg-node certs` adds `localhost`,
//! 127.0.0.1, ::1, the organisation id and any `--host`).
//!
//! **Layout of an identity folder** (`dpagg-node certs init|issue` writes it):
//! `ca.pem` (the federation's CA certificate), `cert.pem` and `key.pem` (this organisation's TLS
//! certificate and private key) and `signing.key` (its Ed25519 release-signing key; nodes only).

use dpagg_shared::util::files::readable_by_others;
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio_rustls::rustls;
use tonic::transport::{Channel, Endpoint, Uri};

/// The URI prefix of an organisation identity in a certificate.
pub const IDENTITY_PREFIX: &str = "dpagg://org/";

/// Longest organisation id.
pub const MAX_ORGANISATION_ID: usize = 64;

/// The files of an identity folder.
pub const CA_FILE: &str = "ca.pem";
/// The organisation's certificate.
pub const CERT_FILE: &str = "cert.pem";
/// The organisation's TLS private key.
pub const KEY_FILE: &str = "key.pem";
/// The organisation's release-signing key (Ed25519, PKCS#8 PEM).
pub const SIGNING_KEY_FILE: &str = "signing.key";

/// Why TLS material cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file is unreadable or holds no usable PEM.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A certificate has no (or more than one) organisation identity.
    #[error("certificate has no usable organisation identity: {0}")]
    Identity(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(String),
    /// An endpoint cannot be dialled with TLS.
    #[error("endpoint {endpoint}: {reason}")]
    Endpoint {
        /// The endpoint.
        endpoint: String,
        /// What is wrong.
        reason: String,
    },
}

/// Checks an organisation id: 1 to 64 characters from `A–Z a–z 0–9 . _ -`, starting with a letter
/// or digit. Ids appear in certificates, file names, logs and reports, so nothing else is allowed.
pub fn check_organisation_id(id: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if id.is_empty() || id.len() > MAX_ORGANISATION_ID {
        return Err(format!("1 to {MAX_ORGANISATION_ID} characters"));
    }
    if !id.chars().all(ok_char) || !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(
            "letters, digits, '.', '_' and '-' only, starting with a letter or digit".into(),
        );
    }
    Ok(())
}

/// The identity URI of an organisation.
pub fn identity_uri(organisation_id: &str) -> String {
    format!("{IDENTITY_PREFIX}{organisation_id}")
}

/// The organisation a certificate (DER) names: its one `dpagg://org/<id>` URI SAN.
pub fn organisation_of(cert: &[u8]) -> Result<String, TlsError> {
    use x509_parser::extensions::GeneralName;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert)
        .map_err(|e| TlsError::Identity(format!("unparsable certificate ({e})")))?;
    let san = parsed
        .subject_alternative_name()
        .map_err(|e| TlsError::Identity(format!("bad subject alternative names ({e})")))?;
    let ids: Vec<&str> = san
        .iter()
        .flat_map(|s| s.value.general_names.iter())
        .filter_map(|n| match n {
            GeneralName::URI(u) => u.strip_prefix(IDENTITY_PREFIX),
            _ => None,
        })
        .collect();
    match ids.as_slice() {
        [one] => {
            check_organisation_id(one)
                .map_err(|why| TlsError::Identity(format!("invalid id in certificate: {why}")))?;
            Ok((*one).to_owned())
        }
        [] => Err(TlsError::Identity(format!(
            "no {IDENTITY_PREFIX}<id> subject alternative name"
        ))),
        _ => Err(TlsError::Identity(format!(
            "{} {IDENTITY_PREFIX} names",
            ids.len()
        ))),
    }
}

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

    /// The client side: trusts only the federation's CA and presents this identity.
    pub fn client(&self) -> Result<ClientTls, TlsError> {
        let mut roots = rustls::RootCertStore::empty();
        for c in &self.ca {
            roots
                .add(c.clone())
                .map_err(|e| TlsError::Config(format!("{}: {e}", CA_FILE)))?;
        }
        let key = self.private_key()?;
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_client_auth_cert(self.chain.clone(), key)
            .map_err(|e| TlsError::Config(e.to_string()))?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }
}

/// A TLS client for `https://` endpoints that reports the identity of the server's
/// certificate.
#[derive(Debug, Clone)]
pub struct ClientTls {
    config: Arc<rustls::ClientConfig>,
}

/// The parts of an `https://host:port` endpoint a connector needs.
fn split_endpoint(url: &str) -> Result<(String, u16, ServerName<'static>), TlsError> {
    let bad = |reason: &str| TlsError::Endpoint {
        endpoint: url.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    if uri.scheme_str() != Some("https") {
        return Err(bad("TLS endpoints start with https://"));
    }
    let host = uri.host().ok_or_else(|| bad("no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(443);
    let name = ServerName::try_from(host.clone())
        .map_err(|_| bad("the host is not a valid DNS name or IP address"))?;
    Ok((host, port, name))
}

impl ClientTls {
    /// Connects to an `https://` endpoint (mutual TLS, HTTP/2) and returns the channel with the
    /// organisation identity of the server's certificate. `configure` sets timeouts and the like
    /// on the endpoint.
    pub async fn connect(
        &self,
        url: &str,
        configure: impl FnOnce(Endpoint) -> Endpoint,
    ) -> Result<(Channel, String), ConnectError> {
        let (host, port, name) = split_endpoint(url).map_err(ConnectError::Tls)?;
        // tonic would refuse an https:// URI without its own TLS: the connector below does TLS,
        // so the channel itself is told http://.
        let plain = format!("http://{}", url.trim_start_matches("https://"));
        let endpoint = configure(Endpoint::from_shared(plain).map_err(|e| {
            ConnectError::Tls(TlsError::Endpoint {
                endpoint: url.to_owned(),
                reason: e.to_string(),
            })
        })?);
        let peer = Arc::new(Mutex::new(None));
        let connector = Connector {
            config: self.config.clone(),
            host,
            port,
            name,
            peer: peer.clone(),
        };
        let channel = endpoint
            .connect_with_connector(connector)
            .await
            .map_err(ConnectError::Transport)?;
        let cert = peer
            .lock()
            .map_err(|_| ConnectError::Tls(TlsError::Config("poisoned".into())))?
            .take()
            .ok_or_else(|| {
                ConnectError::Tls(TlsError::Identity("the server sent no certificate".into()))
            })?;
        let organisation = organisation_of(&cert).map_err(ConnectError::Tls)?;
        Ok((channel, organisation))
    }
}

/// Why a TLS connection was not made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The endpoint or the server's identity is unusable.
    #[error(transparent)]
    Tls(TlsError),
    /// The connection or the handshake failed.
    #[error(transparent)]
    Transport(tonic::transport::Error),
}

/// What went wrong in a TLS handshake, in words an operator can act on, when `error` (a
/// connection failure and its causes) holds a rustls error that a retry would meet again: a
/// certificate from another CA, an expired one, one refused by the server, or a peer that does
/// not speak TLS. `None` for failures that may pass (refused connection, timeout, reset).
pub fn handshake_problem(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let tls = std::iter::successors(Some(error), |e| e.source()).find_map(|e| {
        e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        })
    })?;
    Some(describe_tls(tls))
}

/// One rustls error explained.
fn describe_tls(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    let wrong_ca = "the node's certificate is not signed by this federation's CA: check ca.pem \
                    in the identity folder, or another TLS service answers on that port";
    match e {
        E::InvalidCertificate(c) => match c {
            C::BadSignature | C::UnknownIssuer | C::BadEncoding => wrong_ca.into(),
            C::Expired | C::ExpiredContext { .. } => {
                "the node's certificate has expired: issue it a new one (dpagg-node certs issue)"
                    .into()
            }
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "the node's certificate is not valid yet (check the clocks)".into()
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "the node's certificate does not name the host dialled: issue it with --host".into()
            }
            other => format!("the node's certificate was refused ({other:?})"),
        },
        E::AlertReceived(
            A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::CertificateRequired,
        ) => "the node refused this client's certificate: is it from the node's CA (the \
              identity folder given)?"
            .into(),
        E::AlertReceived(A::CertificateExpired) => {
            "the node refused this client's certificate as expired".into()
        }
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            "the port does not speak TLS: a plain-text node is dialled with http:// and \
             --insecure, or another kind of server listens there"
                .into()
        }
        other => format!("TLS handshake failed: {other}"),
    }
}

/// Dials TCP, runs the TLS handshake and keeps the server's end-entity certificate.
#[derive(Clone)]
struct Connector {
    config: Arc<rustls::ClientConfig>,
    host: String,
    port: u16,
    name: ServerName<'static>,
    peer: Arc<Mutex<Option<Vec<u8>>>>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl tower_service::Service<Uri> for Connector {
    type Response = TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;
    type Error = std::io::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let tcp = tokio::net::TcpStream::connect((this.host.as_str(), this.port)).await?;
            tcp.set_nodelay(true)?;
            let tls = tokio_rustls::TlsConnector::from(this.config)
                .connect(this.name, tcp)
                .await?;
            let cert = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .map(|c| c.as_ref().to_vec());
            if let Ok(mut slot) = this.peer.lock() {
                *slot = cert;
            }
            Ok(TokioIo::new(tls))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn organisation_ids_are_restricted() {
        for good in ["org-1", "hospital_a", "a", "B.2"] {
            assert!(check_organisation_id(good).is_ok(), "{good}");
        }
        let long = "x".repeat(65);
        for bad in [
            "",
            "-x",
            ".hidden",
            "a b",
            "a/b",
            "é",
            "a\u{1b}[31m",
            long.as_str(),
        ] {
            assert!(check_organisation_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn endpoints_split_into_host_port_and_name() {
        let (h, p, _) = split_endpoint("https://127.0.0.1:50051").expect("ip");
        assert_eq!((h.as_str(), p), ("127.0.0.1", 50051));
        let (h, p, _) = split_endpoint("https://org-1:443").expect("dns");
        assert_eq!((h.as_str(), p), ("org-1", 443));
        assert!(split_endpoint("http://127.0.0.1:1").is_err());
        assert!(split_endpoint("nonsense").is_err());
    }
}
