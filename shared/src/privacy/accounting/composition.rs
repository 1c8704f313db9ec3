//! **(ε, δ) accounting of many single-record steps**: the route of Bassily, Smith & Thakurta
//! 2014's privacy proof (BST14, Theorem 2.1), with each link stated for the noise as sampled.
//! [`crate::privacy::mechanism::dp_sgd_bst`] composes the three links below;
//! `docs/proofs/dp-sgd-bst-lattice.md` writes the argument out.
//!
//! 1. [`zcdp_to_dp`]: a mechanism that is ρ-zCDP (every Rényi divergence D_α ≤ ρα) is
//!    (ρ + 2√(ρ·ln(1/δ)), δ)-DP for every δ > 0 (Bun & Steinke 2016, "Concentrated Differential
//!    Privacy: Simplifications, Extensions, and Lower Bounds", Proposition 1.3). The discrete
//!    Gaussian on a lattice is ρ-zCDP with ρ = Δ²/(2s²) for an integer shift of norm Δ
//!    ([`crate::privacy::discrete::gaussian`]).
//! 2. [`amplify_by_one_uniform_record`]: a step that reads **one record drawn uniformly** from n,
//!    and is (ε₀, δ₀)-indistinguishable between *any* two records, is
//!    (ln(1 + (e^{ε₀} − 1)/n), δ₀/n)-DP under **replace-one** (the m = 1 case of Balle, Barthe &
//!    Gaboardi 2018, "Privacy Amplification by Subsampling", Theorem 10, sampling without
//!    replacement under substitution; the proof page proves it directly).
//! 3. [`advanced_composition`]: k adaptively chosen (ε, δ)-DP steps are
//!    (ε√(2k·ln(1/δ̃)) + kε(e^ε − 1), kδ + δ̃)-DP for every δ̃ > 0 (Dwork, Rothblum & Vadhan
//!    2010, "Boosting and Differential Privacy", Theorem III.3). The full bound, not BST14's
//!    simplified ε√(2k·ln(1/δ̃)) that holds only for small ε.
//!
//! Every function is monotone in its ε inputs, so an upper bound in, an upper bound out. The
//! arithmetic is f64 with `ln_1p`/`exp_m1` for small arguments; callers compare with a margin.

/// Bun & Steinke 2016, Proposition 1.3: ρ-zCDP ⇒ (ρ + 2√(ρ ln(1/δ)), δ)-DP, for ρ ≥ 0 and
/// δ ∈ (0, 1).
pub fn zcdp_to_dp(rho: f64, delta: f64) -> f64 {
    rho + 2.0 * (rho * (1.0 / delta).ln()).sqrt()
}

/// (ε₀, δ₀) of one step on a record drawn uniformly from `n` ≥ 1 → the step's (ε, δ) under
/// replace-one: (ln(1 + (e^{ε₀} − 1)/n), δ₀/n) (module docs, link 2).
pub fn amplify_by_one_uniform_record(epsilon: f64, delta: f64, n: u64) -> (f64, f64) {
    let nf = n.max(1) as f64;
    ((epsilon.exp_m1() / nf).ln_1p(), delta / nf)
}

/// Dwork, Rothblum & Vadhan 2010, Theorem III.3: `k` adaptive (ε, δ)-DP steps are
/// (ε√(2k ln(1/δ̃)) + kε(e^ε − 1), kδ + δ̃)-DP, with δ̃ = `slack` ∈ (0, 1). Zero steps cost
/// nothing.
pub fn advanced_composition(epsilon: f64, delta: f64, k: u64, slack: f64) -> (f64, f64) {
    if k == 0 {
        return (0.0, 0.0);
    }
    let kf = k as f64;
    let eps = epsilon * (2.0 * kf * (1.0 / slack).ln()).sqrt() + kf * epsilon * epsilon.exp_m1();
    (eps, kf * delta + slack)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zcdp_conversion_is_bun_and_steinke_proposition_1_3() {
        // ρ = 1/2 (the Gaussian mechanism with Δ = σ), δ = e^{-2}: 1/2 + 2·√(1/2·2) = 2.5.
        assert!((zcdp_to_dp(0.5, (-2.0f64).exp()) - 2.5).abs() < 1e-12);
        assert_eq!(zcdp_to_dp(0.0, 1e-5), 0.0);
    }

    #[test]
    fn amplification_by_one_of_n_records() {
        // ε₀ = ln 3: e^{ε₀} − 1 = 2, so ln(1 + 2/4) = ln 1.5 for n = 4.
        let (e, d) = amplify_by_one_uniform_record(3f64.ln(), 0.4, 4);
        assert!((e - 1.5f64.ln()).abs() < 1e-15);
        assert!((d - 0.1).abs() < 1e-17);
        // n = 1 is no amplification; tiny ε₀ stays accurate (ε₀/n to first order).
        assert!((amplify_by_one_uniform_record(0.3, 1e-6, 1).0 - 0.3).abs() < 1e-15);
        let tiny = amplify_by_one_uniform_record(1e-12, 0.0, 1000).0;
        assert!((tiny / 1e-15 - 1.0).abs() < 1e-9, "{tiny}");
    }

    #[test]
    fn advanced_composition_is_drv10_theorem_iii_3() {
        let (e, d) = advanced_composition(0.01, 1e-7, 100, 1e-5);
        let expected = 0.01 * (200.0 * 1e5f64.ln()).sqrt() + 100.0 * 0.01 * 0.01f64.exp_m1();
        assert!((e - expected).abs() < 1e-15, "{e} {expected}");
        assert!((d - (1e-5 + 1e-5)).abs() < 1e-18);
        assert_eq!(advanced_composition(0.5, 1e-3, 0, 1e-5), (0.0, 0.0));
        // Monotone in ε: a larger per-step ε never composes to less.
        let more = advanced_composition(0.011, 1e-7, 100, 1e-5).0;
        assert!(more > e);
    }
}
