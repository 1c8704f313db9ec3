//! The bookkeeping of the gRPC listener's connections, so that connections a client opens and
//! does not use cost the node a bounded number of file descriptors for a bounded time.
//!
//! - [`Table`] holds the caps of [`crate::limits::Limits`]: all connections (handshaking or
//!   open), TLS handshakes in progress per IP address, and open connections per organisation
//!   (the identity of the client certificate, known once the handshake is done). A connection
//!   over a cap is closed at once; the accept loop (`crate::tls_server`) logs why.
//! - [`Tracked`] wraps an admitted connection: it gives its slots back when the connection
//!   ends, and ends it after `idle_timeout` without a call in progress. A call counts from
//!   its request to its answer ([`ActivityLayer`], a tower layer around every service): a
//!   training that runs for minutes keeps its connection, PINGs and half-sent requests do not.
//! - [`Backoff`] paces an accept loop that meets errors (out of file descriptors) instead of
//!   letting it spin.

use crate::limits::Limits;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tonic::transport::server::{Connected, TcpConnectInfo, TlsConnectInfo};

/// Why a connection was closed before it could be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// `max_connections` are held.
    #[error("{0} connections are open (limits.max_connections)")]
    Full(usize),
    /// The address has `max_handshakes_per_address` handshakes in progress.
    #[error("{0} handshakes in progress from this address (limits.max_handshakes_per_address)")]
    Handshakes(usize),
    /// The organisation holds `max_connections_per_peer` connections.
    #[error("organisation {peer:?} holds {max} connections (limits.max_connections_per_peer)")]
    Peer {
        /// The organisation of the client certificate.
        peer: String,
        /// The cap.
        max: usize,
    },
}

impl Refusal {
    /// The kind, the key of the refusal log's rate limit.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Full(_) => "connection cap",
            Self::Handshakes(_) => "handshake cap",
            Self::Peer { .. } => "peer cap",
        }
    }
}

/// The calls in progress on one connection and when the last one ended.
#[derive(Debug)]
pub struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    fn new() -> Self {
        Self {
            in_flight: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
        }
    }

    /// When the connection becomes idle for `idle`: `None` while a call is in progress.
    fn idle_at(&self, idle: Duration) -> Option<Instant> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        self.last.lock().ok().map(|last| *last + idle)
    }

    /// Marks a call in progress until the guard is dropped.
    fn begin(self: &Arc<Self>) -> Busy {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Busy(self.clone())
    }
}

/// A call in progress on a connection.
#[derive(Debug)]
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        if let Ok(mut last) = self.0.last.lock() {
            *last = Instant::now();
        }
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Debug, Default)]
struct Counts {
    handshaking: HashMap<IpAddr, usize>,
    peers: HashMap<String, usize>,
    open: HashMap<SocketAddr, Arc<Activity>>,
}

/// The connection caps of one listener and the connections it holds.
#[derive(Debug)]
pub struct Table {
    permits: Arc<Semaphore>,
    max_connections: usize,
    per_peer: usize,
    per_address: usize,
    idle: Duration,
    counts: Mutex<Counts>,
}

impl Table {
    /// A table for `limits`.
    pub fn new(limits: &Limits) -> Arc<Self> {
        Arc::new(Self {
            permits: Arc::new(Semaphore::new(limits.max_connections)),
            max_connections: limits.max_connections,
            per_peer: limits.max_connections_per_peer,
            per_address: limits.max_handshakes_per_address,
            idle: limits.idle_timeout,
            counts: Mutex::new(Counts::default()),
        })
    }

    fn counts(&self) -> MutexGuard<'_, Counts> {
        // The counts stay consistent under a panic elsewhere: every change is one statement.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Room for a new connection from `remote` (before its handshake), or why not.
    pub fn admit(self: &Arc<Self>, remote: SocketAddr) -> Result<Pending, Refusal> {
        let permit = self
            .permits
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refusal::Full(self.max_connections))?;
        let mut counts = self.counts();
        let handshaking = counts.handshaking.entry(remote.ip()).or_default();
        if *handshaking >= self.per_address {
            return Err(Refusal::Handshakes(self.per_address));
        }
        *handshaking += 1;
        Ok(Pending {
            permit: Some(permit),
            table: self.clone(),
            remote,
        })
    }

    /// The activity of the open connection from `remote`.
    fn activity(&self, remote: SocketAddr) -> Option<Arc<Activity>> {
        self.counts().open.get(&remote).cloned()
    }

    /// Connections open now (after their handshake).
    pub fn open(&self) -> usize {
        self.counts().open.len()
    }
}

/// A connection admitted and handshaking: it holds a slot and counts against its address.
#[derive(Debug)]
pub struct Pending {
    permit: Option<OwnedSemaphorePermit>,
    table: Arc<Table>,
    remote: SocketAddr,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut counts = self.table.counts();
        let ip = self.remote.ip();
        if let Some(n) = counts.handshaking.get_mut(&ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.handshaking.remove(&ip);
            }
        }
    }
}

impl Pending {
    /// The handshake is done and the client is `peer` (`None` in plain text, where nobody is
    /// known): the connection is open, unless `peer` holds its cap of connections.
    pub fn open(mut self, peer: Option<String>) -> Result<Slot, Refusal> {
        let activity = Arc::new(Activity::new());
        let mut counts = self.table.counts();
        if let Some(peer) = &peer {
            let held = counts.peers.entry(peer.clone()).or_default();
            if *held >= self.table.per_peer {
                return Err(Refusal::Peer {
                    peer: peer.clone(),
                    max: self.table.per_peer,
                });
            }
            *held += 1;
        }
        counts.open.insert(self.remote, activity.clone());
        drop(counts);
        Ok(Slot {
            _permit: self.permit.take(),
            table: self.table.clone(),
            remote: self.remote,
            peer,
            activity,
        })
    }
}

/// An open connection's place in the table, given back when dropped.
#[derive(Debug)]
pub struct Slot {
    _permit: Option<OwnedSemaphorePermit>,
    table: Arc<Table>,
    remote: SocketAddr,
    peer: Option<String>,
    activity: Arc<Activity>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.table.counts();
        counts.open.remove(&self.remote);
        if let Some(peer) = &self.peer
            && let Some(n) = counts.peers.get_mut(peer)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.peers.remove(peer);
            }
        }
    }
}

/// An open connection that ends itself after its table's idle timeout without a call.
pub struct Tracked<IO> {
    io: IO,
    slot: Slot,
    idle: Duration,
    timer: Pin<Box<Sleep>>,
}

impl<IO> Tracked<IO> {
    /// `io`, holding `slot`.
    pub fn new(io: IO, slot: Slot) -> Self {
        let idle = slot.table.idle;
        Self {
            io,
            slot,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
        }
    }

    /// Whether the connection has been idle for its timeout; otherwise the timer is set to
    /// wake the reader when it may be.
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            let now = Instant::now();
            let at = self
                .slot
                .activity
                .idle_at(self.idle)
                .unwrap_or(now + self.idle);
            if at <= now {
                return true;
            }
            if self.timer.deadline() != at {
                self.timer.as_mut().reset(at);
            }
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
        }
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Tracked<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Pending if this.idle_expired(cx) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "closed: no call within limits.idle_timeout_seconds",
            ))),
            other => other,
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Tracked<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

impl<IO: Connected> Connected for Tracked<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// The tower layer that marks a connection busy from each request to its answer.
#[derive(Debug, Clone)]
pub struct ActivityLayer(Arc<Table>);

impl ActivityLayer {
    /// The layer of `table`'s connections.
    pub fn new(table: Arc<Table>) -> Self {
        Self(table)
    }
}

impl<S> tower_layer::Layer<S> for ActivityLayer {
    type Service = ActivityService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ActivityService {
            inner,
            table: self.0.clone(),
        }
    }
}

/// A service whose calls keep their connection from being idle.
#[derive(Debug, Clone)]
pub struct ActivityService<S> {
    inner: S,
    table: Arc<Table>,
}

/// The client's address of a request, as tonic records it for TLS and plain connections.
fn remote_of<B>(request: &http::Request<B>) -> Option<SocketAddr> {
    let ext = request.extensions();
    ext.get::<TlsConnectInfo<TcpConnectInfo>>()
        .and_then(|i| i.get_ref().remote_addr())
        .or_else(|| {
            ext.get::<TcpConnectInfo>()
                .and_then(TcpConnectInfo::remote_addr)
        })
}

impl<S, B> tower_service::Service<http::Request<B>> for ActivityService<S>
where
    S: tower_service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = InFlight<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let busy = remote_of(&request)
            .and_then(|remote| self.table.activity(remote))
            .map(|a| a.begin());
        InFlight {
            inner: Box::pin(self.inner.call(request)),
            _busy: busy,
        }
    }
}

/// A call's answer in progress, its connection marked busy until it is ready (or dropped).
pub struct InFlight<F> {
    inner: Pin<Box<F>>,
    _busy: Option<Busy>,
}

impl<F: Future> Future for InFlight<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

/// The pause after a failed accept: 100 ms, doubling to 1 s while failures go on.
#[derive(Debug, Clone, Copy)]
pub struct Backoff(Duration);

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(1);

    /// The first pause.
    pub fn new() -> Self {
        Self(Self::FIRST)
    }

    /// After a success: the next failure waits the first pause again.
    pub fn reset(&mut self) {
        self.0 = Self::FIRST;
    }

    /// The pause for this failure.
    pub fn pause(&mut self) -> Duration {
        let pause = self.0;
        self.0 = (self.0 * 2).min(Self::MAX);
        pause
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests;
