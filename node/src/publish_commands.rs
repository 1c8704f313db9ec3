//! `dpagg-node publish` and `publish-data` (part of the binary): a learner or a data release
//! made locally under the node's policy, charged to the same ledger as `serve`, and what it
//! cost. Every attempt, whatever its outcome, is recorded in the node's database with the OS
//! user who ran it (so the serving node's metrics count it) and logged on the `dpagg::audit`
//! target.

use crate::fresh_state;
use anyhow::Result;
use dpagg_node::config::NodeConfig;
use dpagg_node::metrics::outcome;
use dpagg_node::node::Node;
use dpagg_node::store::{OperatorPublish, PublishError};
use dpagg_shared::cli::Out;
use dpagg_shared::data::agreed_map::AgreedMap;
use dpagg_shared::privacy::data_release::{DataKind, DataSpec};
use dpagg_shared::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use dpagg_shared::privacy::mechanism::LearnerSpec;
use dpagg_shared::util::num::{Num, Short, fixed};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

/// `publish`: releases a learner locally under the node's policy (the same ledger as `serve`),
/// with the agreed map at `map` applied to the rows when one is given.
pub(crate) fn publish(
    config: NodeConfig,
    mut spec: LearnerSpec,
    map: Option<&Path>,
    out: &mut Out,
) -> Result<()> {
    if let Some(path) = map {
        spec.map = Some(Box::new(AgreedMap::load(path)?));
    }
    let node = fresh_state(&config.state_dir, || Ok(Node::load(&config)?))?;
    let started = Instant::now();
    let published = node.publish(&spec);
    audit(
        &node,
        "learner",
        (spec.epsilon, spec.delta),
        published
            .as_ref()
            .map(|(r, new)| (r.release_id.as_str(), *new)),
        started,
    );
    let (release, new) = published?;
    if let (Some(path), Some(m)) = (map, &spec.map) {
        let shape = m.components().map_or_else(
            || format!("{} features", m.features.len()),
            |k| format!("{k} components of {} features", m.features.len()),
        );
        writeln!(
            out,
            "rows mapped by the agreed map {} ({shape}; {})",
            path.display(),
            m.source
        )?;
    }
    let what = format!("release {}", release.release_id);
    let metadata = release.metadata();
    write_outcome(
        out,
        &node,
        &what,
        &metadata.mechanism,
        metadata.guarantee,
        new,
    )
}

/// "published <what> (<name>, ε, δ, relation)" or "already published: …", then the budget.
fn write_outcome(
    out: &mut Out,
    node: &Node,
    what: &str,
    name: &str,
    g: PrivacyGuarantee,
    new: bool,
) -> Result<()> {
    let b = node.budget()?;
    writeln!(
        out,
        "{} {what} ({name}, ε = {}, δ = {}, {})",
        if new {
            "published"
        } else {
            "already published:"
        },
        Num(g.epsilon),
        Num(g.delta),
        g.relation
    )?;
    // The ledger states everything under replace-one (a replaced row is one removed and one
    // added), so an add/remove-one release counts twice as much ε (group privacy).
    if let Some(charged) = g.restated(NeighbourRelation::ReplaceOne) {
        writeln!(
            out,
            "charged under replace-one, the ledger's relation, as ε = {}, δ = {} (group privacy: a replaced row is one removed and one added)",
            Short(charged.epsilon),
            Short(charged.delta)
        )?;
    }
    writeln!(
        out,
        "budget: spent ε = {}, δ = {:e}; remaining ε = {}, δ = {:e}",
        fixed(b.spent.epsilon, 6),
        b.spent.delta,
        fixed(b.epsilon_remaining(), 6),
        b.delta_remaining()
    )?;
    Ok(())
}

/// A data kind by its wire name; an unknown one lists every kind.
pub(crate) fn parse_data_kind(s: &str) -> Result<DataKind, String> {
    DataKind::parse(s).ok_or_else(|| {
        format!(
            "unknown data kind `{s}` (available: {})",
            DataKind::names().join(", ")
        )
    })
}

/// `publish-data`: makes a data release locally (the same ledger as `serve`, which serves it).
pub(crate) fn publish_data(config: NodeConfig, spec: &DataSpec, out: &mut Out) -> Result<()> {
    let node = fresh_state(&config.state_dir, || Ok(Node::load(&config)?))?;
    let started = Instant::now();
    let published = node.publish_data(spec);
    audit(
        &node,
        "data",
        (spec.epsilon, spec.delta),
        published
            .as_ref()
            .map(|(d, new)| (d.release_id.as_str(), *new)),
        started,
    );
    let (stored, new) = published?;
    let what = format!("data release {}", stored.release_id);
    write_outcome(out, &node, &what, &stored.kind, stored.guarantee, new)
}

/// Records an operator's publish in the node's database (for the serving node's metrics) and
/// logs it on the audit target: who, what was asked and charged, the outcome, how long it took.
/// A failure to record is logged, never hidden behind the publish's own outcome.
fn audit(
    node: &Node,
    kind: &'static str,
    (epsilon, delta): (f64, f64),
    result: Result<(&str, bool), &PublishError>,
    started: Instant,
) {
    let record = OperatorPublish {
        operator: os_user(),
        kind,
        outcome: outcome(result.map(|(_, new)| new)),
        release_id: result.ok().map(|(id, _)| id.to_owned()),
        epsilon,
        delta,
        seconds: started.elapsed().as_secs_f64(),
    };
    let charged = matches!(result, Ok((_, true)));
    tracing::info!(
        target: "dpagg::audit",
        operator = %record.operator,
        command = if kind == "learner" { "publish" } else { "publish-data" },
        outcome = record.outcome,
        release_id = record.release_id.as_deref().unwrap_or("-"),
        epsilon,
        delta,
        charged,
        "operator publish"
    );
    if let Err(e) = node.store.record_operator_publish(&record) {
        tracing::error!(error = %e, "could not record the operator's publish for the metrics");
    }
}

/// The OS user running this process: its uid (the owner of `/proc/self`) and, when
/// `/etc/passwd` lists it, its name — `alice (uid 1000)`.
fn os_user() -> String {
    use std::os::unix::fs::MetadataExt;
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else {
        return "unknown user".to_owned();
    };
    let name = std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|passwd| {
            passwd.lines().find_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                (fields.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_owned())
            })
        });
    match name {
        Some(name) => format!("{name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}
