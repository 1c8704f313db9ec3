//! ε-DP objective perturbation for L2-regularised logistic regression **exactly as published**: the
//! reproduction's learner (kind `objective-perturbation-cms2011`, used by `experiment paper`). The
//! default ε-DP learner is [`super::objective_perturbation`] (Theorem 9 with the Δ rule of
//! [`super::delta_rule`], no dip).
//!
//! Implements Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
//! Minimization", JMLR 12 (2011), **Algorithm 2** (cited by Minami et al. 2015 as \[10\] and used for
//! all its experiments, §5), for the logistic loss with c = 1/4:
//!
//! 1. ε′ = ε − log(1 + 2c/(nλ) + c²/(n²λ²)).
//! 2. If ε′ > 0 then Δ = 0; otherwise Δ = c / (n(e^{ε/4} − 1)) − λ and ε′ = ε/2.
//! 3. Draw b with density ν(b) ∝ exp(−ε′||b||₂/2): its norm is Gamma(p, 2/ε′) (shape p, scale
//!    2/ε′) and its direction is uniform on the sphere (Minami et al. 2015, Algorithm 1 line 3 with
//!    ζ = 1).
//! 4. Release θ = argmin (1/n)Σᵢ log(1 + exp(−yᵢ⟨θ,xᵢ⟩)) + (λ/2)||θ||² + (1/n)bᵀθ + (Δ/2)||θ||².
//!
//! **Guarantee:** ε-DP (δ = 0) under the replace-one neighbour relation (CMS 2011 Theorem 9).
//! **Assumptions:** every row has ||x||₂ ≤ 1; the loss is the logistic loss, differentiable with
//! |ℓ′| ≤ 1 and |ℓ″| ≤ c = 1/4; the regulariser (λ/2)||θ||² is 1-strongly convex in units of λ with
//! λ > 0 and applies to every coordinate of θ (including the intercept column). The proof is for
//! the exact minimiser; the solver converges to ||∇F|| ≤ 1e-8 (so θ is within 1e-8/λ of it) and a
//! failure releases nothing.
//!
//! **Known property of Algorithm 2 (not changed here).** Step 2 is discontinuous: just above
//! ε = log(1 + 2c/(nλ) + c²/(nλ)²) it takes Δ = 0 with a tiny ε′, adding far more noise than the
//! Δ > 0 branch just below (n = 50, λ = 0.01: ε = 0.9 gets ε′ ≈ 0.09, ε = 0.8 gets ε′ = 0.4). By
//! CMS 2011 Theorem 9 any Δ ≥ 0 with ε′ = ε − 2 log(1 + c/(n(λ + Δ))) > 0 is ε-DP;
//! [`super::objective_perturbation`] chooses Δ by minimising an expected-excess-risk bound
//! instead, and this file stays exactly the published algorithm.
//!
//! λ may be `auto` ([`super::lambda`], 8√d/(n ε^{3/2})); the reproduction uses λ = 0.01.

use super::lambda::{AutoRule, Lambda};
use super::kind::{DocRow, Registration};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::Dataset;
use crate::learn::logistic::Penalty;
use crate::learn::solver::{SolverOptions, minimise};
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::{NoiseSource, sample_gamma_ball};
use crate::util::stop::Stop;
use std::collections::BTreeMap;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "objective-perturbation-cms2011";

/// The registry's entry ([`super::kind`]): δ = 0 builds [`ObjectivePerturbationCms2011`], δ > 0
/// Minami et al. 2015, Algorithm 1 as published ([`super::GaussianObjectivePerturbation::new`]).
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "the published algorithms, for reproductions: ε-DP when δ = 0 (CMS 2011 Alg. 2), \
              (ε, δ)-DP otherwise (Minami et al. 2015, Alg. 1, Δ = 2λ_max/ε); replace-one",
    options: &[],
    proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
    node_replacement: None,
    auto_lambda: AutoRule::Sqrt { constant: 8.0 },
    neighbours: NeighbourRelation::ReplaceOne,
    doc: Some(DocRow {
        what: "the published algorithms, for reproductions: CMS 2011 Alg. 2 (δ = 0); Minami et al. 2015 Alg. 1 / KST 2012 with Δ = 2λ_max/ε (δ > 0)",
        guarantee: "ε-DP or (ε, δ)-DP",
        options_note: "",
    }),
    build: |r| {
        Ok(if r.delta == 0.0 {
            Box::new(ObjectivePerturbationCms2011::new(r.epsilon, r.lambda)?)
        } else {
            Box::new(super::GaussianObjectivePerturbation::new(
                r.epsilon, r.delta, r.lambda,
            )?)
        })
    },
}];

/// The CMS 2011 Algorithm 2 mechanism with fixed ε and λ (a number or `auto`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ObjectivePerturbationCms2011 {
    epsilon: f64,
    lambda: Lambda,
}

/// The data-size-dependent constants of Algorithm 2 (steps 1–2). n is public.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// ε′, the privacy parameter spent on the noise density.
    pub epsilon_prime: f64,
    /// Δ, the extra quadratic regulariser.
    pub delta_extra: f64,
}

impl ObjectivePerturbationCms2011 {
    /// Bound c on the second derivative of the logistic loss ([`LOGISTIC_UNIT_BALL`]).
    pub const C: f64 = LOGISTIC_UNIT_BALL.loss_hessian_bound;

    /// A mechanism for the given ε > 0 and regulariser λ > 0 (or `auto`).
    pub fn new(epsilon: f64, lambda: impl Into<Lambda>) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        let lambda = lambda.into().check()?;
        Ok(Self { epsilon, lambda })
    }

    /// ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// λ.
    pub fn lambda(&self) -> Lambda {
        self.lambda
    }

    /// Steps 1–2 of Algorithm 2 for a dataset of `n` rows with the fixed λ `l`.
    pub fn calibrate_with(&self, n: usize, l: f64) -> Calibration {
        let (c, nf) = (Self::C, n as f64);
        let slack = (1.0 + 2.0 * c / (nf * l) + c * c / (nf * nf * l * l)).ln();
        let epsilon_prime = self.epsilon - slack;
        if epsilon_prime > 0.0 {
            Calibration {
                epsilon_prime,
                delta_extra: 0.0,
            }
        } else {
            let delta_extra = c / (nf * (self.epsilon / 4.0).exp_m1()) - l;
            Calibration {
                epsilon_prime: self.epsilon / 2.0,
                delta_extra,
            }
        }
    }

    /// Step 3: b with density ∝ exp(−ε′||b||/2) in ℝᵈⁱᵐ.
    pub fn sample_perturbation(
        dim: usize,
        calibration: &Calibration,
        rng: &mut NoiseSource,
    ) -> Vec<f64> {
        sample_gamma_ball(dim, 2.0 / calibration.epsilon_prime, rng)
    }
}

impl Mechanism for ObjectivePerturbationCms2011 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Chaudhuri, Monteleoni & Sarwate 2011 (JMLR) Algorithm 2; Minami et al. 2015, Algorithm 1 (delta = 0)"
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
        let lambda = self.lambda.resolve(
            REGISTERED[0].auto_lambda,
            data.len(),
            data.dim(),
            self.epsilon,
        );
        let cal = self.calibrate_with(data.len(), lambda);
        let b = Self::sample_perturbation(data.dim(), &cal, noise);
        let penalty = Penalty {
            mu: lambda + cal.delta_extra,
            linear: Some(&b),
        };
        let fit = minimise(data, penalty, SolverOptions::default())?;
        let mut parameters = BTreeMap::from([
            ("c".to_owned(), Self::C),
            ("epsilon_prime".to_owned(), cal.epsilon_prime),
            ("delta_extra_regulariser".to_owned(), cal.delta_extra),
        ]);
        parameters.extend(self.lambda.parameters(lambda));
        Ok(Sample {
            coefficients: fit.theta,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
    use crate::util::stats::ks_test;
    use statrs::distribution::{Beta, ContinuousCDF, Gamma as GammaDist};

    fn norms(dim: usize, cal: &Calibration, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = NoiseSource::seeded(seed);
        (0..n)
            .map(|_| {
                ObjectivePerturbationCms2011::sample_perturbation(dim, cal, &mut rng)
                    .iter()
                    .map(|v| v * v)
                    .sum::<f64>()
                    .sqrt()
            })
            .collect()
    }

    #[test]
    fn calibration_follows_algorithm_2() {
        // Large n: ε′ = ε − log(1 + 2c/(nλ) + c²/(nλ)²), Δ = 0.
        let m = ObjectivePerturbationCms2011::new(1.0, 0.01).expect("valid");
        let cal = m.calibrate_with(5000, 0.01);
        let expected = 1.0 - (1.0f64 + 0.5 / 50.0 + 0.0625 / 2500.0).ln();
        assert!((cal.epsilon_prime - expected).abs() < 1e-15);
        assert_eq!(cal.delta_extra, 0.0);
        // n = 20: log(1 + 2.5 + 1.5625) > 1, so ε′ = ε/2 and Δ = c/(n(e^{ε/4} − 1)) − λ.
        let cal = m.calibrate_with(20, 0.01);
        assert_eq!(cal.epsilon_prime, 0.5);
        assert!((cal.delta_extra - (0.25 / (20.0 * (0.25f64.exp() - 1.0)) - 0.01)).abs() < 1e-15);
    }

    #[test]
    fn noise_norm_is_gamma_p_two_over_eps_prime() {
        let dim = 11;
        let cal = Calibration {
            epsilon_prime: 0.7,
            delta_extra: 0.0,
        };
        let sample = norms(dim, &cal, 4000, 1);
        let reference = GammaDist::new(dim as f64, cal.epsilon_prime / 2.0).expect("valid");
        let p = ks_test(&sample, |x| reference.cdf(x)).p_value;
        assert!(p > 1e-3, "KS p-value {p}");
    }

    #[test]
    fn under_noised_variant_fails_the_same_check() {
        // Noise with half the scale (as if ε′ were doubled) must be rejected by the test above.
        let dim = 11;
        let wrong = Calibration {
            epsilon_prime: 1.4,
            delta_extra: 0.0,
        };
        let sample = norms(dim, &wrong, 4000, 2);
        let reference = GammaDist::new(dim as f64, 0.7 / 2.0).expect("valid");
        assert!(ks_test(&sample, |x| reference.cdf(x)).p_value < 1e-6);
    }

    #[test]
    fn noise_direction_is_uniform_on_the_sphere() {
        // For u uniform on S^{p−1}, (u·e + 1)/2 ~ Beta((p−1)/2, (p−1)/2) for any fixed unit e.
        let dim = 7;
        let cal = Calibration {
            epsilon_prime: 1.0,
            delta_extra: 0.0,
        };
        let mut rng = NoiseSource::seeded(3);
        let e: Vec<f64> = {
            let v = [1.0, -2.0, 0.5, 0.0, 3.0, 1.0, -1.0];
            let n = v.iter().map(|x: &f64| x * x).sum::<f64>().sqrt();
            v.iter().map(|x| x / n).collect()
        };
        let mut first = Vec::new();
        let mut proj = Vec::new();
        for _ in 0..4000 {
            let b = ObjectivePerturbationCms2011::sample_perturbation(dim, &cal, &mut rng);
            let norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
            first.push((b[0] / norm + 1.0) / 2.0);
            proj.push((b.iter().zip(&e).map(|(x, y)| x * y).sum::<f64>() / norm + 1.0) / 2.0);
        }
        let beta = Beta::new((dim as f64 - 1.0) / 2.0, (dim as f64 - 1.0) / 2.0).expect("valid");
        assert!(ks_test(&first, |x| beta.cdf(x)).p_value > 1e-3);
        assert!(ks_test(&proj, |x| beta.cdf(x)).p_value > 1e-3);
        // A direction biased towards the first axis is detected.
        let biased: Vec<f64> = first.iter().map(|v| (v + 0.05).min(1.0)).collect();
        assert!(ks_test(&biased, |x| beta.cdf(x)).p_value < 1e-6);
    }

    #[test]
    fn invalid_parameters_are_errors() {
        for (eps, lambda) in [
            (0.0, 0.1),
            (-1.0, 0.1),
            (f64::NAN, 0.1),
            (f64::INFINITY, 0.1),
            (1.0, 0.0),
            (1.0, -0.5),
        ] {
            assert!(
                matches!(
                    ObjectivePerturbationCms2011::new(eps, lambda),
                    Err(MechanismError::InvalidParameter { .. })
                ),
                "{eps} {lambda}"
            );
        }
    }

    #[test]
    fn release_carries_its_guarantee_and_refuses_unnormalised_data() {
        let m = ObjectivePerturbationCms2011::new(1.0, 0.1).expect("valid");
        let data = Dataset::new(
            vec![0.6, 0.0, -0.5, 0.1, 0.3, 0.3, -0.2, -0.7],
            vec![1.0, -1.0, 1.0, -1.0],
            2,
        );
        let r = m
            .release(&data, &mut NoiseSource::seeded(9))
            .expect("release");
        assert_eq!(
            r.metadata.guarantee,
            PrivacyGuarantee {
                epsilon: 1.0,
                delta: 0.0,
                relation: NeighbourRelation::ReplaceOne
            }
        );
        assert!(r.metadata.seeded);
        assert_eq!(r.classifier.dim(), 2);
        assert_eq!(
            r,
            m.release(&data, &mut NoiseSource::seeded(9))
                .expect("release")
        );
        let big = Dataset::new(vec![2.0, 0.0], vec![1.0], 2);
        assert!(matches!(
            m.release(&big, &mut NoiseSource::seeded(9)),
            Err(MechanismError::NormBoundViolated { .. })
        ));
    }
}
