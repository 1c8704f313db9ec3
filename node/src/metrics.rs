//! The node's metrics, in the Prometheus / OpenMetrics text format (`prometheus-client`), served
//! on their own address when `metrics_listen` is set (off by default): an operator watches a
//! node for months without reading its logs.
//!
//! - `dpagg_budget_epsilon{state="total|spent|remaining"}`, `dpagg_budget_delta{…}`: the
//!   ledger's figures under replace-one, read from the store at every scrape (so they match
//!   `dpagg-node ledger` exactly).
//! - `dpagg_releases{kind="learner|data"}`: releases stored (all time, from the store);
//!   `dpagg_unfinished_charges`: charges of trainings that produced nothing.
//! - `dpagg_publish_requests_total{kind, outcome}`: publish requests since start, by outcome
//!   (`published`, `existing`, or the reason of a refusal or failure).
//! - `dpagg_rpc_requests_total{method, code}` and `dpagg_rpc_seconds{method}` (histogram): every
//!   call of the contract by method and the status code its client read, and the latency of
//!   those that train nothing (a publish call lasts as long as its training: see below);
//!   recorded by the tower layer [`crate::timing`] around the server, not by the handlers.
//! - `dpagg_trainings_within_total{le}` and `dpagg_trainings_in_flight`: releases made, counted
//!   in coarse buckets of their time ([`COARSE_SECONDS`], cumulative like a histogram's, with
//!   no sum), and releases being made.
//! - `dpagg_operator_publishes_total{kind, outcome}` and
//!   `dpagg_operator_publishes_within_total{kind, le}` (the same coarse buckets): what the
//!   operator published with `dpagg-node publish` / `publish-data` beside the serving node, all
//!   time, read from the store at every scrape.
//!
//! Nothing here is a statistic of the records: counts of requests and releases, budgets and
//! latencies of calls that read no record. A training's exact time is one: an iterative solver
//! runs until it converges on the data, so its time tracks the data (docs/threat-model.md).
//! Training time is therefore shown only as counts in buckets a decade or more wide, never as a
//! sum, a total or a fine histogram.

use crate::access::Rpc;
use crate::store::{PublishError, Store};
use dpagg_shared::privacy::accounting::admission::{BudgetPolicy, Refusal};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// A gRPC call's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RpcLabels {
    method: &'static str,
    code: String,
}

/// A method's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: &'static str,
}

/// A publish request's labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PublishLabels {
    kind: &'static str,
    outcome: &'static str,
}

/// A stored figure's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: &'static str,
}

/// A release kind's label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// An operator publish's labels (from the store, so owned).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperatorLabels {
    kind: String,
    outcome: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Upper bounds, in seconds, of the coarse buckets training time is counted in (then `+Inf`).
pub const COARSE_SECONDS: [f64; 4] = [1.0, 10.0, 60.0, 600.0];

/// The `le` labels of [`COARSE_SECONDS`] and `+Inf`.
const COARSE_LABELS: [&str; 5] = ["1", "10", "60", "600", "+Inf"];

/// A coarse bucket's label (`le`, cumulative: a count of everything at or under the bound).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeLabel {
    le: &'static str,
}

/// An operator publish kind's coarse bucket (from the store, so owned).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLeLabels {
    kind: String,
    le: &'static str,
}

/// Latency buckets of a gRPC call: 1 ms to about 65 s.
fn rpc_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The node's metrics.
pub struct Metrics {
    registry: Registry,
    rpcs: Family<RpcLabels, Counter>,
    rpc_seconds: Family<MethodLabel, Histogram, fn() -> Histogram>,
    publishes: Family<PublishLabels, Counter>,
    trainings: Family<LeLabel, Counter>,
    in_flight: Gauge,
    epsilon: Family<StateLabel, FloatGauge>,
    delta: Family<StateLabel, FloatGauge>,
    releases: Family<KindLabel, Gauge>,
    unfinished: Gauge,
    operator: Family<OperatorLabels, Counter>,
    operator_within: Family<KindLeLabels, Counter>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric, registered under the `dpagg` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("dpagg");
        let m = Self {
            rpcs: Family::default(),
            rpc_seconds: Family::new_with_constructor(rpc_buckets),
            publishes: Family::default(),
            trainings: Family::default(),
            in_flight: Gauge::default(),
            epsilon: Family::default(),
            delta: Family::default(),
            releases: Family::default(),
            unfinished: Gauge::default(),
            operator: Family::default(),
            operator_within: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "rpc_requests",
            "gRPC calls by method and status code",
            m.rpcs.clone(),
        );
        registry.register(
            "rpc_seconds",
            "gRPC call latency by method",
            m.rpc_seconds.clone(),
        );
        registry.register(
            "publish_requests",
            "publish requests since start by release kind and outcome",
            m.publishes.clone(),
        );
        registry.register(
            "trainings_within",
            "releases made, by how long they took: at most le seconds (coarse on purpose)",
            m.trainings.clone(),
        );
        registry.register(
            "trainings_in_flight",
            "releases being made now",
            m.in_flight.clone(),
        );
        registry.register(
            "budget_epsilon",
            "the privacy budget's epsilon under replace-one (total, spent, remaining)",
            m.epsilon.clone(),
        );
        registry.register(
            "budget_delta",
            "the privacy budget's delta under replace-one (total, spent, remaining)",
            m.delta.clone(),
        );
        registry.register("releases", "releases stored, by kind", m.releases.clone());
        registry.register(
            "unfinished_charges",
            "charges of trainings that produced no release (they stay spent)",
            m.unfinished.clone(),
        );
        registry.register(
            "operator_publishes",
            "publishes by the node's operator (dpagg-node publish, publish-data), all time, by kind and outcome",
            m.operator.clone(),
        );
        registry.register(
            "operator_publishes_within",
            "the operator's publishes, all time, by kind and how long they took: at most le seconds (coarse on purpose)",
            m.operator_within.clone(),
        );
        m.start_at_zero();
        Self { registry, ..m }
    }

    /// Creates the series every node has at 0 (each RPC's `OK` count, each kind's published
    /// count), so that a scrape names every family from the start and `rate()` and
    /// `increase()` see the first event.
    fn start_at_zero(&self) {
        for rpc in Rpc::ALL {
            let _ = self.rpcs.get_or_create(&RpcLabels {
                method: rpc.name(),
                code: format!("{:?}", tonic::Code::Ok),
            });
        }
        for kind in ["learner", "data"] {
            let outcome = "published";
            let _ = self
                .publishes
                .get_or_create(&PublishLabels { kind, outcome });
            let _ = self.operator.get_or_create(&OperatorLabels {
                kind: kind.to_owned(),
                outcome: outcome.to_owned(),
            });
            for le in COARSE_LABELS {
                let _ = self.operator_within.get_or_create(&KindLeLabels {
                    kind: kind.to_owned(),
                    le,
                });
            }
        }
        for le in COARSE_LABELS {
            let _ = self.trainings.get_or_create(&LeLabel { le });
        }
    }

    /// Records one gRPC call; its latency only if it trains nothing (a publish call's latency
    /// is its training's time, counted coarsely by [`Metrics::training`] instead).
    pub fn rpc(&self, rpc: Rpc, code: tonic::Code, elapsed: Duration) {
        self.rpcs
            .get_or_create(&RpcLabels {
                method: rpc.name(),
                code: format!("{code:?}"),
            })
            .inc();
        if rpc.writes() {
            return;
        }
        self.rpc_seconds
            .get_or_create(&MethodLabel { method: rpc.name() })
            .observe(elapsed.as_secs_f64());
    }

    /// Records one publish request of `kind` (`learner` or `data`) and how it ended.
    pub fn publish(&self, kind: &'static str, result: Result<bool, &PublishError>) {
        self.publishes
            .get_or_create(&PublishLabels {
                kind,
                outcome: outcome(result),
            })
            .inc();
    }

    /// Records a training that began; the guard records its end and duration.
    pub fn training(&self) -> Training<'_> {
        self.in_flight.inc();
        Training {
            metrics: self,
            start: std::time::Instant::now(),
        }
    }

    /// The metrics as OpenMetrics text, with the ledger's figures read from `store` now.
    pub fn encode(&self, store: &Store, policy: &BudgetPolicy) -> Result<String, String> {
        let spent = store.spent().map_err(|e| e.to_string())?;
        for (family, total, spent) in [
            (&self.epsilon, policy.epsilon_total, spent.epsilon),
            (&self.delta, policy.delta_total, spent.delta),
        ] {
            for (state, v) in [
                ("total", total),
                ("spent", spent),
                ("remaining", (total - spent).max(0.0)),
            ] {
                family.get_or_create(&StateLabel { state }).set(v);
            }
        }
        let learners = store.releases().map_err(|e| e.to_string())?.len();
        let (data, _) = store
            .data_page(None, usize::MAX)
            .map_err(|e| e.to_string())?;
        for (kind, n) in [("learner", learners), ("data", data.len())] {
            self.releases
                .get_or_create(&KindLabel { kind })
                .set(n as i64);
        }
        self.unfinished
            .set(store.unfinished().map_err(|e| e.to_string())? as i64);
        self.read_operator(store)?;
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .map_err(|e| e.to_string())?;
        Ok(text)
    }
}

impl Metrics {
    /// Brings the operator's counters up to the store's all-time figures (they only grow: rows
    /// are never deleted).
    fn read_operator(&self, store: &Store) -> Result<(), String> {
        for (kind, within) in store
            .operator_durations(&COARSE_SECONDS)
            .map_err(|e| e.to_string())?
        {
            for (le, n) in COARSE_LABELS.into_iter().zip(within) {
                let counter = self.operator_within.get_or_create(&KindLeLabels {
                    kind: kind.clone(),
                    le,
                });
                counter.inc_by(n.saturating_sub(counter.get()));
            }
        }
        for c in store.operator_publishes().map_err(|e| e.to_string())? {
            let counter = self.operator.get_or_create(&OperatorLabels {
                kind: c.kind,
                outcome: c.outcome,
            });
            counter.inc_by(c.count.saturating_sub(counter.get()));
        }
        Ok(())
    }
}

/// A publish's outcome as a label value: `published`, `existing`, or the reason it failed.
pub fn outcome(result: Result<bool, &PublishError>) -> &'static str {
    match result {
        Ok(true) => "published",
        Ok(false) => "existing",
        Err(e) => reason(e),
    }
}

/// A training in progress (see [`Metrics::training`]).
pub struct Training<'a> {
    metrics: &'a Metrics,
    start: std::time::Instant,
}

impl Drop for Training<'_> {
    fn drop(&mut self) {
        self.metrics.in_flight.dec();
        let seconds = self.start.elapsed().as_secs_f64();
        for (i, le) in COARSE_LABELS.into_iter().enumerate() {
            if COARSE_SECONDS.get(i).is_none_or(|bound| seconds <= *bound) {
                self.metrics.trainings.get_or_create(&LeLabel { le }).inc();
            }
        }
    }
}

/// A publish failure's reason, as a label value.
fn reason(e: &PublishError) -> &'static str {
    match e {
        PublishError::Refused(Refusal::Exhausted { .. }) => "refused_budget",
        PublishError::Refused(Refusal::OverCap { .. }) => "refused_cap",
        PublishError::Unproven(_) => "refused_unproven",
        PublishError::Traps(_) => "refused_traps",
        PublishError::TooSlow { .. } => "refused_too_slow",
        PublishError::Mechanism(_) | PublishError::Data(_) | PublishError::Map(_) => {
            "refused_invalid"
        }
        PublishError::InProgress => "in_progress",
        PublishError::FailedBefore { .. } => "failed_before",
        PublishError::FailedCharged(_) | PublishError::DataFailedCharged(_) => "failed_charged",
        PublishError::Store(_) => "store_error",
    }
}

#[cfg(test)]
impl Metrics {
    /// Calls of `rpc` recorded with `code` so far.
    pub(crate) fn calls(&self, rpc: Rpc, code: tonic::Code) -> u64 {
        self.rpcs
            .get(&RpcLabels {
                method: rpc.name(),
                code: format!("{code:?}"),
            })
            .map_or(0, |c| c.get())
    }

    /// Calls of `rpc` whose latency was recorded so far.
    pub(crate) fn timed(&self, rpc: Rpc) -> u64 {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry).expect("encodes");
        let series = format!("dpagg_rpc_seconds_count{{method=\"{}\"}} ", rpc.name());
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0, |n| n.parse().expect("a count"))
    }
}
