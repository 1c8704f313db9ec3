//! ε-DP objective perturbation without the dip, proven for the solver's inexact minimiser — the
//! default ε-DP learner (kind `objective-perturbation` with δ = 0).
//!
//! Two stages, ε = ε₁ + ε₂ with ε₂ = f·ε (f = `output_fraction`, default 0.01):
//!
//! 1. **Objective stage** — Chaudhuri, Monteleoni & Sarwate, "Differentially Private Empirical Risk
//!    Minimization", JMLR 12 (2011), **Theorem 9** at ε₁, for the logistic loss (c = 1/4):
//!    λ is the user's or `auto` (8√d/(n ε₁^{3/2}), [`super::lambda`]); μ = λ + Δ is chosen by the
//!    expected-excess-risk rule (B.4) of [`super::delta_rule`]; ε′ = ε₁ − 2 ln(1 + c/(nμ)) (T9.1);
//!    b₁ has density ∝ exp(−ε′‖b₁‖/2) (‖b₁‖ ~ Gamma(d, 2/ε′), uniform direction); the solver
//!    returns θ̂ with ‖∇F(θ̂)‖ ≤ γ for F(θ) = (1/n)Σℓ + (μ/2)‖θ‖² + (1/n)b₁ᵀθ (γ = 10⁻⁸, the
//!    solver's tolerance; if it does not get there nothing is released).
//! 2. **Output stage** — release every coordinate of θ̂ through Mironov's snapping mechanism
//!    ([`crate::privacy::snapping`], CCS 2012 Theorem 1) calibrated by
//!    [`calibrate_vector`](crate::privacy::snapping::calibrate_vector) at ε₂ for the ℓ₁ sensitivity Δ₁ = √d·Δ₂, Δ₂ = 2γ̃/μ, with d
//!    coordinates clamped to the public bound B₀ = (1 + γ + Q/n)/μ (below). The output is on
//!    the public grid ΛZ ∩ [−B, B]: the f64 noise of this stage cannot leak through its low bits.
//!    This is the structure of *approximate minima perturbation* (Iyengar, Near, Song, Thakkar,
//!    Thakurta & Wang, IEEE S&P 2019), whose published version is (ε, δ) with Gaussian noise in
//!    both stages; this is a pure-ε analogue.
//!
//! **Public constants of the output stage.** Q = (2/ε′)(2d + 60) bounds ‖b₁‖ except with
//! probability P[Gamma(d, 1) > 2d + 60] ≤ e^{−2d−60}(e(2 + 60/d))^d < e^{−47} for every d
//! (Chernoff; the exponent −d − 60 + d·ln(2 + 60/d) peaks at −47.8, at d = 21). On
//! ‖b₁‖ ≤ Q, μθ̂ = −∇L(θ̂) − b₁/n + r with ‖∇L‖ ≤ 1 and ‖r‖ ≤ γ gives ‖θ̂‖∞ ≤ B₀; beyond it the
//! clamp only costs accuracy (clamping is 1-Lipschitz per coordinate, so the sensitivity holds
//! for clamped values too). γ̃ = γ + κQ/n with κ = 2⁻⁴⁰ widens the solver tolerance by the
//! difference between the f64 draw of b₁ and an exact draw (next paragraph).
//!
//! **Floating point.** The output stage is Mironov's setting exactly, and snapping closes it
//! (Theorem 1's float term d·2⁻⁴⁹·B/λ is paid inside ε₂). The objective stage draws b₁ in f64;
//! b₁ is never released, only the minimiser it moves, and the snapping kernel K(y | x) is
//! Lipschitz in x: K(y | x) ≤ exp((‖x − x′‖₁ + d·2⁻⁴⁹B)/λ) K(y | x′). Couple the f64 draw b̃₁
//! with an exact draw b₁ so that ‖b̃₁ − b₁‖ ≤ κ‖b₁‖ (the **assumption**: the Gamma and normal
//! samplers are accurate to relative 2⁻⁴⁰, rejection decisions that rounding flips — of
//! probability about 2⁻⁵⁰ a draw — neglected, as snapping's own proof assumes an accurate
//! logarithm). Then the solver's θ̂ satisfies ‖∇F_{b₁}(θ̂)‖ ≤ γ + κ‖b₁‖/n ≤ γ̃ on ‖b₁‖ ≤ Q, so
//! the proof below goes through with γ̃ for γ. **What remains:** on ‖b₁‖ > Q (probability
//! < e^{−47} ≈ 4·10⁻²¹) the f64 error is not covered; the release states δ = 0 and this
//! residual is listed in ARCHITECTURE.md.
//!
//! **Guarantee:** ε-DP (δ = 0) under the replace-one neighbour relation. Proof (the full text with
//! its assumptions is `docs/proofs/objective-perturbation-inexact.md`): let θ*(D, b₁) be the exact
//! minimiser. For neighbours D, D′, CMS's proof of Theorem 9 couples b₁ ↦ b₁′ so that
//! θ*(D, b₁) = θ*(D′, b₁′) = t, with density ratio of θ* at t at most e^{ε₁}. The solver is
//! deterministic, so θ̂ = g(D, t); F is μ-strongly convex, so ‖g(D, t) − t‖ ≤ γ/μ and
//! ‖g(D, t) − g(D′, t)‖ ≤ 2γ/μ = Δ₂. The output density ∫ p_D(t) q(o − g(D, t)) dt therefore changes
//! by at most e^{ε₁} (first factor) times e^{ε₂} (second factor: the snapping kernel moves by at
//! most (Δ₁ + d·2⁻⁴⁹B)/λ ≤ ε₂ between g(D, t) and g(D′, t), Theorem 1 coordinate by coordinate).
//! **Assumptions:** ‖x‖₂ ≤ 1 for every row; logistic loss, |ℓ′| ≤ 1, |ℓ″| ≤ c = 1/4; μ > 0
//! regularising every coordinate (intercept included); a deterministic solver whose stopping test
//! ‖∇F‖ ≤ γ is evaluated on the same F (rounding of that norm, ≈ 10⁻¹⁵, is neglected, as in
//! output perturbation).

use super::lambda::{AutoRule, Lambda};
use super::output_stage::OutputStage;
use super::kind::{DocRow, OptionSpec, OptionType, Registration};
use super::{Mechanism, MechanismError, Sample, delta_rule};
use crate::data::dataset::Dataset;
use crate::learn::logistic::Penalty;
use crate::learn::solver::{SolverOptions, minimise};
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::{NoiseSource, sample_gamma_ball};
use crate::privacy::snapping::SnappingError;
use crate::util::stop::Stop;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "objective-perturbation";

/// The share of ε spent on the output stage unless told otherwise.
pub const DEFAULT_OUTPUT_FRACTION: f64 = 0.01;

/// The registry's entry ([`super::kind`]): δ = 0 builds [`ObjectivePerturbation`], δ > 0
/// [`super::GaussianObjectivePerturbation`] with the same Δ rule and output stage.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "ε-DP when δ = 0 (CMS 2011 Theorem 9 with the Δ rule and an output stage for the \
              inexact minimiser), else (ε, δ)-DP (KST 2012 with the Δ rule); replace-one",
    options: &[OptionSpec {
        name: "output_fraction",
        default: DEFAULT_OUTPUT_FRACTION,
        range: OptionType::open_closed(0.0, 0.5),
        help: "share of ε spent on the snapped output noise that covers the solver's inexact minimiser, in (0, 0.5]",
    }],
    proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
    node_replacement: None,
    auto_lambda: AutoRule::Sqrt { constant: 8.0 },
    neighbours: NeighbourRelation::ReplaceOne,
    doc: Some(DocRow {
        what: "δ = 0: CMS 2011 Theorem 9 with Δ chosen to minimise an expected-excess-risk bound (no dip), then snapped per-coordinate Laplace output noise (Mironov 2012) of scale ~ 2√d·γ/(μ·0.01ε) that makes the guarantee hold for the solver's inexact minimiser and puts the release on a public grid (a pure-ε form of approximate minima perturbation, Iyengar et al. 2019; proof in `docs/proofs/`); δ > 0: Minami et al. 2015 Alg. 1 / KST 2012 with the closed-form Δ rule at (0.99ε, δ₁), then the same snapped output stage at 0.01ε",
        guarantee: "ε-DP or (ε, δ)-DP",
        options_note: "",
    }),
    build: |r| {
        let fraction = r.real("output_fraction");
        Ok(if r.delta == 0.0 {
            Box::new(ObjectivePerturbation::with_output_fraction(
                r.epsilon, r.lambda, fraction,
            )?)
        } else {
            Box::new(super::GaussianObjectivePerturbation::with_output_fraction(
                r.epsilon, r.delta, r.lambda, fraction,
            )?)
        })
    },
}];

pub use super::output_stage::SAMPLER_ACCURACY;

/// Q = (2/ε′)·(2d + [`NOISE_TAIL_SLACK`]) bounds ‖b₁‖ except with probability < e^{−47}.
pub const NOISE_TAIL_SLACK: f64 = 60.0;

/// Theorem 9 objective perturbation with the Δ rule and an output stage for the inexact solver.
#[derive(Debug, Clone)]
pub struct ObjectivePerturbation {
    epsilon: f64,
    lambda: Lambda,
    output_fraction: f64,
    /// The calibration of the first (n, d) released on: it is a function of public constants
    /// only, and a simulation releases many learners of one size with one mechanism.
    cached: OnceLock<((usize, usize), Result<Calibration, SnappingError>)>,
}

/// Everything the mechanism computes from public quantities (n, d, ε, λ) before seeing data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// ε₁ = (1 − f)ε, the objective stage's share.
    pub epsilon_objective: f64,
    /// ε₂ = fε, the output stage's share.
    pub epsilon_output: f64,
    /// λ trained with (the user's, or `auto` at ε₁).
    pub lambda: f64,
    /// μ = λ + Δ by the Δ rule at ε₁.
    pub mu: f64,
    /// ε′ of (T9.1), spent on b₁.
    pub epsilon_prime: f64,
    /// Scale 2/ε′ of ‖b₁‖ ~ Gamma(d, ·).
    pub objective_scale: f64,
    /// The snapped output stage: Q, B₀, Δ₁ and the mechanism of every coordinate.
    pub output: OutputStage,
}

impl ObjectivePerturbation {
    /// c, the bound on ℓ″ of the logistic loss.
    pub const C: f64 = LOGISTIC_UNIT_BALL.loss_hessian_bound;

    /// A mechanism for ε > 0 and λ > 0 (or `auto`) with the default output fraction.
    pub fn new(epsilon: f64, lambda: impl Into<Lambda>) -> Result<Self, MechanismError> {
        Self::with_output_fraction(epsilon, lambda.into(), DEFAULT_OUTPUT_FRACTION)
    }

    /// A mechanism spending `output_fraction` ∈ (0, 0.5] of ε on the output stage.
    pub fn with_output_fraction(
        epsilon: f64,
        lambda: Lambda,
        output_fraction: f64,
    ) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        if !(output_fraction > 0.0 && output_fraction <= 0.5) {
            return Err(MechanismError::InvalidParameter {
                name: "output_fraction",
                value: output_fraction,
                requirement: "must be in (0, 0.5]",
            });
        }
        Ok(Self {
            epsilon,
            lambda: lambda.check()?,
            output_fraction,
            cached: OnceLock::new(),
        })
    }

    /// The solver settings; γ is their tolerance.
    pub fn solver_options() -> SolverOptions {
        OutputStage::solver_options()
    }

    /// The public constants of a release on `n` rows of dimension `dim`; an error when the
    /// snapped output stage cannot be calibrated (ε₂ below d·2⁻⁴⁷, or B₀ ≥ 2⁴⁶ times the
    /// Laplace scale — Mironov's Theorem 1 does not cover it).
    pub fn calibrate(&self, n: usize, dim: usize) -> Result<Calibration, SnappingError> {
        let (key, cal) = self.cached.get_or_init(|| ((n, dim), self.compute(n, dim)));
        if *key == (n, dim) {
            *cal
        } else {
            self.compute(n, dim)
        }
    }

    /// [`Self::calibrate`] without the cache.
    fn compute(&self, n: usize, dim: usize) -> Result<Calibration, SnappingError> {
        let epsilon_output = self.output_fraction * self.epsilon;
        let epsilon_objective = self.epsilon - epsilon_output;
        let lambda =
            self.lambda
                .resolve(REGISTERED[0].auto_lambda, n, dim, epsilon_objective);
        let choice = delta_rule::pure(n, dim, epsilon_objective, lambda);
        let objective_scale = 2.0 / choice.epsilon_prime;
        let noise_bound = objective_scale * (2.0 * dim as f64 + NOISE_TAIL_SLACK);
        let output = OutputStage::calibrate(n, dim, choice.mu, noise_bound, epsilon_output)?;
        Ok(Calibration {
            epsilon_objective,
            epsilon_output,
            lambda,
            mu: choice.mu,
            epsilon_prime: choice.epsilon_prime,
            objective_scale,
            output,
        })
    }
}

impl Mechanism for ObjectivePerturbation {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Chaudhuri, Monteleoni & Sarwate 2011 (JMLR) Theorem 9 with the expected-excess-risk rule for Delta (dpagg delta_rule eq. B.4); output noise for the inexact minimiser as in approximate minima perturbation (Iyengar et al. 2019), pure-epsilon form (docs/proofs/objective-perturbation-inexact.md)"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, 0.0)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        _stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        // Calibrated before training: a refused calibration spends nothing on the data.
        let cal = self.calibrate(data.len(), data.dim())?;
        let b1 = sample_gamma_ball(data.dim(), cal.objective_scale, noise);
        let penalty = Penalty {
            mu: cal.mu,
            linear: Some(&b1),
        };
        let fit = minimise(data, penalty, Self::solver_options())?;
        let coefficients = cal.output.release(&fit.theta, noise)?;
        let mut parameters = BTreeMap::from([
            ("c".to_owned(), Self::C),
            ("mu".to_owned(), cal.mu),
            ("delta_extra_regulariser".to_owned(), cal.mu - cal.lambda),
            ("epsilon_prime".to_owned(), cal.epsilon_prime),
            ("epsilon_objective".to_owned(), cal.epsilon_objective),
        ]);
        parameters.extend(cal.output.parameters());
        parameters.extend(self.lambda.parameters(cal.lambda));
        Ok(Sample {
            coefficients,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests;
