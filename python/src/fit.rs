//! Training one private learner from Python: the registered mechanisms of
//! `dpagg_shared::privacy::mechanism`, exactly as a node trains them, on rows mapped by a
//! [`Map`].
//!
//! Noise comes from `NoiseSource::secure` (ChaCha20 keyed from the OS, self-tested) unless a
//! seed is given; a seeded release says so in its metadata (`seeded = true`: no privacy).
//! Mechanisms kept only for the lab's reproductions are refused, as a node refuses them.

use crate::map::Map;
use crate::value_error;
use dpagg_shared::data::buffer::FeatureBuffer;
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, Mechanism, MechanismKind, Options};
use dpagg_shared::privacy::noise::NoiseSource;
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;

/// The mechanism of a fit, its spec checked as a node checks a request.
fn spec(
    mechanism: &str,
    epsilon: f64,
    delta: f64,
    lambda: Option<f64>,
    options: BTreeMap<String, f64>,
) -> PyResult<Box<dyn Mechanism>> {
    let kind = MechanismKind::parse(mechanism).map_err(PyValueError::new_err)?;
    let l2 = lambda.map_or(Lambda::Auto, Lambda::Fixed);
    let mut spec = LearnerSpec::new(kind, epsilon, delta, l2);
    spec.options = options.into_iter().collect::<Options>();
    spec.check_ranges().map_err(value_error)?;
    spec.build().map_err(value_error)
}

/// The registered mechanisms a node offers: name, one-line summary, whether proven, what the
/// proof covers (`noise-as-sampled`, `real-arithmetic`, `none`), options.
#[pyfunction]
pub fn mechanisms(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    MechanismKind::all()
        .filter(|k| k.offered_by_nodes())
        .map(|k| {
            let r = k.registration();
            let d = PyDict::new(py);
            d.set_item("name", r.name)?;
            d.set_item("summary", r.summary)?;
            d.set_item("proven", r.proof.is_proven())?;
            d.set_item("proof", r.proof.name())?;
            let options: Vec<(&str, f64, &str)> = r
                .options
                .iter()
                .map(|o| (o.name, o.default, o.help))
                .collect();
            d.set_item("options", options)?;
            Ok(d)
        })
        .collect()
}

/// An RDP curve as (orders, values).
type Curve = (Vec<f64>, Vec<f64>);

/// (ε, δ, neighbour relation, proven, RDP curve).
type Guarantee = (f64, f64, String, bool, Option<Curve>);

/// What a fit would guarantee, known before any data: (ε, δ, relation, proven, RDP curve as
/// (orders, values) or None).
#[pyfunction]
#[pyo3(signature = (mechanism, epsilon, delta, lambda_, options))]
pub fn guarantee(
    mechanism: &str,
    epsilon: f64,
    delta: f64,
    lambda_: Option<f64>,
    options: BTreeMap<String, f64>,
) -> PyResult<Guarantee> {
    let m = spec(mechanism, epsilon, delta, lambda_, options)?;
    let g = m.guarantee();
    let rdp = m.rdp().map(|c| (c.orders().to_vec(), c.values().to_vec()));
    Ok((
        g.epsilon,
        g.delta,
        g.relation.to_string(),
        m.is_proven(),
        rdp,
    ))
}

/// Trains `mechanism` on the rows of `x` mapped by `map`, with labels `y` in {−1, +1}; a
/// `ValueError` (and no release) when `x` holds NaN or ±∞, with scikit-learn's wording.
/// Returns (coefficients, release metadata as JSON, values clipped, rows projected).
#[pyfunction]
#[pyo3(signature = (map, x, y, mechanism, epsilon, delta, lambda_, options, seed))]
#[allow(clippy::too_many_arguments)]
pub fn fit(
    py: Python<'_>,
    map: &Map,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    mechanism: &str,
    epsilon: f64,
    delta: f64,
    lambda_: Option<f64>,
    options: BTreeMap<String, f64>,
    seed: Option<u64>,
) -> PyResult<(Vec<f64>, String, usize, usize)> {
    let rows = map.rows(&x)?;
    let labels = y
        .as_slice()
        .map_err(|_| PyValueError::new_err("y must be a contiguous float64 array"))?;
    if labels.len() != x.shape()[0] {
        return Err(PyValueError::new_err(format!(
            "X has {} row(s) and y {} label(s)",
            x.shape()[0],
            labels.len()
        )));
    }
    // Counted, not `any`: a loop without an early exit is vectorised.
    if labels.iter().filter(|&&l| l != 1.0 && l != -1.0).count() > 0 {
        return Err(PyValueError::new_err("y must hold only −1 and +1"));
    }
    let mechanism = spec(mechanism, epsilon, delta, lambda_, options)?;
    let mut noise = match seed {
        Some(s) => NoiseSource::seeded(s),
        None => NoiseSource::secure().map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
    };
    let dim = map.schema.dim();
    let (mapped, done) = py.detach(|| {
        let mut mapped = FeatureBuffer::zeroed(labels.len() * dim);
        let done = map.map_rows(rows, &mut mapped);
        (mapped, done)
    });
    // X's finiteness is checked here, in the map's own pass, not by a pass of its own in
    // Python; nothing is released from rows that hold NaN or ±∞.
    done.require_finite()?;
    let released = py.detach(|| {
        let data = Dataset::from_buffer(mapped, labels.to_vec(), dim);
        mechanism.release(&data, &mut noise)
    });
    let release = released.map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let metadata = serde_json::to_string(&release.metadata).map_err(value_error)?;
    Ok((
        release.classifier.coefficients().to_vec(),
        metadata,
        done.clipped,
        done.projected,
    ))
}
