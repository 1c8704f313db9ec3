//! `experiment lambda`: fits the constant C of a mechanism's `auto` rule λ = C√d / (n ε^{3/2})
//! by simulation, the way the objective- and output-perturbation rules were fitted
//! (`shared/src/privacy/mechanism/lambda.rs`), so that a rule can be re-derived and a new
//! mechanism calibrated instead of borrowing another's constant.
//!
//! **Grid.** Cells are (shape, n, d, ε): the three shapes of [`super::lambda_shapes`] ×
//! `--rows` (default 40, 100, 200, 500, 1,000, 2,000) × `--dims` (5, 10, 20, 31, intercept
//! included) × `--epsilons` (0.5, 1, 2, 5): 288 cells. In each of `--trials` trials a cell draws
//! fresh training rows and one noise seed, and the mechanism is released once per candidate C
//! (`--constants`) on those rows with that seed (common random numbers: the candidates are
//! compared on the same data and noise). Accuracy is on 4,000 test rows per (shape, d), drawn
//! once.
//!
//! **Score.** A candidate's loss in a cell is the best candidate's mean accuracy there minus its
//! own, in points; the fitted constant is the candidate with the smallest mean loss over the
//! cells. The table also gives the largest loss and the mean loss per n, because the best C of
//! a federation's small nodes and of a large hospital may differ. λ is clamped to
//! [`AUTO_MIN`, `AUTO_MAX`] as the `auto` rules are. Only public quantities enter λ; the
//! simulation is where the constant comes from, not any user's data (invariant 2).

use super::args::LambdaArgs;
use super::figures::csv_text;
use super::harness::{create_out, progress_bar, write};
use super::lambda_shapes::{Law, Shape};
use anyhow::{Context, Result, bail};
use dpagg_shared::cli::Out;
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::privacy::mechanism::lambda::{AUTO_MAX, AUTO_MIN};
use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};
use dpagg_shared::privacy::noise::NoiseSource;
use dpagg_shared::util::seed::{derive_seed, derived_rng};
use dpagg_shared::util::stats::Summary;
use rayon::prelude::*;
use std::io::Write as _;
use std::time::Instant;

/// Test rows per (shape, d).
const TEST_ROWS: usize = 4000;

/// Purposes of derived seeds (the first path element).
mod purpose {
    pub const DIRECTION: u64 = 20;
    pub const TEST: u64 = 21;
    pub const TRAIN: u64 = 22;
    pub const NOISE: u64 = 23;
}

/// One cell of the grid.
#[derive(Debug, Clone, Copy)]
struct Cell {
    shape: Shape,
    rows: usize,
    dim: usize,
    epsilon: f64,
    /// Index of its (shape, d) law and test set.
    law: usize,
}

/// λ of candidate `constant` in a cell, clamped as the `auto` rules are.
pub(super) fn lambda_of(constant: f64, rows: usize, dim: usize, epsilon: f64) -> f64 {
    (constant * (dim as f64).sqrt() / (rows as f64 * epsilon.powf(1.5))).clamp(AUTO_MIN, AUTO_MAX)
}

/// A candidate constant's losses against the best candidate of each cell, in accuracy points.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Score {
    pub(super) constant: f64,
    pub(super) mean_loss: f64,
    pub(super) max_loss: f64,
    /// Mean loss over the cells of each n of `--rows`, in that order.
    pub(super) by_rows: Vec<f64>,
}

/// Runs `experiment lambda`.
pub(super) fn run(args: LambdaArgs, stdout: &mut Out) -> Result<()> {
    let start = Instant::now();
    let kind = check(&args)?;
    create_out(&args.out)?;
    let (laws, tests) = laws_and_tests(&args);
    let cells = cells(&args);
    let jobs: Vec<(usize, usize)> = (0..cells.len())
        .flat_map(|c| (0..args.trials).map(move |t| (c, t)))
        .collect();
    let bar = progress_bar(Some(jobs.len() as u64))?;
    bar.set_message(format!("λ rule of {}", kind.name()));
    let accuracies: Vec<Vec<f64>> = jobs
        .par_iter()
        .map(|&(c, t)| {
            let cell = cells[c];
            let accs = trial(&args, kind, cell, c, t, &laws[cell.law], &tests[cell.law]);
            bar.inc(1);
            accs.with_context(|| {
                format!(
                    "{} at n = {}, d = {}, ε = {}, trial {t}",
                    cell.shape.name(),
                    cell.rows,
                    cell.dim,
                    cell.epsilon
                )
            })
        })
        .collect::<Result<_>>()?;
    bar.finish_and_clear();
    let means = cell_summaries(&cells, &accuracies, args.trials, args.constants.len());
    let cell_rows: Vec<usize> = cells.iter().map(|c| c.rows).collect();
    let scores = score(
        &means
            .iter()
            .map(|m| m.iter().map(|s| s.mean).collect())
            .collect::<Vec<_>>(),
        &cell_rows,
        &args.rows,
        &args.constants,
    );
    write_outputs(&args, kind, &cells, &means, &scores, stdout)?;
    writeln!(
        stdout,
        "\n{} cells × {} trials × {} constants in {:.1} s; wrote {}",
        cells.len(),
        args.trials,
        args.constants.len(),
        start.elapsed().as_secs_f64(),
        args.out.display()
    )?;
    Ok(())
}

/// Checks the arguments and the mechanism (at every ε) before any work.
fn check(args: &LambdaArgs) -> Result<MechanismKind> {
    let kind =
        MechanismKind::parse(&args.mechanism).map_err(|e| anyhow::anyhow!("--mechanism: {e}"))?;
    if args.constants.is_empty() || args.constants.iter().any(|c| !(c.is_finite() && *c > 0.0)) {
        bail!("--constants: every constant must be a positive number");
    }
    if args.rows.is_empty() || args.rows.iter().any(|&n| n < 2) {
        bail!("--rows: every row count must be at least 2");
    }
    if args.dims.is_empty() || args.dims.iter().any(|&d| d < 2) {
        bail!("--dims: every dimension must be at least 2 (a feature and the intercept)");
    }
    if args.trials == 0 {
        bail!("--trials: must be at least 1");
    }
    if args.epsilons.is_empty() {
        bail!("--epsilons: give at least one ε");
    }
    for &e in &args.epsilons {
        kind.build(e, args.delta, Lambda::Fixed(0.01))
            .with_context(|| {
                format!("--mechanism {} at ε = {e}, δ = {}", kind.name(), args.delta)
            })?;
    }
    Ok(kind)
}

/// One law (direction) and test set per (shape, d), in the order [`cells`] indexes them.
fn laws_and_tests(args: &LambdaArgs) -> (Vec<Law>, Vec<Dataset>) {
    let mut laws = Vec::new();
    let mut tests = Vec::new();
    for (s, shape) in Shape::ALL.into_iter().enumerate() {
        for &dim in &args.dims {
            let key = [s as u64, dim as u64];
            let law = Law::new(
                shape,
                dim,
                &mut derived_rng(args.seed, &[purpose::DIRECTION, key[0], key[1]]),
            );
            tests.push(law.draw(
                TEST_ROWS,
                &mut derived_rng(args.seed, &[purpose::TEST, key[0], key[1]]),
            ));
            laws.push(law);
        }
    }
    (laws, tests)
}

/// Every (shape, n, d, ε) of the grid.
fn cells(args: &LambdaArgs) -> Vec<Cell> {
    let mut out = Vec::new();
    for (s, shape) in Shape::ALL.into_iter().enumerate() {
        for (di, &dim) in args.dims.iter().enumerate() {
            for &rows in &args.rows {
                for &epsilon in &args.epsilons {
                    out.push(Cell {
                        shape,
                        rows,
                        dim,
                        epsilon,
                        law: s * args.dims.len() + di,
                    });
                }
            }
        }
    }
    out
}

/// One trial of one cell: the accuracy of the release at each candidate constant, on the same
/// training rows and noise seed.
fn trial(
    args: &LambdaArgs,
    kind: MechanismKind,
    cell: Cell,
    c: usize,
    t: usize,
    law: &Law,
    test: &Dataset,
) -> Result<Vec<f64>> {
    let path = [c as u64, t as u64];
    let train = law.draw(
        cell.rows,
        &mut derived_rng(args.seed, &[purpose::TRAIN, path[0], path[1]]),
    );
    let noise_seed = derive_seed(args.seed, &[purpose::NOISE, path[0], path[1]]);
    args.constants
        .iter()
        .map(|&constant| {
            let lambda = lambda_of(constant, cell.rows, cell.dim, cell.epsilon);
            let m = kind.build(cell.epsilon, args.delta, Lambda::Fixed(lambda))?;
            let release = m.release(&train, &mut NoiseSource::seeded(noise_seed))?;
            Ok(release.classifier.accuracy(test))
        })
        .collect()
}

/// Mean and sd of each (cell, constant) over the trials; `accuracies` is in job order (cell
/// major, then trial).
fn cell_summaries(
    cells: &[Cell],
    accuracies: &[Vec<f64>],
    trials: usize,
    constants: usize,
) -> Vec<Vec<Summary>> {
    (0..cells.len())
        .map(|c| {
            let runs = &accuracies[c * trials..(c + 1) * trials];
            (0..constants)
                .map(|k| Summary::of(&runs.iter().map(|r| r[k]).collect::<Vec<_>>()))
                .collect()
        })
        .collect()
}

/// The candidates' losses: `means[cell][k]` is candidate k's mean accuracy in a cell with
/// `cell_rows[cell]` rows; `rows` is the order of [`Score::by_rows`].
pub(super) fn score(
    means: &[Vec<f64>],
    cell_rows: &[usize],
    rows: &[usize],
    constants: &[f64],
) -> Vec<Score> {
    let losses: Vec<Vec<f64>> = means
        .iter()
        .map(|m| {
            let best = m.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            m.iter().map(|v| 100.0 * (best - v)).collect()
        })
        .collect();
    constants
        .iter()
        .enumerate()
        .map(|(k, &constant)| {
            let all: Vec<f64> = losses.iter().map(|l| l[k]).collect();
            let by_rows = rows
                .iter()
                .map(|&n| {
                    let of_n: Vec<f64> = losses
                        .iter()
                        .zip(cell_rows)
                        .filter(|(_, r)| **r == n)
                        .map(|(l, _)| l[k])
                        .collect();
                    Summary::of(&of_n).mean
                })
                .collect();
            Score {
                constant,
                mean_loss: Summary::of(&all).mean,
                max_loss: all.iter().copied().fold(0.0, f64::max),
                by_rows,
            }
        })
        .collect()
}

/// The candidate with the smallest mean loss (the first on ties).
pub(super) fn best(scores: &[Score]) -> Option<&Score> {
    scores
        .iter()
        .min_by(|a, b| a.mean_loss.total_cmp(&b.mean_loss))
}

/// `lambda_cells.csv`, `lambda_summary.csv` and `lambda.md` (printed too).
fn write_outputs(
    args: &LambdaArgs,
    kind: MechanismKind,
    cells: &[Cell],
    means: &[Vec<Summary>],
    scores: &[Score],
    stdout: &mut Out,
) -> Result<()> {
    let mut lines = Vec::new();
    for (cell, row) in cells.iter().zip(means) {
        let top = row.iter().map(|s| s.mean).fold(f64::NEG_INFINITY, f64::max);
        for (s, &constant) in row.iter().zip(&args.constants) {
            lines.push(vec![
                cell.shape.name().to_owned(),
                cell.rows.to_string(),
                cell.dim.to_string(),
                format!("{}", cell.epsilon),
                format!("{constant}"),
                format!(
                    "{:.6e}",
                    lambda_of(constant, cell.rows, cell.dim, cell.epsilon)
                ),
                format!("{:.4}", s.mean),
                format!("{:.4}", s.sd / (args.trials as f64).sqrt()),
                format!("{:.2}", 100.0 * (top - s.mean)),
            ]);
        }
    }
    let header = [
        "shape",
        "rows",
        "dim",
        "epsilon",
        "constant",
        "lambda",
        "accuracy",
        "se",
        "loss_points",
    ];
    write(&args.out, "lambda_cells.csv", &csv_text(&header, &lines)?)?;
    let mut summary_header = vec!["constant".to_owned(), "mean_loss".into(), "max_loss".into()];
    summary_header.extend(args.rows.iter().map(|n| format!("loss_n{n}")));
    let summary_lines: Vec<Vec<String>> = scores
        .iter()
        .map(|s| {
            let mut l = vec![
                format!("{}", s.constant),
                format!("{:.2}", s.mean_loss),
                format!("{:.2}", s.max_loss),
            ];
            l.extend(s.by_rows.iter().map(|v| format!("{v:.2}")));
            l
        })
        .collect();
    let h: Vec<&str> = summary_header.iter().map(String::as_str).collect();
    write(
        &args.out,
        "lambda_summary.csv",
        &csv_text(&h, &summary_lines)?,
    )?;
    let md = markdown(args, kind, cells.len(), scores);
    write(&args.out, "lambda.md", md.as_bytes())?;
    write!(stdout, "{md}")?;
    Ok(())
}

/// The summary as a Markdown table with the fitted constant.
fn markdown(args: &LambdaArgs, kind: MechanismKind, cells: usize, scores: &[Score]) -> String {
    let guarantee = if args.delta > 0.0 {
        format!("δ = {:e}", args.delta)
    } else {
        "ε-DP".to_owned()
    };
    let mut s = format!(
        "λ = C√d/(n ε^{{3/2}}) for {} ({guarantee}): {cells} cells, {} trials each, seed {}.\n\
         Loss: the best candidate's mean accuracy in a cell minus this one's, in points.\n\n",
        kind.name(),
        args.trials,
        args.seed
    );
    s.push_str("| C | mean loss | max loss |");
    for n in &args.rows {
        s.push_str(&format!(" n = {n} |"));
    }
    s.push_str("\n|---|---|---|");
    s.push_str(&"---|".repeat(args.rows.len()));
    s.push('\n');
    for sc in scores {
        s.push_str(&format!(
            "| {} | {:.2} | {:.2} |",
            sc.constant, sc.mean_loss, sc.max_loss
        ));
        for v in &sc.by_rows {
            s.push_str(&format!(" {v:.2} |"));
        }
        s.push('\n');
    }
    if let Some(b) = best(scores) {
        s.push_str(&format!(
            "\nfitted constant: C = {} (mean loss {:.2} points)\n",
            b.constant, b.mean_loss
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lambda_is_the_rule_clamped_like_auto() {
        assert!((lambda_of(8.0, 100, 9, 1.0) - 0.24).abs() < 1e-12);
        assert_eq!(lambda_of(8.0, 2, 31, 0.01), AUTO_MAX);
        assert_eq!(lambda_of(1e-6, 2000, 5, 5.0), AUTO_MIN);
    }

    /// Losses are against each cell's best candidate, the per-n means use only that n's cells,
    /// and the fitted constant minimises the mean loss, not the loss of one cell.
    #[test]
    fn the_score_is_the_mean_loss_against_each_cells_best() {
        let means = vec![
            vec![0.70, 0.72, 0.60], // n = 40: C = 2 best
            vec![0.80, 0.78, 0.79], // n = 40: C = 1 best
            vec![0.90, 0.91, 0.91], // n = 500
        ];
        let scores = score(&means, &[40, 40, 500], &[40, 500], &[1.0, 2.0, 4.0]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(scores[0].mean_loss, (2.0 + 0.0 + 1.0) / 3.0));
        assert!(close(scores[1].mean_loss, (0.0 + 2.0 + 0.0) / 3.0));
        assert!(close(scores[2].mean_loss, (12.0 + 1.0 + 0.0) / 3.0));
        assert!(close(scores[2].max_loss, 12.0));
        assert!(close(scores[0].by_rows[0], 1.0) && close(scores[0].by_rows[1], 1.0));
        assert_eq!(best(&scores).map(|s| s.constant), Some(2.0));
    }
}
