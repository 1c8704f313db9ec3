//! (ε, δ)-DP logistic regression by sampling a Gibbs posterior.
//!
//! Implements Minami, Arai, Sato & Nakagawa, "Differential Privacy without Sensitivity", NIPS 2016
//! (seed 004; seed 000 §4.1 and §4.3 summarise the same results):
//!
//! - **Target, eq. (12):** G_β(θ | D) ∝ Πᵢ σ(yᵢ⟨θ, xᵢ⟩)^β · φ(θ | 0, (nλ)⁻¹ I), i.e. the density
//!   ∝ exp(−U(θ)) with U(θ) = β Σᵢ ℓ(θ, xᵢ) + (nλ/2)||θ||², eq. (15), ℓ the logistic loss.
//! - **Exact-sample guarantee, Theorem 7 / Corollary 8 / eq. (13):** with an L-Lipschitz convex
//!   non-negative loss and an m_π-strongly log-concave prior (Assumption 6), an exact sample of G_β
//!   is (ε, δ)-DP when β ≤ (ε / 2L)·√(m_π / (1 + 2 log(1/δ))) ([`gibbs_beta_bound`]). Here L = 1,
//!   m_π = nλ.
//! - **Approximate sampling, Proposition 12:** a sampler within total variation γ of an (ε, δ)-DP
//!   law is (ε, δ + (1 + e^ε)γ)-DP.
//! - **Langevin Monte Carlo, eq. (14):** θ⁽ᵗ⁺¹⁾ = θ⁽ᵗ⁾ − h∇U(θ⁽ᵗ⁾) + √(2h) η⁽ᵗ⁺¹⁾, η ~ N(0, I).
//! - **Proposition 13** (from Dalalyan 2014, arXiv:1412.7392, Corollary 1): with ℓ M_ℓ-smooth,
//!   −log π M_π-smooth, d ≥ 2 and γ ∈ (0, 1/2), writing M = nβM_ℓ + M_π and
//!   B = 4 log(1/γ) + d log(M/m_π), the step size of **eq. (16)** is
//!
//!   ```text
//!   h = 2 m_π γ² / ( d M² B )
//!   ```
//!
//!   and after T steps the chain is within γ of G_β in total variation, with **eq. (17)** printed as
//!   T = d M² B² / (4 m_π γ²).
//!
//! # Neighbour relation and assumptions
//!
//! Replace-one (the paper's Hamming distance 1 on datasets of equal size n, §2.1); n is public and
//! β, h and T are computed from n and d at release. Every row satisfies ||x||₂ ≤ 1 (schema
//! normalisation; the intercept is a column of x), so the logistic loss is non-negative, convex,
//! L = 1-Lipschitz in θ and M_ℓ = 1/4-smooth; the prior N(0, (nλ)⁻¹ I) has m_π = M_π = nλ. (The
//! paper's §3.3 keeps the intercept b outside the bound ||z|| ≤ r and calls the loss r-Lipschitz;
//! with the intercept in x the bound ||x|| ≤ 1 makes L = 1 exact.)
//!
//! # Where this deviates from the printed paper
//!
//! 1. **β.** Theorem 7 is stated for β ∈ (0, 1] and its tail bound (6) needs ε > 2L²β²/m_π.
//!    Corollary 8's eq. (13) is *not* sufficient for every ε: writing a = 2L²β²/m_π and
//!    ℓ_δ = log(1/δ), (6) is ≤ δ iff (ε − a)² ≥ 4aℓ_δ with a < ε, i.e. a ≤ (√(ℓ_δ + ε) − √ℓ_δ)²,
//!    and the β of eq. (13) satisfies this only for ε ≤ 2 / (1 + √(1 − 1/(1 + 2ℓ_δ))) (≈ 1.01 at
//!    δ = 1e-5; at ε = 2 the tail is 1.6e-5 > δ). The mechanism therefore uses
//!    β = min(eq. (13), [`theorem7_beta_bound`], 1): eq. (13) whenever it is valid, Theorem 7's own
//!    bound otherwise, never above Theorem 7's range.
//! 2. **T.** The bound behind Proposition 13 (Dalalyan 2014, Theorem 1, for h ≤ 1/M and the start
//!    of item 3) is, after K steps of size h,
//!
//!    ```text
//!    d_TV(law of θ⁽ᴷ⁾, G_β) ≤ ½ exp( (d/4) log(M/m_π) − K h m_π / 2 ) + ( d M² K h² / 4 )^{1/2}
//!    ```
//!
//!    and his Corollary 1 makes each term γ/2 with h of eq. (16) and the time horizon
//!    K h = τ = B / (2 m_π), i.e. K = τ/h = d M² B² / (4 m_π² γ²). Eq. (17) as printed has m_π
//!    where m_π² belongs: it is not invariant under rescaling θ (h scales like 1/M, a step count
//!    must be dimensionless, the printed T scales like M), and with h of eq. (16) it gives
//!    K h = B/2 ≠ τ, too short a horizon when m_π < 1 and too large a discretisation term when
//!    m_π > 1. This module uses the corrected count, rounded up, and shortens the step to
//!    h = τ/T ≤ eq. (16) so that the horizon is exactly τ and the second term stays ≤ γ/2
//!    ([`proposition13`] returns both counts). h ≤ 1/M holds since d ≥ 2, γ < 1/2.
//!    (The bound above is written out so a reviewer can check it against Dalalyan's paper, which
//!    was not at hand when this was written; the internal consistency of eq. (16), eq. (17) and
//!    Prop. 13 is what fixes the correction.)
//! 3. **Start.** Prop. 13 as printed does not say where the chain starts; Dalalyan's bound is for
//!    θ⁽⁰⁾ ~ N(θ*, M⁻¹ I) with θ* = argmin U, whose χ² divergence from G_β is below (M/m_π)^{d/2}:
//!    that is the (d/4) log(M/m_π) above (a data-independent start would need a data-dependent
//!    bound there). The chain starts there, with θ* computed by Newton to ||∇F|| ≤ 1e-12. A start
//!    at θ̂ ≠ θ* multiplies the initial χ² bound by at most exp(M||θ̂ − θ*||²) (M-smoothness above,
//!    m_π-strong convexity below), with ||θ̂ − θ*|| ≤ ||∇U(θ̂)|| / m_π by strong convexity; release refuses unless that factor's square root is ≤ 1 + [`TV_SLACK`], and the
//!    stated guarantee uses the total-variation bound γ(1 + [`TV_SLACK`]), which also absorbs the
//!    rounding of τ and h.
//!
//! The released guarantee of the **proven** sampler is thus (ε, δ + (1 + e^ε)·γ(1 + 10⁻⁹)) under
//! replace-one. T is astronomically large for useful γ (n = 60, d = 9, λ = 0.01, ε = 1,
//! δ = 1e-5: T ≈ 2.8·10¹⁰ steps for γ = 1e-3, ≈ 8.4·10¹⁶ for γ = 1e-6), so the constructor takes a
//! step cap and release refuses, naming T and the cap, when T exceeds it.
//!
//! # The unproven sampler
//!
//! [`GibbsSampler::Unproven`] runs the same chain from the same start for a user-chosen number of
//! steps with step h = `step_scale`/M. **No theorem bounds its distance to G_β**, so its releases
//! carry the mechanism name [`NAME_UNPROVEN`], the parameter `proven = 0`, and
//! [`GibbsPosterior::is_proven`] is false; the (ε, δ) they report is that of an *exact* sample of
//! G_β (Theorem 7 / Corollary 8) and does not cover the approximation. A node policy that needs a
//! proof must refuse them.
//!
//! Each LMC step is one pass over the n × d features with no allocation; the noise is drawn from
//! the [`NoiseSource`] passed to release. (As for every mechanism here, the proofs are about real
//! arithmetic and exact Gaussians; floating-point sampling is not covered by them.)

use super::{
    Assumptions, LOGISTIC_UNIT_BALL, Mechanism, MechanismError, NeighbourRelation, NoiseSource,
    PrivacyGuarantee, Release, ReleaseMetadata,
};
use crate::dataset::{Dataset, dot};
use crate::fastmath;
use crate::logistic::{Penalty, dot4};
use crate::solver::{SolverOptions, minimise};
use rand::RngExt;
use rand_distr::StandardNormal;
use std::collections::BTreeMap;

/// Identifier of the proven variant (Proposition 13), in metadata and on the command line.
pub const NAME: &str = "gibbs-posterior";

/// Identifier of the variant whose sampler is not covered by a proof.
pub const NAME_UNPROVEN: &str = "gibbs-posterior-unproven";

/// L: Lipschitz constant of θ ↦ ℓ(θ, x) for logistic loss with ||x|| ≤ 1.
pub const LIPSCHITZ: f64 = 1.0;

/// M_ℓ: smoothness of θ ↦ ℓ(θ, x) for logistic loss with ||x|| ≤ 1 (σ(m)σ(−m) ≤ 1/4).
pub const LOSS_SMOOTHNESS: f64 = 0.25;

/// Relative slack on the total-variation bound γ of the proven sampler: it absorbs an inexact start
/// (see the module documentation, deviation 3) and the rounding of the horizon.
pub const TV_SLACK: f64 = 1e-9;

/// ||∇F|| tolerance of the Newton solve for the chain's starting point.
pub const MODE_TOLERANCE: f64 = 1e-12;

const REFERENCE_PROVEN: &str = "Minami, Arai, Sato & Nakagawa, NIPS 2016: Gibbs posterior eq. (12), \
Theorem 7 / Corollary 8 eq. (13), Langevin Monte Carlo eq. (14)-(15), Proposition 12, \
Proposition 13 eq. (16)-(17) (T corrected per Dalalyan 2014 Corollary 1)";

const REFERENCE_UNPROVEN: &str = "Minami, Arai, Sato & Nakagawa, NIPS 2016: Gibbs posterior eq. (12), \
Theorem 7 / Corollary 8 eq. (13) for an EXACT sample; approximated by Langevin Monte Carlo \
eq. (14)-(15) with user-chosen steps: NOT covered by Proposition 13, the stated guarantee \
does not account for the approximation";

/// Why the Gibbs-posterior sampler cannot run as configured.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GibbsError {
    /// Proposition 13 needs more LMC steps than the cap the mechanism was built with.
    #[error(
        "Proposition 13 needs T = {steps:.4e} Langevin steps for γ = {gamma:e} (n = {n}, d = {dim}), more than the cap of {cap} steps: raise the cap, raise γ, or use the unproven sampler"
    )]
    TooManySteps {
        /// T required (real-valued, before rounding up).
        steps: f64,
        /// The cap.
        cap: u64,
        /// The total-variation target γ.
        gamma: f64,
        /// Rows.
        n: usize,
        /// Dimension.
        dim: usize,
    },
    /// Proposition 13 (Dalalyan's Corollary 1) is stated for d ≥ 2.
    #[error("Proposition 13 is proven for dimension d ≥ 2, not d = {dim}")]
    DimensionTooSmall {
        /// The data's dimension.
        dim: usize,
    },
    /// The computed start of the chain is not close enough to argmin U for the proof's slack.
    #[error(
        "the Langevin chain's starting point is not accurate enough for the proven total-variation bound; nothing was released"
    )]
    InaccurateStart,
    /// The chain left the finite numbers (only possible with an unstable step size).
    #[error("the Langevin chain diverged; nothing was released")]
    NonFinite,
}

fn invalid(name: &'static str, value: f64, requirement: &'static str) -> MechanismError {
    MechanismError::InvalidParameter {
        name,
        value,
        requirement,
    }
}

fn check_delta(delta: f64) -> Result<(), MechanismError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(invalid("delta", delta, "must be in (0, 1)"))
    }
}

fn check_n(n: usize) -> Result<(), MechanismError> {
    if n == 0 {
        Err(invalid("n", 0.0, "must be at least 1"))
    } else {
        Ok(())
    }
}

/// Validates the inputs of the β bounds and returns m_π = nλ.
fn prior_precision(epsilon: f64, delta: f64, n: usize, lambda: f64) -> Result<f64, MechanismError> {
    super::check_epsilon(epsilon)?;
    check_delta(delta)?;
    check_n(n)?;
    super::check_lambda(lambda)?;
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
    super::check_lambda(lambda)?;
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

fn check_gamma(gamma: f64) -> Result<(), MechanismError> {
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

/// How the Gibbs posterior is sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum GibbsSampler {
    /// Langevin Monte Carlo with h and T from Proposition 13 for total-variation target γ;
    /// guarantee (ε, δ + (1 + e^ε)·γ(1 + [`TV_SLACK`])). Release fails if T > `max_steps`.
    Proven {
        /// Total-variation target γ ∈ (0, 1/2).
        gamma: f64,
        /// The most LMC steps a release may take.
        max_steps: u64,
    },
    /// Langevin Monte Carlo with `steps` steps of size `step_scale`/M (M the smoothness of U).
    /// NOT covered by a proof: the reported (ε, δ) is that of an exact sample.
    Unproven {
        /// Number of LMC steps (≥ 1).
        steps: u64,
        /// Step size as a fraction of 1/M, in (0, 1].
        step_scale: f64,
    },
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

/// The Gibbs-posterior mechanism for logistic regression (Minami et al. 2016).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GibbsPosterior {
    epsilon: f64,
    delta: f64,
    lambda: f64,
    sampler: GibbsSampler,
}

impl GibbsPosterior {
    /// A mechanism for ε > 0, δ ∈ (0, 1), λ > 0 and a sampler. For the proven sampler γ ∈ (0, 1/2),
    /// `max_steps` ≥ 1 and the total δ + (1 + e^ε)γ(1 + [`TV_SLACK`]) < 1; for the unproven one
    /// `steps` ≥ 1 and `step_scale` ∈ (0, 1].
    pub fn new(
        epsilon: f64,
        delta: f64,
        lambda: f64,
        sampler: GibbsSampler,
    ) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        check_delta(delta)?;
        super::check_lambda(lambda)?;
        match sampler {
            GibbsSampler::Proven { gamma, max_steps } => {
                check_gamma(gamma)?;
                if max_steps == 0 {
                    return Err(invalid("max_steps", 0.0, "must be at least 1"));
                }
                let total = total_delta(epsilon, delta, gamma);
                if total.is_nan() || total >= 1.0 {
                    return Err(invalid(
                        "gamma",
                        gamma,
                        "δ + (1 + e^ε)·γ must be < 1 for the guarantee to mean anything",
                    ));
                }
            }
            GibbsSampler::Unproven { steps, step_scale } => {
                if steps == 0 {
                    return Err(invalid("steps", 0.0, "must be at least 1"));
                }
                if !(step_scale > 0.0 && step_scale <= 1.0) {
                    return Err(invalid("step_scale", step_scale, "must be in (0, 1]"));
                }
            }
        }
        Ok(Self {
            epsilon,
            delta,
            lambda,
            sampler,
        })
    }

    /// The proven variant: Proposition 13 with total-variation target γ and at most `max_steps`.
    pub fn proven(
        epsilon: f64,
        delta: f64,
        lambda: f64,
        gamma: f64,
        max_steps: u64,
    ) -> Result<Self, MechanismError> {
        Self::new(
            epsilon,
            delta,
            lambda,
            GibbsSampler::Proven { gamma, max_steps },
        )
    }

    /// The unproven variant: `steps` LMC steps of size `step_scale`/M.
    pub fn unproven(
        epsilon: f64,
        delta: f64,
        lambda: f64,
        steps: u64,
        step_scale: f64,
    ) -> Result<Self, MechanismError> {
        Self::new(
            epsilon,
            delta,
            lambda,
            GibbsSampler::Unproven { steps, step_scale },
        )
    }

    /// True when the stated guarantee is proven for the sampler actually run (Proposition 13).
    pub fn is_proven(&self) -> bool {
        matches!(self.sampler, GibbsSampler::Proven { .. })
    }

    /// The sampler.
    pub fn sampler(&self) -> GibbsSampler {
        self.sampler
    }

    /// The chain a release on `n` rows of dimension `dim` would run, or why it cannot run
    /// (T above the cap, d < 2 for the proven sampler). Depends on public quantities only, so a node
    /// can check it before touching the data.
    pub fn schedule(&self, n: usize, dim: usize) -> Result<LmcSchedule, MechanismError> {
        let beta = gibbs_beta(self.epsilon, self.delta, n, self.lambda)?;
        let m = n as f64 * self.lambda;
        let big_m = n as f64 * beta * LOSS_SMOOTHNESS + m;
        let (step_size, steps) = match self.sampler {
            GibbsSampler::Proven { gamma, max_steps } => {
                let p = proposition13(n, dim, beta, self.lambda, gamma)?;
                if p.steps.is_nan() || p.steps > max_steps as f64 {
                    return Err(GibbsError::TooManySteps {
                        steps: p.steps,
                        cap: max_steps,
                        gamma,
                        n,
                        dim,
                    }
                    .into());
                }
                // T ≤ cap, so the rounded-up count fits; h = τ/T ≤ eq. (16) keeps the horizon τ.
                let steps = (p.steps.ceil() as u64).max(1);
                (p.horizon / steps as f64, steps)
            }
            GibbsSampler::Unproven { steps, step_scale } => (step_scale / big_m, steps),
        };
        Ok(LmcSchedule {
            beta,
            strong_convexity: m,
            smoothness: big_m,
            step_size,
            steps,
        })
    }
}

fn total_delta(epsilon: f64, delta: f64, gamma: f64) -> f64 {
    delta + (1.0 + epsilon.exp()) * gamma * (1.0 + TV_SLACK)
}

impl Mechanism for GibbsPosterior {
    fn is_proven(&self) -> bool {
        GibbsPosterior::is_proven(self)
    }

    fn name(&self) -> &'static str {
        if GibbsPosterior::is_proven(self) {
            NAME
        } else {
            NAME_UNPROVEN
        }
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        let delta = match self.sampler {
            GibbsSampler::Proven { gamma, .. } => total_delta(self.epsilon, self.delta, gamma),
            GibbsSampler::Unproven { .. } => self.delta,
        };
        PrivacyGuarantee {
            epsilon: self.epsilon,
            delta,
            relation: NeighbourRelation::ReplaceOne,
        }
    }

    fn release(&self, data: &Dataset, noise: &mut NoiseSource) -> Result<Release, MechanismError> {
        let assumptions: Assumptions = LOGISTIC_UNIT_BALL;
        super::check_data(data, &assumptions)?;
        let (n, dim) = (data.len(), data.dim());
        let schedule = self.schedule(n, dim)?;
        let potential = Potential {
            data,
            beta: schedule.beta,
            prior_precision: schedule.strong_convexity,
        };
        let start = potential.mode()?;
        if self.is_proven() && !potential.start_is_accurate(&start, schedule.smoothness) {
            return Err(GibbsError::InaccurateStart.into());
        }
        let theta = sample(
            &potential,
            &start,
            schedule.smoothness,
            schedule.step_size,
            schedule.steps,
            noise,
        )?;
        let mut parameters = BTreeMap::from([
            ("lambda".to_owned(), self.lambda),
            ("beta".to_owned(), schedule.beta),
            (
                "beta_eq13".to_owned(),
                gibbs_beta_bound(self.epsilon, self.delta, n, self.lambda)?,
            ),
            (
                "beta_theorem7".to_owned(),
                theorem7_beta_bound(self.epsilon, self.delta, n, self.lambda)?,
            ),
            ("prior_precision".to_owned(), schedule.strong_convexity),
            ("smoothness".to_owned(), schedule.smoothness),
            ("step_size".to_owned(), schedule.step_size),
            ("steps".to_owned(), schedule.steps as f64),
            ("delta_exact_sample".to_owned(), self.delta),
            (
                "proven".to_owned(),
                if self.is_proven() { 1.0 } else { 0.0 },
            ),
        ]);
        match self.sampler {
            GibbsSampler::Proven { gamma, max_steps } => {
                parameters.insert("gamma".to_owned(), gamma);
                parameters.insert("tv_bound".to_owned(), gamma * (1.0 + TV_SLACK));
                parameters.insert("max_steps".to_owned(), max_steps as f64);
            }
            GibbsSampler::Unproven { step_scale, .. } => {
                parameters.insert("step_scale".to_owned(), step_scale);
            }
        }
        let reference = if self.is_proven() {
            REFERENCE_PROVEN
        } else {
            REFERENCE_UNPROVEN
        };
        Ok(Release {
            theta,
            metadata: ReleaseMetadata::new(self, reference, parameters, assumptions, data, noise),
        })
    }
}

/// U(θ) = β Σᵢ ℓ(θ, xᵢ) + (m_π/2)||θ||² on one dataset (eq. (15) with the Gaussian prior).
struct Potential<'a> {
    data: &'a Dataset,
    beta: f64,
    prior_precision: f64,
}

/// Rows per block of the gradient pass (the slopes of one block live on the stack).
const BLOCK_ROWS: usize = 256;

/// σ(−m) = −dℓ/dm for the logistic loss at margin m, stable for any m (one exp, no log).
#[inline(always)]
fn loss_slope(m: f64) -> f64 {
    let u = fastmath::exp_nonpositive(-m.abs());
    let inv = 1.0 / (1.0 + u);
    let nonneg = f64::from(u8::from(m >= 0.0));
    inv * (nonneg * u + (1.0 - nonneg))
}

impl Potential<'_> {
    /// Writes ∇U(θ) = m_π θ − β Σᵢ yᵢ σ(−yᵢ⟨θ, xᵢ⟩) xᵢ into `out`, in one pass and no allocation.
    ///
    /// Rows go in blocks of [`BLOCK_ROWS`] through three stages, as in [`crate::logistic`]: margins,
    /// then the branch-free slopes (a loop that vectorises), then Σ cᵢxᵢ.
    fn gradient(&self, theta: &[f64], out: &mut [f64]) {
        let p = theta.len();
        for (o, t) in out.iter_mut().zip(theta) {
            *o = self.prior_precision * t;
        }
        let mut coef = [0.0; BLOCK_ROWS];
        let rows = self.data.features().chunks(p * BLOCK_ROWS);
        for (x, y) in rows.zip(self.data.labels().chunks(BLOCK_ROWS)) {
            let coef = &mut coef[..y.len()];
            for ((c, xi), yi) in coef.iter_mut().zip(x.chunks_exact(p)).zip(y) {
                *c = yi * dot4(xi, theta);
            }
            for (c, yi) in coef.iter_mut().zip(y) {
                *c = -self.beta * yi * loss_slope(*c);
            }
            for (xi, c) in x.chunks_exact(p).zip(coef.iter()) {
                for (o, v) in out.iter_mut().zip(xi) {
                    *o += c * v;
                }
            }
        }
    }

    /// argmin U, by Newton on U / (nβ) = (1/n)Σℓ + (λ/2β)||θ||².
    fn mode(&self) -> Result<Vec<f64>, MechanismError> {
        let n = self.data.len() as f64;
        let mu = self.prior_precision / (n * self.beta);
        let options = SolverOptions {
            tolerance: MODE_TOLERANCE,
            ..SolverOptions::default()
        };
        Ok(minimise(self.data, Penalty::ridge(mu), options)?.theta)
    }

    /// True when starting at `start` instead of argmin U inflates Dalalyan's initial term by at most
    /// 1 + TV_SLACK: exp(M r² / 2) with r = ||start − θ*|| ≤ (||∇U(start)|| + rounding) / m_π.
    fn start_is_accurate(&self, start: &[f64], smoothness: f64) -> bool {
        let mut g = vec![0.0; start.len()];
        self.gradient(start, &mut g);
        let n = self.data.len() as f64;
        // A generous allowance for the rounding of the computed gradient.
        let rounding = 1e-12 * (n * self.beta + self.prior_precision * dot(start, start).sqrt());
        let r = (dot(&g, &g).sqrt() + rounding) / self.prior_precision;
        let excess = 0.5 * smoothness * r * r;
        excess.is_finite() && excess <= TV_SLACK.ln_1p()
    }
}

/// One chain of eq. (14), in place: θ ← θ − h∇U(θ) + `noise_sd`·η, `steps` times (`noise_sd` is
/// √(2h) on every release path; tests pass other values to show the checks notice).
fn run_chain(
    theta: &mut [f64],
    step_size: f64,
    noise_sd: f64,
    steps: u64,
    mut gradient: impl FnMut(&[f64], &mut [f64]),
    noise: &mut NoiseSource,
) {
    let mut g = vec![0.0; theta.len()];
    for _ in 0..steps {
        gradient(theta, &mut g);
        for (t, gj) in theta.iter_mut().zip(&g) {
            let eta: f64 = noise.sample(StandardNormal);
            *t += noise_sd * eta - step_size * gj;
        }
    }
}

/// Starts at `start` + N(0, M⁻¹ I) (Dalalyan's initial law) and runs `steps` LMC steps.
fn sample(
    potential: &Potential<'_>,
    start: &[f64],
    smoothness: f64,
    step_size: f64,
    steps: u64,
    noise: &mut NoiseSource,
) -> Result<Vec<f64>, MechanismError> {
    sample_with_noise(
        potential,
        start,
        smoothness,
        step_size,
        (2.0 * step_size).sqrt(),
        steps,
        noise,
    )
}

fn sample_with_noise(
    potential: &Potential<'_>,
    start: &[f64],
    smoothness: f64,
    step_size: f64,
    noise_sd: f64,
    steps: u64,
    noise: &mut NoiseSource,
) -> Result<Vec<f64>, MechanismError> {
    let sd0 = smoothness.sqrt().recip();
    let mut theta: Vec<f64> = start
        .iter()
        .map(|s| {
            let z: f64 = noise.sample(StandardNormal);
            s + sd0 * z
        })
        .collect();
    run_chain(
        &mut theta,
        step_size,
        noise_sd,
        steps,
        |t, g| potential.gradient(t, g),
        noise,
    );
    if theta.iter().all(|t| t.is_finite()) {
        Ok(theta)
    } else {
        Err(GibbsError::NonFinite.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logistic::{evaluate, logistic_loss};
    use crate::noise::sim_rng;
    use crate::stats::ks_test;
    use crate::synthetic::{SyntheticSpec, generate};
    use statrs::distribution::{ContinuousCDF, Normal};

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn beta_bound_is_eq13() {
        // (1/2)·√(0.6 / (1 + 2 ln 1e5)) and 1·√(10 / (1 + 2 ln 100)), by hand.
        let b = gibbs_beta_bound(1.0, 1e-5, 60, 0.01).expect("valid");
        assert!(close(b, 0.079_014_398_880_156_68, 1e-12), "{b}");
        let b = gibbs_beta_bound(2.0, 0.01, 100, 0.1).expect("valid");
        assert!(close(b, 0.989_646_037_293_854_4, 1e-12), "{b}");
        for (e, d, n, l) in [
            (0.0, 1e-5, 60, 0.01),
            (f64::NAN, 1e-5, 60, 0.01),
            (1.0, 0.0, 60, 0.01),
            (1.0, 1.0, 60, 0.01),
            (1.0, f64::NAN, 60, 0.01),
            (1.0, 1e-5, 0, 0.01),
            (1.0, 1e-5, 60, 0.0),
            (1.0, 1e-5, 60, f64::INFINITY),
        ] {
            assert!(
                matches!(
                    gibbs_beta_bound(e, d, n, l),
                    Err(MechanismError::InvalidParameter { .. })
                ),
                "{e} {d} {n} {l}"
            );
        }
    }

    #[test]
    fn eq13_is_not_sufficient_above_epsilon_one_and_theorem7_bound_is() {
        let (delta, n, lambda) = (1e-5, 60, 0.01);
        // ε ≤ ~1.01: eq. (13) is within Theorem 7 and is what the mechanism uses.
        for eps in [0.3, 1.0] {
            let b13 = gibbs_beta_bound(eps, delta, n, lambda).expect("valid");
            let b7 = theorem7_beta_bound(eps, delta, n, lambda).expect("valid");
            assert!(b13 <= b7, "{eps}: {b13} > {b7}");
            assert!(theorem7_tail(eps, b13, n, lambda) <= delta);
            assert_eq!(gibbs_beta(eps, delta, n, lambda).expect("valid"), b13);
        }
        // ε = 2: the β of eq. (13) leaves Theorem 7's tail at 1.6e-5 > δ; Theorem 7's own bound
        // meets δ exactly and is what the mechanism uses.
        let b13 = gibbs_beta_bound(2.0, delta, n, lambda).expect("valid");
        let b7 = theorem7_beta_bound(2.0, delta, n, lambda).expect("valid");
        assert!(theorem7_tail(2.0, b13, n, lambda) > 1.5 * delta);
        assert!(close(theorem7_tail(2.0, b7, n, lambda), delta, 1e-9));
        assert_eq!(gibbs_beta(2.0, delta, n, lambda).expect("valid"), b7);
        // Theorem 7 is stated for β ≤ 1.
        assert_eq!(gibbs_beta(50.0, delta, 5000, 0.1).expect("valid"), 1.0);
    }

    #[test]
    fn proposition13_matches_eq16_and_corrected_eq17() {
        // n = 100, d = 2, λ = 0.1, β = 1, γ = 1/4 by hand: m = 10, M = 35,
        // B = 4 ln 4 + 2 ln 3.5, h = 2·10·γ² / (2·35²·B), τ = B/20, T = τ/h.
        let p = proposition13(100, 2, 1.0, 0.1, 0.25).expect("valid");
        assert!(close(p.strong_convexity, 10.0, 1e-15));
        assert!(close(p.smoothness, 35.0, 1e-15));
        let bracket = 4.0 * 4f64.ln() + 2.0 * 3.5f64.ln();
        assert!(close(p.bracket, bracket, 1e-15));
        assert!(close(p.step_size_eq16, 6.337_385_163_226_253e-5, 1e-12));
        assert!(close(p.horizon, 0.402_535_169_073_514_94, 1e-12));
        assert!(close(p.steps, 6_351.754_843_768_896_5, 1e-12));
        // Eq. (17) as printed is the corrected T times m_π.
        assert!(close(p.steps_eq17_printed, 63_517.548_437_688_965, 1e-12));
        // h = 2mγ²/(dM²B) and T = dM²B²/(4m²γ²) symbolically.
        assert!(close(
            p.steps,
            2.0 * 35.0 * 35.0 * bracket * bracket / (4.0 * 100.0 * 0.0625),
            1e-12
        ));
        assert!(matches!(
            proposition13(100, 1, 1.0, 0.1, 0.25),
            Err(MechanismError::Gibbs(GibbsError::DimensionTooSmall {
                dim: 1
            }))
        ));
        for g in [0.0, 0.5, -0.1, f64::NAN] {
            assert!(proposition13(100, 2, 1.0, 0.1, g).is_err(), "{g}");
        }
    }

    #[test]
    fn t_is_astronomical_for_useful_gamma() {
        // The configuration of the brief: n = 60, d = 9, λ = 0.01, ε = 1, δ = 1e-5.
        let beta = gibbs_beta(1.0, 1e-5, 60, 0.01).expect("valid");
        let expected = [
            (1e-3, 2.79e10),
            (1e-4, 4.34e12),
            (1e-5, 6.22e14),
            (1e-6, 8.44e16),
        ];
        for (gamma, t) in expected {
            let p = proposition13(60, 9, beta, 0.01, gamma).expect("valid");
            assert!(close(p.steps, t, 5e-3), "γ = {gamma}: T = {:e}", p.steps);
        }
    }

    #[test]
    fn proven_release_refuses_when_t_exceeds_the_cap() {
        let data = generate(
            &SyntheticSpec {
                dim: 9,
                train: 60,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(1, &[]),
        )
        .train;
        let m = GibbsPosterior::proven(1.0, 1e-5, 0.01, 1e-3, 1_000_000_000).expect("valid");
        let err = m
            .release(&data, &mut NoiseSource::seeded(2))
            .expect_err("T ≈ 2.8e10 > 1e9");
        match &err {
            MechanismError::Gibbs(GibbsError::TooManySteps { steps, cap, .. }) => {
                assert!(*steps > 2.7e10 && *steps < 2.9e10, "{steps}");
                assert_eq!(*cap, 1_000_000_000);
            }
            other => panic!("unexpected {other:?}"),
        }
        let message = err.to_string();
        assert!(
            message.contains("2.79") && message.contains("1000000000"),
            "{message}"
        );
        // The same check is available before touching data.
        assert!(m.schedule(60, 9).is_err());
        // d = 1 is outside Proposition 13.
        let one_d = Dataset::new(vec![0.5, -0.5], vec![1.0, -1.0], 1);
        let m = GibbsPosterior::proven(1.0, 1e-5, 0.5, 0.2, u64::MAX).expect("valid");
        assert!(matches!(
            m.release(&one_d, &mut NoiseSource::seeded(3)),
            Err(MechanismError::Gibbs(GibbsError::DimensionTooSmall {
                dim: 1
            }))
        ));
    }

    #[test]
    fn invalid_parameters_are_errors() {
        let ok = GibbsPosterior::proven(1.0, 1e-5, 0.01, 1e-3, 10);
        assert!(ok.is_ok());
        for (e, d, l, g, cap) in [
            (0.0, 1e-5, 0.01, 1e-3, 10),
            (1.0, 0.0, 0.01, 1e-3, 10),
            (1.0, 1e-5, 0.0, 1e-3, 10),
            (1.0, 1e-5, 0.01, 0.0, 10),
            (1.0, 1e-5, 0.01, 0.5, 10),
            (1.0, 1e-5, 0.01, 1e-3, 0),
            // δ + (1 + e)·0.3 ≥ 1: meaningless.
            (1.0, 1e-5, 0.01, 0.3, 10),
            (1000.0, 1e-5, 0.01, 1e-3, 10),
        ] {
            assert!(
                GibbsPosterior::proven(e, d, l, g, cap).is_err(),
                "{e} {d} {l} {g} {cap}"
            );
        }
        for (steps, scale) in [(0, 0.5), (10, 0.0), (10, 1.5), (10, f64::NAN)] {
            assert!(GibbsPosterior::unproven(1.0, 1e-5, 0.01, steps, scale).is_err());
        }
    }

    #[test]
    fn gradient_of_u_matches_the_logistic_module() {
        let data = generate(
            &SyntheticSpec {
                dim: 4,
                // More than two blocks of BLOCK_ROWS, the last one partial.
                train: 2 * BLOCK_ROWS + 37,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(4, &[]),
        )
        .train;
        let (beta, lambda) = (0.3, 0.02);
        let n = data.len() as f64;
        let pot = Potential {
            data: &data,
            beta,
            prior_precision: n * lambda,
        };
        let theta = [0.7, -1.2, 3.0, -40.0];
        let mut g = [0.0; 4];
        pot.gradient(&theta, &mut g);
        // ∇U = nβ ∇F with F = (1/n)Σℓ + (λ/2β)||θ||².
        let e = evaluate(&data, &theta, Penalty::ridge(lambda / beta), false);
        for (a, b) in g.iter().zip(&e.gradient) {
            assert!((a - n * beta * b).abs() < 1e-9, "{a} vs {}", n * beta * b);
        }
    }

    /// The exact law after `k` steps of eq. (14) on U = (a/2)θ² from θ₀, per coordinate:
    /// mean r^k θ₀, variance s²(1 − r^{2k})/(1 − r²) with r = 1 − ha, s² = 2h.
    fn quadratic_law(a: f64, h: f64, k: i32, theta0: f64) -> Normal {
        let r = 1.0 - h * a;
        let var = 2.0 * h * (1.0 - r.powi(2 * k)) / (1.0 - r * r);
        Normal::new(r.powi(k) * theta0, var.sqrt()).expect("valid")
    }

    fn quadratic_chains(noise_sd_factor: f64, seed: u64) -> Vec<f64> {
        let (a, h, k) = (2.0, 0.05, 30u64);
        let mut rng = NoiseSource::seeded(seed);
        let mut out = Vec::new();
        for _ in 0..2000 {
            let mut theta = [1.5, -0.5];
            run_chain(
                &mut theta,
                h,
                noise_sd_factor * (2.0 * h).sqrt(),
                k,
                |t, g| {
                    g[0] = a * t[0];
                    g[1] = a * t[1];
                },
                &mut rng,
            );
            out.extend_from_slice(&theta);
        }
        out
    }

    fn quadratic_p_values(sample: &[f64]) -> (f64, f64) {
        let (x0, x1): (Vec<f64>, Vec<f64>) = sample.chunks_exact(2).map(|c| (c[0], c[1])).unzip();
        let l0 = quadratic_law(2.0, 0.05, 30, 1.5);
        let l1 = quadratic_law(2.0, 0.05, 30, -0.5);
        (
            ks_test(&x0, |x| l0.cdf(x)).p_value,
            ks_test(&x1, |x| l1.cdf(x)).p_value,
        )
    }

    #[test]
    fn lmc_on_a_quadratic_has_the_exact_gaussian_law() {
        let (p0, p1) = quadratic_p_values(&quadratic_chains(1.0, 10));
        assert!(p0 > 1e-3 && p1 > 1e-3, "{p0} {p1}");
    }

    #[test]
    fn under_noised_lmc_fails_the_quadratic_check() {
        let (p0, p1) = quadratic_p_values(&quadratic_chains(0.5, 11));
        assert!(p0 < 1e-6 && p1 < 1e-6, "{p0} {p1}");
    }

    /// A 1-D Gibbs posterior, CDF by numerical integration of exp(−U) on a fine grid.
    fn one_d_posterior(data: &Dataset, beta: f64, m_pi: f64) -> impl Fn(f64) -> f64 + use<> {
        let (lo, hi, k) = (-12.0, 12.0, 48_001usize);
        let dx = (hi - lo) / (k - 1) as f64;
        let u = |t: f64| {
            beta * (0..data.len())
                .map(|i| logistic_loss(t * data.row(i)[0], data.label(i)))
                .sum::<f64>()
                + 0.5 * m_pi * t * t
        };
        let grid: Vec<f64> = (0..k).map(|i| lo + i as f64 * dx).collect();
        let u0 = grid.iter().map(|&t| u(t)).fold(f64::INFINITY, f64::min);
        let dens: Vec<f64> = grid.iter().map(|&t| (u0 - u(t)).exp()).collect();
        let mut cdf = vec![0.0; k];
        for i in 1..k {
            cdf[i] = cdf[i - 1] + 0.5 * (dens[i - 1] + dens[i]) * dx;
        }
        let total = cdf[k - 1];
        move |t: f64| {
            let pos = ((t - lo) / dx).clamp(0.0, (k - 1) as f64);
            let i = (pos.floor() as usize).min(k - 2);
            let w = pos - i as f64;
            (cdf[i] * (1.0 - w) + cdf[i + 1] * w) / total
        }
    }

    fn one_d_chains(noise_sd_factor: f64, seed: u64) -> (Vec<f64>, impl Fn(f64) -> f64) {
        // Six 1-D points, not separable, β = 1, prior precision 1.
        let data = Dataset::new(
            vec![0.9, 0.4, -0.2, 0.7, -0.8, 0.1],
            vec![1.0, 1.0, -1.0, -1.0, -1.0, 1.0],
            1,
        );
        let (beta, m_pi) = (1.0, 1.0);
        let pot = Potential {
            data: &data,
            beta,
            prior_precision: m_pi,
        };
        let big_m = 6.0 * beta * LOSS_SMOOTHNESS + m_pi;
        let h = 0.01 / big_m;
        let start = pot.mode().expect("mode");
        let mut rng = NoiseSource::seeded(seed);
        let sample: Vec<f64> = (0..3000)
            .map(|_| {
                sample_with_noise(
                    &pot,
                    &start,
                    big_m,
                    h,
                    noise_sd_factor * (2.0 * h).sqrt(),
                    2000,
                    &mut rng,
                )
                .expect("finite")[0]
            })
            .collect();
        (sample, one_d_posterior(&data, beta, m_pi))
    }

    #[test]
    fn lmc_samples_the_logistic_gibbs_posterior_in_one_dimension() {
        // Horizon 2000·h = 8 ≫ 1/m_π: the chains have mixed; the O(h) bias is far below KS's reach.
        let (sample, cdf) = one_d_chains(1.0, 20);
        let p = ks_test(&sample, cdf).p_value;
        assert!(p > 1e-3, "{p}");
    }

    #[test]
    fn under_noised_lmc_fails_the_logistic_posterior_check() {
        let (sample, cdf) = one_d_chains(0.5, 21);
        let p = ks_test(&sample, cdf).p_value;
        assert!(p < 1e-6, "{p}");
    }

    #[test]
    fn proven_release_runs_and_carries_its_guarantee() {
        // Small enough for Proposition 13 to be affordable: n = 20, d = 2, γ = 0.2.
        let data = generate(
            &SyntheticSpec {
                dim: 2,
                train: 20,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(5, &[]),
        )
        .train;
        let (eps, delta, lambda, gamma) = (1.0, 1e-5, 0.05, 0.2);
        let m = GibbsPosterior::proven(eps, delta, lambda, gamma, 10_000_000).expect("valid");
        assert!(m.is_proven());
        let schedule = m.schedule(20, 2).expect("affordable");
        let beta = gibbs_beta(eps, delta, 20, lambda).expect("valid");
        let p = proposition13(20, 2, beta, lambda, gamma).expect("valid");
        assert_eq!(schedule.steps, p.steps.ceil() as u64);
        assert!(schedule.step_size <= p.step_size_eq16);
        assert!(close(
            schedule.step_size * schedule.steps as f64,
            p.horizon,
            1e-12
        ));
        let r = m
            .release(&data, &mut NoiseSource::seeded(6))
            .expect("release");
        let md = &r.metadata;
        assert_eq!(md.mechanism, NAME);
        assert_eq!(
            md.guarantee,
            PrivacyGuarantee {
                epsilon: eps,
                delta: delta + (1.0 + eps.exp()) * gamma * (1.0 + TV_SLACK),
                relation: NeighbourRelation::ReplaceOne,
            }
        );
        assert_eq!(md.parameters["proven"], 1.0);
        assert_eq!(md.parameters["beta"], beta);
        assert_eq!(md.parameters["gamma"], gamma);
        assert_eq!(md.parameters["step_size"], schedule.step_size);
        assert_eq!(md.parameters["steps"], schedule.steps as f64);
        assert_eq!(md.parameters["max_steps"], 10_000_000.0);
        assert!(md.seeded);
        assert!(r.theta.iter().all(|t| t.is_finite()));
        // Deterministic under a seeded source.
        let again = m
            .release(&data, &mut NoiseSource::seeded(6))
            .expect("release");
        assert_eq!(again.theta, r.theta);
    }

    #[test]
    fn unproven_release_says_so_and_classifies_separable_data_at_large_epsilon() {
        let d = generate(
            &SyntheticSpec {
                train: 1000,
                test_per_label: 500,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(7, &[]),
        );
        let m = GibbsPosterior::unproven(50.0, 1e-5, 0.01, 3000, 0.5).expect("valid");
        assert!(!m.is_proven());
        let r = m
            .release(&d.train, &mut NoiseSource::seeded(8))
            .expect("release");
        let md = &r.metadata;
        assert_eq!(md.mechanism, NAME_UNPROVEN);
        assert_eq!(md.parameters["proven"], 0.0);
        assert!(!md.parameters.contains_key("gamma"));
        assert_eq!(md.parameters["steps"], 3000.0);
        assert_eq!(md.parameters["beta"], 1.0);
        assert!(md.reference.contains("NOT covered"));
        assert_eq!(md.guarantee.delta, 1e-5);
        let accuracy = d.test.accuracy(&r.theta);
        assert!(accuracy > 0.9, "test accuracy {accuracy}");
    }
}
