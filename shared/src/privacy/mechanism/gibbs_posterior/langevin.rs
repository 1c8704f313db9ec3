//! Langevin Monte Carlo (eq. (14)) on the potential U(θ) = β Σᵢ ℓ(θ, xᵢ) + (m_π/2)||θ||² of the
//! Gibbs posterior (eq. (15)), started from Dalalyan's initial law around argmin U.
//!
//! [`Potential::gradient`] and [`run_chain`] are also the chain of the proven `langevin`
//! mechanism ([`crate::privacy::mechanism::langevin`]), with β = 1/n and m_π = λ.

use super::{GibbsError, MODE_TOLERANCE, TV_SLACK};
use crate::data::dataset::{Dataset, dot};
use crate::util::fastmath;
use crate::learn::logistic::Penalty;
use crate::learn::row_sums::add_weighted_rows;
use crate::util::simd::{Kernel, vectorised};
use crate::learn::solver::{SolverOptions, minimise};
use crate::privacy::mechanism::MechanismError;
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use rand::RngExt;
use rand_distr::StandardNormal;

/// U(θ) = β Σᵢ ℓ(θ, xᵢ) + (m_π/2)||θ||² on one dataset (eq. (15) with the Gaussian prior).
/// Built by [`Potential::new`] only, so the interleaved copy is always of `data`.
pub(in crate::privacy::mechanism) struct Potential<'a> {
    data: &'a Dataset,
    beta: f64,
    prior_precision: f64,
    /// The rows again, [`LANES`] at a time with each feature's values side by side (zero rows
    /// pad the last group), so the margins of a group are computed as vectors ([`margins`]).
    interleaved: Vec<f64>,
}

/// Rows per block of the gradient pass (the slopes of one block live on the stack).
pub(super) const BLOCK_ROWS: usize = 256;
/// Rows whose margins are computed side by side (a divisor of [`BLOCK_ROWS`]).
const LANES: usize = 8;
const _: () = assert!(BLOCK_ROWS.is_multiple_of(LANES));

/// σ(−m) = −dℓ/dm for the logistic loss at margin m, stable for any m (one exp, no log).
#[inline(always)]
fn loss_slope(m: f64) -> f64 {
    let u = fastmath::exp_nonpositive(-m.abs());
    let inv = 1.0 / (1.0 + u);
    let nonneg = f64::from(u8::from(m >= 0.0));
    inv * (nonneg * u + (1.0 - nonneg))
}

/// `data`'s rows in groups of [`LANES`]: group g holds feature j of its row r at
/// `g·p·LANES + j·LANES + r`.
fn interleave(data: &Dataset) -> Vec<f64> {
    let p = data.dim();
    let groups = data.len().div_ceil(LANES);
    let mut out = vec![0.0; groups * p * LANES];
    for (i, row) in data.features().chunks_exact(p).enumerate() {
        let (g, r) = (i / LANES, i % LANES);
        for (j, v) in row.iter().enumerate() {
            out[g * p * LANES + j * LANES + r] = *v;
        }
    }
    out
}

/// ⟨xᵣ, θ⟩ for the [`LANES`] rows of one interleaved group, each lane doing exactly the
/// operations of [`crate::learn::logistic::dot_by_lanes`] in its order (four accumulators over the
/// chunks of four, the remainder summed from the empty sum's value, then
/// `(a₀ + a₁) + (a₂ + a₃) + tail`), so every margin has the bits of `dot_by_lanes(xᵣ, θ)`.
#[inline(always)]
fn margins(group: &[f64], theta: &[f64], out: &mut [f64]) {
    let full = theta.len() / 4 * 4;
    let (quads, rest) = theta.split_at(full);
    let (quad_cols, rest_cols) = group.split_at(full * LANES);
    // Accumulator k takes features j ≡ k (mod 4) in increasing j, as in dot_by_lanes; the four are
    // updated with constant indices so they stay in registers (indexing by j % 4 kept them in
    // memory, a store-to-load wait at every feature).
    let mut acc = [[0.0; LANES]; 4];
    for (cols, th) in quad_cols.chunks_exact(4 * LANES).zip(quads.chunks_exact(4)) {
        for (k, a) in acc.iter_mut().enumerate() {
            for r in 0..LANES {
                a[r] += cols[k * LANES + r] * th[k];
            }
        }
    }
    let empty: f64 = std::iter::empty::<f64>().sum();
    let mut tail = [empty; LANES];
    for (col, th) in rest_cols.chunks_exact(LANES).zip(rest) {
        for r in 0..LANES {
            tail[r] += col[r] * th;
        }
    }
    for (r, o) in out[..LANES].iter_mut().enumerate() {
        *o = (acc[0][r] + acc[1][r]) + (acc[2][r] + acc[3][r]) + tail[r];
    }
}

/// ∇U(θ) into `out` ([`Potential::gradient`]'s loop, as a [`Kernel`]).
struct GradientPass<'a, 'b> {
    potential: &'a Potential<'b>,
    theta: &'a [f64],
    out: &'a mut [f64],
}

impl Kernel for GradientPass<'_, '_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let GradientPass {
            potential,
            theta,
            out,
        } = self;
        let p = theta.len();
        for (o, t) in out.iter_mut().zip(theta) {
            *o = potential.prior_precision * t;
        }
        let mut coef = [0.0; BLOCK_ROWS];
        let data = potential.data;
        let rows = data.features().chunks(p * BLOCK_ROWS);
        let groups = potential.interleaved.chunks(p * BLOCK_ROWS);
        for ((x, y), xg) in rows.zip(data.labels().chunks(BLOCK_ROWS)).zip(groups) {
            // Whole groups: the padding rows' margins land beyond y.len() and are not used.
            let groups = &mut coef[..y.len().div_ceil(LANES) * LANES];
            for (c, g) in groups.chunks_exact_mut(LANES).zip(xg.chunks_exact(p * LANES)) {
                margins(g, theta, c);
            }
            let coef = &mut coef[..y.len()];
            for (c, yi) in coef.iter_mut().zip(y) {
                *c = -potential.beta * yi * loss_slope(yi * *c);
            }
            add_weighted_rows(x, coef, out);
        }
    }
}

impl<'a> Potential<'a> {
    /// U on `data` with inverse temperature β and prior precision m_π (keeps an interleaved copy
    /// of the rows for the gradient pass: n·d more numbers for as long as the chain runs).
    pub(in crate::privacy::mechanism) fn new(
        data: &'a Dataset,
        beta: f64,
        prior_precision: f64,
    ) -> Self {
        Self {
            data,
            beta,
            prior_precision,
            interleaved: interleave(data),
        }
    }

    /// Writes ∇U(θ) = m_π θ − β Σᵢ yᵢ σ(−yᵢ⟨θ, xᵢ⟩) xᵢ into `out`, in one pass and no allocation.
    ///
    /// Rows go in blocks of [`BLOCK_ROWS`] through three stages, as in [`crate::learn::logistic`]: margins,
    /// then the branch-free slopes (a loop that vectorises), then Σ cᵢxᵢ.
    /// The pass is compiled for the widest SIMD the CPU has ([`vectorised`]; bit-identical).
    pub(in crate::privacy::mechanism) fn gradient(&self, theta: &[f64], out: &mut [f64]) {
        vectorised(GradientPass {
            potential: self,
            theta,
            out,
        })
    }

    /// argmin U, by Newton on U / (nβ) = (1/n)Σℓ + (λ/2β)||θ||².
    pub(super) fn mode(&self) -> Result<Vec<f64>, MechanismError> {
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
    pub(super) fn start_is_accurate(&self, start: &[f64], smoothness: f64) -> bool {
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
/// √(2h) on every Gibbs release path; tests pass other values to show the checks notice). Fails
/// with [`GibbsError::NonFinite`] when θ leaves the finite numbers.
pub(in crate::privacy::mechanism) fn run_chain(
    theta: &mut [f64],
    step_size: f64,
    noise_sd: f64,
    steps: u64,
    mut gradient: impl FnMut(&[f64], &mut [f64]),
    noise: &mut NoiseSource,
    stop: &Stop,
) -> Result<(), MechanismError> {
    let mut g = vec![0.0; theta.len()];
    for step in 0..steps {
        if step % 256 == 0 {
            stop.check()?;
        }
        gradient(theta, &mut g);
        for (t, gj) in theta.iter_mut().zip(&g) {
            let eta: f64 = noise.sample(StandardNormal);
            *t += noise_sd * eta - step_size * gj;
        }
    }
    if theta.iter().all(|t| t.is_finite()) {
        Ok(())
    } else {
        Err(GibbsError::NonFinite.into())
    }
}

/// One chain's public settings: the smoothness M of U (the initial law is N(start, M⁻¹ I)), the
/// step size h, the noise scale of each step (√(2h) on every release path; tests pass other
/// values to show the checks notice) and the number of steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Chain {
    pub(super) smoothness: f64,
    pub(super) step_size: f64,
    pub(super) noise_sd: f64,
    pub(super) steps: u64,
}

impl Chain {
    /// The chain of eq. (14) with noise √(2h).
    pub(super) fn langevin(smoothness: f64, step_size: f64, steps: u64) -> Self {
        Self {
            smoothness,
            step_size,
            noise_sd: (2.0 * step_size).sqrt(),
            steps,
        }
    }
}

/// Starts at `start` + N(0, M⁻¹ I) (Dalalyan's initial law) and runs the chain's steps.
pub(super) fn sample(
    potential: &Potential<'_>,
    start: &[f64],
    chain: Chain,
    noise: &mut NoiseSource,
    stop: &Stop,
) -> Result<Vec<f64>, MechanismError> {
    let sd0 = chain.smoothness.sqrt().recip();
    let mut theta: Vec<f64> = start
        .iter()
        .map(|s| {
            let z: f64 = noise.sample(StandardNormal);
            s + sd0 * z
        })
        .collect();
    run_chain(
        &mut theta,
        chain.step_size,
        chain.noise_sd,
        chain.steps,
        |t, g| potential.gradient(t, g),
        noise,
        stop,
    )?;
    Ok(theta)
}
