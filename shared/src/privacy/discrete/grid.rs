//! The **Gaussian mechanism on a public grid**: a real vector query released as
//! g·(round(x/g) + Z) with Z a vector of independent discrete Gaussians ([`super::gaussian`],
//! Canonne, Kamath & Steinke 2020, Algorithm 3), keeping the continuous Gaussian mechanism's
//! Rényi-DP curve exactly. This is what replaces `x + σ·N(0, 1)` drawn in f64, which leaks
//! through its low-order bits (Mironov, CCS 2012).
//!
//! **The mechanism.** A query f with values in ℝ^d whose **ℓ₂ sensitivity** is Δ under the
//! caller's neighbour relation (replace-one everywhere in dpagg), released by the continuous
//! Gaussian mechanism with standard deviation σ, has the RDP curve α·Δ²/(2σ²) (Mironov 2017,
//! Proposition 7) — what the ledger composes. On the grid:
//!
//! 1. g is the largest power of two ≤ 2^{−20}·min(σ, Δ/√d), raised if needed to the smallest
//!    power of two ≥ B·2^{−52} (so that |x/g| ≤ 2^52 for the clamped values below): a function
//!    of the public σ, Δ, d and B only, never of the data ([`GridGaussian::new`]).
//! 2. Each coordinate is clamped to the public [−B, B] (1-Lipschitz, so ‖·‖₂ distances do not
//!    grow) and rounded: c_j = round(x_j/g) ∈ ℤ (x_j/g is exact: g is a power of two).
//! 3. Z_j ~ N_ℤ(0, s²) independently, with **s = (σ/Δ)·(Δ/g + √d)**, and the release is
//!    g·(c + Z) — an exact double (below).
//!
//! **Why the stated curve still holds (the rounding argument).** For reals a, b,
//! |round(a) − round(b)| ≤ |a − b| + 1 (each rounding moves by at most ½), and the rounded values
//! are equal when a = b. So for neighbours x, x′, coordinate by coordinate
//! |c_j − c′_j| ≤ |x_j − x′_j|/g + 1, and by Minkowski's inequality
//! ‖c − c′‖₂ ≤ ‖x − x′‖₂/g + ‖(1, …, 1)‖₂ ≤ **Δ/g + √d**. The discrete Gaussian's divergence
//! bound for integer shifts of a vector with independent coordinates ([`super::gaussian`]'s
//! module docs; CKS 2020) gives
//! D_α(c + Z ‖ c′ + Z) ≤ α·‖c − c′‖₂²/(2s²) ≤ α·(Δ/g + √d)²/(2s²) = **α·Δ²/(2σ²)**, the continuous
//! mechanism's curve at every order α; multiplying by g is a bijection (post-processing).
//! Every (ε, δ) the ledger derives from the curve therefore holds unchanged.
//!
//! **Cost in utility.** By the choice of g, g·√d/Δ ≤ 2^{−20}, so the released noise has standard
//! deviation g·s = σ·(1 + g√d/Δ) ≤ σ·(1 + 2^{−20}), and rounding moves a value by at most
//! g/2 ≤ 2^{−21}σ — unless B is more than 2^{32} times min(σ, Δ/√d) and g had to be raised,
//! when both costs grow with g (the guarantee does not change).
//!
//! **Exact arithmetic.** s² is computed in f64 with a relative margin of 2^{−40}, far above the
//! rounding of the few operations that compute it (each ≤ 2^{−53} relative), so the exact
//! rational value the sampler uses ([`super::rational::Ratio::from_f64`]) is at least
//! (σ/Δ)²(Δ/g + √d)² — the guarantee is stated for it. The integer c + Z is clamped to
//! ±2^53 (post-processing; |Z| > 2^52 has probability below e^{−2^7} at the largest s
//! allowed, 2^48, and far less in practice) so that (c + Z)·g is an exact double; g is kept in
//! [2^{−1000}, 2^{900}] so that the product is normal.
//!
//! **Refusals** (typed, from the public parameters only): σ, Δ or B not finite and positive,
//! d = 0, s above 2^48 (beyond what the integers above support exactly), a grid outside
//! [2^{−1000}, 2^{900}]; a NaN value at release time.

use super::DiscreteError;
use super::gaussian::DiscreteGaussian;
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::power_of_two_at_least;

/// g ≤ 2^{−GRID_BITS}·min(σ, Δ/√d).
pub const GRID_BITS: i32 = 20;

/// The largest s (in grid cells) allowed.
pub const MAX_CELL_SIGMA: f64 = (1u64 << 48) as f64;

/// The largest B/g (so |c| ≤ 2^52): g is raised to keep it.
pub const MAX_BOUND_CELLS: f64 = (1u64 << 52) as f64;

/// |c + Z| is clamped to 2^53 (exact in f64).
const MAX_CELLS: i128 = 1 << 53;

/// The relative margin on s².
const MARGIN: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;

/// The largest power of two ≤ `x`, exactly, for a positive normal `x`; `None` otherwise.
pub fn power_of_two_at_most(x: f64) -> Option<f64> {
    if !(x.is_normal() && x > 0.0) {
        return None;
    }
    Some(f64::from_bits(x.to_bits() & !((1u64 << 52) - 1)))
}

/// Refuses a grid outside [2^{−1000}, 2^{900}] (so that multiples of it stay normal doubles),
/// reporting `shown`.
pub(super) fn check_grid(grid: f64, shown: f64) -> Result<(), DiscreteError> {
    if grid >= 2f64.powi(-1000) && grid <= 2f64.powi(900) {
        Ok(())
    } else {
        Err(DiscreteError::OutOfRange {
            what: "grid",
            value: shown,
            limit: 2f64.powi(900),
        })
    }
}

/// The Gaussian mechanism on a public grid for a vector query (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct GridGaussian {
    grid: f64,
    bound: f64,
    cell_variance: f64,
    sampler: DiscreteGaussian,
}

pub(super) fn positive(name: &'static str, value: f64) -> Result<(), DiscreteError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(DiscreteError::InvalidParameter {
            name,
            value,
            needs: "must be a finite number > 0",
        })
    }
}

fn at_most(what: &'static str, value: f64, limit: f64) -> Result<(), DiscreteError> {
    if value <= limit {
        Ok(())
    } else {
        Err(DiscreteError::OutOfRange { what, value, limit })
    }
}

impl GridGaussian {
    /// The mechanism for a query of `coordinates` values, each within ±`bound` (clamped), with
    /// ℓ₂ sensitivity `sensitivity`, that keeps the curve α·Δ²/(2·`std`²) of the continuous
    /// Gaussian mechanism with standard deviation `std` (module docs).
    pub fn new(
        std: f64,
        sensitivity: f64,
        coordinates: usize,
        bound: f64,
    ) -> Result<Self, DiscreteError> {
        positive("standard deviation", std)?;
        positive("sensitivity", sensitivity)?;
        positive("bound", bound)?;
        if coordinates == 0 {
            return Err(DiscreteError::InvalidParameter {
                name: "coordinates",
                value: 0.0,
                needs: "at least 1",
            });
        }
        let root_d = (coordinates as f64).sqrt();
        let scale = 2f64.powi(-GRID_BITS) * std.min(sensitivity / root_d);
        // Raised when needed so that B/g ≤ 2^52 (B/2^52 is exact; 0 when it is subnormal).
        let floor = power_of_two_at_least(bound / MAX_BOUND_CELLS).unwrap_or(0.0);
        let grid = power_of_two_at_most(scale).unwrap_or(0.0).max(floor);
        check_grid(grid, grid.max(scale))?;
        let cells = sensitivity / grid + root_d;
        let ratio = std / sensitivity;
        let cell_sigma = ratio * cells;
        at_most("noise in grid cells", cell_sigma, MAX_CELL_SIGMA)?;
        let cell_variance = cell_sigma * cell_sigma * MARGIN;
        Ok(Self {
            grid,
            bound,
            cell_variance,
            sampler: DiscreteGaussian::from_f64(cell_variance)?,
        })
    }

    /// g, the power of two every output is a multiple of.
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// B, the clamping bound of the inputs.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// s², the discrete Gaussian's σ² in grid cells (its exact value is the sampler's).
    pub fn cell_variance(&self) -> f64 {
        self.cell_variance
    }

    /// g·s: the standard deviation of the noise in the query's units (≤ σ·(1 + 2^{−20}), up
    /// to the 2^{−40} margin).
    pub fn noise_std(&self) -> f64 {
        self.grid * self.cell_variance.sqrt()
    }

    /// c = round(clamp_B(x)/g), the value in grid cells before noise; NaN refused.
    pub fn cells(&self, x: f64) -> Result<i64, DiscreteError> {
        if x.is_nan() {
            return Err(DiscreteError::NotANumber);
        }
        // |x/g| ≤ B/g ≤ 2^52: exact, and an integer after rounding.
        Ok((x.clamp(-self.bound, self.bound) / self.grid).round() as i64)
    }

    /// g·(c + Z) for one coordinate (module docs): an exact multiple of g.
    pub fn sample(&self, x: f64, rng: &mut NoiseSource) -> Result<f64, DiscreteError> {
        let c = i128::from(self.cells(x)?);
        let n = c.saturating_add(self.sampler.sample(rng));
        Ok(n.clamp(-MAX_CELLS, MAX_CELLS) as f64 * self.grid)
    }

    /// Every coordinate of `values` released with independent noise.
    pub fn release(
        &self,
        values: &[f64],
        rng: &mut NoiseSource,
    ) -> Result<Vec<f64>, DiscreteError> {
        values.iter().map(|&x| self.sample(x, rng)).collect()
    }

    /// The same grid and bound with another noise variance: the mutant of the tests.
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
    use super::super::testing::{grid_chi_square, on_grid};
    use super::*;
    use num_bigint::BigUint;

    #[test]
    fn the_grid_is_a_power_of_two_far_below_the_noise() {
        let m = GridGaussian::new(3.0, 2.0, 4, 100.0).expect("valid");
        // min(3, 2/2) = 1: g = 2^-20.
        assert_eq!(m.grid(), 2f64.powi(-20));
        // s = (3/2)(2·2^20 + 2).
        let s = 1.5 * (2.0 * 2f64.powi(20) + 2.0);
        assert!((m.cell_variance() / (s * s) - 1.0).abs() < 1e-11);
        assert!(m.cell_variance() >= s * s);
        assert!(m.noise_std() <= 3.0 * (1.0 + 2f64.powi(-20)) * (1.0 + 1e-11));
        assert_eq!(power_of_two_at_most(3.0), Some(2.0));
        assert_eq!(power_of_two_at_most(0.25), Some(0.25));
        assert_eq!(power_of_two_at_most(0.0), None);
    }

    /// s²·Δ²·g² ≥ σ²·(Δ + 2g)² in exact rationals: s² ≥ (σ/Δ)²·(Δ/g + √d)² for d = 4.
    fn pays_for_rounding(s2: f64, std: f64, sens: f64, grid: f64) -> bool {
        let r = |x: f64| Ratio::from_f64(x).expect("finite");
        let (s2, d, g, sd) = (r(s2), r(sens), r(grid), r(std));
        // Δ + 2g = h/k exactly.
        let h = d.num() * g.den() + ((g.num() * d.den()) << 1u32);
        let k = d.den() * g.den();
        let left: BigUint =
            s2.num() * d.num() * d.num() * g.num() * g.num() * sd.den() * sd.den() * &k * &k;
        let right: BigUint =
            sd.num() * sd.num() * &h * &h * s2.den() * d.den() * d.den() * g.den() * g.den();
        left >= right
    }

    #[test]
    fn the_cell_noise_pays_exactly_for_the_rounding() {
        for (std, sens, bound) in [(3.0, 2.0, 100.0), (0.7, 0.3, 1.0), (1234.5, 17.25, 1e6)] {
            let m = GridGaussian::new(std, sens, 4, bound).expect("valid");
            assert!(pays_for_rounding(m.cell_variance(), std, sens, m.grid()));
            // The check fails for noise that ignores the rounding, (σ/g)², and for s² without
            // its margin rounded down by one part in 2^30.
            let bare = (std / m.grid()).powi(2);
            assert!(
                !pays_for_rounding(bare, std, sens, m.grid()),
                "{std} {sens}"
            );
            let short = m.cell_variance() / (1.0 + 2f64.powi(-30));
            assert!(
                !pays_for_rounding(short, std, sens, m.grid()),
                "{std} {sens}"
            );
        }
    }

    #[test]
    fn a_bound_far_above_the_noise_raises_the_grid_and_keeps_the_guarantee() {
        // B = 2^40·σ: 2^{-20}σ would put B at 2^60 cells; g is raised to B·2^{-52} = 2^{-12}.
        let m = GridGaussian::new(1.0, 1.0, 4, 2f64.powi(40)).expect("valid");
        assert_eq!(m.grid(), 2f64.powi(-12));
        assert!(pays_for_rounding(m.cell_variance(), 1.0, 1.0, m.grid()));
        let mut rng = NoiseSource::seeded(720);
        let y = m.sample(2f64.powi(41), &mut rng).expect("sample");
        assert!(on_grid(y, m.grid()) && (y - 2f64.powi(40)).abs() < 10.0);
    }

    #[test]
    fn outputs_are_exact_multiples_of_the_grid_within_reach_of_the_clamp() {
        let m = GridGaussian::new(0.01, 1.0, 9, 2.0).expect("valid");
        let mut rng = NoiseSource::seeded(700);
        for x in [0.123_456_789, -1.999_999, 1e9, -1e-300, 0.0] {
            for _ in 0..500 {
                let y = m.sample(x, &mut rng).expect("sample");
                assert!(
                    on_grid(y, m.grid()),
                    "{y} is not a multiple of {}",
                    m.grid()
                );
                let centre = x.clamp(-2.0, 2.0);
                assert!((y - centre).abs() < 10.0 * 0.01 * 1.001, "{x} → {y}");
            }
        }
    }

    #[test]
    fn noise_is_the_discrete_gaussian_of_the_stated_variance_and_half_is_caught() {
        let m = GridGaussian::new(0.5, 1.0, 3, 10.0).expect("valid");
        let draw = |m: &GridGaussian, seed: u64| -> Vec<f64> {
            let mut rng = NoiseSource::seeded(seed);
            (0..30_000)
                .map(|_| m.sample(0.37, &mut rng).expect("sample"))
                .collect()
        };
        let p = grid_chi_square(&m, 0.37, &draw(&m, 710));
        assert!(p > 1e-3, "p = {p}");
        let mutant = m.with_cell_variance(m.cell_variance() / 4.0);
        let p = grid_chi_square(&m, 0.37, &draw(&mutant, 711));
        assert!(p < 1e-6, "mutant p = {p}");
    }

    #[test]
    fn absurd_parameters_are_typed_errors() {
        for (std, sens, d, bound) in [
            (f64::NAN, 1.0, 1, 1.0),
            (1.0, 0.0, 1, 1.0),
            (1.0, 1.0, 0, 1.0),
            (1.0, 1.0, 1, f64::INFINITY),
            (-1.0, 1.0, 1, 1.0),
        ] {
            assert!(
                matches!(
                    GridGaussian::new(std, sens, d, bound),
                    Err(DiscreteError::InvalidParameter { .. })
                ),
                "{std} {sens} {d} {bound}"
            );
        }
        // σ far above Δ: s = σ/Δ·(…) beyond 2^48 cells.
        assert!(matches!(
            GridGaussian::new(1e20, 1.0, 1, 1.0),
            Err(DiscreteError::OutOfRange { .. })
        ));
        // A grid below 2^-1000.
        assert!(matches!(
            GridGaussian::new(1e-300, 1e-300, 1, 1e-300),
            Err(DiscreteError::OutOfRange { .. })
        ));
        let m = GridGaussian::new(1.0, 1.0, 1, 1.0).expect("valid");
        assert_eq!(
            m.sample(f64::NAN, &mut NoiseSource::seeded(1)),
            Err(DiscreteError::NotANumber)
        );
    }
}
