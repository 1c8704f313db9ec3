//! Collects one learner from each node over gRPC, concurrently, with per-attempt timeouts and
//! retries with exponential backoff. A node that cannot give a learner yields an [`Exclusion`]
//! saying why; it never fails the whole collection.
//!
//! Nodes are started in the order given, at most `concurrency` at a time. Only failures that may
//! pass (unreachable, timeout, `UNAVAILABLE`) are retried; a refusal (`NOT_FOUND`,
//! `PERMISSION_DENIED`, `RESOURCE_EXHAUSTED`, …) is final.
//!
//! With TLS ([`Client::tls`]) every connection is mutual TLS with the federation's CA, and a node
//! whose certificate names another organisation than the one it describes itself as is excluded
//! ([`Exclusion::IdentityMismatch`]). Whatever a node sends is bounded before it is kept: replies
//! larger than the schema's dimension allows ([`max_reply_bytes`]) are refused by the decoder,
//! and strings that reach reports and terminals are cut to
//! [`MAX_TEXT`] characters with control characters replaced ([`clean`]).

use crate::config::{LearnerRequest, Network};
use crate::validate::Violation;
use crate::wire::{MAX_TEXT, clean};
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::get_learner_request::Selector;
use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_shared::identity::{ClientTls, ConnectError, check_organisation_id, handshake_problem};
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
    /// The same organisation was already included from another endpoint.
    #[error("duplicate: {0} was already included from another endpoint")]
    Duplicate(String),
    /// Its weights agree with another organisation's learner to within the public tolerance
    /// (`screen::NEAR_COPY`): one learner under two names counts once, as the other's.
    #[error("near-copy: {0}")]
    NearCopy(String),
    /// The node's certificate names another organisation than its `Describe`, or the node's
    /// identity is unusable.
    #[error("identity: {0}")]
    IdentityMismatch(String),
    /// The learner's signature is missing or does not verify against the organisation's key.
    #[error("signature: {0}")]
    Signature(String),
    /// The TLS handshake failed for a reason a retry does not change (a certificate from
    /// another CA, an expired certificate, a server that does not speak TLS).
    #[error("TLS: {0}")]
    Tls(String),
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
            Self::NearCopy(_) => "near_copy",
            Self::IdentityMismatch(_) => "identity",
            Self::Signature(_) => "signature",
            Self::Tls(_) => "tls",
        }
    }
}

/// Largest reply accepted from a node when the schema's dimension is not known (1 MiB).
pub const MAX_REPLY_BYTES: usize = 1 << 20;

/// Largest reply accepted from a node for a schema of dimension `dim`: a learner is 8 bytes per
/// weight (9 with its protobuf tag) plus metadata of a few kilobytes, and Describe carries the
/// schema's text, so 256 KiB plus 16 bytes per dimension.
pub fn max_reply_bytes(dim: usize) -> usize {
    (256 << 10) + 16 * dim
}

/// How the aggregator reaches nodes.
#[derive(Debug, Clone)]
pub struct Client {
    /// Mutual TLS (`None`: plain text, `--insecure`).
    pub tls: Option<ClientTls>,
    /// Largest reply decoded (see [`max_reply_bytes`]).
    pub max_reply: usize,
}

impl Default for Client {
    fn default() -> Self {
        Self {
            tls: None,
            max_reply: MAX_REPLY_BYTES,
        }
    }
}

/// What a node returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// The organisation id from `Describe` (checked against the certificate with TLS).
    pub organisation_id: String,
    /// The organisation named by the node's TLS certificate (`None` in plain text).
    pub certificate_identity: Option<String>,
    /// The schema fingerprint from `Describe`.
    pub described_fingerprint: String,
    /// The schema's TOML text from `Describe` (public; read only to name the keys of a
    /// mismatch, within the reply's size cap).
    pub described_schema: String,
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
pub(crate) struct Failure {
    pub(crate) exclusion: Exclusion,
    pub(crate) retry: bool,
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
    clean(
        &s.split_whitespace().collect::<Vec<_>>().join(" "),
        MAX_TEXT,
    )
}

pub(crate) fn from_status(s: &tonic::Status, attempts: u32) -> Failure {
    let message = clean(
        &s.message().split_whitespace().collect::<Vec<_>>().join(" "),
        MAX_TEXT,
    );
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

/// Connects to `url`: mutual TLS (returning the certificate's organisation) or plain text.
pub(crate) async fn connect(
    url: &str,
    client: &Client,
    net: Network,
    attempts: u32,
) -> Result<(Channel, Option<String>), Failure> {
    let unreachable = |detail: String| Failure {
        exclusion: Exclusion::Unreachable { attempts, detail },
        retry: true,
    };
    let configure = |e: Endpoint| e.connect_timeout(net.connect_timeout).timeout(net.timeout);
    match &client.tls {
        Some(tls) => match tls.connect(url, configure).await {
            Ok((channel, identity)) => Ok((channel, Some(identity))),
            Err(ConnectError::Transport(e)) => Err(match handshake_problem(&e) {
                // The certificate or the protocol is wrong: the next attempt meets the same.
                Some(problem) => Failure {
                    exclusion: Exclusion::Tls(problem),
                    retry: false,
                },
                None => unreachable(chain(&e)),
            }),
            Err(ConnectError::Tls(e)) => Err(Failure {
                exclusion: Exclusion::IdentityMismatch(clean(&e.to_string(), MAX_TEXT)),
                retry: false,
            }),
        },
        None => {
            let endpoint = Endpoint::from_shared(url.to_owned()).map_err(|e| Failure {
                exclusion: Exclusion::BadEndpoint(format!("{url}: {}", chain(&e))),
                retry: false,
            })?;
            let channel = configure(endpoint)
                .connect()
                .await
                .map_err(|e| unreachable(chain(&e)))?;
            Ok((channel, None))
        }
    }
}

/// Asks the node who it is and checks the answer against its certificate (`certified`);
/// `described_as` is set as soon as the node has named a valid organisation id.
pub(crate) async fn describe_checked(
    client: &mut OrganisationNodeClient<Channel>,
    certified: Option<&str>,
    attempts: u32,
    described_as: &std::sync::Mutex<Option<String>>,
) -> Result<pb::DescribeResponse, Failure> {
    let described = client
        .describe(pb::DescribeRequest {})
        .await
        .map_err(|s| from_status(&s, attempts))?
        .into_inner();
    let refuse = |why: String| Failure {
        exclusion: Exclusion::IdentityMismatch(why),
        retry: false,
    };
    let id = described.organisation_id.clone();
    if let Err(rule) = check_organisation_id(&id) {
        return Err(refuse(format!(
            "the node describes itself as {:?}, which is not an organisation id ({rule})",
            clean(&id, 80)
        )));
    }
    if let Ok(mut slot) = described_as.lock() {
        *slot = Some(id.clone());
    }
    if let Some(cert) = certified
        && cert != id
    {
        return Err(refuse(format!(
            "the node describes itself as {id:?}, but its certificate is {cert:?}'s"
        )));
    }
    Ok(described)
}

/// One attempt; `described_as` is set as soon as the node has said who it is.
async fn attempt(
    url: &str,
    client: &Client,
    net: Network,
    request: &LearnerRequest,
    attempts: u32,
    described_as: &std::sync::Mutex<Option<String>>,
) -> Result<Fetched, Failure> {
    let (channel, certified) = connect(url, client, net, attempts).await?;
    let mut client =
        OrganisationNodeClient::new(channel).max_decoding_message_size(client.max_reply);
    let described =
        describe_checked(&mut client, certified.as_deref(), attempts, described_as).await?;
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
        certificate_identity: certified,
        described_fingerprint: clean(&described.schema_fingerprint, 128),
        described_schema: described.schema_toml,
        learner,
    })
}

/// Fetches from one node, retrying what may pass.
pub async fn fetch_one(
    url: &str,
    request: &LearnerRequest,
    net: Network,
    client: &Client,
) -> NodeOutcome {
    let start = Instant::now();
    let mut organisation_id = None;
    let result = fetch_with_retries(url, request, net, client, &mut organisation_id).await;
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
    client: &Client,
    described_as: &mut Option<String>,
) -> Result<Fetched, Exclusion> {
    let described = std::sync::Mutex::new(None);
    let result = retrying(url, net, |attempts| {
        attempt(url, client, net, request, attempts, &described)
    })
    .await;
    *described_as = described
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    result
}

/// Runs `once(attempt number)` under the per-attempt timeout, retrying failures that may pass
/// with exponential backoff, up to `net.retries` further attempts.
pub(crate) async fn retrying<T, Fut>(
    url: &str,
    net: Network,
    mut once: impl FnMut(u32) -> Fut,
) -> Result<T, Exclusion>
where
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    let mut backoff = net.backoff;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let failure = match tokio::time::timeout(net.timeout, once(attempts)).await {
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
    client: &Client,
) -> Vec<NodeOutcome> {
    let limit = Arc::new(tokio::sync::Semaphore::new(net.concurrency.max(1)));
    let pending: Arc<std::sync::Mutex<Vec<String>>> =
        Arc::new(std::sync::Mutex::new(endpoints.to_vec()));
    let watcher = tokio::spawn(report_waiting(pending.clone(), net));
    let mut tasks = Vec::with_capacity(endpoints.len());
    for url in endpoints {
        // Acquired here, not in the task, so that nodes start in the configured order.
        let permit = limit.clone().acquire_owned().await;
        let (url, request, client) = (url.clone(), request.clone(), client.clone());
        let pending = pending.clone();
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            let outcome = fetch_one(&url, &request, net, &client).await;
            if let Ok(mut p) = pending.lock()
                && let Some(i) = p.iter().position(|u| *u == url)
            {
                p.remove(i);
            }
            outcome
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
    watcher.abort();
    out
}

/// How often a run that is still waiting for nodes says so.
const WAITING_EVERY: Duration = Duration::from_secs(5);

/// Every [`WAITING_EVERY`], logs which nodes the run is still waiting for (a port that accepts
/// and never answers would otherwise be a silent wait of attempts × timeout).
async fn report_waiting(pending: Arc<std::sync::Mutex<Vec<String>>>, net: Network) {
    let start = Instant::now();
    loop {
        tokio::time::sleep(WAITING_EVERY).await;
        let waiting = pending.lock().map(|p| p.clone()).unwrap_or_default();
        if waiting.is_empty() {
            return;
        }
        let shown: Vec<&str> = waiting.iter().take(5).map(String::as_str).collect();
        tracing::warn!(
            "still waiting for {} node(s) after {} s: {}{} (connect timeout {} ms, {} ms per attempt, {} retries)",
            waiting.len(),
            start.elapsed().as_secs(),
            shown.join(", "),
            if waiting.len() > shown.len() {
                ", …"
            } else {
                ""
            },
            net.connect_timeout.as_millis(),
            net.timeout.as_millis(),
            net.retries
        );
    }
}
