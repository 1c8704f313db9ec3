//! χ² goodness-of-fit of integer samples against a law given by its CDF, the CDFs of the
//! discrete Laplace and discrete Gaussian computed in f64 from their closed forms, and the
//! draw-for-draw comparison of a sampler's two paths — shared by the tests of the samplers and of
//! every release that uses them.

use super::GridGaussian;
use crate::privacy::noise::NoiseSource;
use rand::RngExt;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// At least this many expected samples per cell (the usual rule is 5).
const MIN_EXPECTED: f64 = 8.0;

/// `count` integer draws of `draw` from a source seeded with `seed`.
pub(crate) fn draws(
    count: usize,
    seed: u64,
    mut draw: impl FnMut(&mut NoiseSource) -> i128,
) -> Vec<i128> {
    let mut rng = NoiseSource::seeded(seed);
    (0..count).map(|_| draw(&mut rng)).collect()
}

/// Asserts that `fast` and `big` — two paths of one sampler — give the same `n` values from
/// sources seeded alike with `seed`, and leave them in the same state.
pub(crate) fn assert_same_draws<T: PartialEq + std::fmt::Debug>(
    seed: u64,
    n: usize,
    mut fast: impl FnMut(&mut NoiseSource) -> T,
    mut big: impl FnMut(&mut NoiseSource) -> T,
) {
    let (mut a, mut b) = (NoiseSource::seeded(seed), NoiseSource::seeded(seed));
    for draw in 0..n {
        assert_eq!(fast(&mut a), big(&mut b), "seed {seed}, draw {draw}");
    }
    assert_eq!(
        a.random::<u64>(),
        b.random::<u64>(),
        "seed {seed}: the states differ"
    );
}

/// True when `y` is an integer multiple of `grid` (a power of two: y/grid is exact).
pub(crate) fn on_grid(y: f64, grid: f64) -> bool {
    let cells = y / grid;
    cells == cells.round()
}

/// Cell edges e_0 < e_1 < … for a χ² test of `n` samples: the candidates `start`, `start + step`,
/// … up to −`start`, kept greedily so that every cell (−∞, e_0], (e_0, e_1], …, (e_last, ∞)
/// expects at least 8 samples (the tails and sparse cells are merged).
pub(crate) fn edges_for(
    cdf: &impl Fn(i128) -> f64,
    n: usize,
    start: i128,
    step: i128,
) -> Vec<i128> {
    let min_mass = MIN_EXPECTED / n as f64;
    let mut edges = Vec::new();
    let mut below = 0.0;
    let mut e = start;
    while e <= -start {
        let f = cdf(e);
        if f - below >= min_mass && 1.0 - f >= min_mass {
            edges.push(e);
            below = f;
        }
        e += step;
    }
    edges
}

/// The p-value of the χ² test of `samples` against the law with CDF `cdf` (F(z) = P(Z ≤ z)) over
/// the cells cut by `edges` (see [`edges_for`]); cells − 1 degrees of freedom.
pub(crate) fn chi_square_by_cdf(
    samples: &[i128],
    edges: &[i128],
    cdf: &impl Fn(i128) -> f64,
) -> f64 {
    assert!(edges.len() >= 2, "too few cells: {edges:?}");
    let mut observed = vec![0.0; edges.len() + 1];
    for &z in samples {
        observed[edges.partition_point(|&e| e < z)] += 1.0;
    }
    let n = samples.len() as f64;
    let mut below = 0.0;
    let mut stat = 0.0;
    for (i, o) in observed.iter().enumerate() {
        let upto = edges.get(i).map_or(1.0, |&e| cdf(e));
        let expected = n * (upto - below);
        below = upto;
        stat += (o - expected) * (o - expected) / expected;
    }
    let df = edges.len() as f64;
    1.0 - ChiSquared::new(df).expect("df > 0").cdf(stat)
}

/// The p-value of the χ² test of `outputs` of `m` at input `x` against the law it states:
/// g·(c + Z) with c = round(clamp(x)/g) and Z ~ N_ℤ(0, s²) (cells of s/4 over ±5s, tails merged).
/// Outputs of another mechanism (a mutant) are read on `m`'s grid, rounded.
pub(crate) fn grid_chi_square(m: &GridGaussian, x: f64, outputs: &[f64]) -> f64 {
    let c = i128::from(m.cells(x).expect("not NaN"));
    let noise: Vec<i128> = outputs
        .iter()
        .map(|&y| (y / m.grid()).round() as i128 - c)
        .collect();
    let cdf = discrete_gaussian_cdf(m.cell_variance());
    let sigma = m.cell_variance().sqrt();
    let step = ((sigma / 4.0) as i128).max(1);
    let edges = edges_for(&cdf, outputs.len(), -((5.0 * sigma) as i128) - 2, step);
    chi_square_by_cdf(&noise, &edges, &cdf)
}

/// The CDF of Lap_ℤ(t): P(Z ≤ z) = r^{−z}/(1 + r) for z < 0 and 1 − r^{z+1}/(1 + r) for z ≥ 0,
/// r = e^{−1/t}.
pub(crate) fn discrete_laplace_cdf(t: f64) -> impl Fn(i128) -> f64 {
    let r = (-1.0 / t).exp();
    move |z| {
        let z = z as f64;
        if z < 0.0 {
            (z / t).exp() / (1.0 + r)
        } else {
            1.0 - (-(z + 1.0) / t).exp() / (1.0 + r)
        }
    }
}

/// The CDF of the discrete Gaussian N_ℤ(0, σ²), P(z) ∝ e^{−z²/(2σ²)}: summed exactly over
/// |z| ≤ 40σ + 10 for σ ≤ 1000; above, Φ((z + ½)/σ), whose error (Euler–Maclaurin, O(σ^{−2}))
/// is below 10^{−6}.
pub(crate) fn discrete_gaussian_cdf(sigma2: f64) -> Box<dyn Fn(i128) -> f64> {
    let sigma = sigma2.sqrt();
    if sigma > 1000.0 {
        let normal = Normal::new(0.0, sigma).expect("σ > 0");
        return Box::new(move |z| normal.cdf(z as f64 + 0.5));
    }
    let m = (40.0 * sigma) as i128 + 10;
    let weights: Vec<f64> = (-m..=m)
        .map(|z| (-((z * z) as f64) / (2.0 * sigma2)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let mut cumulative = Vec::with_capacity(weights.len());
    let mut acc = 0.0;
    for w in weights {
        acc += w / total;
        cumulative.push(acc);
    }
    Box::new(move |z| {
        if z < -m {
            0.0
        } else if z >= m {
            1.0
        } else {
            cumulative[(z + m) as usize]
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cdfs_are_laws() {
        let lap = discrete_laplace_cdf(2.0);
        let r = (-0.5f64).exp();
        // P(0) = (1 − r)/(1 + r).
        assert!(((lap(0) - lap(-1)) - (1.0 - r) / (1.0 + r)).abs() < 1e-15);
        assert!(lap(-200) < 1e-40 && lap(200) == 1.0);
        let gauss = discrete_gaussian_cdf(4.0);
        assert!(
            (gauss(0) - gauss(-1) - 1.0 / (2.0 * std::f64::consts::PI * 4.0).sqrt()).abs() < 1e-9
        );
        assert!((gauss(-1) - (1.0 - gauss(0))).abs() < 1e-12, "symmetric");
        let wide = discrete_gaussian_cdf(1e8);
        assert!((wide(-1) - 0.5).abs() < 1e-4);
    }

    #[test]
    fn edges_leave_enough_expected_samples_in_every_cell() {
        let lap = discrete_laplace_cdf(1.0);
        let edges = edges_for(&lap, 1000, -50, 1);
        let mut below = 0.0;
        for &e in &edges {
            assert!(1000.0 * (lap(e) - below) >= MIN_EXPECTED);
            below = lap(e);
        }
        assert!(1000.0 * (1.0 - below) >= MIN_EXPECTED);
    }
}
