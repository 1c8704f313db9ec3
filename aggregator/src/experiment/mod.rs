//! `dpagg-aggregator experiment`: the reproduction of seed 001 §5 (issue 5).
//!
//! - `experiment paper --out DIR` runs the paper's setups with [`dpagg_shared::simulation`] (Fig. 3
//!   and Table 2 on synthetic data, Fig. 4 Breast Cancer, Fig. 5 Diabetes), a figure of every
//!   mechanism dpagg ships at equal ε on all three datasets (Fig. 6) and mirror averaging against
//!   the other aggregators (Fig. 7). It writes each figure as CSV, SVG and PNG, the paper's
//!   numbers beside ours (`paper_vs_ours.csv`) and the raw per-(ε, trial, organisation) runs.
//! - `experiment variants --out DIR` runs the investigation of EXPERIMENTS.md: the same protocol
//!   with one setting changed at a time (λ convention, the local baseline's λ, the normalisation
//!   of the real data, the law of the synthetic points) and tabulates the baselines and the
//!   aggregate.
//!
//! The defaults are the paper's stated setup; nothing is tuned to match its numbers. CSVs are a
//! function of the seed only (fixed-precision numbers, deterministic simulation).

mod figures;
mod plot;

use anyhow::{Context, Result};
use dpagg_shared::bundled::Bundled;
use dpagg_shared::dataset::{Dataset, dot};
use dpagg_shared::fsutil::atomic_write;
use dpagg_shared::mechanism::MechanismKind;
use dpagg_shared::simulation::{DataSource, OrgRun, SimulationConfig, TestSplit, run, runs_csv};
use dpagg_shared::stats::Summary;
use dpagg_shared::synthetic::{PointLaw, SyntheticSpec};
use figures::{MechanismPoint, Row, eps, num, paper};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Trials of `experiment paper` unless `--trials` is given (EXPERIMENTS.md states its run time).
pub const DEFAULT_TRIALS: usize = 100;

/// δ of every (ε, δ) mechanism in the mechanism figure.
const DELTA: f64 = 1e-5;

/// Arguments of `experiment`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Reproduce seed 001 §5: Fig. 3–5, Table 2, every mechanism and every aggregator.
    Paper(PaperArgs),
    /// Run the paper's protocol with one setting changed at a time (see EXPERIMENTS.md).
    Variants(VariantsArgs),
}

/// Arguments of `experiment paper`.
#[derive(Debug, clap::Args)]
struct PaperArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Trials (fresh partitions, visiting orders and noise) per setup.
    #[arg(long, default_value_t = DEFAULT_TRIALS)]
    trials: usize,
    /// Master seed (simulation only: seeded noise gives no privacy).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Regulariser λ in (λ/2)‖θ‖² of every learner (seed 001 §5.1: 0.01).
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
    skip_mechanisms: bool,
}

/// Arguments of `experiment variants`.
#[derive(Debug, clap::Args)]
struct VariantsArgs {
    /// Output folder (created if missing).
    #[arg(long)]
    out: PathBuf,
    /// Trials per variant.
    #[arg(long, default_value_t = 50)]
    trials: usize,
    /// Master seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// How rows of a real dataset are mapped into the unit ball.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Normalisation {
    /// The public schema: clip, map each feature to [−1, 1], append 1, divide by √dim (default;
    /// a per-record map fixed in advance, as the privacy proofs need).
    Schema,
    /// The schema's map, then each row scaled to norm 1 (still per-record).
    RowUnit,
    /// Standardise each feature with the data's mean and sd, append 1, divide every row by the
    /// largest row norm. Uses statistics of the whole data set: NOT differentially private; a
    /// guess at the non-private preprocessing of 2015-era experiments.
    Standardise,
}

impl Normalisation {
    fn name(self) -> &'static str {
        match self {
            Self::Schema => "schema",
            Self::RowUnit => "row-unit",
            Self::Standardise => "standardise",
        }
    }
}

/// Law of the synthetic points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Points {
    /// Uniform on the unit sphere (seed 001 §5.1).
    Sphere,
    /// u uniform on [0, 1]^10, then u/‖u‖ (not the paper's law; see EXPERIMENTS.md).
    NormalisedCube,
}

/// The three datasets of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Data {
    Synthetic,
    Real(Bundled),
}

impl Data {
    const ALL: [Data; 3] = [
        Data::Synthetic,
        Data::Real(Bundled::BreastCancer),
        Data::Real(Bundled::Diabetes),
    ];

    fn name(self) -> &'static str {
        match self {
            Data::Synthetic => "synthetic",
            Data::Real(b) => b.name(),
        }
    }

    fn title(self) -> &'static str {
        match self {
            Data::Synthetic => "Synthetic (n = 5,000, 100 organisations)",
            Data::Real(Bundled::BreastCancer) => "Breast Cancer (10 × 40, test 169)",
            Data::Real(Bundled::Diabetes) => "Diabetes (10 × 60, test 168)",
        }
    }

    /// The ε sweep of the paper's figure: Fig. 3's 0.1, 0.3, …, 1.9; for the real data the
    /// values §5.2 discusses (0.3, 1.5, 2.5) within a grid from 0.1 to 3.
    fn epsilons(self) -> Vec<f64> {
        match self {
            Data::Synthetic => (0..10).map(|i| (1.0 + 2.0 * i as f64) / 10.0).collect(),
            Data::Real(_) => vec![0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0],
        }
    }
}

/// Settings that define one run of the protocol (the paper's by default).
#[derive(Debug, Clone, Copy)]
struct Setup {
    trials: usize,
    seed: u64,
    lambda: f64,
    local_lambda: Option<f64>,
    normalisation: Normalisation,
    points: Points,
}

impl Setup {
    fn paper(trials: usize, seed: u64) -> Self {
        Self {
            trials,
            seed,
            lambda: 0.01,
            local_lambda: None,
            normalisation: Normalisation::Schema,
            points: Points::Sphere,
        }
    }

    fn config(
        &self,
        data: Data,
        mechanism: MechanismKind,
        epsilons: Vec<f64>,
        delta: f64,
    ) -> SimulationConfig {
        let (source, orgs) = match data {
            Data::Synthetic => (
                DataSource::Synthetic(SyntheticSpec {
                    points: match self.points {
                        Points::Sphere => PointLaw::Sphere,
                        Points::NormalisedCube => PointLaw::NormalisedCube,
                    },
                    ..SyntheticSpec::default()
                }),
                100,
            ),
            Data::Real(b) => {
                let split = b.paper_split();
                let (data, _) = b.load();
                (
                    DataSource::Fixed {
                        data: normalise(data, self.normalisation),
                        test: TestSplit::Counts {
                            positive: split.test_positive,
                            negative: split.test_negative,
                        },
                    },
                    split.orgs,
                )
            }
        };
        SimulationConfig {
            dataset: data.name().into(),
            source,
            orgs,
            mechanism,
            epsilons,
            delta,
            lambda: self.lambda,
            local_lambda: self.local_lambda,
            beta: 3.0,
            trials: self.trials,
            seed: self.seed,
            options: Default::default(),
        }
    }
}

/// Re-maps schema-normalised rows (features in [−1, 1]/√dim, intercept 1/√dim last).
fn normalise(data: Dataset, how: Normalisation) -> Dataset {
    let dim = data.dim();
    let n = data.len();
    let labels = data.labels().to_vec();
    match how {
        Normalisation::Schema => data,
        Normalisation::RowUnit => {
            let mut x = data.features().to_vec();
            for row in x.chunks_mut(dim) {
                let norm = dot(row, row).sqrt();
                row.iter_mut().for_each(|v| *v /= norm);
                while dot(row, row).sqrt() > 1.0 {
                    row.iter_mut().for_each(|v| *v *= 1.0 - f64::EPSILON);
                }
            }
            Dataset::new(x, labels, dim)
        }
        Normalisation::Standardise => {
            let features = dim - 1;
            let mut x = data.features().to_vec();
            for j in 0..features {
                let col: Vec<f64> = (0..n).map(|i| x[i * dim + j]).collect();
                let s = Summary::of(&col);
                let sd = if s.sd > 0.0 { s.sd } else { 1.0 };
                for i in 0..n {
                    x[i * dim + j] = (x[i * dim + j] - s.mean) / sd;
                }
            }
            for i in 0..n {
                x[i * dim + features] = 1.0;
            }
            let max = x.chunks(dim).map(|r| dot(r, r).sqrt()).fold(0.0, f64::max);
            x.iter_mut().for_each(|v| *v /= max);
            for row in x.chunks_mut(dim) {
                while dot(row, row).sqrt() > 1.0 {
                    row.iter_mut().for_each(|v| *v *= 1.0 - f64::EPSILON);
                }
            }
            Dataset::new(x, labels, dim)
        }
    }
}

/// Runs the simulation with the progress bar, adding its work to the bar's length.
fn simulate(config: &SimulationConfig, bar: &ProgressBar) -> Result<Vec<OrgRun>, String> {
    bar.inc_length((config.epsilons.len() * config.trials) as u64);
    run(config, &|| bar.inc(1))
        .map(|(_, runs)| runs)
        .map_err(|e| format!("{e:#}").replace('\n', " "))
}

fn progress_bar() -> Result<ProgressBar> {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:.bold} {msg:<44} [{bar:30}] {pos}/{len} (ε, trial) {elapsed_precise}",
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .progress_chars("=> "),
    );
    bar.set_prefix("experiment");
    Ok(bar)
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(name);
    atomic_write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn write_figure(dir: &Path, stem: &str, fig: &plot::Figure) -> Result<()> {
    write(dir, &format!("{stem}.svg"), fig.svg()?.as_bytes())?;
    write(dir, &format!("{stem}.png"), &fig.png()?)
}

/// Runs `experiment`.
pub fn run_command(args: Args) -> Result<()> {
    match args.command {
        Command::Paper(a) => paper_command(a),
        Command::Variants(a) => variants_command(a),
    }
}

/// One mechanism configuration of Fig. 6.
struct MechanismSpec {
    label: &'static str,
    kind: MechanismKind,
    delta: f64,
    neighbours: &'static str,
    /// DP-SGD run at (ε/2, δ/(1 + e^{ε/2})) so that its replace-one guarantee is (ε, δ).
    replace_one: bool,
}

const MECHANISMS: [MechanismSpec; 8] = [
    MechanismSpec {
        label: "objective perturbation, ε-DP",
        kind: MechanismKind::ObjectivePerturbation,
        delta: 0.0,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "objective perturbation, (ε, δ)",
        kind: MechanismKind::ObjectivePerturbation,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "output perturbation, ε-DP",
        kind: MechanismKind::OutputPerturbation,
        delta: 0.0,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "DP-SGD, ε add/remove-one",
        kind: MechanismKind::DpSgd,
        delta: DELTA,
        neighbours: "add/remove-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "DP-SGD at replace-one ε",
        kind: MechanismKind::DpSgd,
        delta: DELTA,
        neighbours: "replace-one (group privacy)",
        replace_one: true,
    },
    MechanismSpec {
        label: "DP-SGD, BST 2014",
        kind: MechanismKind::DpSgdBst,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "Gibbs posterior (proven)",
        kind: MechanismKind::GibbsPosterior,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "Gibbs posterior, unproven sampler",
        kind: MechanismKind::GibbsPosteriorUnproven,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
];

const MECHANISM_EPSILONS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];

fn mechanism_points(setup: &Setup, data: Data, bar: &ProgressBar) -> Vec<MechanismPoint> {
    let mut out = Vec::new();
    for (style, m) in MECHANISMS.iter().enumerate() {
        bar.set_message(format!("Fig. 6 {}: {}", data.name(), m.label));
        let point = |epsilon: f64, run_epsilon: f64, run_delta: f64, outcome| MechanismPoint {
            dataset: data.name().into(),
            label: m.label.into(),
            style,
            neighbours: m.neighbours,
            epsilon,
            delta: m.delta,
            run_epsilon,
            run_delta,
            outcome,
        };
        // All ε at once when the mechanism accepts them; one at a time to find which it refuses.
        let all = if m.replace_one {
            None
        } else {
            simulate(
                &setup.config(data, m.kind, MECHANISM_EPSILONS.to_vec(), m.delta),
                bar,
            )
            .ok()
        };
        if let Some(runs) = all {
            for r in figures::rows(&runs) {
                out.push(point(r.epsilon, r.epsilon, m.delta, Ok(r)));
            }
            continue;
        }
        for &e in &MECHANISM_EPSILONS {
            let (run_e, run_d) = if m.replace_one {
                // Group privacy: add/remove-one (ε', δ') gives replace-one (2ε', (1 + e^ε')δ').
                (e / 2.0, m.delta / (1.0 + (e / 2.0).exp()))
            } else {
                (e, m.delta)
            };
            let outcome =
                simulate(&setup.config(data, m.kind, vec![run_e], run_d), bar).and_then(|runs| {
                    figures::rows(&runs)
                        .into_iter()
                        .next()
                        .ok_or_else(|| "no runs".to_owned())
                });
            out.push(point(e, run_e, run_d, outcome));
        }
    }
    out
}

/// The smallest ε of the grid from which the aggregate's mean beats local-only's at every larger ε.
fn threshold(rows: &[Row]) -> Option<f64> {
    let mut best = None;
    for r in rows.iter().rev() {
        if r.aggregate.mean > r.local.mean {
            best = Some(r.epsilon);
        } else {
            break;
        }
    }
    best
}

fn paper_command(args: PaperArgs) -> Result<()> {
    let start = Instant::now();
    let setup = Setup {
        trials: args.trials,
        seed: args.seed,
        lambda: args.lambda,
        local_lambda: args.local_lambda,
        normalisation: args.normalisation,
        points: args.synthetic_points,
    };
    let out = &args.out;
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create output folder {}", out.display()))?;
    let bar = progress_bar()?;
    let mut sweeps: Vec<(Data, Vec<Row>)> = Vec::new();
    for (data, stem) in
        Data::ALL
            .into_iter()
            .zip(["fig3_synthetic", "fig4_breast_cancer", "fig5_diabetes"])
    {
        bar.set_message(format!("{stem}: objective perturbation"));
        let config = setup.config(
            data,
            MechanismKind::ObjectivePerturbation,
            data.epsilons(),
            0.0,
        );
        let runs = simulate(&config, &bar).map_err(anyhow::Error::msg)?;
        write(out, &format!("runs_{}.csv", data.name()), &runs_csv(&runs)?)?;
        let rows = figures::rows(&runs);
        let lines: Vec<Vec<String>> = rows
            .iter()
            .map(|r| figures::sweep_line(r, config.orgs, config.trials))
            .collect();
        write(
            out,
            &format!("{stem}.csv"),
            &figures::csv_text(&figures::SWEEP_HEADER, &lines)?,
        )?;
        let paper_levels: &[(&str, f64)] = match data {
            Data::Synthetic => &[
                ("local only", paper::SYNTHETIC_LOCAL),
                ("non-private exchange", paper::SYNTHETIC_NONPRIVATE),
            ],
            Data::Real(_) => &[],
        };
        let panel = figures::sweep_panel(data.title(), &rows, paper_levels, config.trials);
        write_figure(out, stem, &figures::figure(stem, vec![panel], 1000))?;
        sweeps.push((data, rows));
    }
    // Table 2.
    let synthetic = &sweeps[0].1;
    let table2: Vec<Vec<String>> = paper::TABLE2
        .iter()
        .map(|&(e, count)| {
            let r = synthetic.iter().find(|r| (r.epsilon - e).abs() < 1e-9);
            let cell = |f: fn(&Row) -> f64| r.map_or_else(|| "NaN".into(), |r| num(f(r)));
            vec![
                eps(e),
                num(count),
                cell(|r| r.improved.mean),
                cell(|r| r.improved.sd),
                cell(|r| r.improved_min),
                cell(|r| r.improved_max),
                "100".into(),
                setup.trials.to_string(),
            ]
        })
        .collect();
    write(
        out,
        "table2_improved.csv",
        &figures::csv_text(
            &[
                "epsilon",
                "paper",
                "ours_mean",
                "ours_sd",
                "ours_min",
                "ours_max",
                "orgs",
                "trials",
            ],
            &table2,
        )?,
    )?;
    // Fig. 7: aggregators.
    let mut agg_lines = Vec::new();
    let mut agg_panels = Vec::new();
    for (data, rows) in &sweeps {
        agg_lines.extend(figures::aggregator_lines(data.name(), rows));
        agg_panels.push(figures::aggregator_panel(data.title(), rows));
    }
    write(
        out,
        "fig7_aggregators.csv",
        &figures::csv_text(
            &["dataset", "epsilon", "aggregator", "mean", "sd"],
            &agg_lines,
        )?,
    )?;
    write_figure(
        out,
        "fig7_aggregators",
        &figures::figure("fig7_aggregators", agg_panels, 720),
    )?;
    // Fig. 6: mechanisms.
    if !args.skip_mechanisms {
        let mut lines = Vec::new();
        let mut panels = Vec::new();
        for (data, rows) in &sweeps {
            let points = mechanism_points(&setup, *data, &bar);
            lines.extend(points.iter().map(figures::mechanism_line));
            panels.push(figures::mechanism_panel(
                data.title(),
                &points,
                figures::overall(rows, |r| r.local),
            ));
        }
        write(
            out,
            "fig6_mechanisms.csv",
            &figures::csv_text(&figures::MECHANISM_HEADER, &lines)?,
        )?;
        write_figure(
            out,
            "fig6_mechanisms",
            &figures::figure("fig6_mechanisms", panels, 720),
        )?;
    }
    bar.finish_and_clear();
    // Side by side.
    let cmp = comparison(&sweeps);
    write(
        out,
        "paper_vs_ours.csv",
        &figures::csv_text(&["quantity", "paper", "ours"], &cmp)?,
    )?;
    println!(
        "seed 001 §5 reproduction: {} trials, seed {}, λ = {}{}, {} normalisation, {} synthetic points\n",
        setup.trials,
        setup.seed,
        setup.lambda,
        setup
            .local_lambda
            .map_or_else(String::new, |l| format!(" (local {l})")),
        setup.normalisation.name(),
        match setup.points {
            Points::Sphere => "sphere",
            Points::NormalisedCube => "normalised-cube",
        }
    );
    println!("{:<72} {:>10} {:>22}", "quantity", "paper", "ours");
    for l in &cmp {
        println!("{:<72} {:>10} {:>22}", l[0], l[1], l[2]);
    }
    println!(
        "\nwrote figures, tables and runs to {} in {:.1} s",
        out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

fn comparison(sweeps: &[(Data, Vec<Row>)]) -> Vec<Vec<String>> {
    let mut cmp: Vec<Vec<String>> = Vec::new();
    let line = |q: String, p: String, o: String| vec![q, p, o];
    for (data, rows) in sweeps {
        let overall = |f: fn(&Row) -> Summary| figures::overall(rows, f);
        match data {
            Data::Synthetic => {
                cmp.push(line(
                    "synthetic: centralised accuracy (all 5,000 points)".into(),
                    num(paper::SYNTHETIC_CENTRALISED),
                    num(overall(|r| r.centralised)),
                ));
                cmp.push(line(
                    "synthetic: local-only mean accuracy".into(),
                    num(paper::SYNTHETIC_LOCAL),
                    num(overall(|r| r.local)),
                ));
                cmp.push(line(
                    "synthetic: non-private exchange mean accuracy".into(),
                    num(paper::SYNTHETIC_NONPRIVATE),
                    num(overall(|r| r.nonprivate)),
                ));
                for &(e, count) in &paper::TABLE2 {
                    if let Some(r) = rows.iter().find(|r| (r.epsilon - e).abs() < 1e-9) {
                        cmp.push(line(
                            format!(
                                "synthetic: organisations improved at ε = {} (of 100)",
                                eps(e)
                            ),
                            format!("{count:.0}"),
                            format!(
                                "{:.1} ({:.0}–{:.0})",
                                r.improved.mean, r.improved_min, r.improved_max
                            ),
                        ));
                    }
                }
                if let Some(r) = rows.first() {
                    cmp.push(line(
                        format!(
                            "synthetic: aggregate mean beats local-only at ε = {}",
                            eps(r.epsilon)
                        ),
                        "yes".into(),
                        format!(
                            "{} ({:.3} vs {:.3})",
                            if r.aggregate.mean > r.local.mean {
                                "yes"
                            } else {
                                "no"
                            },
                            r.aggregate.mean,
                            r.local.mean
                        ),
                    ));
                }
            }
            Data::Real(b) => {
                let (paper_from, claim) = match b {
                    Bundled::BreastCancer => ("2.5", "aggregate mean beats local-only from ε ="),
                    Bundled::Diabetes => ("0.3", "aggregate mean ≥ local-only from ε ="),
                };
                let ours = match b {
                    Bundled::BreastCancer => threshold(rows),
                    Bundled::Diabetes => {
                        let mut best = None;
                        for r in rows.iter().rev() {
                            if r.aggregate.mean >= r.local.mean {
                                best = Some(r.epsilon);
                            } else {
                                break;
                            }
                        }
                        best
                    }
                };
                cmp.push(line(
                    format!("{}: {claim}", b.name()),
                    paper_from.into(),
                    ours.map_or_else(|| "never".into(), eps),
                ));
                if *b == Bundled::BreastCancer {
                    let below: Vec<&Row> = rows.iter().filter(|r| r.epsilon < 1.5).collect();
                    let beats = below
                        .iter()
                        .filter(|r| r.aggregate.mean > r.local.mean)
                        .count();
                    cmp.push(line(
                        "breast-cancer: ε < 1.5 where the aggregate mean beats local-only".into(),
                        "none".into(),
                        format!("{beats} of {}", below.len()),
                    ));
                }
                cmp.push(line(
                    format!("{}: centralised accuracy (not in the paper)", b.name()),
                    "—".into(),
                    num(overall(|r| r.centralised)),
                ));
                cmp.push(line(
                    format!(
                        "{}: local-only mean accuracy (paper: in Fig. only)",
                        b.name()
                    ),
                    "—".into(),
                    num(overall(|r| r.local)),
                ));
            }
        }
    }
    cmp
}

/// One variant of the investigation: a name, what it changes, and the setup.
struct Variant {
    name: &'static str,
    what: &'static str,
    data: &'static [Data],
    apply: fn(&mut Setup),
}

const SYNTH: &[Data] = &[Data::Synthetic];
const REAL: &[Data] = &[
    Data::Real(Bundled::BreastCancer),
    Data::Real(Bundled::Diabetes),
];
const ALL_DATA: &[Data] = &Data::ALL;

const VARIANTS: [Variant; 10] = [
    Variant {
        name: "paper setup",
        what: "λ = 0.01 in (λ/2)‖θ‖², schema normalisation, points uniform on the sphere",
        data: ALL_DATA,
        apply: |_| {},
    },
    Variant {
        name: "λ = 0.02",
        what: "eq. 24 writes λ‖θ‖²: the paper's λ = 0.01 is our 0.02",
        data: ALL_DATA,
        apply: |s| s.lambda = 0.02,
    },
    Variant {
        name: "local λ = 1e-4",
        what: "non-private learners almost unregularised; private learners keep λ = 0.01",
        data: ALL_DATA,
        apply: |s| s.local_lambda = Some(1e-4),
    },
    Variant {
        name: "local λ = 1",
        what: "non-private learners 100× more regularised; private learners keep λ = 0.01",
        data: ALL_DATA,
        apply: |s| s.local_lambda = Some(1.0),
    },
    Variant {
        name: "local λ = 100",
        what: "non-private learners in the ridge limit, θ ∝ Σ yᵢxᵢ; private learners keep λ = 0.01",
        data: ALL_DATA,
        apply: |s| s.local_lambda = Some(100.0),
    },
    Variant {
        name: "λ = 0.001",
        what: "every learner 10× less regularised",
        data: ALL_DATA,
        apply: |s| s.lambda = 0.001,
    },
    Variant {
        name: "normalised-cube points",
        what: "x = u/‖u‖ with u uniform on [0, 1]^10 (not uniform on the sphere)",
        data: SYNTH,
        apply: |s| s.points = Points::NormalisedCube,
    },
    Variant {
        name: "row-unit normalisation",
        what: "schema map, then every row scaled to norm 1",
        data: REAL,
        apply: |s| s.normalisation = Normalisation::RowUnit,
    },
    Variant {
        name: "standardise",
        what: "z-scores, intercept 1, divided by the largest row norm (not DP)",
        data: REAL,
        apply: |s| s.normalisation = Normalisation::Standardise,
    },
    Variant {
        name: "standardise, λ = 0.001",
        what: "both of the above",
        data: REAL,
        apply: |s| {
            s.normalisation = Normalisation::Standardise;
            s.lambda = 0.001;
        },
    },
];

fn variants_command(args: VariantsArgs) -> Result<()> {
    let start = Instant::now();
    let out = &args.out;
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create output folder {}", out.display()))?;
    let bar = progress_bar()?;
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut table: Vec<String> = Vec::new();
    for data in Data::ALL {
        let shown: &[f64] = match data {
            Data::Synthetic => &[0.1, 0.9, 1.9],
            Data::Real(_) => &[0.3, 1.5, 2.5],
        };
        table.push(format!(
            "\n**{}** ({} trials, seed {}; aggregate and improved organisations at ε = {})\n",
            data.title(),
            args.trials,
            args.seed,
            shown.iter().map(|e| eps(*e)).collect::<Vec<_>>().join(", ")
        ));
        table.push("| variant | centralised | local only | non-private exchange | aggregate | improved | aggregate > local from ε | what it changes |".into());
        table.push("|---|---|---|---|---|---|---|---|".into());
        for v in VARIANTS.iter().filter(|v| v.data.contains(&data)) {
            let mut setup = Setup::paper(args.trials, args.seed);
            (v.apply)(&mut setup);
            bar.set_message(format!("{}: {}", data.name(), v.name));
            let config = setup.config(
                data,
                MechanismKind::ObjectivePerturbation,
                data.epsilons(),
                0.0,
            );
            let runs = simulate(&config, &bar).map_err(anyhow::Error::msg)?;
            let rows = figures::rows(&runs);
            for r in &rows {
                let mut l = vec![data.name().to_owned(), v.name.to_owned()];
                l.extend(figures::sweep_line(r, config.orgs, config.trials));
                lines.push(l);
            }
            let at: Vec<&Row> = shown
                .iter()
                .filter_map(|e| rows.iter().find(|r| (r.epsilon - e).abs() < 1e-9))
                .collect();
            table.push(format!(
                "| {} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {} |",
                v.name,
                figures::overall(&rows, |r| r.centralised),
                figures::overall(&rows, |r| r.local),
                figures::overall(&rows, |r| r.nonprivate),
                at.iter()
                    .map(|r| format!("{:.3}", r.aggregate.mean))
                    .collect::<Vec<_>>()
                    .join(" / "),
                at.iter()
                    .map(|r| format!("{:.1}", r.improved.mean))
                    .collect::<Vec<_>>()
                    .join(" / "),
                threshold(&rows).map_or_else(|| "never".into(), eps),
                v.what
            ));
        }
    }
    bar.finish_and_clear();
    let mut header = vec!["dataset", "variant"];
    header.extend(figures::SWEEP_HEADER);
    write(out, "variants.csv", &figures::csv_text(&header, &lines)?)?;
    let md = table.join("\n") + "\n";
    write(out, "variants.md", md.as_bytes())?;
    println!("{md}");
    println!(
        "wrote {} and {} in {:.1} s",
        out.join("variants.csv").display(),
        out.join("variants.md").display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisations_keep_rows_in_the_unit_ball() {
        let (data, _) = Bundled::Diabetes.load();
        for how in [
            Normalisation::Schema,
            Normalisation::RowUnit,
            Normalisation::Standardise,
        ] {
            let d = normalise(data.clone(), how);
            assert_eq!(d.len(), data.len());
            assert_eq!(d.labels(), data.labels());
            assert!(d.max_row_norm() <= 1.0, "{how:?}");
        }
        let unit = normalise(data.clone(), Normalisation::RowUnit);
        assert!((unit.max_row_norm() - 1.0).abs() < 1e-12);
        let z = normalise(data, Normalisation::Standardise);
        assert!((z.max_row_norm() - 1.0).abs() < 1e-12);
        // The intercept column is constant.
        let c = z.row(0)[8];
        assert!((0..z.len()).all(|i| z.row(i)[8] == c));
    }

    #[test]
    fn threshold_is_the_start_of_the_final_winning_run() {
        let row = |e: f64, agg: f64| {
            let s = |m: f64| Summary { mean: m, sd: 0.0 };
            Row {
                epsilon: e,
                aggregate: s(agg),
                private_learner: s(0.5),
                local: s(0.6),
                nonprivate: s(0.9),
                centralised: s(0.9),
                with_own: s(0.5),
                uniform: s(0.5),
                best_single: s(0.5),
                improved: s(1.0),
                improved_min: 0.0,
                improved_max: 2.0,
            }
        };
        let rows = vec![row(0.5, 0.7), row(1.0, 0.5), row(2.0, 0.7), row(3.0, 0.8)];
        assert_eq!(threshold(&rows), Some(2.0));
        assert_eq!(threshold(&rows[..2]), None);
    }

    #[test]
    fn sweeps_use_the_papers_grids() {
        assert_eq!(
            Data::Synthetic.epsilons(),
            vec![0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9]
        );
        let c = Setup::paper(2, 1).config(
            Data::Real(Bundled::BreastCancer),
            MechanismKind::ObjectivePerturbation,
            vec![1.0],
            0.0,
        );
        assert_eq!(c.orgs, 10);
        assert_eq!(c.lambda, 0.01);
        assert_eq!(c.beta, 3.0);
    }
}
