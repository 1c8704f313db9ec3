//! Collects one learner from each node over gRPC, concurrently, with per-attempt timeouts and
//! retries with exponential backoff. A node that cannot give a learner yields an [`Exclusion`]
//! saying why; it never fails the whole collection.
//!
//! Nodes are started in the order given, at most `concurrency` at a time. Only failures that may
//! pass (unreachable, timeout, `UNAVAILABLE`) are retried; a refusal (`NOT_FOUND`,
//! `PERMISSION_DENIED`, `RESOURCE_EXHAUSTED`, …) is final.

use crate::run::config::{LearnerRequest, Network};
use crate::run::validate::Violation;
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::get_learner_request::Selector;
use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

/// Why a node contributes nothing to the aggregate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Exclusion {
    /// The endpoint is not a valid URL.
    #[error("invalid endpoint: {0}")]
    BadEndpoint(String),
    /// No connection could be made, or the node is unavailable.
    #[error("unreachable after {attempts} attempt(s): {detail}")]
    Unreachable {
        /// Attempts made.
        attempts: u32,
        /// The last error.
        detail: String,
    },
    /// Every attempt ran out of time.
    #[error("timed out after {attempts} attempt(s) of {timeout_ms} ms")]
    Timeout {
        /// Attempts made.
        attempts: u32,
        /// The per-attempt timeout.
        timeout_ms: u128,
    },
    /// The node has no matching release.
    #[error("no matching release: {0}")]
    NotFound(String),
    /// The node answered with another error status.
    #[error("refused ({code}): {message}")]
    Refused {
        /// The gRPC status code, as its canonical name.
        code: String,
        /// The status message.
        message: String,
    },
    /// The learner failed validation.
    #[error("invalid learner: {0}")]
    Invalid(#[from] Violation),
    /// The same organisation or release was already included from another endpoint.
    #[error("duplicate: {0} was already included from another endpoint")]
    Duplicate(String),
}

impl Exclusion {
    /// A stable short code for reports and scripts.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadEndpoint(_) => "bad_endpoint",
            Self::Unreachable { .. } => "unreachable",
            Self::Timeout { .. } => "timeout",
            Self::NotFound(_) => "not_found",
            Self::Refused { .. } => "refused",
            Self::Invalid(v) => v.code(),
            Self::Duplicate(_) => "duplicate",
        }
    }
}

/// What a node returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The organisation id from `Describe`.
    pub organisation_id: String,
    /// The schema fingerprint from `Describe`.
    pub described_fingerprint: String,
    /// The learner.
    pub learner: pb::PrivateLearner,
}

/// The outcome for one endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeOutcome {
    /// The endpoint as configured.
    pub endpoint: String,
    /// The organisation id the node described itself with, when `Describe` answered (also for
    /// nodes excluded later, so the report can name them).
    pub organisation_id: Option<String>,
    /// The learner, or why there is none.
    pub result: Result<Fetched, Exclusion>,
    /// Wall time spent on this node.
    pub elapsed: Duration,
}

/// One attempt's failure: retried if `retry`.
struct Failure {
    exclusion: Exclusion,
    retry: bool,
}

/// The message of an error and all its sources, on one line (tonic's top-level transport error
/// says only "transport error").
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let m = c.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = c.source();
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn from_status(s: &tonic::Status, attempts: u32) -> Failure {
    let message = s.message().split_whitespace().collect::<Vec<_>>().join(" ");
    match s.code() {
        Code::Unavailable | Code::Cancelled | Code::Unknown => Failure {
            exclusion: Exclusion::Unreachable {
                attempts,
                detail: format!("{}: {message}", s.code().description()),
            },
            retry: true,
        },
        Code::DeadlineExceeded => Failure {
            exclusion: Exclusion::Unreachable {
                attempts,
                detail: format!("deadline exceeded: {message}"),
            },
            retry: true,
        },
        Code::NotFound => Failure {
            exclusion: Exclusion::NotFound(message),
            retry: false,
        },
        code => Failure {
            exclusion: Exclusion::Refused {
                code: format!("{code:?}"),
                message,
            },
            retry: false,
        },
    }
}

fn selector(request: &LearnerRequest) -> Selector {
    match request {
        LearnerRequest::Latest => Selector::Latest(true),
        LearnerRequest::Spec { spec, .. } => Selector::Spec(spec.into()),
    }
}

/// One attempt; `described` is set as soon as the node has said who it is.
async fn attempt(
    endpoint: &Endpoint,
    request: &LearnerRequest,
    attempts: u32,
    described_as: &mut Option<String>,
) -> Result<Fetched, Failure> {
    let channel: Channel = endpoint.connect().await.map_err(|e| Failure {
        exclusion: Exclusion::Unreachable {
            attempts,
            detail: chain(&e),
        },
        retry: true,
    })?;
    let mut client = OrganisationNodeClient::new(channel);
    let described = client
        .describe(pb::DescribeRequest {})
        .await
        .map_err(|s| from_status(&s, attempts))?
        .into_inner();
    *described_as = Some(described.organisation_id.clone());
    let got = client
        .get_learner(pb::GetLearnerRequest {
            selector: Some(selector(request)),
        })
        .await;
    let learner = match (got, request) {
        (Ok(l), _) => l.into_inner(),
        (
            Err(s),
            LearnerRequest::Spec {
                spec,
                publish: true,
            },
        ) if s.code() == Code::NotFound => client
            .publish_learner(pb::PublishLearnerRequest {
                spec: Some(spec.into()),
            })
            .await
            .map_err(|s| from_status(&s, attempts))?
            .into_inner(),
        (Err(s), _) => return Err(from_status(&s, attempts)),
    };
    Ok(Fetched {
        organisation_id: described.organisation_id,
        described_fingerprint: described.schema_fingerprint,
        learner,
    })
}

/// Fetches from one node, retrying what may pass.
pub async fn fetch_one(url: &str, request: &LearnerRequest, net: Network) -> NodeOutcome {
    let start = Instant::now();
    let mut organisation_id = None;
    let result = fetch_with_retries(url, request, net, &mut organisation_id).await;
    NodeOutcome {
        endpoint: url.to_owned(),
        organisation_id,
        result,
        elapsed: start.elapsed(),
    }
}

async fn fetch_with_retries(
    url: &str,
    request: &LearnerRequest,
    net: Network,
    described_as: &mut Option<String>,
) -> Result<Fetched, Exclusion> {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .map_err(|e| Exclusion::BadEndpoint(format!("{url}: {}", chain(&e))))?
        .connect_timeout(net.timeout)
        .timeout(net.timeout);
    let mut backoff = net.backoff;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let failure = match tokio::time::timeout(
            net.timeout,
            attempt(&endpoint, request, attempts, described_as),
        )
        .await
        {
            Ok(Ok(fetched)) => return Ok(fetched),
            Ok(Err(f)) => f,
            Err(_) => Failure {
                exclusion: Exclusion::Timeout {
                    attempts,
                    timeout_ms: net.timeout.as_millis(),
                },
                retry: true,
            },
        };
        if !failure.retry || attempts > net.retries {
            return Err(failure.exclusion);
        }
        tracing::debug!(%url, attempts, reason = %failure.exclusion, "retrying");
        tokio::time::sleep(backoff).await;
        backoff = backoff.saturating_mul(2);
    }
}

/// Fetches from every endpoint, at most `net.concurrency` at a time, started in the order given;
/// the outcomes are in the same order.
pub async fn fetch_all(
    endpoints: &[String],
    request: &LearnerRequest,
    net: Network,
) -> Vec<NodeOutcome> {
    let limit = Arc::new(tokio::sync::Semaphore::new(net.concurrency.max(1)));
    let mut tasks = Vec::with_capacity(endpoints.len());
    for url in endpoints {
        // Acquired here, not in the task, so that nodes start in the configured order.
        let permit = limit.clone().acquire_owned().await;
        let (url, request) = (url.clone(), request.clone());
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            fetch_one(&url, &request, net).await
        }));
    }
    let mut out = Vec::with_capacity(tasks.len());
    for (task, url) in tasks.into_iter().zip(endpoints) {
        out.push(task.await.unwrap_or_else(|e| NodeOutcome {
            endpoint: url.clone(),
            organisation_id: None,
            result: Err(Exclusion::Refused {
                code: "Internal".into(),
                message: format!("the aggregator's fetch task failed: {e}"),
            }),
            elapsed: Duration::ZERO,
        }));
    }
    out
}
