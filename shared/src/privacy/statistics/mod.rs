//! Private descriptive statistics of a node's rows ("Statistics", Kashima's
//! lecture notes on Chapter 16 "Private Data Analysis via Output Perturbation" of
//! Aggarwal & Yu (Eds.) 2008, *Privacy-Preserving Data Mining*).
//!
//! - [`class_sums`]: per-class and per-feature counts, sums and means of the rows clipped to
//!   the public schema's bounds, by the Laplace mechanism with global sensitivity (Kashima's notes
//!   on Aggarwal & Yu 2008, ch. 16, slides 15–19: Lap(GS_f/ε), the sensitivities of sums, means and
//!   histograms, and the basic composition of Lemma 16.7), each Laplace draw snapped
//!   ([`crate::privacy::snapping`]).
//!
//! - [`smooth_median`]: the median of values in a public [lo, hi] with Laplace noise calibrated
//!   to its smooth sensitivity (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slides 24–27; NRS
//!   2007), (ε, δ)-DP.
//!
//! - [`sample_aggregate`]: sample-and-aggregate of the logistic-regression fit (Kashima's notes on
//!   Aggarwal & Yu 2008, ch. 16, last slides; NRS 2007 §4): fits on k random disjoint blocks,
//!   clipped to [−B, B], aggregated per coordinate by the smooth-sensitivity median with (ε/D,
//!   δ/D), (ε, δ)-DP under replace-one.
//!
//! - [`moments`]: per class, the count, per-feature sums, means and variances and the covariance
//!   matrix, from (n_k, Σu, Σ triu(uuᵀ)) of the rows mapped to [−1, 1]^d, by the snapped Laplace
//!   mechanism with ℓ₁ global sensitivity (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slides
//!   15–18) or the Gaussian mechanism with ℓ₂ global sensitivity (an RDP curve the ledger
//!   composes).
//!
//! - [`histogram`]: per feature and per class, counts over public equal-width bins of [lo, hi],
//!   snapped Laplace with GS = 2 per feature (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide
//!   18).
//!
//! Input checks shared by these mechanisms live here ([`check_features`], [`check_rows`]).

pub mod class_sums;
pub mod histogram;
pub mod moments;
pub mod sample_aggregate;
pub mod smooth_median;

use crate::data::schema::FeatureSpec;

/// The largest public row bound of [`moments`] and [`histogram`]: sums of 2^30 rows stay exact.
pub const MAX_ROWS_LIMIT: usize = 1 << 30;

/// Why a schema or a set of rows cannot be released from (public quantities, or a shape error of
/// the input; never a value of the data except which row is malformed).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    /// The schema declares no feature.
    #[error("the schema declares no feature")]
    NoFeatures,
    /// A feature's bounds are not finite with lo < hi.
    #[error("feature {index}: bounds [{lo}, {hi}] must be finite with lo < hi")]
    InvalidBounds {
        /// Feature index.
        index: usize,
        /// Declared lower bound.
        lo: f64,
        /// Declared upper bound.
        hi: f64,
    },
    /// max_rows is 0 or above [`MAX_ROWS_LIMIT`].
    #[error("max_rows {0} must be in 1..=2^30")]
    InvalidMaxRows(usize),
    /// More rows than the public bound.
    #[error("{rows} rows exceed the public bound max_rows = {max_rows}")]
    TooManyRows {
        /// Rows given.
        rows: usize,
        /// The public bound.
        max_rows: usize,
    },
    /// Rows and labels differ in number.
    #[error("{rows} rows but {labels} labels")]
    LabelCount {
        /// Rows given.
        rows: usize,
        /// Labels given.
        labels: usize,
    },
    /// A row has the wrong number of values.
    #[error("row {row} has {got} values, the schema declares {expected}")]
    RowLength {
        /// Row index.
        row: usize,
        /// Values in the row.
        got: usize,
        /// Features in the schema.
        expected: usize,
    },
    /// A value is NaN.
    #[error("row {row}, feature {feature}: value is NaN")]
    NotANumber {
        /// Row index.
        row: usize,
        /// Feature index.
        feature: usize,
    },
}

/// Checks that the schema has features, each with finite bounds lo < hi (and a finite width).
pub fn check_features(features: &[FeatureSpec]) -> Result<(), InputError> {
    if features.is_empty() {
        return Err(InputError::NoFeatures);
    }
    for (index, f) in features.iter().enumerate() {
        if !(f.lo.is_finite() && f.hi.is_finite() && f.lo < f.hi && (f.hi - f.lo).is_finite()) {
            return Err(InputError::InvalidBounds {
                index,
                lo: f.lo,
                hi: f.hi,
            });
        }
    }
    Ok(())
}

/// Checks a public row bound against [`MAX_ROWS_LIMIT`].
pub fn check_max_rows(max_rows: usize) -> Result<(), InputError> {
    if max_rows == 0 || max_rows > MAX_ROWS_LIMIT {
        return Err(InputError::InvalidMaxRows(max_rows));
    }
    Ok(())
}

/// Checks rows against labels, the schema's width `dim`, the public bound `max_rows`, and NaN.
pub fn check_rows(
    rows: &[Vec<f64>],
    positive: &[bool],
    dim: usize,
    max_rows: usize,
) -> Result<(), InputError> {
    if rows.len() != positive.len() {
        return Err(InputError::LabelCount {
            rows: rows.len(),
            labels: positive.len(),
        });
    }
    if rows.len() > max_rows {
        return Err(InputError::TooManyRows {
            rows: rows.len(),
            max_rows,
        });
    }
    for (row, values) in rows.iter().enumerate() {
        if values.len() != dim {
            return Err(InputError::RowLength {
                row,
                got: values.len(),
                expected: dim,
            });
        }
        if let Some(feature) = values.iter().position(|v| v.is_nan()) {
            return Err(InputError::NotANumber { row, feature });
        }
    }
    Ok(())
}

/// Centre c = (lo + hi)/2 and half-width r = (hi − lo)/2 of each feature.
pub fn centres_and_half_widths(features: &[FeatureSpec]) -> (Vec<f64>, Vec<f64>) {
    features
        .iter()
        .map(|f| (f.lo / 2.0 + f.hi / 2.0, f.hi / 2.0 - f.lo / 2.0))
        .unzip()
}

/// u = clamp((clamp(v, lo, hi) − c)/r, −1, 1): a raw value as a coordinate of [−1, 1].
pub fn to_unit(f: &FeatureSpec, v: f64) -> f64 {
    let (c, r) = (f.lo / 2.0 + f.hi / 2.0, f.hi / 2.0 - f.lo / 2.0);
    ((v.clamp(f.lo, f.hi) - c) / r).clamp(-1.0, 1.0)
}
