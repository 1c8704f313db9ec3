//! The tuned logistic regressions of the selection: the λ grid (scikit-learn's C range in this
//! crate's objective), stratified folds, λ by cross-validation along a warm-started path, and
//! the fit at a chosen λ. The local model, the stackers and centralised are all tuned here.

use crate::data::dataset::{Dataset, dot};
use crate::learn::classifier::LinearClassifier;
use crate::learn::held_out::HeldOut;
use crate::learn::solver::{Fit, RidgePath, SolverError, fit_logistic};
use crate::util::seed::derived_rng;
use rand::Rng;
use rand::seq::SliceRandom;

/// The C range of scikit-learn's `LogisticRegressionCV` default (`Cs = 10`: C ∈ [1e-4, 1e4]),
/// which [`lambda_grid`] translates to this crate's objective.
pub const C_RANGE: (f64, f64) = (1e-4, 1e4);
/// Points per decade of C in [`lambda_grid`] (scikit-learn's default has 1.25).
pub const GRID_PER_DECADE: usize = 2;
/// The largest λ worth trying: beyond it every model is all but θ = 0.
pub const LAMBDA_MAX: f64 = 10.0;

/// The λ values cross-validation chooses from, largest first (the order of a warm-started
/// regularisation path).
///
/// scikit-learn minimises C·Σℓ + ½‖w‖² on standardised features (variance 1 each); this crate
/// minimises (1/n)Σℓ + (λ/2)‖θ‖² on rows in the unit ball. Dividing by C·n, and noting that a
/// feature of variance v needs a weight 1/√v times larger, the same trade-off is
/// λ = v̄/(C·n) with v̄ = mean ‖x‖²/d the rows' mean squared value per column. The grid spans
/// [`C_RANGE`] at [`GRID_PER_DECADE`] points per decade, capped at [`LAMBDA_MAX`], so a tuned
/// model is never held back by a grid too coarse or too short for its rows' scale, n and d.
/// (v̄ is a statistic of the rows; that is fine here: the tuned models are non-private by
/// design, and no release reads this grid.)
pub fn lambda_grid(data: &Dataset) -> Vec<f64> {
    let (n, d) = (data.len().max(1) as f64, data.dim().max(1) as f64);
    let m2 = (0..data.len())
        .map(|i| dot(data.row(i), data.row(i)))
        .sum::<f64>()
        / n;
    let per_column = if m2 > 0.0 && m2.is_finite() {
        m2 / d
    } else {
        1.0 / d
    };
    let decades = (C_RANGE.1 / C_RANGE.0).log10();
    let points = (decades * GRID_PER_DECADE as f64).round() as usize + 1;
    (0..points)
        .map(|k| {
            let c = C_RANGE.0 * 10f64.powf(k as f64 / GRID_PER_DECADE as f64);
            (per_column / (c * n)).min(LAMBDA_MAX)
        })
        .fold(Vec::new(), |mut grid: Vec<f64>, l| {
            if grid.last() != Some(&l) {
                grid.push(l);
            }
            grid
        })
}

/// Stratified fold assignment: rows of each class shuffled and dealt in turn, so every fold
/// has its share of both classes. Returns the held-out rows of each fold; together they are
/// every row exactly once.
pub fn stratified_folds<R: Rng + ?Sized>(labels: &[f64], k: usize, rng: &mut R) -> Vec<Vec<usize>> {
    let mut folds = vec![Vec::new(); k];
    let mut next = 0;
    for positive in [true, false] {
        let mut rows: Vec<usize> = (0..labels.len())
            .filter(|&i| (labels[i] > 0.0) == positive)
            .collect();
        rows.shuffle(rng);
        for i in rows {
            folds[next % k].push(i);
            next += 1;
        }
    }
    folds
}

/// The rows not in `held_out`.
pub(crate) fn complement(n: usize, held_out: &[usize]) -> Vec<usize> {
    let mut out = vec![true; n];
    for &i in held_out {
        out[i] = false;
    }
    (0..n).filter(|&i| out[i]).collect()
}

/// The folds that choose λ (one assignment per seed, shared by the local model and the
/// stackers).
pub(super) fn tuning_folds(data: &Dataset, k: usize, seed: u64) -> Vec<Vec<usize>> {
    stratified_folds(data.labels(), k, &mut derived_rng(seed, &[10]))
}

/// The λ of [`lambda_grid`] with the smallest held-out logistic loss over `folds` (the larger
/// λ on ties). Each fold walks the grid from the largest λ down, starting every fit from the
/// previous minimiser (a warm-started [`RidgePath`]: the same minimisers to the solver's
/// tolerance, in a few Newton steps each and without a pass to evaluate the start); the fold's
/// held-out rows are scored column-major ([`HeldOut`], the same sums as row by row). A λ whose fit fails in some fold (e.g. too little regularisation for
/// nearly separable rows) is never chosen; if every λ fails, the error of the last is returned.
pub(crate) fn cv_lambda(data: &Dataset, folds: &[Vec<usize>]) -> Result<f64, SolverError> {
    let grid = lambda_grid(data);
    let mut loss = vec![0.0; grid.len()];
    let mut last_error = None;
    for held in folds {
        let fit_rows = data.subset(&complement(data.len(), held));
        let held_rows = HeldOut::new(data, held);
        let mut path = RidgePath::new(&fit_rows);
        for (k, &lambda) in grid.iter().enumerate() {
            match path.fit(lambda) {
                Ok(fit) => {
                    loss[k] += held_rows.total_loss(&fit.theta);
                }
                Err(e) => {
                    loss[k] = f64::INFINITY;
                    last_error = Some(e);
                }
            }
        }
    }
    let best =
        (0..grid.len())
            .filter(|&k| loss[k].is_finite())
            .fold(None, |best: Option<usize>, k| match best {
                Some(b) if loss[b] <= loss[k] => Some(b),
                _ => Some(k),
            });
    match (best, last_error) {
        (Some(k), _) => Ok(grid[k]),
        (None, Some(e)) => Err(e),
        (None, None) => Ok(grid[0]),
    }
}

/// A non-private logistic regression on `data` with λ chosen by stratified `k`-fold
/// cross-validation over [`lambda_grid`] (held-out logistic loss); returns the model and λ.
pub fn tuned_logistic(
    data: &Dataset,
    k: usize,
    seed: u64,
) -> Result<(LinearClassifier, f64), SolverError> {
    let lambda = cv_lambda(data, &tuning_folds(data, k.max(2), seed))?;
    Ok((fit_on_path(data, lambda)?.classifier(), lambda))
}

/// The fit at `lambda` on all of `data`, reached along the grid's path from its largest λ when
/// a cold start does not converge (small λ on nearly separable rows).
pub(crate) fn fit_on_path(data: &Dataset, lambda: f64) -> Result<Fit, SolverError> {
    fit_logistic(data, lambda).or_else(|_| {
        let mut path = RidgePath::new(data);
        for l in lambda_grid(data).into_iter().filter(|&l| l > lambda) {
            let _ = path.fit(l);
        }
        path.fit(lambda)
    })
}
