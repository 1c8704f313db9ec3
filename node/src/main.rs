//! `dpagg-node`: one organisation's node.
//!
//! Today it offers `check`: validate the organisation's CSV against the public schema it will
//! publish under, and report row and label counts, per-feature clipping and the schema fingerprint.
//! Nothing leaves the machine and nothing is released, so no privacy budget is involved. Serving
//! private learners over gRPC, with a durable ledger, is the next issue (see ARCHITECTURE.md).
//!
//! Errors are printed as one line on stderr with a non-zero exit status.
#![forbid(unsafe_code)]

use anyhow::Result;
use clap::{Parser, Subcommand};
use dpagg_shared::csvload::load_csv;
use dpagg_shared::schema::Schema;
use std::path::PathBuf;
use std::process::ExitCode;

/// An organisation's dpagg node.
#[derive(Debug, Parser)]
#[command(name = "dpagg-node", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a CSV file against a public schema (locally; nothing is released).
    Check {
        /// The organisation's data (CSV with a header row).
        #[arg(long, env = "DPAGG_DATA")]
        data: PathBuf,
        /// The public schema (TOML).
        #[arg(long, env = "DPAGG_SCHEMA")]
        schema: PathBuf,
    },
}

fn check(data: PathBuf, schema: PathBuf) -> Result<()> {
    let schema = Schema::load(&schema)?;
    let (dataset, report) = load_csv(&data, &schema)?;
    let positive = dataset.labels().iter().filter(|&&l| l > 0.0).count();
    println!(
        "{}: {} rows ({} `{}`, {} `{}`), {} columns after normalisation",
        data.display(),
        report.rows,
        positive,
        schema.label.positive,
        dataset.len() - positive,
        schema.label.negative,
        schema.dim()
    );
    println!(
        "schema `{}` fingerprint {}",
        schema.name,
        schema.fingerprint()
    );
    println!(
        "max row norm {:.6} (the privacy proofs need ≤ 1)",
        dataset.max_row_norm()
    );
    if report.total_clipped() == 0 {
        println!("no value outside the schema bounds");
    }
    for (feature, count) in report.clipped.iter().filter(|(_, c)| *c > 0) {
        println!("clipped {count} value(s) of `{feature}` to its schema bounds");
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("DPAGG_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match Cli::parse().command {
        Command::Check { data, schema } => check(data, schema),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
