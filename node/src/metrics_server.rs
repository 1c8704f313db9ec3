//! The metrics endpoint: `GET /metrics` on `metrics_listen`, plain HTTP/1.1 (hyper), answering
//! the node's [`crate::metrics::Metrics`] as OpenMetrics text, which Prometheus scrapes. It is
//! off unless configured, listens on its own address (so a firewall or a Kubernetes
//! NetworkPolicy can open it to the monitoring system only), and serves nothing else: no
//! release, no data, only counts, budgets and durations.
//!
//! Nobody is authenticated here, so nobody may hold it: at most
//! `limits.metrics_max_connections` connections at once (more are closed at once), a request's
//! header within `limits.metrics_header_timeout_seconds` (also the longest pause between
//! requests on one connection), and a connection for at most [`METRICS_CONNECTION_LIFETIME`].
//! Accept errors (out of file descriptors) pause the loop instead of spinning; refusals and
//! errors are logged at most [`crate::log_limit::LOGGED_PER_MINUTE`] a minute per kind.

use crate::connections::Backoff;
use crate::limits::{Limits, METRICS_CONNECTION_LIFETIME};
use crate::log_limit::LogLimit;
use crate::node::{Node, budget_policy};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The content type of OpenMetrics text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `node`'s metrics on `listener` within `limits` until `shutdown` completes.
pub async fn serve_metrics(
    listener: TcpListener,
    node: Arc<Node>,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let permits = Arc::new(Semaphore::new(limits.metrics_max_connections));
    let log = LogLimit::default();
    let mut backoff = Backoff::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.metrics_header_timeout);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(a) => {
                backoff.reset();
                a
            }
            Err(e) => {
                if let Some(suppressed) = log.admit_now(&"accept") {
                    tracing::warn!(
                        suppressed_since_last = suppressed,
                        "metrics: cannot accept a connection: {e}"
                    );
                }
                tokio::time::sleep(backoff.pause()).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            if let Some(suppressed) = log.admit_now(&"cap") {
                tracing::warn!(
                    target: "dpagg::audit",
                    %peer,
                    suppressed_since_last = suppressed,
                    "metrics: refused a connection: {} are open (limits.metrics_max_connections)",
                    limits.metrics_max_connections
                );
            }
            continue;
        };
        let (node, http) = (node.clone(), http.clone());
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, node.clone()));
            // A client that goes away, stalls or overstays is no concern of the node's.
            let connection = http.serve_connection(TokioIo::new(stream), service);
            let _ = tokio::time::timeout(METRICS_CONNECTION_LIFETIME, connection).await;
            drop(permit);
        });
    }
}

/// One request: the metrics at `GET /metrics`, 404 elsewhere, 405 for another method.
async fn answer(
    request: Request<Incoming>,
    node: Arc<Node>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let reply = |status: StatusCode, kind: &'static str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(v) = hyper::header::HeaderValue::from_str(kind) {
            response
                .headers_mut()
                .insert(hyper::header::CONTENT_TYPE, v);
        }
        Ok(response)
    };
    if request.uri().path() != "/metrics" {
        return reply(StatusCode::NOT_FOUND, "text/plain", "try /metrics\n".into());
    }
    if request.method() != Method::GET {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "GET only\n".into(),
        );
    }
    let encoded = tokio::task::spawn_blocking(move || {
        node.metrics
            .encode(&node.store, &budget_policy(&node.policy))
    })
    .await;
    match encoded {
        Ok(Ok(text)) => reply(StatusCode::OK, CONTENT_TYPE, text),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "cannot read the ledger for the metrics");
            reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                "cannot read the ledger; see the node's log\n".into(),
            )
        }
        Err(_) => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            "worker failed\n".into(),
        ),
    }
}
