//! The node's commands on a data file, nothing released: `check` (does the file fit the schema,
//! and does the schema set a trap for it?) and `schema init` (draft a schema from the file).
//! Part of the `dpagg-node` binary (errors are `anyhow`, output goes through [`Out`]).

use anyhow::{Context, Result, bail};
use dpagg_shared::cli::Out;
use dpagg_shared::data::csv::LoadReport;
use dpagg_shared::data::csv::load_csv_for_check;
use dpagg_shared::data::csv::rows::IMPLAUSIBLE;
use dpagg_shared::data::diagnose::findings;
use dpagg_shared::data::dictionary::Dictionary;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::data::schema_init::{Draft, draft_with};
use dpagg_shared::util::files::atomic_write;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `dpagg-node schema …`.
#[derive(Debug, clap::Subcommand)]
pub enum SchemaCommand {
    /// Draft a commented public schema from a CSV file: every column, the label's values, the
    /// missing markers seen, bounds marked `observed` that must be replaced by public ones, and
    /// commented transforms (`log1p`, `typical = 0.0`) under mostly-zero or skewed columns.
    Init {
        /// The CSV file (header row first).
        #[arg(long)]
        data: PathBuf,
        /// The column holding the outcome (exactly two values).
        #[arg(long)]
        label: String,
        /// The label value that maps to +1 [default: the yes-like or the rarer value].
        #[arg(long)]
        positive: Option<String>,
        /// Where to write the schema [default: DATA's name with .schema.toml].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Overwrite OUT if it exists.
        #[arg(long)]
        force: bool,
        /// A data dictionary (CSV: name, lo, hi, optionally transform, unit): the public bounds
        /// of the columns it covers; the others stay observed (and refused).
        #[arg(long, value_name = "DICTIONARY")]
        bounds: Option<PathBuf>,
    },
}

/// Runs `schema init`.
pub fn schema(command: SchemaCommand, out: &mut Out) -> Result<()> {
    let SchemaCommand::Init {
        data,
        label,
        positive,
        out: target,
        force,
        bounds,
    } = command;
    let target = target.unwrap_or_else(|| data.with_extension("schema.toml"));
    if target.exists() && !force {
        bail!(
            "{}: exists; give another --out or --force to overwrite it",
            target.display()
        );
    }
    let origin = data.display().to_string();
    let file = std::fs::File::open(&data).with_context(|| format!("{origin}: cannot read"))?;
    let name = data
        .file_stem()
        .map_or_else(|| "data".to_owned(), |s| s.to_string_lossy().into_owned());
    let dictionary = bounds.as_deref().map(read_dictionary).transpose()?;
    let d = draft_with(
        file,
        &origin,
        &label,
        positive.as_deref(),
        &name,
        dictionary.as_ref(),
    )?;
    atomic_write(&target, d.toml.as_bytes())
        .with_context(|| format!("{}: cannot write", target.display()))?;
    writeln!(
        out,
        "wrote {}: {} numeric and {} categorical feature(s) from {} rows of {} (separator {})",
        target.display(),
        d.features.len(),
        d.categorical.len(),
        d.rows,
        origin,
        d.separator.name()
    )?;
    if let Some(dict) = &dictionary {
        print_dictionary(&d, dict, &origin, out)?;
    }
    print_columns(&d, &label, out)?;
    print_observed(&d, out)?;
    let accept = if d.features.iter().any(|f| f.proposal.is_some()) {
        ", uncomment the proposals that fit what each column measures"
    } else {
        ""
    };
    writeln!(
        out,
        "next: replace every `bounds = \"observed\"` feature's lo and hi by public bounds and \
         delete that line{accept}, then: dpagg-node check --data {} --schema {} --strict",
        data.display(),
        target.display()
    )?;
    Ok(())
}

/// Reads `--bounds`'s data dictionary.
fn read_dictionary(path: &Path) -> Result<Dictionary> {
    let origin = path.display().to_string();
    let f = std::fs::File::open(path).with_context(|| format!("{origin}: cannot read"))?;
    Ok(Dictionary::read(f, &origin)?)
}

/// How many features the dictionary covered, and its entries the file does not have.
fn print_dictionary(d: &Draft, dict: &Dictionary, origin: &str, out: &mut Out) -> Result<()> {
    let covered = d
        .features
        .iter()
        .filter(|f| dict.entries.contains_key(&f.name))
        .count();
    writeln!(
        out,
        "public bounds from {} for {covered} of {} feature(s); the other {} stay observed",
        dict.origin,
        d.features.len(),
        d.features.len() - covered
    )?;
    if !d.unused.is_empty() {
        writeln!(
            out,
            "in the dictionary but not a numeric column of {origin}: {}",
            d.unused.join(", ")
        )?;
    }
    Ok(())
}

/// The label's classes, the missing markers seen and the columns left out.
fn print_columns(d: &Draft, label: &str, out: &mut Out) -> Result<()> {
    let [(pos, np), (neg, nn)] = &d.classes;
    writeln!(
        out,
        "label `{label}`: {pos:?} (+1) {np} rows, {neg:?} (−1) {nn} rows"
    )?;
    if !d.markers.is_empty() {
        let m: Vec<String> = d.markers.iter().map(|m| format!("{m:?}")).collect();
        writeln!(out, "missing markers seen: {}", m.join(", "))?;
    }
    for c in &d.categorical {
        let listed: Vec<String> = c
            .categories
            .iter()
            .map(|(t, n)| {
                if c.public {
                    format!("{t:?}")
                } else {
                    format!("{t:?} {n}")
                }
            })
            .collect();
        let origin = if c.public {
            "public, from the dictionary"
        } else {
            "observed: confirm them"
        };
        writeln!(
            out,
            "categorical `{}` ({origin}): {}",
            c.name,
            listed.join(", ")
        )?;
    }
    for (name, strays) in &d.skipped {
        writeln!(
            out,
            "left out `{name}` (neither numbers nor a few categories): {} cell(s) are text, first on line {}: {:?}",
            strays.count,
            strays.first_line,
            strays.values.first().map_or("", String::as_str)
        )?;
    }
    Ok(())
}

/// The private part of `schema init`'s summary: each column's extremes and missing count, and
/// the proposals with the numbers behind them (the schema holds neither).
fn print_observed(d: &Draft, out: &mut Out) -> Result<()> {
    writeln!(
        out,
        "observed in this file (private; only printed here, never written to the schema):"
    )?;
    for f in &d.features {
        writeln!(
            out,
            "  {}: {} to {}{}",
            f.name,
            f.min,
            f.max,
            if f.missing > 0 {
                format!(", {} missing", f.missing)
            } else {
                String::new()
            }
        )?;
        if f.strays.count > 0 {
            writeln!(
                out,
                "  {}: {} cell(s) are not numbers, first on line {}: {:?}; proposed (commented) \
                 as its missing markers: {:?}",
                f.name, f.strays.count, f.strays.first_line, f.strays.values[0], f.strays.values
            )?;
        }
    }
    let proposed: Vec<_> = d
        .features
        .iter()
        .filter_map(|f| f.proposal.map(|p| (&f.name, p)))
        .collect();
    if !proposed.is_empty() {
        writeln!(
            out,
            "proposed for the data's shape (commented under the feature; uncomment to accept):"
        )?;
        for (name, p) in proposed {
            writeln!(out, "  {name}: {p}")?;
        }
    }
    Ok(())
}

/// Runs `check`: loads the file, prints what it found and every trap with its fix; with
/// `strict`, any trap is an error.
pub fn check(data: &Path, schema_path: &Path, strict: bool, out: &mut Out) -> Result<()> {
    let schema = Schema::load(schema_path)?;
    let (dataset, report) = load_csv_for_check(data, &schema)?;
    let positive = dataset.labels().iter().filter(|&&l| l > 0.0).count();
    writeln!(
        out,
        "{}: {} rows ({} `{}`, {} `{}`), {} columns after normalisation ({} map)",
        data.display(),
        report.rows,
        positive,
        schema.label.positive,
        dataset.len() - positive,
        schema.label.negative,
        schema.dim(),
        match schema.mode() {
            dpagg_shared::data::normalise::MapMode::Ball => "ball",
            dpagg_shared::data::normalise::MapMode::Paper => "paper",
        }
    )?;
    writeln!(
        out,
        "schema `{}` fingerprint {}",
        schema.name,
        schema.fingerprint()
    )?;
    writeln!(
        out,
        "max row norm {:.6} (the privacy proofs need ≤ 1); {} of {} rows projected onto the ball",
        dataset.max_row_norm(),
        report.projected,
        report.rows
    )?;
    writeln!(
        out,
        "rows alike: {:.2} (1 = every row the same point, 0 = rows centred on the origin)",
        report.alike
    )?;
    if !report.ignored.is_empty() {
        writeln!(
            out,
            "ignored {} column(s) not in the schema: {}",
            report.ignored.len(),
            report.ignored.join(", ")
        )?;
    }
    print_counts(&schema, &report, out)?;
    let findings: Vec<String> = findings(&schema, &report)
        .iter()
        .map(ToString::to_string)
        .collect();
    for f in &findings {
        writeln!(out, "warning: {f}")?;
    }
    if findings.is_empty() {
        writeln!(out, "no trap found")?;
    } else if strict {
        bail!(
            "{}: {} warning(s) (--strict)",
            schema_path.display(),
            findings.len()
        );
    }
    Ok(())
}

/// Per feature: values clipped, implausible and missing (counts only); per categorical
/// column: its missing cells once, and its unlisted ones with the first line and text.
fn print_counts(schema: &Schema, report: &LoadReport, out: &mut Out) -> Result<()> {
    if report.total_clipped() == 0 {
        writeln!(out, "no value outside the schema bounds")?;
    }
    for (feature, count) in report.clipped.iter().filter(|(_, c)| *c > 0) {
        writeln!(
            out,
            "clipped {count} value(s) of `{feature}` to its schema bounds"
        )?;
    }
    for (feature, count) in report.implausible.iter().filter(|(_, c)| *c > 0) {
        writeln!(
            out,
            "{count} implausible value(s) of `{feature}` (more than {IMPLAUSIBLE} widths of its \
             bounds outside them; clipped, counted apart)"
        )?;
    }
    let mut columns = std::collections::HashSet::new();
    for (f, (_, count)) in schema.features.iter().zip(&report.missing) {
        if *count > 0 && columns.insert(f.source_column()) {
            let feature = f.source_column();
            writeln!(
                out,
                "{count} missing value(s) of `{feature}` (mapped to its centre)"
            )?;
        }
    }
    for u in &report.unlisted {
        writeln!(
            out,
            "{} cell(s) of `{}` not among its categories, first {:?} on line {} (read as missing; \
             add the category to the schema if it is real, else fix the export)",
            u.count, u.column, u.first.1, u.first.0
        )?;
    }
    Ok(())
}
