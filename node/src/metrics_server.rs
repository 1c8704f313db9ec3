//! The metrics endpoint: `GET /metrics` on `metrics_listen`, plain HTTP/1.1 (hyper), answering
//! the node's [`crate::metrics::Metrics`] as OpenMetrics text, which Prometheus scrapes. It is
//! off unless configured, listens on its own address (so a firewall or a Kubernetes
//! NetworkPolicy can open it to the monitoring system only), and serves nothing else: no
//! release, no data, only counts, budgets and durations.

use crate::node::{Node, budget_policy};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// The content type of OpenMetrics text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `node`'s metrics on `listener` until `shutdown` completes.
pub async fn serve_metrics(
    listener: TcpListener,
    node: Arc<Node>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let node = node.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| answer(request, node.clone()));
            // A client that goes away mid-answer is no concern of the node's.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
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
