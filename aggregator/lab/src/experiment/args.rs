//! The command line of `experiment`: its subcommands (`paper`, `variants`, `learners`, `utility`,
//! `synthetic`) and their flags.
//!
//! Only clap declarations live here. The settings a flag chooses (normalisation, point law) are
//! defined with the setups they change, in [`super::setups`]; [`PaperArgs::setup`] turns the flags
//! of `experiment paper` into a [`Setup`].

use super::agreed::MapChoice;
use super::setups::{Normalisation, Points, Setup};
use std::path::PathBuf;

/// Trials of `experiment paper` unless `--trials` is given (docs/experiments/paper.md states its run time).
const DEFAULT_TRIALS: usize = 100;

/// Arguments of `experiment`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Reproduce Minami et al. 2015, §5: Fig. 3–5, Table 2, every mechanism and every aggregator.
    Paper(PaperArgs),
    /// Run the paper's protocol with one setting changed at a time (see docs/experiments/paper.md).
    Variants(VariantsArgs),
    /// Accuracy of each individual private learner per mechanism and ε, at one organisation's
    /// size and on all training rows; writes the splits for tests/peers/.
    Learners(LearnersArgs),
    /// Is joining worth it? Tuned local, every final-model candidate, the final model, the
    /// trusted curator and centralised non-private, per dataset and ε.
    Utility(UtilityArgs),
    /// Synthetic data (Miura et al. 2022) against mirror averaging at equal ε: every node's
    /// `mvn-synthetic-gaussian` rows pooled with the aggregator's, per dataset and ε.
    Synthetic(SyntheticArgs),
    /// Fit the constant C of a mechanism's `auto` rule λ = C√d/(n ε^{3/2}) on synthetic data of
    /// three shapes (288 cells by default; see docs/experiments/lambda-rule.md).
    Lambda(LambdaArgs),
}

/// Arguments of `experiment paper`.
#[derive(Debug, clap::Args)]
pub(super) struct PaperArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Trials (fresh partitions, visiting orders and noise) per setup.
    #[arg(long, default_value_t = DEFAULT_TRIALS)]
    trials: usize,
    /// Master seed (simulation only: seeded noise gives no privacy).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Regulariser λ in (λ/2)‖θ‖² of every learner (Minami et al. 2015, §5.1: 0.01).
    #[arg(long, default_value_t = 0.01)]
    lambda: f64,
    /// λ of the non-private learners only (local-only, non-private exchange, centralised)
    /// [default: --lambda].
    #[arg(long)]
    local_lambda: Option<f64>,
    /// How the real data is mapped into the unit ball.
    #[arg(long, value_enum, default_value_t = Normalisation::Schema)]
    normalisation: Normalisation,
    /// Law of the synthetic points.
    #[arg(long, value_enum, default_value_t = Points::Sphere)]
    synthetic_points: Points,
    /// Skip the mechanism figure (Fig. 6).
    #[arg(long)]
    pub(super) skip_mechanisms: bool,
}

impl PaperArgs {
    /// The setup these flags choose.
    pub(super) fn setup(&self) -> Setup {
        Setup {
            trials: self.trials,
            seed: self.seed,
            lambda: self.lambda,
            local_lambda: self.local_lambda,
            normalisation: self.normalisation,
            points: self.synthetic_points,
        }
    }
}

/// Arguments of `experiment variants`.
#[derive(Debug, clap::Args)]
pub(super) struct VariantsArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Trials per variant.
    #[arg(long, default_value_t = 50)]
    pub(super) trials: usize,
    /// Master seed.
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
}

/// Arguments of `experiment learners`.
#[derive(Debug, clap::Args)]
pub(super) struct LearnersArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Trials (fresh splits and noise) per dataset.
    #[arg(long, default_value_t = DEFAULT_TRIALS)]
    pub(super) trials: usize,
    /// Master seed (simulation only: seeded noise gives no privacy).
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Comma-separated privacy levels.
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2,5")]
    pub(super) epsilons: Vec<f64>,
}

/// Arguments of `experiment utility`: those of `experiment learners` (output folder, trials,
/// seed, the ε of the organisations' learners) and the selection threshold.
#[derive(Debug, clap::Args)]
pub(super) struct UtilityArgs {
    #[command(flatten)]
    pub(super) sweep: LearnersArgs,
    /// The final model's accuracy threshold z: a candidate must beat local in
    /// cross-validation by z standard errors of its accuracy gain [default: the aggregator's].
    #[arg(long)]
    pub(super) select_z: Option<f64>,
    /// Your own CSV instead of the built-in scenarios: would joining pay for these rows? (needs
    /// --schema; see docs/own-data.md).
    #[arg(long, requires = "schema")]
    pub(super) dataset: Option<PathBuf>,
    /// The public schema (TOML) of --dataset.
    #[arg(long, requires = "dataset")]
    pub(super) schema: Option<PathBuf>,
    /// With --dataset: organisations over which the training rows are dealt equally; the first
    /// aggregates, the others are nodes [default: 10].
    #[arg(long, requires = "dataset")]
    pub(super) orgs: Option<usize>,
    /// With --dataset: rows of each organisation, comma-separated, the aggregator's first (e.g.
    /// 100,2000,2000); rows beyond the sum are left out.
    #[arg(
        long,
        value_delimiter = ',',
        conflicts_with = "orgs",
        requires = "dataset"
    )]
    pub(super) rows_per_org: Vec<usize>,
    /// With --dataset: fraction of each class held out as the test set [default: 0.2].
    #[arg(long, requires = "dataset")]
    pub(super) test_fraction: Option<f64>,
    /// The mechanism every node (and the trusted curator) releases, λ = auto (names: `privacy
    /// mechanisms`).
    #[arg(long, default_value = "objective-perturbation")]
    pub(super) mechanism: String,
    /// δ of the nodes' releases: 0 for the ε-DP default; an (ε, δ) mechanism such as `langevin` or
    /// `dp-sgd` needs δ > 0 (e.g. 1e-5).
    #[arg(long, default_value_t = 0.0)]
    pub(super) delta: f64,
    /// How the learners' rows are mapped: `auto` is the schema's map for the five hand-written
    /// scenarios and the agreed map from the aggregator's own rows (`own`) for the wide ones and
    /// --dataset; `pooled` derives it from the nodes' private moments at --map-share of their ε.
    #[arg(long, value_enum, default_value_t = MapChoice::Auto)]
    pub(super) map: MapChoice,
    /// Components of the agreed map's subspace (0: none, every feature) [default: min(p, 4)].
    #[arg(long)]
    pub(super) components: Option<usize>,
    /// With --map pooled: the share of each node's ε spent on its moments (the learner gets the
    /// rest).
    #[arg(long, default_value_t = 0.2)]
    pub(super) map_share: f64,
    /// Only these scenarios (comma-separated names) [default: every built-in one].
    #[arg(long, value_delimiter = ',', conflicts_with = "dataset")]
    pub(super) scenarios: Vec<String>,
}

/// Arguments of `experiment synthetic`.
#[derive(Debug, clap::Args)]
pub(super) struct SyntheticArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// Trials (fresh splits and noise) per scenario [default: 100, or 3 with --quick].
    #[arg(long)]
    pub(super) trials: Option<usize>,
    /// Master seed (simulation only: seeded noise gives no privacy).
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Comma-separated privacy levels (ε of each node's release, learner or synthetic rows).
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2,5")]
    pub(super) epsilons: Vec<f64>,
    /// Synthetic rows per node of the second synthetic column (the first releases as many rows
    /// as the node has).
    #[arg(long, default_value_t = 1000)]
    pub(super) fixed_rows: usize,
    /// A smoke run: 3 trials (unless --trials is given) at ε = 1 only.
    #[arg(long, conflicts_with = "epsilons")]
    pub(super) quick: bool,
}

/// Arguments of `experiment lambda`.
#[derive(Debug, clap::Args)]
pub(super) struct LambdaArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    pub(super) out: PathBuf,
    /// The mechanism whose rule is fitted (names: `privacy mechanisms`).
    #[arg(long, default_value = "langevin")]
    pub(super) mechanism: String,
    /// δ of its releases: 0 for an ε-DP mechanism.
    #[arg(long, default_value_t = 1e-5)]
    pub(super) delta: f64,
    /// Candidate constants C, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,15,30,60,120,240")]
    pub(super) constants: Vec<f64>,
    /// Trials (fresh training rows and noise) per cell.
    #[arg(long, default_value_t = 50)]
    pub(super) trials: usize,
    /// Master seed (simulation only).
    #[arg(long, default_value_t = 1)]
    pub(super) seed: u64,
    /// Privacy levels of the grid.
    #[arg(long, value_delimiter = ',', default_value = "0.5,1,2,5")]
    pub(super) epsilons: Vec<f64>,
    /// Training rows n of the grid.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "40,100,200,500,1000,2000"
    )]
    pub(super) rows: Vec<usize>,
    /// Dimensions d of the grid (intercept included).
    #[arg(long, value_delimiter = ',', default_value = "5,10,20,31")]
    pub(super) dims: Vec<usize>,
}
