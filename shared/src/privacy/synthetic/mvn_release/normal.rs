//! The normal fitted to points of [−1, 1]^D — their mean and Miura et al.'s (2022) empirical
//! covariance — and rows drawn from a normal in f64 (the sampling step of both synthetic releases).

use crate::privacy::noise::NoiseSource;
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

/// (1/n)Σx and (1/n)Σxxᵀ of non-empty points.
pub(super) fn first_and_second_moments(
    points: &[Vec<f64>],
    dim: usize,
) -> (DVector<f64>, DMatrix<f64>) {
    let n = points.len() as f64;
    let mut mean = DVector::zeros(dim);
    let mut second = DMatrix::zeros(dim, dim);
    for p in points {
        let x = DVector::from_column_slice(p);
        mean += &x;
        second.syger(1.0, &x, &x, 1.0);
    }
    second.fill_upper_triangle_with_lower_triangle();
    (mean / n, second / n)
}

/// Miura et al.'s (2022) empirical covariance (1/n)Σxxᵀ − μμᵀ, with μ.
pub(super) fn empirical(points: &[Vec<f64>], dim: usize) -> (DVector<f64>, DMatrix<f64>) {
    let (mean, second) = first_and_second_moments(points, dim);
    let cov = second - &mean * mean.transpose();
    (mean, cov)
}

/// m rows of N(mean, V diag(λ) Vᵀ) with λ floored at `floor`, each clipped to [−1, 1].
pub(super) fn sample_rows(
    mean: &DVector<f64>,
    cov: DMatrix<f64>,
    floor: f64,
    m: usize,
    rng: &mut NoiseSource,
) -> Vec<f64> {
    let dim = mean.len();
    let eigen = cov.symmetric_eigen();
    let roots = eigen.eigenvalues.map(|l| l.max(floor).sqrt());
    let factor = &eigen.eigenvectors * DMatrix::from_diagonal(&roots);
    let mut values = Vec::with_capacity(m * dim);
    for _ in 0..m {
        let z = DVector::from_fn(dim, |_, _| rng.sample::<f64, _>(StandardNormal));
        let x = mean + &factor * z;
        values.extend(x.iter().map(|v| v.clamp(-1.0, 1.0)));
    }
    values
}
