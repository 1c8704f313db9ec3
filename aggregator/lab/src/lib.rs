//! The research lab: everything `dpagg-aggregator` does besides aggregating real nodes.
//!
//! - [`simulate`]: the in-process simulation of Minami et al. 2015, §5
//!   (`dpagg_shared::simulation`).
//! - [`experiment`]: `experiment paper` (the reproduction of Minami et al. 2015, §5) and
//!   `experiment variants`.
//! - [`demo`]: K real nodes on loopback and one `run` against them.
//! - [`privacy`]: calculators (the Gibbs β bound, DP-SGD's ε and σ calibration, Miura et al.'s
//!   (2022) RDP of synthetic rows from a multivariate normal).
//! - [`bench`](mod@bench) and [`bench_fetch`]: timings against in-run baselines and targets.
//! - [`node_process`]: the `dpagg-node` processes `demo` and `bench_fetch` start (the aggregator
//!   runs the node binary; it does not link the node crate).
//!
//! A new experiment goes under [`experiment`]; a new calculator into [`privacy`].
//!
//! This is the package `dpagg-lab`: `dpagg-aggregator` links it, and these subcommands, only with
//! its default feature `lab` (docs/lab.md); the networked aggregator it reuses is the package
//! `dpagg-aggregator-run`, which never uses the lab. The plotting and progress-bar crates
//! (`plotters`, `png`, `indicatif`) are dependencies of this package alone.

pub mod bench;
pub mod bench_fetch;
pub mod bench_peer;
pub mod demo;
pub mod experiment;
pub mod node_process;
pub mod privacy;
pub mod simulate;

use anyhow::Result;
use dpagg_shared::cli::Out;

/// The subcommands of the lab.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Start K nodes on loopback, publish at ε, run the aggregator against them, print the report.
    Demo(Box<demo::Args>),
    /// Simulate K organisations exchanging private learners (Minami et al. 2015, §5).
    Simulate(Box<simulate::Args>),
    /// Reproduce Minami et al. 2015, §5 (`paper`) and investigate the differences (`variants`).
    Experiment(experiment::Args),
    /// Measure solver, mirror-averaging and simulation speed against baselines and targets.
    Bench(bench::Args),
    /// Privacy calculators: Gibbs β bound, DP-SGD ε, σ calibration, RDP of MVN synthetic data.
    Privacy(privacy::Args),
    /// Time collecting learners from many `dpagg-node` processes on loopback.
    BenchFetch(bench_fetch::Args),
}

impl Command {
    /// Runs the subcommand, printing through `out` (a closed stdout is an error that
    /// [`dpagg_shared::cli`] turns into a quiet exit, never a panic).
    pub fn run(self, out: &mut Out) -> Result<()> {
        match self {
            Self::Demo(args) => demo::run(*args, out),
            Self::Simulate(args) => simulate::run(*args, out),
            Self::Experiment(args) => experiment::run_command(args, out),
            Self::Bench(args) => bench::run(args, out),
            Self::BenchFetch(args) => bench_fetch::run(args, out),
            Self::Privacy(args) => privacy::run(args, out),
        }
    }
}
