//! (ε, δ)-DP noisy SGD of Bassily, Smith & Thakurta: n² steps on one uniformly sampled record.
//!
//! Implements **Minami et al. 2015, Algorithm 2** ("Differentially Private Gradient Descent", its
//! ref. \[12\]): Bassily, Smith & Thakurta, "Private Empirical Risk Minimization: Efficient
//! Algorithms and Tight Error Bounds", FOCS 2014 (BST14), Algorithm 1, for the L2-regularised
//! logistic loss ℓ̂(θ; d) = log(1 + exp(−y⟨θ, x⟩)) + (λ/2)||θ||² (Minami et al. 2015, §2.2.1 folds
//! the regulariser into the per-record loss, so that (1/n)Σ ℓ̂ = F of eq. 23–24):
//!
//! 1. σ² = 32 L² n² log(n′/δ) log(1/δ) / ε² with n′ = max(n, 2) (line 1; see "Deviation" below).
//! 2. θ₁ = 0 ∈ Θ.
//! 3. For t = 1, …, n² − 1: pick d uniformly from D (with replacement) and set
//!    θ_{t+1} = Π_Θ(θ_t − η_t (n∇ℓ̂(θ_t; d) + b_t)), b_t ~ N(0, σ² I).
//! 4. Release θ_{n²}.
//!
//! **Step size and Θ.** ℓ̂ is λ-strongly convex, so we use the step size of Minami et al. 2015,
//! Theorem 2.2 (b) (BST14 Theorem 2.4 (2)): η_t = 1/(β n t) with β = λ. Θ is the ball of radius
//! L/λ, which contains the minimiser of F (at the minimiser λθ* = −(1/n)Σ∇ℓ, so ||θ*|| ≤ L/λ); it
//! does not depend on the data, so it does not affect privacy.
//!
//! **Privacy.** Only n∇ℓ(θ; d) depends on the data; the regulariser's term nλθ is the same for
//! every record, so replacing the sampled record moves the update by at most 2nL with L = 1, the
//! Lipschitz constant of the logistic loss in θ when ||x||₂ ≤ 1 — the L of BST14's proof.
//! **Guarantee:** (ε, δ)-DP under the **replace-one** neighbour relation (BST14 Theorem 2.1, seed
//! 001 §2.2.2, after Algorithm 2). BST14's proof composes the n² steps with the simplified
//! advanced-composition bound ε′√(2k log(1/δ)), which drops the kε′(e^{ε′} − 1) term and is only
//! valid for ε = O(1); the constructor therefore refuses ε > [`MAX_EPSILON`] = 1 rather than
//! state a guarantee the proof does not cover.
//!
//! **Deviation.** Minami et al. 2015 prints line 1 as σ² = 32L²n² log(2/δ) log(1/δ)/ε²; BST14's
//! Algorithm 1 (as we read it, arXiv:1405.7085) has log(n/δ) in place of log(2/δ), which comes from
//! the per-step δ of the advanced-composition argument. We use log(max(n, 2)/δ), which is at least
//! both, so the noise is never below either version.
//!
//! **Cost.** n² iterations: releases on more than 10⁴ rows (n² > [`MAX_ITERATIONS`] = 10⁸) are
//! refused with [`MechanismError::TooManyIterations`].
//!
//! **Assumptions:** every row has ||x||₂ ≤ 1; logistic loss (1-Lipschitz); λ > 0.

use super::kind::Registration;
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::{Dataset, dot};
use crate::util::fastmath::sigmoid;
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use rand::RngExt;
use rand_distr::StandardNormal;
use std::collections::BTreeMap;

/// Largest ε the mechanism accepts (see the module documentation).
pub const MAX_EPSILON: f64 = 1.0;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "dp-sgd-bst";

/// The registry's entry ([`super::kind`]); `auto` λ is the paper map's λ.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "(ε, δ)-DP, Bassily–Smith–Thakurta 2014 (Minami et al. 2015, Alg. 2): n² noisy single-record \
              steps; replace-one; delta > 0; refused above 10⁸ steps",
    options: &[],
    proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
    node_replacement: None,
    build: |r| Ok(Box::new(BstDpSgd::new(r.epsilon, r.delta, r.fixed_lambda())?)),
}];

/// Largest number of iterations n² a release may run (so n ≤ 10⁴).
pub const MAX_ITERATIONS: u64 = 100_000_000;

/// L: the Lipschitz constant of the logistic loss in θ for ||x||₂ ≤ 1 ([`LOGISTIC_UNIT_BALL`]).
pub const LIPSCHITZ: f64 = LOGISTIC_UNIT_BALL.loss_gradient_bound;

/// Minami et al. 2015, Algorithm 2 (BST14 Algorithm 1) with fixed ε, δ and λ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BstDpSgd {
    epsilon: f64,
    delta: f64,
    lambda: f64,
}

impl BstDpSgd {
    /// A mechanism for ε > 0, δ ∈ (0, 1) and regulariser λ > 0.
    pub fn new(epsilon: f64, delta: f64, lambda: f64) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        if epsilon > MAX_EPSILON {
            return Err(MechanismError::InvalidParameter {
                name: "epsilon",
                value: epsilon,
                requirement: "must be <= 1 for dp-sgd-bst (BST14's composition argument holds for ε = O(1))",
            });
        }
        Self::unchecked(epsilon, delta, lambda)
    }

    /// Builds without the ε ≤ 1 range check (tests of the optimiser with negligible noise only).
    fn unchecked(epsilon: f64, delta: f64, lambda: f64) -> Result<Self, MechanismError> {
        super::check_delta(delta)?;
        super::check_lambda(lambda)?;
        Ok(Self {
            epsilon,
            delta,
            lambda,
        })
    }

    /// σ² = 32 L² n² log(max(n, 2)/δ) log(1/δ)/ε² for `n` rows (line 1, module docs).
    pub fn noise_variance(&self, n: usize) -> f64 {
        let nf = n as f64;
        32.0 * LIPSCHITZ
            * LIPSCHITZ
            * nf
            * nf
            * (nf.max(2.0) / self.delta).ln()
            * (1.0 / self.delta).ln()
            / (self.epsilon * self.epsilon)
    }

    /// σ, the standard deviation of each coordinate of b_t.
    pub fn noise_std(&self, n: usize) -> f64 {
        self.noise_variance(n).sqrt()
    }

    /// η_t = 1/(λ n t).
    pub fn step_size(&self, n: usize, t: u64) -> f64 {
        1.0 / (self.lambda * n as f64 * t as f64)
    }

    /// Radius L/λ of the ball Θ the iterates are projected onto.
    pub fn radius(&self) -> f64 {
        LIPSCHITZ / self.lambda
    }
}

/// n∇ℓ̂(θ; (x, y)) + b with b ~ N(0, noise_std² I), written into `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn noisy_gradient(
    theta: &[f64],
    x: &[f64],
    y: f64,
    n: f64,
    lambda: f64,
    noise_std: f64,
    rng: &mut NoiseSource,
    out: &mut [f64],
) {
    let coef = -y * sigmoid(-y * dot(theta, x));
    for ((o, xj), tj) in out.iter_mut().zip(x).zip(theta) {
        let z: f64 = rng.sample(StandardNormal);
        *o = n * (coef * xj + lambda * tj) + noise_std * z;
    }
}

impl Mechanism for BstDpSgd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Minami et al. 2015, Algorithm 2 = Bassily, Smith & Thakurta 2014 (FOCS) Algorithm 1, step size \
         1/(λnt) of Minami et al. 2015, Theorem 2.2 (b)"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, self.delta)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let n = data.len();
        let iterations = (n as u128) * (n as u128);
        if iterations > u128::from(MAX_ITERATIONS) {
            return Err(MechanismError::TooManyIterations {
                mechanism: NAME,
                iterations,
                cap: MAX_ITERATIONS,
            });
        }
        let steps = n as u64 * n as u64;
        let sigma = self.noise_std(n);
        let radius = self.radius();
        let nf = n as f64;
        let mut theta = vec![0.0; data.dim()];
        let mut g = vec![0.0; data.dim()];
        for t in 1..steps {
            if t % 4096 == 0 {
                stop.check()?;
            }
            let i = noise.random_range(0..n);
            noisy_gradient(
                &theta,
                data.row(i),
                data.label(i),
                nf,
                self.lambda,
                sigma,
                noise,
                &mut g,
            );
            let eta = self.step_size(n, t);
            for (th, gj) in theta.iter_mut().zip(&g) {
                *th -= eta * gj;
            }
            let norm = dot(&theta, &theta).sqrt();
            if norm > radius {
                theta.iter_mut().for_each(|th| *th *= radius / norm);
            }
        }
        let parameters = BTreeMap::from([
            ("lambda".to_owned(), self.lambda),
            ("noise_std".to_owned(), sigma),
            ("lipschitz".to_owned(), LIPSCHITZ),
            ("iterations".to_owned(), steps as f64),
            ("projection_radius".to_owned(), radius),
        ]);
        Ok(Sample {
            coefficients: theta,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::synthetic::{SyntheticSpec, generate};
    use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
    use crate::util::seed::derived_rng;
    use crate::util::stats::ks_test;
    use statrs::distribution::{ContinuousCDF, Normal};

    #[test]
    fn noise_variance_is_line_1_with_log_n_over_delta() {
        let m = BstDpSgd::new(0.5, 1e-5, 0.01).expect("valid");
        let expected = 32.0 * 100.0 * 100.0 * (100.0f64 / 1e-5).ln() * (1e5f64).ln() / 0.25;
        assert!((m.noise_variance(100) - expected).abs() < 1e-9 * expected);
        // For n ≤ 2 the seed's log(2/δ) is the larger and is used.
        let seed = 32.0 * (2.0f64 / 1e-5).ln() * (1e5f64).ln() / 0.25;
        assert!((m.noise_variance(1) - seed).abs() < 1e-9 * seed);
        assert!((m.step_size(100, 4) - 1.0 / (0.01 * 100.0 * 4.0)).abs() < 1e-15);
    }

    /// Residuals (noisy − exact gradient)/σ, with the noise drawn at `noise_std`.
    fn standardised_residuals(sigma: f64, noise_std: f64, draws: usize, seed: u64) -> Vec<f64> {
        let theta = [0.4, -0.2, 0.7];
        let x = [0.5, 0.5, -0.5];
        let (n, lambda) = (50.0, 0.1);
        let coef = -sigmoid(-dot(&theta, &x));
        let exact: Vec<f64> = x
            .iter()
            .zip(&theta)
            .map(|(xj, tj)| n * (coef * xj + lambda * tj))
            .collect();
        let mut rng = NoiseSource::seeded(seed);
        let mut out = [0.0; 3];
        (0..draws)
            .flat_map(|_| {
                noisy_gradient(&theta, &x, 1.0, n, lambda, noise_std, &mut rng, &mut out);
                out.iter()
                    .zip(&exact)
                    .map(|(a, b)| (a - b) / sigma)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn noise_is_gaussian_with_the_paper_variance() {
        let sigma = BstDpSgd::new(1.0, 1e-5, 0.1).expect("valid").noise_std(50);
        let r = standardised_residuals(sigma, sigma, 1500, 1);
        let normal = Normal::new(0.0, 1.0).expect("valid");
        assert!(ks_test(&r, |x| normal.cdf(x)).p_value > 1e-3);
    }

    #[test]
    fn under_noised_variant_fails_the_same_check() {
        let sigma = BstDpSgd::new(1.0, 1e-5, 0.1).expect("valid").noise_std(50);
        let r = standardised_residuals(sigma, sigma / 2.0, 1500, 2);
        let normal = Normal::new(0.0, 1.0).expect("valid");
        assert!(ks_test(&r, |x| normal.cdf(x)).p_value < 1e-6);
    }

    #[test]
    fn guarantee_is_replace_one_and_large_epsilon_learns() {
        let d = generate(
            &SyntheticSpec {
                train: 300,
                ..SyntheticSpec::default()
            },
            &mut derived_rng(3, &[]),
        );
        // The optimiser with negligible noise: ε = 1000 is outside the proven range, so it is
        // built without the range check, which `new` enforces (checked below).
        assert!(BstDpSgd::new(1000.0, 1e-5, 0.01).is_err());
        let m = BstDpSgd::unchecked(1000.0, 1e-5, 0.01).expect("valid");
        assert_eq!(
            m.guarantee(),
            PrivacyGuarantee {
                epsilon: 1000.0,
                delta: 1e-5,
                relation: NeighbourRelation::ReplaceOne
            }
        );
        assert!(m.rdp().is_none());
        let r = m
            .release(&d.train, &mut NoiseSource::seeded(4))
            .expect("release");
        let acc = r.classifier.accuracy(&d.test);
        assert!(acc > 0.85, "test accuracy {acc}");
        assert!(
            dot(r.classifier.coefficients(), r.classifier.coefficients()).sqrt()
                <= m.radius() * (1.0 + 1e-12)
        );
        assert_eq!(r.metadata.parameters["iterations"], 90_000.0);
        assert_eq!(r.metadata.parameters["noise_std"], m.noise_std(300));
    }

    #[test]
    fn too_many_iterations_is_a_typed_error() {
        let n = 10_001;
        let data = Dataset::new(vec![0.5; n], vec![1.0; n], 1);
        let m = BstDpSgd::new(1.0, 1e-5, 0.1).expect("valid");
        assert_eq!(
            m.release(&data, &mut NoiseSource::seeded(1)),
            Err(MechanismError::TooManyIterations {
                mechanism: NAME,
                iterations: 100_020_001,
                cap: MAX_ITERATIONS
            })
        );
    }

    #[test]
    fn invalid_parameters_are_errors() {
        for (e, d, l) in [
            (0.0, 1e-5, 0.1),
            (1.0, 0.0, 0.1),
            (1.0, 1.0, 0.1),
            (1.0, 1e-5, 0.0),
            (f64::INFINITY, 1e-5, 0.1),
        ] {
            assert!(BstDpSgd::new(e, d, l).is_err(), "{e} {d} {l}");
        }
    }
}
