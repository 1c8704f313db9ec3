//! Writing `model.json` (the final model of a run, self-contained; the file and how it is
//! applied are defined in `dpagg_shared::aggregate::model_file`) and `dpagg-aggregator
//! predict`, which applies it to new rows.
//!
//! `predict` reads the model (checking its schemas against their fingerprints), maps each row
//! of a CSV exactly as `run` mapped its own rows (the same loader) and writes, per row, the predicted label, P(positive) = σ(⟨θ, x⟩) and the margin ⟨θ, x⟩. A
//! margin of 0 predicts the positive label, as every accuracy in the report does, so
//! `predict` on the report's test file reproduces its test accuracy exactly.
//! `docs/own-data.md` shows the same computation in a few lines of Python with numpy.

use crate::run::report::{FINAL_PRIVACY, Report};
use anyhow::{Context, Result, bail};
use dpagg_shared::aggregate::model_file::{FORMAT, HOW, ModelFile};
use dpagg_shared::cli::Out;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::util::files::atomic_write;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// The model of a run's report, with the schema its rows were mapped by (and the learners'
/// schema, the second block, when there is one).
pub fn model_of(report: &Report, schema: &Schema, learners: Option<&Schema>) -> ModelFile {
    let mut columns = schema.columns();
    if let Some(l) = learners {
        columns.extend(l.columns().iter().map(|c| format!("agreed map: {c}")));
    }
    ModelFile {
        format: FORMAT.into(),
        candidate: report.final_model.chosen.into(),
        columns,
        weights: report.final_model.weights.clone(),
        label: schema.label.clone(),
        schema: schema.clone(),
        schema_fingerprint: schema.fingerprint(),
        learner_schema: learners.cloned(),
        learner_schema_fingerprint: learners.map(Schema::fingerprint),
        test_accuracy: report.final_model.test_accuracy,
        generated_at: report.generated_at.clone(),
        predict: HOW.into(),
        privacy: FINAL_PRIVACY.into(),
    }
}

/// `dpagg-aggregator predict`: scores every row of `data` with the model at `model_path`,
/// writing `row,predicted,probability,margin` to `out_path` (atomically) or to stdout.
pub fn predict(
    model_path: &Path,
    data: &Path,
    out_path: Option<&Path>,
    out: &mut Out,
) -> Result<()> {
    let loaded = ModelFile::load(model_path)?;
    if let Some(p) = out_path {
        check_writable(p)?;
    }
    let (rows, labels) = loaded.rows_of_csv(data)?;
    let mut csv = String::from("row,predicted,probability,margin\n");
    let mut right = 0usize;
    for (i, score) in loaded.score(&rows).iter().enumerate() {
        let label = loaded.label_of(score);
        let _ = writeln!(
            csv,
            "{},{},{},{}",
            i + 1,
            quote(label),
            score.probability,
            score.margin
        );
        if let Some(l) = labels.as_ref().filter(|l| l[i] != 0.0) {
            right += usize::from((l[i] > 0.0) == score.positive);
        }
    }
    let model = &loaded.file;
    match out_path {
        None => out.write_all(csv.as_bytes())?,
        Some(p) => {
            atomic_write(p, csv.as_bytes())
                .with_context(|| format!("{}: cannot write", p.display()))?;
            write!(out, "wrote {} prediction(s) to {}", rows.len(), p.display())?;
            match &labels {
                Some(l) => write_accuracy(out, l, right, model)?,
                None => writeln!(out)?,
            }
        }
    }
    Ok(())
}

/// "; accuracy … against column …" over the labelled rows, and how many rows had no usable
/// label (blank, or not one of the two values: scored, left out of the accuracy).
fn write_accuracy(out: &mut Out, labels: &[f64], right: usize, model: &ModelFile) -> Result<()> {
    let labelled = labels.iter().filter(|&&l| l != 0.0).count();
    let left_out = labels.len() - labelled;
    if labelled == 0 {
        writeln!(
            out,
            "; no row has a label `{}` or `{}` in column `{}`: no accuracy",
            model.label.positive, model.label.negative, model.label.column
        )?;
        return Ok(());
    }
    write!(
        out,
        "; accuracy {} against column `{}` (model `{}`: {} on its test rows)",
        right as f64 / labelled as f64,
        model.label.column,
        model.candidate,
        model.test_accuracy
    )?;
    if left_out > 0 {
        write!(
            out,
            "; {left_out} row(s) with a blank or unknown label scored but left out of the accuracy"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// Fails early when `path`'s folder does not exist (not after scoring every row).
fn check_writable(path: &Path) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = dir
        && !d.is_dir()
    {
        bail!(
            "{}: the folder {} does not exist",
            path.display(),
            d.display()
        );
    }
    Ok(())
}

/// A CSV field, quoted when it must be.
fn quote(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_owned()
    }
}
