//! (ε, δ)-DP noisy SGD of Bassily, Smith & Thakurta: n² steps on one uniformly sampled record,
//! with **exact discrete noise** on a lattice, so that the proof covers the noise as sampled.
//!
//! Implements **Minami et al. 2015, Algorithm 2** ("Differentially Private Gradient Descent", its
//! ref. \[12\]): Bassily, Smith & Thakurta, "Private Empirical Risk Minimization: Efficient
//! Algorithms and Tight Error Bounds", FOCS 2014 (BST14), Algorithm 1, for the L2-regularised
//! logistic loss ℓ̂(θ; d) = log(1 + exp(−y⟨θ, x⟩)) + (λ/2)||θ||² (Minami et al. 2015, §2.2.1 folds
//! the regulariser into the per-record loss, so that (1/n)Σ ℓ̂ = F of eq. 23–24):
//!
//! 1. σ² = 32 L² n² log(n′/δ) log(1/δ) / ε² with n′ = max(n, 2) (line 1; see "Deviation" below),
//!    raised if the accountant below needs more ([`BstDpSgd::noise_multiplier`]).
//! 2. θ₁ = 0 ∈ Θ.
//! 3. For t = 1, …, n² − 1: pick d uniformly from D (with replacement) and set
//!    θ_{t+1} = Π_Θ(θ_t − η_t (n∇ℓ̂(θ_t; d) + b_t)), b_t noise of standard deviation σ.
//! 4. Release θ_{n²}.
//!
//! **The noise as sampled.** The record's index is exactly uniform (`rand`'s `Uniform`, Lemire's
//! method with rejection — not the biased single-sample shortcut). Its gradient ∇ℓ(θ_t; d), of
//! norm ≤ L = 1, goes through [`LatticeSum`] with C = L and noise multiplier m = σ/n: rounded to
//! the grid γ ≈ 2^{−20}/√d, its integer norm bound K enforced exactly, and independent discrete
//! Gaussians N_ℤ(0, s²), s ≥ mK, added; n·γ(c + Z) is then n∇ℓ + b_t with noise of standard
//! deviation nγs ≈ σ. Everything after the integers (the step, the regulariser's nλθ, Π_Θ) is
//! post-processing in f64.
//!
//! **Privacy.** Replacing the sampled record moves its integer vector by at most 2K, so one step
//! given its record is ρ-zCDP with ρ = (2K)²/(2s²) ≤ 2/m² (the discrete Gaussian's Rényi bound,
//! Canonne, Kamath & Steinke 2020). [`BstDpSgd::accounted_epsilon`] composes the steps along BST14's proof,
//! each link stated for this noise ([`crate::privacy::accounting::composition`]): zCDP to
//! (ε₀, δ₀) with δ₀ = nδ/(2k), amplification by one uniform record of n, and advanced
//! composition over k = n² − 1 steps with slack δ/2 — in full, including its kε(e^ε − 1) term.
//! **Guarantee:** (ε, δ)-DP under the **replace-one** neighbour relation (BST14 Theorem 2.1, seed
//! 001 §2.2.2, after Algorithm 2), proven for the samples that run: `docs/proofs/dp-sgd-bst-lattice.md`.
//! Line 1's σ meets the accountant on every size tested; the constructor keeps the paper's range
//! ε ≤ [`MAX_EPSILON`] = 1, where line 1 is stated.
//!
//! **Step size and Θ.** ℓ̂ is λ-strongly convex, so we use the step size of Minami et al. 2015,
//! Theorem 2.2 (b) (BST14 Theorem 2.4 (2)): η_t = 1/(β n t) with β = λ. Θ is the ball of radius
//! L/λ, which contains the minimiser of F (at the minimiser λθ* = −(1/n)Σ∇ℓ, so ||θ*|| ≤ L/λ); it
//! does not depend on the data, so it does not affect privacy.
//!
//! **Deviation.** Minami et al. 2015 prints line 1 as σ² = 32L²n² log(2/δ) log(1/δ)/ε²; BST14's
//! Algorithm 1 (as we read it, arXiv:1405.7085) has log(n/δ) in place of log(2/δ), which comes from
//! the per-step δ of the advanced-composition argument. We use log(max(n, 2)/δ), which is at least
//! both, so the noise is never below either version.
//!
//! **Cost.** n² iterations of d exact draws: releases on more than 10⁴ rows (n² > [`MAX_ITERATIONS`]
//! = 10⁸) are refused with [`MechanismError::TooManyIterations`], and a node refuses, before any
//! charge, a release the timing of a few steps predicts to outlast its limit.
//!
//! **Assumptions:** every row has ||x||₂ ≤ 1; logistic loss (1-Lipschitz); λ > 0.

use super::dp_sgd::{add_clipped_gradient, public_rows};
use super::kind::{DocRow, Registration};
use super::lambda::{AutoRule, PAPER_MAP_LAMBDA};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::{Dataset, dot};
use crate::privacy::accounting::composition::{
    advanced_composition, amplify_by_one_uniform_record, zcdp_to_dp,
};
use crate::privacy::discrete::LatticeSum;
use crate::privacy::guarantee::{
    LOGISTIC_UNIT_BALL, NeighbourRelation, PrivacyGuarantee, ProofCoverage,
};
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use rand::distr::{Distribution, Uniform};
use std::collections::BTreeMap;

/// Largest ε the mechanism accepts (see the module documentation).
pub const MAX_EPSILON: f64 = 1.0;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "dp-sgd-bst";

/// The registry's entry ([`super::kind`]); `auto` λ is the paper map's λ.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "(ε, δ)-DP, Bassily–Smith–Thakurta 2014 (Minami et al. 2015, Alg. 2): n² noisy single-record \
              steps with exact discrete Gaussian noise on a lattice; replace-one; delta > 0; refused \
              above 10⁸ steps",
    options: &[],
    proof: ProofCoverage::NoiseAsSampled,
    node_replacement: None,
    auto_lambda: AutoRule::Fixed(PAPER_MAP_LAMBDA),
    neighbours: NeighbourRelation::ReplaceOne,
    doc: Some(DocRow {
        what: "Bassily, Smith & Thakurta 2014 (Minami et al. 2015 Alg. 2): n² single-record noisy steps, projected, exact discrete Gaussian noise on a lattice",
        guarantee: "(ε, δ)-DP, ε ≤ 1",
        options_note: "(refused when n² > 10⁸)",
    }),
    build: |r| Ok(Box::new(BstDpSgd::new(r.epsilon, r.delta, r.fixed_lambda())?)),
}];

/// Largest number of iterations n² a release may run (so n ≤ 10⁴).
pub const MAX_ITERATIONS: u64 = 100_000_000;

/// L: the Lipschitz constant of the logistic loss in θ for ||x||₂ ≤ 1 ([`LOGISTIC_UNIT_BALL`]).
pub const LIPSCHITZ: f64 = LOGISTIC_UNIT_BALL.loss_gradient_bound;

/// The accountant's ε must be below the target by this relative margin (its arithmetic is f64).
const ACCOUNTING_MARGIN: f64 = 1e-9;

/// Minami et al. 2015, Algorithm 2 (BST14 Algorithm 1) with fixed ε, δ and λ.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BstDpSgd {
    epsilon: f64,
    delta: f64,
    lambda: f64,
    /// The noise as a multiple of what the calibration asks for: 1, except in the tests' mutants.
    #[cfg(test)]
    noise_factor: f64,
}

/// The number of noisy steps k = n² − 1 on `n` rows.
fn steps(n: usize) -> u64 {
    (n as u64).saturating_mul(n as u64).saturating_sub(1)
}

impl BstDpSgd {
    /// A mechanism for ε > 0, δ ∈ (0, 1) and regulariser λ > 0.
    pub fn new(epsilon: f64, delta: f64, lambda: f64) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        if epsilon > MAX_EPSILON {
            return Err(MechanismError::InvalidParameter {
                name: "epsilon",
                value: epsilon,
                requirement: "must be <= 1 for dp-sgd-bst (the range line 1 of BST14 is stated for)",
            });
        }
        Self::unchecked(epsilon, delta, lambda)
    }

    /// Builds without the ε ≤ 1 range check (tests of the optimiser with negligible noise only).
    fn unchecked(epsilon: f64, delta: f64, lambda: f64) -> Result<Self, MechanismError> {
        super::check_delta(delta)?;
        super::check_lambda(lambda)?;
        Ok(Self {
            epsilon,
            delta,
            lambda,
            #[cfg(test)]
            noise_factor: 1.0,
        })
    }

    /// σ² = 32 L² n² log(max(n, 2)/δ) log(1/δ)/ε² for `n` rows (line 1, module docs).
    pub fn noise_variance(&self, n: usize) -> f64 {
        let nf = n as f64;
        32.0 * LIPSCHITZ
            * LIPSCHITZ
            * nf
            * nf
            * (nf.max(2.0) / self.delta).ln()
            * (1.0 / self.delta).ln()
            / (self.epsilon * self.epsilon)
    }

    /// σ of line 1, the standard deviation each coordinate of b_t is calibrated to.
    pub fn noise_std(&self, n: usize) -> f64 {
        self.noise_variance(n).sqrt()
    }

    /// The ε of the (ε, δ) guarantee the accountant gives `n` rows with noise multiplier `m`
    /// (noise of standard deviation ≥ m·n·L per coordinate; module docs, "Privacy").
    pub fn accounted_epsilon(&self, n: usize, m: f64) -> f64 {
        let k = steps(n);
        if k == 0 {
            return 0.0;
        }
        let nf = n as f64;
        let rho = 2.0 / (m * m);
        let step_delta = nf * self.delta / (2.0 * k as f64);
        let (eps, delta) =
            amplify_by_one_uniform_record(zcdp_to_dp(rho, step_delta), step_delta, n as u64);
        advanced_composition(eps, delta, k, self.delta / 2.0).0
    }

    /// The noise multiplier m of a release on `n` rows: line 1's σ/(nL), or, if the accountant
    /// needs more, the smallest m (to a relative 1e-6, rounded up) it accepts.
    pub fn noise_multiplier(&self, n: usize) -> f64 {
        let meets = |m: f64| self.accounted_epsilon(n, m) * (1.0 + ACCOUNTING_MARGIN) <= self.epsilon;
        let line1 = self.noise_std(n.max(1)) / (n.max(1) as f64 * LIPSCHITZ);
        if meets(line1) {
            return line1;
        }
        let (mut lo, mut hi) = (line1, 2.0 * line1);
        while !meets(hi) {
            (lo, hi) = (hi, 2.0 * hi);
        }
        while hi - lo > 1e-6 * hi {
            let mid = 0.5 * (lo + hi);
            if meets(mid) { hi = mid } else { lo = mid }
        }
        hi
    }

    /// The lattice of a release on `n` rows of dimension `dim`.
    pub fn lattice(&self, n: usize, dim: usize) -> Result<LatticeSum, MechanismError> {
        let m = self.noise_multiplier(n);
        #[cfg(test)]
        let m = m * self.noise_factor;
        Ok(LatticeSum::new(m, LIPSCHITZ, dim)?)
    }

    /// η_t = 1/(λ n t).
    pub fn step_size(&self, n: usize, t: u64) -> f64 {
        1.0 / (self.lambda * n as f64 * t as f64)
    }

    /// Radius L/λ of the ball Θ the iterates are projected onto.
    pub fn radius(&self) -> f64 {
        LIPSCHITZ / self.lambda
    }

    /// The same mechanism with its noise multiplied by `factor`: the tests' mutants.
    #[cfg(test)]
    fn with_noise_factor(self, noise_factor: f64) -> Self {
        Self {
            noise_factor,
            ..self
        }
    }
}

/// The buffers of one step: the gradient and its integer cells.
struct Step {
    cells: Vec<i64>,
    gradient: Vec<f64>,
}

impl Step {
    fn new(dim: usize) -> Self {
        Self {
            cells: vec![0; dim],
            gradient: vec![0.0; dim],
        }
    }

    /// n∇ℓ̂(θ; (x, y)) + b into `out`: n·γ(c + Z) for the lattice vector c of ∇ℓ(θ; (x, y)),
    /// plus the regulariser's nλθ.
    fn noisy_gradient(
        &mut self,
        (theta, x, y): (&[f64], &[f64], f64),
        n: f64,
        lambda: f64,
        lattice: &LatticeSum,
        rng: &mut NoiseSource,
        out: &mut [f64],
    ) {
        self.gradient.fill(0.0);
        self.cells.fill(0);
        add_clipped_gradient(theta, x, y, LIPSCHITZ, &mut self.gradient);
        lattice.add(&mut self.cells, &self.gradient);
        lattice.release(&self.cells, rng, out);
        for (o, tj) in out.iter_mut().zip(theta) {
            *o = n * (*o + lambda * tj);
        }
    }
}

/// The projected noisy steps 1, …, `last` − 1 from θ₁ = 0 (module docs, step 3).
fn run(
    m: &BstDpSgd,
    data: &Dataset,
    (lattice, last): (&LatticeSum, u64),
    noise: &mut NoiseSource,
    stop: &Stop,
) -> Result<Vec<f64>, MechanismError> {
    let n = data.len();
    let radius = m.radius();
    let index = Uniform::new(0, n).map_err(|_| MechanismError::EmptyData)?;
    let mut theta = vec![0.0; data.dim()];
    let (mut g, mut step) = (vec![0.0; data.dim()], Step::new(data.dim()));
    for t in 1..last {
        if t % 4096 == 0 {
            stop.check()?;
        }
        let i = index.sample(noise);
        let record = (theta.as_slice(), data.row(i), data.label(i));
        step.noisy_gradient(record, n as f64, m.lambda, lattice, noise, &mut g);
        let eta = m.step_size(n, t);
        for (th, gj) in theta.iter_mut().zip(&g) {
            *th -= eta * gj;
        }
        let norm = dot(&theta, &theta).sqrt();
        if norm > radius {
            theta.iter_mut().for_each(|th| *th *= radius / norm);
        }
    }
    Ok(theta)
}

/// The fastest of three timings of one noisy step on public rows of dimension `dim`.
fn step_seconds(m: &BstDpSgd, n: usize, dim: usize) -> Option<f64> {
    let lattice = m.lattice(n, dim).ok()?;
    let data = public_rows(64, dim);
    let mut rng = NoiseSource::secure().ok()?;
    let (mut step, mut out) = (Step::new(dim), vec![0.0; dim]);
    let theta = vec![0.01; dim];
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        for i in 0..64 {
            let record = (theta.as_slice(), data.row(i), data.label(i));
            step.noisy_gradient(record, n as f64, m.lambda, &lattice, &mut rng, &mut out);
        }
        best = best.min(start.elapsed().as_secs_f64() / 64.0);
    }
    Some(best)
}

impl Mechanism for BstDpSgd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Minami et al. 2015, Algorithm 2 = Bassily, Smith & Thakurta 2014 (FOCS) Algorithm 1, step size \
         1/(λnt) of Minami et al. 2015, Theorem 2.2 (b); discrete Gaussian: Canonne, Kamath & \
         Steinke 2020"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.epsilon, self.delta)
    }

    fn proof(&self) -> ProofCoverage {
        ProofCoverage::NoiseAsSampled
    }

    fn check_size(&self, n: usize, dim: usize) -> Result<(), MechanismError> {
        let iterations = (n as u128) * (n as u128);
        if iterations > u128::from(MAX_ITERATIONS) {
            return Err(MechanismError::TooManyIterations {
                mechanism: NAME,
                iterations,
                cap: MAX_ITERATIONS,
            });
        }
        self.lattice(n, dim).map(|_| ())
    }

    fn predicted_seconds(&self, n: usize, dim: usize) -> Option<f64> {
        Some(steps(n) as f64 * step_seconds(self, n, dim)?)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let n = data.len();
        let lattice = self.lattice(n, data.dim())?;
        let last = n as u64 * n as u64;
        let theta = run(self, data, (&lattice, last), noise, stop)?;
        let multiplier = self.noise_multiplier(n);
        let parameters = BTreeMap::from([
            ("lambda".to_owned(), self.lambda),
            ("noise_std".to_owned(), n as f64 * lattice.noise_std()),
            ("noise_multiplier".to_owned(), multiplier),
            ("lattice_grid".to_owned(), lattice.grid()),
            ("lattice_cell_bound".to_owned(), lattice.cell_bound() as f64),
            ("accounted_epsilon".to_owned(), self.accounted_epsilon(n, multiplier)),
            ("lipschitz".to_owned(), LIPSCHITZ),
            ("iterations".to_owned(), last as f64),
            ("projection_radius".to_owned(), self.radius()),
        ]);
        Ok(Sample {
            coefficients: theta,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests;
