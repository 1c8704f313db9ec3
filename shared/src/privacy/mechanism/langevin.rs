//! (ε, δ)-DP logistic regression by noisy gradient descent — a discretised Langevin chain whose
//! privacy is proven for the chain as run, at any number of steps.
//!
//! **Algorithm.** On the objective F_D(θ) = (1/n)Σᵢ ℓ(θ; xᵢ, yᵢ) + (λ/2)‖θ‖² (ℓ the logistic
//! loss), start at θ₀ = 0 (data-independent) and run, for k = 0, …, K − 1,
//!
//! ```text
//! θ_{k+1} = ψ_D(θ_k) + N(0, σ² I),   ψ_D(θ) = θ − η ∇F_D(θ),
//! ```
//!
//! releasing θ_K. This is the Langevin Monte Carlo chain of Minami, Arai, Sato & Nakagawa
//! (NIPS 2016, eq. 14: θ ← θ − h∇U(θ) + √(2h)·N(0, I)) on U = F_D / T with h = ηT and temperature
//! T = σ²/(2η), i.e. the Gibbs posterior ∝ exp(−F_D/T) is (approximately) its stationary law.
//! The gradient pass and the chain loop are those of [`super::gibbs_posterior`] (its
//! `Potential` with β = 1/n and m_π = λ, and `run_chain`).
//!
//! **Guarantee (proof in `docs/proofs/langevin.md`).** Privacy amplification by iteration
//! (Feldman, Mironov, Talwar & Thakurta, FOCS 2018: the shift-reduction lemma for Gaussian noise
//! and the contraction-reduction lemma, in the strongly convex form Altschuler & Talwar 2022 also
//! use; the same setting as Chourasia, Ye & Shokri, NeurIPS 2021, whose text was not at hand).
//! With β = 1/4 + λ the smoothness of F_D and 0 < η ≤ 2/(β + λ), ψ_D is c-Lipschitz with
//! c = 1 − ηλ; under **replace-one** neighbours sup_θ ‖ψ_D(θ) − ψ_{D′}(θ)‖ ≤ s = 2η/n (each
//! per-row gradient has norm ≤ ‖x‖ ≤ 1). Optimising the shifts of the recursion gives, for every
//! order α > 1, the Rényi bound ε(α) = α·ρ_K with
//!
//! ```text
//! ρ_K = s² (1 + c)(1 − c^K) / (2σ² (1 − c)(1 + c^K))   ≤   ρ_∞ = s² (1 + c) / (2σ² (1 − c)),
//! ```
//!
//! which increases in K to ρ_∞ ([`chain_rho`]); at c = 1 it is K·s²/(2σ²), K Gaussian mechanisms.
//! For a linear ψ (a quadratic objective) it is attained exactly, so it cannot be improved in
//! general.
//!
//! **Calibration** uses public quantities only. The target (ε, δ) becomes a Gaussian-shaped
//! curve ε(α) = α·ρ₀ through the ledger's own RDP → (ε, δ) conversion
//! ([`crate::privacy::accounting::calibrate_sigma`] at q = 1, T = 1: ρ₀ = 1/(2σ_G²)); that curve
//! is what [`Mechanism::rdp`] publishes, before any data is seen. At release, n and d (public)
//! resolve λ (C = 60 in [`AutoRule::Sqrt`] for `auto`: fitted for this chain by `experiment
//! lambda`), then η = `step_scale`/β,
//! c = 1 − ηλ, s = 2η/n and σ = s·σ_G·√((1 + c)/(1 − c)), so that ρ_∞ ≤ ρ₀: the guarantee holds
//! for **every** K, and K is chosen for utility — the smallest K with c^K ≤ `tolerance` (the
//! noiseless descent's distance to the minimiser, at most ‖θ*‖ ≤ 1/λ, shrinks by c^K), capped at
//! [`MAX_STEPS`]. The stationary standard deviation per coordinate of the linear part,
//! σ/√(1 − c²) = 2σ_G/(nλ) = √2/(nλ√ρ₀), equals that of Gaussian output perturbation at the same
//! ρ₀; the loss curvature only shrinks it. That is why `auto` is output perturbation's rule
//! (60√d/(n ε^{3/2}), 7.5 times objective perturbation's): fitted on its own over 288 synthetic
//! cells it gives the same constant (docs/experiments/lambda-rule.md).
//!
//! **Assumptions:** logistic loss, every row ‖x‖₂ ≤ 1 (checked by the template), λ > 0, δ > 0
//! (a Gaussian-shaped RDP curve gives no pure ε-DP; δ = 0 is refused). The proof is about real
//! arithmetic: the gradient (with the crate's fast exponential) and the f64 Gaussian increments
//! are not the exact maps and laws it analyses (ARCHITECTURE.md, "Floating-point noise").

use super::dp_sgd::public_rows;
use super::gibbs_posterior::langevin::{Potential, run_chain};
use super::lambda::{AutoRule, Lambda};
use super::kind::{DocRow, OptionSpec, OptionType, Registration};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::Dataset;
use crate::privacy::accounting::{self, EpsilonBound, RdpCurve};
use crate::privacy::guarantee::{LOGISTIC_UNIT_BALL, NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::privacy::release::Parameters;
use crate::util::stop::Stop;
use std::collections::BTreeMap;

#[cfg(test)]
mod tests;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "langevin";

/// Largest number of steps K a calibrated chain runs (bounds a release's running time; the
/// guarantee does not depend on K).
pub const MAX_STEPS: u64 = 1_000_000;

/// Default `tolerance`: K is the smallest step count with c^K ≤ this.
pub const DEFAULT_TOLERANCE: f64 = 1e-6;

/// Default `step_scale`: η = step_scale / β.
pub const DEFAULT_STEP_SCALE: f64 = 1.0;

/// The registry's entry ([`super::kind`]).
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "(ε, δ)-DP noisy full-batch gradient descent (the Langevin chain of Minami et al. \
              eq. 14), proven at any step count by shifted Rényi divergences, with its RDP \
              curve; replace-one; delta > 0",
    options: &[
        OptionSpec {
            name: "step_scale",
            default: DEFAULT_STEP_SCALE,
            range: OptionType::open_closed(0.0, 1.0),
            help: "step size η = step_scale / β with β = 1/4 + λ, in (0, 1]",
        },
        OptionSpec {
            name: "tolerance",
            default: DEFAULT_TOLERANCE,
            range: OptionType::open(0.0, 1.0),
            help: "steps K: the smallest with c^K ≤ tolerance (c = 1 − ηλ; capped at 10^6), in (0, 1); the guarantee holds for every K",
        },
    ],
    proof: crate::privacy::guarantee::ProofCoverage::RealArithmetic,
    node_replacement: None,
    auto_lambda: AutoRule::Sqrt { constant: 60.0 },
    neighbours: NeighbourRelation::ReplaceOne,
    doc: Some(DocRow {
        what: "the Langevin chain of Minami et al. 2016 eq. 14 as noisy full-batch gradient descent from θ₀ = 0 (η = 1/β, c = 1 − ηλ, σ from the target), proven **for the chain as run at any step count** by shifted Rényi divergences (privacy amplification by iteration, Feldman et al. 2018); steps chosen for convergence; proof in `docs/proofs/langevin.md`",
        guarantee: "(ε, δ)-DP, with its RDP curve ε(α) = α·ρ",
        options_note: "(steps K with c^K ≤ `tolerance`, at most 10⁶)",
    }),
    build: |r| {
        Ok(Box::new(Langevin::new(
            r.epsilon,
            r.delta,
            r.lambda,
            r.real("step_scale"),
            r.real("tolerance"),
        )?))
    },
}];

/// Smoothness of θ ↦ ℓ(θ; x, y) for the logistic loss with ‖x‖ ≤ 1 (σ(m)σ(−m) ≤ 1/4).
pub const LOSS_SMOOTHNESS: f64 = LOGISTIC_UNIT_BALL.loss_hessian_bound;

/// Bound on ‖∇ℓ(θ; x, y)‖ for the logistic loss with ‖x‖ ≤ 1.
pub const GRADIENT_BOUND: f64 = LOGISTIC_UNIT_BALL.loss_gradient_bound;

const REFERENCE: &str = "Noisy gradient descent / Langevin chain (Minami et al. NIPS 2016 eq. 14 \
with σ² = 2η·temperature) on the L2-regularised logistic loss; privacy of the chain by shifted \
Rényi divergences (Feldman, Mironov, Talwar & Thakurta FOCS 2018, shift- and contraction-reduction \
lemmas; strongly convex case as in Altschuler & Talwar 2022 and Chourasia, Ye & Shokri NeurIPS \
2021): ε(α) = α s²(1+c)(1−c^K)/(2σ²(1−c)(1+c^K)), s = 2η/n, c = 1 − ηλ (docs/proofs/langevin.md); \
RDP to (ε, δ): Canonne, Kamath & Steinke 2020 Prop. 12";

/// G_K(c) = (1 + c)(1 − c^K) / ((1 − c)(1 + c^K)), the factor by which the chain's ρ exceeds one
/// Gaussian step's s²/(2σ²): K at c = 1, (1 + c)/(1 − c) for `steps = None` (K → ∞).
/// `contraction` must be in [0, 1].
pub fn growth(contraction: f64, steps: Option<u64>) -> f64 {
    let c = contraction;
    match steps {
        None if c < 1.0 => (1.0 + c) / (1.0 - c),
        None => f64::INFINITY,
        Some(k) if c >= 1.0 => k as f64,
        // (1 − c^K)/(1 + c^K) = tanh(K·(−ln c)/2), accurate for c near 1 and for large K.
        Some(k) => (1.0 + c) / (1.0 - c) * (k as f64 * -c.ln() / 2.0).tanh(),
    }
}

/// ρ of K steps (`None`: the K → ∞ bound) of the chain with per-step shift `shift` = s,
/// contraction c and noise standard deviation σ: the chain is (α, α·ρ)-RDP for every α > 1.
pub fn chain_rho(shift: f64, contraction: f64, noise_std: f64, steps: Option<u64>) -> f64 {
    shift * shift / (2.0 * noise_std * noise_std) * growth(contraction, steps)
}

/// The optimal shifts a_k = s(1 + c)c^{K−1−k}/(1 + c^K), k = 0, …, K − 1, of the recursion
/// z_{k+1} = c z_k + s − a_k, z₀ = 0, z_K = 0 (proof, step 4): Σ a_k² · α/(2σ²) = α·ρ_K.
pub fn optimal_shifts(shift: f64, contraction: f64, steps: u64) -> Vec<f64> {
    let c = contraction;
    let scale = shift * (1.0 + c) / (1.0 + c.powf(steps as f64));
    (0..steps)
        .map(|k| scale * c.powf((steps - 1 - k) as f64))
        .collect()
}

/// The public settings of one chain: everything the release runs with, computed from n, d, λ
/// and the target ρ₀ (or given directly), never from the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainSchedule {
    /// Rows n (public under replace-one).
    pub n: usize,
    /// The regulariser λ.
    pub lambda: f64,
    /// η.
    pub step_size: f64,
    /// c = 1 − ηλ: the Lipschitz constant of ψ_D.
    pub contraction: f64,
    /// s = 2η/n: sup_θ ‖ψ_D(θ) − ψ_{D′}(θ)‖ for replace-one neighbours.
    pub shift: f64,
    /// σ: the standard deviation of each coordinate of each step's noise.
    pub noise_std: f64,
    /// K.
    pub steps: u64,
}

fn invalid(name: &'static str, value: f64, requirement: &'static str) -> MechanismError {
    MechanismError::InvalidParameter {
        name,
        value,
        requirement,
    }
}

impl ChainSchedule {
    /// β = 1/4 + λ: the smoothness of F_D.
    pub fn smoothness(lambda: f64) -> f64 {
        LOSS_SMOOTHNESS + lambda
    }

    /// The largest step size the contraction argument covers: 2/(β + λ).
    pub fn max_step_size(lambda: f64) -> f64 {
        2.0 / (Self::smoothness(lambda) + lambda)
    }

    /// A chain with the given η, σ and K (the calculator's raw form). Errors: n = 0, λ ≤ 0,
    /// η outside (0, 2/(β + λ)], σ ≤ 0, K = 0.
    pub fn raw(
        n: usize,
        lambda: f64,
        step_size: f64,
        noise_std: f64,
        steps: u64,
    ) -> Result<Self, MechanismError> {
        if n == 0 {
            return Err(invalid("n", 0.0, "must be at least 1"));
        }
        super::check_lambda(lambda)?;
        if !(step_size > 0.0 && step_size <= Self::max_step_size(lambda)) {
            return Err(invalid(
                "step_size",
                step_size,
                "must be in (0, 2/(β + λ)] with β = 1/4 + λ (the contraction of gradient descent)",
            ));
        }
        if !(noise_std.is_finite() && noise_std > 0.0) {
            return Err(invalid("noise", noise_std, "must be a finite number > 0"));
        }
        if steps == 0 {
            return Err(invalid("steps", 0.0, "must be at least 1"));
        }
        Ok(Self {
            n,
            lambda,
            step_size,
            contraction: 1.0 - step_size * lambda,
            shift: 2.0 * GRADIENT_BOUND * step_size / n as f64,
            noise_std,
            steps,
        })
    }

    /// The calibrated chain for target ρ₀: η = `step_scale`/β, σ the smallest (up to rounding,
    /// rounded up) with ρ_∞ ≤ ρ₀, K the smallest with c^K ≤ `tolerance`, at most [`MAX_STEPS`].
    pub fn calibrated(
        n: usize,
        lambda: f64,
        rho: f64,
        step_scale: f64,
        tolerance: f64,
    ) -> Result<Self, MechanismError> {
        check_step_scale(step_scale)?;
        check_tolerance(tolerance)?;
        if !(rho.is_finite() && rho > 0.0) {
            return Err(invalid("rho", rho, "must be a finite number > 0"));
        }
        super::check_lambda(lambda)?;
        let step_size = step_scale / Self::smoothness(lambda);
        let mut s = Self::raw(n, lambda, step_size, 1.0, 1)?;
        let c = s.contraction;
        s.noise_std = s.shift * (growth(c, None) / (2.0 * rho)).sqrt();
        // Rounding could leave ρ_∞ an ulp above ρ₀; the guarantee needs ≤ for the σ used.
        while chain_rho(s.shift, c, s.noise_std, None) > rho {
            s.noise_std *= 1.0 + 4.0 * f64::EPSILON;
        }
        let wanted = (tolerance.ln() / c.ln()).ceil();
        s.steps = if wanted.is_finite() && wanted >= 1.0 {
            (wanted as u64).min(MAX_STEPS)
        } else {
            1
        };
        Ok(s)
    }

    /// ρ of this chain after its K steps.
    pub fn rho(&self) -> f64 {
        chain_rho(
            self.shift,
            self.contraction,
            self.noise_std,
            Some(self.steps),
        )
    }

    /// ρ_∞, the bound for any number of steps.
    pub fn rho_limit(&self) -> f64 {
        chain_rho(self.shift, self.contraction, self.noise_std, None)
    }

    /// c^K: how much of the initial distance to the minimiser the noiseless descent keeps.
    pub fn bias_factor(&self) -> f64 {
        self.contraction.powf(self.steps as f64)
    }

    /// ε(α) = α·ρ_K over the ledger's orders.
    pub fn curve(&self) -> Result<RdpCurve, MechanismError> {
        gaussian_curve(self.rho())
    }

    /// The parameters a release records.
    fn parameters(&self) -> Parameters {
        BTreeMap::from([
            ("step_size".to_owned(), self.step_size),
            ("contraction".to_owned(), self.contraction),
            ("sensitivity".to_owned(), self.shift),
            ("noise_std".to_owned(), self.noise_std),
            ("steps".to_owned(), self.steps as f64),
            ("bias_factor".to_owned(), self.bias_factor()),
            ("rho_steps".to_owned(), self.rho()),
            ("rho_limit".to_owned(), self.rho_limit()),
        ])
    }

    /// Runs the chain on `data` from θ₀ = 0 (`data` has the n rows this schedule was made for).
    pub(crate) fn run(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Vec<f64>, MechanismError> {
        let potential = Potential::new(data, 1.0 / self.n as f64, self.lambda);
        let mut theta = vec![0.0; data.dim()];
        let gradient = |t: &[f64], g: &mut [f64]| potential.gradient(t, g);
        run_chain(
            &mut theta,
            self.step_size,
            self.noise_std,
            self.steps,
            gradient,
            noise,
            stop,
        )?;
        Ok(theta)
    }
}

fn check_step_scale(step_scale: f64) -> Result<(), MechanismError> {
    if step_scale > 0.0 && step_scale <= 1.0 {
        Ok(())
    } else {
        Err(invalid("step_scale", step_scale, "must be in (0, 1]"))
    }
}

fn check_tolerance(tolerance: f64) -> Result<(), MechanismError> {
    if tolerance > 0.0 && tolerance < 1.0 {
        Ok(())
    } else {
        Err(invalid("tolerance", tolerance, "must be in (0, 1)"))
    }
}

/// The curve ε(α) = α·ρ over [`accounting::default_orders`].
pub fn gaussian_curve(rho: f64) -> Result<RdpCurve, MechanismError> {
    let orders = accounting::default_orders();
    let values = orders.iter().map(|a| a * rho).collect();
    Ok(RdpCurve::new(orders, values)?)
}

/// The largest ρ₀ (up to the accountant's tolerance, rounded down) whose curve α·ρ₀ converts to
/// (ε, δ)-DP by the ledger's conversion, with that curve and the ε it gives.
pub fn target_rho(
    epsilon: f64,
    delta: f64,
) -> Result<(f64, RdpCurve, EpsilonBound), MechanismError> {
    super::check_epsilon(epsilon)?;
    super::check_delta(delta)?;
    // q = 1, T = 1: the plain Gaussian mechanism, ε(α) = α/(2σ²).
    let sigma = accounting::calibrate_sigma(1.0, 1, epsilon, delta)?;
    let mut rho = 1.0 / (2.0 * sigma * sigma);
    // α·ρ₀ may round an ulp above α/(2σ²), which meets the target; step down until it does too.
    for _ in 0..64 {
        let curve = gaussian_curve(rho)?;
        let accounted = curve.epsilon(delta)?;
        if accounted.epsilon <= epsilon {
            return Ok((rho, curve, accounted));
        }
        rho *= 1.0 - 1e-12;
    }
    Err(accounting::AccountingError::InvalidEpsilon(epsilon).into())
}

/// The proven Langevin learner, calibrated to a target (ε, δ) under replace-one.
#[derive(Debug, Clone, PartialEq)]
pub struct Langevin {
    epsilon: f64,
    delta: f64,
    lambda: Lambda,
    step_scale: f64,
    tolerance: f64,
    rho: f64,
    curve: RdpCurve,
    accounted: EpsilonBound,
}

impl Langevin {
    /// A mechanism for ε > 0, δ ∈ (0, 1), λ > 0 (or `auto`), `step_scale` ∈ (0, 1] and
    /// `tolerance` ∈ (0, 1); the RDP curve is fixed here, before any data.
    pub fn new(
        epsilon: f64,
        delta: f64,
        lambda: impl Into<Lambda>,
        step_scale: f64,
        tolerance: f64,
    ) -> Result<Self, MechanismError> {
        if delta == 0.0 {
            return Err(invalid(
                "delta",
                delta,
                "must be > 0 for langevin (its Gaussian-shaped RDP curve gives no pure ε-DP)",
            ));
        }
        let lambda = lambda.into().check()?;
        check_step_scale(step_scale)?;
        check_tolerance(tolerance)?;
        let (rho, curve, accounted) = target_rho(epsilon, delta)?;
        Ok(Self {
            epsilon,
            delta,
            lambda,
            step_scale,
            tolerance,
            rho,
            curve,
            accounted,
        })
    }

    /// [`Langevin::new`] with the default step scale and tolerance.
    pub fn with_defaults(
        epsilon: f64,
        delta: f64,
        lambda: impl Into<Lambda>,
    ) -> Result<Self, MechanismError> {
        Self::new(
            epsilon,
            delta,
            lambda,
            DEFAULT_STEP_SCALE,
            DEFAULT_TOLERANCE,
        )
    }

    /// ρ₀: the published curve is ε(α) = α·ρ₀.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The ε the ledger's conversion gives for the published curve (≤ the target), with its order.
    pub fn accounted_epsilon(&self) -> EpsilonBound {
        self.accounted
    }

    /// The λ a release on `n` rows of dimension `dim` trains with.
    pub fn lambda_for(&self, n: usize, dim: usize) -> f64 {
        self.lambda
            .resolve(REGISTERED[0].auto_lambda, n, dim, self.epsilon)
    }

    /// The chain a release on `n` rows of dimension `dim` runs (public quantities only).
    pub fn schedule(&self, n: usize, dim: usize) -> Result<ChainSchedule, MechanismError> {
        let lambda = self.lambda_for(n, dim);
        ChainSchedule::calibrated(n, lambda, self.rho, self.step_scale, self.tolerance)
    }
}

/// The fastest of three timings of one gradient pass over `n` public rows of dimension `dim`
/// (at most 4,096 rows timed, the rest extrapolated; the work is linear in n).
fn gradient_seconds(n: usize, dim: usize) -> f64 {
    let rows = n.clamp(1, 4096);
    let data = public_rows(rows, dim);
    let potential = Potential::new(&data, 1.0, 1.0);
    let theta = vec![0.01; dim];
    let mut g = vec![0.0; dim];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let mut reps = 0u32;
        while reps == 0 || start.elapsed() < std::time::Duration::from_millis(2) {
            potential.gradient(std::hint::black_box(&theta), &mut g);
            std::hint::black_box(&g);
            reps += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / f64::from(reps));
    }
    best * n as f64 / rows as f64
}

impl Mechanism for Langevin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        REFERENCE
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, self.delta)
    }

    fn rdp(&self) -> Option<RdpCurve> {
        Some(self.curve.clone())
    }

    fn predicted_seconds(&self, n: usize, dim: usize) -> Option<f64> {
        let steps = self.schedule(n, dim).ok()?.steps;
        Some(steps as f64 * gradient_seconds(n, dim))
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let schedule = self.schedule(data.len(), data.dim())?;
        let coefficients = schedule.run(data, noise, stop)?;
        let mut parameters = schedule.parameters();
        parameters.extend([
            ("rho".to_owned(), self.rho),
            ("step_scale".to_owned(), self.step_scale),
            ("tolerance".to_owned(), self.tolerance),
            ("accounted_epsilon".to_owned(), self.accounted.epsilon),
            ("rdp_order".to_owned(), self.accounted.order),
        ]);
        parameters.extend(self.lambda.parameters(schedule.lambda));
        Ok(Sample {
            coefficients,
            parameters,
        })
    }
}
