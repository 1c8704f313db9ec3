//! The per-trial work of a simulation that does not depend on the mechanism or ε: the test
//! split, the partition over organisations, the local learners, the non-private aggregates and
//! the centralised baseline ([`prepare`]). An experiment that runs several mechanisms on the same
//! data and seed prepares once and passes the [`Prepared`] trials to
//! [`super::run_prepared`]; the results are bit-identical to [`super::run`]'s, which prepares
//! itself.

use super::{DataSource, LocalBaseline, SimulationConfig, SimulationError, TestSplit, purpose};
use crate::aggregate::MirrorAveraging;
use crate::aggregate::select::tuned_logistic;
use crate::data::dataset::Dataset;
use crate::data::partition::{
    equal_partition, proportional_split, sized_partition, stratified_split,
};
use crate::data::synthetic::generate;
use crate::learn::classifier::LinearClassifier;
use crate::learn::solver::{SolverError, fit_logistic};
use crate::util::seed::{derive_seed, derived_rng};
use rayon::prelude::*;

/// Per-trial state shared by all ε and mechanisms.
pub(super) struct Trial {
    pub(super) index: usize,
    pub(super) test: Dataset,
    pub(super) orgs: Vec<Dataset>,
    pub(super) local: Vec<LinearClassifier>,
    pub(super) local_accuracy: Vec<f64>,
    pub(super) nonprivate_aggregate_accuracy: Vec<f64>,
    pub(super) centralised_accuracy: f64,
}

/// Trials prepared for one data source, partition and baseline ([`prepare`]).
pub struct Prepared {
    key: Key,
    trials: Vec<Trial>,
}

/// What the prepared trials depend on: the configuration without its mechanism, ε, δ, private λ
/// and options.
#[derive(Debug, Clone, PartialEq)]
struct Key {
    source: Source,
    orgs: usize,
    local_lambda: Option<f64>,
    nonprivate_lambda: f64,
    local_baseline: LocalBaseline,
    rows_per_org: Option<Vec<usize>>,
    beta: f64,
    trials: usize,
    seed: u64,
}

/// The data source, comparable.
#[derive(Debug, Clone, PartialEq)]
enum Source {
    Synthetic(String),
    Fixed(Dataset, TestSplit),
}

impl Key {
    fn of(config: &SimulationConfig) -> Self {
        Self {
            source: match &config.source {
                DataSource::Synthetic(spec) => Source::Synthetic(format!("{spec:?}")),
                DataSource::Fixed { data, test } => Source::Fixed(data.clone(), *test),
            },
            orgs: config.orgs,
            local_lambda: config.local_lambda,
            nonprivate_lambda: config.lambda.non_private(),
            local_baseline: config.local_baseline,
            rows_per_org: config.rows_per_org.clone(),
            beta: config.beta,
            trials: config.trials,
            seed: config.seed,
        }
    }
}

impl Prepared {
    /// True when the trials were prepared for a configuration equivalent to `config`.
    pub fn matches(&self, config: &SimulationConfig) -> bool {
        self.key == Key::of(config)
    }

    pub(super) fn trials(&self) -> &[Trial] {
        &self.trials
    }
}

/// Splits, partitions and fits the baselines of every trial of `config` (in parallel over
/// trials; every trial draws from seeds derived from (seed, trial, purpose)).
pub fn prepare(config: &SimulationConfig) -> Result<Prepared, SimulationError> {
    // Invalid settings (e.g. λ ≤ 0) are named before any baseline is fitted with them.
    super::validate(config)?;
    let (synthetic, fixed) = match &config.source {
        DataSource::Synthetic(spec) => {
            let d = generate(spec, &mut derived_rng(config.seed, &[purpose::DATA]));
            (Some((d.train, d.test)), None)
        }
        DataSource::Fixed { data, test } => (None, Some((data, *test))),
    };
    let trials = (0..config.trials)
        .into_par_iter()
        .map(|t| {
            let (train, test) = match (&synthetic, &fixed) {
                (Some((train, test)), _) => (train.clone(), test.clone()),
                (None, Some((data, split))) => {
                    let mut rng = derived_rng(config.seed, &[t as u64, purpose::SPLIT]);
                    let (test, train) = match split {
                        TestSplit::Counts { positive, negative } => {
                            stratified_split(data, *positive, *negative, &mut rng)?
                        }
                        TestSplit::Fraction(f) => proportional_split(data, *f, &mut rng)?,
                    };
                    (train, test)
                }
                _ => unreachable!("exactly one data source"),
            };
            prepare_trial(config, t, &train, test)
        })
        .collect::<Result<_, _>>()?;
    Ok(Prepared {
        key: Key::of(config),
        trials,
    })
}

fn prepare_trial(
    config: &SimulationConfig,
    t: usize,
    train: &Dataset,
    test: Dataset,
) -> Result<Trial, SimulationError> {
    let mut rng = derived_rng(config.seed, &[t as u64, purpose::SPLIT, 1]);
    let orgs = match &config.rows_per_org {
        Some(sizes) => sized_partition(train, sizes, &mut rng)?,
        None => equal_partition(train, config.orgs, &mut rng)?,
    };
    let fit = |d: &Dataset, who: u64| -> Result<LinearClassifier, SolverError> {
        match config.local_baseline {
            LocalBaseline::Fixed => {
                let lambda = config
                    .local_lambda
                    .unwrap_or_else(|| config.lambda.non_private());
                Ok(fit_logistic(d, lambda)?.classifier())
            }
            LocalBaseline::Tuned => {
                let seed = derive_seed(config.seed, &[t as u64, who, purpose::TUNE]);
                Ok(tuned_logistic(d, 5, seed)?.0)
            }
        }
    };
    let local: Vec<LinearClassifier> = orgs
        .iter()
        .enumerate()
        .map(|(m, d)| fit(d, m as u64))
        .collect::<Result<_, _>>()?;
    let local_accuracy = local.iter().map(|c| c.accuracy(&test)).collect();
    let ma = MirrorAveraging::new(config.beta)?;
    let nonprivate_aggregate_accuracy = (0..orgs.len())
        .map(|m| {
            let mut rng = derived_rng(
                config.seed,
                &[t as u64, m as u64, purpose::NONPRIVATE_ORDER],
            );
            let agg = ma.aggregate(&others(&local, m), &orgs[m], &mut rng)?;
            Ok(agg.classifier.accuracy(&test))
        })
        .collect::<Result<_, SimulationError>>()?;
    let all = Dataset::concat(&orgs);
    let centralised_accuracy = fit(&all, u64::MAX)?.accuracy(&test);
    Ok(Trial {
        index: t,
        test,
        orgs,
        local,
        local_accuracy,
        nonprivate_aggregate_accuracy,
        centralised_accuracy,
    })
}

/// `items` without the one at `skip`.
pub(super) fn others<T: Clone>(items: &[T], skip: usize) -> Vec<T> {
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != skip)
        .map(|(_, v)| v.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::small;
    use super::super::{run, run_prepared};
    use super::*;
    use crate::privacy::mechanism::MechanismKind;

    #[test]
    fn prepared_trials_give_the_runs_of_a_fresh_simulation() {
        let first = small(11);
        let prepared = prepare(&first).expect("prepare");
        // Another mechanism, ε and δ on the same data: the prepared trials apply.
        let mut other = small(11);
        other.mechanism = MechanismKind::OutputPerturbation;
        other.epsilons = vec![1.0];
        for config in [&first, &other] {
            assert!(prepared.matches(config));
            let (summary, runs) = run_prepared(config, &prepared, &|| ()).expect("prepared");
            let (fresh_summary, fresh_runs) = run(config, &|| ()).expect("fresh");
            assert_eq!(runs, fresh_runs);
            assert_eq!(summary, fresh_summary);
        }
    }

    #[test]
    fn trials_prepared_for_other_data_are_refused() {
        let prepared = prepare(&small(11)).expect("prepare");
        let mut changed = [small(12), small(11), small(11), small(11)];
        changed[1].orgs = 4;
        changed[2].local_lambda = Some(0.5);
        changed[3].source = DataSource::Synthetic(crate::data::synthetic::SyntheticSpec {
            train: 401,
            test_per_label: 100,
            ..Default::default()
        });
        for config in &changed {
            assert!(!prepared.matches(config));
            let e = run_prepared(config, &prepared, &|| ()).expect_err("refused");
            assert!(e.to_string().contains("prepared trials"), "{e}");
        }
    }
}
