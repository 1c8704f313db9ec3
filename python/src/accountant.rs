//! The accountant from Python: the RDP calculators behind DP-SGD
//! (`dpagg_shared::privacy::accounting`) and the composition a node's ledger applies.

use crate::value_error;
use dpagg_shared::privacy::accounting::ledger::{Charge, compose as compose_charges};
use dpagg_shared::privacy::accounting::{
    RdpCurve, calibrate_sigma as calibrate, dp_sgd_epsilon as dp_sgd,
};
use dpagg_shared::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// ε of `steps` steps of DP-SGD with sampling rate q and noise multiplier σ at δ
/// (add/remove-one), and the Rényi order that gave it.
#[pyfunction]
pub fn dp_sgd_epsilon(q: f64, sigma: f64, steps: u64, delta: f64) -> PyResult<(f64, f64)> {
    let b = dp_sgd(q, sigma, steps, delta).map_err(value_error)?;
    Ok((b.epsilon, b.order))
}

/// The smallest noise multiplier σ meeting (ε, δ) for `steps` steps at sampling rate q.
#[pyfunction]
pub fn calibrate_sigma(q: f64, steps: u64, epsilon: f64, delta: f64) -> PyResult<f64> {
    calibrate(q, steps, epsilon, delta).map_err(value_error)
}

/// One charge as Python passes it: (ε, δ, relation, RDP curve as (orders, values) or None).
type PyCharge = (f64, f64, String, Option<(Vec<f64>, Vec<f64>)>);

/// The total of `charges` as a node's ledger composes them (RDP where every charge of a
/// relation has a curve, else basic composition; add/remove-one converted to replace-one):
/// (ε, δ) under replace-one.
#[pyfunction]
pub fn compose(charges: Vec<PyCharge>) -> PyResult<(f64, f64)> {
    let charges = charges
        .into_iter()
        .map(|(epsilon, delta, relation, rdp)| {
            let relation = match relation.as_str() {
                "replace-one" => NeighbourRelation::ReplaceOne,
                "add/remove-one" | "add-remove-one" => NeighbourRelation::AddRemoveOne,
                other => return Err(PyValueError::new_err(format!("unknown relation {other:?}"))),
            };
            let rdp = rdp
                .map(|(o, v)| RdpCurve::new(o, v))
                .transpose()
                .map_err(value_error)?;
            Ok(Charge {
                guarantee: PrivacyGuarantee {
                    epsilon,
                    delta,
                    relation,
                },
                rdp,
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let total = compose_charges(&charges).map_err(value_error)?;
    Ok((total.epsilon, total.delta))
}
