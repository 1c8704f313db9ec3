//! The run's figures as a Prometheus textfile (`metrics_textfile`), for node_exporter's textfile
//! collector or any scraper of files: nodes included and excluded (by exclusion code), the
//! test accuracies of the final, local and mirror-averaged models, the final model's gain over
//! local, each node's time, and when the run ended. The same figures are in `report.json`.

use crate::report::Report;
use anyhow::{Context, Result};
use dpagg_shared::aggregate::select::Candidate;
use dpagg_shared::util::files::atomic_write;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::path::Path;
use std::sync::atomic::AtomicU64;

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Status {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Code {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Model {
    model: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Node {
    endpoint: String,
    status: &'static str,
}

/// The figures of `report` as OpenMetrics text.
pub fn text(report: &Report, finished_unix_ms: i64) -> Result<String> {
    let mut registry = Registry::with_prefix("dpagg_run");
    let nodes = Family::<Status, Gauge>::default();
    let exclusions = Family::<Code, Gauge>::default();
    let accuracy = Family::<Model, FloatGauge>::default();
    let node_seconds = Family::<Node, FloatGauge>::default();
    let gain = FloatGauge::default();
    let finished = FloatGauge::default();
    registry.register("nodes", "nodes by status in the last run", nodes.clone());
    registry.register(
        "exclusions",
        "excluded nodes by exclusion code in the last run",
        exclusions.clone(),
    );
    registry.register(
        "accuracy",
        "test accuracy on the aggregator's own test rows, by model",
        accuracy.clone(),
    );
    registry.register(
        "final_gain_over_local",
        "the final model's test accuracy minus the tuned local model's",
        gain.clone(),
    );
    registry.register(
        "node_seconds",
        "wall time spent on each node",
        node_seconds.clone(),
    );
    registry.register(
        "finished_timestamp_seconds",
        "when the run ended (Unix time)",
        finished.clone(),
    );
    for (status, n) in [("included", report.included), ("excluded", report.excluded)] {
        nodes.get_or_create(&Status { status }).set(n as i64);
    }
    for node in &report.nodes {
        if let Some(e) = &node.exclusion {
            exclusions
                .get_or_create(&Code {
                    code: e.code.clone(),
                })
                .inc();
        }
        node_seconds
            .get_or_create(&Node {
                endpoint: node.endpoint.clone(),
                status: node.status,
            })
            .set(node.elapsed_ms as f64 / 1000.0);
    }
    for (model, v) in [
        ("final", report.final_model.test_accuracy),
        ("local", report.accuracy(Candidate::Local)),
        (
            "mirror_averaging",
            report.accuracy(Candidate::MirrorAveraging),
        ),
    ] {
        accuracy.get_or_create(&Model { model }).set(v);
    }
    gain.set(report.final_model.gain_over_local);
    finished.set(finished_unix_ms as f64 / 1000.0);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry)
        .context("cannot encode the run's metrics")?;
    Ok(text)
}

/// Writes [`text`] to `path` atomically.
pub fn write(report: &Report, path: &Path) -> Result<()> {
    let text = text(report, dpagg_shared::util::time::now_ms())?;
    atomic_write(path, text.as_bytes()).with_context(|| format!("{}: cannot write", path.display()))
}
