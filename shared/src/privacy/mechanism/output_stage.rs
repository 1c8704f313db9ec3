//! The snapped output stage that covers an objective-perturbation solver's inexact minimiser.
//!
//! Objective perturbation's proofs (Chaudhuri, Monteleoni & Sarwate 2011 Theorem 9; Kifer, Smith
//! & Thakurta 2012 Theorem 2) are about the *exact* minimiser θ* of the perturbed objective
//! F(θ) = (1/n)Σℓ + (μ/2)‖θ‖² + (1/n)bᵀθ. The solver returns θ̂ with ‖∇F(θ̂)‖ ≤ γ. Approximate
//! minima perturbation (Iyengar et al., IEEE S&P 2019) closes the gap with a second, small noise
//! stage; here that stage is Mironov's snapping mechanism (CCS 2012 Theorem 1,
//! [`crate::privacy::snapping`]), so its f64 noise cannot leak through the release's low bits.
//!
//! **Public constants** (functions of n, d, μ, ε₂ and a public bound Q on ‖b‖ only):
//! - γ̃ = γ + κQ/n: the solver tolerance widened by the difference between the f64 draw of b and
//!   an exact draw (κ = [`SAMPLER_ACCURACY`], the assumed relative accuracy of the samplers);
//! - Δ₂ = 2γ̃/μ, the ℓ₂ distance of the computed minimisers for neighbours coupled as in the
//!   objective stage's proof (μ-strong convexity; `docs/proofs/objective-perturbation-inexact.md`
//!   Step 3), and Δ₁ = √d·Δ₂ its ℓ₁ bound;
//! - B₀ = (1 + γ + Q/n)/μ, a bound on every coordinate of θ̂ when ‖b‖ ≤ Q (first-order condition
//!   μθ̂ = −∇L(θ̂) − b/n + r with ‖∇L‖ ≤ 1, ‖r‖ ≤ γ): the clamp of the snapping mechanism.
//!
//! Every coordinate is then released by one snapped Laplace mechanism calibrated by
//! [`snapping::calibrate_vector`] at ε₂ for (Δ₁, d, B₀). The output lies on the public grid
//! ΛZ ∩ [−B, B]. **Composition:** if the exact minimiser is (ε₁, δ₁)-DP, the release is
//! (ε₁ + ε₂, e^{ε₂}δ₁)-DP (the proof's Step 4 with a D-dependent kernel bounded by e^{ε₂}, then
//! (ε₁, δ₁)-DP applied to a [0, 1]-valued function of θ*).

use crate::learn::solver::SolverOptions;
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::{self, SnappingError, VectorCalibration};
use std::collections::BTreeMap;

/// κ: the relative accuracy assumed of the f64 draw of the objective noise b.
pub const SAMPLER_ACCURACY: f64 = 1.0 / (1u64 << 40) as f64;

/// The calibrated output stage of one release size (n, d).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputStage {
    /// ε₂, the stage's share of ε.
    pub epsilon: f64,
    /// Q, the bound on ‖b‖ the stage is calibrated for.
    pub noise_bound: f64,
    /// B₀ = (1 + γ + Q/n)/μ, the public bound on every coordinate of θ̂.
    pub coordinate_bound: f64,
    /// Δ₁ = √d·2γ̃/μ: the ℓ₁ distance of the computed minimisers.
    pub sensitivity: f64,
    /// The snapped Laplace mechanism of every coordinate, and the ε₂ it achieves.
    pub calibration: VectorCalibration,
}

impl OutputStage {
    /// The solver settings the stage is calibrated for; γ is their tolerance.
    pub fn solver_options() -> SolverOptions {
        SolverOptions::default()
    }

    /// Calibrates the stage for `n` rows of dimension `dim`, total quadratic coefficient `mu`,
    /// objective noise bounded by `noise_bound` in ℓ₂, at ε₂ = `epsilon`; an error when
    /// Mironov's Theorem 1 does not cover the resulting scale and bound.
    pub fn calibrate(
        n: usize,
        dim: usize,
        mu: f64,
        noise_bound: f64,
        epsilon: f64,
    ) -> Result<Self, SnappingError> {
        let gamma = Self::solver_options().tolerance;
        let (d, rows) = (dim as f64, n as f64);
        let coordinate_bound = (1.0 + gamma + noise_bound / rows) / mu;
        let widened = gamma + SAMPLER_ACCURACY * noise_bound / rows;
        let sensitivity = d.sqrt() * 2.0 * widened / mu;
        let calibration = snapping::calibrate_vector(sensitivity, dim, coordinate_bound, epsilon)?;
        Ok(Self {
            epsilon,
            noise_bound,
            coordinate_bound,
            sensitivity,
            calibration,
        })
    }

    /// Releases every coordinate of the computed minimiser through the snapped mechanism.
    pub fn release(
        &self,
        theta: &[f64],
        noise: &mut NoiseSource,
    ) -> Result<Vec<f64>, SnappingError> {
        let snapped = &self.calibration.mechanism;
        theta.iter().map(|&t| snapped.sample(t, noise)).collect()
    }

    /// The stage's public constants as release parameters.
    pub fn parameters(&self) -> BTreeMap<String, f64> {
        let snapped = &self.calibration.mechanism;
        BTreeMap::from([
            ("epsilon_output".to_owned(), self.epsilon),
            (
                "solver_tolerance".to_owned(),
                Self::solver_options().tolerance,
            ),
            ("output_l1_sensitivity".to_owned(), self.sensitivity),
            ("output_laplace_scale".to_owned(), snapped.scale()),
            ("snapping_grid".to_owned(), snapped.grid()),
            ("snapping_bound".to_owned(), snapped.bound()),
            ("objective_noise_bound".to_owned(), self.noise_bound),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_follow_the_module_formulas() {
        let (n, d, mu, q) = (500, 9, 0.05, 80.0);
        let s = OutputStage::calibrate(n, d, mu, q, 0.01).expect("calibrates");
        let gamma = OutputStage::solver_options().tolerance;
        assert_eq!(s.coordinate_bound, (1.0 + gamma + q / 500.0) / mu);
        let widened = gamma + SAMPLER_ACCURACY * q / 500.0;
        assert_eq!(s.sensitivity, 3.0 * 2.0 * widened / mu);
        assert!(s.calibration.achieved <= 0.01);
        assert!(s.calibration.mechanism.bound() >= s.coordinate_bound);
    }

    #[test]
    fn releases_lie_on_the_public_grid_near_the_input() {
        let s = OutputStage::calibrate(500, 3, 0.05, 80.0, 0.01).expect("calibrates");
        let theta = [0.3, -1.2, 2.5];
        let out = s
            .release(&theta, &mut NoiseSource::seeded(3))
            .expect("release");
        let grid = s.calibration.mechanism.grid();
        for (o, t) in out.iter().zip(theta) {
            assert_eq!((o / grid).fract(), 0.0, "{o} on the grid {grid}");
            // The scale is tiny (Δ₁ ≈ 1e-6/ε₂): the release is θ̂ up to noise of that order.
            assert!((o - t).abs() < 1e-3, "{o} vs {t}");
        }
    }

    #[test]
    fn too_small_an_epsilon_is_refused() {
        assert!(OutputStage::calibrate(500, 9, 0.05, 80.0, 1e-15).is_err());
    }
}
