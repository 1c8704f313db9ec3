//! The node's gRPC listener: accepting connections within the caps of
//! [`crate::limits::Limits`] ([`crate::connections::Table`]), the TLS handshakes with the rustls
//! server configuration of `dpagg_shared::identity::server_config` (done here, not inside tonic,
//! so that a refused handshake is logged with the peer's address and the reason, and so that the
//! client's organisation is known before the connection reaches tonic), and the warning about a
//! certificate that has expired or soon will.
//!
//! Each accepted TCP connection takes a slot of the table, or is closed at once; it then gets its
//! own task that completes the handshake within `limits.handshake_timeout_seconds`, and is
//! closed if its organisation already holds `limits.max_connections_per_peer` connections. Only
//! admitted connections reach tonic, each wrapped in a [`Tracked`] that closes it when idle.
//! Accept errors (out of file descriptors) pause the loop ([`Backoff`]) instead of spinning.
//! Refusals and accept errors are logged on the `dpagg::audit` target at most
//! [`LOGGED_PER_MINUTE`] a minute per kind; the rest are counted and the count is logged with
//! the next line of that kind ([`LogLimit`]).

use crate::connections::{Backoff, Pending, Table, Tracked};
pub use crate::log_limit::LOGGED_PER_MINUTE;
use crate::log_limit::LogLimit;
use dpagg_shared::identity::{CERT_FILE, IdentityDir, organisation_of};
use dpagg_shared::util::text::{MAX_TEXT, clean};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;

/// Warn at start when the node's certificate expires within this many days.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// The connections [`incoming`] yields.
pub type Incoming<IO> = ReceiverStream<Result<Tracked<IO>, std::io::Error>>;

/// The outcome of a handshake: the connection and the client's organisation (`None` in plain
/// text), or why it was refused.
pub type Handshaken<IO> = Result<(IO, Option<String>), String>;

/// A handshake in progress.
pub type Handshake<IO> = Pin<Box<dyn Future<Output = Handshaken<IO>> + Send>>;

/// The mutual TLS handshake with `config`: the client's organisation is the identity of its
/// certificate (the handshake has verified it against the federation's CA).
pub fn tls_handshake(
    config: Arc<rustls::ServerConfig>,
) -> impl Fn(TcpStream) -> Handshake<TlsStream<TcpStream>> + Send + Sync + 'static {
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    move |tcp| {
        let acceptor = acceptor.clone();
        Box::pin(async move {
            let tls = acceptor.accept(tcp).await.map_err(|e| e.to_string())?;
            let leaf = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|chain| chain.first())
                .ok_or("no client certificate")?;
            let organisation =
                organisation_of(leaf).map_err(|e| format!("client certificate: {e}"))?;
            Ok((tls, Some(organisation)))
        })
    }
}

/// Plain text (`--insecure`): no handshake and nobody known, so no per-peer cap.
pub fn plain(tcp: TcpStream) -> Handshake<TcpStream> {
    Box::pin(async move { Ok((tcp, None)) })
}

/// Logs a refusal of `kind` from `peer`, unless this minute's quota of the kind is spent.
fn refused(
    log: &LogLimit<&'static str>,
    kind: &'static str,
    message: &str,
    peer: SocketAddr,
    reason: &str,
) {
    if let Some(suppressed) = log.admit_now(&kind) {
        tracing::warn!(
            target: "dpagg::audit",
            %peer,
            reason = %clean(reason, MAX_TEXT),
            suppressed_since_last = suppressed,
            "{message}"
        );
    }
}

/// The connection of a finished handshake, if its organisation has room; refusals logged.
fn open<IO>(
    shaken: Handshaken<IO>,
    pending: Pending,
    peer: SocketAddr,
    log: &LogLimit<&'static str>,
) -> Option<Tracked<IO>> {
    let (io, organisation) = match shaken {
        Ok(done) => done,
        Err(reason) => {
            refused(log, "handshake", "refused a TLS handshake", peer, &reason);
            return None;
        }
    };
    match pending.open(organisation) {
        Ok(slot) => Some(Tracked::new(io, slot)),
        Err(refusal) => {
            let reason = refusal.to_string();
            refused(log, refusal.kind(), "refused a connection", peer, &reason);
            None
        }
    }
}

/// Accepts connections on `listener` within `table`'s caps, runs `handshake` on each (within
/// `handshake_timeout`) and yields those admitted; the others are closed and logged. The
/// accept loop stops when tonic drops the stream (at shutdown).
pub fn incoming<IO, H>(
    listener: TcpListener,
    table: Arc<Table>,
    handshake_timeout: Duration,
    handshake: H,
) -> Incoming<IO>
where
    IO: Send + 'static,
    H: Fn(TcpStream) -> Handshake<IO> + Send + Sync + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let log = Arc::new(LogLimit::default());
    let handshake = Arc::new(handshake);
    tokio::spawn(async move {
        let mut backoff = Backoff::new();
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => {
                        backoff.reset();
                        a
                    }
                    Err(e) => {
                        // Out of file descriptors and the like: wait, do not spin.
                        if let Some(suppressed) = log.admit_now(&"accept") {
                            tracing::warn!(suppressed_since_last = suppressed, "cannot accept a connection: {e}");
                        }
                        tokio::time::sleep(backoff.pause()).await;
                        continue;
                    }
                },
                () = tx.closed() => return,
            };
            let pending = match table.admit(peer) {
                Ok(pending) => pending,
                Err(refusal) => {
                    refused(
                        &log,
                        refusal.kind(),
                        "refused a connection",
                        peer,
                        &refusal.to_string(),
                    );
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            let (tx, log, handshake) = (tx.clone(), log.clone(), handshake.clone());
            tokio::spawn(async move {
                let shaken = tokio::time::timeout(handshake_timeout, handshake(tcp)).await;
                let shaken = shaken.unwrap_or_else(|_| {
                    Err(format!(
                        "no handshake within {} s (limits.handshake_timeout_seconds)",
                        handshake_timeout.as_secs_f64()
                    ))
                });
                if let Some(admitted) = open(shaken, pending, peer, &log) {
                    let _ = tx.send(Ok(admitted)).await;
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// A warning when `identity`'s certificate has expired or expires within
/// [`EXPIRY_WARNING_DAYS`] of `now` (seconds since the Unix epoch); `None` when it is fine.
pub fn expiry_warning(identity: &IdentityDir, now: i64) -> Option<String> {
    let not_after = identity.not_after()?;
    let left = not_after - now;
    let renew = "renew it with `dpagg-node certs issue` from the federation's CA";
    let path = identity.dir.join(CERT_FILE);
    if left <= 0 {
        Some(format!(
            "{}: the node's certificate EXPIRED {} day(s) ago: every client will refuse it; {renew}",
            path.display(),
            -left / 86_400
        ))
    } else if left < EXPIRY_WARNING_DAYS * 86_400 {
        Some(format!(
            "{}: the node's certificate expires in {} day(s); {renew}",
            path.display(),
            left / 86_400
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_expired_or_expiring_certificate_is_warned_about() {
        use dpagg_shared::identity::certs::{Validity, init};
        use dpagg_shared::identity::server_config;
        let dir = tempfile::tempdir().expect("tempdir");
        let made = init(
            &dir.path().join("fed"),
            &["soon".to_owned()],
            &[],
            Validity::days_from_now(10),
        )
        .expect("init");
        let identity = IdentityDir::load(&made[0]).expect("loads");
        let not_after = identity.not_after().expect("validity");
        let now = not_after - 10 * 86_400 + 3_600;
        let soon = expiry_warning(&identity, now).expect("warned");
        assert!(soon.contains("expires in 9 day(s)"), "{soon}");
        let gone = expiry_warning(&identity, not_after + 3 * 86_400).expect("warned");
        assert!(gone.contains("EXPIRED 3 day(s) ago"), "{gone}");
        assert_eq!(expiry_warning(&identity, not_after - 31 * 86_400), None);
        server_config(&identity).expect("a server config");
    }
}
