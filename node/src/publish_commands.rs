//! `dpagg-node publish` and `publish-data` (part of the binary): a learner or a data release
//! made locally under the node's policy, charged to the same ledger as `serve`, and what it
//! cost.

use crate::fresh_state;
use anyhow::Result;
use dpagg_node::config::NodeConfig;
use dpagg_node::node::Node;
use dpagg_shared::cli::Out;
use dpagg_shared::data::agreed_map::AgreedMap;
use dpagg_shared::privacy::data_release::{DataKind, DataSpec};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use dpagg_shared::privacy::mechanism::LearnerSpec;
use dpagg_shared::util::num::{Num, Short, fixed};
use std::io::Write;
use std::path::Path;

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
    let (release, new) = node.publish(&spec)?;
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
    if g.relation == dpagg_shared::privacy::guarantee::NeighbourRelation::AddRemoveOne {
        // The ledger states everything under replace-one (a replaced row is one removed and
        // one added), so an add/remove-one release counts twice as much ε (group privacy).
        writeln!(
            out,
            "charged under replace-one, the ledger's relation, as ε = {}, δ = {} (group privacy: a replaced row is one removed and one added)",
            Short(2.0 * g.epsilon),
            Short((1.0 + g.epsilon.exp()) * g.delta)
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
    let (stored, new) = node.publish_data(spec)?;
    let what = format!("data release {}", stored.release_id);
    write_outcome(out, &node, &what, &stored.kind, stored.guarantee, new)
}
