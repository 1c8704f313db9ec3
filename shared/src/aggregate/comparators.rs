//! The aggregators mirror averaging is compared with: a weighted or uniform average of the
//! experts' coefficients and the best single expert on the aggregator's data.

use super::{AggregateError, validate};
use crate::data::dataset::Dataset;
use crate::learn::classifier::LinearClassifier;

/// Σ_m w_m θ_m.
pub fn combine<E: AsRef<[f64]>>(experts: &[E], weights: &[f64]) -> LinearClassifier {
    let p = experts.first().map_or(0, |e| e.as_ref().len());
    let mut out = vec![0.0; p];
    for (e, &w) in experts.iter().zip(weights) {
        for (o, v) in out.iter_mut().zip(e.as_ref()) {
            *o += w * v;
        }
    }
    LinearClassifier::new(out)
}

/// The uniform average (1/M) Σ θ_m.
pub fn uniform_average<E: AsRef<[f64]>>(experts: &[E]) -> LinearClassifier {
    let w = vec![1.0 / experts.len() as f64; experts.len()];
    combine(experts, &w)
}

/// Index of the expert with the smallest empirical logistic risk on `data` (first on ties),
/// the risks summed as mirror averaging's sweep sums them.
pub fn best_single<E: AsRef<[f64]>>(
    experts: &[E],
    data: &Dataset,
) -> Result<usize, AggregateError> {
    validate(experts, data)?;
    Ok(argmin(&super::mirror::total_losses(experts, data)))
}

/// [`best_single`] of the first `m` experts of `table`, from their losses there (same bits).
pub fn best_single_from_table(
    table: &super::loss_table::LossTable,
    m: usize,
) -> Result<usize, AggregateError> {
    table.check(m)?;
    Ok(argmin(&table.totals(m)))
}

/// Index of the smallest value (first on ties).
pub(super) fn argmin(values: &[f64]) -> usize {
    values
        .iter()
        .enumerate()
        .fold(0, |best, (i, r)| if *r < values[best] { i } else { best })
}
