//! `model.json` — the final model, self-contained — and `dpagg-aggregator predict`, which
//! applies it to new rows (issue 21).
//!
//! A model is of no use if it cannot be applied: `model.json` holds the weights *and* the
//! complete map they expect — the public schema with every default written in (feature names
//! and order, bounds, transforms, centres, scales, missing markers, row scale, intercept
//! constant), the label's spelling, the candidate chosen, the schema's fingerprint and the
//! privacy statement. `predict` rebuilds the schema from the file, checks it against the
//! fingerprint, maps each row of a CSV exactly as `run` mapped its own rows (the same loader)
//! and writes, per row, the predicted label, P(positive) = σ(⟨θ, x⟩) and the margin ⟨θ, x⟩. A
//! margin of 0 predicts the positive label, as every accuracy in the report does, so
//! `predict` on the report's test file reproduces its test accuracy exactly.
//! `docs/own-data.md` shows the same computation in a few lines of Python with numpy.

use crate::run::report::{FINAL_PRIVACY, Report};
use anyhow::{Context, Result, bail};
use dpagg_shared::cli::Out;
use dpagg_shared::data::csv::load_rows;
use dpagg_shared::data::schema::{LabelSpec, Schema};
use dpagg_shared::learn::logistic::sigmoid;
use dpagg_shared::util::files::atomic_write;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// The `format` of a model file this version writes and reads.
pub const FORMAT: &str = "dpagg-model/1";

/// What `predict` says about the map, in `model.json`'s `predict` field.
const HOW: &str = "x = the schema's map of a raw row (features in `columns` order, intercept constant last), followed, when learner_schema is present, by learner_schema's map of the same row; margin = <weights, x>, P(positive) = 1/(1 + exp(-margin)); margin >= 0 predicts label.positive";

/// The contents of `model.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelFile {
    /// [`FORMAT`].
    pub format: String,
    /// The candidate chosen (`local`, `mirror-averaging`, …).
    pub candidate: String,
    /// The columns of x in order: the features, then `(intercept)` when the schema has one.
    pub columns: Vec<String>,
    /// θ, one weight per column.
    pub weights: Vec<f64>,
    /// The label column and its two values.
    pub label: LabelSpec,
    /// The public schema with every default written in: the complete map (with an agreed map,
    /// the own model's block: the map's centres and scales on every feature).
    pub schema: Schema,
    /// Its fingerprint (checked by `predict`).
    pub schema_fingerprint: String,
    /// With an agreed map that keeps a subspace: the learners' map (the schema with the agreed
    /// map applied), whose columns follow `schema`'s in `columns` and `weights`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_schema: Option<Schema>,
    /// Its fingerprint (checked by `predict`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_schema_fingerprint: Option<String>,
    /// Accuracy on the run's own test rows.
    pub test_accuracy: f64,
    /// When the run was made (RFC 3339).
    pub generated_at: String,
    /// How to apply the model, in words.
    pub predict: String,
    /// Its privacy, in words.
    pub privacy: String,
}

impl ModelFile {
    /// The model of a run's report, with the schema its rows were mapped by (and the learners'
    /// schema, the second block, when there is one).
    pub fn of(report: &Report, schema: &Schema, learners: Option<&Schema>) -> Self {
        let mut columns = schema.columns();
        if let Some(l) = learners {
            columns.extend(l.columns().iter().map(|c| format!("agreed map: {c}")));
        }
        Self {
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

    /// Reads and checks `path` (at most [`MAX_MODEL_BYTES`]): its format, its schemas (valid, matching their fingerprints) and
    /// the number of weights.
    pub fn load(path: &Path) -> Result<(Self, Schema, Option<Schema>)> {
        let origin = path.display().to_string();
        let text = read_capped(path, MAX_MODEL_BYTES)?;
        let model: ModelFile = serde_json::from_slice(&text)
            .with_context(|| format!("{origin}: not a dpagg model.json"))?;
        if model.format != FORMAT {
            bail!(
                "{origin}: format {:?}, this version reads {FORMAT:?}",
                model.format
            );
        }
        let schema = model
            .schema
            .clone()
            .validated(&format!("{origin}: schema"))?;
        if schema.fingerprint() != model.schema_fingerprint {
            bail!("{origin}: the schema does not match schema_fingerprint (was the file edited?)");
        }
        let learners = match (&model.learner_schema, &model.learner_schema_fingerprint) {
            (None, None) => None,
            (Some(l), Some(fp)) => {
                let l = l.clone().validated(&format!("{origin}: learner_schema"))?;
                if &l.fingerprint() != fp {
                    bail!(
                        "{origin}: learner_schema does not match learner_schema_fingerprint (was the file edited?)"
                    );
                }
                Some(l)
            }
            _ => bail!("{origin}: learner_schema and learner_schema_fingerprint go together"),
        };
        let dim = schema.dim() + learners.as_ref().map_or(0, Schema::dim);
        if model.weights.len() != dim || model.weights.iter().any(|w| !w.is_finite()) {
            bail!(
                "{origin}: weights: {dim} finite numbers expected (the schemas' {dim} columns), found {}",
                model.weights.len()
            );
        }
        Ok((model, schema, learners))
    }

    /// `model.json`'s bytes.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        serde_json::to_vec_pretty(self).context("cannot encode the model")
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
    let (model, schema, learners) = ModelFile::load(model_path)?;
    if let Some(p) = out_path {
        check_writable(p)?;
    }
    let (rows, labels, _) = load_rows(data, &schema)?;
    let rows = match &learners {
        None => rows,
        Some(l) => rows.side_by_side(&load_rows(data, l)?.0),
    };
    let mut csv = String::from("row,predicted,probability,margin\n");
    let mut right = 0usize;
    for i in 0..rows.len() {
        let margin: f64 = rows
            .row(i)
            .iter()
            .zip(&model.weights)
            .map(|(x, w)| x * w)
            .sum();
        let positive = margin >= 0.0;
        let label = if positive {
            &model.label.positive
        } else {
            &model.label.negative
        };
        let _ = writeln!(
            csv,
            "{},{},{},{}",
            i + 1,
            quote(label),
            sigmoid(margin),
            margin
        );
        if let Some(l) = labels.as_ref().filter(|l| l[i] != 0.0) {
            right += usize::from((l[i] > 0.0) == positive);
        }
    }
    match out_path {
        None => out.write_all(csv.as_bytes())?,
        Some(p) => {
            atomic_write(p, csv.as_bytes())
                .with_context(|| format!("{}: cannot write", p.display()))?;
            write!(out, "wrote {} prediction(s) to {}", rows.len(), p.display())?;
            match &labels {
                Some(l) => write_accuracy(out, l, right, &model)?,
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

/// Largest `model.json` read: a model is a few weights per column and two schemas, so even a
/// table of 100,000 columns stays far below it.
pub const MAX_MODEL_BYTES: u64 = 64 << 20;

/// The bytes of `path`, refused with one line when there are more than `max`.
fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>> {
    use std::io::Read as _;
    let origin = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("{origin}: cannot read"))?;
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{origin}: cannot read"))?;
    if bytes.len() as u64 > max {
        bail!(
            "{origin}: larger than {} MiB, not a dpagg model.json",
            max >> 20
        );
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_file_above_the_cap_is_refused_in_one_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("model.json");
        std::fs::write(&path, b"0123456789a").expect("write");
        assert_eq!(read_capped(&path, 11).expect("at the cap").len(), 11);
        let e = read_capped(&path, 10)
            .expect_err("above the cap")
            .to_string();
        assert!(
            e.ends_with("model.json: larger than 0 MiB, not a dpagg model.json"),
            "{e}"
        );
    }
}
