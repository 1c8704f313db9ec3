//! `experiment variants`: the investigation of docs/experiments/paper.md — the paper's protocol with one
//! setting changed at a time, on the datasets where the setting applies.
//!
//! A new variant is a new [`Variant`] in [`VARIANTS`]: a name, what it changes, the datasets it
//! applies to and how it changes the paper's [`Setup`]. It writes `variants.csv` (the sweep
//! columns of Fig. 3–5 per dataset and variant) and `variants.md` (printed too).

use super::args::VariantsArgs;
use super::figures::{self, Row};
use super::harness::{create_out, progress_bar, simulate, write};
use super::setups::{Data, Normalisation, Points, Setup};
use super::tables;
use anyhow::Result;
use dpagg_shared::cli::Out;
use dpagg_shared::data::bundled::Bundled;
use indicatif::ProgressBar;
use std::io::Write as _;
use std::time::Instant;

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

/// The ε at which `variants.md` shows the aggregate and the improved organisations.
fn shown_epsilons(data: Data) -> &'static [f64] {
    match data {
        Data::Synthetic => &[0.1, 0.9, 1.9],
        Data::Real(_) => &[0.3, 1.5, 2.5],
    }
}

/// Runs `experiment variants`.
pub(super) fn run(args: VariantsArgs, stdout: &mut Out) -> Result<()> {
    let start = Instant::now();
    let out = &args.out;
    create_out(out)?;
    let bar = progress_bar(None)?;
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut table: Vec<String> = Vec::new();
    for data in Data::ALL {
        let shown = shown_epsilons(data);
        table.extend(tables::variants_head(data, args.trials, args.seed, shown));
        for v in VARIANTS.iter().filter(|v| v.data.contains(&data)) {
            let (csv_lines, rows) = run_variant(v, data, &args, &bar)?;
            lines.extend(csv_lines);
            table.push(tables::variants_line(v.name, v.what, &rows, shown));
        }
    }
    bar.finish_and_clear();
    let sweep = figures::sweep_header();
    let mut header = vec!["dataset", "variant"];
    header.extend(sweep.iter().map(String::as_str));
    write(out, "variants.csv", &figures::csv_text(&header, &lines)?)?;
    let md = table.join("\n") + "\n";
    write(out, "variants.md", md.as_bytes())?;
    writeln!(stdout, "{md}")?;
    writeln!(
        stdout,
        "wrote {} and {} in {:.1} s",
        out.join("variants.csv").display(),
        out.join("variants.md").display(),
        start.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// Runs one variant on one dataset: its `variants.csv` lines and its per-ε rows.
fn run_variant(
    v: &Variant,
    data: Data,
    args: &VariantsArgs,
    bar: &ProgressBar,
) -> Result<(Vec<Vec<String>>, Vec<Row>)> {
    let mut setup = Setup::paper(args.trials, args.seed);
    (v.apply)(&mut setup);
    bar.set_message(format!("{}: {}", data.name(), v.name));
    let config = setup.sweep(data);
    let runs = simulate(&config, bar).map_err(anyhow::Error::msg)?;
    let rows = figures::rows(&runs);
    let lines = rows
        .iter()
        .map(|r| {
            let mut l = vec![data.name().to_owned(), v.name.to_owned()];
            l.extend(figures::sweep_line(r, config.orgs, config.trials));
            l
        })
        .collect();
    Ok((lines, rows))
}
