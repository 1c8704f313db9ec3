//! The server side of mutual TLS: the node's rustls configuration (serving it, with the
//! handshakes and their audit log, is the node's: `dpagg_node::tls_server`).

use super::{IdentityDir, TlsError};
use std::sync::Arc;
use tokio_rustls::rustls;

/// The server configuration: `identity`'s certificate and key, a client certificate from the
/// federation's CA required on every connection, HTTP/2 only.
pub fn server_config(identity: &IdentityDir) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let verifier = rustls::server::WebPkiClientVerifier::builder(identity.roots()?.into())
        .build()
        .map_err(|e| TlsError::Config(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(identity.chain().to_vec(), identity.private_key()?)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}
