//! `dpagg-aggregator`: combines organisations' private learners by mirror averaging.
//!
//! Subcommands of the networked aggregator (the library `dpagg-aggregator-run`, [`run`]):
//! - `run`: collect the organisations' learners over gRPC, validate them, mirror-average them on
//!   the aggregator's own data and report accuracy against the local-only baseline.
//! - `map`: make the agreed map from the aggregator's own rows, for the nodes to publish with.
//! - `predict`: score a CSV's rows with a run's `model.json`.
//! - `verify`: check a report's signatures offline.
//!
//! Subcommands of the lab (the library `dpagg-lab`, linked only with the default feature `lab`;
//! `cargo build -p dpagg-aggregator --no-default-features` is the production aggregator without
//! them):
//! - `simulate`: the in-process simulation of Minami et al. 2015, §5 (see
//!   [`dpagg_shared::simulation`]).
//! - `experiment paper`: the reproduction of Minami et al. 2015, §5 — figures (CSV, SVG, PNG),
//!   Table 2 and the paper's numbers beside ours; `experiment variants`: the investigation of the
//!   differences, and the other experiments of EXPERIMENTS.md's index (`lab::experiment`).
//! - `demo`: K real nodes on loopback and one `run` against them (`lab::demo`).
//! - `privacy`: the Gibbs β bound, DP-SGD's ε and σ calibration, Miura et al.'s (2022) RDP of
//!   synthetic rows from a multivariate normal (`lab::privacy`).
//! - `bench`: timings of the solver, mirror averaging and the full synthetic sweep against their
//!   baselines and targets.
//! - `bench-fetch`: collecting learners from 100 `dpagg-node` processes, concurrent against
//!   sequential.
//!
//! Logging, settings and the exit path are `dpagg_shared::cli`: errors are printed as one line
//! on stderr with a non-zero exit status; `run` prints through `cli::Out`, so a reader that goes
//! away (`| head -1`) ends it cleanly.
#![forbid(unsafe_code)]

use dpagg_aggregator_run as run;
#[cfg(feature = "lab")]
use dpagg_lab as lab;

use clap::Subcommand;
use dpagg_shared::cli;
use std::process::ExitCode;

/// Aggregates differentially private weak learners (Minami et al., Minami et al. 2015): the
/// networked aggregator and the lab.
#[derive(Debug, Subcommand)]
enum Command {
    #[command(flatten)]
    Run(run::Command),
    #[cfg(feature = "lab")]
    #[command(flatten)]
    Lab(lab::Command),
}

fn main() -> ExitCode {
    cli::run_tool(
        dpagg_shared::tool_about!(),
        |_: &Command| "warn",
        |command, matches, out| match command {
            Command::Run(c) => c.run(matches, out),
            #[cfg(feature = "lab")]
            Command::Lab(c) => c.run(out),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// clap checks its definitions only in debug builds; this checks them in any build.
    #[test]
    fn the_command_line_is_well_formed() {
        cli::Tool::<Command>::command().debug_assert();
    }
}
