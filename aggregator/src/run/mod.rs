//! The networked aggregator: `dpagg-aggregator run`.
//!
//! - [`config`]: the settings of `run` (file, flags and environment) resolved into a
//!   [`config::RunConfig`]; [`Command::run`] resolves them, runs [`protocol::execute`], prints the
//!   table and writes the report.
//! - [`fetch`]: concurrent collection of one learner per node, with timeouts, retries and typed
//!   exclusions.
//! - [`validate`]: the acceptance checks a learner must pass before it is aggregated.
//! - [`protocol`]: the protocol itself — own data, local baseline, fetch, screen, mirror averaging,
//!   comparators — producing a [`report::Report`].
//! - [`report`]: the terminal table, `report.json` and `report.html`.
//!
//! A new aggregator (combiner) belongs in `dpagg_shared::aggregate` and is called from
//! [`protocol`]; a new acceptance check belongs in [`validate`].

pub mod config;
pub mod fetch;
pub mod protocol;
pub mod report;
pub mod validate;

use anyhow::{Context, Result};
use clap::ArgMatches;
use dpagg_shared::cli::Out;
use std::io::Write;

/// The subcommands of the networked aggregator.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Collect the organisations' private learners and mirror-average them on own data.
    Run(Box<config::Settings>),
}

impl Command {
    /// Runs the subcommand; `matches` are its own (they say where each setting came from).
    pub fn run(self, matches: &ArgMatches, out: &mut Out) -> Result<()> {
        match self {
            Self::Run(settings) => run(&settings.resolve(matches)?, out),
        }
    }
}

/// `run`: execute, print the table, write report.json and report.html.
///
/// The report is written even when nobody reads the table (`| head -1`).
fn run(config: &config::RunConfig, out: &mut Out) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(protocol::execute(config))?;
    let printed = write!(out, "{}", report.table());
    report.write(&config.out)?;
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
