//! **Bernoulli(exp(−γ))** for a rational γ ≥ 0, exactly: Canonne, Kamath & Steinke, "The
//! Discrete Gaussian for Differential Privacy", NeurIPS 2020, **Algorithm 1**.
//!
//! For γ ∈ [0, 1]: K = 1; while Bernoulli(γ/K) = 1, K ← K + 1; return [K odd]. Then
//! P(K = k) = γ^{k−1}/(k − 1)! − γ^k/k!, and summing over odd k gives Σ_j (−γ)^j/j! = e^{−γ}.
//! For γ > 1: ⌊γ⌋ independent Bernoulli(e^{−1}) trials must all succeed, then one
//! Bernoulli(e^{−(γ − ⌊γ⌋)}) — the product of their probabilities is e^{−γ}. Every
//! Bernoulli(a/b) is the exact comparison \[U < a\] of a uniform integer U below b
//! ([`super::rational::bernoulli`]), so the output has law Bernoulli(e^{−γ}) exactly, with no
//! floating point. The expected number of uniform draws is at most about e + 1.6 (one
//! Bernoulli(e^{−1}) loop fails with probability 1 − e^{−1} at each step).

use super::rational::{Ratio, bernoulli, uniform_below_u128};
use crate::privacy::noise::NoiseSource;
use num_bigint::BigUint;
use num_traits::{One, ToPrimitive, Zero};

/// A draw of Bernoulli(exp(−γ)) for the rational γ = `gamma` ≥ 0 (Algorithm 1; module docs).
pub fn bernoulli_exp(gamma: &Ratio, rng: &mut NoiseSource) -> bool {
    bernoulli_exp_parts(gamma.num(), gamma.den(), rng)
}

/// Bernoulli(exp(−num/den)) for den > 0 (Algorithm 1 for any γ ≥ 0). Below 2^128 it runs in
/// machine integers ([`bernoulli_exp_u128`]), with the same draws and the same result.
pub(crate) fn bernoulli_exp_parts(num: &BigUint, den: &BigUint, rng: &mut NoiseSource) -> bool {
    if let (Some(n), Some(d)) = (num.to_u128(), den.to_u128()) {
        return bernoulli_exp_u128(n, d, rng);
    }
    bernoulli_exp_big(num, den, rng)
}

/// [`bernoulli_exp_parts`] in big integers only.
fn bernoulli_exp_big(num: &BigUint, den: &BigUint, rng: &mut NoiseSource) -> bool {
    if num <= den {
        return bernoulli_exp_at_most_one(num, den, rng);
    }
    let whole = num / den;
    let one = BigUint::one();
    let mut done = BigUint::zero();
    while done < whole {
        if !bernoulli_exp_at_most_one(&one, &one, rng) {
            return false;
        }
        done += 1u32;
    }
    bernoulli_exp_at_most_one(&(num % den), den, rng)
}

/// Bernoulli(exp(−num/den)) for 0 ≤ num ≤ den (Algorithm 1, γ ∈ [0, 1]).
fn bernoulli_exp_at_most_one(num: &BigUint, den: &BigUint, rng: &mut NoiseSource) -> bool {
    let mut k: u64 = 1;
    // Bernoulli(γ/K) = Bernoulli(num/(den·K)).
    while bernoulli(num, &(den * k), rng) {
        k += 1;
    }
    k % 2 == 1
}

/// Bernoulli(exp(−num/den)) for den > 0 in machine integers: the steps of the big-integer
/// path, each Bernoulli(a/b) the same comparison of the same uniform draw
/// ([`uniform_below_u128`]); a product den·K beyond 2^128 is formed in big integers.
pub(crate) fn bernoulli_exp_u128(num: u128, den: u128, rng: &mut NoiseSource) -> bool {
    if num <= den {
        return at_most_one_u128(num, den, rng);
    }
    for _ in 0..num / den {
        if !at_most_one_u128(1, 1, rng) {
            return false;
        }
    }
    at_most_one_u128(num % den, den, rng)
}

/// [`bernoulli_exp_at_most_one`] for num ≤ den < 2^128.
fn at_most_one_u128(num: u128, den: u128, rng: &mut NoiseSource) -> bool {
    let mut k: u64 = 1;
    loop {
        let success = match den.checked_mul(u128::from(k)) {
            Some(dk) => uniform_below_u128(dk, rng) < num,
            None => bernoulli(&BigUint::from(num), &(BigUint::from(den) * k), rng),
        };
        if !success {
            return k % 2 == 1;
        }
        k += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_same_draws;
    use super::*;

    /// Frequency of successes over `draws`, and whether it is within 5 standard errors of p.
    fn within_five_se(successes: usize, draws: usize, p: f64) -> bool {
        let se = (p * (1.0 - p) / draws as f64).sqrt();
        (successes as f64 / draws as f64 - p).abs() < 5.0 * se
    }

    fn frequency(gamma: f64, draws: usize, seed: u64) -> usize {
        let g = Ratio::from_f64(gamma).expect("γ ≥ 0");
        let mut rng = NoiseSource::seeded(seed);
        (0..draws).filter(|_| bernoulli_exp(&g, &mut rng)).count()
    }

    #[test]
    fn success_frequency_is_exp_minus_gamma_below_and_above_one() {
        let draws = 200_000;
        for (i, gamma) in [0.0, 0.05, 0.5, 1.0, 1.5, 2.75, 6.3]
            .into_iter()
            .enumerate()
        {
            let hits = frequency(gamma, draws, 10 + i as u64);
            let p = (-gamma).exp();
            if gamma == 0.0 {
                assert_eq!(hits, draws, "e^0 = 1");
            } else {
                assert!(within_five_se(hits, draws, p), "γ = {gamma}: {hits}");
            }
        }
        // A rational that is not dyadic: γ = 7/3.
        let g = Ratio::new(BigUint::from(7u32), BigUint::from(3u32)).expect("den > 0");
        let mut rng = NoiseSource::seeded(30);
        let hits = (0..draws).filter(|_| bernoulli_exp(&g, &mut rng)).count();
        assert!(within_five_se(hits, draws, (-7.0f64 / 3.0).exp()), "{hits}");
    }

    #[test]
    fn the_frequency_test_rejects_wrong_laws() {
        // Mutants the test above must catch: γ/2 (under half the exponent), and ⌊γ⌋ only
        // (the fractional stage dropped).
        let draws = 200_000;
        let half = frequency(2.75 / 2.0, draws, 40);
        assert!(!within_five_se(half, draws, (-2.75f64).exp()), "{half}");
        let floor = frequency(2.0, draws, 41);
        assert!(!within_five_se(floor, draws, (-2.75f64).exp()), "{floor}");
        let small = frequency(0.025, draws, 42);
        assert!(!within_five_se(small, draws, (-0.05f64).exp()), "{small}");
    }

    #[test]
    fn the_machine_integer_path_draws_what_the_big_integer_path_draws() {
        // Pairs on both sides of 2^64 and up to 2^128, γ below and above 1: the same seed gives
        // the same outcomes and leaves the source in the same state.
        let two = |e: u32| 1u128 << e;
        let pairs = [
            (1, 1),
            (3, 7),
            (7, 3),
            (5, two(63) + 3),
            (two(64) - 1, two(64) + 1),
            (two(64) + 1, two(64) - 1),
            (two(100) / 3, two(96) + 12_345),
            (12_345 * two(40), two(106) + 1),
            (u128::MAX / 3, u128::MAX / 2),
            (u128::MAX, u128::MAX / 5),
        ];
        for (i, (num, den)) in pairs.into_iter().enumerate() {
            let (n, d) = (BigUint::from(num), BigUint::from(den));
            let fast = |rng: &mut NoiseSource| bernoulli_exp_u128(num, den, rng);
            assert_same_draws(60 + i as u64, 2_000, fast, |rng| {
                bernoulli_exp_big(&n, &d, rng)
            });
        }
    }

    #[test]
    fn huge_gamma_fails_fast_and_tiny_gamma_almost_always_succeeds() {
        let mut rng = NoiseSource::seeded(50);
        let huge = Ratio::from_f64(1e30).expect("γ ≥ 0");
        assert!((0..1000).all(|_| !bernoulli_exp(&huge, &mut rng)));
        let tiny = Ratio::from_f64(1e-30).expect("γ ≥ 0");
        assert!((0..1000).all(|_| bernoulli_exp(&tiny, &mut rng)));
    }
}
