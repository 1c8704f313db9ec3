//! (ε, δ)-DP objective perturbation with Gaussian noise.
//!
//! Implements seed 001 **Algorithm 1, lines 1, 5 and 7** (Kifer, Smith & Thakurta, "Private Convex
//! Empirical Risk Minimization and High-dimensional Regression", COLT 2012, Algorithm 1 with Gaussian
//! noise) for the logistic loss:
//!
//! 1. Δ ≥ 2λ_max/ε (line 1), λ_max = 1/4.
//! 2. b ~ N(0, σ²I) with σ² = ζ²(8 log(2/δ) + 4ε)/ε², ζ = 1 (line 5).
//! 3. Release θ = argmin (1/n)Σᵢ log(1 + exp(−yᵢ⟨θ,xᵢ⟩)) + (λ/2)||θ||² + (Δ/(2n))||θ||² + (1/n)bᵀθ
//!    (line 7; the seed writes the loss normalised by n, so Δ and b enter divided by n).
//!
//! Two choices of Δ ([`DeltaChoice`]):
//! - [`DeltaChoice::Published`]: Δ = 2λ_max/ε, the smallest value line 1 allows, as the paper
//!   runs it (kind `objective-perturbation-cms2011` with δ > 0, used by `experiment paper`);
//! - [`DeltaChoice::Rule`]: Δ = n(μ* − λ) with μ* = max(λ + 2λ_max/(εn), (σ/n)√(dλ/ln 2)), the
//!   minimiser of the expected-excess-risk proxy (eq. B.5 of [`super::delta_rule`]); never below
//!   line 1's bound (kind `objective-perturbation` with δ > 0, the default).
//!
//! σ and the ε split of KST's proof are unchanged in both. λ may be `auto`
//! ([`super::lambda`]: 8√d/(n ε^{3/2})).
//!
//! **Guarantee:** (ε, δ)-DP under the replace-one neighbour relation (KST 2012 Theorem 2).
//! **Assumptions:** ||x||₂ ≤ 1 for every row, so ||∇ℓ|| ≤ ζ = 1 and the Hessian of ℓ has rank one
//! with eigenvalue ≤ λ_max = 1/4 (logistic loss is a generalised linear model); the regulariser is
//! convex; the minimisation is exact (converged to ||∇F|| ≤ 1e-8, else nothing is released).

use super::lambda::{AutoRule, Lambda};
use super::{Mechanism, MechanismError, Sample, delta_rule};
use crate::data::dataset::Dataset;
use crate::learn::logistic::Penalty;
use crate::learn::solver::{SolverOptions, minimise};
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use rand::RngExt;
use rand_distr::StandardNormal;
use std::collections::BTreeMap;

/// Identifier used in release metadata.
pub const NAME: &str = "objective-perturbation-gaussian";

/// How Δ is chosen (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaChoice {
    /// Δ = 2λ_max/ε, as published.
    Published,
    /// The expected-excess-risk rule (B.5).
    Rule,
}

/// Seed 001 Algorithm 1 in its (ε, δ) branch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianObjectivePerturbation {
    epsilon: f64,
    delta: f64,
    lambda: Lambda,
    choice: DeltaChoice,
}

impl GaussianObjectivePerturbation {
    /// λ_max, the Hessian eigenvalue bound of the logistic loss on the unit ball.
    pub const LAMBDA_MAX: f64 = LOGISTIC_UNIT_BALL.loss_hessian_bound;
    /// ζ, the gradient-norm bound of the logistic loss on the unit ball.
    pub const ZETA: f64 = LOGISTIC_UNIT_BALL.loss_gradient_bound;

    /// The published algorithm for ε > 0, δ ∈ (0, 1) and λ > 0 (or `auto`).
    pub fn new(
        epsilon: f64,
        delta: f64,
        lambda: impl Into<Lambda>,
    ) -> Result<Self, MechanismError> {
        Self::with_choice(epsilon, delta, lambda.into(), DeltaChoice::Published)
    }

    /// The mechanism with Δ chosen by `choice`.
    pub fn with_choice(
        epsilon: f64,
        delta: f64,
        lambda: Lambda,
        choice: DeltaChoice,
    ) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        if !(delta > 0.0 && delta < 1.0) {
            return Err(MechanismError::InvalidParameter {
                name: "delta",
                value: delta,
                requirement: "must be in (0, 1) for the Gaussian variant (use delta = 0 for pure ε-DP)",
            });
        }
        Ok(Self {
            epsilon,
            delta,
            lambda: lambda.check()?,
            choice,
        })
    }

    /// Standard deviation σ of each coordinate of b (line 5).
    pub fn noise_std(&self) -> f64 {
        let z = Self::ZETA;
        (z * z * (8.0 * (2.0 / self.delta).ln() + 4.0 * self.epsilon)).sqrt() / self.epsilon
    }

    /// Δ = 2λ_max/ε in the un-normalised objective (line 1): the published choice, and the least
    /// the rule may take.
    pub fn delta_regulariser(&self) -> f64 {
        2.0 * Self::LAMBDA_MAX / self.epsilon
    }

    /// (λ, μ) for `n` rows of dimension `dim`: the λ trained with and the total quadratic
    /// coefficient μ = λ + Δ/n of the mean objective.
    pub fn calibrate(&self, n: usize, dim: usize) -> (f64, f64) {
        let lambda = self
            .lambda
            .resolve(AutoRule::ObjectivePerturbation, n, dim, self.epsilon);
        let mu = match self.choice {
            DeltaChoice::Published => lambda + self.delta_regulariser() / n as f64,
            DeltaChoice::Rule => {
                delta_rule::gaussian(n, dim, self.epsilon, lambda, self.noise_std())
            }
        };
        (lambda, mu)
    }

    /// Draws b ~ N(0, σ²I) in ℝᵈⁱᵐ with the given σ.
    pub fn sample_perturbation(dim: usize, std: f64, rng: &mut NoiseSource) -> Vec<f64> {
        (0..dim)
            .map(|_| std * rng.sample::<f64, _>(StandardNormal))
            .collect()
    }
}

impl Mechanism for GaussianObjectivePerturbation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        match self.choice {
            DeltaChoice::Published => {
                "seed 001 Algorithm 1 lines 1, 5, 7 (Kifer, Smith & Thakurta 2012)"
            }
            DeltaChoice::Rule => {
                "seed 001 Algorithm 1 lines 1, 5, 7 (Kifer, Smith & Thakurta 2012) with the expected-excess-risk rule for Delta (dpagg delta_rule eq. B.5)"
            }
        }
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, self.delta)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        _stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let std = self.noise_std();
        let b = Self::sample_perturbation(data.dim(), std, noise);
        let (lambda, mu) = self.calibrate(data.len(), data.dim());
        let penalty = Penalty {
            mu,
            linear: Some(&b),
        };
        let fit = minimise(data, penalty, SolverOptions::default())?;
        let mut parameters = BTreeMap::from([
            ("zeta".to_owned(), Self::ZETA),
            ("lambda_max".to_owned(), Self::LAMBDA_MAX),
            (
                "delta_extra_regulariser".to_owned(),
                (mu - lambda) * data.len() as f64,
            ),
            ("noise_std".to_owned(), std),
        ]);
        parameters.extend(self.lambda.parameters(lambda));
        if self.choice == DeltaChoice::Published {
            parameters.insert(
                "delta_extra_regulariser".to_owned(),
                self.delta_regulariser(),
            );
        } else {
            parameters.insert("mu".to_owned(), mu);
        }
        Ok(Sample {
            coefficients: fit.theta,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::guarantee::NeighbourRelation;
    use statrs::distribution::{ChiSquared, ContinuousCDF};

    /// Two-sided χ² test of H₀: Var = σ², pooling all coordinates of `samples` draws.
    fn variance_p_value(
        std_drawn: f64,
        std_claimed: f64,
        dim: usize,
        samples: usize,
        seed: u64,
    ) -> f64 {
        let mut rng = NoiseSource::seeded(seed);
        let mut ss = 0.0;
        for _ in 0..samples {
            ss += GaussianObjectivePerturbation::sample_perturbation(dim, std_drawn, &mut rng)
                .iter()
                .map(|v| v * v)
                .sum::<f64>();
        }
        // Mean is known (0): Σ b²/σ² ~ χ²(samples·dim).
        let k = (samples * dim) as f64;
        let chi = ChiSquared::new(k).expect("valid");
        let cdf = chi.cdf(ss / (std_claimed * std_claimed));
        2.0 * cdf.min(1.0 - cdf)
    }

    #[test]
    fn noise_scale_matches_line_5() {
        let m = GaussianObjectivePerturbation::new(0.5, 1e-5, 0.01).expect("valid");
        let expected = ((8.0 * (2.0f64 / 1e-5).ln() + 2.0) / 0.25).sqrt();
        assert!((m.noise_std() - expected).abs() < 1e-12);
        assert!((m.delta_regulariser() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn noise_variance_is_sigma_squared() {
        let m = GaussianObjectivePerturbation::new(1.0, 1e-6, 0.01).expect("valid");
        let p = variance_p_value(m.noise_std(), m.noise_std(), 10, 2000, 4);
        assert!(p > 1e-3, "χ² p-value {p}");
    }

    #[test]
    fn under_noised_variant_fails_the_variance_check() {
        let m = GaussianObjectivePerturbation::new(1.0, 1e-6, 0.01).expect("valid");
        assert!(variance_p_value(m.noise_std() / 2.0, m.noise_std(), 10, 2000, 5) < 1e-9);
    }

    #[test]
    fn invalid_parameters_are_errors() {
        for (e, d, l) in [
            (0.0, 1e-5, 0.1),
            (1.0, 0.0, 0.1),
            (1.0, 1.0, 0.1),
            (1.0, -0.1, 0.1),
            (1.0, f64::NAN, 0.1),
            (1.0, 1e-5, 0.0),
        ] {
            assert!(
                GaussianObjectivePerturbation::new(e, d, l).is_err(),
                "{e} {d} {l}"
            );
        }
    }

    #[test]
    fn delta_choices_follow_line_1_and_the_rule() {
        let published = GaussianObjectivePerturbation::new(1.0, 1e-5, 0.01).expect("valid");
        assert_eq!(published.calibrate(60, 9), (0.01, 0.01 + 0.5 / 60.0));
        let rule =
            GaussianObjectivePerturbation::with_choice(1.0, 1e-5, 0.01.into(), DeltaChoice::Rule)
                .expect("valid");
        let (lambda, mu) = rule.calibrate(60, 9);
        assert_eq!(lambda, 0.01);
        assert_eq!(mu, delta_rule::gaussian(60, 9, 1.0, 0.01, rule.noise_std()));
        assert!(mu >= 0.01 + 0.5 / 60.0, "never below line 1's Δ");
        let auto =
            GaussianObjectivePerturbation::with_choice(1.0, 1e-5, Lambda::Auto, DeltaChoice::Rule)
                .expect("valid");
        assert_eq!(auto.calibrate(600, 9).0, 8.0 * 3.0 / 600.0);
        // The noise is line 5's whatever Δ: the χ² test above covers both choices.
        assert_eq!(rule.noise_std(), published.noise_std());
    }

    #[test]
    fn release_carries_its_guarantee() {
        let m = GaussianObjectivePerturbation::new(2.0, 1e-5, 0.1).expect("valid");
        let data = Dataset::new(
            vec![0.6, 0.0, -0.5, 0.1, 0.3, 0.3, -0.2, -0.7],
            vec![1.0, -1.0, 1.0, -1.0],
            2,
        );
        let r = m
            .release(&data, &mut NoiseSource::seeded(1))
            .expect("release");
        assert_eq!(r.metadata.guarantee.delta, 1e-5);
        assert_eq!(r.metadata.guarantee.relation, NeighbourRelation::ReplaceOne);
        assert_eq!(r.metadata.mechanism, NAME);
    }
}
