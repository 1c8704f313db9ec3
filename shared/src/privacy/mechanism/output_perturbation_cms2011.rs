//! ε-DP output perturbation for L2-regularised logistic regression **exactly as published**, with
//! f64 noise: kept for the lab's reproductions (kind `output-perturbation-cms2011`, used by
//! `experiment paper`'s Fig. 6) and **not released by nodes** ([`MechanismKind::offered_by_nodes`]).
//! What nodes release as `output-perturbation` is [`super::output_perturbation`], whose noise is
//! snapped (Mironov 2012).
//!
//! **Why nodes do not offer it.** It releases the exact optimum plus noise computed in f64 (a
//! Gamma-distributed norm times a normalised Gaussian direction): the setting of Mironov's 2012
//! attack ("On significance of the least significant bits for differential privacy", CCS 2012),
//! in which the low-order bits of such a release can reveal the unperturbed value. Its stated ε
//! holds for the real-valued algorithm, not for its floating-point implementation.
//!
//! Implements Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
//! Minimization", JMLR 12 (2011), **Algorithm 1** (the sensitivity method; Minami et al. 2015,
//! §2.2.2 (a), and the simplest learner of Kashima's notes on Aggarwal & Yu 2008, ch. 16):
//!
//! 1. θ* = argmin (1/n)Σᵢ log(1 + exp(−yᵢ⟨θ,xᵢ⟩)) + (λ/2)||θ||² (non-private).
//! 2. Release θ* + b, where b has density ∝ exp(−ε||b||₂/Δ): ||b|| ~ Gamma(p, Δ/ε) with a uniform
//!    direction. CMS write this exp(−β||b||) with β = nλε/2, i.e. Δ = 2/(nλ).
//!
//! **Sensitivity.** CMS 2011 Corollary 8: with a 1-Lipschitz loss, ||x|| ≤ 1 and a λ-strongly
//! convex objective, replacing one record moves the exact minimiser by at most 2/(nλ) in ℓ₂. The
//! solver returns a θ̂ with ||∇F(θ̂)|| ≤ τ = 1e-8, hence ||θ̂ − θ*|| ≤ τ/λ by strong convexity, and
//! the released noise is calibrated to **Δ = 2/(nλ) + 2τ/λ**, which bounds the movement of the
//! *computed* minimiser too.
//!
//! λ may be `auto` ([`super::lambda`]: 60√d/(n ε^{3/2}), a function of public n, d and ε), resolved
//! before training; Δ uses the λ actually trained with.
//!
//! **Guarantee:** ε-DP (δ = 0) under the replace-one neighbour relation, for exact real
//! arithmetic (see above). **Assumptions:** every row has ||x||₂ ≤ 1; logistic loss (1-Lipschitz
//! in the score); λ > 0 regularising every coordinate of θ, including the intercept column.
//!
//! [`MechanismKind::offered_by_nodes`]: super::MechanismKind::offered_by_nodes

use super::lambda::{AutoRule, Lambda};
use super::kind::{DocRow, Registration};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::Dataset;
use crate::learn::logistic::Penalty;
use crate::learn::solver::{SolverOptions, minimise};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::{NoiseSource, sample_gamma_ball};
use crate::util::stop::Stop;
use std::collections::BTreeMap;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "output-perturbation-cms2011";

/// The registry's entry ([`super::kind`]); δ must be 0; nodes release
/// [`super::output_perturbation`] instead.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "ε-DP for real arithmetic, CMS 2011 Alg. 1 as published (f64 Gamma-ball noise, \
              exposed to Mironov 2012), for the lab's reproductions only; delta 0; replace-one",
    options: &[],
    proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
    node_replacement: Some(super::output_perturbation::NAME),
    auto_lambda: AutoRule::Sqrt { constant: 60.0 },
    neighbours: NeighbourRelation::ReplaceOne,
    doc: Some(DocRow {
        what: "lab only (nodes refuse it): CMS 2011 Alg. 1 as published, minimiser + f64 noise ∝ exp(−nλε‖b‖/2), exposed to Mironov's 2012 floating-point attack",
        guarantee: "ε-DP in exact arithmetic",
        options_note: "",
    }),
    build: |r| {
        r.require_pure()?;
        Ok(Box::new(OutputPerturbationCms2011::new(r.epsilon, r.lambda)?))
    },
}];

/// CMS 2011 Algorithm 1 with f64 noise, for reproductions, with fixed ε and λ (a number or `auto`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputPerturbationCms2011 {
    epsilon: f64,
    lambda: Lambda,
}

impl OutputPerturbationCms2011 {
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

    /// The solver tolerance τ the sensitivity accounts for.
    pub fn solver_options() -> SolverOptions {
        SolverOptions::default()
    }

    /// Δ = 2/(nλ) + 2τ/λ: the ℓ₂ sensitivity of the computed minimiser for `n` rows of
    /// dimension `dim`.
    pub fn sensitivity(&self, n: usize, dim: usize) -> f64 {
        super::output_perturbation::minimiser_sensitivity(
            n,
            self.lambda_for(n, dim),
            Self::solver_options().tolerance,
        )
    }

    /// Δ/ε, the scale of the Gamma-distributed noise norm.
    pub fn noise_scale(&self, n: usize, dim: usize) -> f64 {
        self.sensitivity(n, dim) / self.epsilon
    }
}

impl Mechanism for OutputPerturbationCms2011 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Chaudhuri, Monteleoni & Sarwate 2011 (JMLR) Algorithm 1, Corollary 8"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, 0.0)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        _stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let (n, dim) = (data.len(), data.dim());
        let lambda = self.lambda_for(n, dim);
        let fit = minimise(data, Penalty::ridge(lambda), Self::solver_options())?;
        let scale = self.noise_scale(n, dim);
        let b = sample_gamma_ball(dim, scale, noise);
        let coefficients = fit.theta.iter().zip(&b).map(|(t, n)| t + n).collect();
        let mut parameters = BTreeMap::from([
            ("sensitivity".to_owned(), self.sensitivity(n, dim)),
            ("noise_norm_scale".to_owned(), scale),
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
    use crate::data::dataset::dot;
    use crate::data::synthetic::{SyntheticSpec, generate};
    use crate::learn::solver::fit_logistic;
    use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
    use crate::util::seed::derived_rng;
    use crate::util::stats::ks_test;
    use rand::RngExt;
    use statrs::distribution::{ContinuousCDF, Gamma as GammaDist};

    fn noise_norms(dim: usize, scale: f64, count: usize, seed: u64) -> Vec<f64> {
        let mut rng = NoiseSource::seeded(seed);
        (0..count)
            .map(|_| crate::privacy::noise::sample_gamma_ball(dim, scale, &mut rng))
            .map(|b| dot(&b, &b).sqrt())
            .collect()
    }

    #[test]
    fn sensitivity_is_two_over_n_lambda_plus_solver_slack() {
        let m = OutputPerturbationCms2011::new(0.5, 0.01).expect("valid");
        assert!((m.sensitivity(60, 9) - (2.0 / 0.6 + 2e-6)).abs() < 1e-12);
        assert!((m.noise_scale(60, 9) - m.sensitivity(60, 9) / 0.5).abs() < 1e-12);
        // λ = auto: 60√d/(n ε^{3/2}) from public n, d and ε.
        let auto = OutputPerturbationCms2011::new(0.5, Lambda::Auto).expect("valid");
        let lambda = 60.0 * 3.0 / (60.0 * 0.5f64.powf(1.5));
        assert!((auto.lambda_for(60, 9) - lambda).abs() < 1e-12);
        assert!((auto.sensitivity(60, 9) - (2.0 / (60.0 * lambda) + 2e-8 / lambda)).abs() < 1e-12);
    }

    #[test]
    fn the_minimiser_moves_by_at_most_the_sensitivity_when_one_record_is_replaced() {
        // Adversarial neighbours: replace one record by a unit-norm point with either label.
        let data = generate(
            &SyntheticSpec {
                dim: 5,
                train: 40,
                ..SyntheticSpec::default()
            },
            &mut derived_rng(1, &[]),
        )
        .train;
        let lambda = 0.05;
        let m = OutputPerturbationCms2011::new(1.0, lambda).expect("valid");
        let base = fit_logistic(&data, lambda).expect("fit").theta;
        let mut rng = derived_rng(2, &[]);
        let mut worst: f64 = 0.0;
        for trial in 0..200 {
            let i = trial % data.len();
            let mut x = data.features().to_vec();
            let mut y = data.labels().to_vec();
            let v: Vec<f64> = (0..5).map(|_| rng.random_range(-1.0..1.0)).collect();
            let norm = dot(&v, &v).sqrt();
            x[i * 5..(i + 1) * 5]
                .iter_mut()
                .zip(&v)
                .for_each(|(a, b)| *a = b / norm * (1.0 - 1e-12));
            y[i] = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
            let neighbour = Dataset::new(x, y, 5);
            let theta = fit_logistic(&neighbour, lambda).expect("fit").theta;
            let moved = base
                .iter()
                .zip(&theta)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
            worst = worst.max(moved / m.sensitivity(data.len(), 5));
        }
        assert!(
            worst <= 1.0,
            "a neighbour moved the minimiser by {worst} × the sensitivity"
        );
        assert!(
            worst > 0.05,
            "the adversarial neighbours should come near the bound ({worst})"
        );
    }

    #[test]
    fn noise_norm_is_gamma_with_scale_sensitivity_over_epsilon() {
        let m = OutputPerturbationCms2011::new(0.8, 0.01).expect("valid");
        let scale = m.noise_scale(60, 9);
        let sample = noise_norms(9, scale, 4000, 3);
        let reference = GammaDist::new(9.0, 1.0 / scale).expect("valid");
        assert!(ks_test(&sample, |x| reference.cdf(x)).p_value > 1e-3);
    }

    #[test]
    fn under_noised_variant_fails_the_same_check() {
        let m = OutputPerturbationCms2011::new(0.8, 0.01).expect("valid");
        let scale = m.noise_scale(60, 9);
        let sample = noise_norms(9, scale / 2.0, 4000, 4);
        let reference = GammaDist::new(9.0, 1.0 / scale).expect("valid");
        assert!(ks_test(&sample, |x| reference.cdf(x)).p_value < 1e-6);
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
            assert!(OutputPerturbationCms2011::new(e, l).is_err(), "{e} {l}");
        }
    }

    #[test]
    fn release_is_the_optimum_plus_noise_and_carries_its_guarantee() {
        let data = generate(
            &SyntheticSpec {
                train: 200,
                ..SyntheticSpec::default()
            },
            &mut derived_rng(5, &[]),
        )
        .train;
        let m = OutputPerturbationCms2011::new(2.0, 0.1).expect("valid");
        let r = m
            .release(&data, &mut NoiseSource::seeded(6))
            .expect("release");
        let mut expected = fit_logistic(&data, 0.1).expect("fit").theta;
        let b = crate::privacy::noise::sample_gamma_ball(
            10,
            m.noise_scale(200, 10),
            &mut NoiseSource::seeded(6),
        );
        expected.iter_mut().zip(&b).for_each(|(t, n)| *t += n);
        // Rounded to the public output grid, as every real-arithmetic release is.
        crate::privacy::mechanism::output_grid::round_to_output_grid(&mut expected);
        assert_eq!(r.classifier.coefficients(), &expected[..]);
        assert_eq!(
            r.metadata.guarantee,
            PrivacyGuarantee {
                epsilon: 2.0,
                delta: 0.0,
                relation: NeighbourRelation::ReplaceOne
            }
        );
        assert!(r.metadata.seeded);
    }
}
