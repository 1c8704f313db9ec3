//! The experiments' tables, built from per-ε [`Row`]s: the paper's numbers beside ours
//! (`paper_vs_ours.csv`), Table 2 (`table2_improved.csv`) and the Markdown table of
//! `experiment variants`; and from the cells of `experiment learners`, `learners.csv` and
//! `learners.md`.
//!
//! A new claim of the paper to check goes into [`paper_vs_ours`] (its number into
//! [`figures::paper`]).

use super::figures::{self, Row, delta, eps, num, paper};
use super::learners::{Cell, LEARNERS};
use super::setups::Data;
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::util::stats::Summary;

/// The header of `paper_vs_ours.csv`.
pub(super) const PAPER_VS_OURS_HEADER: [&str; 3] = ["quantity", "paper", "ours"];

/// The header of `table2_improved.csv`.
pub(super) const TABLE2_HEADER: [&str; 8] = [
    "epsilon",
    "paper",
    "ours_mean",
    "ours_sd",
    "ours_min",
    "ours_max",
    "orgs",
    "trials",
];

/// The smallest ε of the grid from which the aggregate's mean beats local-only's at every larger ε.
pub(super) fn threshold(rows: &[Row]) -> Option<f64> {
    final_run_start(rows, |r| r.aggregate().mean > r.local.mean)
}

/// The smallest ε of the grid from which `holds` is true at every larger ε.
fn final_run_start(rows: &[Row], holds: fn(&Row) -> bool) -> Option<f64> {
    let mut best = None;
    for r in rows.iter().rev() {
        if holds(r) {
            best = Some(r.epsilon);
        } else {
            break;
        }
    }
    best
}

/// The row of `rows` at ε = `e` (up to rounding of the grid).
pub(super) fn at_epsilon(rows: &[Row], e: f64) -> Option<&Row> {
    rows.iter().find(|r| (r.epsilon - e).abs() < 1e-9)
}

/// Lines of `paper_vs_ours.csv` (quantity, paper, ours) for the sweeps of Fig. 3–5.
pub(super) fn paper_vs_ours(sweeps: &[(Data, Vec<Row>)]) -> Vec<Vec<String>> {
    let mut cmp: Vec<Vec<String>> = Vec::new();
    for (data, rows) in sweeps {
        match data {
            Data::Synthetic => cmp.extend(synthetic_claims(rows)),
            Data::Real(b) => cmp.extend(real_claims(*b, rows)),
        }
    }
    cmp
}

/// A quantity of a [`Row`] that [`figures::overall`] averages over ε.
type Quantity = fn(&Row) -> Summary;

fn line(quantity: String, paper: String, ours: String) -> Vec<String> {
    vec![quantity, paper, ours]
}

/// §5.1's levels, Table 2's counts and Fig. 3's claim at the smallest ε.
fn synthetic_claims(rows: &[Row]) -> Vec<Vec<String>> {
    let levels: [(&str, f64, Quantity); 3] = [
        (
            "centralised accuracy (all 5,000 points)",
            paper::SYNTHETIC_CENTRALISED,
            |r| r.centralised,
        ),
        ("local-only mean accuracy", paper::SYNTHETIC_LOCAL, |r| {
            r.local
        }),
        (
            "non-private exchange mean accuracy",
            paper::SYNTHETIC_NONPRIVATE,
            |r| r.nonprivate,
        ),
    ];
    let mut cmp: Vec<Vec<String>> = levels
        .into_iter()
        .map(|(what, theirs, f)| {
            line(
                format!("synthetic: {what}"),
                num(theirs),
                num(figures::overall(rows, f)),
            )
        })
        .collect();
    for &(e, count) in &paper::TABLE2 {
        if let Some(r) = at_epsilon(rows, e) {
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
        let beats = if r.aggregate().mean > r.local.mean {
            "yes"
        } else {
            "no"
        };
        cmp.push(line(
            format!(
                "synthetic: aggregate mean beats local-only at ε = {}",
                eps(r.epsilon)
            ),
            "yes".into(),
            format!("{beats} ({:.3} vs {:.3})", r.aggregate().mean, r.local.mean),
        ));
    }
    cmp
}

/// §5.2's claims for a real dataset: from which ε the aggregate wins, and our baselines.
fn real_claims(b: Bundled, rows: &[Row]) -> Vec<Vec<String>> {
    let (paper_from, claim, ours) = match b {
        Bundled::BreastCancer => (
            "2.5",
            "aggregate mean beats local-only from ε =",
            threshold(rows),
        ),
        Bundled::Diabetes => (
            "0.3",
            "aggregate mean ≥ local-only from ε =",
            final_run_start(rows, |r| r.aggregate().mean >= r.local.mean),
        ),
    };
    let mut cmp = vec![line(
        format!("{}: {claim}", b.name()),
        paper_from.into(),
        ours.map_or_else(|| "never".into(), eps),
    )];
    if b == Bundled::BreastCancer {
        let below: Vec<&Row> = rows.iter().filter(|r| r.epsilon < 1.5).collect();
        let beats = below
            .iter()
            .filter(|r| r.aggregate().mean > r.local.mean)
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
        num(figures::overall(rows, |r| r.centralised)),
    ));
    cmp.push(line(
        format!(
            "{}: local-only mean accuracy (paper: in Fig. only)",
            b.name()
        ),
        "—".into(),
        num(figures::overall(rows, |r| r.local)),
    ));
    cmp
}

/// Lines of `table2_improved.csv`: Table 2's counts beside ours on the synthetic sweep.
pub(super) fn table2(synthetic: &[Row], trials: usize) -> Vec<Vec<String>> {
    paper::TABLE2
        .iter()
        .map(|&(e, count)| {
            let r = at_epsilon(synthetic, e);
            let cell = |f: fn(&Row) -> f64| r.map_or_else(|| "NaN".into(), |r| num(f(r)));
            vec![
                eps(e),
                num(count),
                cell(|r| r.improved.mean),
                cell(|r| r.improved.sd),
                cell(|r| r.improved_min),
                cell(|r| r.improved_max),
                "100".into(),
                trials.to_string(),
            ]
        })
        .collect()
}

/// The title and header lines of one dataset's Markdown table in `variants.md`.
pub(super) fn variants_head(data: Data, trials: usize, seed: u64, shown: &[f64]) -> [String; 3] {
    [
        format!(
            "\n**{}** ({} trials, seed {}; aggregate and improved organisations at ε = {})\n",
            data.title(),
            trials,
            seed,
            shown.iter().map(|e| eps(*e)).collect::<Vec<_>>().join(", ")
        ),
        "| variant | centralised | local only | non-private exchange | aggregate | improved | aggregate > local from ε | what it changes |".into(),
        "|---|---|---|---|---|---|---|---|".into(),
    ]
}

/// One line of `variants.md`: a variant's baselines, and its aggregate at the `shown` ε.
pub(super) fn variants_line(name: &str, what: &str, rows: &[Row], shown: &[f64]) -> String {
    let at: Vec<&Row> = shown.iter().filter_map(|e| at_epsilon(rows, *e)).collect();
    let joined = |f: fn(&Row) -> String| at.iter().map(|r| f(r)).collect::<Vec<_>>().join(" / ");
    format!(
        "| {} | {:.3} | {:.3} | {:.3} | {} | {} | {} | {} |",
        name,
        figures::overall(rows, |r| r.centralised),
        figures::overall(rows, |r| r.local),
        figures::overall(rows, |r| r.nonprivate),
        joined(|r| format!("{:.3}", r.aggregate().mean)),
        joined(|r| format!("{:.1}", r.improved.mean)),
        threshold(rows).map_or_else(|| "never".into(), eps),
        what
    )
}

/// The header of `learners.csv`.
pub(super) const LEARNERS_HEADER: [&str; 13] = [
    "dataset",
    "size",
    "n",
    "learner",
    "delta",
    "neighbours",
    "epsilon",
    "lambda_mean",
    "trials",
    "accuracy_mean",
    "accuracy_sd",
    "accuracy_se",
    "status",
];

/// One line of `learners.csv`.
pub(super) fn learners_line(c: &Cell) -> Vec<String> {
    let l = &LEARNERS[c.learner];
    vec![
        c.data.to_owned(),
        c.size.to_owned(),
        c.n.to_string(),
        l.label.to_owned(),
        delta(l.delta),
        l.neighbours(),
        eps(c.epsilon),
        format!("{:.6}", c.lambda),
        c.trials.to_string(),
        num(c.accuracy.mean),
        num(c.accuracy.sd),
        num(c.se()),
        c.refused
            .clone()
            .map_or_else(|| "ok".into(), |e| format!("refused: {e}")),
    ]
}

/// `learners.md`: per dataset and size, one line per learner with mean ± standard error at each ε.
pub(super) fn learners_markdown(
    cells: &[Cell],
    epsilons: &[f64],
    trials: usize,
    seed: u64,
) -> String {
    let mut out = format!(
        "Individual private learners: test accuracy, mean ± standard error over {trials} trials (seed {seed}); λ = auto unless stated; δ = 1e-5 where used.\n"
    );
    let mut keys: Vec<(&str, &str, usize)> = Vec::new();
    for c in cells {
        if !keys.iter().any(|k| k.0 == c.data && k.1 == c.size) {
            keys.push((c.data, c.size, c.n));
        }
    }
    for (data, size, n) in keys {
        out.push_str(&format!(
            "\n**{data}, {size} ({n} training rows)**\n\n| learner |"
        ));
        for e in epsilons {
            out.push_str(&format!(" ε = {} |", eps(*e)));
        }
        out.push_str(&format!("\n|---|{}\n", "---|".repeat(epsilons.len())));
        for (k, l) in LEARNERS.iter().enumerate() {
            out.push_str(&format!("| {} |", l.label));
            for e in epsilons {
                let c = cells.iter().find(|c| {
                    c.data == data && c.size == size && c.learner == k && c.epsilon == *e
                });
                let text = match c {
                    Some(c) if c.trials > 0 => {
                        format!("{:.3} ± {:.3}", c.accuracy.mean, c.se())
                    }
                    _ => "refused".into(),
                };
                out.push_str(&format!(" {text} |"));
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::simulation::{PAPER, PerCombiner};

    #[test]
    fn threshold_is_the_start_of_the_final_winning_run() {
        let row = |e: f64, agg: f64| {
            let s = |m: f64| Summary { mean: m, sd: 0.0 };
            Row {
                epsilon: e,
                combiners: PerCombiner(vec![(PAPER, s(agg))]),
                private_learner: s(0.5),
                local: s(0.6),
                nonprivate: s(0.9),
                centralised: s(0.9),
                improved: s(1.0),
                improved_min: 0.0,
                improved_max: 2.0,
            }
        };
        let rows = vec![row(0.5, 0.7), row(1.0, 0.5), row(2.0, 0.7), row(3.0, 0.8)];
        assert_eq!(threshold(&rows), Some(2.0));
        assert_eq!(threshold(&rows[..2]), None);
    }
}
