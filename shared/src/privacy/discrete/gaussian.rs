//! The **discrete Gaussian** N_ℤ(0, σ²) on the integers, P(z) ∝ e^{−z²/(2σ²)}, for a rational
//! σ² > 0, sampled exactly: Canonne, Kamath & Steinke, "The Discrete Gaussian for Differential
//! Privacy", NeurIPS 2020, **Algorithm 3**.
//!
//! With t = ⌊σ⌋ + 1 (an integer, computed exactly as ⌊√⌊σ²⌋⌋ + 1): draw Y ~ Lap_ℤ(t)
//! ([`super::laplace`], Algorithm 2) and accept it with probability
//! exp(−(|Y| − σ²/t)²/(2σ²)) ([`super::bernoulli`], Algorithm 1, with the exact rational
//! γ = (|Y|·q·t − p)²/(2·p·q·t²) for σ² = p/q); otherwise start again. Since
//! e^{−|y|/t}·e^{−(|y| − σ²/t)²/(2σ²)} = e^{−y²/(2σ²)}·e^{−σ²/(2t²)}, an accepted Y has law
//! N_ℤ(0, σ²) exactly; each round accepts with probability bounded below by a constant (CKS
//! 2020 §5), so the expected running time is O(1) big-integer operations.
//!
//! **Privacy: Rényi divergence under an integer shift** (CKS 2020 §2; stated for concentrated
//! DP there — ½ε²-zCDP with ε = Δ/σ for an integer query of sensitivity Δ, their Theorem 4 in
//! arXiv:2004.00010 — and re-derived here for the exact statement used). For μ ∈ ℤ and α > 1 both
//! laws N_ℤ(μ, σ²) and N_ℤ(0, σ²) have the same normaliser N = Σ_z e^{−z²/(2σ²)}, and completing
//! the square, α(z − μ)² + (1 − α)z² = (z − αμ)² − α(α − 1)μ², gives
//!
//! ```text
//!   e^{(α−1)·D_α} = (1/N)·Σ_z e^{−(z − αμ)²/(2σ²)} · e^{α(α−1)μ²/(2σ²)} ≤ e^{α(α−1)μ²/(2σ²)},
//! ```
//!
//! because Σ_z e^{−(z − c)²/(2σ²)} = σ√(2π)·Σ_k e^{−2π²σ²k²}·cos(2πkc) (Poisson summation) is
//! largest at c = 0. So **D_α(N_ℤ(μ, σ²) ‖ N_ℤ(0, σ²)) ≤ α·μ²/(2σ²)**, the continuous Gaussian's
//! value (with equality when αμ ∈ ℤ). For a vector with **independent** coordinates (the
//! multivariate discrete Gaussian, CKS 2020's Theorem 14 in the arXiv numbering) the Rényi
//! divergences add: for integer vectors x, x′,
//! **D_α ≤ α·Σ_j (x_j − x′_j)²/(2σ²) = α·‖x − x′‖₂²/(2σ²)** — the curve of the Gaussian
//! mechanism with ℓ₂ sensitivity ‖x − x′‖₂ and standard deviation σ (Mironov 2017,
//! Proposition 7). [`super::grid`] uses this for real-valued queries rounded to a grid.
//!
//! Samples are exact integers; [`DiscreteGaussian::sample`] saturates to `i128` as
//! [`super::laplace`] does (post-processing, probability below e^{−2^100} for σ ≤ 2^48).

use super::DiscreteError;
use super::bernoulli::{bernoulli_exp_parts, bernoulli_exp_u128};
use super::laplace::{DiscreteLaplace, sample_small, signed, signed_u128};
use super::rational::Ratio;
use crate::privacy::noise::NoiseSource;
use num_bigint::BigUint;
use num_traits::{One, ToPrimitive};

/// N_ℤ(0, σ²) for a rational σ² > 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscreteGaussian {
    sigma2: Ratio,
    /// t = ⌊σ⌋ + 1.
    t: BigUint,
    proposal: DiscreteLaplace,
    /// The constants of γ when they are below 2^128 (and t below 2^64): sampled in machine
    /// integers.
    small: Option<Small>,
}

/// σ² = p/q, t, q·t and γ's denominator 2·p·q·t² in machine integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Small {
    p: u128,
    t: u64,
    qt: u128,
    den: u128,
}

impl Small {
    /// The constants of `sigma2` with proposal scale `t`, when all fit.
    fn of(sigma2: &Ratio, t: Option<u64>) -> Option<Self> {
        let (p, q, t) = (sigma2.num().to_u128()?, sigma2.den().to_u128()?, t?);
        let qt = q.checked_mul(u128::from(t))?;
        let den = p
            .checked_mul(qt)?
            .checked_mul(u128::from(t))?
            .checked_mul(2)?;
        Some(Self { p, t, qt, den })
    }

    /// One accepted Y (Algorithm 3) with the draws of the big-integer path: the proposal's
    /// machine-integer path, then Bernoulli(e^{−γ}) for γ = (|Y|·q·t − p)²/den, formed in big
    /// integers where a product passes 2^128.
    fn sample(self, rng: &mut NoiseSource) -> (bool, u128) {
        loop {
            let (negative, y) = sample_small(self.t, 1, rng);
            let square = y
                .checked_mul(self.qt)
                .map(|yqt| yqt.abs_diff(self.p))
                .and_then(|diff| diff.checked_mul(diff));
            let accepted = match square {
                Some(square) => bernoulli_exp_u128(square, self.den, rng),
                None => {
                    let (yqt, p) = (BigUint::from(y) * self.qt, BigUint::from(self.p));
                    let diff = if yqt >= p { yqt - p } else { p - yqt };
                    bernoulli_exp_parts(&(&diff * &diff), &BigUint::from(self.den), rng)
                }
            };
            if accepted {
                return (negative, y);
            }
        }
    }
}

impl DiscreteGaussian {
    /// The law with the exact rational variance parameter σ² > 0.
    pub fn new(sigma2: Ratio) -> Result<Self, DiscreteError> {
        if sigma2.is_zero() {
            return Err(DiscreteError::InvalidParameter {
                name: "discrete Gaussian σ²",
                value: 0.0,
                needs: "must be > 0",
            });
        }
        let t = sigma2.floor_sqrt() + BigUint::one();
        let proposal = DiscreteLaplace::new(Ratio::whole(t.clone()))?;
        let small = Small::of(&sigma2, proposal.small_integer_scale());
        Ok(Self {
            sigma2,
            t,
            proposal,
            small,
        })
    }

    /// The law with σ² = the exact value of the double `sigma2` (finite, > 0).
    pub fn from_f64(sigma2: f64) -> Result<Self, DiscreteError> {
        match Ratio::from_f64(sigma2) {
            Some(s) if sigma2 > 0.0 => Self::new(s),
            _ => Err(DiscreteError::InvalidParameter {
                name: "discrete Gaussian σ²",
                value: sigma2,
                needs: "must be a finite number > 0",
            }),
        }
    }

    /// σ², exactly.
    pub fn sigma2(&self) -> &Ratio {
        &self.sigma2
    }

    /// One sample as (negative, |z|) — exact (Algorithm 3; module docs).
    pub fn sample_parts(&self, rng: &mut NoiseSource) -> (bool, BigUint) {
        match self.small {
            Some(small) => {
                let (negative, y) = small.sample(rng);
                (negative, BigUint::from(y))
            }
            None => self.sample_big(rng),
        }
    }

    /// [`Self::sample_parts`] in big integers only.
    fn sample_big(&self, rng: &mut NoiseSource) -> (bool, BigUint) {
        let (p, q) = (self.sigma2.num(), self.sigma2.den());
        let t = &self.t;
        // γ's denominator 2·p·q·t² does not depend on Y.
        let den = (p * q * t * t) << 1u32;
        let qt = q * t;
        loop {
            let (negative, y) = self.proposal.sample_parts(rng);
            let yqt = &y * &qt;
            let diff = if &yqt >= p { yqt - p } else { p - yqt };
            if bernoulli_exp_parts(&(&diff * &diff), &den, rng) {
                return (negative, y);
            }
        }
    }

    /// One sample as an integer, saturating beyond ±(2^127 − 1) (module docs).
    pub fn sample(&self, rng: &mut NoiseSource) -> i128 {
        match self.small {
            Some(small) => {
                let (negative, y) = small.sample(rng);
                signed_u128(negative, y)
            }
            None => {
                let (negative, magnitude) = self.sample_big(rng);
                signed(negative, &magnitude)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{
        assert_same_draws, chi_square_by_cdf, discrete_gaussian_cdf, draws, edges_for,
    };
    use super::*;

    const DRAWS: usize = 40_000;

    fn samples(law: &DiscreteGaussian, seed: u64) -> Vec<i128> {
        draws(DRAWS, seed, |rng| law.sample(rng))
    }

    fn p_value(samples: &[i128], sigma2: f64) -> f64 {
        let cdf = discrete_gaussian_cdf(sigma2);
        let sigma = sigma2.sqrt();
        let step = ((sigma / 4.0) as i128).max(1);
        let edges = edges_for(&cdf, samples.len(), -((5.0 * sigma) as i128) - 2, step);
        chi_square_by_cdf(samples, &edges, &cdf)
    }

    #[test]
    fn samples_follow_the_exact_pmf_at_several_variances() {
        // Below 1 (t = 1), non-integer, a non-dyadic rational (10/3), large.
        let third = Ratio::new(BigUint::from(10u32), BigUint::from(3u32)).expect("den > 0");
        let cases = [
            (DiscreteGaussian::from_f64(0.3).expect("valid"), 0.3),
            (DiscreteGaussian::from_f64(2.0).expect("valid"), 2.0),
            (DiscreteGaussian::new(third).expect("valid"), 10.0 / 3.0),
            (DiscreteGaussian::from_f64(90.25).expect("valid"), 90.25),
            (
                DiscreteGaussian::from_f64(1e12 + 0.5).expect("valid"),
                1e12 + 0.5,
            ),
        ];
        for (i, (law, sigma2)) in cases.iter().enumerate() {
            let p = p_value(&samples(law, 400 + i as u64), *sigma2);
            assert!(p > 1e-3, "σ² = {sigma2}: p = {p}");
        }
    }

    #[test]
    fn half_the_standard_deviation_fails_the_same_test() {
        for (i, sigma2) in [2.0, 90.25, 1e12 + 0.5].into_iter().enumerate() {
            let mutant = DiscreteGaussian::from_f64(sigma2 / 4.0).expect("valid");
            let p = p_value(&samples(&mutant, 500 + i as u64), sigma2);
            assert!(p < 1e-6, "σ² = {sigma2}: mutant p = {p}");
        }
    }

    #[test]
    fn the_sample_variance_is_close_to_sigma_squared() {
        // At σ = 3 the variance of N_ℤ(0, σ²) equals σ² up to terms of order e^{−2π²σ²}.
        let law = DiscreteGaussian::from_f64(9.0).expect("valid");
        let s = samples(&law, 600);
        let var = s.iter().map(|&z| (z * z) as f64).sum::<f64>() / s.len() as f64;
        // The variance of z² is 2σ⁴ = 162: 5 standard errors of the mean of z².
        assert!(
            (var - 9.0).abs() < 5.0 * (162.0 / s.len() as f64).sqrt(),
            "{var}"
        );
    }

    #[test]
    fn the_machine_integer_path_draws_what_the_big_integer_path_draws() {
        // A grid's cell variance (about 2^40), small and non-dyadic-looking variances, and one
        // beyond the largest the grid allows, where (|Y|·q·t − p)² can pass 2^128: the same
        // seed, the same samples.
        for (i, sigma2) in [
            0.3,
            1.0,
            7.25,
            1.37 * 2f64.powi(40),
            2f64.powi(60) / 3.0,
            2f64.powi(62),
        ]
        .into_iter()
        .enumerate()
        {
            let law = DiscreteGaussian::from_f64(sigma2).expect("valid");
            assert!(law.small.is_some(), "{sigma2}");
            let big = |rng: &mut NoiseSource| law.sample_big(rng);
            assert_same_draws(90 + i as u64, 1_000, |rng| law.sample_parts(rng), big);
        }
        // γ's denominator beyond 2^128 takes the big-integer path.
        let wide = DiscreteGaussian::from_f64(2f64.powi(96)).expect("valid");
        assert_eq!(wide.small, None);
    }

    #[test]
    fn invalid_variances_are_typed_errors() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    DiscreteGaussian::from_f64(bad),
                    Err(DiscreteError::InvalidParameter { .. })
                ),
                "{bad}"
            );
        }
        assert!(DiscreteGaussian::new(Ratio::integer(0)).is_err());
        let law = DiscreteGaussian::from_f64(6.25).expect("valid");
        assert_eq!(law.t, BigUint::from(3u32), "t = ⌊2.5⌋ + 1");
        assert_eq!(law.sigma2(), &Ratio::from_f64(6.25).expect("finite"));
    }
}
