//! Releases of **synthetic rows** drawn from a multivariate normal fitted to a node's rows (issue
//! 14 item 3): seed 003's mechanism as the paper analyses it ([`MvnPlain`]), and the useful variant
//! that perturbs the mean and second moment with the Gaussian mechanism first ([`MvnGaussian`]).
//!
//! **Domain (seed 003 §2.1).** Rows are points of [−1, 1]^D. [`to_unit_cube`] maps a row of the
//! public schema there: each raw value v of feature j is clipped to [lo_j, hi_j] and mapped to
//! (v − c_j)/r_j (c the centre, r the half-width of the bounds), and the label is one more
//! coordinate, ±1, last: D = d + 1, so the synthetic rows carry labels. [`from_unit_cube`] is the
//! public inverse a consumer applies (the label is the sign of the last coordinate).
//!
//! # [`MvnPlain`]: seed 003's M_G, no added noise
//!
//! The empirical mean μ = (1/n)Σxᵢ and covariance Σ = (1/n)Σxᵢxᵢᵀ − μμᵀ, m rows drawn from
//! N(μ, Σ), each clipped to the cube (§2.3; post-processing). Its guarantee is seed 003's
//! **Theorem 3.2** (n public, replace-one — the node's relation; n is in every release) for one
//! row, composed over the m rows by **Proposition 2.4** (m·ε_α) as an RDP curve over the
//! accountant's orders ([`super::mvn_rdp::MvnRdp::default_curve`]), converted to (ε_M, δ/2)
//! ([`RdpCurve::epsilon`], tighter than Proposition 2.5).
//!
//! **The eigenvalue assumption (§3.1).** Theorem 3.2 holds only for datasets whose covariance has
//! smallest eigenvalue λ_min ≥ σ, a public constant. A node cannot simply check λ_min ≥ σ and
//! refuse otherwise: the refusal itself would reveal whether λ_min crossed σ — a function of the
//! data with no noise. So the node **proposes, tests, releases** (Dwork & Lei 2009, STOC, §3): it
//! computes k̂ = ⌊(λ_min − σ)/Δ_λ⌋, a lower bound on the number of rows that must be replaced to
//! leave the assumption, and releases only if k̂ + Lap(1/ε₀) > t = 1 + ln(1/(2δ₀))/ε₀; otherwise
//! it refuses, and the refusal is an ε₀-DP output (its charge stands).
//!
//! - **Δ_λ** (replace-one, rows in [−1, 1]^D): replacing x by x′ moves (1/n)Σxxᵀ by
//!   (x′x′ᵀ − xxᵀ)/n, of operator norm ≤ max(‖x‖², ‖x′‖²)/n ≤ D/n, and μμᵀ by
//!   (μvᵀ + vμᵀ)/n + vvᵀ/n² with v = x′ − x, of norm ≤ 2‖μ‖‖v‖/n + ‖v‖²/n² ≤ 4D/n + 4D/n². By
//!   Weyl's inequality λ_min moves by at most **Δ_λ = D(5n + 4)/n²** (tested), so k̂ has
//!   sensitivity 1.
//! - **Privacy.** If both neighbours satisfy the assumption, the test is ε₀-DP and the rows are
//!   (ε_M, δ/2)-DP: (ε₀ + ε_M, δ/2) by composition. If one does not, λ_min of the other is below
//!   σ + Δ_λ, so its k̂ ≤ 0 (and the violating one's k̂ < 0), and each passes with probability at
//!   most ½·exp(−ε₀(t − 0)) ≤ δ₀ = δ/2: the outputs differ by the ε₀-DP refusal and a δ₀ event.
//!   The release is **(ε₀ + ε_M, δ)-DP under replace-one**, δ₀ = δ/2. The 1 in t is a margin
//!   against the floating-point error of the computed λ_min (far below Δ_λ, it moves k̂ by at most
//!   one). This guarantee has no RDP curve (the test is a (ε₀, δ₀) step), so the ledger composes
//!   it with basic composition; the MVN part alone is the curve above.
//! - **What a refusal reveals:** one bit, whether the noisy distance passed — covered by ε₀.
//!   When the theorem gives no bound at all (every order at or beyond its limit n²/(τ(n − 1)),
//!   τ = 4D/σ) the plan is refused before any data is read ([`MvnReleaseError::NoBound`]), which
//!   depends on n, D, σ and m only.
//!
//! **Utility of the guarantee.** Seed 003 Table 1: ε ≈ 3,535 at n = 10⁴. For any organisation a
//! node serves the number is far over a sane per-release cap, and the node's policy refuses it
//! with that number in the message; [`MvnGaussian`] is the release to use.
//!
//! # [`MvnGaussian`]: Gaussian-perturbed moments, then sampling
//!
//! The mean μ and the second moment M = (1/n)Σxxᵀ (its upper triangle with the diagonal) each get
//! Gaussian noise; Σ̃ = M̃ − μ̃μ̃ᵀ (μ̃ clamped to the cube) with its eigenvalues floored at a public
//! `eigen_floor` (so that it is a covariance); m rows are drawn from N(μ̃, Σ̃) and clipped to the
//! cube. Everything after the noise is post-processing.
//!
//! - **Sensitivities** (replace-one, ℓ₂): μ moves by (x′ − x)/n: **Δ_μ = 2√D/n**. For
//!   S = x′x′ᵀ − xxᵀ, ‖triu(S)‖² = (‖S‖_F² + Σᵢ Sᵢᵢ²)/2 with ‖S‖_F² = ‖x‖⁴ + ‖x′‖⁴ − 2(xᵀx′)² ≤
//!   2D² and |Sᵢᵢ| ≤ 1, so **Δ_M = √(D² + D/2)/n** (both tested with worst-case and random
//!   replacements).
//! - **Noise.** With z the noise multiplier the accountant calibrates for one Gaussian step at
//!   (ε, δ) ([`calibrate_sigma`], q = 1), each block gets standard deviation √2·z·Δ_b: two
//!   Gaussian mechanisms of RDP α/(4z²) each, α/(2z²) together (Mironov 2017, Proposition 7 and
//!   composition) — the curve the ledger composes, **(ε, δ)-DP under replace-one**. The draws are
//!   f64 Gaussian samples, not snapped (ARCHITECTURE.md, floating point).
//!
//! **Assumptions.** n is public (replace-one) and the rows given are the n the plan was made
//! for; every coordinate is in [−1, 1] ([`to_unit_cube`] guarantees it; anything else is refused).

use super::mvn_rdp::{MvnRdp, MvnRdpError, NRegime};
use crate::data::schema::FeatureSpec;
use crate::privacy::accounting::{AccountingError, RdpCurve, calibrate_sigma, dp_sgd_curve};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::laplace_f64;
use crate::privacy::statistics::{InputError, check_features, check_rows, to_unit};
use crate::util::num::Num;
use nalgebra::{DMatrix, DVector};
use rand::RngExt;
use rand_distr::StandardNormal;

/// Why a synthetic release cannot be planned or made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MvnReleaseError {
    /// The schema or the rows.
    #[error(transparent)]
    Input(#[from] InputError),
    /// Seed 003's analysis refused its parameters.
    #[error("seed 003: {0}")]
    Rdp(#[from] MvnRdpError),
    /// The accountant refused.
    #[error("accounting: {0}")]
    Accounting(#[from] AccountingError),
    /// A parameter is out of range.
    #[error("invalid {name} = {}: {needs}", Num(*.value))]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        needs: &'static str,
    },
    /// Theorem 3.2 gives no bound at any of the accountant's orders.
    #[error(
        "seed 003 Theorem 3.2 gives no bound for n = {n} rows in D = {dim} dimensions with σ = {}: it holds only for orders α < n²/(τ(n − 1)) = {} (τ = 4D/σ), and no order the ledger uses is in (1, {}); the release needs more rows or a larger σ",
        Num(*.sigma), Num(*.limit), Num(*.limit)
    )]
    NoBound {
        /// n.
        n: u64,
        /// D = d + 1.
        dim: usize,
        /// σ.
        sigma: f64,
        /// The order limit.
        limit: f64,
    },
    /// The rows are not the n points of [−1, 1]^D the plan was made for.
    #[error("expected {expected} points of {dim} coordinates in [−1, 1], {problem}")]
    Points {
        /// n.
        expected: u64,
        /// D.
        dim: usize,
        /// What is wrong (a count or a position; never a value).
        problem: String,
    },
    /// The propose-test-release test did not pass (its ε₀ is spent).
    #[error(
        "the private test of seed 003's assumption (smallest covariance eigenvalue ≥ σ) did not pass"
    )]
    TestFailed,
}

/// Maps rows of raw values (schema order) with labels to points of [−1, 1]^(d+1): each value
/// clipped to its bounds and scaled, the label ±1 last (module docs).
pub fn to_unit_cube(
    features: &[FeatureSpec],
    rows: &[Vec<f64>],
    positive: &[bool],
) -> Result<Vec<Vec<f64>>, MvnReleaseError> {
    check_features(features)?;
    check_rows(rows, positive, features.len(), usize::MAX)?;
    Ok(rows
        .iter()
        .zip(positive)
        .map(|(row, &label)| {
            let mut point: Vec<f64> = features
                .iter()
                .zip(row)
                .map(|(f, &v)| to_unit(f, v))
                .collect();
            point.push(if label { 1.0 } else { -1.0 });
            point
        })
        .collect())
}

/// The public inverse of [`to_unit_cube`] for a synthetic point: raw values c_j + r_j·clamp(p_j,
/// −1, 1) (so within the bounds) and the label `p_d > 0`. Coordinates beyond the schema are
/// ignored; a missing label coordinate reads as negative.
pub fn from_unit_cube(features: &[FeatureSpec], point: &[f64]) -> (Vec<f64>, bool) {
    let raw = features
        .iter()
        .zip(point)
        .map(|(f, &p)| {
            let (c, r) = (f.lo / 2.0 + f.hi / 2.0, f.hi / 2.0 - f.lo / 2.0);
            let p = if p.is_nan() { 0.0 } else { p.clamp(-1.0, 1.0) };
            (c + r * p).clamp(f.lo, f.hi)
        })
        .collect();
    let positive = point.get(features.len()).is_some_and(|&l| l > 0.0);
    (raw, positive)
}

/// Synthetic rows in [−1, 1]^dim, row-major, with their guarantee.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticRows {
    /// D = d + 1 (the label last).
    pub dim: usize,
    /// m.
    pub rows: usize,
    /// m·D values.
    pub values: Vec<f64>,
    /// The release's guarantee.
    pub guarantee: PrivacyGuarantee,
}

fn invalid(name: &'static str, value: f64, needs: &'static str) -> MvnReleaseError {
    MvnReleaseError::InvalidParameter { name, value, needs }
}

fn check_rows_option(rows: usize) -> Result<(), MvnReleaseError> {
    if rows == 0 {
        return Err(invalid("rows", 0.0, "at least 1 synthetic row"));
    }
    Ok(())
}

fn check_delta(delta: f64) -> Result<(), MvnReleaseError> {
    if !(delta > 0.0 && delta < 1.0) {
        return Err(invalid("delta", delta, "must be in (0, 1)"));
    }
    Ok(())
}

fn check_epsilon(name: &'static str, epsilon: f64) -> Result<(), MvnReleaseError> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(invalid(name, epsilon, "must be a finite number > 0"));
    }
    Ok(())
}

/// Checks that `points` are `n` points of [−1, 1]^dim.
fn check_points(points: &[Vec<f64>], n: u64, dim: usize) -> Result<(), MvnReleaseError> {
    let error = |problem: String| MvnReleaseError::Points {
        expected: n,
        dim,
        problem,
    };
    if points.len() as u64 != n {
        return Err(error(format!("got {}", points.len())));
    }
    for (i, p) in points.iter().enumerate() {
        if p.len() != dim {
            return Err(error(format!("point {i} has {} coordinates", p.len())));
        }
        if let Some(j) = p.iter().position(|v| !(-1.0..=1.0).contains(v)) {
            return Err(error(format!(
                "point {i}, coordinate {j} is outside [−1, 1]"
            )));
        }
    }
    Ok(())
}

/// (1/n)Σx and (1/n)Σxxᵀ of non-empty points.
fn first_and_second_moments(points: &[Vec<f64>], dim: usize) -> (DVector<f64>, DMatrix<f64>) {
    let n = points.len() as f64;
    let mut mean = DVector::zeros(dim);
    let mut second = DMatrix::zeros(dim, dim);
    for p in points {
        let x = DVector::from_column_slice(p);
        mean += &x;
        second.syger(1.0, &x, &x, 1.0);
    }
    second.fill_upper_triangle_with_lower_triangle();
    (mean / n, second / n)
}

/// Seed 003's empirical covariance (1/n)Σxxᵀ − μμᵀ, with μ.
fn empirical(points: &[Vec<f64>], dim: usize) -> (DVector<f64>, DMatrix<f64>) {
    let (mean, second) = first_and_second_moments(points, dim);
    let cov = second - &mean * mean.transpose();
    (mean, cov)
}

/// m rows of N(mean, V diag(λ) Vᵀ) with λ floored at `floor`, each clipped to [−1, 1].
fn sample_rows(
    mean: &DVector<f64>,
    cov: DMatrix<f64>,
    floor: f64,
    m: usize,
    rng: &mut NoiseSource,
) -> Vec<f64> {
    let dim = mean.len();
    let eigen = cov.symmetric_eigen();
    let roots = eigen.eigenvalues.map(|l| l.max(floor).sqrt());
    let factor = &eigen.eigenvectors * DMatrix::from_diagonal(&roots);
    let mut values = Vec::with_capacity(m * dim);
    for _ in 0..m {
        let z = DVector::from_fn(dim, |_, _| rng.sample::<f64, _>(StandardNormal));
        let x = mean + &factor * z;
        values.extend(x.iter().map(|v| v.clamp(-1.0, 1.0)));
    }
    values
}

/// Δ_λ = D(5n + 4)/n²: how far replacing one of n points of [−1, 1]^D moves the smallest
/// eigenvalue of their covariance (module docs).
pub fn eigen_sensitivity(n: u64, dim: usize) -> f64 {
    let (d, n) = (dim as f64, n as f64);
    d * (5.0 * n + 4.0) / (n * n)
}

/// Parameters of [`MvnPlain`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MvnPlainParams {
    /// m, the synthetic rows released.
    pub rows: usize,
    /// σ, the public lower bound on the covariance's smallest eigenvalue (in (0, 1]).
    pub sigma: f64,
    /// Total δ: half to the rows' conversion, half to the test.
    pub delta: f64,
    /// ε₀ of the propose-test-release test.
    pub test_epsilon: f64,
}

/// Seed 003's release: m rows from N(μ, Σ) with no added noise, behind a propose-test-release of
/// its eigenvalue assumption (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct MvnPlain {
    n: u64,
    dim: usize,
    params: MvnPlainParams,
    rdp: MvnRdp,
    mvn_epsilon: f64,
}

impl MvnPlain {
    /// Plans the release of `params.rows` rows from `n` rows of `features` features (D =
    /// features + 1). Refused, from public quantities only, when Theorem 3.2 gives no bound.
    pub fn new(n: u64, features: usize, params: MvnPlainParams) -> Result<Self, MvnReleaseError> {
        check_rows_option(params.rows)?;
        check_delta(params.delta)?;
        check_epsilon("test_epsilon", params.test_epsilon)?;
        let dim = features + 1;
        let rdp = MvnRdp::new(n, dim, params.sigma, params.rows as u64, NRegime::Public)?;
        let mvn_epsilon = rdp.default_curve()?.epsilon(params.delta / 2.0)?.epsilon;
        if !mvn_epsilon.is_finite() {
            return Err(MvnReleaseError::NoBound {
                n,
                dim,
                sigma: params.sigma,
                limit: rdp.order_limit(),
            });
        }
        Ok(Self {
            n,
            dim,
            params,
            rdp,
            mvn_epsilon,
        })
    }

    /// (ε₀ + ε_M, δ) under replace-one (module docs).
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(
            self.params.test_epsilon + self.mvn_epsilon,
            self.params.delta,
        )
    }

    /// ε_M: Theorem 3.2 over the m rows, converted at δ/2.
    pub fn mvn_epsilon(&self) -> f64 {
        self.mvn_epsilon
    }

    /// Seed 003's analysis behind the guarantee.
    pub fn analysis(&self) -> &MvnRdp {
        &self.rdp
    }

    /// Δ_λ of this plan's n and D ([`eigen_sensitivity`]).
    pub fn eigen_sensitivity(&self) -> f64 {
        eigen_sensitivity(self.n, self.dim)
    }

    /// t = 1 + ln(1/(2δ₀))/ε₀ with δ₀ = δ/2.
    pub fn threshold(&self) -> f64 {
        1.0 + (1.0 / self.params.delta).ln() / self.params.test_epsilon
    }

    /// k̂ = ⌊(λ_min − σ)/Δ_λ⌋ of the points (module docs).
    pub fn distance(&self, points: &[Vec<f64>]) -> Result<f64, MvnReleaseError> {
        check_points(points, self.n, self.dim)?;
        let (_, cov) = empirical(points, self.dim);
        let lambda_min = cov.symmetric_eigenvalues().min();
        Ok(((lambda_min - self.params.sigma) / self.eigen_sensitivity()).floor())
    }

    /// k̂ + Lap(1/ε₀): the test's noisy statistic.
    fn noisy_distance(&self, distance: f64, rng: &mut NoiseSource) -> f64 {
        distance + laplace_f64(1.0 / self.params.test_epsilon, rng)
    }

    /// Tests the assumption privately and, if it passes, draws the m rows.
    pub fn release(
        &self,
        points: &[Vec<f64>],
        rng: &mut NoiseSource,
    ) -> Result<SyntheticRows, MvnReleaseError> {
        let distance = self.distance(points)?;
        // A NaN statistic (impossible for checked points) fails the test.
        let passes = self.noisy_distance(distance, rng) > self.threshold();
        if !passes {
            return Err(MvnReleaseError::TestFailed);
        }
        let (mean, cov) = empirical(points, self.dim);
        Ok(SyntheticRows {
            dim: self.dim,
            rows: self.params.rows,
            values: sample_rows(&mean, cov, 0.0, self.params.rows, rng),
            guarantee: self.guarantee(),
        })
    }
}

/// Parameters of [`MvnGaussian`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MvnGaussianParams {
    /// m, the synthetic rows released.
    pub rows: usize,
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// Public floor of the noisy covariance's eigenvalues, in (0, 1].
    pub eigen_floor: f64,
}

/// Synthetic rows from a Gaussian-perturbed mean and second moment (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct MvnGaussian {
    n: u64,
    dim: usize,
    params: MvnGaussianParams,
    multiplier: f64,
    curve: RdpCurve,
}

impl MvnGaussian {
    /// Plans the release of `params.rows` rows from `n` rows of `features` features.
    pub fn new(
        n: u64,
        features: usize,
        params: MvnGaussianParams,
    ) -> Result<Self, MvnReleaseError> {
        check_rows_option(params.rows)?;
        check_delta(params.delta)?;
        check_epsilon("epsilon", params.epsilon)?;
        if !(params.eigen_floor > 0.0 && params.eigen_floor <= 1.0) {
            return Err(invalid(
                "eigen_floor",
                params.eigen_floor,
                "must be in (0, 1]",
            ));
        }
        if n == 0 {
            return Err(invalid("n", 0.0, "at least one row"));
        }
        let multiplier = calibrate_sigma(1.0, 1, params.epsilon, params.delta)?;
        Ok(Self {
            n,
            dim: features + 1,
            params,
            multiplier,
            curve: dp_sgd_curve(1.0, multiplier, 1)?,
        })
    }

    /// (ε, δ) under replace-one.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.params.epsilon, self.params.delta)
    }

    /// α/(2z²), replace-one.
    pub fn rdp(&self) -> Option<RdpCurve> {
        Some(self.curve.clone())
    }

    /// Δ_μ = 2√D/n and Δ_M = √(D² + D/2)/n (module docs).
    pub fn sensitivities(&self) -> (f64, f64) {
        let (d, n) = (self.dim as f64, self.n as f64);
        (2.0 * d.sqrt() / n, (d * d + d / 2.0).sqrt() / n)
    }

    /// The standard deviations of the mean's and the second moment's noise: √2·z·Δ.
    pub fn noise_stds(&self) -> (f64, f64) {
        let (dm, ds) = self.sensitivities();
        let k = std::f64::consts::SQRT_2 * self.multiplier;
        (k * dm, k * ds)
    }

    /// The exact μ and triu(M) (row-major upper triangle with the diagonal) of the points.
    pub fn exact(&self, points: &[Vec<f64>]) -> Result<(Vec<f64>, Vec<f64>), MvnReleaseError> {
        check_points(points, self.n, self.dim)?;
        let (mean, second) = first_and_second_moments(points, self.dim);
        let mut triu = Vec::with_capacity(self.dim * (self.dim + 1) / 2);
        for i in 0..self.dim {
            for j in i..self.dim {
                triu.push(second[(i, j)]);
            }
        }
        Ok((mean.iter().copied().collect(), triu))
    }

    /// μ and triu(M) with their Gaussian noise.
    pub fn perturb(
        &self,
        exact: &(Vec<f64>, Vec<f64>),
        rng: &mut NoiseSource,
    ) -> (Vec<f64>, Vec<f64>) {
        let (sm, ss) = self.noise_stds();
        let mut noisy = |values: &[f64], std: f64| -> Vec<f64> {
            values
                .iter()
                .map(|v| v + std * rng.sample::<f64, _>(StandardNormal))
                .collect()
        };
        let mean = noisy(&exact.0, sm);
        let second = noisy(&exact.1, ss);
        (mean, second)
    }

    /// Draws the m rows from the noisy normal.
    pub fn release(
        &self,
        points: &[Vec<f64>],
        rng: &mut NoiseSource,
    ) -> Result<SyntheticRows, MvnReleaseError> {
        let (mean, triu) = self.perturb(&self.exact(points)?, rng);
        let dim = self.dim;
        let mean = DVector::from_iterator(dim, mean.into_iter().map(|v| v.clamp(-1.0, 1.0)));
        let mut second = DMatrix::zeros(dim, dim);
        let mut at = 0;
        for i in 0..dim {
            for j in i..dim {
                second[(i, j)] = triu[at];
                second[(j, i)] = triu[at];
                at += 1;
            }
        }
        let cov = second - &mean * mean.transpose();
        Ok(SyntheticRows {
            dim,
            rows: self.params.rows,
            values: sample_rows(&mean, cov, self.params.eigen_floor, self.params.rows, rng),
            guarantee: self.guarantee(),
        })
    }

    /// The same plan with half the noise: the mutant the statistical tests must catch.
    #[cfg(test)]
    fn halved(&self) -> Self {
        let mut p = self.clone();
        p.multiplier /= 2.0;
        p
    }
}

#[cfg(test)]
mod tests;
