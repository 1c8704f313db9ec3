//! Every call of the node's gRPC contract counted by status code and timed, as a tower layer
//! ([`TimingLayer`]) around the whole server, so no handler records its own metrics.
//!
//! The RPC is named by the request's URI path ([`Rpc::of_path`]). A path outside the contract —
//! health checks, reflection, a method this node does not have — is not counted: health probes
//! arrive every few seconds from an orchestrator and would drown the contract's calls, and a
//! label taken from the path would let any client create series without bound. tonic answers
//! an unknown method `UNIMPLEMENTED` whether or not it is counted.
//!
//! The status code is the one the client reads. A handler's error is sent trailers-only: tonic
//! puts `grpc-status` in the response's headers, and the call is recorded when they are ready. A
//! success sends its message first and `grpc-status` in the trailers, so its code (`OK`, or the
//! error of a message that failed to encode) is read from the trailers as they pass. A body
//! dropped before its trailers (the client went away) is recorded as `CANCELLED`, and one that
//! ends without any as `UNKNOWN`.
//!
//! The latency is the handler's: from the request to the response's headers, which for a unary
//! call is when the handler has answered. Calls that spend budget record no latency
//! ([`crate::metrics::Metrics::rpc`]). A call the server's timeout drops is not recorded, as it
//! never answers.

use crate::access::Rpc;
use crate::metrics::Metrics;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};
use tonic::{Code, Status};

/// The tower layer that records every call of the contract in [`Metrics`].
#[derive(Debug, Clone)]
pub struct TimingLayer(Arc<Metrics>);

impl TimingLayer {
    /// Records into `metrics`.
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self(metrics)
    }
}

impl<S> tower_layer::Layer<S> for TimingLayer {
    type Service = Timed<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Timed {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// A service whose calls of the contract are recorded.
#[derive(Debug, Clone)]
pub struct Timed<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

impl<S, B, R> tower_service::Service<http::Request<B>> for Timed<S>
where
    S: tower_service::Service<http::Request<B>, Response = http::Response<R>>,
{
    type Response = http::Response<TimedBody<R>>;
    type Error = S::Error;
    type Future = TimedCall<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let record = Rpc::of_path(request.uri().path()).map(|rpc| Record {
            metrics: self.metrics.clone(),
            rpc,
            start: Instant::now(),
            elapsed: None,
        });
        TimedCall {
            inner: Box::pin(self.inner.call(request)),
            record,
        }
    }
}

/// One call to record, once its status code is known.
#[derive(Debug)]
struct Record {
    metrics: Arc<Metrics>,
    rpc: Rpc,
    start: Instant,
    /// The handler's time, taken when the response's headers are ready.
    elapsed: Option<Duration>,
}

impl Record {
    fn finish(self, code: Code) {
        let elapsed = self.elapsed.unwrap_or_else(|| self.start.elapsed());
        self.metrics.rpc(self.rpc, code, elapsed);
    }
}

/// The code a `grpc-status` header or trailer carries, if there is one.
fn code_in(headers: &http::HeaderMap) -> Option<Code> {
    headers
        .get(Status::GRPC_STATUS)
        .map(|v| Code::from_bytes(v.as_bytes()))
}

/// A call in progress (see [`Timed`]).
pub struct TimedCall<F> {
    inner: Pin<Box<F>>,
    record: Option<Record>,
}

impl<F, R, E> Future for TimedCall<F>
where
    F: Future<Output = Result<http::Response<R>, E>>,
{
    type Output = Result<http::Response<TimedBody<R>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let result = ready!(this.inner.as_mut().poll(cx));
        let mut record = this.record.take();
        if let Some(r) = record.as_mut() {
            r.elapsed = Some(r.start.elapsed());
        }
        Poll::Ready(match result {
            Ok(response) => {
                if let Some(code) = code_in(response.headers()) {
                    // Trailers-only: the status is already sent.
                    if let Some(r) = record.take() {
                        r.finish(code);
                    }
                }
                Ok(response.map(|body| TimedBody {
                    inner: Box::pin(body),
                    record,
                }))
            }
            Err(e) => {
                // tonic's router answers every request; a transport error is no status.
                if let Some(r) = record {
                    r.finish(Code::Unknown);
                }
                Err(e)
            }
        })
    }
}

/// A response body that records its call when its trailers pass.
pub struct TimedBody<B> {
    inner: Pin<Box<B>>,
    record: Option<Record>,
}

impl<B: Body> Body for TimedBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        let code = match &frame {
            Some(Ok(f)) => f.trailers_ref().and_then(code_in),
            Some(Err(_)) | None => Some(Code::Unknown),
        };
        if let Some(code) = code
            && let Some(r) = this.record.take()
        {
            r.finish(code);
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for TimedBody<B> {
    fn drop(&mut self) {
        if let Some(r) = self.record.take() {
            r.finish(Code::Cancelled);
        }
    }
}

#[cfg(test)]
mod tests;
