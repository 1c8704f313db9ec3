//! `model.json` — the final model of a run, self-contained — read and applied in one place, so
//! that `dpagg-aggregator predict` and the Python package's `dpagg.Model` score a row the same
//! way.
//!
//! A model is of no use if it cannot be applied: `model.json` holds the weights *and* the
//! complete map they expect — the public schema with every default written in (feature names
//! and order, bounds, transforms, centres, scales, missing markers, row scale, intercept
//! constant), the label's spelling, the candidate chosen, the schema's fingerprint and the
//! privacy statement. [`ModelFile::load`] rebuilds the schema from the file and checks it
//! against the fingerprint; [`LoadedModel::rows_of_csv`] maps each row of a CSV exactly as the
//! run mapped its own rows (the same loader); [`LoadedModel::score`] gives, per row, the
//! predicted label, P(positive) = σ(⟨θ, x⟩) and the margin ⟨θ, x⟩. A margin of 0 predicts the
//! positive label, as every accuracy in the run's report does, so scoring the report's test
//! file reproduces its test accuracy exactly. Writing a model is the aggregator's business
//! (it knows the report); this module only defines the file and applies it.

use crate::data::csv::{DataError, load_rows};
use crate::data::dataset::Dataset;
use crate::data::schema::{LabelSpec, Schema, SchemaError};
use crate::util::fastmath::sigmoid;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The `format` of a model file this version writes and reads.
pub const FORMAT: &str = "dpagg-model/1";

/// How to apply the model, in words (`model.json`'s `predict` field).
pub const HOW: &str = "x = the schema's map of a raw row (features in `columns` order, intercept constant last), followed, when learner_schema is present, by learner_schema's map of the same row; margin = <weights, x>, P(positive) = 1/(1 + exp(-margin)); margin >= 0 predicts label.positive";

/// Largest `model.json` read: a model is a few weights per column and two schemas, so even a
/// table of 100,000 columns stays far below it.
pub const MAX_MODEL_BYTES: u64 = 64 << 20;

/// Why a model file cannot be read or applied; every message starts with the file's name.
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    /// The file cannot be opened or read.
    #[error("{origin}: cannot read: {source}")]
    Io {
        /// The file.
        origin: String,
        /// Why.
        source: std::io::Error,
    },
    /// Larger than [`MAX_MODEL_BYTES`].
    #[error("{origin}: larger than {} MiB, not a dpagg model.json", .max >> 20)]
    TooLarge {
        /// The file.
        origin: String,
        /// The cap in bytes.
        max: u64,
    },
    /// Not JSON of a model file, or of another format.
    #[error("{origin}: {what}")]
    Invalid {
        /// The file.
        origin: String,
        /// What is wrong.
        what: String,
    },
    /// A schema in the file is not valid.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The rows to score cannot be read under the model's schema.
    #[error(transparent)]
    Data(#[from] DataError),
}

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
    /// Its fingerprint (checked by [`ModelFile::load`]).
    pub schema_fingerprint: String,
    /// With an agreed map that keeps a subspace: the learners' map (the schema with the agreed
    /// map applied), whose columns follow `schema`'s in `columns` and `weights`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_schema: Option<Schema>,
    /// Its fingerprint (checked by [`ModelFile::load`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner_schema_fingerprint: Option<String>,
    /// Accuracy on the run's own test rows.
    pub test_accuracy: f64,
    /// When the run was made (RFC 3339).
    pub generated_at: String,
    /// How to apply the model, in words ([`HOW`]).
    pub predict: String,
    /// Its privacy, in words.
    pub privacy: String,
}

/// A model read and checked: the file, its schema and the learners' schema, validated.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    /// The file as read.
    pub file: ModelFile,
    /// Its schema, validated and matching its fingerprint.
    pub schema: Schema,
    /// The learners' schema, when there is one, validated and matching its fingerprint.
    pub learners: Option<Schema>,
}

/// One row scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    /// Whether the positive label is predicted (margin ≥ 0).
    pub positive: bool,
    /// σ(margin).
    pub probability: f64,
    /// ⟨θ, x⟩.
    pub margin: f64,
}

impl ModelFile {
    /// `model.json`'s bytes.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec_pretty(self)
    }

    /// Reads and checks `path` (at most [`MAX_MODEL_BYTES`]): its format, its schemas (valid,
    /// matching their fingerprints) and the number of weights.
    pub fn load(path: &Path) -> Result<LoadedModel, ModelFileError> {
        let origin = path.display().to_string();
        let text = read_capped(path, MAX_MODEL_BYTES)?;
        let invalid = |what: String| ModelFileError::Invalid {
            origin: origin.clone(),
            what,
        };
        let file: ModelFile = serde_json::from_slice(&text)
            .map_err(|e| invalid(format!("not a dpagg model.json ({e})")))?;
        if file.format != FORMAT {
            let f = &file.format;
            return Err(invalid(format!(
                "format {f:?}, this version reads {FORMAT:?}"
            )));
        }
        let schema = file
            .schema
            .clone()
            .validated(&format!("{origin}: schema"))?;
        if schema.fingerprint() != file.schema_fingerprint {
            return Err(invalid(
                "the schema does not match schema_fingerprint (was the file edited?)".into(),
            ));
        }
        let learners = match (&file.learner_schema, &file.learner_schema_fingerprint) {
            (None, None) => None,
            (Some(l), Some(fp)) => {
                let l = l.clone().validated(&format!("{origin}: learner_schema"))?;
                if &l.fingerprint() != fp {
                    return Err(invalid("learner_schema does not match learner_schema_fingerprint (was the file edited?)".into()));
                }
                Some(l)
            }
            _ => {
                return Err(invalid(
                    "learner_schema and learner_schema_fingerprint go together".into(),
                ));
            }
        };
        let dim = schema.dim() + learners.as_ref().map_or(0, Schema::dim);
        if file.weights.len() != dim || file.weights.iter().any(|w| !w.is_finite()) {
            return Err(invalid(format!(
                "weights: {dim} finite numbers expected (the schemas' {dim} columns), found {}",
                file.weights.len()
            )));
        }
        Ok(LoadedModel {
            file,
            schema,
            learners,
        })
    }
}

impl LoadedModel {
    /// The rows of the CSV at `data` mapped as the model expects (the schema's map, then the
    /// learners' map beside it), with the labels when the file has the label column (+1, −1,
    /// or 0 for a blank or unknown label).
    pub fn rows_of_csv(&self, data: &Path) -> Result<(Dataset, Option<Vec<f64>>), ModelFileError> {
        let (rows, labels, _) = load_rows(data, &self.schema)?;
        let rows = match &self.learners {
            None => rows,
            Some(l) => rows.side_by_side(&load_rows(data, l)?.0),
        };
        Ok((rows, labels))
    }

    /// Every row of `rows` (mapped by [`LoadedModel::rows_of_csv`]) scored.
    pub fn score(&self, rows: &Dataset) -> Vec<Score> {
        (0..rows.len())
            .map(|i| {
                let margin: f64 = rows
                    .row(i)
                    .iter()
                    .zip(&self.file.weights)
                    .map(|(x, w)| x * w)
                    .sum();
                Score {
                    positive: margin >= 0.0,
                    probability: sigmoid(margin),
                    margin,
                }
            })
            .collect()
    }

    /// The label a score predicts, as the CSV spells it.
    pub fn label_of(&self, score: &Score) -> &str {
        let label = &self.file.label;
        if score.positive {
            &label.positive
        } else {
            &label.negative
        }
    }
}

/// The bytes of `path`, refused with one line when there are more than `max`.
fn read_capped(path: &Path, max: u64) -> Result<Vec<u8>, ModelFileError> {
    use std::io::Read as _;
    let origin = path.display().to_string();
    let io = |source| ModelFileError::Io {
        origin: origin.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > max {
        return Err(ModelFileError::TooLarge { origin, max });
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
