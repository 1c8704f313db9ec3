//! ε-DP output perturbation for L2-regularised logistic regression with **snapped** noise: what
//! nodes release as `output-perturbation`.
//!
//! The algorithm is Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
//! Minimization", JMLR 12 (2011), **Algorithm 1** (the sensitivity method), with its noise made
//! safe for floating point. Released as published — the optimum plus noise computed in f64
//! ([`super::output_perturbation_cms2011`], kept for the lab's reproductions) — it is the setting
//! of Mironov's attack (I. Mironov, "On significance of the least significant bits for
//! differential privacy", CCS 2012): the low-order bits of the release can reveal the optimum.
//! Here each coordinate goes through Mironov's snapping mechanism ([`crate::privacy::snapping`]):
//!
//! 1. θ̂ ≈ argmin F(θ), F(θ) = (1/n)Σᵢ log(1 + exp(−yᵢ⟨θ,xᵢ⟩)) + (λ/2)||θ||², with
//!    ||∇F(θ̂)||₂ ≤ τ = 1e-8 (the solver's tolerance).
//! 2. For j = 1..d, release θ̃_j = clamp_B(⌊clamp_B(θ̂_j) ⊕ S ⊗ λ_L ⊗ LN(U*)⌉_Λ) (Mironov 2012 §5.2):
//!    Laplace noise of scale λ_L drawn from the exact uniform U* over doubles, rounded to the
//!    multiples of Λ (the smallest power of two ≥ λ_L), clamped to the public bound B.
//!
//! **Calibration** (proof in `docs/proofs/output-perturbation-snapping.md`):
//! - ℓ₂ sensitivity of the computed minimiser, **Δ₂ = 2/(nλ) + 2τ/λ**: CMS 2011 Corollary 8 gives
//!   2/(nλ) for the exact minimiser (1-Lipschitz loss, ||x|| ≤ 1, λ-strong convexity) and strong
//!   convexity puts θ̂ within τ/λ of it.
//! - ℓ₁ sensitivity **Δ₁ = √d·Δ₂** (||v||₁ ≤ √d·||v||₂), which per-coordinate Laplace needs.
//! - Public coordinate bound **B₀ = (1 + τ)/λ**: λθ̂ = ∇F(θ̂) − (1/n)Σᵢ ℓ′(yᵢ⟨θ̂,xᵢ⟩)yᵢxᵢ with
//!   |ℓ′| ≤ 1 and ||xᵢ|| ≤ 1, so |θ̂_j| ≤ ||θ̂||₂ ≤ (1 + τ)/λ (ζ/λ with ζ = 1 for the exact
//!   minimiser). The snapping raises it to B = Λ·max(⌈B₀/Λ⌉, 2) < B₀ + 4λ_L.
//! - Mironov 2012 **Theorem 1**: the snapping mechanism is (1/λ + 2^{-49}·B/λ)-DP for sensitivity
//!   1 when λ < B < 2^{46}λ; per coordinate the log-ratio is |θ̂_j − θ̂′_j|/λ_L + 2^{-49}·B/λ_L.
//!   Summed over the d independent coordinates: ε_total ≤ (Δ₁ + d·2^{-49}·B)/λ_L.
//! - So **λ_L = (Δ₁ + d·2^{-49}·B₀)/(ε − d·2^{-47})**, times (1 + 2^{-40}) to cover the rounding
//!   of these few f64 operations: then ε_total ≤ ε exactly as requested — the floating-point
//!   term (recorded as `parameters["snapping_epsilon"]`) is paid inside ε, not on top of it. It
//!   is small: B₀/λ_L ≤ ε/(2τ√d), so it is at most √d·ε·2^{-49}/(2τ) ≈ 9·10⁻⁸·√d·ε (10⁻¹¹·ε at
//!   n = 1000, λ = 0.01, d = 10), and B/λ_L stays below 5·10⁹ < 2^{46} for every ε ≤ 100.
//!
//! λ may be `auto` ([`super::lambda`]: 60√d/(n ε^{3/2}), a function of public n, d and ε), resolved
//! before training; Δ₂ and B₀ use the λ actually trained with.
//!
//! **Guarantee:** ε-DP (δ = 0) under the replace-one neighbour relation, for the f64
//! implementation (under Theorem 1's assumptions: IEEE-754 round-to-nearest arithmetic and an
//! accurate `ln`; see [`crate::privacy::snapping`]).
//! **Assumptions:** every row has ||x||₂ ≤ 1; logistic loss (1-Lipschitz in the score); λ > 0
//! regularising every coordinate of θ, including the intercept column; B < 2^{46}·λ_L (else a
//! typed error, [`MechanismError::Snapping`]; B/λ_L ≈ nε/(2√d)).
//!
//! **What remains for the other mechanisms.** DP-SGD and BST ([`super::dp_sgd`],
//! [`super::dp_sgd_bst`]) add exact discrete Gaussian noise on a lattice instead. The others
//! still draw f64 noise and are exposed to the same class of attack (their proofs assume real
//! arithmetic and densities that f64 samples do not have):
//! - objective perturbation ([`super::objective_perturbation`], [`super::objective_perturbation_cms2011`],
//!   [`super::objective_perturbation_gaussian`]): the Gamma-ball or Gaussian b in the objective, and
//!   the default's output stage, which adds f64 noise to θ̂ directly — Mironov's setting. Fix:
//!   snap the output stage as here; for b, a discretised b (exact discrete Laplace/Gaussian on a
//!   grid, Canonne, Kamath & Steinke 2020) with a proof of the change of variables for it.
//! - Langevin Monte Carlo ([`super::gibbs_posterior`]): f64 Gaussian increments. Fix: release the
//!   final sample rounded to a grid (post-processing of an exact posterior sample keeps its
//!   guarantee) and add to γ a bound on the total variation between the rounded f64 chain and the
//!   rounded exact chain.

use super::lambda::{AutoRule, Lambda};
use super::kind::{DocRow, Registration};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::Dataset;
use crate::learn::logistic::Penalty;
use crate::learn::solver::{SolverOptions, minimise};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::{FLOAT_TERM, SnappedLaplace};
use crate::util::stop::Stop;
use std::collections::BTreeMap;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "output-perturbation";

/// The registry's entry ([`super::kind`]); δ must be 0.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "ε-DP, CMS 2011 Alg. 1, snapped (Mironov 2012); delta 0; replace-one",
    options: &[],
    proof: crate::privacy::guarantee::ProofCoverage::NoiseAsSampled,
    node_replacement: None,
    auto_lambda: AutoRule::Sqrt { constant: 60.0 },
    neighbours: NeighbourRelation::ReplaceOne,
    doc: Some(DocRow {
        what: "CMS 2011 Alg. 1: minimiser + per-coordinate Laplace noise on the ℓ₁ sensitivity, snapped (Mironov 2012: clamped, rounded to a power-of-two grid) so the f64 release does not leak through its low bits; proof in `docs/proofs/`",
        guarantee: "ε-DP",
        options_note: "",
    }),
    build: |r| {
        r.require_pure()?;
        Ok(Box::new(OutputPerturbation::new(r.epsilon, r.lambda)?))
    },
}];

/// 2^{-40}: the relative margin on λ_L that covers the rounding of its calibration in f64 (a few
/// operations, each within 2^{-53}).
const CALIBRATION_MARGIN: f64 = 1.0 / (1u64 << 40) as f64;

/// CMS 2011 Algorithm 1 with snapped per-coordinate Laplace noise, fixed ε and λ (a number or
/// `auto`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputPerturbation {
    epsilon: f64,
    lambda: Lambda,
}

/// The noise of one release, a function of public n, d, ε and λ only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Δ₂ = 2/(nλ) + 2τ/λ.
    pub sensitivity: f64,
    /// Δ₁ = √d·Δ₂.
    pub l1_sensitivity: f64,
    /// B₀ = (1 + τ)/λ, the bound on every coordinate of the computed minimiser.
    pub coordinate_bound: f64,
    /// The snapping mechanism applied to every coordinate (scale λ_L, grid Λ, bound B).
    pub snapping: SnappedLaplace,
    /// d·2^{-49}·B/λ_L: the part of ε that floating point costs (Theorem 1's extra term).
    pub float_epsilon: f64,
}

/// Δ₂ = 2/(nλ) + 2τ/λ: the ℓ₂ sensitivity of the minimiser of the λ-regularised logistic loss
/// on `n` rows, computed to gradient norm τ (CMS 2011 Corollary 8 for the exact minimiser, plus
/// 2τ/λ for two inexact ones). Both output perturbations calibrate to it.
pub(crate) fn minimiser_sensitivity(n: usize, lambda: f64, tau: f64) -> f64 {
    2.0 / (n as f64 * lambda) + 2.0 * tau / lambda
}

impl OutputPerturbation {
    /// A mechanism for ε > 0 and regulariser λ > 0 (or `auto`).
    pub fn new(epsilon: f64, lambda: impl Into<Lambda>) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        let lambda = lambda.into().check()?;
        Ok(Self { epsilon, lambda })
    }

    /// The λ trained with on `n` rows of dimension `dim`.
    pub fn lambda_for(&self, n: usize, dim: usize) -> f64 {
        self.lambda
            .resolve(REGISTERED[0].auto_lambda, n, dim, self.epsilon)
    }

    /// The solver tolerance τ the sensitivity and the bound account for.
    pub fn solver_options() -> SolverOptions {
        SolverOptions::default()
    }

    /// Δ₂ = 2/(nλ) + 2τ/λ: the ℓ₂ sensitivity of the computed minimiser for `n` rows of
    /// dimension `dim`.
    pub fn sensitivity(&self, n: usize, dim: usize) -> f64 {
        minimiser_sensitivity(n, self.lambda_for(n, dim), Self::solver_options().tolerance)
    }

    /// The noise for `n` rows of dimension `dim` (see the module documentation).
    pub fn calibration(&self, n: usize, dim: usize) -> Result<Calibration, MechanismError> {
        let tau = Self::solver_options().tolerance;
        let lambda = self.lambda_for(n, dim);
        let d = dim as f64;
        let sensitivity = self.sensitivity(n, dim);
        let l1_sensitivity = d.sqrt() * sensitivity;
        let coordinate_bound = (1.0 + tau) / lambda;
        // B ≤ B₀ + 2Λ < B₀ + 4λ_L, so d·2^{-49}·B/λ_L < d·2^{-49}·B₀/λ_L + d·2^{-47}.
        let budget = self.epsilon - d * 4.0 * FLOAT_TERM;
        if budget <= 0.0 {
            return Err(MechanismError::InvalidParameter {
                name: "epsilon",
                value: self.epsilon,
                requirement: "must exceed d·2^-47 for snapped output perturbation",
            });
        }
        let scale = (l1_sensitivity + d * FLOAT_TERM * coordinate_bound) / budget
            * (1.0 + CALIBRATION_MARGIN);
        let snapping = SnappedLaplace::new(scale, coordinate_bound)?;
        Ok(Calibration {
            sensitivity,
            l1_sensitivity,
            coordinate_bound,
            snapping,
            float_epsilon: d * snapping.float_epsilon(),
        })
    }
}

impl Mechanism for OutputPerturbation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Chaudhuri, Monteleoni & Sarwate 2011 (JMLR) Algorithm 1, Corollary 8; per-coordinate Laplace on the l1 sensitivity, snapped (Mironov 2012, Theorem 1)"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, 0.0)
    }

    /// The Laplace noise is snapped (Mironov 2012, Theorem 1 covers the floating-point samples)
    /// and the proof covers the solver's inexact minimiser.
    fn proof(&self) -> crate::privacy::guarantee::ProofCoverage {
        crate::privacy::guarantee::ProofCoverage::NoiseAsSampled
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        _stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let (n, dim) = (data.len(), data.dim());
        let lambda = self.lambda_for(n, dim);
        // Calibrate before training: a refused calibration spends no computation on the data.
        let cal = self.calibration(n, dim)?;
        let fit = minimise(data, Penalty::ridge(lambda), Self::solver_options())?;
        let coefficients = fit
            .theta
            .iter()
            .map(|&t| cal.snapping.sample(t, noise))
            .collect::<Result<Vec<f64>, _>>()?;
        let mut parameters = BTreeMap::from([
            ("sensitivity".to_owned(), cal.sensitivity),
            ("l1_sensitivity".to_owned(), cal.l1_sensitivity),
            ("laplace_scale".to_owned(), cal.snapping.scale()),
            ("snapping_grid".to_owned(), cal.snapping.grid()),
            ("snapping_bound".to_owned(), cal.snapping.bound()),
            ("snapping_epsilon".to_owned(), cal.float_epsilon),
            (
                "solver_tolerance".to_owned(),
                Self::solver_options().tolerance,
            ),
        ]);
        parameters.extend(self.lambda.parameters(lambda));
        Ok(Sample {
            coefficients,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic::{SyntheticSpec, generate};
    use crate::learn::solver::fit_logistic;
    use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
    use crate::util::seed::derived_rng;
    use crate::privacy::snapping::SnappingError;
    use rand::RngExt;

    fn synthetic(dim: usize, train: usize, seed: u64) -> Dataset {
        generate(
            &SyntheticSpec {
                dim,
                train,
                ..SyntheticSpec::default()
            },
            &mut derived_rng(seed, &[]),
        )
        .train
    }

    #[test]
    fn the_float_term_is_paid_inside_epsilon() {
        for (epsilon, lambda, n, dim) in [
            (0.5, Lambda::Fixed(0.01), 60, 9),
            (1.0, Lambda::Auto, 500, 10),
            (100.0, Lambda::Fixed(1e-9), 1_000_000, 30),
            (1e-6, Lambda::Fixed(1000.0), 10, 2),
            (5.0, Lambda::Auto, 7_000_000, 200),
        ] {
            let m = OutputPerturbation::new(epsilon, lambda).expect("valid");
            let cal = m.calibration(n, dim).expect("calibrates");
            let s = cal.snapping;
            let d = dim as f64;
            // Theorem 1 per coordinate, summed: (Δ₁ + d·2^-49·B)/λ_L ≤ ε.
            let total = (cal.l1_sensitivity + d * FLOAT_TERM * s.bound()) / s.scale();
            assert!(total <= epsilon, "{epsilon} {n} {dim}: {total}");
            assert!(
                total > epsilon * (1.0 - 1e-7),
                "and not much below: {total}"
            );
            assert!(s.bound() >= cal.coordinate_bound && s.bound() > s.scale());
            assert!(cal.float_epsilon < 1e-6 * epsilon, "{}", cal.float_epsilon);
            assert_eq!(cal.l1_sensitivity, d.sqrt() * m.sensitivity(n, dim));
        }
    }

    #[test]
    fn calibration_refuses_a_bound_beyond_theorem_1() {
        // B/λ_L ≈ nε/(2√d): beyond 2^46 the theorem does not apply.
        // With τ = 1e-8 that needs ε > 2^46·2τ ≈ 1.4·10⁶, far outside what nodes accept.
        let m = OutputPerturbation::new(1e7, 1e-3).expect("valid");
        assert!(m.calibration(1_000_000_000_000, 1).is_err());
        assert!(matches!(
            m.calibration(1_000_000_000_000, 1),
            Err(MechanismError::Snapping(
                SnappingError::BoundTooLarge { .. }
            ))
        ));
    }

    #[test]
    fn the_computed_minimiser_stays_within_the_public_bound() {
        // A worst-case bound: on this data the norms are 1 %, 4 % and 18 % of it.
        for (lambda, seed) in [(1e-3, 1), (1e-2, 2), (1.0, 3)] {
            let data = synthetic(5, 80, seed);
            let m = OutputPerturbation::new(1.0, lambda).expect("valid");
            let cal = m.calibration(data.len(), 5).expect("calibrates");
            let theta = fit_logistic(&data, lambda).expect("fit").theta;
            let norm = theta.iter().map(|t| t * t).sum::<f64>().sqrt();
            assert!(
                norm <= cal.coordinate_bound,
                "{norm} > {}",
                cal.coordinate_bound
            );
        }
    }

    #[test]
    fn the_minimiser_moves_by_at_most_the_l1_sensitivity_when_one_record_is_replaced() {
        let dim = 5;
        let data = synthetic(dim, 40, 4);
        let lambda = 0.05;
        let m = OutputPerturbation::new(1.0, lambda).expect("valid");
        let l1 = m.calibration(data.len(), dim).expect("ok").l1_sensitivity;
        let base = fit_logistic(&data, lambda).expect("fit").theta;
        let mut rng = derived_rng(5, &[]);
        let mut worst: f64 = 0.0;
        for trial in 0..100 {
            let i = trial % data.len();
            let mut x = data.features().to_vec();
            let mut y = data.labels().to_vec();
            let v: Vec<f64> = (0..dim).map(|_| rng.random_range(-1.0..1.0)).collect();
            let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            x[i * dim..(i + 1) * dim]
                .iter_mut()
                .zip(&v)
                .for_each(|(a, b)| *a = b / norm * (1.0 - 1e-12));
            y[i] = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
            let theta = fit_logistic(&Dataset::new(x, y, dim), lambda)
                .expect("fit")
                .theta;
            let moved: f64 = base.iter().zip(&theta).map(|(a, b)| (a - b).abs()).sum();
            worst = worst.max(moved / l1);
        }
        assert!(worst <= 1.0, "moved {worst} × Δ₁");
        assert!(
            worst > 0.02,
            "the neighbours should come near the bound ({worst})"
        );
    }

    #[test]
    fn release_is_the_snapped_optimum_and_carries_its_guarantee() {
        let data = synthetic(10, 200, 6);
        let m = OutputPerturbation::new(2.0, 0.1).expect("valid");
        let r = m
            .release(&data, &mut NoiseSource::seeded(7))
            .expect("release");
        let cal = m.calibration(200, 10).expect("ok");
        let s = cal.snapping;
        // Exactly the per-coordinate snapping of the fit, in order, from the same stream.
        let fit = fit_logistic(&data, 0.1).expect("fit").theta;
        let mut rng = NoiseSource::seeded(7);
        let expected: Vec<f64> = fit
            .iter()
            .map(|&t| s.sample(t, &mut rng).expect("sample"))
            .collect();
        assert_eq!(r.classifier.coefficients(), &expected[..]);
        for &c in r.classifier.coefficients() {
            assert_eq!((c / s.grid()).fract(), 0.0, "{c} on the grid {}", s.grid());
            assert!(c.abs() <= s.bound());
        }
        assert_eq!(
            r.metadata.guarantee,
            PrivacyGuarantee {
                epsilon: 2.0,
                delta: 0.0,
                relation: NeighbourRelation::ReplaceOne
            }
        );
        assert!(r.metadata.seeded);
        let p = &r.metadata.parameters;
        assert_eq!(p["laplace_scale"], s.scale());
        assert_eq!(p["snapping_grid"], s.grid());
        assert_eq!(p["snapping_bound"], s.bound());
        assert_eq!(p["snapping_epsilon"], cal.float_epsilon);
        assert_eq!(p["l1_sensitivity"], cal.l1_sensitivity);
        // Same seed, same release.
        let again = m
            .release(&data, &mut NoiseSource::seeded(7))
            .expect("release");
        assert_eq!(again.classifier, r.classifier);
    }

    #[test]
    fn released_noise_has_the_laplace_scale() {
        // E|θ̃_j − θ̂_j| ≈ λ_L·(1 + Λ²/(24λ_L²)) ∈ [λ_L, 1.17λ_L] (rounding to Λ adds a little);
        // a half-scale release would be near λ_L/2. The distribution itself is tested in
        // `privacy::snapping`.
        let data = synthetic(4, 2000, 8);
        let m = OutputPerturbation::new(1.0, 0.05).expect("valid");
        let s = m.calibration(2000, 4).expect("ok").snapping;
        let fit = fit_logistic(&data, 0.05).expect("fit").theta;
        let mut rng = NoiseSource::seeded(9);
        let mut total = 0.0;
        let draws = 5000;
        for _ in 0..draws {
            for &t in &fit {
                total += (s.sample(t, &mut rng).expect("sample") - t).abs();
            }
        }
        let mad = total / (draws * fit.len()) as f64;
        assert!(
            (0.95..1.25).contains(&(mad / s.scale())),
            "mean |noise| {mad} vs λ_L {}",
            s.scale()
        );
    }

    #[test]
    fn invalid_parameters_are_errors() {
        for (e, l) in [
            (0.0, 0.1),
            (-1.0, 0.1),
            (f64::NAN, 0.1),
            (1.0, 0.0),
            (1.0, f64::INFINITY),
        ] {
            assert!(OutputPerturbation::new(e, l).is_err(), "{e} {l}");
        }
    }
}
