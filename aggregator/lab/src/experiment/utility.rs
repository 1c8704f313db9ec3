//! `experiment utility`: is an organisation better off joining than alone?
//!
//! Five scenarios ([`super::scenarios`]), each trial with fresh splits, data and noise: the
//! paper's Diabetes and Breast Cancer splits, its synthetic data, the clinic, and Diabetes
//! dealt over 30 organisations (an aggregator with 20 own rows).
//!
//! Every node releases objective perturbation (the default: ε-DP, λ = auto) at ε, or the
//! mechanism of `--mechanism` (with `--delta`; e.g. `langevin`). The aggregator
//! builds the final model on its own rows ([`dpagg_shared::aggregate::select`]). Columns: the
//! tuned local model, the final model, its other candidates, the *trusted curator* (objective
//! perturbation at the same ε on all training rows — what a trusted third party holding every
//! record could release) and *centralised* non-private (λ tuned by cross-validation on all
//! training rows). Paired differences final − local and final − centralised come with 95 %
//! intervals over trials (mean ± 1.96 sd/√trials).
//!
//! Outputs: `utility_runs.csv` (every trial), `utility.csv` (mean, sd, standard error per cell),
//! `utility_paired.csv`, `utility.md` (printed too) and `utility.{svg,png}`.

use super::args::UtilityArgs;
use super::figures::{self, csv_text, eps, num};
use super::harness::{create_out, progress_bar, write, write_figure};
use super::node_learner::NodeLearner;
use super::plot::{Line, Mark, PALETTE, Panel, Series, Shape};
pub(super) use super::scenarios::{HAND_WRITTEN, NOISE, SCENARIOS, SELECT, SPLIT, Source};
use super::utility_trial::{Run, Scenario, scenarios, trial};
use anyhow::{Result, anyhow};
use dpagg_shared::aggregate::select::Candidate;
use dpagg_shared::cli::Out;
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::learn::classifier::LinearClassifier;
use dpagg_shared::util::stats::Summary;
use rayon::prelude::*;
use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

/// The columns of a run, in table order: tuned local, the final model, every other candidate
/// of the selection (from the combiner registry, by label), the trusted curator and
/// centralised.
fn columns() -> Vec<&'static str> {
    let mut out = vec!["tuned local", "final model"];
    out.extend(candidates().map(Candidate::label));
    out.extend(["trusted curator", "centralised"]);
    out
}

/// The selection's candidates other than local, in registry order (their columns).
pub(super) fn candidates() -> impl Iterator<Item = Candidate> {
    Candidate::all().filter(|&c| c != Candidate::Local)
}

/// The column of a candidate other than local.
pub(super) fn column_of(c: Candidate) -> usize {
    2 + candidates().position(|k| k == c).unwrap_or(0)
}

/// The column of the tuned local model.
const LOCAL: usize = 0;
/// The column of the final model.
const FINAL: usize = 1;

/// Objective perturbation (the default) at `epsilon` on `data`, with seeded noise.
pub(super) fn private_learner(epsilon: f64, data: &Dataset, seed: u64) -> Result<LinearClassifier> {
    NodeLearner::default().release(epsilon, data, seed)
}

/// Runs `experiment utility`.
pub(super) fn run(args: UtilityArgs, stdout: &mut Out) -> Result<()> {
    let sweep = &args.sweep;
    if sweep.trials < 2 {
        return Err(anyhow!(
            "--trials must be at least 2 (paired intervals need two trials)"
        ));
    }
    if let Some(e) = sweep
        .epsilons
        .iter()
        .find(|e| !(e.is_finite() && **e > 0.0))
    {
        return Err(anyhow!("--epsilons: {e} is not a finite number > 0"));
    }
    let learner = NodeLearner::of(&args)?;
    let scenarios = scenarios(&args)?;
    create_out(&sweep.out)?;
    let start = Instant::now();
    let bar = progress_bar(Some((scenarios.len() * sweep.trials) as u64))?;
    let mut runs = Vec::new();
    for (k, scenario) in scenarios.iter().enumerate() {
        bar.set_message(format!("utility: {}", scenario.name));
        let batch: Vec<Vec<Run>> = (0..sweep.trials)
            .into_par_iter()
            .map(|t| {
                let r = trial(k, scenario, &args, learner, t);
                bar.inc(1);
                r
            })
            .collect::<Result<_>>()?;
        runs.extend(batch.into_iter().flatten());
    }
    bar.finish_and_clear();
    let names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
    let cells = cells(&names, &runs, &sweep.epsilons);
    write(&sweep.out, "utility_runs.csv", &runs_csv(&names, &runs)?)?;
    let mut wrote = "utility_runs.csv, utility.csv, utility_paired.csv, utility.md";
    if let (
        Some(Scenario {
            source: Source::Csv(own),
            ..
        }),
        true,
    ) = (scenarios.first(), args.dataset.is_some())
    {
        let splits = own.splits_csv(sweep.seed, sweep.trials, |t| vec![SPLIT, 0, t])?;
        write(&sweep.out, "utility_splits.csv", &splits)?;
        wrote = "utility_runs.csv, utility.csv, utility_paired.csv, utility_splits.csv, utility.md";
    }
    write(&sweep.out, "utility.csv", &summary_csv(&cells)?)?;
    write(&sweep.out, "utility_paired.csv", &paired_csv(&cells)?)?;
    let md = markdown(
        &cells,
        sweep.trials,
        &learner.describe(),
        args.dataset.is_some(),
    );
    write(&sweep.out, "utility.md", md.as_bytes())?;
    write_figure(
        &sweep.out,
        "utility",
        &figures::figure("utility", panels(&names, &cells), 520),
    )?;
    write!(stdout, "{md}")?;
    writeln!(
        stdout,
        "wrote {wrote} and utility.png to {} in {:.1} s",
        sweep.out.display(),
        start.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// A paired difference over trials: mean and 95 % interval.
#[derive(Debug, Clone, Copy)]
pub(super) struct Paired {
    pub(super) mean: f64,
    pub(super) low: f64,
    pub(super) high: f64,
}

impl Paired {
    pub(super) fn of(diffs: &[f64]) -> Self {
        let s = Summary::of(diffs);
        let half = 1.96 * s.sd / (diffs.len() as f64).sqrt();
        Self {
            mean: s.mean,
            low: s.mean - half,
            high: s.mean + half,
        }
    }
}

/// One (scenario, ε) over trials.
pub(super) struct Cell<'a> {
    pub(super) scenario: &'a str,
    pub(super) epsilon: f64,
    pub(super) trials: usize,
    pub(super) columns: Vec<Summary>,
    pub(super) final_minus_local: Paired,
    pub(super) final_minus_centralised: Paired,
    pub(super) chosen: Vec<(Candidate, usize)>,
    /// Trials where mirror averaging did no better than the majority class on the test rows.
    pub(super) mirror_at_majority: usize,
    /// Share of all learners (over trials) no better than the majority class.
    pub(super) learners_at_majority: f64,
}

fn cells<'a>(names: &[&'a str], runs: &[Run], epsilons: &[f64]) -> Vec<Cell<'a>> {
    let mut out = Vec::new();
    for (k, &name) in names.iter().enumerate() {
        for &epsilon in epsilons {
            let here: Vec<&Run> = runs
                .iter()
                .filter(|r| r.scenario == k && r.epsilon == epsilon)
                .collect();
            let column = |c: usize| here.iter().map(|r| r.accuracy[c]).collect::<Vec<f64>>();
            let diff = |c: usize| {
                here.iter()
                    .map(|r| r.accuracy[FINAL] - r.accuracy[c])
                    .collect::<Vec<f64>>()
            };
            let width = columns().len();
            out.push(Cell {
                scenario: name,
                epsilon,
                trials: here.len(),
                columns: (0..width).map(|c| Summary::of(&column(c))).collect(),
                final_minus_local: Paired::of(&diff(LOCAL)),
                final_minus_centralised: Paired::of(&diff(width - 1)),
                chosen: Candidate::all()
                    .map(|c| (c, here.iter().filter(|r| r.chosen == c).count()))
                    .collect(),
                mirror_at_majority: here
                    .iter()
                    .filter(|r| r.accuracy[column_of(Candidate::MirrorAveraging)] <= r.majority)
                    .count(),
                learners_at_majority: here.iter().map(|r| r.useless).sum::<usize>() as f64
                    / here.iter().map(|r| r.learners).sum::<usize>().max(1) as f64,
            });
        }
    }
    out
}

fn runs_csv(names: &[&str], runs: &[Run]) -> Result<Vec<u8>> {
    let mut header = vec!["scenario", "epsilon", "trial"];
    header.extend(columns());
    header.push("chosen");
    let lines: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let mut line = vec![
                names[r.scenario].to_owned(),
                eps(r.epsilon),
                r.trial.to_string(),
            ];
            line.extend(r.accuracy.iter().map(|&a| num(a)));
            line.push(r.chosen.name().to_owned());
            line
        })
        .collect();
    Ok(csv_text(&header, &lines)?)
}

fn summary_csv(cells: &[Cell]) -> Result<Vec<u8>> {
    let mut lines = Vec::new();
    for c in cells {
        lines.extend(summary_lines(
            c.scenario,
            c.epsilon,
            c.trials,
            &columns(),
            &c.columns,
        ));
    }
    Ok(csv_text(&SUMMARY_HEADER, &lines)?)
}

/// The header of a summary CSV (`utility.csv`, `synthetic.csv`).
pub(super) const SUMMARY_HEADER: [&str; 7] =
    ["scenario", "epsilon", "model", "mean", "sd", "se", "trials"];

/// One cell's lines of a summary CSV: per model, its mean, sd and standard error over `trials`.
pub(super) fn summary_lines(
    scenario: &str,
    epsilon: f64,
    trials: usize,
    models: &[&str],
    columns: &[Summary],
) -> Vec<Vec<String>> {
    models
        .iter()
        .zip(columns)
        .map(|(name, s)| {
            vec![
                scenario.to_owned(),
                eps(epsilon),
                (*name).to_owned(),
                num(s.mean),
                num(s.sd),
                num(s.sd / (trials as f64).sqrt()),
                trials.to_string(),
            ]
        })
        .collect()
}

fn paired_csv(cells: &[Cell]) -> Result<Vec<u8>> {
    let mut header = vec![
        "scenario",
        "epsilon",
        "final_minus_local",
        "low95",
        "high95",
        "final_minus_centralised",
        "low95_c",
        "high95_c",
    ];
    let chosen: Vec<String> = Candidate::all()
        .map(|c| format!("chosen_{}", c.name()))
        .collect();
    header.extend(chosen.iter().map(String::as_str));
    let lines: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let mut line = vec![
                c.scenario.to_owned(),
                eps(c.epsilon),
                num(c.final_minus_local.mean),
                num(c.final_minus_local.low),
                num(c.final_minus_local.high),
                num(c.final_minus_centralised.mean),
                num(c.final_minus_centralised.low),
                num(c.final_minus_centralised.high),
            ];
            line.extend(c.chosen.iter().map(|(_, n)| n.to_string()));
            line
        })
        .collect();
    Ok(csv_text(&header, &lines)?)
}

/// Points of a paired difference, e.g. `+4.9 [+4.5, +5.3]`.
pub(super) fn points(p: Paired) -> String {
    format!(
        "{:+.1} [{:+.1}, {:+.1}]",
        100.0 * p.mean,
        100.0 * p.low,
        100.0 * p.high
    )
}

fn markdown(cells: &[Cell], trials: usize, learner: &str, own_data: bool) -> String {
    let mut s = format!(
        "experiment utility: {trials} trials; nodes release {learner}; accuracies are means over trials; differences in points with 95 % intervals\n\n"
    );
    let names: Vec<&str> = Candidate::all().map(Candidate::name).collect();
    let header = columns();
    let _ = writeln!(
        s,
        "| scenario | ε | {} | final − local | final − centralised | chosen ({}) |",
        header.join(" | "),
        names.join("/")
    );
    let _ = writeln!(s, "|---|---|{}---|---|---|", "---|".repeat(header.len()));
    for c in cells {
        let means: Vec<String> = c.columns.iter().map(|m| format!("{:.3}", m.mean)).collect();
        let chosen: Vec<String> = c.chosen.iter().map(|(_, n)| n.to_string()).collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            c.scenario,
            eps(c.epsilon),
            means.join(" | "),
            points(c.final_minus_local),
            points(c.final_minus_centralised),
            chosen.join("/")
        );
    }
    if own_data {
        s.push('\n');
        s.push_str(&own_data_answer(cells));
        s.push_str(&majority_answer(cells));
        return s;
    }
    must_shows(&mut s, cells);
    super::utility_wide::must_shows(&mut s, cells);
    s
}

/// The must-shows, one line each (CI greps for "yes"): on the hand-written scenarios the final
/// model is never worse than tuned local on average in any cell; in the clinic at ε = 1 it gains
/// at least 4 points and is within 1.5 of centralised; on synthetic data at ε = 5 it gains at
/// least 3. The wide scenarios' lines follow ([`super::utility_wide`]).
fn must_shows(s: &mut String, cells: &[Cell]) {
    let yes = |ok: bool| if ok { "yes" } else { "NO" };
    let gain = |c: &Cell| 100.0 * c.final_minus_local.mean;
    let hand_written = |c: &&Cell| SCENARIOS[..HAND_WRITTEN].contains(&c.scenario);
    let worst = cells.iter().filter(hand_written).min_by(|a, b| {
        a.final_minus_local
            .mean
            .total_cmp(&b.final_minus_local.mean)
    });
    if let Some(w) = worst {
        let _ = writeln!(
            s,
            "\nworst final − local on the hand-written scenarios: {:+.2} points ({} at ε = {}); must be ≥ 0: {}",
            gain(w),
            w.scenario,
            eps(w.epsilon),
            yes(w.final_minus_local.mean >= -1e-12),
        );
    }
    let cell = |name: &str, epsilon: f64| {
        cells
            .iter()
            .find(|c| c.scenario == name && c.epsilon == epsilon)
    };
    if let Some(c) = cell("clinic", 1.0) {
        let _ = writeln!(
            s,
            "clinic at ε = 1: final − local {:+.2} points (must be ≥ +4: {}), final − centralised {:+.2} points (must be ≥ −1.5: {})",
            gain(c),
            yes(c.final_minus_local.mean >= 0.04),
            100.0 * c.final_minus_centralised.mean,
            yes(c.final_minus_centralised.mean >= -0.015),
        );
    }
    if let Some(c) = cell("synthetic", 5.0) {
        let _ = writeln!(
            s,
            "synthetic at ε = 5: final − local {:+.2} points (must be ≥ +3: {})",
            gain(c),
            yes(c.final_minus_local.mean >= 0.03),
        );
    }
}

/// Where the learners know nothing, in words: per ε, how often mirror averaging and the
/// learners did no better than always answering the more common label of the test rows.
fn majority_answer(cells: &[Cell]) -> String {
    let mut s = String::new();
    for c in cells
        .iter()
        .filter(|c| c.mirror_at_majority > 0 || c.learners_at_majority > 0.0)
    {
        let _ = writeln!(
            s,
            "WARNING at ε = {}: mirror averaging did no better than always answering the more \
             common label in {} of {} trials, and {:.0} % of the learners did no better either: \
             their noise swamps what the rows carry, or the map makes the rows alike \
             (`dpagg-node check` says which); an agreed map (--map own, the default for your \
             CSV) or a larger ε may help.",
            eps(c.epsilon),
            c.mirror_at_majority,
            c.trials,
            100.0 * c.learners_at_majority
        );
    }
    s
}

/// The answer to "would joining pay for my data?" in words, from the paired final − local
/// differences of a `--dataset` run (the aggregator is organisation 1 of the split).
fn own_data_answer(cells: &[Cell]) -> String {
    let Some(best) = cells.iter().max_by(|a, b| {
        a.final_minus_local
            .mean
            .total_cmp(&b.final_minus_local.mean)
    }) else {
        return String::new();
    };
    let gain = best.final_minus_local;
    let at = format!(
        "{} [{}] points at ε = {} over the tuned local model ({} trials)",
        format_args!("{:+.1}", 100.0 * gain.mean),
        format_args!("{:+.1}, {:+.1}", 100.0 * gain.low, 100.0 * gain.high),
        eps(best.epsilon),
        best.trials
    );
    let sentence = if gain.low > 0.0 {
        format!("Joining pays for the aggregator's rows: the final model gains {at}.")
    } else if gain.mean > 0.0 {
        format!(
            "Joining may help a little, but the evidence is weak: the final model gains {at}; \
             the interval includes 0."
        )
    } else {
        format!(
            "Joining does not help these rows at any ε tried: the best is {at}. The final model \
             keeps the local one when the others' learners do not help, so it costs little."
        )
    };
    format!("{sentence}\n")
}

/// One panel per scenario: accuracy against ε of the final model, mirror averaging, stacking
/// and the trusted curator, with the tuned local and centralised levels.
fn panels(names: &[&str], cells: &[Cell]) -> Vec<Panel> {
    names
        .iter()
        .map(|&name| {
            let here: Vec<&Cell> = cells.iter().filter(|c| c.scenario == name).collect();
            let names = columns();
            let line = |col: usize, shape: Shape, colour: usize| Series {
                name: names[col].to_owned(),
                points: here
                    .iter()
                    .map(|c| (c.epsilon, c.columns[col].mean, c.columns[col].sd))
                    .collect(),
                mark: Mark::Points(shape),
                colour: PALETTE[colour],
            };
            let level = |col: usize, pattern: Line, colour: usize| {
                let y = here.first().map_or(f64::NAN, |c| c.columns[col].mean);
                Series {
                    name: format!("{} ({y:.3})", names[col]),
                    points: vec![(0.0, y, 0.0)],
                    mark: Mark::Level(pattern),
                    colour: PALETTE[colour],
                }
            };
            let hi = here.iter().map(|c| c.epsilon).fold(0.0, f64::max);
            let lo_y = here
                .iter()
                .flat_map(|c| c.columns.iter().map(|s| s.mean - s.sd))
                .fold(1.0, f64::min);
            Panel {
                title: format!("{name}: joining vs alone"),
                x_label: "ε of each organisation's learner".into(),
                y_label: "test accuracy (mean ± sd over trials)".into(),
                x_range: (0.0, hi * 1.08),
                y_range: ((lo_y - 0.05).max(0.0), 1.02),
                series: vec![
                    level(LOCAL, Line::Dashed, 7),
                    level(names.len() - 1, Line::Dotted, 2),
                    line(FINAL, Shape::Circle, 0),
                    line(column_of(Candidate::MirrorAveraging), Shape::Square, 1),
                    line(column_of(Candidate::Stacking), Shape::Triangle, 3),
                    line(names.len() - 2, Shape::Ring, 4),
                ],
                dodge: 0.008,
            }
        })
        .collect()
}
