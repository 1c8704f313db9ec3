//! From simulation runs to the reproduction's tables (CSV text) and figures.
//!
//! Everything here is a pure function of the per-(ε, trial, organisation) runs that
//! [`dpagg_shared::simulation::run`] returns. Numbers are written with a fixed number of decimals,
//! so the same runs always give the same bytes.

use super::plot::{Figure, Line, Mark, PALETTE, Panel, Series, Shape};
use dpagg_shared::aggregate::select::Candidate;
use dpagg_shared::simulation::{OrgRun, PAPER, PerCombiner, improved_per_trial, simulated_in};
use dpagg_shared::util::stats::Summary;

/// The paper's numbers (Minami et al. 2015, §5).
pub mod paper {
    /// §5.1: logistic regression on all 5,000 synthetic points.
    pub const SYNTHETIC_CENTRALISED: f64 = 0.999;
    /// §5.1: mean accuracy of the local-only learners (Fig. 3, dash-dot line).
    pub const SYNTHETIC_LOCAL: f64 = 0.559;
    /// §5.1: mean accuracy of the aggregate of non-private learners (Fig. 3, dashed line).
    pub const SYNTHETIC_NONPRIVATE: f64 = 0.973;
    /// Table 2: ε and the number of the 100 nodes whose aggregate beats their local learner.
    pub const TABLE2: [(f64, f64); 10] = [
        (0.1, 88.0),
        (0.3, 88.0),
        (0.5, 92.0),
        (0.7, 97.0),
        (0.9, 97.0),
        (1.1, 97.0),
        (1.3, 97.0),
        (1.5, 99.0),
        (1.7, 99.0),
        (1.9, 100.0),
    ];
}

/// Mean ± sd of one quantity at one ε, plus per-trial extremes for counts.
#[derive(Debug, Clone)]
pub struct Row {
    /// ε.
    pub epsilon: f64,
    /// Each simulated combiner of the others' private learners, in registry order ([`PAPER`],
    /// mirror averaging, first).
    pub combiners: PerCombiner<Summary>,
    /// Individual private learners.
    pub private_learner: Summary,
    /// Local-only learner.
    pub local: Summary,
    /// Mirror average of the others' non-private learners.
    pub nonprivate: Summary,
    /// Centralised learner (one value per trial).
    pub centralised: Summary,
    /// Organisations per trial whose aggregate beats their local learner.
    pub improved: Summary,
    /// Fewest improved organisations in a trial.
    pub improved_min: f64,
    /// Most improved organisations in a trial.
    pub improved_max: f64,
}

impl Row {
    /// The paper's method: the mirror average of the others' private learners.
    pub fn aggregate(&self) -> Summary {
        *self.combiners.get(PAPER)
    }

    /// The simulated combiners other than the paper's method, in registry order.
    fn others(&self) -> impl Iterator<Item = &(Candidate, Summary)> {
        self.combiners.iter().filter(|(c, _)| *c != PAPER)
    }
}

/// Summarises runs per ε (in the order the ε first appear).
pub fn rows(runs: &[OrgRun]) -> Vec<Row> {
    let mut epsilons: Vec<f64> = Vec::new();
    for r in runs {
        if !epsilons.contains(&r.epsilon) {
            epsilons.push(r.epsilon);
        }
    }
    epsilons
        .into_iter()
        .map(|eps| {
            let rs: Vec<&OrgRun> = runs.iter().filter(|r| r.epsilon == eps).collect();
            let col =
                |f: fn(&OrgRun) -> f64| Summary::of(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
            let mut trials: Vec<usize> = rs.iter().map(|r| r.trial).collect();
            trials.sort_unstable();
            trials.dedup();
            let improved = improved_per_trial(&rs);
            let centralised: Vec<f64> = trials
                .iter()
                .filter_map(|&t| rs.iter().find(|r| r.trial == t))
                .map(|r| r.centralised_accuracy)
                .collect();
            let combiners = simulated_in(&rs)
                .map(|c| {
                    let values: Vec<f64> = rs.iter().map(|r| r.accuracy(c)).collect();
                    (c, Summary::of(&values))
                })
                .collect();
            Row {
                epsilon: eps,
                combiners: PerCombiner(combiners),
                private_learner: col(|r| r.private_learner_accuracy),
                local: col(|r| r.local_accuracy),
                nonprivate: col(|r| r.nonprivate_aggregate_accuracy),
                centralised: Summary::of(&centralised),
                improved: Summary::of(&improved),
                improved_min: improved.iter().copied().fold(f64::INFINITY, f64::min),
                improved_max: improved.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            }
        })
        .collect()
}

/// Fixed-precision number (4 decimals), the one format of every CSV.
pub fn num(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v:.4}")
    }
}

/// ε as written in tables: at most 4 decimals, no trailing zeros.
pub fn eps(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_owned()
}

/// δ as written in tables: `0`, or 4 significant digits in scientific notation.
pub fn delta(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.3e}")
    }
}

/// Builds CSV text from a header and rows of already formatted cells.
pub fn csv_text(header: &[&str], lines: &[Vec<String>]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header)?;
    for l in lines {
        w.write_record(l)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// The columns of `fig3_synthetic.csv`, `fig4_breast_cancer.csv` and `fig5_diabetes.csv`: the
/// paper's method, the baselines, every other simulated combiner (its column's prefix), the
/// improvement count.
pub fn sweep_header() -> Vec<String> {
    let pair = |p: &str| [format!("{p}_mean"), format!("{p}_sd")];
    let paper = Candidate::simulated()
        .find(|(c, _)| *c == PAPER)
        .map_or("aggregate", |(_, s)| s.prefix());
    let mut h = vec!["epsilon".to_owned()];
    h.extend(pair(paper));
    for p in [
        "private_learner",
        "local",
        "nonprivate_aggregate",
        "centralised",
    ] {
        h.extend(pair(p));
    }
    for (_, s) in Candidate::simulated().filter(|(c, _)| *c != PAPER) {
        h.extend(pair(s.prefix()));
    }
    h.extend(pair("improved"));
    h.extend(["improved_min", "improved_max", "orgs", "trials"].map(String::from));
    h
}

/// One line of a sweep CSV, in [`sweep_header`]'s order.
pub fn sweep_line(r: &Row, orgs: usize, trials: usize) -> Vec<String> {
    let ms = |s: &Summary| [num(s.mean), num(s.sd)];
    let mut v = vec![eps(r.epsilon)];
    for s in [
        &r.aggregate(),
        &r.private_learner,
        &r.local,
        &r.nonprivate,
        &r.centralised,
    ] {
        v.extend(ms(s));
    }
    for (_, s) in r.others() {
        v.extend(ms(s));
    }
    v.extend(ms(&r.improved));
    v.push(num(r.improved_min));
    v.push(num(r.improved_max));
    v.push(orgs.to_string());
    v.push(trials.to_string());
    v
}

/// Mean over all (ε, trial, organisation) of a quantity that does not depend on ε.
pub fn overall(rows: &[Row], f: fn(&Row) -> Summary) -> f64 {
    Summary::of(&rows.iter().map(|r| f(r).mean).collect::<Vec<_>>()).mean
}

fn level(name: String, y: f64, pattern: Line, colour: (u8, u8, u8)) -> Series {
    Series {
        name,
        points: vec![(0.0, y, 0.0)],
        mark: Mark::Level(pattern),
        colour,
    }
}

/// A reference line at the mean over ε of `f`, its value in the legend.
fn overall_level(
    name: &str,
    rows: &[Row],
    f: fn(&Row) -> Summary,
    pattern: Line,
    colour: (u8, u8, u8),
) -> Series {
    let y = overall(rows, f);
    level(format!("{name} ({y:.3})"), y, pattern, colour)
}

fn points(
    name: &str,
    rows: &[Row],
    f: fn(&Row) -> Summary,
    shape: Shape,
    colour: (u8, u8, u8),
) -> Series {
    Series {
        name: name.to_owned(),
        points: rows
            .iter()
            .map(|r| (r.epsilon, f(r).mean, f(r).sd))
            .collect(),
        mark: Mark::Points(shape),
        colour,
    }
}

fn x_range(rows: &[Row]) -> (f64, f64) {
    let lo = rows.iter().map(|r| r.epsilon).fold(f64::INFINITY, f64::min);
    let hi = rows
        .iter()
        .map(|r| r.epsilon)
        .fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.05).max(0.05);
    ((lo - pad).max(0.0), hi + pad)
}

/// The paper's figure for one dataset (Fig. 3, 4 or 5): aggregate and private learners with ±sd,
/// local-only, non-private exchange and centralised as lines; paper reference lines if known.
pub fn sweep_panel(
    title: &str,
    rows: &[Row],
    paper_levels: &[(&str, f64)],
    trials: usize,
) -> Panel {
    let mut series = vec![
        points(
            "private aggregate (mirror averaging)",
            rows,
            |r| r.aggregate(),
            Shape::Circle,
            PALETTE[0],
        ),
        points(
            "individual private learners",
            rows,
            |r| r.private_learner,
            Shape::Square,
            PALETTE[1],
        ),
        overall_level("local only", rows, |r| r.local, Line::DashDot, PALETTE[2]),
        overall_level(
            "non-private exchange",
            rows,
            |r| r.nonprivate,
            Line::Dashed,
            PALETTE[3],
        ),
        overall_level(
            "centralised, all data",
            rows,
            |r| r.centralised,
            Line::Dotted,
            PALETTE[6],
        ),
    ];
    for (name, y) in paper_levels {
        series.push(level(
            format!("paper: {name} ({y:.3})"),
            *y,
            Line::Dotted,
            PALETTE[7],
        ));
    }
    Panel {
        title: format!("{title} ({trials} trials; mean ± sd over trials × organisations)"),
        x_label: "privacy parameter ε".into(),
        y_label: "test accuracy".into(),
        x_range: x_range(rows),
        y_range: (0.0, 1.05),
        series,
        dodge: 0.004,
    }
}

/// The marker and colour of the n-th simulated combiner in [`aggregator_panel`].
const COMBINER_STYLES: [(Shape, usize); 4] = [
    (Shape::Circle, 0),
    (Shape::Ring, 4),
    (Shape::Square, 1),
    (Shape::Triangle, 5),
];

/// Mirror averaging against the other simulated combiners on the same private learners.
pub fn aggregator_panel(title: &str, rows: &[Row]) -> Panel {
    let mut series: Vec<Series> = Candidate::simulated()
        .enumerate()
        .map(|(n, (c, _))| {
            let (shape, colour) = COMBINER_STYLES[n % COMBINER_STYLES.len()];
            Series {
                name: c.label().to_owned(),
                points: rows
                    .iter()
                    .map(|r| {
                        let s = r.combiners.get(c);
                        (r.epsilon, s.mean, s.sd)
                    })
                    .collect(),
                mark: Mark::Points(shape),
                // Past the table, colours move on so no two combiners coincide.
                colour: PALETTE[(colour + n / COMBINER_STYLES.len()) % PALETTE.len()],
            }
        })
        .collect();
    series.push(overall_level(
        "local only",
        rows,
        |r| r.local,
        Line::DashDot,
        PALETTE[2],
    ));
    Panel {
        title: title.to_owned(),
        x_label: "privacy parameter ε".into(),
        y_label: "test accuracy".into(),
        x_range: x_range(rows),
        y_range: (0.0, 1.05),
        series,
        dodge: 0.005,
    }
}

/// `fig7_aggregators.csv` lines for one dataset: every simulated combiner, then local only.
pub fn aggregator_lines(dataset: &str, rows: &[Row]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for r in rows {
        let named = Candidate::simulated().map(|(c, s)| (s.table_name, *r.combiners.get(c)));
        for (name, s) in named.chain([("local-only", r.local)]) {
            out.push(vec![
                dataset.to_owned(),
                eps(r.epsilon),
                name.to_owned(),
                num(s.mean),
                num(s.sd),
            ]);
        }
    }
    out
}

/// Outcome of one mechanism at one ε on one dataset (the mechanism figure).
#[derive(Debug, Clone)]
pub struct MechanismPoint {
    /// Dataset name.
    pub dataset: String,
    /// Label of the mechanism configuration.
    pub label: String,
    /// Index into the palette/shape tables.
    pub style: usize,
    /// Neighbour relation of the stated guarantee.
    pub neighbours: &'static str,
    /// ε under the figure's x-axis (replace-one unless the label says otherwise).
    pub epsilon: f64,
    /// δ of the figure's comparison.
    pub delta: f64,
    /// ε and δ the mechanism was run with.
    pub run_epsilon: f64,
    /// δ the mechanism was run with.
    pub run_delta: f64,
    /// The summary row, or why the mechanism refused.
    pub outcome: Result<Row, String>,
}

/// `fig6_mechanisms.csv` header.
pub const MECHANISM_HEADER: [&str; 14] = [
    "dataset",
    "mechanism",
    "neighbours",
    "epsilon",
    "delta",
    "run_epsilon",
    "run_delta",
    "status",
    "aggregate_mean",
    "aggregate_sd",
    "private_learner_mean",
    "private_learner_sd",
    "local_mean",
    "improved_mean",
];

/// One `fig6_mechanisms.csv` line.
pub fn mechanism_line(p: &MechanismPoint) -> Vec<String> {
    let mut v = vec![
        p.dataset.clone(),
        p.label.clone(),
        p.neighbours.to_owned(),
        eps(p.epsilon),
        delta(p.delta),
        eps(p.run_epsilon),
        delta(p.run_delta),
    ];
    match &p.outcome {
        Ok(r) => {
            v.push("ok".into());
            for s in [
                r.aggregate().mean,
                r.aggregate().sd,
                r.private_learner.mean,
                r.private_learner.sd,
                r.local.mean,
                r.improved.mean,
            ] {
                v.push(num(s));
            }
        }
        Err(why) => {
            v.push(format!("refused: {why}"));
            v.extend(std::iter::repeat_n(String::new(), 6));
        }
    }
    v
}

const MECHANISM_SHAPES: [Shape; 4] = [Shape::Circle, Shape::Square, Shape::Triangle, Shape::Ring];

/// Every mechanism's private aggregate at equal ε on one dataset.
pub fn mechanism_panel(title: &str, points: &[MechanismPoint], local: f64) -> Panel {
    let mut labels: Vec<(String, usize)> = Vec::new();
    for p in points {
        if !labels.iter().any(|(l, _)| *l == p.label) {
            labels.push((p.label.clone(), p.style));
        }
    }
    let mut series: Vec<Series> = labels
        .iter()
        .map(|(label, style)| {
            let pts: Vec<(f64, f64, f64)> = points
                .iter()
                .filter(|p| p.label == *label)
                .filter_map(|p| {
                    p.outcome
                        .as_ref()
                        .ok()
                        .map(|r| (p.epsilon, r.aggregate().mean, r.aggregate().sd))
                })
                .collect();
            let refused = points
                .iter()
                .filter(|p| p.label == *label && p.outcome.is_err())
                .count();
            let name = if pts.is_empty() {
                format!("{label}: refused at every ε")
            } else if refused > 0 {
                format!("{label} (refused at {refused} ε)")
            } else {
                label.clone()
            };
            Series {
                name,
                points: pts,
                // Past the palette, colours repeat: shift the shape so no two styles coincide.
                mark: Mark::Points(
                    MECHANISM_SHAPES[(style + style / PALETTE.len()) % MECHANISM_SHAPES.len()],
                ),
                colour: PALETTE[style % PALETTE.len()],
            }
        })
        .collect();
    series.push(level(
        format!("local only ({local:.3})"),
        local,
        Line::DashDot,
        PALETTE[7],
    ));
    let xs: Vec<f64> = points.iter().map(|p| p.epsilon).collect();
    let hi = xs.iter().copied().fold(0.0, f64::max);
    Panel {
        title: title.to_owned(),
        x_label: "privacy parameter ε (replace-one, δ = 1e-5 where used)".into(),
        y_label: "private aggregate test accuracy".into(),
        x_range: (0.0, hi * 1.08),
        y_range: (0.0, 1.05),
        series,
        dodge: 0.008,
    }
}

/// `experiment learners`: every learner's test accuracy (mean ± sd over trials) against ε on one
/// dataset and training size; the non-private learner as a reference line.
pub fn learners_panel(data: &str, size: &str, cells: &[super::learners::Cell]) -> Panel {
    use super::learners::LEARNERS;
    let here: Vec<&super::learners::Cell> = cells
        .iter()
        .filter(|c| c.data == data && c.size == size && c.trials > 0)
        .collect();
    let n = here.first().map_or(0, |c| c.n);
    let mut series = Vec::new();
    for (k, l) in LEARNERS.iter().enumerate() {
        let pts: Vec<(f64, f64, f64)> = here
            .iter()
            .filter(|c| c.learner == k)
            .map(|c| (c.epsilon, c.accuracy.mean, c.accuracy.sd))
            .collect();
        if k + 1 == LEARNERS.len() {
            let y = pts.first().map_or(f64::NAN, |p| p.1);
            series.push(level(
                format!("{} ({y:.3})", l.label),
                y,
                Line::Dashed,
                PALETTE[7],
            ));
        } else {
            series.push(Series {
                name: l.label.to_owned(),
                points: pts,
                mark: Mark::Points(MECHANISM_SHAPES[k % MECHANISM_SHAPES.len()]),
                colour: PALETTE[k % PALETTE.len()],
            });
        }
    }
    let hi = here.iter().map(|c| c.epsilon).fold(0.0, f64::max);
    Panel {
        title: format!("{data}, {size} ({n} training rows)"),
        x_label: "privacy parameter ε (replace-one; DP-SGD add/remove-one)".into(),
        y_label: "test accuracy of one private learner".into(),
        x_range: (0.0, hi * 1.08),
        y_range: (0.3, 1.02),
        series,
        dodge: 0.006,
    }
}

/// Puts panels side by side.
pub fn figure(name: &str, panels: Vec<Panel>, panel_width: u32) -> Figure {
    Figure {
        name: name.to_owned(),
        panels,
        panel_width,
        height: 620,
    }
}

#[cfg(test)]
mod tests;
