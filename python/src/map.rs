//! [`Map`]: a validated public schema as a Python object, and the rows it maps.
//!
//! Built from public bounds (one (lo, hi) per column, the default ball map of
//! `dpagg_shared::data::schema`'s bounds rule) or from a schema file; either way the bounds are
//! public quantities (invariant 2): a schema whose bounds `schema init` read off the data is
//! refused. Values outside the bounds are clipped and counted; the count is returned so the
//! caller can say so.

use crate::value_error;
use dpagg_shared::data::schema::{FeatureSpec, LabelSpec, Schema};
use numpy::{PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;

/// A public map of raw rows into the unit ball.
#[pyclass(module = "dpagg._native", frozen)]
pub struct Map {
    pub(crate) schema: Schema,
}

/// What mapping a block of rows did, and what it met.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Mapped {
    pub(crate) clipped: usize,
    pub(crate) projected: usize,
    /// Raw values that were NaN (the map reads them as missing).
    pub(crate) nan: usize,
    /// Raw values that were ±∞ (the map clips them to the bounds).
    pub(crate) infinite: usize,
}

impl Mapped {
    fn add(self, other: Mapped) -> Mapped {
        Mapped {
            clipped: self.clipped + other.clipped,
            projected: self.projected + other.projected,
            nan: self.nan + other.nan,
            infinite: self.infinite + other.infinite,
        }
    }

    /// scikit-learn's error for X with NaN or ±∞ (its estimators refuse them), if any.
    pub(crate) fn require_finite(&self) -> PyResult<()> {
        if self.nan > 0 {
            return Err(PyValueError::new_err(format!(
                "Input X contains NaN ({} value(s)); dpagg's estimators do not accept missing values encoded as NaN",
                self.nan
            )));
        }
        if self.infinite > 0 {
            return Err(PyValueError::new_err(format!(
                "Input X contains infinity ({} value(s)) or a value too large for dtype('float64')",
                self.infinite
            )));
        }
        Ok(())
    }
}

impl Map {
    /// Maps `rows` (row-major, one raw value per feature) into `out` (row-major, `dim` each),
    /// in parallel over blocks of rows (each row's result does not depend on the others).
    pub(crate) fn map_rows(&self, rows: &[f64], out: &mut [f64]) -> Mapped {
        const BLOCK: usize = 4096;
        let p = self.schema.features.len();
        let dim = self.schema.dim();
        rows.par_chunks(BLOCK * p.max(1))
            .zip(out.par_chunks_mut(BLOCK * dim))
            .map(|(raw, x)| {
                // Counted on the block just before it is mapped, while it is in cache; counted,
                // not `any`, so that the loop is vectorised.
                let non_finite = raw.iter().filter(|v| !v.is_finite()).count();
                let nan = match non_finite {
                    0 => 0,
                    _ => raw.iter().filter(|v| v.is_nan()).count(),
                };
                let done = self.schema.row_map().normalise_rows(raw, x);
                Mapped {
                    clipped: done.clipped,
                    projected: done.projected,
                    nan,
                    infinite: non_finite - nan,
                }
            })
            .reduce(Mapped::default, Mapped::add)
    }

    /// The rows of `x`, contiguous, after checking their width.
    pub(crate) fn rows<'a>(&self, x: &'a PyReadonlyArray2<'_, f64>) -> PyResult<&'a [f64]> {
        let p = self.schema.features.len();
        let shape = x.shape();
        if shape[1] != p {
            return Err(PyValueError::new_err(format!(
                "X has {} column(s), the map reads {p} ({})",
                shape[1],
                names(&self.schema).join(", ")
            )));
        }
        x.as_slice().map_err(|_| {
            PyValueError::new_err("X must be a C-contiguous float64 array (np.ascontiguousarray)")
        })
    }
}

fn names(schema: &Schema) -> Vec<String> {
    schema.features.iter().map(|f| f.name.clone()).collect()
}

#[pymethods]
impl Map {
    /// The default ball map of features `names` with public bounds `lo` and `hi`.
    #[staticmethod]
    #[pyo3(signature = (lo, hi, names, intercept = true))]
    fn from_bounds(
        lo: Vec<f64>,
        hi: Vec<f64>,
        names: Vec<String>,
        intercept: bool,
    ) -> PyResult<Self> {
        if lo.len() != names.len() || hi.len() != names.len() {
            return Err(PyValueError::new_err(format!(
                "bounds: {} lower and {} upper bound(s) for {} column(s)",
                lo.len(),
                hi.len(),
                names.len()
            )));
        }
        let features = names
            .into_iter()
            .zip(lo.into_iter().zip(hi))
            .map(|(n, (l, h))| FeatureSpec::bounded(n, l, h))
            .collect();
        let schema = Schema {
            name: "python".into(),
            description: None,
            intercept,
            label: LabelSpec {
                column: "y".into(),
                positive: "1".into(),
                negative: "0".into(),
            },
            features,
            normalisation: None,
            csv: None,
            subspace: None,
            agreed_map: None,
        };
        let schema = schema.validated("bounds").map_err(value_error)?;
        Ok(Self { schema })
    }

    /// The map of the schema file at `path` (numeric features only; public bounds only).
    #[staticmethod]
    fn from_schema(path: std::path::PathBuf) -> PyResult<Self> {
        let schema = Schema::load(&path).map_err(value_error)?;
        let origin = path.display().to_string();
        schema.require_public_bounds(&origin).map_err(value_error)?;
        if let Some(f) = schema.features.iter().find(|f| f.category.is_some()) {
            return Err(PyValueError::new_err(format!(
                "{origin}: feature `{}` is categorical: the estimators read numeric columns (one-hot encode it as 0/1 columns with bounds 0 and 1, or train with dpagg-node)",
                f.source_column()
            )));
        }
        Ok(Self { schema })
    }

    /// The map of [`Map::to_json`]'s text (validated again).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        let schema: Schema = serde_json::from_str(text).map_err(value_error)?;
        let schema = schema.validated("map").map_err(value_error)?;
        Ok(Self { schema })
    }

    /// Pickling: rebuilt from the schema's JSON.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let rebuild = py.get_type::<Map>().getattr("from_json")?;
        Ok((rebuild, (self.to_json()?,)))
    }

    /// The raw columns the map reads, in order.
    #[getter]
    fn feature_names(&self) -> Vec<String> {
        names(&self.schema)
    }

    /// The mapped columns (the features, then `(intercept)` when there is one).
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema.columns()
    }

    /// The schema's fingerprint.
    #[getter]
    fn fingerprint(&self) -> String {
        self.schema.fingerprint()
    }

    /// The schema with every default written in, as JSON.
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.schema).map_err(value_error)
    }

    /// The rows of `x` mapped into the unit ball, and how many values were clipped.
    fn transform<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, usize)> {
        let rows = self.rows(&x)?;
        let n = x.shape()[0];
        let dim = self.schema.dim();
        let mut out = vec![0.0; n * dim];
        let done = py.detach(|| self.map_rows(rows, &mut out));
        let array = numpy::PyArray1::from_vec(py, out).reshape([n, dim])?;
        Ok((array, done.clipped))
    }

    /// ⟨θ, map(x)⟩ for every row of `x`.
    fn margins<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        weights: Vec<f64>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let dim = self.schema.dim();
        if weights.len() != dim {
            return Err(PyValueError::new_err(format!(
                "{} weight(s) for a map of {dim} column(s)",
                weights.len()
            )));
        }
        let rows = self.rows(&x)?;
        let p = self.schema.features.len();
        let margins = py.detach(|| {
            let mut map = self.schema.row_map();
            let mut x = vec![0.0; dim];
            rows.chunks_exact(p)
                .map(|raw| {
                    map.normalise(raw, &mut x);
                    x.iter().zip(&weights).map(|(a, b)| a * b).sum()
                })
                .collect::<Vec<f64>>()
        });
        Ok(numpy::PyArray1::from_vec(py, margins))
    }
}
