//! [`Model`]: a federation's `model.json` applied from Python exactly as `dpagg-aggregator
//! predict` applies it (`dpagg_shared::aggregate::model_file`: the same checks, the same CSV
//! loader and map, the same scores).

use crate::value_error;
use dpagg_shared::aggregate::model_file::{LoadedModel, ModelFile};
use numpy::PyArray1;
use pyo3::prelude::*;
use std::path::PathBuf;

/// A final model read from `model.json`.
#[pyclass(module = "dpagg._native", frozen)]
pub struct Model {
    loaded: LoadedModel,
}

/// Scores of a CSV's rows: predicted labels, P(positive), margins, and the labels the file
/// holds (+1, −1, 0 for blank or unknown) when it has the label column.
type Scored<'py> = (
    Vec<String>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    Option<Vec<f64>>,
);

#[pymethods]
impl Model {
    /// Reads and checks `model.json` (format, schemas against their fingerprints, weights).
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        let loaded = ModelFile::load(&path).map_err(value_error)?;
        Ok(Self { loaded })
    }

    /// Scores every row of the CSV at `path` (read with the model's schema, as `predict` does).
    fn score_csv<'py>(&self, py: Python<'py>, path: PathBuf) -> PyResult<Scored<'py>> {
        let (rows, labels) = py
            .detach(|| self.loaded.rows_of_csv(&path))
            .map_err(value_error)?;
        let scores = self.loaded.score(&rows);
        let predicted = scores
            .iter()
            .map(|s| self.loaded.label_of(s).to_owned())
            .collect();
        let probability = scores.iter().map(|s| s.probability).collect();
        let margin = scores.iter().map(|s| s.margin).collect();
        Ok((
            predicted,
            PyArray1::from_vec(py, probability),
            PyArray1::from_vec(py, margin),
            labels,
        ))
    }

    /// The candidate chosen (`local`, `mirror-averaging`, …).
    #[getter]
    fn candidate(&self) -> String {
        self.loaded.file.candidate.clone()
    }

    /// The columns of x, in the order of `weights`.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.loaded.file.columns.clone()
    }

    /// θ.
    #[getter]
    fn weights(&self) -> Vec<f64> {
        self.loaded.file.weights.clone()
    }

    /// (label column, positive value, negative value).
    #[getter]
    fn label(&self) -> (String, String, String) {
        let l = &self.loaded.file.label;
        (l.column.clone(), l.positive.clone(), l.negative.clone())
    }

    /// The CSV columns the model reads (features, by their source column, in order).
    #[getter]
    fn feature_columns(&self) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        let schemas = std::iter::once(&self.loaded.schema).chain(self.loaded.learners.as_ref());
        for f in schemas.flat_map(|s| &s.features) {
            let c = f.source_column().to_owned();
            if !seen.contains(&c) {
                seen.push(c);
            }
        }
        seen
    }

    /// The column separator the model's schema declares for its CSV files (`,` when it
    /// declares none: the loader then detects it from the header).
    #[getter]
    fn separator(&self) -> String {
        let declared = self.loaded.schema.csv.as_ref().and_then(|c| c.separator);
        char::from(declared.map_or(b',', |s| s.byte())).to_string()
    }

    /// Accuracy on the run's own test rows.
    #[getter]
    fn test_accuracy(&self) -> f64 {
        self.loaded.file.test_accuracy
    }

    /// Its privacy, in words.
    #[getter]
    fn privacy(&self) -> String {
        self.loaded.file.privacy.clone()
    }
}
