//! The Δ rules of objective perturbation: how much regularisation to add on top of the user's λ,
//! as a function of public quantities only (n, d, ε, δ, λ).
//!
//! # ε-DP: CMS 2011 Theorem 9
//!
//! Chaudhuri, Monteleoni & Sarwate (JMLR 2011), Theorem 9: for any Δ ≥ 0 with
//!
//! ```text
//! ε′ = ε − 2 ln(1 + c/(n(λ + Δ))) > 0                                            (T9.1)
//! ```
//!
//! releasing argmin (1/n)Σℓ + ((λ + Δ)/2)‖θ‖² + (1/n)bᵀθ with b of density ∝ exp(−ε′‖b‖/2) is
//! ε-DP (replace-one; ‖x‖ ≤ 1, |ℓ′| ≤ 1, |ℓ″| ≤ c). The release depends on λ and Δ only through
//! **μ = λ + Δ**. Algorithm 2 of the paper picks Δ = 0 whenever that leaves ε′ > 0, however small —
//! the "dip" (n = 50, λ = 0.01: ε = 0.9 gets ε′ ≈ 0.09). A huge Δ, on the other hand, maximises ε′
//! and kills the signal. The rule here minimises an upper bound on the expected excess
//! regularised risk instead. With J_λ(θ) = (1/n)Σℓ + (λ/2)‖θ‖²:
//!
//! 1. J_μ is μ-strongly convex and θ_priv minimises J_μ + bᵀθ/n, so
//!    J_μ(θ_priv) − J_μ(θ_μ) ≤ ‖b‖²/(n²μ);                                          (B.1)
//! 2. J_λ(θ_priv) − J_λ(θ_λ) ≤ J_μ(θ_priv) − J_μ(θ_μ) + (Δ/2)‖θ_λ‖²;                    (B.2)
//! 3. (λ/2)‖θ_λ‖² ≤ J_λ(0) = ln 2, so ‖θ_λ‖² ≤ 2 ln 2/λ;                                (B.3)
//! 4. E‖b‖² = d(d + 1)(2/ε′)² (‖b‖ ~ Gamma(d, 2/ε′)), so the expected excess risk is at most
//!
//! ```text
//! Φ(μ) = 4d(d + 1) / (n² ε′(μ)² μ) + (μ − λ) ln 2 / λ,   μ > max(λ, μ_min),          (B.4)
//! μ_min = c / (n (e^{ε/2} − 1))   (the μ at which ε′ = 0).
//! ```
//!
//! **Rule:** μ* = argmin Φ (evaluated on 4,000 log-spaced points of
//! [max(λ, μ_min(1 + 10⁻⁶)), λ + 10⁴], refined by 60 golden-section steps in log μ between the
//! neighbours of the best grid point; the lower end wins ties), Δ = μ* − λ, ε′ = ε′(μ*). Φ is
//! continuous in ε, so the release has no dip; for large ε or large λ the rule gives Δ = 0.
//!
//! # (ε, δ): Minami et al. 2015, Algorithm 1 / KST 2012
//!
//! Kifer, Smith & Thakurta (COLT 2012) require Δ ≥ 2λ_max/ε in the un-normalised objective (a
//! lower bound only), with b ~ N(0, σ²I), σ² = ζ²(8 ln(2/δ) + 4ε)/ε² independent of Δ. The same
//! proxy with E‖b‖² = dσ² is Φ_G(μ) = dσ²/(n²μ) + (μ − λ) ln 2/λ, minimised in closed form:
//!
//! ```text
//! μ* = max(λ + 2λ_max/(εn), (σ/n) √(dλ / ln 2)),   Δ = n(μ* − λ).                    (B.5)
//! ```
//!
//! The ε split of KST's proof (ε/2 for the Jacobian, ε/2 for the noise) is kept as published.

use super::objective_perturbation_gaussian::GaussianObjectivePerturbation;
use crate::privacy::guarantee::LOGISTIC_UNIT_BALL;

/// c, the bound on ℓ″ of the logistic loss.
const C: f64 = LOGISTIC_UNIT_BALL.loss_hessian_bound;
/// Points of the log grid of the ε-DP rule.
const GRID: usize = 4000;
/// Golden-section refinements of the ε-DP rule.
const REFINE: usize = 60;
/// How far above λ the ε-DP rule searches.
const SPAN: f64 = 1e4;

/// ε′(μ) of (T9.1) for `n` rows.
pub fn epsilon_prime(epsilon: f64, n: usize, mu: f64) -> f64 {
    epsilon - 2.0 * (C / (n as f64 * mu)).ln_1p()
}

/// The μ at which ε′ = 0: every admissible μ is above it.
pub fn mu_min(epsilon: f64, n: usize) -> f64 {
    C / (n as f64 * (epsilon / 2.0).exp_m1())
}

/// Φ(μ) of (B.4); +∞ where ε′ ≤ 0.
pub fn phi(mu: f64, n: usize, dim: usize, epsilon: f64, lambda: f64) -> f64 {
    let ep = epsilon_prime(epsilon, n, mu);
    if ep.is_nan() || ep <= 0.0 {
        return f64::INFINITY;
    }
    let (nf, d) = (n as f64, dim as f64);
    4.0 * d * (d + 1.0) / (nf * nf * ep * ep * mu) + (mu - lambda) * std::f64::consts::LN_2 / lambda
}

/// The outcome of a Δ rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Choice {
    /// μ = λ + Δ, the total quadratic coefficient of the mean objective.
    pub mu: f64,
    /// ε′ spent on the noise density (ε-DP rule only; the Gaussian rule leaves its σ unchanged).
    pub epsilon_prime: f64,
}

/// The ε-DP rule: μ* = argmin Φ over μ ≥ λ with ε′(μ) > 0 (see the module documentation).
pub fn pure(n: usize, dim: usize, epsilon: f64, lambda: f64) -> Choice {
    let f = |log_mu: f64| phi(log_mu.exp(), n, dim, epsilon, lambda);
    let lo = lambda.max(mu_min(epsilon, n) * (1.0 + 1e-6));
    let hi = lambda + SPAN;
    let (a0, b0) = (lo.ln(), hi.ln());
    let step = (b0 - a0) / (GRID - 1) as f64;
    let at = |i: usize| a0 + step * i as f64;
    let best = (0..GRID)
        .map(|i| (i, f(at(i))))
        .fold(
            (0, f64::INFINITY),
            |acc, (i, v)| if v < acc.1 { (i, v) } else { acc },
        );
    let (mut a, mut b) = (at(best.0.saturating_sub(1)), at((best.0 + 1).min(GRID - 1)));
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..REFINE {
        let (c1, c2) = (b - g * (b - a), a + g * (b - a));
        if f(c1) <= f(c2) {
            b = c2;
        } else {
            a = c1;
        }
    }
    let mut mu = ((a + b) / 2.0).exp();
    if phi(lo, n, dim, epsilon, lambda) <= phi(mu, n, dim, epsilon, lambda) {
        mu = lo;
    }
    Choice {
        mu,
        epsilon_prime: epsilon_prime(epsilon, n, mu),
    }
}

/// The (ε, δ) rule (B.5): μ* for Minami et al. 2015, Algorithm 1 / KST 2012 with noise σ =
/// `noise_std`.
pub fn gaussian(n: usize, dim: usize, epsilon: f64, lambda: f64, noise_std: f64) -> f64 {
    let nf = n as f64;
    let floor = lambda + 2.0 * GaussianObjectivePerturbation::LAMBDA_MAX / (epsilon * nf);
    let balance = noise_std / nf * (dim as f64 * lambda / std::f64::consts::LN_2).sqrt();
    floor.max(balance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pure_rule_matches_the_research_prototype() {
        // The research prototype's value: n = 50, d = 10, λ = 0.01.
        let c = pure(50, 10, 0.9, 0.01);
        assert!((c.mu - 0.0752).abs() < 5e-4, "{c:?}");
        assert!((c.epsilon_prime - 0.77).abs() < 5e-3, "{c:?}");
        let c = pure(50, 10, 0.5, 0.01);
        assert!((c.mu - 0.136).abs() < 1e-3, "{c:?}");
        assert!((c.epsilon_prime - 0.43).abs() < 5e-3, "{c:?}");
        let c = pure(50, 10, 5.0, 0.01);
        assert!((c.mu - 0.013).abs() < 5e-4, "{c:?}");
        // λ = auto cases of §F.5: ε′ of Diabetes (n = 600, d = 9) and BC (n = 400, d = 31).
        let c = pure(600, 9, 1.0, 0.04);
        assert!((c.epsilon_prime - 0.979).abs() < 1e-3, "{c:?}");
        let c = pure(400, 31, 1.0, 8.0 * 31f64.sqrt() / 400.0);
        assert!((c.epsilon_prime - 0.989).abs() < 1e-3, "{c:?}");
    }

    #[test]
    fn pure_rule_is_admissible_and_at_least_lambda() {
        for n in [5, 20, 50, 600, 100_000] {
            for eps in [0.05, 0.3, 0.81, 0.9, 2.0, 10.0] {
                for lambda in [1e-4, 0.01, 1.0] {
                    let c = pure(n, 10, eps, lambda);
                    assert!(
                        c.mu >= lambda && c.epsilon_prime > 0.0,
                        "{n} {eps} {lambda}"
                    );
                    assert!(c.epsilon_prime < eps);
                    assert_eq!(c.epsilon_prime, epsilon_prime(eps, n, c.mu));
                    // No grid point of a coarse scan is clearly better (the minimiser is global).
                    let best = (0..200)
                        .map(|i| c.mu.max(lambda) * 10f64.powf(-3.0 + 6.0 * i as f64 / 199.0))
                        .filter(|m| *m >= lambda)
                        .map(|m| phi(m, n, 10, eps, lambda))
                        .fold(f64::INFINITY, f64::min);
                    assert!(phi(c.mu, n, 10, eps, lambda) <= best * (1.0 + 1e-6));
                }
            }
        }
    }

    #[test]
    fn pure_rule_has_no_dip() {
        // Algorithm 2 at n = 50, λ = 0.01 drops from ε′ = 0.4 (ε = 0.8) to ε′ ≈ 0.09 (ε = 0.9);
        // the rule's ε′ and μ move continuously with ε.
        let mut last = pure(50, 10, 0.5, 0.01);
        for i in 1..=100 {
            let c = pure(50, 10, 0.5 + 0.02 * i as f64, 0.01);
            assert!(c.epsilon_prime > last.epsilon_prime, "ε′ grows with ε");
            assert!((c.mu / last.mu - 1.0).abs() < 0.05, "μ moves smoothly");
            last = c;
        }
    }

    #[test]
    fn gaussian_rule_closed_form() {
        let sigma = (8.0 * (2.0f64 / 1e-5).ln() + 4.0).sqrt();
        let mu = gaussian(600, 9, 1.0, 0.04, sigma);
        let floor: f64 = 0.04 + 0.5 / 600.0;
        let balance = sigma / 600.0 * (9.0 * 0.04 / std::f64::consts::LN_2).sqrt();
        assert_eq!(mu, floor.max(balance));
        assert!(mu >= 0.04 + 0.5 / 600.0);
        // λ = 0.01 at n = 50: the balance term binds, well above line 1's floor.
        let mu = gaussian(50, 10, 1.0, 0.01, sigma);
        assert!(mu > 3.0 * (0.01 + 0.5 / 50.0), "{mu}");
    }
}
