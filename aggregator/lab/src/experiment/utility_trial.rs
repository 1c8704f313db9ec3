//! One trial of `experiment utility`: its scenarios, the map their learners use, and every
//! column of one (scenario, ε, trial) — tuned local, the final model and its candidates, the
//! trusted curator, centralised — with how many learners did no better than the majority class.

use super::agreed::{MapChoice, MapPlan, Views};
use super::args::UtilityArgs;
use super::node_learner::NodeLearner;
use super::own_data::{Layout, OwnData};
use super::scenarios::{EXTENDED, HAND_WRITTEN, NOISE, SCENARIOS, SELECT, SPLIT, Source};
use anyhow::{Result, bail};
use dpagg_shared::aggregate::select::{
    Candidate, SelectionConfig, choose_final_scored, tuned_logistic,
};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::util::seed::derive_seed;

/// Seed-path purpose of the nodes' moments under `--map pooled`.
const MAP_NOISE: u64 = 23;
/// Seed-path purpose of the map rows' draw.
const MAP_ROWS_PURPOSE: u64 = 24;

/// One (scenario, ε, trial): the accuracy of every column and the candidate chosen.
pub(super) struct Run {
    /// The scenario's position in the run's list.
    pub(super) scenario: usize,
    pub(super) epsilon: f64,
    pub(super) trial: usize,
    pub(super) accuracy: Vec<f64>,
    pub(super) chosen: Candidate,
    /// The share of the test rows in their majority class.
    pub(super) majority: f64,
    /// Learners whose test accuracy is no better than the majority share.
    pub(super) useless: usize,
    /// Learners.
    pub(super) learners: usize,
}

/// A scenario of the run: its seed index (its position in [`SCENARIOS`]; 0 for --dataset),
/// name, rows and map.
pub(super) struct Scenario {
    pub(super) index: u64,
    pub(super) name: String,
    pub(super) source: Source,
    pub(super) map: MapPlan,
}

/// The map plan of a scenario: `auto` resolved (`schema` for the hand-written ones).
fn plan(args: &UtilityArgs, hand_written: bool, name: &str) -> Result<MapPlan> {
    let choice = match (args.map, hand_written) {
        (MapChoice::Auto, true) => MapChoice::Schema,
        (MapChoice::Auto, false) => MapChoice::Own,
        (MapChoice::Own | MapChoice::Pooled, true) => bail!(
            "--map {:?}: scenario {name} is mapped by its hand-written schema when it loads (an \
             agreed map needs the raw rows of the wide scenarios or --dataset)",
            args.map
        ),
        (other, _) => other,
    };
    if !(args.map_share > 0.0 && args.map_share < 1.0) {
        bail!("--map-share: {} is not in (0, 1)", args.map_share);
    }
    Ok(MapPlan {
        choice,
        components: args.components,
        share: args.map_share,
    })
}

/// The scenarios of a run: the built-in ones (or those of --scenarios), or the user's CSV.
pub(super) fn scenarios(args: &UtilityArgs) -> Result<Vec<Scenario>> {
    let (Some(data), Some(schema)) = (&args.dataset, &args.schema) else {
        let wanted = |name: &str| {
            if args.scenarios.is_empty() {
                !EXTENDED.contains(&name)
            } else {
                args.scenarios.iter().any(|s| s == name)
            }
        };
        if let Some(unknown) = args
            .scenarios
            .iter()
            .find(|s| !SCENARIOS.contains(&s.as_str()))
        {
            bail!(
                "--scenarios: no scenario {unknown} (scenarios: {})",
                SCENARIOS.join(", ")
            );
        }
        return SCENARIOS
            .iter()
            .enumerate()
            .filter(|(_, name)| wanted(name))
            .map(|(i, &name)| {
                Ok(Scenario {
                    index: i as u64,
                    name: name.to_owned(),
                    source: Source::of(name, args.sweep.seed)?,
                    map: plan(args, i < HAND_WRITTEN, name)?,
                })
            })
            .collect();
    };
    let layout = Layout {
        test_fraction: args.test_fraction.unwrap_or(0.2),
        orgs: args.orgs.unwrap_or(10),
        rows_per_org: args.rows_per_org.clone(),
    };
    let own = OwnData::load(data, schema, layout)?;
    Ok(vec![Scenario {
        index: 0,
        name: own.name.clone(),
        map: plan(args, false, &own.name)?,
        source: Source::Csv(Box::new(own)),
    }])
}

/// The share of `data`'s rows in its majority class.
fn majority(data: &Dataset) -> f64 {
    let n = data.len().max(1) as f64;
    let positive = data.labels().iter().filter(|&&l| l > 0.0).count() as f64 / n;
    positive.max(1.0 - positive)
}

/// The columns of one (scenario, trial, ε) but centralised, which does not depend on ε
/// (`path`: the scenario's seed index, the trial and the index of ε).
fn one_epsilon(
    views: &Views,
    args: &UtilityArgs,
    learner: NodeLearner,
    [s, t, e]: [u64; 3],
    epsilon: f64,
) -> Result<Run> {
    let seed = args.sweep.seed;
    let noise = |k: u64| derive_seed(seed, &[NOISE, s, t, e, k]);
    let learner_epsilon = epsilon * views.learner_share;
    let released = views
        .nodes
        .iter()
        .enumerate()
        .map(|(k, d)| learner.release(learner_epsilon, d, noise(k as u64)))
        .collect::<Result<Vec<_>>>()?;
    let (curator_train, curator_test) = &views.curator;
    let majority = majority(curator_test);
    let useless = released
        .iter()
        .filter(|l| l.accuracy(curator_test) <= majority)
        .count();
    let experts: Vec<_> = released.into_iter().map(|l| views.expert(l)).collect();
    let defaults = SelectionConfig::default();
    let config = SelectionConfig {
        seed: derive_seed(seed, &[SELECT, s, t, e]),
        z_accuracy: args.select_z.unwrap_or(defaults.z_accuracy),
        own_columns: views.own_columns,
        ..defaults
    };
    let fin = choose_final_scored(&experts, &views.own, &config, views.scored.as_deref())?;
    let curator = learner.release(learner_epsilon, curator_train, noise(u64::MAX))?;
    let acc = |c: Candidate| fin.model(c).accuracy(&views.test);
    let mut accuracy = vec![
        acc(Candidate::Local),
        fin.classifier().accuracy(&views.test),
    ];
    accuracy.extend(super::utility::candidates().map(acc));
    accuracy.push(curator.accuracy(curator_test));
    Ok(Run {
        scenario: 0,
        epsilon,
        trial: 0,
        accuracy,
        chosen: fin.chosen,
        majority,
        useless,
        learners: experts.len(),
    })
}

/// Every ε of one trial of one scenario (`position`: its place in the run's list).
pub(super) fn trial(
    position: usize,
    scenario: &Scenario,
    args: &UtilityArgs,
    learner: NodeLearner,
    trial: usize,
) -> Result<Vec<Run>> {
    let (epsilons, seed) = (&args.sweep.epsilons, args.sweep.seed);
    let (s, t) = (scenario.index, trial as u64);
    let split_path = [SPLIT, s, t];
    let map_seed = derive_seed(seed, &[MAP_ROWS_PURPOSE, s, t]);
    let plan = scenario.map;
    let raw = match plan.choice {
        MapChoice::Schema => None,
        _ => scenario.source.raw_split(seed, &split_path)?,
    };
    let fixed = match (&raw, plan.choice) {
        (None, _) => Some(Views::of_split(scenario.source.split(seed, &split_path)?)),
        (Some(r), MapChoice::Own) => Some(Views::agreed(r, plan, 1.0, map_seed, |_| 0)?),
        _ => None,
    };
    let mut centralised = None;
    let mut runs = Vec::new();
    for (e, &epsilon) in epsilons.iter().enumerate() {
        let owned;
        let views = match (&fixed, &raw) {
            (Some(v), _) => v,
            (None, Some(r)) => {
                owned = Views::agreed(r, plan, epsilon, map_seed, |k| {
                    derive_seed(seed, &[MAP_NOISE, s, t, e as u64, k])
                })?;
                &owned
            }
            (None, None) => bail!("no rows for scenario {}", scenario.name),
        };
        let central = match centralised {
            Some(c) => c,
            None => {
                let (train, test) = &views.central;
                let (model, _) = tuned_logistic(train, 5, derive_seed(seed, &[SELECT, s, t]))?;
                *centralised.insert(model.accuracy(test))
            }
        };
        let mut run = one_epsilon(views, args, learner, [s, t, e as u64], epsilon)?;
        run.accuracy.push(central);
        run.scenario = position;
        run.trial = trial;
        runs.push(run);
    }
    Ok(runs)
}
