//! One-parameter calibration of a linear score for the selection's log-loss comparison.
//!
//! Candidates differ in the *scale* of their margins as much as in their direction: mirror
//! averaging's Σλ_mθ_m inherits the norm of private learners fitted with their own λ, a
//! stacker's is fitted on the rows. Accuracy ignores the scale; held-out logistic loss does not,
//! and would prefer a well-scaled model to a better-ranked one. So before a candidate's
//! held-out loss is compared, its margins get the one scale a ≥ 0 that fits the rows it was
//! built on best: a minimises Σᵢ ℓ(a·mᵢ, yᵢ) + (ρ/2)a² (a one-dimensional logistic regression
//! without intercept; ρ = [`RIDGE`] keeps a finite on separable rows). a·m has the same signs
//! as m, so the candidate's predictions are unchanged.

use crate::util::fastmath::sigmoid;

/// ρ: a tiny ridge on the scale, so separable rows give a large but finite a.
pub const RIDGE: f64 = 1e-3;

/// The scale a ≥ 0 minimising Σ softplus(−a·sᵢ) + (ρ/2)a², for the signed margins sᵢ = yᵢmᵢ.
/// 0 when the margins are useless or inverted (the derivative at 0 is not negative).
pub fn fit_scale(signed: &[f64]) -> f64 {
    let slope =
        |a: f64| -> f64 { signed.iter().map(|&s| -s * sigmoid(-a * s)).sum::<f64>() + RIDGE * a };
    if slope(0.0) >= 0.0 {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    while slope(hi) < 0.0 {
        lo = hi;
        hi *= 2.0;
    }
    let mut a = 0.5 * (lo + hi);
    for _ in 0..100 {
        let g = slope(a);
        if g < 0.0 {
            lo = a;
        } else {
            hi = a;
        }
        let curvature: f64 = signed
            .iter()
            .map(|&s| s * s * sigmoid(a * s) * sigmoid(-a * s))
            .sum::<f64>()
            + RIDGE;
        let newton = a - g / curvature;
        a = if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if hi - lo <= 1e-12 * hi.max(1.0) || g.abs() <= 1e-12 {
            break;
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::logistic::softplus;

    /// The loss Σ softplus(−a·sᵢ) of signed margins at scale `a`.
    fn scaled_loss(signed: &[f64], a: f64) -> f64 {
        signed.iter().map(|&s| softplus(-a * s)).sum()
    }

    #[test]
    fn the_scale_minimises_the_penalised_loss() {
        let signed = [2.0, 1.0, -0.5, 0.3, -1.5, 0.8, 1.2];
        let a = fit_scale(&signed);
        let f = |a: f64| scaled_loss(&signed, a) + 0.5 * RIDGE * a * a;
        assert!(a > 0.0);
        for da in [-1e-3, 1e-3, -0.1, 0.1] {
            assert!(f(a) <= f(a + da) + 1e-12, "a = {a}, da = {da}");
        }
    }

    #[test]
    fn useless_margins_get_zero_and_separable_ones_a_large_finite_scale() {
        assert_eq!(fit_scale(&[-1.0, -2.0, 0.5]), 0.0);
        assert_eq!(fit_scale(&[]), 0.0);
        let a = fit_scale(&[1.0, 0.5, 2.0]);
        assert!(a.is_finite() && a > 5.0, "{a}");
    }
}
