//! The node's commands on what it has released, nothing new released: `ledger` (budget and
//! every charge; `ledger backup` and `ledger restore`, the ledger copied out and back) and `releases` (every release with its spec, guarantee and charge, as a table
//! or JSON; `--show ID` one release in full). Part of the `dpagg-node` binary; they read the
//! state folder beside a running `serve` (SQLite in WAL mode) and never take its lock.

use anyhow::{Context, Result, bail};
use dpagg_node::config::NodeConfig;
use dpagg_node::lock::ServeLock;
use dpagg_node::store::{Store, StoredData};
use dpagg_proto::v1 as pb;
use dpagg_shared::cli::Out;
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use dpagg_shared::privacy::release::PublishedLearner;
use dpagg_shared::util::num::{Num, fixed};
use dpagg_shared::util::time::rfc3339;
use prost::Message;
use serde_json::{Value, json};
use std::io::Write;

/// Opens the state folder of `config`, refusing one that holds no ledger yet (a folder with a
/// high-water mark but no database is left to [`Store::open`], which says it went missing).
fn open(config: &NodeConfig) -> Result<Store> {
    let dir = &config.state_dir;
    if !dir.join("node.sqlite").exists() && !dir.join(dpagg_node::store::MARK_FILE).exists() {
        bail!(
            "{}: no ledger here yet (nothing has been published)",
            config.state_dir.display()
        );
    }
    let store = Store::open(&config.state_dir)?;
    store.claim(&config.organisation_id)?;
    Ok(store)
}

/// `dpagg-node ledger backup --out FILE`: a consistent copy of the ledger (beside a running
/// node), mode 0600.
pub fn backup(config: NodeConfig, file: &std::path::Path, out: &mut Out) -> Result<()> {
    let store = open(&config)?;
    let s = store.backup(file)?;
    writeln!(
        out,
        "ledger {} backed up to {}: {} charge(s), ε = {} spent",
        s.ledger_id,
        file.display(),
        s.charges,
        fixed(s.epsilon, 6)
    )?;
    Ok(())
}

/// `dpagg-node ledger restore FILE`: installs a backup as the ledger, under the serve lock (no
/// node serves meanwhile); refused when the backup is behind the high-water mark.
pub fn restore(config: NodeConfig, file: &std::path::Path, out: &mut Out) -> Result<()> {
    Store::check_private(&config.state_dir)?;
    if !config.state_dir.is_dir() {
        bail!(
            "{}: no state folder here; create it with `mkdir -m 700 {}` first",
            config.state_dir.display(),
            config.state_dir.display()
        );
    }
    let _lock = ServeLock::acquire(&config.state_dir, &config.organisation_id)?;
    let s = dpagg_node::store::restore(&config.state_dir, file)?;
    let store = Store::open(&config.state_dir)?;
    store.claim(&config.organisation_id)?;
    writeln!(
        out,
        "ledger {} restored from {}: {} charge(s), ε = {} spent",
        s.ledger_id,
        file.display(),
        s.charges,
        fixed(s.epsilon, 6)
    )?;
    Ok(())
}

/// A guarantee and what the ledger counts for it under replace-one (group privacy for an
/// add/remove-one release; the ledger's composition of several releases may be tighter).
fn guarantee_json(g: PrivacyGuarantee) -> Value {
    let r = g.as_replace_one();
    json!({
        "guarantee": { "epsilon": g.epsilon, "delta": g.delta, "relation": g.relation.to_string() },
        "charge_replace_one": { "epsilon": r.epsilon, "delta": r.delta },
    })
}

/// One learner as JSON (its weights left out: `--show` adds them).
fn learner_json(r: &PublishedLearner, full: bool) -> Value {
    let m = r.metadata();
    let mut v = json!({
        "release_id": r.release_id,
        "kind": "learner",
        "created_at": rfc3339(r.created_unix_ms),
        "mechanism": m.mechanism,
        "spec": r.spec,
        "n": m.n,
        "dim": m.dim,
        "seeded": m.seeded,
        "proven": m.proven,
        "proof": m.proof.name(),
        "schema_fingerprint": r.schema_fingerprint,
    });
    merge(&mut v, guarantee_json(m.guarantee));
    if full {
        v["reference"] = json!(m.reference);
        v["parameters"] = json!(m.parameters);
        v["weights"] = json!(r.classifier().coefficients());
    }
    v
}

/// One data release as JSON, from its stored body (the payload left out: `--show` adds it).
fn data_json(d: &StoredData, full: bool) -> Result<Value> {
    let body = pb::DataReleaseBody::decode(d.body.as_slice())
        .with_context(|| format!("stored data release {} is corrupt", d.release_id))?;
    let spec = body.spec.as_ref().map(
        |s| json!({ "kind": s.kind, "epsilon": s.epsilon, "delta": s.delta, "options": s.options }),
    );
    let mut v = json!({
        "release_id": d.release_id,
        "kind": "data",
        "created_at": rfc3339(d.created_unix_ms),
        "mechanism": d.kind,
        "spec": spec,
        "n": body.n,
        "seeded": body.seeded,
        "schema_fingerprint": body.schema_fingerprint,
    });
    merge(&mut v, guarantee_json(d.guarantee));
    if full {
        v["reference"] = json!(body.reference);
        v["parameters"] = json!(body.parameters);
        v["payload"] = json!(format!("{:?}", body.payload));
    }
    Ok(v)
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(a), Value::Object(b)) = (into.as_object_mut(), from) {
        a.extend(b);
    }
}

/// `dpagg-node ledger`: the budget, its spend per neighbour relation and every release.
pub fn ledger(config: NodeConfig, out: &mut Out) -> Result<()> {
    let store = open(&config)?;
    let s = store.spent()?;
    let p = config.policy;
    writeln!(out, "organisation {}", config.organisation_id)?;
    writeln!(
        out,
        "ε: total {} spent {} remaining {} (cap {} per release)",
        Num(p.epsilon_total),
        fixed(s.epsilon, 6),
        fixed((p.epsilon_total - s.epsilon).max(0.0), 6),
        Num(p.cap())
    )?;
    writeln!(
        out,
        "δ: total {:e} spent {:e} remaining {:e}",
        p.delta_total,
        s.delta,
        (p.delta_total - s.delta).max(0.0)
    )?;
    for below in p.below_spent(s.epsilon, s.delta) {
        writeln!(
            out,
            "BUDGET BELOW SPENT: {below}. Until then `serve` and `publish` refuse to start."
        )?;
    }
    writeln!(
        out,
        "(totals under replace-one; add/remove-one spend counts as (2ε, (1 + e^ε)δ))"
    )?;
    for r in [s.replace_one, s.add_remove_one] {
        if r.charges > 0 {
            writeln!(
                out,
                "  {:<15} ε = {} ({}; Σε = {}), δ = {:e}, {} release(s)",
                r.relation.to_string(),
                fixed(r.epsilon, 6),
                r.accounting,
                fixed(r.basic_epsilon, 6),
                r.delta,
                r.charges
            )?;
        }
    }
    ledger_releases(&store, s.charges, out)
}

/// The ledger's list: unfinished charges, then every learner and every data release.
fn ledger_releases(store: &Store, charges: usize, out: &mut Out) -> Result<()> {
    let unfinished = store.unfinished()?;
    if unfinished > 0 {
        writeln!(
            out,
            "{unfinished} charge(s) of trainings that produced no release (failed, stopped, \
             killed, or in progress): they stay spent"
        )?;
    }
    let (data, _) = store.data_page(None, usize::MAX)?;
    writeln!(
        out,
        "{} release(s):",
        charges.saturating_sub(unfinished + data.len())
    )?;
    for r in store.releases()? {
        let g = r.metadata().guarantee;
        writeln!(
            out,
            "  {}  {}  {:<26} ε = {:<6} δ = {:<8} λ = {:<6} {}  proof: {}{}{}",
            r.release_id,
            rfc3339(r.created_unix_ms),
            r.metadata().mechanism,
            Num(g.epsilon).to_string(),
            Num(g.delta).to_string(),
            r.spec.l2.to_string(),
            g.relation,
            r.metadata().proof,
            if r.metadata().seeded { "  SEEDED" } else { "" },
            if r.spec.map.is_some() {
                format!("  under an agreed map ({} columns)", r.metadata().dim)
            } else {
                String::new()
            }
        )?;
    }
    writeln!(out, "{} data release(s):", data.len())?;
    for d in data {
        let g = d.guarantee;
        writeln!(
            out,
            "  {}  {}  {:<26} ε = {:<6} δ = {:<8} {}",
            d.release_id,
            rfc3339(d.created_unix_ms),
            d.kind,
            Num(g.epsilon).to_string(),
            Num(g.delta).to_string(),
            g.relation
        )?;
    }
    Ok(())
}

/// `dpagg-node releases --allow-retry ID`: the operator's decision after a failed training.
pub fn allow_retry(config: NodeConfig, id: &str, out: &mut Out) -> Result<()> {
    let store = open(&config)?;
    if !store.allow_retry(id)? {
        bail!(
            "no failed training {id:?} holds a spec on this node (`dpagg-node releases` lists them)"
        );
    }
    writeln!(
        out,
        "the spec of {id} may be asked for again; a new training will be charged again (the first charge stays)"
    )?;
    Ok(())
}

/// `dpagg-node releases [--json] [--show ID]`.
pub fn releases(config: NodeConfig, json: bool, show: Option<&str>, out: &mut Out) -> Result<()> {
    let store = open(&config)?;
    if let Some(id) = show {
        let found = match store.get(id)? {
            Some(r) => learner_json(&r, true),
            None => match store.get_data(id)? {
                Some(d) => data_json(&d, true)?,
                None => bail!("no release {id:?} on this node (`dpagg-node releases` lists them)"),
            },
        };
        writeln!(out, "{}", serde_json::to_string_pretty(&found)?)?;
        return Ok(());
    }
    let learners = store.releases()?;
    let (data, _) = store.data_page(None, usize::MAX)?;
    if json {
        return releases_json(&config, &store, &learners, &data, out);
    }
    releases_table(&store, &learners, &data, out)
}

/// `releases --json`: the budget, failures and every release.
fn releases_json(
    config: &NodeConfig,
    store: &Store,
    learners: &[PublishedLearner],
    data: &[StoredData],
    out: &mut Out,
) -> Result<()> {
    let spent = store.spent()?;
    let p = config.policy;
    let all = json!({
        "organisation_id": config.organisation_id,
        "budget": {
            "epsilon_total": p.epsilon_total,
            "delta_total": p.delta_total,
            "max_epsilon_per_release": p.cap(),
            "epsilon_spent": spent.epsilon,
            "delta_spent": spent.delta,
        },
        "unfinished_charges": store.unfinished()?,
        "failed_trainings": store.failures()?.iter().map(|(id, reason, at)| json!({
            "reservation_id": id, "reason": reason, "started_at": rfc3339(*at),
        })).collect::<Vec<_>>(),
        "learners": learners.iter().map(|r| learner_json(r, false)).collect::<Vec<_>>(),
        "data_releases": data.iter().map(|d| data_json(d, false)).collect::<Result<Vec<_>>>()?,
    });
    writeln!(out, "{}", serde_json::to_string_pretty(&all)?)?;
    Ok(())
}

/// `releases`: one line per release, then the failed trainings whose specs are held.
fn releases_table(
    store: &Store,
    learners: &[PublishedLearner],
    data: &[StoredData],
    out: &mut Out,
) -> Result<()> {
    writeln!(
        out,
        "{:<32}  {:<20}  {:<7} {:<30} {:<8} {:<8} {:<15} {:<10} spec",
        "release", "created", "kind", "mechanism", "ε", "δ", "relation", "charged ε"
    )?;
    let line = |out: &mut Out,
                id: &str,
                at: i64,
                kind: &str,
                name: &str,
                g: PrivacyGuarantee,
                spec: String| {
        writeln!(
            out,
            "{:<32}  {:<20}  {:<7} {:<30} {:<8} {:<8} {:<15} {:<10} {spec}",
            id,
            rfc3339(at),
            kind,
            name,
            Num(g.epsilon).to_string(),
            Num(g.delta).to_string(),
            g.relation.to_string(),
            Num(g.as_replace_one().epsilon).to_string(),
        )
    };
    for r in learners {
        let m = r.metadata();
        line(
            out,
            &r.release_id,
            r.created_unix_ms,
            "learner",
            &m.mechanism,
            m.guarantee,
            r.spec.describe(),
        )?;
    }
    for d in data {
        let spec = data_json(d, false)?["spec"].to_string();
        line(
            out,
            &d.release_id,
            d.created_unix_ms,
            "data",
            &d.kind,
            d.guarantee,
            spec,
        )?;
    }
    writeln!(
        out,
        "{} learner(s), {} data release(s); charged ε is under replace-one, the ledger's relation (`dpagg-node ledger` composes them)",
        learners.len(),
        data.len()
    )?;
    for (id, reason, at) in store.failures()? {
        writeln!(
            out,
            "failed training {id} ({reason}, {}): its charge stands and its spec is held; `--allow-retry {id}` lets it be asked for again",
            rfc3339(at)
        )?;
    }
    Ok(())
}
