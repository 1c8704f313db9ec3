//! Transport set-up in one place: the node service plus tonic-health (and, when the access
//! policy enables it, server reflection) on a listener, with mutual TLS unless the node runs
//! `--insecure`, within the connection limits of [`crate::limits::Limits`] (caps, handshake and
//! idle timeouts: [`crate::tls_server`], [`crate::connections`]; HTTP/2 keep-alive, streams per
//! connection and a call timeout: the tonic server), until a shutdown future resolves. Every
//! call of the contract is counted and timed by [`crate::timing`], a layer around the server.

use crate::access::{AccessPolicy, Gate};
use crate::config::Transport;
use crate::connections::{ActivityLayer, Table};
use crate::limits::Limits;
use crate::node::Node;
use crate::service::NodeService;
use crate::timing::TimingLayer;
use crate::tls_server::{incoming, plain, tls_handshake};
use dpagg_proto::signature::{SignatureError, SigningKey};
use dpagg_proto::v1::FILE_DESCRIPTOR_SET;
use dpagg_proto::v1::organisation_node_server::OrganisationNodeServer;
use dpagg_shared::identity::{
    CERT_FILE, IdentityDir, KEY_FILE, SIGNING_KEY_FILE, TlsError, server_config,
};
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Why the server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The reflection service could not be built from the descriptor set.
    #[error("cannot build the reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The server failed.
    #[error("gRPC server failed: {0}")]
    Server(#[from] tonic::transport::Error),
}

/// Why a node's security material cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    /// The identity folder is unusable.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The signing key is unusable.
    #[error(transparent)]
    Signing(#[from] SignatureError),
    /// Someone other than the node's user can change the identity folder or its keys.
    #[error(transparent)]
    Private(#[from] dpagg_shared::util::private::PrivateError),
    /// The certificate names another organisation than the configuration.
    #[error(
        "{path}: the certificate names organisation {certificate:?}, but this node is \
         {configured:?}: a node serves only under its own certificate"
    )]
    WrongOrganisation {
        /// The certificate file.
        path: String,
        /// The id in the certificate.
        certificate: String,
        /// `organisation_id` of the configuration.
        configured: String,
    },
}

/// What a node needs to serve securely: its TLS identity, its release-signing key and its
/// access policy.
#[derive(Debug, Clone)]
pub struct Security {
    /// Mutual TLS (`None`: plain text).
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// Signs every served release (`None`: unsigned, only with `--insecure`).
    pub signer: Option<Arc<SigningKey>>,
    /// Allow-lists, rate limit, reflection.
    pub access: AccessPolicy,
}

impl Security {
    /// Reads the identity folder of `transport` and checks that its certificate names
    /// `organisation_id`; plain text has no identity and signs nothing.
    pub fn load(
        transport: &Transport,
        organisation_id: &str,
        access: AccessPolicy,
    ) -> Result<Self, SecurityError> {
        match transport {
            Transport::Insecure => Ok(Self {
                tls: None,
                signer: None,
                access,
            }),
            Transport::Tls(dir) => {
                // Keys someone else could replace are no keys of this organisation.
                dpagg_shared::util::private::check_identity_dir(
                    dir,
                    &[KEY_FILE, SIGNING_KEY_FILE],
                )?;
                let identity = IdentityDir::load(dir)?;
                if identity.organisation_id != organisation_id {
                    return Err(SecurityError::WrongOrganisation {
                        path: dir.join(CERT_FILE).display().to_string(),
                        certificate: identity.organisation_id,
                        configured: organisation_id.to_owned(),
                    });
                }
                let signer = SigningKey::load(&identity.signing_key_path())?;
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                if let Some(warning) = crate::tls_server::expiry_warning(&identity, now) {
                    tracing::warn!("{warning}");
                }
                Ok(Self {
                    tls: Some(server_config(&identity)?),
                    signer: Some(Arc::new(signer)),
                    access,
                })
            }
        }
    }
}

/// Reflection over the node service and health, so `grpcurl list` shows both. Served as v1 and
/// as v1alpha: clients such as grpcio-reflection (Python) and older grpcurl ask v1alpha only.
fn reflection() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}

/// Serves `node` on `listener` within `limits` until `shutdown` resolves, then drains
/// in-flight requests.
pub async fn serve(
    listener: TcpListener,
    node: Arc<Node>,
    security: Security,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), TransportError> {
    let (reporter, health) = tonic_health::server::health_reporter();
    reporter
        .set_serving::<OrganisationNodeServer<NodeService>>()
        .await;
    if security.tls.is_none() {
        tracing::warn!(
            "serving PLAIN TEXT (--insecure): no TLS, no client identities, unsigned releases; \
             anyone who reaches this port can read, and publish if the policy allows"
        );
    }
    if security.access.write.is_empty() && node.policy.allow_remote_publish {
        tracing::warn!(
            "policy.allow_remote_publish is on but access.write names nobody: no client can \
             publish until the operator lists who may spend this node's budget"
        );
    }
    let reflect = security.access.reflection;
    let calls = Limits::call_timeout(node.policy.max_training_seconds);
    let timing = TimingLayer::new(node.metrics.clone());
    let service = NodeService::new(node, Gate::new(security.access), security.signer);
    let table = Table::new(limits);
    let router = tonic::transport::Server::builder()
        .http2_keepalive_interval(Some(limits.keepalive_interval))
        .http2_keepalive_timeout(Some(limits.keepalive_timeout))
        .max_concurrent_streams(limits.max_streams_per_connection)
        .concurrency_limit_per_connection(limits.max_streams_per_connection as usize)
        .timeout(calls)
        .layer(ActivityLayer::new(table.clone()))
        .layer(timing)
        .add_service(health)
        .add_optional_service(reflect.then(|| reflection().build_v1()).transpose()?)
        .add_optional_service(reflect.then(|| reflection().build_v1alpha()).transpose()?)
        .add_service(OrganisationNodeServer::new(service));
    // Handshakes and caps are ours (crate::tls_server) so that refusals are logged and each
    // connection's organisation is counted. TCP_NODELAY is set on every connection: without it,
    // Nagle's algorithm and delayed ACKs delay each small response.
    let handshake_timeout = limits.handshake_timeout;
    match security.tls {
        Some(tls) => {
            let incoming = incoming(listener, table, handshake_timeout, tls_handshake(tls));
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await?
        }
        None => {
            let incoming = incoming(listener, table, handshake_timeout, plain);
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await?
        }
    }
    Ok(())
}
