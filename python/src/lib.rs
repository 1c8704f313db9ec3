//! `dpagg._native`: the Rust core of dpagg (`dpagg-shared`) for Python, through PyO3.
//!
//! Nothing is implemented twice: the estimators of the `dpagg` package map rows with the
//! schema's map ([`map`]), train with the registered mechanisms ([`fit`]), apply a federation's
//! `model.json` ([`model`]) and account with the RDP calculators ([`accountant`]) of the same
//! crate the node and the aggregator link. Long computations run with the interpreter detached
//! (other Python threads keep running). Errors become `ValueError` (bad input) or
//! `RuntimeError` (a release that failed), each with the core's one-line message.

mod accountant;
mod fit;
mod map;
mod model;

use pyo3::prelude::*;

/// A core error as Python's `ValueError`, with its one-line message.
pub(crate) fn value_error(e: impl std::fmt::Display) -> PyErr {
    pyo3::exceptions::PyValueError::new_err(e.to_string())
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<map::Map>()?;
    m.add_class::<model::Model>()?;
    m.add_function(wrap_pyfunction!(fit::fit, m)?)?;
    m.add_function(wrap_pyfunction!(fit::mechanisms, m)?)?;
    m.add_function(wrap_pyfunction!(fit::guarantee, m)?)?;
    m.add_function(wrap_pyfunction!(accountant::dp_sgd_epsilon, m)?)?;
    m.add_function(wrap_pyfunction!(accountant::calibrate_sigma, m)?)?;
    m.add_function(wrap_pyfunction!(accountant::compose, m)?)?;
    m.add("MODEL_FORMAT", dpagg_shared::aggregate::model_file::FORMAT)?;
    Ok(())
}
