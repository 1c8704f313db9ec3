//! The networked aggregator: `dpagg-aggregator run`, `map`, `predict` and `verify`.
//!
//! This is the package `dpagg-aggregator-run`, always linked into `dpagg-aggregator` (the lab,
//! `dpagg-lab`, uses it; it never uses the lab).
//!
//! Its modules in the order a run goes through them; each uses only the ones before it
//! (ARCHITECTURE.md, "Stages of `run/`", checked by `tests/tests/layers.rs`):
//!
//! - [`config`]: the settings of `run` (file, flags and environment) resolved into a
//!   [`config::RunConfig`], with the synthetic data to ask for ([`config::SyntheticRequest`]).
//! - [`wire`]: the limits on what a node sends and the cleaning of its text, before it reaches a
//!   report, a log or a terminal.
//! - [`validate`]: the acceptance checks a learner must pass before it is aggregated.
//! - [`fetch`]: concurrent collection of one learner per node, with timeouts, retries and typed
//!   exclusions.
//! - [`trust`]: signed learners (checked before aggregation), the signed report and its
//!   offline verification (`dpagg-aggregator verify`).
//! - [`screen`]: the checks of the learners as a set (near-copies counted once).
//! - [`agreed`]: the agreed map — the own rows under it, checked against what each node says it
//!   applied.
//! - [`synthetic`]: `--train-on synthetic` — each node's synthetic rows (Miura et al. 2022,
//!   Gaussian- perturbed) pooled with the own training rows, a logistic regression on the pool.
//! - [`model`]: the final model's view, `model.json` (the final model with its complete map)
//!   and `predict`.
//! - [`report`]: the terminal table, `report.json` and `report.html`.
//! - [`protocol`]: the protocol itself — own data, local baseline, fetch, screen, mirror averaging,
//!   comparators — producing a [`report::Report`].
//! - [`metrics`]: the run's Prometheus text file.
//! - [`map_command`]: `dpagg-aggregator map`, the agreed map made from the own rows.
//!
//! This file comes last: [`Command::run`] resolves the settings, runs [`protocol::execute`],
//! prints the table and writes the report.
//!
//! A new aggregator (combiner) belongs in `dpagg_shared::aggregate` and is called from
//! [`protocol`]; a new acceptance check belongs in [`validate`]; a new limit on node text in
//! [`wire`].

pub mod agreed;
pub mod config;
#[cfg(test)]
mod config_fuzz;
pub mod fetch;
pub mod map_command;
pub mod metrics;
pub mod model;
pub mod protocol;
pub mod report;
pub mod screen;
pub mod synthetic;
pub mod trust;
pub mod validate;
pub mod wire;

use anyhow::{Context, Result};
use clap::ArgMatches;
use dpagg_shared::cli::Out;
use std::io::Write;

/// The subcommands of the networked aggregator.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Collect the organisations' private learners and mirror-average them on own data.
    Run(Box<config::Settings>),
    /// Make the agreed map from the own training rows and write it where the configuration's
    /// `map` says, for the nodes to publish with (dpagg-node publish --map FILE).
    Map {
        /// The run's settings (data, schema, test split, seed and `map`, the file to write).
        #[command(flatten)]
        settings: Box<config::Settings>,
        /// Directions of the subspace (0: centres and scales only, every feature) [default:
        /// min(number of features, 4)].
        #[arg(long)]
        components: Option<usize>,
        /// Send the map's statistics of your rows to the nodes as computed (they are your
        /// rows: say so explicitly).
        #[arg(
            long,
            conflicts_with = "map_epsilon",
            required_unless_present = "map_epsilon"
        )]
        in_the_clear: bool,
        /// Release them instead as (ε, δ)-DP moments of your map rows (Gaussian mechanism).
        #[arg(long = "map-epsilon", requires = "map_delta")]
        map_epsilon: Option<f64>,
        /// δ of that release.
        #[arg(long = "map-delta")]
        map_delta: Option<f64>,
    },
    /// Score the rows of a CSV with a run's model.json: predicted label, probability, margin.
    Predict {
        /// The model.json a run wrote.
        #[arg(long)]
        model: std::path::PathBuf,
        /// The rows to score (CSV with the schema's feature columns; the label column optional).
        #[arg(long)]
        data: std::path::PathBuf,
        /// Where to write `row,predicted,probability,margin` [default: stdout].
        #[arg(long)]
        out: Option<std::path::PathBuf>,
    },
    /// Check a report offline: every included release's signature and the report's own.
    Verify {
        /// The report.json to check.
        report: std::path::PathBuf,
        /// Folder of trusted public signing keys, ORGANISATION.pub (e.g. federation/public-keys).
        #[arg(long, env = "DPAGG_AGG_SIGNING_KEYS")]
        signing_keys: std::path::PathBuf,
        /// The organisation that must have signed the report (the aggregator you expect); without
        /// it, a signature by any organisation whose key is in --signing-keys is accepted.
        #[arg(long)]
        signer: Option<String>,
    },
}

impl Command {
    /// Runs the subcommand; `matches` are its own (they say where each setting came from).
    pub fn run(self, matches: &ArgMatches, out: &mut Out) -> Result<()> {
        match self {
            Self::Run(settings) => run(&settings.resolve(matches)?, out),
            Self::Map {
                settings,
                components,
                in_the_clear: _,
                map_epsilon,
                map_delta,
            } => {
                let release = match (map_epsilon, map_delta) {
                    (Some(epsilon), Some(delta)) => {
                        map_command::Release::Private { epsilon, delta }
                    }
                    _ => map_command::Release::Clear,
                };
                map_command::write(&settings.resolve_map(matches)?, components, release, out)
            }
            Self::Predict {
                model: path,
                data,
                out: target,
            } => model::predict(&path, &data, target.as_deref(), out),
            Self::Verify {
                report,
                signing_keys,
                signer,
            } => {
                let v = trust::verify_report(&report, &signing_keys, signer.as_deref())
                    .map_err(|e| anyhow::anyhow!("REJECTED: {e}"))?;
                for (org, release) in &v.releases {
                    writeln!(out, "release {release} of {org}: signature valid")?;
                }
                writeln!(
                    out,
                    "{}: valid: {} signed release(s), report signed by {}",
                    report.display(),
                    v.releases.len(),
                    v.report_signed_by
                )?;
                Ok(())
            }
        }
    }
}

/// Signs `report` with the signing key of the identity folder `identity`.
pub fn sign(report: &mut report::Report, identity: &std::path::Path) -> Result<()> {
    let id = dpagg_shared::identity::IdentityDir::load(identity)?;
    let key = dpagg_proto::signature::SigningKey::load(&id.signing_key_path())
        .context("the aggregator signs its report with signing.key from its identity folder")?;
    report.signed_by = Some(id.organisation_id.clone());
    report.signature = None;
    let value = serde_json::to_value(&*report).context("cannot encode the report")?;
    report.signature = Some(
        trust::sign_report(&value, &key, &id.organisation_id)
            .map_err(|e| anyhow::anyhow!("cannot sign the report: {e}"))?,
    );
    Ok(())
}

/// `run`: execute, print the table, write report.json and report.html.
///
/// The report is written even when nobody reads the table (`| head -1`).
fn run(config: &config::RunConfig, out: &mut Out) -> Result<()> {
    // Found now, not after every node has been asked.
    dpagg_shared::util::files::check_writable_dir(&config.out).with_context(|| {
        format!(
            "{}: the report cannot be written there (out)",
            config.out.display()
        )
    })?;
    if let Some(path) = &config.metrics_textfile {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty());
        dpagg_shared::util::files::check_writable_dir(dir.unwrap_or(std::path::Path::new(".")))
            .with_context(|| format!("{}: cannot be written (metrics_textfile)", path.display()))?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut report = runtime.block_on(protocol::execute(config))?;
    if let config::Security::Tls { identity, .. } = &config.security {
        sign(&mut report, identity)?;
    }
    let printed = write!(out, "{}", report.table());
    report.write(&config.out)?;
    if let Some(path) = &config.metrics_textfile {
        metrics::write(&report, path)?;
    }
    printed?;
    writeln!(
        out,
        "wrote {}, {} and {}",
        config.out.join("report.json").display(),
        config.out.join("model.json").display(),
        config.out.join("report.html").display()
    )?;
    Ok(())
}
