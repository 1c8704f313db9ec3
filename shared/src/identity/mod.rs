//! Identity of organisations, shared by both binaries (cargo feature `identity`): mutual TLS
//! between organisations — identity folders, organisation identities in certificates, the
//! client and server configurations, the client connector aggregators (and `dpagg-node health`)
//! use, the classification of handshake failures — and the development CA of `dpagg-node
//! certs` ([`certs`]). The node serves with it (`dpagg_node::transport`, `tls_server`) and the
//! aggregator dials with it; neither depends on the other.
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
//! identity (`dpagg_node::access`). An aggregator checks that the identity of the node's
//! certificate equals the `organisation_id` the node describes itself with
//! ([`ClientTls::connect`] returns the identity). Host names are checked as usual: the node's
//! certificate must also name the host the client dials (`dpagg-node certs` adds `localhost`,
//! 127.0.0.1, ::1, the organisation id and any `--host`).
//!
//! **Layout of an identity folder** (`dpagg-node certs init|issue` writes it):
//! `ca.pem` (the federation's CA certificate), `cert.pem` and `key.pem` (this organisation's TLS
//! certificate and private key) and `signing.key` (its Ed25519 release-signing key; nodes only).

pub mod certs;
mod client;
mod folder;
mod handshake;
mod organisation;
mod server;

pub use client::{ClientTls, ConnectError};
pub use folder::{CA_FILE, CERT_FILE, IdentityDir, KEY_FILE, SIGNING_KEY_FILE};
pub use handshake::handshake_problem;
pub use organisation::{
    IDENTITY_PREFIX, MAX_ORGANISATION_ID, check_organisation_id, identity_uri, organisation_of,
};
pub use server::server_config;

use std::path::PathBuf;

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
