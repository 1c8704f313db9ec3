//! `experiment paper`: the orchestration of the reproduction of Minami et al. 2015, §5, one
//! function per output.
//!
//! In order: the sweeps of Fig. 3–5 (objective perturbation over each dataset's ε grid, with
//! their raw runs), Table 2, Fig. 7 (the aggregators, from the same sweeps), Fig. 6 (every
//! mechanism, [`super::mechanisms`]) and `paper_vs_ours.csv` ([`super::tables`]), which is also
//! printed. A new output of `experiment paper` is a new `write_…` function called from [`run`].

use super::args::PaperArgs;
use super::figures::{self, Row, paper};
use super::harness::{TrialCache, create_out, progress_bar, write, write_figure};
use super::mechanisms::mechanism_points;
use super::setups::{Data, Setup};
use super::tables;
use anyhow::Result;
use dpagg_shared::cli::Out;
use dpagg_shared::simulation::runs_csv;
use indicatif::ProgressBar;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

/// The file stems of Fig. 3, 4 and 5, in the order of [`Data::ALL`].
const SWEEP_STEMS: [&str; 3] = ["fig3_synthetic", "fig4_breast_cancer", "fig5_diabetes"];

/// Runs `experiment paper`.
pub(super) fn run(args: PaperArgs, stdout: &mut Out) -> Result<()> {
    let start = Instant::now();
    let setup = args.setup();
    let out = &args.out;
    create_out(out)?;
    let bar = progress_bar(None)?;
    // Each dataset's trials are prepared once, for its sweep and every mechanism of Fig. 6.
    let mut cache = TrialCache::default();
    let mut sweeps: Vec<(Data, Vec<Row>)> = Vec::new();
    for (data, stem) in Data::ALL.into_iter().zip(SWEEP_STEMS) {
        let rows = write_sweep(out, &setup, data, stem, &mut cache, &bar)?;
        sweeps.push((data, rows));
    }
    write(
        out,
        "table2_improved.csv",
        &figures::csv_text(
            &tables::TABLE2_HEADER,
            &tables::table2(&sweeps[0].1, setup.trials),
        )?,
    )?;
    write_fig7(out, &sweeps)?;
    if !args.skip_mechanisms {
        write_fig6(out, &setup, &sweeps, &mut cache, &bar)?;
    }
    bar.finish_and_clear();
    let cmp = tables::paper_vs_ours(&sweeps);
    write(
        out,
        "paper_vs_ours.csv",
        &figures::csv_text(&tables::PAPER_VS_OURS_HEADER, &cmp)?,
    )?;
    print_paper_vs_ours(stdout, &setup, &cmp)?;
    writeln!(
        stdout,
        "\nwrote figures, tables and runs to {} in {:.1} s",
        out.display(),
        start.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// Fig. 3, 4 or 5: runs the sweep on `data`, writes its runs, its CSV and its figure, and
/// returns its per-ε rows.
fn write_sweep(
    out: &Path,
    setup: &Setup,
    data: Data,
    stem: &str,
    cache: &mut TrialCache,
    bar: &ProgressBar,
) -> Result<Vec<Row>> {
    bar.set_message(format!("{stem}: objective perturbation"));
    let config = setup.sweep(data);
    let runs = cache.simulate(&config, bar).map_err(anyhow::Error::msg)?;
    write(out, &format!("runs_{}.csv", data.name()), &runs_csv(&runs)?)?;
    let rows = figures::rows(&runs);
    let header = figures::sweep_header();
    let sweep_header: Vec<&str> = header.iter().map(String::as_str).collect();
    let lines: Vec<Vec<String>> = rows
        .iter()
        .map(|r| figures::sweep_line(r, config.orgs, config.trials))
        .collect();
    write(
        out,
        &format!("{stem}.csv"),
        &figures::csv_text(&sweep_header, &lines)?,
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
    Ok(rows)
}

/// Fig. 7: mirror averaging against the other aggregators, from the sweeps of Fig. 3–5.
fn write_fig7(out: &Path, sweeps: &[(Data, Vec<Row>)]) -> Result<()> {
    let mut agg_lines = Vec::new();
    let mut agg_panels = Vec::new();
    for (data, rows) in sweeps {
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
    )
}

/// Fig. 6: every mechanism at equal ε on each dataset, against that dataset's local-only level.
fn write_fig6(
    out: &Path,
    setup: &Setup,
    sweeps: &[(Data, Vec<Row>)],
    cache: &mut TrialCache,
    bar: &ProgressBar,
) -> Result<()> {
    let mut lines = Vec::new();
    let mut panels = Vec::new();
    for (data, rows) in sweeps {
        let points = mechanism_points(setup, *data, cache, bar);
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
    )
}

/// Prints the setup and the paper's numbers beside ours.
fn print_paper_vs_ours(
    stdout: &mut Out,
    setup: &Setup,
    cmp: &[Vec<String>],
) -> std::io::Result<()> {
    writeln!(
        stdout,
        "Reproduction of Minami et al. 2015, §5: {} trials, seed {}, λ = {}{}, {} normalisation, {} synthetic points\n",
        setup.trials,
        setup.seed,
        setup.lambda,
        setup
            .local_lambda
            .map_or_else(String::new, |l| format!(" (local {l})")),
        setup.normalisation.name(),
        setup.points.name()
    )?;
    writeln!(stdout, "{:<72} {:>10} {:>22}", "quantity", "paper", "ours")?;
    for l in cmp {
        writeln!(stdout, "{:<72} {:>10} {:>22}", l[0], l[1], l[2])?;
    }
    Ok(())
}
