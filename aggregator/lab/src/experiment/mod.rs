//! `dpagg-aggregator experiment`: the reproduction of Minami et al. 2015, §5.
//!
//! - `experiment paper --out DIR` runs the paper's setups with [`dpagg_shared::simulation`] (Fig. 3
//!   and Table 2 on synthetic data, Fig. 4 Breast Cancer, Fig. 5 Diabetes), a figure of every
//!   mechanism dpagg ships at equal ε on all three datasets (Fig. 6) and mirror averaging against
//!   the other aggregators (Fig. 7). It writes each figure as CSV, SVG and PNG, the paper's
//!   numbers beside ours (`paper_vs_ours.csv`) and the raw per-(ε, trial, organisation) runs.
//! - `experiment variants --out DIR` runs the investigation of docs/experiments/paper.md: the same protocol
//!   with one setting changed at a time (λ convention, the local baseline's λ, the normalisation
//!   of the real data, the law of the synthetic points) and tabulates the baselines and the
//!   aggregate.
//! - `experiment learners --out DIR` measures each individual private learner at the
//!   defaults a user gets, per ε, dataset and training size, and writes the exact splits so
//!   that `tests/peers/` can run diffprivlib on the same rows.
//!
//! - `experiment utility --out DIR` asks whether joining pays: the tuned local model,
//!   every candidate of the final model, the final model, the trusted curator and centralised
//!   non-private, on the paper's datasets and the clinic scenario, with paired differences.
//! - `experiment synthetic --out DIR` compares a model trained on the nodes' synthetic rows (seed
//!   003, `mvn-synthetic-gaussian`) pooled with the aggregator's own rows with mirror averaging at
//!   equal ε, beside tuned local and centralised, on the paper's datasets and synthetic data.
//! - `experiment lambda --out DIR --mechanism NAME` fits the constant of a mechanism's `auto`
//!   regulariser rule on synthetic data of three shapes ([`lambda_rule`], [`lambda_shapes`]).
//!
//! The defaults are the paper's stated setup; nothing is tuned to match its numbers. CSVs are a
//! function of the seed only (fixed-precision numbers, deterministic simulation).
//!
//! Where things are:
//! - [`args`]: the command line (clap) of both subcommands.
//! - [`setups`]: the three datasets and their ε grids, the settings of a run ([`setups::Setup`]:
//!   λ, the non-private learners' λ, normalisation of the real data, law of the synthetic
//!   points) and `Setup::config`, the one place a setup becomes a `SimulationConfig`.
//! - [`harness`]: the progress bar, running a config under it, atomic writes of files and figures.
//! - [`paper`]: the orchestration of `experiment paper`, one function per output file.
//! - [`mechanisms`]: the mechanism grid of Fig. 6 (refusals recorded per ε).
//! - [`variants`]: the variants of `experiment variants` and their run.
//! - [`learners`]: `experiment learners`, its learners and outputs; [`learner_data`]: its
//!   datasets, per-trial splits and the files peers read.
//! - [`utility`]: `experiment utility`, its runs and outputs; [`scenarios`]: its scenarios
//!   and per-trial splits (shared with `synthetic`).
//! - [`synthetic`]: `experiment synthetic`, on `utility`'s splits.
//! - [`tables`]: `paper_vs_ours.csv`, Table 2 and the Markdown table of the variants.
//! - [`figures`]: runs → per-ε rows, fixed-precision CSV text and figure panels; the paper's
//!   numbers.
//! - [`plot`]: drawing panels into SVG text and PNG bytes.
//!
//! A new experiment is a new subcommand in [`args`] with its own module beside [`paper`] and
//! [`variants`], built from [`setups::Setup::config`] and [`harness::simulate`]; a new setting to
//! vary is a field of `Setup` and a row of `variants::VARIANTS`; a new figure's rows and panel go
//! into [`figures`], a new table into [`tables`].

mod agreed;
mod args;
mod figures;
mod harness;
mod lambda_rule;
mod lambda_shapes;
mod learner_data;
mod learners;
mod mechanisms;
mod node_learner;
mod own_data;
mod paper;
mod plot;
mod scenarios;
mod setups;
mod synthetic;
mod tables;
mod utility;
mod utility_trial;
mod utility_wide;
mod variants;

pub use args::Args;

use anyhow::Result;
use args::Command;
use dpagg_shared::cli::Out;

/// Runs `experiment`.
pub fn run_command(args: Args, stdout: &mut Out) -> Result<()> {
    match args.command {
        Command::Paper(a) => paper::run(a, stdout),
        Command::Variants(a) => variants::run(a, stdout),
        Command::Learners(a) => learners::run(a, stdout),
        Command::Utility(a) => utility::run(a, stdout),
        Command::Synthetic(a) => synthetic::run(a, stdout),
        Command::Lambda(a) => lambda_rule::run(a, stdout),
    }
}
