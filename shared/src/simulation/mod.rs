//! The in-process simulation of Minami et al. 2015, §5: organisations exchange private learners and
//! each aggregates the others' by mirror averaging on its own data.
//!
//! One trial: split the data (a fresh stratified test split for real data; the synthetic data is
//! drawn once per seed), partition the training set at random over K organisations of equal size,
//! and for every organisation fit the non-private local learner (the *local-only* baseline). Then
//! every organisation m, in turn, aggregates the other K − 1 organisations' learners on its own data
//! and is evaluated on the common test set:
//! - *non-private aggregate*: the others' non-private learners (the "non-private exchange" line);
//! - for every ε: every simulated combiner of the registry
//!   ([`crate::aggregate::combiner`], each declaring its column) fitted on the others' private
//!   learners, m's own rows and m's local learner: mirror averaging (*aggregate*), the same plus
//!   m's own local learner (*with own*), their uniform average, and the best single one on m's
//!   data — or mirror averaging alone, for outputs that report nothing else ([`Combiners`]).
//!   The results have no field per combiner ([`results`]).
//!
//! The *centralised* baseline fits one learner on all training data. Trials repeat with fresh
//! partitions, visiting orders and noise. Every task draws from its own seed derived from
//! (seed, trial, ε, organisation, purpose), so results are identical for any thread count.

use crate::aggregate::combiner::{Inputs, Simulated};
use crate::aggregate::loss_table::LossTable;
use crate::aggregate::select::{Candidate, SelectError};
use crate::aggregate::{AggregateError, MirrorAveraging};
use crate::data::dataset::Dataset;
use crate::data::partition::PartitionError;
use crate::data::synthetic::SyntheticSpec;
use crate::learn::classifier::LinearClassifier;
use crate::learn::solver::SolverError;
use crate::privacy::mechanism::{Lambda, Mechanism, MechanismError, MechanismKind, Options};
use crate::privacy::noise::NoiseSource;
use crate::util::seed::{derive_seed, derived_rng};
use crate::util::stats::Summary;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

mod results;
mod trial;

pub use crate::aggregate::combiner::PerCombiner;
pub use results::{
    OrgRun, PAPER, SimulationSummary, SummaryRow, improved_per_trial, runs_csv, simulated_in,
};
pub use trial::{Prepared, prepare};
use trial::{Trial, others};

/// Where the simulation's data comes from.
#[derive(Debug, Clone)]
pub enum DataSource {
    /// Minami et al. 2015, §5.1 synthetic data, drawn once from the simulation seed.
    Synthetic(SyntheticSpec),
    /// A normalised dataset with a test split drawn afresh in every trial.
    Fixed {
        /// All rows (already normalised by a schema).
        data: Dataset,
        /// How to draw the test set.
        test: TestSplit,
    },
}

/// How a test set is drawn from a fixed dataset.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TestSplit {
    /// Exactly this many rows of each label (the paper's setups).
    Counts {
        /// Rows labelled +1.
        positive: usize,
        /// Rows labelled −1.
        negative: usize,
    },
    /// A stratified fraction of each label.
    Fraction(f64),
}

/// Everything a simulation needs.
#[derive(Debug, Clone)]
pub struct SimulationConfig {
    /// Name reported in the summary.
    pub dataset: String,
    /// The data.
    pub source: DataSource,
    /// Number of organisations K (each aggregates the other K − 1).
    pub orgs: usize,
    /// The mechanism.
    pub mechanism: MechanismKind,
    /// Privacy levels to sweep.
    pub epsilons: Vec<f64>,
    /// δ (0 for pure ε-DP).
    pub delta: f64,
    /// Regulariser λ of every learner (local, private, centralised), in (λ/2)‖θ‖²; `auto` gives
    /// the private learners their mechanism's rule and the non-private ones
    /// [`crate::privacy::mechanism::lambda::NON_PRIVATE_LAMBDA`].
    pub lambda: Lambda,
    /// Regulariser of the non-private learners only (local-only baseline, non-private exchange,
    /// centralised) when it should differ from `lambda`; `None` uses `lambda` (see above for
    /// `auto`). Lets experiments ask how much the baselines depend on the regulariser while the
    /// private learners keep theirs.
    pub local_lambda: Option<f64>,
    /// How the non-private learners choose their λ (local-only baseline, non-private exchange,
    /// centralised).
    pub local_baseline: LocalBaseline,
    /// Rows of each organisation (K numbers), for organisations of unequal sizes; `None` deals
    /// the training rows equally (Minami et al. 2015, §5).
    pub rows_per_org: Option<Vec<usize>>,
    /// Mirror-averaging temperature β.
    pub beta: f64,
    /// Number of trials.
    pub trials: usize,
    /// Master seed.
    pub seed: u64,
    /// Mechanism options (see [`MechanismKind::options`]).
    pub options: Options,
    /// Which simulated combiners every organisation fits.
    pub combiners: Combiners,
}

/// Which simulated combiners every organisation fits: all of them (the runs' columns), or only
/// the paper's mirror averaging for an output that reports nothing else — the others' fits and
/// test accuracies would be computed and thrown away. Each combiner draws from its own seed, so
/// the paper's column is bit-identical either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Combiners {
    /// Every simulated combiner of the registry, in registry order.
    #[default]
    All,
    /// Only mirror averaging of the others' private learners ([`PAPER`]).
    PaperOnly,
}

impl Combiners {
    /// The simulated combiners this selects, with their columns, in registry order.
    pub fn simulated(self) -> impl Iterator<Item = (Candidate, Simulated)> {
        Candidate::simulated().filter(move |(c, _)| self == Self::All || *c == PAPER)
    }
}

/// The regulariser of the non-private learners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalBaseline {
    /// `local_lambda`, else `lambda` (the paper's baseline: λ = 0.01 by default).
    #[default]
    Fixed,
    /// λ chosen per learner by 5-fold cross-validation on its own rows
    /// ([`crate::aggregate::select::tuned_logistic`]): what an organisation really has alone.
    Tuned,
}

/// Why a simulation cannot run.
#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    /// A configuration value is unusable.
    #[error("{0}")]
    Config(String),
    /// A mechanism parameter is invalid or a release failed.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// Aggregation failed.
    #[error(transparent)]
    Aggregate(#[from] AggregateError),
    /// The data cannot be split as asked.
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// A non-private fit failed.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// A combiner failed.
    #[error(transparent)]
    Combiner(#[from] SelectError),
}

/// Purposes of derived seeds (the last path element). Each simulated combiner declares its own
/// ([`crate::aggregate::combiner::Simulated::purpose`]: mirror averaging 4, with the own learner
/// 5, …), distinct from these.
pub(crate) mod purpose {
    pub const DATA: u64 = 0;
    pub const SPLIT: u64 = 1;
    pub const NONPRIVATE_ORDER: u64 = 2;
    pub const NOISE: u64 = 3;
    pub const TUNE: u64 = 6;
    /// All of the above.
    #[cfg(test)]
    pub const ALL: [u64; 5] = [DATA, SPLIT, NONPRIVATE_ORDER, NOISE, TUNE];
}

/// Checks `config` and builds its mechanism at every ε (once: the construction may calibrate,
/// e.g. DP-SGD's σ, and depends on public quantities only), so invalid ε/δ/λ fail before any
/// work.
pub fn validate(config: &SimulationConfig) -> Result<Vec<Box<dyn Mechanism>>, SimulationError> {
    let bad = |m: String| Err(SimulationError::Config(m));
    if config.orgs < 2 {
        return bad(format!(
            "--orgs must be at least 2 (each organisation aggregates the others), got {}",
            config.orgs
        ));
    }
    if config.trials == 0 {
        return bad("--trials must be at least 1".into());
    }
    if config.epsilons.is_empty() {
        return bad("give at least one epsilon".into());
    }
    if let Some(sizes) = &config.rows_per_org
        && sizes.len() != config.orgs
    {
        return bad(format!(
            "--rows-per-org gives {} sizes for {} organisations",
            sizes.len(),
            config.orgs
        ));
    }
    if config.local_baseline == LocalBaseline::Tuned && config.local_lambda.is_some() {
        return bad("a tuned local baseline chooses its own lambda: drop local_lambda".into());
    }
    if let Some(l) = config.local_lambda.filter(|l| !(l.is_finite() && *l > 0.0)) {
        return bad(format!(
            "the local learners' lambda must be finite and > 0, got {l}"
        ));
    }
    MirrorAveraging::new(config.beta)?.warn_if_uncovered();
    config
        .epsilons
        .iter()
        .map(|&e| {
            config
                .mechanism
                .build_with(e, config.delta, config.lambda, &config.options)
                .map_err(SimulationError::from)
        })
        .collect()
}

/// Runs the simulation, calling `progress` after each (ε, trial).
pub fn run(
    config: &SimulationConfig,
    progress: &(dyn Fn() + Sync),
) -> Result<(SimulationSummary, Vec<OrgRun>), SimulationError> {
    run_prepared(config, &prepare(config)?, progress)
}

/// [`run`] on trials prepared beforehand by [`prepare`] for a configuration that differs from
/// `config` at most in its mechanism, ε, δ, private λ and options (the splits, partitions, local
/// and centralised baselines do not depend on them): an experiment that runs several mechanisms
/// on the same data prepares once. The results are those of [`run`].
pub fn run_prepared(
    config: &SimulationConfig,
    prepared: &Prepared,
    progress: &(dyn Fn() + Sync),
) -> Result<(SimulationSummary, Vec<OrgRun>), SimulationError> {
    let mechanisms = validate(config)?;
    if !prepared.matches(config) {
        return Err(SimulationError::Config(
            "the prepared trials were made for another data source, partition or baseline".into(),
        ));
    }
    let trials = prepared.trials();
    let mut tasks: Vec<(usize, usize)> = Vec::new();
    for e in 0..config.epsilons.len() {
        for t in 0..config.trials {
            tasks.push((e, t));
        }
    }
    let runs: Vec<(Vec<OrgRun>, f64)> = tasks
        .par_iter()
        .map(|&(e, t)| {
            let r = run_epsilon(config, e, mechanisms[e].as_ref(), &trials[t]);
            progress();
            r
        })
        .collect::<Result<_, _>>()?;
    // λ of the private learners per ε, from the first trial's releases.
    let lambdas: Vec<f64> = runs
        .iter()
        .step_by(config.trials)
        .map(|(_, l)| *l)
        .collect();
    let runs: Vec<OrgRun> = runs.into_iter().flat_map(|(r, _)| r).collect();
    let name = mechanisms[0].name();
    Ok((summarise(config, name, trials, &runs, &lambdas), runs))
}

/// One (ε, trial): every organisation's runs, and the λ its private learners trained with.
fn run_epsilon(
    config: &SimulationConfig,
    e: usize,
    mechanism: &dyn Mechanism,
    trial: &Trial,
) -> Result<(Vec<OrgRun>, f64), SimulationError> {
    let epsilon = config.epsilons[e];
    let t = trial.index as u64;
    let releases: Vec<_> = trial
        .orgs
        .iter()
        .enumerate()
        .map(|(m, d)| {
            let mut noise = NoiseSource::seeded(derive_seed(
                config.seed,
                &[t, e as u64, m as u64, purpose::NOISE],
            ));
            mechanism.release(d, &mut noise)
        })
        .collect::<Result<_, _>>()?;
    let lambda = releases
        .first()
        .and_then(|r| r.metadata.parameters.get("lambda").copied())
        .unwrap_or(f64::NAN);
    let private: Vec<LinearClassifier> = releases.into_iter().map(|r| r.classifier).collect();
    let test = &trial.test;
    (0..trial.orgs.len())
        .map(|m| {
            let experts = others(&private, m);
            // The losses of the others' learners and the own model on the organisation's rows,
            // once for every combiner that needs them (same bits as each computing its own);
            // mirror averaging alone computes only the others'.
            let table = match config.combiners {
                Combiners::All => {
                    let mut scored = experts.clone();
                    scored.push(trial.local[m].clone());
                    Some(LossTable::new(&scored, &trial.orgs[m])?)
                }
                Combiners::PaperOnly => None,
            };
            let inputs = Inputs {
                losses: table.as_ref(),
                ..Inputs::new(&experts, &trial.orgs[m], &trial.local[m], config.beta)
            };
            let combiners = config
                .combiners
                .simulated()
                .map(|(c, s)| {
                    let path = [t, e as u64, m as u64, s.purpose];
                    let fitted =
                        c.combiner()
                            .fit(&inputs, None, &mut derived_rng(config.seed, &path))?;
                    Ok((c, fitted.classifier.accuracy(test)))
                })
                .collect::<Result<_, SelectError>>()?;
            Ok(OrgRun {
                epsilon,
                delta: config.delta,
                trial: trial.index,
                org: m,
                local_accuracy: trial.local_accuracy[m],
                private_learner_accuracy: private[m].accuracy(test),
                combiners: PerCombiner(combiners),
                nonprivate_aggregate_accuracy: trial.nonprivate_aggregate_accuracy[m],
                centralised_accuracy: trial.centralised_accuracy,
            })
        })
        .collect::<Result<_, SimulationError>>()
        .map(|runs| (runs, lambda))
}

fn summarise(
    config: &SimulationConfig,
    mechanism: &str,
    trials: &[Trial],
    runs: &[OrgRun],
    lambdas: &[f64],
) -> SimulationSummary {
    let rows = config
        .epsilons
        .iter()
        .zip(lambdas)
        .map(|(&eps, &lambda)| {
            let rs: Vec<&OrgRun> = runs.iter().filter(|r| r.epsilon == eps).collect();
            results::summary_row(eps, config.delta, &rs, lambda)
        })
        .collect();
    SimulationSummary {
        dataset: config.dataset.clone(),
        orgs: config.orgs,
        trials: config.trials,
        mechanism: mechanism.to_owned(),
        seed: config.seed,
        lambda: config.lambda.non_private(),
        lambda_auto: config.lambda.is_auto(),
        local_lambda: config.local_lambda,
        local_baseline: config.local_baseline,
        sizes: config.rows_per_org.clone(),
        beta: config.beta,
        rows_per_org: trials.first().map_or(0, |t| t.orgs[0].len()),
        centralised_accuracy: Summary::of(
            &trials
                .iter()
                .map(|t| t.centralised_accuracy)
                .collect::<Vec<_>>(),
        )
        .mean,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn small(seed: u64) -> SimulationConfig {
        SimulationConfig {
            dataset: "synthetic".into(),
            source: DataSource::Synthetic(SyntheticSpec {
                train: 400,
                test_per_label: 100,
                ..SyntheticSpec::default()
            }),
            orgs: 8,
            mechanism: MechanismKind::ObjectivePerturbation,
            epsilons: vec![0.5, 2.0],
            delta: 0.0,
            lambda: Lambda::Fixed(0.01),
            local_lambda: None,
            local_baseline: LocalBaseline::Fixed,
            rows_per_org: None,
            beta: 3.0,
            trials: 3,
            seed,
            options: Default::default(),
            combiners: Combiners::All,
        }
    }

    #[test]
    fn deterministic_for_a_seed_whatever_the_thread_count() {
        let c = small(11);
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool")
            .install(|| run(&c, &|| {}))
            .expect("run");
        let two = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool")
            .install(|| run(&c, &|| {}))
            .expect("run");
        assert_eq!(one.1, two.1);
        assert_eq!(one.0, two.0);
        assert_ne!(run(&small(12), &|| {}).expect("run").1, one.1);
    }

    #[test]
    fn produces_one_run_per_epsilon_trial_org() {
        let (summary, runs) = run(&small(1), &|| {}).expect("run");
        assert_eq!(runs.len(), 2 * 3 * 8);
        assert_eq!(summary.rows.len(), 2);
        assert_eq!(summary.rows_per_org, 50);
        assert!(summary.centralised_accuracy > 0.9);
        let csv = String::from_utf8(runs_csv(&runs).expect("csv")).expect("utf8");
        assert_eq!(csv.lines().count(), 1 + runs.len());
        assert!(csv.starts_with("epsilon,delta,trial,org,local_accuracy"));
    }

    #[test]
    fn mirror_averaging_alone_gives_the_full_simulations_column() {
        let (full_summary, full) = run(&small(3), &|| {}).expect("all combiners");
        let paper_only = SimulationConfig {
            combiners: Combiners::PaperOnly,
            ..small(3)
        };
        let (summary, runs) = run(&paper_only, &|| {}).expect("mirror averaging only");
        assert_eq!(runs.len(), full.len());
        for (r, f) in runs.iter().zip(&full) {
            let held: Vec<Candidate> = r.combiners.iter().map(|(c, _)| *c).collect();
            assert_eq!(held, [PAPER]);
            assert_eq!(r.accuracy(PAPER).to_bits(), f.accuracy(PAPER).to_bits());
            assert_eq!(r.private_learner_accuracy, f.private_learner_accuracy);
        }
        for (row, full_row) in summary.rows.iter().zip(&full_summary.rows) {
            assert_eq!(row.accuracy(PAPER), full_row.accuracy(PAPER));
            assert_eq!(row.combiners.iter().count(), 1);
        }
    }

    /// The test-only combiner of `aggregate/combiner/example.rs` (its registry line alone) is a
    /// column of the simulation's outputs.
    #[test]
    fn a_registered_combiner_is_a_column_of_the_simulation() {
        let zero = Candidate::all()
            .find(|c| c.name() == "example-zero")
            .expect("registered");
        let (summary, runs) = run(&small(3), &|| {}).expect("run");
        let csv = String::from_utf8(runs_csv(&runs).expect("csv")).expect("utf8");
        let header = csv.lines().next().unwrap_or_default();
        assert!(
            header.contains(",best_single_accuracy,example_zero_accuracy,nonprivate_aggregate"),
            "{header}"
        );
        // θ = 0 predicts one class; the synthetic test set is balanced.
        assert!(runs.iter().all(|r| r.accuracy(zero) == 0.5));
        let json = serde_json::to_value(&summary).expect("json");
        assert_eq!(json["rows"][0]["example_zero_accuracy"]["mean"], 0.5);
    }

    #[test]
    fn every_simulated_combiner_draws_from_its_own_seed_purpose() {
        let mut seen = purpose::ALL.to_vec();
        for (c, s) in Candidate::simulated() {
            assert!(
                !seen.contains(&s.purpose),
                "{} reuses {}",
                c.name(),
                s.purpose
            );
            seen.push(s.purpose);
        }
    }

    #[test]
    fn bad_configuration_is_an_error() {
        let mut c = small(1);
        c.orgs = 1;
        assert!(matches!(run(&c, &|| {}), Err(SimulationError::Config(_))));
        let mut c = small(1);
        c.epsilons = vec![0.0];
        assert!(matches!(
            run(&c, &|| {}),
            Err(SimulationError::Mechanism(_))
        ));
        let mut c = small(1);
        c.orgs = 1000;
        assert!(matches!(
            run(&c, &|| {}),
            Err(SimulationError::Partition(_))
        ));
    }
}
