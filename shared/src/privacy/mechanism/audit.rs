//! A **black-box privacy audit** shared by the mechanisms' tests: many releases on a pair of
//! worst-case neighbouring datasets, a threshold test on a scalar statistic of each release, and
//! a 95 % lower confidence bound on ε from Clopper–Pearson intervals on the two rejection rates
//! (Jagielski, Ullman & Oprea 2020, "Auditing Differentially Private Machine Learning", §3: an
//! (ε, δ)-DP mechanism has P[T ∈ S | D′] ≤ e^ε·P[T ∈ S | D] + δ for every event S, so
//! ε ≥ log((P′ − δ)/P) for the true rates, and the bound uses P′'s lower and P's upper limit).
//!
//! The audit can only find a lower bound: a result below the claim does not prove the claim, but
//! a result above it proves the mechanism miscalibrated — which is what the tests' mutants show
//! it does.

use crate::privacy::noise::NoiseSource;
use statrs::distribution::{Beta, ContinuousCDF};

/// Clopper–Pearson bounds on a binomial proportion: (lower, upper) at one-sided level `a` each.
pub(crate) fn clopper_pearson(k: usize, n: usize, a: f64) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let lower = if k == 0.0 {
        0.0
    } else {
        Beta::new(k, n - k + 1.0).expect("valid").inverse_cdf(a)
    };
    let upper = if k == n {
        1.0
    } else {
        Beta::new(k + 1.0, n - k)
            .expect("valid")
            .inverse_cdf(1.0 - a)
    };
    (lower, upper)
}

/// `draws` statistics from `release`, on a source seeded with `seed`.
fn draw(release: &mut impl FnMut(&mut NoiseSource) -> f64, draws: usize, seed: u64) -> Vec<f64> {
    let mut noise = NoiseSource::seeded(seed);
    (0..draws).map(|_| release(&mut noise)).collect()
}

/// A 95 % lower confidence bound on ε from the threshold test [statistic < t] between the
/// releases on D (`on_d`) and on its neighbour D′ (`on_d2`, whose statistic tends lower): the
/// threshold is chosen on 4,000 pilot releases of each, then both rates are estimated on
/// `draws` fresh ones, and ε ≥ log((P′_lo − δ)/P_hi).
pub(crate) fn epsilon_lower(
    mut on_d: impl FnMut(&mut NoiseSource) -> f64,
    mut on_d2: impl FnMut(&mut NoiseSource) -> f64,
    (delta, draws): (f64, usize),
    seed: u64,
) -> f64 {
    let rate = |xs: &[f64], t: f64| xs.iter().filter(|&&x| x < t).count();
    let (pilot_d, pilot_d2) = (
        draw(&mut on_d, 4000, seed),
        draw(&mut on_d2, 4000, seed + 1),
    );
    let mut sorted = pilot_d2.clone();
    sorted.sort_by(f64::total_cmp);
    let threshold = (1..100)
        .map(|q| sorted[q * sorted.len() / 100])
        .max_by(|&a, &b| {
            let score = |t| {
                let (p, p2) = (rate(&pilot_d, t).max(1), rate(&pilot_d2, t));
                (p2 as f64 / p as f64).ln() - 3.0 / (p as f64).sqrt()
            };
            score(a).total_cmp(&score(b))
        })
        .expect("thresholds");
    let (d, d2) = (
        draw(&mut on_d, draws, seed + 2),
        draw(&mut on_d2, draws, seed + 3),
    );
    let (_, p_hi) = clopper_pearson(rate(&d, threshold), draws, 0.025);
    let (p2_lo, _) = clopper_pearson(rate(&d2, threshold), draws, 0.025);
    ((p2_lo - delta).max(0.0) / p_hi).ln()
}
