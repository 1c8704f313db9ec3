//! Aggregating learners on the aggregator's own data: mirror averaging ([`mirror`]) and its
//! comparators ([`comparators`]).
//!
//! **Mirror averaging** (Minami et al. 2015, §3.2, eq. 15–17; Juditsky, Rigollet & Tsybakov 2008).
//! Given M linear experts θ₁…θ_M and the aggregator's data d₁…d_n visited in a random order, with
//! cumulative logistic losses S_t,m = Σ_{i≤t} ℓ(⟨θ_m, x_i⟩, y_i):
//!
//! ```text
//! λ_m^(t) = exp(−S_t,m/β) / Σ_l exp(−S_t,l/β)        (eq. 15, computed by log-sum-exp)
//! λ_m     = (1/n) Σ_{t=1..n} λ_m^(t)                   (eq. 16)
//! θ_agg   = Σ_m λ_m θ_m,  f_agg(x) = sgn⟨θ_agg, x⟩      (eq. 17)
//! ```
//!
//! The oracle inequality (eq. 20) needs β ≥ β_φ, and β_φ = e for the logistic loss (eq. 19), so the
//! default is β = 3 (§5) and a smaller β is accepted with a warning.
//!
//! Privacy: the aggregate is a function of released learners and the aggregator's own data only, so
//! it inherits their guarantee with respect to the other organisations' data (Proposition 4.1).
//!
//! **Numerics.** Rows are processed in blocks of [`BLOCK_ROWS`]: scores for a block come from one
//! matrix product, losses are computed in parallel, cumulative sums sequentially, and the per-row
//! softmaxes in parallel with partial sums over fixed sub-blocks added in order — the result is
//! bit-identical for any number of threads. In each softmax, experts whose exponent is below
//! −[`NEGLIGIBLE_EXPONENT`] relative to the best contribute less than e⁻⁵⁰ ≈ 2·10⁻²² each and are
//! skipped; this changes λ by at most M·2·10⁻²² in ℓ₁ (far below f64 resolution of Σλ = 1).
//!
//! Experts are anything that is a slice of coefficients
//! ([`LinearClassifier`](crate::learn::classifier::LinearClassifier), `Vec<f64>`); the results are
//! `LinearClassifier`s.
//!
//! [`combiner`] holds the [`combiner::Combiner`]s, one file each (local, mirror averaging with and
//! without the own learner, the two stackers, and the comparators uniform average and best
//! single learner) and their registry; **a new combiner** is one file there and one line in
//! its registry. [`select`] builds the selectable ones and chooses one by cross-validation on
//! the own training rows, so that joining never leaves the aggregator worse off than its own
//! data alone; [`agreement`] measures how far the others' learners agree, which sets how much
//! evidence that choice needs. [`model_file`] defines `model.json`, the final model a run
//! writes, and applies it to new rows.

pub mod agreement;
pub mod calibrate;
pub mod combiner;
mod comparators;
pub mod loss_table;
mod mirror;
pub mod model_file;
pub mod select;

pub use comparators::{best_single, best_single_from_table, combine, uniform_average};
pub use mirror::{
    Aggregate, BETA_LOGISTIC, BLOCK_ROWS, MirrorAveraging, NEGLIGIBLE_EXPONENT, SUB_ROWS,
    reference_weights,
};

#[cfg(test)]
mod tests;

use crate::data::dataset::Dataset;

/// Why an aggregation is impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AggregateError {
    /// β must be a finite positive number.
    #[error(
        "invalid beta = {0}: must be a finite number > 0 (Minami et al. 2015, eq. 19 needs beta >= e ≈ 2.718 for the logistic loss)"
    )]
    InvalidBeta(f64),
    /// No experts were given.
    #[error("no learners to aggregate")]
    NoExperts,
    /// The aggregator has no data to weight the experts with.
    #[error("the aggregator's data is empty")]
    EmptyData,
    /// An expert's dimension differs from the data's.
    #[error("learner {index} has dimension {found}, the data has {expected}")]
    DimensionMismatch {
        /// Expert index.
        index: usize,
        /// Its dimension.
        found: usize,
        /// The data's dimension.
        expected: usize,
    },
    /// An expert has a NaN or infinite weight.
    #[error("learner {0} has a non-finite weight")]
    NonFinite(usize),
    /// The visiting order is not a permutation of the rows.
    #[error("the visiting order must be a permutation of the {0} data rows")]
    BadOrder(usize),
    /// A loss table does not hold the losses an aggregation asks for.
    #[error(
        "the loss table holds {table_experts} learners on {table_rows} rows; asked for {experts} learners"
    )]
    TableMismatch {
        /// Learners asked for.
        experts: usize,
        /// Learners in the table.
        table_experts: usize,
        /// Rows in the table.
        table_rows: usize,
    },
}

fn validate<E: AsRef<[f64]>>(experts: &[E], data: &Dataset) -> Result<(), AggregateError> {
    if experts.is_empty() {
        return Err(AggregateError::NoExperts);
    }
    if data.is_empty() {
        return Err(AggregateError::EmptyData);
    }
    for (index, e) in experts.iter().map(AsRef::as_ref).enumerate() {
        if e.len() != data.dim() {
            return Err(AggregateError::DimensionMismatch {
                index,
                found: e.len(),
                expected: data.dim(),
            });
        }
        if e.iter().any(|v| !v.is_finite()) {
            return Err(AggregateError::NonFinite(index));
        }
    }
    Ok(())
}

fn check_order(order: &[usize], n: usize) -> Result<(), AggregateError> {
    let mut seen = vec![false; n];
    if order.len() != n {
        return Err(AggregateError::BadOrder(n));
    }
    for &i in order {
        if i >= n || std::mem::replace(&mut seen[i], true) {
            return Err(AggregateError::BadOrder(n));
        }
    }
    Ok(())
}
