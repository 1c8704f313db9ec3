//! The inverse temperature β of the Gibbs posterior: Corollary 8's eq. (13), Theorem 7's exact
//! bound and the one the mechanism uses (see the module documentation of the parent, deviation 1).

use super::LIPSCHITZ;
use crate::privacy::mechanism::{MechanismError, check_delta, check_epsilon, check_lambda};

pub(super) fn invalid(name: &'static str, value: f64, requirement: &'static str) -> MechanismError {
    MechanismError::InvalidParameter {
        name,
        value,
        requirement,
    }
}

pub(super) fn check_n(n: usize) -> Result<(), MechanismError> {
    if n == 0 {
        Err(invalid("n", 0.0, "must be at least 1"))
    } else {
        Ok(())
    }
}

/// Validates the inputs of the β bounds and returns m_π = nλ.
fn prior_precision(epsilon: f64, delta: f64, n: usize, lambda: f64) -> Result<f64, MechanismError> {
    check_epsilon(epsilon)?;
    check_delta(delta)?;
    check_n(n)?;
    check_lambda(lambda)?;
    Ok(n as f64 * lambda)
}

/// Corollary 8 / eq. (13) with L = 1 and m_π = nλ: (ε / 2L)·√(nλ / (1 + 2 log(1/δ))).
///
/// This is the paper's bound verbatim. It is a sufficient condition for (ε, δ)-DP of an exact
/// sample only for ε ≤ 2 / (1 + √(1 − 1/(1 + 2 log(1/δ)))) (see the module documentation,
/// deviation 1); the mechanism uses [`gibbs_beta`].
pub fn gibbs_beta_bound(
    epsilon: f64,
    delta: f64,
    n: usize,
    lambda: f64,
) -> Result<f64, MechanismError> {
    let m_pi = prior_precision(epsilon, delta, n, lambda)?;
    Ok(epsilon / (2.0 * LIPSCHITZ) * (m_pi / (1.0 + 2.0 * (1.0 / delta).ln())).sqrt())
}

/// The largest β for which Theorem 7's tail bound (6) is ≤ δ at ε: with ℓ_δ = log(1/δ),
/// β = √(m_π / 2)·(√(ℓ_δ + ε) − √ℓ_δ) / L, m_π = nλ (it also satisfies ε > 2L²β²/m_π).
pub fn theorem7_beta_bound(
    epsilon: f64,
    delta: f64,
    n: usize,
    lambda: f64,
) -> Result<f64, MechanismError> {
    let m_pi = prior_precision(epsilon, delta, n, lambda)?;
    let l = (1.0 / delta).ln();
    // √(l + ε) − √l without cancellation.
    let gap = epsilon / ((l + epsilon).sqrt() + l.sqrt());
    Ok((m_pi / 2.0).sqrt() * gap / LIPSCHITZ)
}

/// Theorem 7's right-hand side (6): exp(−(m_π / 8L²β²)(ε − 2L²β²/m_π)²), or 1 where ε ≤ 2L²β²/m_π
/// and the theorem says nothing. An exact sample is (ε, δ)-DP when this is ≤ δ (Theorem 5).
pub fn theorem7_tail(epsilon: f64, beta: f64, n: usize, lambda: f64) -> f64 {
    let m_pi = n as f64 * lambda;
    let a = 2.0 * LIPSCHITZ * LIPSCHITZ * beta * beta / m_pi;
    if epsilon > a {
        (-(epsilon - a).powi(2) / (4.0 * a)).exp()
    } else {
        1.0
    }
}

/// The β the mechanism samples with: min(eq. (13), Theorem 7's exact bound, 1).
pub fn gibbs_beta(epsilon: f64, delta: f64, n: usize, lambda: f64) -> Result<f64, MechanismError> {
    Ok(gibbs_beta_bound(epsilon, delta, n, lambda)?
        .min(theorem7_beta_bound(epsilon, delta, n, lambda)?)
        .min(1.0))
}
