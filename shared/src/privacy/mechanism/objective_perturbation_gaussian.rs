//! (ε, δ)-DP objective perturbation with Gaussian noise.
//!
//! Implements Minami et al. 2015 **Algorithm 1, lines 1, 5 and 7** (Kifer, Smith & Thakurta,
//! "Private Convex Empirical Risk Minimization and High-dimensional Regression", COLT 2012,
//! Algorithm 1 with Gaussian noise) for the logistic loss:
//!
//! 1. Δ ≥ 2λ_max/ε (line 1), λ_max = 1/4.
//! 2. b ~ N(0, σ²I) with σ² = ζ²(8 log(2/δ) + 4ε)/ε², ζ = 1 (line 5).
//! 3. Release θ = argmin (1/n)Σᵢ log(1 + exp(−yᵢ⟨θ,xᵢ⟩)) + (λ/2)||θ||² + (Δ/(2n))||θ||² + (1/n)bᵀθ
//!    (line 7; the seed writes the loss normalised by n, so Δ and b enter divided by n).
//!
//! Two choices of Δ ([`DeltaChoice`]):
//! - [`DeltaChoice::Published`]: Δ = 2λ_max/ε, the smallest value line 1 allows, as the paper
//!   runs it (kind `objective-perturbation-cms2011` with δ > 0, used by `experiment paper`), and
//!   the solver's output released as it is — the reproduction, with f64 noise and the paper's
//!   assumption of an exact minimiser;
//! - [`DeltaChoice::Rule`] (kind `objective-perturbation` with δ > 0, the default): the same
//!   algorithm at (ε₁, δ₁) with ε₁ = (1 − f)ε, Δ = n(μ* − λ) with
//!   μ* = max(λ + 2λ_max/(ε₁n), (σ/n)√(dλ/ln 2)), the minimiser of the expected-excess-risk proxy
//!   (eq. B.5 of [`super::delta_rule`]), never below line 1's bound; then the **snapped output
//!   stage** of [`super::output_stage`] at ε₂ = fε (f = `output_fraction`, default 0.01), which
//!   covers the solver's inexact minimiser and puts the release on a public grid, so the f64
//!   noise leaks nothing through its low bits.
//!
//! **Guarantee:** (ε, δ)-DP under the replace-one neighbour relation. Published: KST 2012
//! Theorem 2 for the exact minimiser. Rule: the exact minimiser is (ε₁, δ₁)-DP by Theorem 2; the
//! output stage turns it into (ε₁ + ε₂, e^{ε₂}δ₁) (`output_stage` module docs); the f64 draw of
//! b is covered as in `docs/proofs/objective-perturbation-inexact.md` on the event
//! ‖b‖ ≤ Q = σ(√d + [`NOISE_TAIL_T`]), whose complement has probability ≤ e^{−t²/2} = e^{−50}
//! (Gaussian concentration of the 1-Lipschitz norm, E‖b‖ ≤ σ√d). So δ₁ = (δ − e^{−50})/e^{ε₂}
//! and the total is (ε, δ). σ is line 5's at (ε₁, δ₁); λ may be `auto`
//! ([`super::lambda`]: 8√d/(n ε₁^{3/2})).
//!
//! **Assumptions:** ||x||₂ ≤ 1 for every row, so ||∇ℓ|| ≤ ζ = 1 and the Hessian of ℓ has rank one
//! with eigenvalue ≤ λ_max = 1/4 (logistic loss is a generalised linear model); the regulariser is
//! convex; Published: the minimisation is exact (converged to ||∇F|| ≤ 1e-8, else nothing is
//! released); Rule: a deterministic solver stopping at ||∇F|| ≤ γ, and normal samplers accurate
//! to relative 2⁻⁴⁰ (`output_stage::SAMPLER_ACCURACY`).

use super::lambda::Lambda;
use super::objective_perturbation::DEFAULT_OUTPUT_FRACTION;
use super::output_stage::OutputStage;
use super::{Mechanism, MechanismError, Sample, delta_rule};
use crate::data::dataset::Dataset;
use crate::learn::logistic::Penalty;
use crate::learn::solver::minimise;
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use rand::RngExt;
use rand_distr::StandardNormal;
use std::collections::BTreeMap;

/// Identifier used in release metadata.
pub const NAME: &str = "objective-perturbation-gaussian";

/// t of the bound Q = σ(√d + t) on ‖b‖ the output stage is calibrated for: P[‖b‖ > Q] ≤ e^{−t²/2}.
pub const NOISE_TAIL_T: f64 = 10.0;

/// e^{−t²/2}: the probability, counted in δ, that ‖b‖ exceeds Q.
pub fn noise_tail() -> f64 {
    (-NOISE_TAIL_T * NOISE_TAIL_T / 2.0).exp()
}

/// How Δ is chosen (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeltaChoice {
    /// Δ = 2λ_max/ε, as published.
    Published,
    /// The expected-excess-risk rule (B.5).
    Rule,
}

/// Minami et al. 2015, Algorithm 1 in its (ε, δ) branch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianObjectivePerturbation {
    epsilon: f64,
    delta: f64,
    lambda: Lambda,
    choice: DeltaChoice,
    /// f, the share of ε of the output stage ([`DeltaChoice::Rule`] only).
    output_fraction: f64,
}

/// What the [`DeltaChoice::Rule`] mechanism computes from public quantities before seeing data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// ε₁ = (1 − f)ε and δ₁ = (δ − e^{−50})/e^{ε₂}: the objective stage's guarantee.
    pub epsilon_objective: f64,
    /// δ₁ (see `epsilon_objective`).
    pub delta_objective: f64,
    /// σ of line 5 at (ε₁, δ₁).
    pub noise_std: f64,
    /// λ trained with.
    pub lambda: f64,
    /// μ = λ + Δ/n by the rule at ε₁.
    pub mu: f64,
    /// The snapped output stage at ε₂ = fε for Q = σ(√d + t).
    pub output: OutputStage,
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

    /// The mechanism with Δ chosen by `choice` (the rule with the default output fraction).
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
        let m = Self {
            epsilon,
            delta,
            lambda: lambda.check()?,
            choice,
            output_fraction: DEFAULT_OUTPUT_FRACTION,
        };
        if choice == DeltaChoice::Rule && m.delta_objective() <= 0.0 {
            return Err(MechanismError::InvalidParameter {
                name: "delta",
                value: delta,
                requirement: "must exceed e^-50, the output stage's tail (1.9e-22)",
            });
        }
        Ok(m)
    }

    /// The rule's mechanism spending `output_fraction` ∈ (0, 0.5] of ε on the output stage.
    pub fn with_output_fraction(
        epsilon: f64,
        delta: f64,
        lambda: Lambda,
        output_fraction: f64,
    ) -> Result<Self, MechanismError> {
        if !(output_fraction > 0.0 && output_fraction <= 0.5) {
            return Err(MechanismError::InvalidParameter {
                name: "output_fraction",
                value: output_fraction,
                requirement: "must be in (0, 0.5]",
            });
        }
        let m = Self::with_choice(epsilon, delta, lambda, DeltaChoice::Rule)?;
        Ok(Self {
            output_fraction,
            ..m
        })
    }

    /// (ε₁, ε₂): the objective stage's and the output stage's shares (ε₂ = 0 when published).
    fn epsilon_split(&self) -> (f64, f64) {
        match self.choice {
            DeltaChoice::Published => (self.epsilon, 0.0),
            DeltaChoice::Rule => {
                let output = self.output_fraction * self.epsilon;
                (self.epsilon - output, output)
            }
        }
    }

    /// δ₁, the objective stage's δ (δ itself when published).
    fn delta_objective(&self) -> f64 {
        match self.choice {
            DeltaChoice::Published => self.delta,
            DeltaChoice::Rule => (self.delta - noise_tail()) / self.epsilon_split().1.exp(),
        }
    }

    /// Standard deviation σ of each coordinate of b (line 5, at (ε₁, δ₁)).
    pub fn noise_std(&self) -> f64 {
        let z = Self::ZETA;
        let (epsilon, delta) = (self.epsilon_split().0, self.delta_objective());
        (z * z * (8.0 * (2.0 / delta).ln() + 4.0 * epsilon)).sqrt() / epsilon
    }

    /// Δ = 2λ_max/ε in the un-normalised objective (line 1): the published choice, and the least
    /// the rule may take (at ε₁).
    pub fn delta_regulariser(&self) -> f64 {
        2.0 * Self::LAMBDA_MAX / self.epsilon_split().0
    }

    /// (λ, μ) for `n` rows of dimension `dim`: the λ trained with and the total quadratic
    /// coefficient μ = λ + Δ/n of the mean objective.
    pub fn regularisers(&self, n: usize, dim: usize) -> (f64, f64) {
        let epsilon = self.epsilon_split().0;
        let lambda = self.lambda.resolve(
            super::objective_perturbation::REGISTERED[0].auto_lambda,
            n,
            dim,
            epsilon,
        );
        let mu = match self.choice {
            DeltaChoice::Published => lambda + self.delta_regulariser() / n as f64,
            DeltaChoice::Rule => delta_rule::gaussian(n, dim, epsilon, lambda, self.noise_std()),
        };
        (lambda, mu)
    }

    /// The rule's public constants for `n` rows of dimension `dim` (None when published: no
    /// output stage); an error when the snapped stage cannot be calibrated.
    pub fn calibrate(&self, n: usize, dim: usize) -> Result<Option<Calibration>, MechanismError> {
        if self.choice == DeltaChoice::Published {
            return Ok(None);
        }
        let (lambda, mu) = self.regularisers(n, dim);
        let noise_std = self.noise_std();
        let bound = noise_std * ((dim as f64).sqrt() + NOISE_TAIL_T);
        let (epsilon_objective, epsilon_output) = self.epsilon_split();
        let output = OutputStage::calibrate(n, dim, mu, bound, epsilon_output)?;
        Ok(Some(Calibration {
            epsilon_objective,
            delta_objective: self.delta_objective(),
            noise_std,
            lambda,
            mu,
            output,
        }))
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
                "Minami et al. 2015, Algorithm 1 lines 1, 5, 7 (Kifer, Smith & Thakurta 2012)"
            }
            DeltaChoice::Rule => {
                "Minami et al. 2015, Algorithm 1 lines 1, 5, 7 (Kifer, Smith & Thakurta 2012) with the expected-excess-risk rule for Delta (dpagg delta_rule eq. B.5)"
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
        // Calibrated before training: a refused calibration spends nothing on the data.
        let cal = self.calibrate(data.len(), data.dim())?;
        let std = self.noise_std();
        let b = Self::sample_perturbation(data.dim(), std, noise);
        let (lambda, mu) = self.regularisers(data.len(), data.dim());
        let penalty = Penalty {
            mu,
            linear: Some(&b),
        };
        let fit = minimise(data, penalty, OutputStage::solver_options())?;
        let mut parameters = BTreeMap::from([
            ("zeta".to_owned(), Self::ZETA),
            ("lambda_max".to_owned(), Self::LAMBDA_MAX),
            ("noise_std".to_owned(), std),
        ]);
        parameters.extend(self.lambda.parameters(lambda));
        let Some(cal) = cal else {
            parameters.insert(
                "delta_extra_regulariser".to_owned(),
                self.delta_regulariser(),
            );
            return Ok(Sample {
                coefficients: fit.theta,
                parameters,
            });
        };
        parameters.extend([
            (
                "delta_extra_regulariser".to_owned(),
                (mu - lambda) * data.len() as f64,
            ),
            ("mu".to_owned(), mu),
            ("epsilon_objective".to_owned(), cal.epsilon_objective),
            ("delta_objective".to_owned(), cal.delta_objective),
        ]);
        parameters.extend(cal.output.parameters());
        Ok(Sample {
            coefficients: cal.output.release(&fit.theta, noise)?,
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
        assert_eq!(published.regularisers(60, 9), (0.01, 0.01 + 0.5 / 60.0));
        assert_eq!(
            published.calibrate(60, 9).expect("ok"),
            None,
            "no output stage"
        );
        let rule =
            GaussianObjectivePerturbation::with_choice(1.0, 1e-5, 0.01.into(), DeltaChoice::Rule)
                .expect("valid");
        let (lambda, mu) = rule.regularisers(60, 9);
        assert_eq!(lambda, 0.01);
        assert_eq!(
            mu,
            delta_rule::gaussian(60, 9, 0.99, 0.01, rule.noise_std())
        );
        assert!(
            mu >= 0.01 + 0.5 / (0.99 * 60.0),
            "never below line 1's Δ at ε₁"
        );
        let auto =
            GaussianObjectivePerturbation::with_choice(1.0, 1e-5, Lambda::Auto, DeltaChoice::Rule)
                .expect("valid");
        let expected = 8.0 * 3.0 / (600.0 * 0.99f64.powf(1.5));
        assert!((auto.regularisers(600, 9).0 - expected).abs() < 1e-15);
    }

    #[test]
    fn the_rule_splits_epsilon_and_delta_between_its_stages() {
        let (epsilon, delta, f) = (2.0, 1e-6, 0.05);
        let m = GaussianObjectivePerturbation::with_output_fraction(epsilon, delta, 0.01.into(), f)
            .expect("valid");
        let c = m.calibrate(400, 9).expect("calibrates").expect("rule");
        let (e1, e2) = (epsilon * (1.0 - f), epsilon * f);
        assert!((c.epsilon_objective - e1).abs() < 1e-15);
        assert!((c.output.epsilon - e2).abs() < 1e-15);
        assert!(c.output.calibration.achieved <= e2);
        // (ε₁ + ε₂, e^{ε₂}δ₁ + e^{−50}) is the stated (ε, δ).
        let total = e2.exp() * c.delta_objective + noise_tail();
        assert!((total - delta).abs() < 1e-21, "{total}");
        let sigma = (8.0 * (2.0 / c.delta_objective).ln() + 4.0 * e1).sqrt() / e1;
        assert!((c.noise_std - sigma).abs() < 1e-12);
        assert_eq!(c.output.noise_bound, sigma * (3.0 + NOISE_TAIL_T));
        assert_eq!(c.mu, delta_rule::gaussian(400, 9, e1, 0.01, sigma));
        // The published variant keeps line 5 at the full (ε, δ).
        let published = GaussianObjectivePerturbation::new(epsilon, delta, 0.01).expect("valid");
        let line5 = (8.0 * (2.0 / delta).ln() + 4.0 * epsilon).sqrt() / epsilon;
        assert!((published.noise_std() - line5).abs() < 1e-12);
        assert!(
            m.noise_std() > published.noise_std(),
            "the split costs a little noise"
        );
    }

    #[test]
    fn the_rule_releases_the_snapped_minimiser_of_the_same_stream() {
        let m =
            GaussianObjectivePerturbation::with_choice(1.0, 1e-5, 0.05.into(), DeltaChoice::Rule)
                .expect("valid");
        let data = Dataset::new(
            vec![0.6, 0.0, -0.5, 0.1, 0.3, 0.3, -0.2, -0.7, 0.1, 0.9],
            vec![1.0, -1.0, 1.0, -1.0, 1.0],
            2,
        );
        let r = m
            .release(&data, &mut NoiseSource::seeded(7))
            .expect("release");
        let c = m.calibrate(5, 2).expect("ok").expect("rule");
        let mut rng = NoiseSource::seeded(7);
        let b = GaussianObjectivePerturbation::sample_perturbation(2, c.noise_std, &mut rng);
        let penalty = Penalty {
            mu: c.mu,
            linear: Some(&b),
        };
        let fit = minimise(&data, penalty, OutputStage::solver_options()).expect("fit");
        let expected = c.output.release(&fit.theta, &mut rng).expect("snapped");
        assert_eq!(r.classifier.coefficients(), expected.as_slice());
        let grid = c.output.calibration.mechanism.grid();
        assert!(
            expected.iter().all(|w| (w / grid).fract() == 0.0),
            "on the grid"
        );
        assert_eq!(r.metadata.parameters["epsilon_objective"], 0.99);
    }

    #[test]
    fn the_rule_refuses_a_delta_below_its_tail() {
        let tiny =
            GaussianObjectivePerturbation::with_choice(1.0, 1e-23, 0.01.into(), DeltaChoice::Rule);
        assert!(tiny.is_err());
        assert!(
            GaussianObjectivePerturbation::new(1.0, 1e-23, 0.01).is_ok(),
            "published: no tail"
        );
        assert!(
            GaussianObjectivePerturbation::with_output_fraction(1.0, 1e-5, 0.01.into(), 0.6)
                .is_err()
        );
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
