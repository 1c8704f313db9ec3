//! The **discrete Laplace** distribution Lap_ℤ(t) on the integers, P(z) = ((e^{1/t} − 1)/
//! (e^{1/t} + 1))·e^{−|z|/t}, for a rational scale t > 0, sampled exactly: Canonne, Kamath &
//! Steinke, "The Discrete Gaussian for Differential Privacy", NeurIPS 2020, **Algorithm 2**.
//!
//! With t = a/b (a, b positive integers): draw U uniform in {0, …, a − 1} and keep it with
//! probability e^{−U/a} (else start again); count V, the successes of Bernoulli(e^{−1}) before
//! the first failure; X = U + a·V then has P(X = x) ∝ e^{−x/a} on ℕ, and Y = ⌊X/b⌋ has
//! P(Y = y) ∝ e^{−y·b/a} = e^{−y/t}. A fair sign is drawn, the pair (negative, 0) is rejected (so
//! 0 is not counted twice), and the result is ±Y. Every step is [`super::bernoulli`]'s exact
//! Algorithm 1 or an exact uniform integer; the loop ends after a geometric number of rounds.
//!
//! **Privacy** (the discrete Laplace mechanism; CKS 2020 §1 and Ghosh, Roughgarden & Sundararajan
//! 2009's geometric mechanism): for an integer query q with |q(x) − q(x′)| ≤ Δ on neighbours,
//! q(x) + Lap_ℤ(t) is **(Δ/t)-DP**, since P(z − q(x))/P(z − q(x′)) = e^{(|z − q(x′)| −
//! |z − q(x)|)/t} ≤ e^{Δ/t} for every integer z. [`DiscreteLaplace::with_epsilon`] takes
//! t = 1/ε exactly (the exact rational of the double ε inverted), so a sensitivity-1 integer
//! query is ε-DP with no floating-point term.
//!
//! Magnitudes are exact integers ([`DiscreteLaplace::sample_parts`]); [`DiscreteLaplace::sample`]
//! returns an `i128`, saturating beyond ±(2^127 − 1) — a deterministic function of the exact
//! sample (post-processing), reached with probability below e^{−2^27} for every scale below
//! 2^100.

use super::DiscreteError;
use super::bernoulli::{bernoulli_exp_parts, bernoulli_exp_u128};
use super::rational::{Ratio, uniform_below, uniform_below_u64};
use crate::privacy::noise::NoiseSource;
use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};
use rand::RngExt;

/// Lap_ℤ(t) for a rational scale t > 0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscreteLaplace {
    scale: Ratio,
    /// (a, b) of t = a/b when both are below 2^64: sampled in machine integers.
    small: Option<(u64, u64)>,
}

impl DiscreteLaplace {
    /// The law with the exact rational scale t > 0.
    pub fn new(scale: Ratio) -> Result<Self, DiscreteError> {
        if scale.is_zero() {
            return Err(DiscreteError::InvalidParameter {
                name: "discrete Laplace scale",
                value: 0.0,
                needs: "must be > 0",
            });
        }
        let small = scale.num().to_u64().zip(scale.den().to_u64());
        Ok(Self { scale, small })
    }

    /// The law with scale t = the exact value of the double `scale` (finite, > 0).
    pub fn from_f64(scale: f64) -> Result<Self, DiscreteError> {
        match Ratio::from_f64(scale) {
            Some(t) if scale > 0.0 => Self::new(t),
            _ => Err(DiscreteError::InvalidParameter {
                name: "discrete Laplace scale",
                value: scale,
                needs: "must be a finite number > 0",
            }),
        }
    }

    /// The law with scale t = 1/ε for the exact value of the double ε (finite, > 0): an integer
    /// query of sensitivity 1 is then exactly ε-DP (module docs).
    pub fn with_epsilon(epsilon: f64) -> Result<Self, DiscreteError> {
        let invalid = DiscreteError::InvalidParameter {
            name: "epsilon",
            value: epsilon,
            needs: "must be a finite number > 0",
        };
        let eps = Ratio::from_f64(epsilon).ok_or(invalid.clone())?;
        Self::new(eps.recip().ok_or(invalid)?)
    }

    /// t, exactly.
    pub fn scale(&self) -> &Ratio {
        &self.scale
    }

    /// One sample as (negative, |z|) — exact (Algorithm 2; module docs).
    pub fn sample_parts(&self, rng: &mut NoiseSource) -> (bool, BigUint) {
        match self.small {
            Some((a, b)) => {
                let (negative, y) = sample_small(a, b, rng);
                (negative, BigUint::from(y))
            }
            None => self.sample_big(rng),
        }
    }

    /// [`Self::sample_parts`] in big integers only.
    fn sample_big(&self, rng: &mut NoiseSource) -> (bool, BigUint) {
        let (a, b) = (self.scale.num(), self.scale.den());
        loop {
            let u = uniform_below(a, rng);
            if !bernoulli_exp_parts(&u, a, rng) {
                continue;
            }
            let mut v: u64 = 0;
            let one = BigUint::from(1u32);
            while bernoulli_exp_parts(&one, &one, rng) {
                v += 1;
            }
            let x = u + a * v;
            let y = x / b;
            let negative = rng.random::<bool>();
            if negative && y.is_zero() {
                continue;
            }
            return (negative, y);
        }
    }

    /// One sample as an integer, saturating beyond ±(2^127 − 1) (module docs).
    pub fn sample(&self, rng: &mut NoiseSource) -> i128 {
        match self.small {
            Some((a, b)) => {
                let (negative, y) = sample_small(a, b, rng);
                signed_u128(negative, y)
            }
            None => {
                let (negative, magnitude) = self.sample_big(rng);
                signed(negative, &magnitude)
            }
        }
    }

    /// t = a as an integer below 2^64, when it is one (the discrete Gaussian's proposal).
    pub(crate) fn small_integer_scale(&self) -> Option<u64> {
        self.small.filter(|&(_, b)| b == 1).map(|(a, _)| a)
    }
}

/// Algorithm 2 for t = a/b with a, b < 2^64, in machine integers: the steps of
/// [`DiscreteLaplace::sample_parts`]'s big-integer path with the same draws
/// ([`uniform_below_u64`], [`bernoulli_exp_u128`]), so the same sample from the same state.
/// U + a·V < a·2^64 ≤ 2^128 for any V below 2^64.
pub(crate) fn sample_small(a: u64, b: u64, rng: &mut NoiseSource) -> (bool, u128) {
    let wide = u128::from(a);
    loop {
        let u = u128::from(uniform_below_u64(a, rng));
        if !bernoulli_exp_u128(u, wide, rng) {
            continue;
        }
        let mut v: u64 = 0;
        while bernoulli_exp_u128(1, 1, rng) {
            v += 1;
        }
        let y = (u + wide * u128::from(v)) / u128::from(b);
        let negative = rng.random::<bool>();
        if negative && y == 0 {
            continue;
        }
        return (negative, y);
    }
}

/// ±magnitude as an `i128`, saturating.
pub(crate) fn signed(negative: bool, magnitude: &BigUint) -> i128 {
    let m = magnitude.to_i128().unwrap_or(i128::MAX);
    if negative { -m } else { m }
}

/// [`signed`] for a magnitude below 2^128.
pub(crate) fn signed_u128(negative: bool, magnitude: u128) -> i128 {
    let m = i128::try_from(magnitude).unwrap_or(i128::MAX);
    if negative { -m } else { m }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{
        assert_same_draws, chi_square_by_cdf, discrete_laplace_cdf, draws, edges_for,
    };
    use super::*;

    const DRAWS: usize = 40_000;

    fn samples(law: &DiscreteLaplace, seed: u64) -> Vec<i128> {
        draws(DRAWS, seed, |rng| law.sample(rng))
    }

    fn p_value(samples: &[i128], scale: f64) -> f64 {
        let cdf = discrete_laplace_cdf(scale);
        let edges = edges_for(&cdf, samples.len(), -(40.0 * scale) as i128 - 5, 1);
        chi_square_by_cdf(samples, &edges, &cdf)
    }

    #[test]
    fn samples_follow_the_exact_pmf_at_several_scales() {
        // Dyadic scales from doubles, an exact non-dyadic rational 7/3, and 1/ε for ε = 0.3.
        let sevenths = Ratio::new(BigUint::from(7u32), BigUint::from(3u32)).expect("den > 0");
        let cases = [
            (DiscreteLaplace::from_f64(0.4).expect("valid"), 0.4),
            (DiscreteLaplace::from_f64(1.0).expect("valid"), 1.0),
            (DiscreteLaplace::new(sevenths).expect("valid"), 7.0 / 3.0),
            (
                DiscreteLaplace::with_epsilon(0.3).expect("valid"),
                1.0 / 0.3,
            ),
            (DiscreteLaplace::from_f64(12.5).expect("valid"), 12.5),
        ];
        for (i, (law, scale)) in cases.iter().enumerate() {
            let p = p_value(&samples(law, 100 + i as u64), *scale);
            assert!(p > 1e-3, "scale {scale}: p = {p}");
        }
    }

    #[test]
    fn half_the_scale_fails_the_same_test() {
        for (i, scale) in [1.0, 7.0 / 3.0, 12.5].into_iter().enumerate() {
            let mutant = DiscreteLaplace::from_f64(scale / 2.0).expect("valid");
            let p = p_value(&samples(&mutant, 200 + i as u64), scale);
            assert!(p < 1e-6, "scale {scale}: mutant p = {p}");
        }
    }

    #[test]
    fn large_scales_are_sampled_exactly_too() {
        // t = 2^40 + 1/2: cells of t/4 against the exact CDF.
        let scale = 2f64.powi(40) + 0.5;
        let law = DiscreteLaplace::from_f64(scale).expect("valid");
        let s = samples(&law, 300);
        let cdf = discrete_laplace_cdf(scale);
        let step = (scale / 4.0) as i128;
        let edges = edges_for(&cdf, s.len(), -12 * step, step);
        assert!(chi_square_by_cdf(&s, &edges, &cdf) > 1e-3);
        let half = samples(&DiscreteLaplace::from_f64(scale / 2.0).expect("valid"), 301);
        assert!(chi_square_by_cdf(&half, &edges, &cdf) < 1e-6);
    }

    #[test]
    fn the_machine_integer_path_draws_what_the_big_integer_path_draws() {
        // Integer and dyadic scales, small and near 2^64: the same seed, the same samples.
        for (i, scale) in [0.4, 1.0, 3.0, 1234.5678, 2f64.powi(40) + 1.0, 2f64.powi(63)]
            .into_iter()
            .enumerate()
        {
            let law = DiscreteLaplace::from_f64(scale).expect("valid");
            assert!(law.small.is_some(), "{scale}");
            let big = |rng: &mut NoiseSource| law.sample_big(rng);
            assert_same_draws(80 + i as u64, 1_000, |rng| law.sample_parts(rng), big);
        }
        // A scale beyond 2^64 takes the big-integer path.
        assert_eq!(
            DiscreteLaplace::from_f64(2f64.powi(70))
                .expect("valid")
                .small,
            None
        );
    }

    #[test]
    fn invalid_scales_are_typed_errors() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    DiscreteLaplace::from_f64(bad),
                    Err(DiscreteError::InvalidParameter { .. })
                ),
                "{bad}"
            );
            assert!(DiscreteLaplace::with_epsilon(bad).is_err(), "{bad}");
        }
        assert!(DiscreteLaplace::new(Ratio::integer(0)).is_err());
        let law = DiscreteLaplace::with_epsilon(0.5).expect("valid");
        assert_eq!(law.scale(), &Ratio::integer(2));
    }

    #[test]
    fn saturation_is_symmetric() {
        let huge = BigUint::from(1u32) << 200u32;
        assert_eq!(signed(false, &huge), i128::MAX);
        assert_eq!(signed(true, &huge), -i128::MAX);
        assert_eq!(signed(true, &BigUint::from(5u32)), -5);
    }
}
