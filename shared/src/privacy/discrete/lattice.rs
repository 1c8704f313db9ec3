//! **Sums of clipped vectors on a lattice, with discrete Gaussian noise**: the noisy batch sum
//! of DP-SGD computed so that the noise *as sampled* is the noise its proof analyses. Each
//! clipped vector is rounded to a public power-of-two grid, the integer vectors are summed
//! exactly, and independent discrete Gaussians ([`super::gaussian`], Canonne, Kamath & Steinke
//! 2020, Algorithm 3) are added before the sum is scaled back. The argument that the
//! Poisson-subsampled version keeps the sampled Gaussian mechanism's RDP at integer orders is
//! `docs/proofs/dp-sgd-lattice.md`; this module states what it relies on.
//!
//! **The mechanism.** Public: the clipping norm C, the dimension d and the noise multiplier σ.
//!
//! 1. γ is the largest power of two ≤ 2^{−20}·C/√d (a function of C and d only).
//! 2. Each vector g with ‖g‖₂ ≤ C (the caller clips) becomes c = round(g/γ) ∈ ℤ^d (g/γ is exact:
//!    γ is a power of two). Each coordinate moves by at most ½, so by Minkowski's inequality
//!    ‖c‖₂ ≤ ‖g‖₂/γ + √d/2 ≤ C/γ + √d/2.
//! 3. **K = ⌈C/γ + √d/2⌉ + 1**, an integer, is the public bound on ‖c‖₂, and it is *enforced
//!    exactly*: Σ c_j² ≤ K² is checked in integer arithmetic, and a vector above it (possible
//!    only through rounding in the caller's floating-point clipping) has its coordinates moved
//!    one step towards zero until it holds. So whatever the caller's arithmetic did, adding or
//!    removing one vector changes the integer sum S = Σ c by an integer vector of norm ≤ K.
//! 4. The release is γ·(S + Z) with Z_j ~ N_ℤ(0, s²) independent and **s = σ·K** (s² computed
//!    in f64 with a relative margin of 2^{−40}; the sampler uses its exact rational value, which
//!    is ≥ σ²K²). S + Z is clamped to ±2^53 (post-processing, below) so that the product is an
//!    exact double.
//!
//! **Privacy, one step.** For a fixed shift v ∈ ℤ^d with ‖v‖₂ ≤ K the discrete Gaussian's Rényi
//! divergence is at most the continuous Gaussian's: D_α(N_ℤ(v, s²)^d ‖ N_ℤ(0, s²)^d) ≤
//! α‖v‖²/(2s²) ≤ α/(2σ²) ([`super::gaussian`]'s module docs). The proof page lifts this to the
//! Poisson-subsampled mixture at integer orders and to both directions of add/remove-one.
//!
//! **Cost in utility.** γ√d/C ≤ 2^{−20}, so the released noise has standard deviation
//! γ·s = σ·γ·K ≤ σ·C·(1 + 2^{−20}·(1/2 + 2/√d) + …) — about σC — and rounding moves each vector
//! by at most γ√d/2 ≤ 2^{−21}·C.
//!
//! **Refusals** (typed, from public parameters): C or σ not finite and positive, d = 0, s above
//! 2^48 cells ([`super::grid::MAX_CELL_SIGMA`]), a grid outside [2^{−1000}, 2^{900}].

use super::DiscreteError;
use super::gaussian::DiscreteGaussian;
use super::grid::{GRID_BITS, MAX_CELL_SIGMA, check_grid, positive, power_of_two_at_most};
use crate::privacy::noise::NoiseSource;

/// |S + Z| is clamped to 2^53 (exact in f64).
const MAX_CELLS: i128 = 1 << 53;

/// The relative margin on s².
const MARGIN: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;

/// The noisy sum of clipped vectors on a lattice (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct LatticeSum {
    grid: f64,
    cell_bound: u64,
    cell_variance: f64,
    dim: usize,
    sampler: DiscreteGaussian,
}

impl LatticeSum {
    /// The mechanism for vectors of `dim` coordinates clipped to ℓ₂ norm `clip`, with noise
    /// multiplier `noise_multiplier` (module docs).
    pub fn new(noise_multiplier: f64, clip: f64, dim: usize) -> Result<Self, DiscreteError> {
        positive("noise multiplier", noise_multiplier)?;
        positive("clipping norm", clip)?;
        if dim == 0 {
            return Err(DiscreteError::InvalidParameter {
                name: "coordinates",
                value: 0.0,
                needs: "at least 1",
            });
        }
        let root_d = (dim as f64).sqrt();
        let grid = power_of_two_at_most(2f64.powi(-GRID_BITS) * clip / root_d).unwrap_or(0.0);
        check_grid(grid, grid)?;
        // C/γ is exact (γ is a power of two); the +1 covers the rounding of √d/2 and of the sum.
        let cell_bound = (clip / grid + root_d / 2.0).ceil() + 1.0;
        let cell_sigma = noise_multiplier * cell_bound;
        if cell_sigma > MAX_CELL_SIGMA {
            return Err(DiscreteError::OutOfRange {
                what: "noise in grid cells",
                value: cell_sigma,
                limit: MAX_CELL_SIGMA,
            });
        }
        let cell_variance = cell_sigma * cell_sigma * MARGIN;
        Ok(Self {
            grid,
            cell_bound: cell_bound as u64,
            cell_variance,
            dim,
            sampler: DiscreteGaussian::from_f64(cell_variance)?,
        })
    }

    /// γ, the power of two every output is a multiple of.
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// K, the enforced bound on the ℓ₂ norm of one rounded vector, in grid cells.
    pub fn cell_bound(&self) -> u64 {
        self.cell_bound
    }

    /// s², the discrete Gaussian's σ² in grid cells (its exact value is the sampler's).
    pub fn cell_variance(&self) -> f64 {
        self.cell_variance
    }

    /// γ·s: the standard deviation of the noise in the vectors' units (about σC).
    pub fn noise_std(&self) -> f64 {
        self.grid * self.cell_variance.sqrt()
    }

    /// True when a sum of `rows` rounded vectors is exact in `i64`: rows·(K + 1) < 2^62.
    pub fn holds_sums_of(&self, rows: usize) -> bool {
        (rows as u128).saturating_mul(u128::from(self.cell_bound) + 1) < 1u128 << 62
    }

    /// Adds round(`g`/γ) to the integer sum `acc`, with its norm enforced to be ≤ K in exact
    /// integer arithmetic (module docs, step 3).
    pub fn add(&self, acc: &mut [i64], g: &[f64]) {
        debug_assert_eq!(acc.len(), self.dim);
        let limit = self.cell_bound.saturating_add(1) as f64;
        // |g_j/γ| ≤ K + 1 for a clipped g; a clamp keeps anything else (NaN is 0) bounded too.
        let mut cells: Vec<i64> = g
            .iter()
            .map(|&x| (x / self.grid).round().clamp(-limit, limit) as i64)
            .collect();
        let bound = u128::from(self.cell_bound) * u128::from(self.cell_bound);
        let norm2 = |c: &[i64]| {
            c.iter()
                .map(|&v| (v as i128 * v as i128) as u128)
                .sum::<u128>()
        };
        while norm2(&cells) > bound {
            for v in &mut cells {
                *v -= v.signum();
            }
        }
        for (a, c) in acc.iter_mut().zip(&cells) {
            *a = a.saturating_add(*c);
        }
    }

    /// γ·(S + Z) for the integer sum `acc`, written into `out` (module docs, step 4).
    pub fn release(&self, acc: &[i64], rng: &mut NoiseSource, out: &mut [f64]) {
        for (o, &s) in out.iter_mut().zip(acc) {
            let noisy = i128::from(s).saturating_add(self.sampler.sample(rng));
            *o = noisy.clamp(-MAX_CELLS, MAX_CELLS) as f64 * self.grid;
        }
    }

    /// The same lattice with another noise variance: the mutant of the tests.
    #[cfg(test)]
    pub(crate) fn with_cell_variance(&self, cell_variance: f64) -> Self {
        Self {
            cell_variance,
            sampler: DiscreteGaussian::from_f64(cell_variance).expect("valid"),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::rational::Ratio;
    use super::super::testing::on_grid;
    use super::*;
    use num_bigint::BigUint;

    #[test]
    fn the_grid_and_the_cell_bound_follow_the_public_parameters() {
        let m = LatticeSum::new(1.5, 1.0, 4).expect("valid");
        // 2^-20·1/2 = 2^-21; K = ⌈2^21 + 1⌉ + 1.
        assert_eq!(m.grid(), 2f64.powi(-21));
        assert_eq!(m.cell_bound(), (1 << 21) + 2);
        let s = 1.5 * m.cell_bound() as f64;
        assert!(m.cell_variance() >= s * s);
        assert!(
            (m.noise_std() / 1.5 - 1.0).abs() < 1e-5,
            "{}",
            m.noise_std()
        );
    }

    /// The exact rational s² is at least σ²·K²: the stated curve holds for the sampler's law.
    #[test]
    fn the_sampled_variance_pays_for_the_enforced_bound() {
        for (sigma, clip, d) in [(1.5, 1.0, 4), (0.37, 0.01, 1), (12.0, 3.0, 100)] {
            let m = LatticeSum::new(sigma, clip, d).expect("valid");
            let s2 = Ratio::from_f64(m.cell_variance()).expect("finite");
            let sig = Ratio::from_f64(sigma).expect("finite");
            let k = BigUint::from(m.cell_bound());
            // s2.num/s2.den ≥ sig.num²·K²/sig.den².
            let left = s2.num() * sig.den() * sig.den();
            let right = sig.num() * sig.num() * &k * &k * s2.den();
            assert!(left >= right, "{sigma} {clip} {d}");
        }
    }

    #[test]
    fn every_rounded_vector_is_within_the_bound_even_above_the_clip() {
        let m = LatticeSum::new(1.0, 1.0, 3).expect("valid");
        let k2 = u128::from(m.cell_bound()).pow(2);
        let third = (1.0f64 / 3.0).sqrt();
        // On the sphere, slightly outside it (as f64 clipping may leave it), far outside, NaN.
        for g in [
            vec![third; 3],
            vec![third * (1.0 + 1e-15); 3],
            vec![5.0, -7.0, 0.5],
            vec![f64::NAN, 1.0, 0.0],
        ] {
            let mut acc = vec![0i64; 3];
            m.add(&mut acc, &g);
            let norm2: u128 = acc.iter().map(|&v| (v as i128 * v as i128) as u128).sum();
            assert!(norm2 <= k2, "{g:?}: {norm2} > {k2}");
        }
        // A vector well inside is rounded, not shrunk.
        let mut acc = vec![0i64; 3];
        m.add(&mut acc, &[0.5, -0.25, 0.0]);
        let g = m.grid();
        assert_eq!(acc, vec![(0.5 / g) as i64, (-0.25 / g) as i64, 0]);
    }

    /// Residuals (release − exact sum)/(γs) of `draws` releases of a fixed sum.
    fn residuals(m: &LatticeSum, truth: &LatticeSum, draws: usize, seed: u64) -> Vec<f64> {
        let mut rng = NoiseSource::seeded(seed);
        let mut acc = vec![0i64; 2];
        m.add(&mut acc, &[0.6, -0.8]);
        m.add(&mut acc, &[0.3, 0.1]);
        let exact = [acc[0] as f64 * m.grid(), acc[1] as f64 * m.grid()];
        let mut out = vec![0.0; 2];
        let mut z = Vec::with_capacity(2 * draws);
        for _ in 0..draws {
            m.release(&acc, &mut rng, &mut out);
            assert!(out.iter().all(|&v| on_grid(v, m.grid())));
            z.extend(
                out.iter()
                    .zip(&exact)
                    .map(|(o, e)| (o - e) / truth.noise_std()),
            );
        }
        z
    }

    /// The Kolmogorov–Smirnov test against N(0, 1) does not reject at 0.1 %.
    fn looks_standard_normal(z: &[f64]) -> bool {
        use statrs::distribution::{ContinuousCDF, Normal};
        let normal = Normal::new(0.0, 1.0).expect("valid");
        crate::util::stats::ks_test(z, |x| normal.cdf(x)).p_value > 1e-3
    }

    #[test]
    fn the_noise_is_gaussian_with_the_stated_scale_and_half_of_it_is_caught() {
        let m = LatticeSum::new(0.8, 1.0, 2).expect("valid");
        assert!(looks_standard_normal(&residuals(&m, &m, 10_000, 901)));
        let mutant = m.with_cell_variance(m.cell_variance() / 4.0);
        assert!(!looks_standard_normal(&residuals(&mutant, &m, 10_000, 902)));
    }

    #[test]
    fn absurd_parameters_are_typed_errors() {
        for (sigma, clip, d) in [
            (f64::NAN, 1.0, 1),
            (1.0, 0.0, 1),
            (1.0, 1.0, 0),
            (-1.0, 1.0, 1),
            (1.0, f64::INFINITY, 1),
        ] {
            assert!(
                matches!(
                    LatticeSum::new(sigma, clip, d),
                    Err(DiscreteError::InvalidParameter { .. })
                ),
                "{sigma} {clip} {d}"
            );
        }
        assert!(matches!(
            LatticeSum::new(1e30, 1.0, 1),
            Err(DiscreteError::OutOfRange { .. })
        ));
    }
}
