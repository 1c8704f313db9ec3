//! The client side of mutual TLS: a connector that does the handshake itself, so that an
//! aggregator (or `dpagg-node health`) learns the organisation of the server's certificate.

use super::{TlsError, organisation_of};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio_rustls::rustls;
use tonic::transport::{Channel, Endpoint, Uri};

/// A TLS client for `https://` endpoints that reports the identity of the server's
/// certificate.
#[derive(Debug, Clone)]
pub struct ClientTls {
    pub(super) config: Arc<rustls::ClientConfig>,
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
    fn endpoints_split_into_host_port_and_name() {
        let (h, p, _) = split_endpoint("https://127.0.0.1:50051").expect("ip");
        assert_eq!((h.as_str(), p), ("127.0.0.1", 50051));
        let (h, p, _) = split_endpoint("https://org-1:443").expect("dns");
        assert_eq!((h.as_str(), p), ("org-1", 443));
        assert!(split_endpoint("http://127.0.0.1:1").is_err());
        assert!(split_endpoint("nonsense").is_err());
    }
}
