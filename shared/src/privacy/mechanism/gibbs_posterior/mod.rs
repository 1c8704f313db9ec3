//! (ε, δ)-DP logistic regression by sampling a Gibbs posterior.
//!
//! Implements Minami, Arai, Sato & Nakagawa, "Differential Privacy without Sensitivity", NIPS 2016
//! (Minami et al. 2016; Minami's 2015 research notes, §4.1 and §4.3, summarise the same results):
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
//! carry the mechanism name [`NAME_UNPROVEN`], `proven = false` in their metadata, and
//! [`GibbsPosterior::is_proven`] is false; the (ε, δ) they report is that of an *exact* sample of
//! G_β (Theorem 7 / Corollary 8) and does not cover the approximation. A node policy that needs a
//! proof must refuse them.
//!
//! Each LMC step is one pass over the n × d features with no allocation; the noise is drawn from
//! the [`NoiseSource`] passed to release. (As for every mechanism here, the proofs are about real
//! arithmetic and exact Gaussians; floating-point sampling is not covered by them.)

mod beta;
pub(super) mod langevin;
mod schedule;
#[cfg(test)]
mod tests;

pub use beta::{gibbs_beta, gibbs_beta_bound, theorem7_beta_bound, theorem7_tail};
pub use schedule::{LmcSchedule, Proposition13, proposition13};

use super::kind::{DocRow, OptionSpec, OptionType, Registration};
use super::lambda::{AutoRule, PAPER_MAP_LAMBDA};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::Dataset;
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::privacy::release::Parameters;
use crate::util::stop::Stop;
use beta::invalid;
use langevin::{Chain, Potential, sample};
use schedule::check_gamma;
use std::collections::BTreeMap;

/// Identifier of the proven variant (Proposition 13), in metadata and on the command line.
pub const NAME: &str = "gibbs-posterior";

/// Identifier of the variant whose sampler is not covered by a proof.
pub const NAME_UNPROVEN: &str = "gibbs-posterior-unproven";

/// The registry's entries ([`super::kind`]): the proven sampler and the chosen-step-count one;
/// `auto` λ is the paper map's λ.
pub const REGISTERED: &[Registration] = &[
    Registration {
        name: NAME,
        summary: "a Gibbs-posterior sample by Langevin Monte Carlo with the step count of \
                  Minami et al. 2016 Prop. 13: (ε, δ + (1 + e^ε)γ)-DP, replace-one; delta > 0",
        options: &[
            OptionSpec {
                name: "gamma",
                default: 1e-3,
                range: OptionType::open(0.0, 1.0),
                help: "total-variation target γ of Proposition 13; the release is (ε, δ + (1 + e^ε)γ)-DP",
            },
            OptionSpec {
                name: "max_steps",
                default: 1e9,
                range: OptionType::Count,
                help: "refuse to release when Proposition 13 needs more Langevin steps than this",
            },
        ],
        proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
        node_replacement: None,
        auto_lambda: AutoRule::Fixed(PAPER_MAP_LAMBDA),
        neighbours: NeighbourRelation::ReplaceOne,
        doc: Some(DocRow {
            what: "Minami et al. 2016: a sample of the Gibbs posterior (β from Corollary 8 eq. 13 and Theorem 7) by Langevin Monte Carlo with Proposition 13's step size and count",
            guarantee: "(ε, δ + (1 + e^ε)γ)-DP",
            options_note: "",
        }),
        build: |r| {
            let sampler = GibbsSampler::Proven {
                gamma: r.real("gamma"),
                max_steps: r.count("max_steps")?,
            };
            let m = GibbsPosterior::new(r.epsilon, r.delta, r.fixed_lambda(), sampler)?;
            Ok(Box::new(m))
        },
    },
    Registration {
        name: NAME_UNPROVEN,
        summary: "the same chain with a chosen step count; the stated (ε, δ) is that of an exact \
                  sample and NOT proven for the sampler (releases say proven = false)",
        options: &[
            OptionSpec {
                name: "steps",
                default: 1000.0,
                range: OptionType::Count,
                help: "Langevin steps (no theorem bounds the sampler's error)",
            },
            OptionSpec {
                name: "step_scale",
                default: 0.5,
                range: OptionType::open_closed(0.0, 1.0),
                help: "step size h = step_scale / M, in (0, 1]",
            },
        ],
        proof: crate::privacy::guarantee::ProofCoverage::None,
        node_replacement: None,
        auto_lambda: AutoRule::Fixed(PAPER_MAP_LAMBDA),
        neighbours: NeighbourRelation::ReplaceOne,
        doc: Some(DocRow {
            what: "the same chain for a chosen number of steps",
            guarantee: "stated (ε, δ) is that of an *exact* sample: **not proven** for the sampler",
            options_note: "",
        }),
        build: |r| {
            let sampler = GibbsSampler::Unproven {
                steps: r.count("steps")?,
                step_scale: r.real("step_scale"),
            };
            let m = GibbsPosterior::new(r.epsilon, r.delta, r.fixed_lambda(), sampler)?;
            Ok(Box::new(m))
        },
    },
];

/// L: Lipschitz constant of θ ↦ ℓ(θ, x) for logistic loss with ||x|| ≤ 1 ([`LOGISTIC_UNIT_BALL`]).
pub const LIPSCHITZ: f64 = LOGISTIC_UNIT_BALL.loss_gradient_bound;

/// M_ℓ: smoothness of θ ↦ ℓ(θ, x) for logistic loss with ||x|| ≤ 1 (σ(m)σ(−m) ≤ 1/4).
pub const LOSS_SMOOTHNESS: f64 = LOGISTIC_UNIT_BALL.loss_hessian_bound;

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
        super::check_delta(delta)?;
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

impl GibbsPosterior {
    /// The parameters a release records.
    fn parameters(&self, n: usize, schedule: &LmcSchedule) -> Result<Parameters, MechanismError> {
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
        Ok(parameters)
    }
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

    fn reference(&self) -> &'static str {
        if GibbsPosterior::is_proven(self) {
            REFERENCE_PROVEN
        } else {
            REFERENCE_UNPROVEN
        }
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        let delta = match self.sampler {
            GibbsSampler::Proven { gamma, .. } => total_delta(self.epsilon, self.delta, gamma),
            GibbsSampler::Unproven { .. } => self.delta,
        };
        PrivacyGuarantee::replace_one(self.epsilon, delta)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let (n, dim) = (data.len(), data.dim());
        let schedule = self.schedule(n, dim)?;
        let potential = Potential::new(data, schedule.beta, schedule.strong_convexity);
        let start = potential.mode()?;
        if self.is_proven() && !potential.start_is_accurate(&start, schedule.smoothness) {
            return Err(GibbsError::InaccurateStart.into());
        }
        let chain = Chain::langevin(schedule.smoothness, schedule.step_size, schedule.steps);
        let coefficients = sample(&potential, &start, chain, noise, stop)?;
        Ok(Sample {
            coefficients,
            parameters: self.parameters(n, &schedule)?,
        })
    }
}
