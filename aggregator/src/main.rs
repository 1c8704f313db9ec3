//! `dpagg-aggregator`: combines organisations' private learners by mirror averaging.
//!
//! Subcommands:
//! - `simulate`: the in-process simulation of seed 001 §5 (see [`dpagg_shared::simulation`]).
//! - `experiment paper`: the reproduction of seed 001 §5 — figures (CSV, SVG, PNG), Table 2 and
//!   the paper's numbers beside ours; `experiment variants`: the investigation of the differences
//!   ([`experiment`]).
//! - `run`: collect the organisations' learners over gRPC, validate them, mirror-average them on
//!   the aggregator's own data and report accuracy against the local-only baseline ([`run`]).
//! - `demo`: K real nodes on loopback and one `run` against them ([`demo`]).
//! - `privacy`: the Gibbs β bound, DP-SGD's ε and σ calibration ([`privacy`]).
//! - `bench`: timings of the solver, mirror averaging and the full synthetic sweep against their
//!   baselines and targets.
//! - `bench-fetch`: collecting learners from 100 `dpagg-node` processes, concurrent against
//!   sequential.
//!
//! Errors are printed as one line on stderr with a non-zero exit status.
#![forbid(unsafe_code)]

mod bench;
mod bench_fetch;
mod config;
mod demo;
mod experiment;
mod fetch;
mod privacy;
mod report;
mod run;
mod simulate;
mod validate;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Aggregates differentially private weak learners (Minami et al., seed 001).
#[derive(Debug, Parser)]
#[command(name = "dpagg-aggregator", version, about)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human, env = "DPAGG_LOG_FORMAT")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Collect the organisations' private learners and mirror-average them on own data.
    Run(Box<run::Args>),
    /// Start K nodes on loopback, publish at ε, run the aggregator against them, print the report.
    Demo(demo::Args),
    /// Simulate K organisations exchanging private learners (seed 001 §5).
    Simulate(simulate::Args),
    /// Reproduce seed 001 §5 (`paper`) and investigate the differences (`variants`).
    Experiment(experiment::Args),
    /// Measure solver, mirror-averaging and simulation speed against baselines and targets.
    Bench(bench::Args),
    /// Privacy calculators: Gibbs β bound, DP-SGD ε, σ calibration.
    Privacy(privacy::Args),
    /// Time collecting learners from many `dpagg-node` processes on loopback.
    BenchFetch(bench_fetch::Args),
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DPAGG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    match format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    let result = match cli.command {
        Command::Run(args) => run::run(*args),
        Command::Demo(args) => demo::run(args),
        Command::Simulate(args) => simulate::run(args),
        Command::Experiment(args) => experiment::run_command(args),
        Command::Bench(args) => bench::run(args),
        Command::BenchFetch(args) => bench_fetch::run(args),
        Command::Privacy(args) => privacy::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
