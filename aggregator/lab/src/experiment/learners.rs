//! `experiment learners`: the accuracy of each individual private learner, per mechanism and ε, on
//! Diabetes, Breast Cancer, synthetic data and the clinic scenario, at one organisation's size
//! (60 / 40 / 50 / 2,000 rows) and, except for the clinic, on all training rows (600 / 400 /
//! 5,000, the trusted-curator reference). No aggregation: this is what one organisation's release
//! is worth.
//!
//! Every learner runs with the defaults a user gets (λ = auto, the schema's ball map), except the
//! last row, the paper's setup as dpagg first ran it (CMS 2011 Algorithm 2, λ = 0.01,
//! paper map), and the non-private reference. Outputs: `learners.csv` (mean, sd and standard error
//! over trials), `learners_trials.csv` (every trial, for paired comparisons), `learners.md`
//! (printed too), `learners_org.{svg,png}` and `learners_all.{svg,png}`, and for peers
//! `splits.csv` (each trial's training and test rows, and a seed), `synthetic.csv` and `clinic.csv`.
//! `tests/peers/run.py` trains diffprivlib on exactly these rows and adds its column.

use super::args::LearnersArgs;
use super::figures::{self, csv_text};
use super::harness::{create_out, write, write_figure};
use super::learner_data::{self, LearnerData, Split, purpose};
use super::tables;
use anyhow::{Result, bail};
use dpagg_shared::cli::Out;
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::learn::solver::fit_logistic;
use dpagg_shared::privacy::mechanism::lambda::NON_PRIVATE_LAMBDA;
use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};
use dpagg_shared::privacy::noise::NoiseSource;
use dpagg_shared::util::seed::derive_seed;
use dpagg_shared::util::stats::Summary;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::io::Write as _;
use std::time::Instant;

/// δ of the (ε, δ) learners.
const DELTA: f64 = 1e-5;

/// Which rows a learner trains on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Map {
    /// The schema's default (ball) map.
    Ball,
    /// The paper map of the same bounds.
    Paper,
}

/// One learner of the experiment.
pub(super) struct Learner {
    pub(super) label: &'static str,
    /// `None`: non-private logistic regression with λ = [`NON_PRIVATE_LAMBDA`].
    kind: Option<MechanismKind>,
    pub(super) delta: f64,
    lambda: Lambda,
    map: Map,
}

impl Learner {
    /// The neighbour relation of its guarantee, as its mechanism registers it (`-` for the
    /// non-private reference).
    pub(super) fn neighbours(&self) -> String {
        self.kind
            .map_or("-".to_owned(), |k| k.registration().neighbours.to_string())
    }
}

/// The learners, in table order.
pub(super) const LEARNERS: &[Learner] = &[
    Learner {
        label: "objective perturbation (default), ε-DP",
        kind: Some(MechanismKind::ObjectivePerturbation),
        delta: 0.0,
        lambda: Lambda::Auto,
        map: Map::Ball,
    },
    Learner {
        label: "output perturbation, ε-DP",
        kind: Some(MechanismKind::OutputPerturbation),
        delta: 0.0,
        lambda: Lambda::Auto,
        map: Map::Ball,
    },
    Learner {
        label: "CMS 2011 Algorithm 2, λ = auto, ε-DP",
        kind: Some(MechanismKind::ObjectivePerturbationCms2011),
        delta: 0.0,
        lambda: Lambda::Auto,
        map: Map::Ball,
    },
    Learner {
        label: "objective perturbation, (ε, δ)",
        kind: Some(MechanismKind::ObjectivePerturbation),
        delta: DELTA,
        lambda: Lambda::Auto,
        map: Map::Ball,
    },
    Learner {
        label: "DP-SGD, (ε, δ)",
        kind: Some(MechanismKind::DpSgd),
        delta: DELTA,
        lambda: Lambda::Auto,
        map: Map::Ball,
    },
    Learner {
        label: "Langevin chain (noisy GD, proven), (ε, δ)",
        kind: Some(MechanismKind::Langevin),
        delta: DELTA,
        lambda: Lambda::Auto,
        map: Map::Ball,
    },
    Learner {
        label: "paper setup: Algorithm 2, λ = 0.01, paper map",
        kind: Some(MechanismKind::ObjectivePerturbationCms2011),
        delta: 0.0,
        lambda: Lambda::Fixed(0.01),
        map: Map::Paper,
    },
    Learner {
        label: "non-private logistic regression, λ = 0.01",
        kind: None,
        delta: 0.0,
        lambda: Lambda::Fixed(NON_PRIVATE_LAMBDA),
        map: Map::Ball,
    },
];

/// One learner at one ε in one trial.
#[derive(Debug, Clone)]
pub(super) struct Outcome {
    pub(super) data: &'static str,
    pub(super) size: &'static str,
    pub(super) trial: usize,
    pub(super) learner: usize,
    pub(super) epsilon: f64,
    /// Test accuracy and the λ trained with, or why the mechanism refused.
    pub(super) result: Result<(f64, f64), String>,
}

/// Runs `experiment learners`.
pub(super) fn run(args: LearnersArgs, stdout: &mut Out) -> Result<()> {
    let start = Instant::now();
    if args.trials == 0 {
        bail!("--trials must be at least 1");
    }
    if let Some(e) = args.epsilons.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
        bail!("--epsilons: every epsilon must be a finite number > 0, got {e}");
    }
    create_out(&args.out)?;
    let datasets = LearnerData::all(args.seed);
    let mut splits_lines = Vec::new();
    let mut outcomes = Vec::new();
    let bar = ProgressBar::new((datasets.len() * args.trials) as u64);
    bar.set_style(
        ProgressStyle::with_template("learners {msg:<14} [{bar:30}] {pos}/{len} (trial)")
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    for d in &datasets {
        bar.set_message(d.name);
        let splits: Vec<Split> = (0..args.trials).map(|t| d.split(args.seed, t)).collect();
        for (t, s) in splits.iter().enumerate() {
            splits_lines.extend(learner_data::split_lines(args.seed, d, t, s));
        }
        let per_trial: Vec<Vec<Outcome>> = splits
            .par_iter()
            .enumerate()
            .map(|(t, s)| {
                let o = trial(&args, d, t, s);
                bar.inc(1);
                o
            })
            .collect();
        outcomes.extend(per_trial.into_iter().flatten());
    }
    bar.finish_and_clear();
    let md = write_outputs(&args, &datasets, &outcomes, &splits_lines)?;
    write!(stdout, "{md}")?;
    writeln!(
        stdout,
        "\nwrote learners.csv, learners_trials.csv, learners.md, figures, splits.csv, synthetic.csv and clinic.csv to {} in {:.1} s",
        args.out.display(),
        start.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// Every learner at every ε on both training sizes of one trial.
fn trial(args: &LearnersArgs, d: &LearnerData, t: usize, s: &Split) -> Vec<Outcome> {
    let mut out = Vec::new();
    for (z, (size, rows)) in d.sizes(s).into_iter().enumerate() {
        for (k, learner) in LEARNERS.iter().enumerate() {
            let source = match learner.map {
                Map::Ball => &d.ball,
                Map::Paper => &d.paper,
            };
            let (train, test) = (source.subset(rows), source.subset(&s.test));
            for (e, &epsilon) in args.epsilons.iter().enumerate() {
                let path = [
                    d.index,
                    z as u64,
                    t as u64,
                    k as u64,
                    e as u64,
                    purpose::NOISE,
                ];
                let seed = derive_seed(args.seed, &path);
                out.push(Outcome {
                    data: d.name,
                    size,
                    trial: t,
                    learner: k,
                    epsilon,
                    result: accuracy(learner, epsilon, &train, &test, seed),
                });
            }
        }
    }
    out
}

/// Trains `learner` at `epsilon` with noise from `seed`: (test accuracy, λ used).
fn accuracy(
    learner: &Learner,
    epsilon: f64,
    train: &Dataset,
    test: &Dataset,
    seed: u64,
) -> Result<(f64, f64), String> {
    let Some(kind) = learner.kind else {
        let fit = fit_logistic(train, learner.lambda.non_private()).map_err(|e| e.to_string())?;
        return Ok((fit.classifier().accuracy(test), NON_PRIVATE_LAMBDA));
    };
    let m = kind
        .build(epsilon, learner.delta, learner.lambda)
        .map_err(|e| e.to_string())?;
    let r = m
        .release(train, &mut NoiseSource::seeded(seed))
        .map_err(|e| e.to_string())?;
    let lambda = r
        .metadata
        .parameters
        .get("lambda")
        .copied()
        .unwrap_or(f64::NAN);
    Ok((r.classifier.accuracy(test), lambda))
}

/// Summary of one (dataset, size, learner, ε) over trials.
pub(super) struct Cell {
    pub(super) data: &'static str,
    pub(super) size: &'static str,
    pub(super) n: usize,
    pub(super) learner: usize,
    pub(super) epsilon: f64,
    pub(super) accuracy: Summary,
    pub(super) lambda: f64,
    pub(super) trials: usize,
    pub(super) refused: Option<String>,
}

impl Cell {
    /// Standard error of the mean accuracy.
    pub(super) fn se(&self) -> f64 {
        self.accuracy.sd / (self.trials.max(1) as f64).sqrt()
    }
}

/// The cells of `outcomes`, in dataset, size, learner and ε order.
fn cells(args: &LearnersArgs, datasets: &[LearnerData], outcomes: &[Outcome]) -> Vec<Cell> {
    let mut out = Vec::new();
    for d in datasets {
        let split = d.split(args.seed, 0);
        for (size, rows) in d.sizes(&split) {
            let n = rows.len();
            for k in 0..LEARNERS.len() {
                for &epsilon in &args.epsilons {
                    let of: Vec<&Outcome> = outcomes
                        .iter()
                        .filter(|o| o.data == d.name && o.size == size)
                        .filter(|o| o.learner == k && o.epsilon == epsilon)
                        .collect();
                    let ok: Vec<(f64, f64)> =
                        of.iter().filter_map(|o| o.result.clone().ok()).collect();
                    let acc: Vec<f64> = ok.iter().map(|(a, _)| *a).collect();
                    out.push(Cell {
                        data: d.name,
                        size,
                        n,
                        learner: k,
                        epsilon,
                        accuracy: Summary::of(&acc),
                        lambda: ok.iter().map(|(_, l)| l).sum::<f64>() / ok.len().max(1) as f64,
                        trials: acc.len(),
                        refused: of.iter().find_map(|o| o.result.clone().err()),
                    });
                }
            }
        }
    }
    out
}

/// Header of `learners_trials.csv`.
const TRIALS_HEADER: [&str; 7] = [
    "dataset", "size", "trial", "learner", "epsilon", "accuracy", "lambda",
];

fn trial_line(o: &Outcome) -> Vec<String> {
    let (acc, lambda) = match &o.result {
        Ok((a, l)) => (figures::num(*a), format!("{l:.6}")),
        Err(e) => (format!("refused: {e}"), String::new()),
    };
    vec![
        o.data.to_owned(),
        o.size.to_owned(),
        o.trial.to_string(),
        LEARNERS[o.learner].label.to_owned(),
        figures::eps(o.epsilon),
        acc,
        lambda,
    ]
}

/// Writes every output file of `experiment learners`; returns the Markdown table to print.
fn write_outputs(
    args: &LearnersArgs,
    datasets: &[LearnerData],
    outcomes: &[Outcome],
    splits_lines: &[Vec<String>],
) -> Result<String> {
    let out = &args.out;
    let cells = cells(args, datasets, outcomes);
    let lines: Vec<Vec<String>> = cells.iter().map(tables::learners_line).collect();
    write(
        out,
        "learners.csv",
        &csv_text(&tables::LEARNERS_HEADER, &lines)?,
    )?;
    let trials: Vec<Vec<String>> = outcomes.iter().map(trial_line).collect();
    write(
        out,
        "learners_trials.csv",
        &csv_text(&TRIALS_HEADER, &trials)?,
    )?;
    write(
        out,
        "splits.csv",
        &csv_text(&learner_data::SPLITS_HEADER, splits_lines)?,
    )?;
    for d in datasets.iter().filter(|d| d.is_generated()) {
        write(out, &format!("{}.csv", d.name), &d.rows_csv()?)?;
    }
    let md = tables::learners_markdown(&cells, &args.epsilons, args.trials, args.seed);
    write(out, "learners.md", md.as_bytes())?;
    for size in ["org", "all"] {
        let panels = datasets
            .iter()
            .filter(|d| size == "org" || d.with_all)
            .map(|d| figures::learners_panel(d.name, size, &cells))
            .collect();
        let stem = format!("learners_{size}");
        write_figure(out, &stem, &figures::figure(&stem, panels, 620))?;
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registered mechanisms this experiment leaves out, each with the reason (the test
    /// fails on a registered mechanism that is neither here nor in [`LEARNERS`]).
    const LEFT_OUT: &[(&str, &str)] = &[
        (
            "output-perturbation-cms2011",
            "a reproduction with f64 noise that nodes do not offer (Fig. 6 of `experiment paper` runs it)",
        ),
        (
            "gibbs-posterior",
            "Proposition 13's step count is too expensive at these sizes (Fig. 6 runs it)",
        ),
        (
            "gibbs-posterior-unproven",
            "its sampler is not proven, so nodes refuse it by default (Fig. 6 runs it)",
        ),
        (
            "dp-sgd-bst",
            "its n² single-record steps are too slow for this sweep (Fig. 6 runs it)",
        ),
    ];

    /// Every registered mechanism is compared here or left out with a reason, never both, so a
    /// new mechanism fails this test until the experiment decides about it.
    #[test]
    fn every_registered_mechanism_is_compared_or_left_out_with_a_reason() {
        for kind in MechanismKind::all() {
            let compared = LEARNERS.iter().any(|l| l.kind == Some(kind));
            let left_out = LEFT_OUT.iter().any(|(name, _)| *name == kind.name());
            assert!(
                compared != left_out,
                "{kind}: compared {compared}, left out {left_out}"
            );
        }
        for (name, _) in LEFT_OUT {
            assert!(
                MechanismKind::from_name(name).is_some(),
                "{name} is not registered"
            );
        }
    }
}
