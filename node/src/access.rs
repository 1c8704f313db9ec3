//! Who may call what: the caller's identity (from its TLS client certificate), per-RPC
//! allow-lists, a per-client rate limit on the publishing RPCs, and the audit log.
//!
//! Reads (`Describe`, `ListLearners`, `GetLearner`, `ListData`, `GetData`) need the caller on
//! `access.read`; writes (`PublishLearner`, `PublishData`) need it on `access.write` *and*
//! `policy.allow_remote_publish`, and pass a per-caller rate limit; the write
//! list is empty by default, so turning remote publish on spends nothing until the operator names
//! who may spend the node's budget. `"*"` stands
//! for any caller: with TLS, any holder of a certificate from the federation's CA (the handshake
//! has already refused everyone else); with `--insecure`, anyone who reaches the port. A refused
//! caller gets `PERMISSION_DENIED` naming its own identity, never the list.
//!
//! Every read, every publish and every refusal is logged on the `dpagg::audit` target with the
//! caller's identity, the release ids and the spec asked for — never data (the node's operator
//! reads it; nothing of it is sent to clients). What a client sent (an id, a page token, the
//! reason a request failed) is cut to [`MAX_TEXT`] characters by the shared
//! [`clean`](dpagg_shared::util::text::clean()), and refusals and failed calls are logged at most
//! [`crate::log_limit::LOGGED_PER_MINUTE`] a minute per caller, with the number left out on the
//! caller's next line: a client cannot fill the node's disk through its log.

use crate::log_limit::LogLimit;
use dpagg_shared::identity::organisation_of;
use dpagg_shared::util::text::{MAX_TEXT, clean};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;
use tonic::{Request, Status};

/// "Any caller" in an allow-list.
pub const ANY: &str = "*";

/// The `[access]` part of the node's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessPolicy {
    /// Identities allowed to read.
    pub read: Vec<String>,
    /// Identities allowed to ask for a release.
    pub write: Vec<String>,
    /// Publish requests each client may make per minute (0: none).
    pub publish_per_minute: u32,
    /// Serve gRPC server reflection.
    pub reflection: bool,
}

impl Default for AccessPolicy {
    fn default() -> Self {
        Self {
            read: vec![ANY.into()],
            write: Vec::new(),
            publish_per_minute: 10,
            reflection: false,
        }
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Caller {
    /// An organisation, by its certificate's identity.
    Organisation(String),
    /// A plain-text client (`--insecure`): nobody knows who.
    Anonymous,
}

impl std::fmt::Display for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Organisation(id) => write!(f, "{}", dpagg_shared::identity::identity_uri(id)),
            Self::Anonymous => f.write_str("anonymous (plain text)"),
        }
    }
}

impl Caller {
    /// The caller of `request`: the identity of its client certificate when the connection is
    /// TLS (the handshake verified it against the CA), anonymous otherwise. A certificate from
    /// the CA without a usable identity is refused.
    pub fn of<T>(request: &Request<T>) -> Result<Self, Status> {
        match request.peer_certs() {
            Some(chain) => {
                let leaf = chain
                    .first()
                    .ok_or_else(|| Status::unauthenticated("no client certificate"))?;
                organisation_of(leaf)
                    .map(Self::Organisation)
                    .map_err(|e| Status::permission_denied(format!("client certificate: {e}")))
            }
            None => Ok(Self::Anonymous),
        }
    }

    fn on(&self, list: &[String]) -> bool {
        list.iter()
            .any(|entry| entry == ANY || matches!(self, Self::Organisation(id) if id == entry))
    }
}

/// What an RPC does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rpc {
    /// `Describe`.
    Describe,
    /// `ListLearners`.
    ListLearners,
    /// `GetLearner`.
    GetLearner,
    /// `PublishLearner`.
    PublishLearner,
    /// `PublishData`.
    PublishData,
    /// `GetData`.
    GetData,
    /// `ListData`.
    ListData,
}

impl Rpc {
    /// Every RPC of the contract.
    pub const ALL: [Rpc; 7] = [
        Self::Describe,
        Self::ListLearners,
        Self::GetLearner,
        Self::PublishLearner,
        Self::PublishData,
        Self::GetData,
        Self::ListData,
    ];

    /// The RPC's name in the contract.
    pub fn name(self) -> &'static str {
        match self {
            Self::Describe => "Describe",
            Self::ListLearners => "ListLearners",
            Self::GetLearner => "GetLearner",
            Self::PublishLearner => "PublishLearner",
            Self::PublishData => "PublishData",
            Self::GetData => "GetData",
            Self::ListData => "ListData",
        }
    }

    /// The RPC a request's URI path calls (`/dpagg.v1.OrganisationNode/GetLearner`); `None` for
    /// another service's path (health, reflection) or a method the contract does not have.
    pub fn of_path(path: &str) -> Option<Rpc> {
        let (service, method) = path.strip_prefix('/')?.split_once('/')?;
        if service != dpagg_proto::v1::organisation_node_server::SERVICE_NAME {
            return None;
        }
        Self::ALL.into_iter().find(|rpc| rpc.name() == method)
    }

    /// Whether the RPC spends budget (write list and rate limit; its latency is a training's).
    pub fn writes(self) -> bool {
        matches!(self, Self::PublishLearner | Self::PublishData)
    }
}

/// A token bucket per caller.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The allow-lists and the publish rate limiter of a running node.
#[derive(Debug)]
pub struct Gate {
    policy: AccessPolicy,
    buckets: Mutex<HashMap<Caller, Bucket>>,
    refusals: LogLimit<Caller>,
}

impl Gate {
    /// A gate for `policy`.
    pub fn new(policy: AccessPolicy) -> Self {
        Self {
            policy,
            buckets: Mutex::new(HashMap::new()),
            refusals: LogLimit::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &AccessPolicy {
        &self.policy
    }

    /// Lets `caller` call `rpc` or says why not (`PERMISSION_DENIED`; for publishing over the
    /// rate, `RESOURCE_EXHAUSTED`). Refusals and writes are audited.
    pub fn admit(&self, caller: &Caller, rpc: Rpc) -> Result<(), Status> {
        let list = if rpc.writes() {
            &self.policy.write
        } else {
            &self.policy.read
        };
        if !caller.on(list) {
            if let Some(suppressed) = self.refusals.admit_now(caller) {
                tracing::warn!(target: "dpagg::audit", %caller, rpc = rpc.name(), outcome = "refused", reason = "not on the allow-list", suppressed_since_last = suppressed);
            }
            return Err(Status::permission_denied(format!(
                "{caller} may not call {} on this node",
                rpc.name()
            )));
        }
        if rpc.writes() && !self.take_token(caller, Instant::now()) {
            if let Some(suppressed) = self.refusals.admit_now(caller) {
                tracing::warn!(target: "dpagg::audit", %caller, rpc = rpc.name(), outcome = "refused", reason = "rate limit", suppressed_since_last = suppressed);
            }
            return Err(Status::resource_exhausted(format!(
                "rate limit: {caller} may ask for at most {} publications per minute",
                self.policy.publish_per_minute
            )));
        }
        Ok(())
    }

    /// Takes a token from `caller`'s bucket (capacity and refill: `publish_per_minute`).
    fn take_token(&self, caller: &Caller, now: Instant) -> bool {
        let rate = f64::from(self.policy.publish_per_minute);
        let Ok(mut buckets) = self.buckets.lock() else {
            return false;
        };
        // Bounded memory: identities come from certificates of one CA, but plain text and
        // misbehaving CAs exist; forget idle buckets when the table grows.
        if buckets.len() > 10_000 {
            buckets.retain(|_, b| now.duration_since(b.at).as_secs() < 60);
        }
        let b = buckets.entry(caller.clone()).or_insert(Bucket {
            tokens: rate,
            at: now,
        });
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * rate / 60.0).min(rate);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

impl Gate {
    /// Audits one write RPC (`PublishLearner` or `PublishData`) and its outcome; refusals
    /// within the caller's quota of lines.
    pub fn audit_write(&self, caller: &Caller, rpc: Rpc, outcome: Result<(&str, bool), &Status>) {
        let rpc = rpc.name();
        match outcome {
            Ok((release_id, new)) => {
                tracing::info!(target: "dpagg::audit", %caller, rpc, outcome = if new { "published" } else { "existing" }, release_id)
            }
            Err(s) => {
                if let Some(suppressed) = self.refusals.admit_now(caller) {
                    let reason = clean(s.message(), MAX_TEXT);
                    tracing::warn!(target: "dpagg::audit", %caller, rpc, outcome = "refused", code = ?s.code(), reason, suppressed_since_last = suppressed)
                }
            }
        }
    }

    /// Audits one read RPC: what was asked for (`asked`, e.g. `release_id=r-1` or a spec, cut
    /// to [`MAX_TEXT`] characters) and the release ids answered, or the failure (within the
    /// caller's quota of lines).
    pub fn audit_read(
        &self,
        caller: &Caller,
        rpc: Rpc,
        asked: &str,
        outcome: Result<&[String], &Status>,
    ) {
        let rpc = rpc.name();
        let asked = clean(asked, MAX_TEXT);
        match outcome {
            Ok(ids) => {
                let releases = clean(&ids.join(","), MAX_TEXT);
                tracing::info!(target: "dpagg::audit", %caller, rpc, outcome = "read", asked, releases)
            }
            Err(s) => {
                if let Some(suppressed) = self.refusals.admit_now(caller) {
                    let reason = clean(s.message(), MAX_TEXT);
                    tracing::info!(target: "dpagg::audit", %caller, rpc, outcome = "failed", asked, code = ?s.code(), reason, suppressed_since_last = suppressed)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn org(id: &str) -> Caller {
        Caller::Organisation(id.into())
    }

    #[test]
    fn lists_admit_named_identities_and_refusals_name_the_caller() {
        let gate = Gate::new(AccessPolicy {
            read: vec!["agg".into(), "org-2".into()],
            write: vec!["agg".into()],
            ..AccessPolicy::default()
        });
        assert!(gate.admit(&org("agg"), Rpc::PublishLearner).is_ok());
        assert!(gate.admit(&org("org-2"), Rpc::GetLearner).is_ok());
        let e = gate
            .admit(&org("org-2"), Rpc::PublishLearner)
            .expect_err("not a writer");
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(e.message().contains("dpagg://org/org-2"), "{}", e.message());
        assert!(!e.message().contains("agg may"), "the list is not revealed");
        assert!(gate.admit(&Caller::Anonymous, Rpc::Describe).is_err());
    }

    #[test]
    fn refusals_are_logged_within_a_quota_per_caller() {
        let gate = Gate::new(AccessPolicy {
            read: vec!["agg".into()],
            ..AccessPolicy::default()
        });
        for _ in 0..5 * crate::log_limit::LOGGED_PER_MINUTE {
            let e = gate
                .admit(&org("mallory"), Rpc::GetLearner)
                .expect_err("every call is still refused");
            assert_eq!(e.code(), tonic::Code::PermissionDenied);
        }
        assert_eq!(
            gate.refusals.admit_now(&org("mallory")),
            None,
            "quota spent"
        );
        assert_eq!(
            gate.refusals.admit_now(&org("eve")),
            Some(0),
            "another caller has its own"
        );
    }

    #[test]
    fn paths_name_the_contract_s_rpcs_only() {
        for rpc in Rpc::ALL {
            let path = format!("/dpagg.v1.OrganisationNode/{}", rpc.name());
            assert_eq!(Rpc::of_path(&path), Some(rpc));
        }
        for other in [
            "/grpc.health.v1.Health/Check",
            "/dpagg.v1.OrganisationNode/Nope",
            "/dpagg.v1.OrganisationNode/GetLearner/x",
            "/dpagg.v1.OrganisationNode",
            "dpagg.v1.OrganisationNode/GetLearner",
            "",
        ] {
            assert_eq!(Rpc::of_path(other), None, "{other}");
        }
    }

    #[test]
    fn any_admits_everyone_including_plain_text() {
        let gate = Gate::new(AccessPolicy::default());
        assert!(gate.admit(&Caller::Anonymous, Rpc::ListLearners).is_ok());
        assert!(gate.admit(&org("x"), Rpc::Describe).is_ok());
    }

    #[test]
    fn by_default_nobody_may_publish() {
        let gate = Gate::new(AccessPolicy::default());
        for caller in [Caller::Anonymous, org("member")] {
            let e = gate
                .admit(&caller, Rpc::PublishLearner)
                .expect_err("the default write list is empty");
            assert_eq!(e.code(), tonic::Code::PermissionDenied);
        }
    }

    #[test]
    fn the_rate_limit_is_per_client_and_refills() {
        let gate = Gate::new(AccessPolicy {
            publish_per_minute: 2,
            ..AccessPolicy::default()
        });
        let t0 = Instant::now();
        assert!(gate.take_token(&org("a"), t0));
        assert!(gate.take_token(&org("a"), t0));
        assert!(!gate.take_token(&org("a"), t0), "burst of 2 used");
        assert!(
            gate.take_token(&org("b"), t0),
            "another client has its own bucket"
        );
        assert!(
            gate.take_token(&org("a"), t0 + Duration::from_secs(30)),
            "one token per 30 s"
        );
        assert!(!gate.take_token(&org("a"), t0 + Duration::from_secs(31)));
        let none = Gate::new(AccessPolicy {
            publish_per_minute: 0,
            ..AccessPolicy::default()
        });
        assert!(!none.take_token(&org("a"), t0));
    }
}
