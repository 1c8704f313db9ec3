//! The node's side of mutual TLS: serving with the rustls server configuration of
//! `dpagg_shared::identity::server_config`, the handshakes (done here,
//! not inside tonic, so that a refused handshake is logged with the peer's address and the
//! reason) and the warning about a certificate that has expired or soon will.
//!
//! Each accepted TCP connection gets its own task that completes the handshake within
//! [`HANDSHAKE_TIMEOUT`]; only finished handshakes reach tonic, so a peer that opens
//! connections and never speaks holds a task for at most that long and nothing else.
//! Refusals are logged on the `dpagg::audit` target, at most [`LOGGED_PER_MINUTE`] a minute;
//! the rest are counted and the count is logged with the next line that is written.

use dpagg_shared::identity::{CERT_FILE, IdentityDir};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::rustls;
use tokio_rustls::server::TlsStream;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;

/// How long a client has to finish its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Refused handshakes logged per minute; more are counted, not logged one by one.
pub const LOGGED_PER_MINUTE: u32 = 20;

/// Warn at start when the node's certificate expires within this many days.
pub const EXPIRY_WARNING_DAYS: i64 = 30;

/// Accepts connections on `listener` and yields those whose handshake succeeded; refused ones
/// are logged. The accept loop stops when tonic drops the stream (at shutdown).
pub fn incoming(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
) -> ReceiverStream<Result<TlsStream<TcpStream>, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    let log = Arc::new(Mutex::new(RefusalLog::default()));
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        // Out of file descriptors and the like: wait, do not spin.
                        tracing::warn!("cannot accept a connection: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = tx.closed() => return,
            };
            let _ = tcp.set_nodelay(true);
            let (tx, acceptor, log) = (tx.clone(), acceptor.clone(), log.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => {
                        let _ = tx.send(Ok(tls)).await;
                    }
                    Ok(Err(e)) => refused(&log, peer, &e.to_string()),
                    Err(_) => refused(&log, peer, "no handshake within 10 s"),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// Logs one refused handshake, unless this minute's quota is spent.
fn refused(log: &Mutex<RefusalLog>, peer: SocketAddr, reason: &str) {
    let Ok(mut log) = log.lock() else { return };
    if let Some(suppressed) = log.admit(Instant::now()) {
        tracing::warn!(
            target: "dpagg::audit",
            %peer,
            reason,
            suppressed_since_last = suppressed,
            "refused a TLS handshake"
        );
    }
}

/// The rate limit of refusal lines: a fixed one-minute window.
#[derive(Debug, Default)]
struct RefusalLog {
    window: Option<Instant>,
    logged: u32,
    suppressed: u64,
}

impl RefusalLog {
    /// `Some(number suppressed since the last logged line)` when this refusal may be logged.
    fn admit(&mut self, now: Instant) -> Option<u64> {
        let fresh = self
            .window
            .is_none_or(|start| now.duration_since(start) >= Duration::from_secs(60));
        if fresh {
            self.window = Some(now);
            self.logged = 0;
        }
        if self.logged >= LOGGED_PER_MINUTE {
            self.suppressed += 1;
            return None;
        }
        self.logged += 1;
        Some(std::mem::take(&mut self.suppressed))
    }
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

    #[test]
    fn refusals_are_logged_up_to_the_quota_then_counted() {
        let mut log = RefusalLog::default();
        let t0 = Instant::now();
        for _ in 0..LOGGED_PER_MINUTE {
            assert_eq!(log.admit(t0), Some(0));
        }
        assert_eq!(log.admit(t0), None);
        assert_eq!(log.admit(t0 + Duration::from_secs(30)), None);
        assert_eq!(log.admit(t0 + Duration::from_secs(61)), Some(2));
        assert_eq!(log.admit(t0 + Duration::from_secs(62)), Some(0));
    }
}
