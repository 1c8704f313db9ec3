//! Proposition 13: the Langevin step size (eq. (16)) and step count (eq. (17), corrected) that put
//! the chain within total variation γ of the Gibbs posterior, and the schedule a release runs.

use super::beta::{check_n, invalid};
use super::{GibbsError, LOSS_SMOOTHNESS};
use crate::privacy::mechanism::MechanismError;

/// Proposition 13's quantities for one (n, d, β, λ, γ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proposition13 {
    /// m_π = nλ: strong convexity of U (from the prior alone).
    pub strong_convexity: f64,
    /// M = nβM_ℓ + M_π: smoothness of U.
    pub smoothness: f64,
    /// B = 4 log(1/γ) + d log(M/m_π).
    pub bracket: f64,
    /// h of eq. (16): 2 m_π γ² / (d M² B).
    pub step_size_eq16: f64,
    /// Dalalyan's time horizon τ = B / (2 m_π).
    pub horizon: f64,
    /// T = τ / h = d M² B² / (4 m_π² γ²), real-valued (eq. (17) corrected).
    pub steps: f64,
    /// Eq. (17) exactly as printed, d M² B² / (4 m_π γ²) = `steps`·m_π (for reference only).
    pub steps_eq17_printed: f64,
}

/// Computes h (eq. (16)), τ and T (eq. (17), corrected) for logistic loss (M_ℓ = 1/4) and the prior
/// N(0, (nλ)⁻¹ I) (m_π = M_π = nλ). Requires d ≥ 2, γ ∈ (0, 1/2), β > 0, λ > 0, n ≥ 1.
pub fn proposition13(
    n: usize,
    dim: usize,
    beta: f64,
    lambda: f64,
    gamma: f64,
) -> Result<Proposition13, MechanismError> {
    check_n(n)?;
    crate::privacy::mechanism::check_lambda(lambda)?;
    check_gamma(gamma)?;
    if !(beta.is_finite() && beta > 0.0) {
        return Err(invalid("beta", beta, "must be a finite number > 0"));
    }
    if dim < 2 {
        return Err(GibbsError::DimensionTooSmall { dim }.into());
    }
    let d = dim as f64;
    let m = n as f64 * lambda;
    let big_m = n as f64 * beta * LOSS_SMOOTHNESS + m;
    let bracket = 4.0 * (1.0 / gamma).ln() + d * (big_m / m).ln();
    let step_size_eq16 = 2.0 * m * gamma * gamma / (d * big_m * big_m * bracket);
    let horizon = bracket / (2.0 * m);
    Ok(Proposition13 {
        strong_convexity: m,
        smoothness: big_m,
        bracket,
        step_size_eq16,
        horizon,
        steps: horizon / step_size_eq16,
        steps_eq17_printed: d * big_m * big_m * bracket * bracket / (4.0 * m * gamma * gamma),
    })
}

pub(super) fn check_gamma(gamma: f64) -> Result<(), MechanismError> {
    if gamma > 0.0 && gamma < 0.5 {
        Ok(())
    } else {
        Err(invalid(
            "gamma",
            gamma,
            "must be in (0, 1/2) (Proposition 13)",
        ))
    }
}

/// The chain a release runs, fixed by public quantities (ε, δ, λ, the sampler, n and d).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LmcSchedule {
    /// β of eq. (12).
    pub beta: f64,
    /// m_π = nλ.
    pub strong_convexity: f64,
    /// M = nβ/4 + nλ.
    pub smoothness: f64,
    /// Step size h.
    pub step_size: f64,
    /// Number of steps.
    pub steps: u64,
}
