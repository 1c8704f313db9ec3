//! Releases of **synthetic rows** drawn from a multivariate normal fitted to a node's rows (issue
//! 14 item 3): Miura et al.'s (2022) mechanism as the paper analyses it ([`MvnPlain`]), and the
//! useful variant that perturbs the mean and second moment with the Gaussian mechanism first
//! ([`MvnGaussian`]).
//!
//! **Domain (Miura et al. 2022, §2.1).** Rows are points of [−1, 1]^D. [`to_unit_cube`] maps a row
//! of the public schema there: each raw value v of feature j is clipped to [lo_j, hi_j] and mapped
//! to (v − c_j)/r_j (c the centre, r the half-width of the bounds), and the label is one more
//! coordinate, ±1, last: D = d + 1, so the synthetic rows carry labels. [`from_unit_cube`] is the
//! public inverse a consumer applies (the label is the sign of the last coordinate).
//!
//! # [`MvnPlain`]: Miura et al.'s (2022) M_G, no added noise
//!
//! The empirical mean μ = (1/n)Σxᵢ and covariance Σ = (1/n)Σxᵢxᵢᵀ − μμᵀ, m rows drawn from
//! N(μ, Σ), each clipped to the cube (§2.3; post-processing). Its guarantee is Miura et al.'s
//! (2022)
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
//! leave the assumption, and releases only if k̂ + Z ≥ T, with Z ~ Lap_ℤ(1/ε₀) the **discrete**
//! Laplace (Canonne, Kamath & Steinke 2020, Algorithm 2, sampled exactly:
//! [`crate::privacy::discrete::DiscreteLaplace::with_epsilon`]) and the integer threshold
//! T = 1 + ⌈ln(2/(δ(1 + e^{−ε₀})))/ε₀⌉ ([`MvnPlain::threshold`]); otherwise it refuses, and the
//! refusal is an ε₀-DP output (its charge stands).
//!
//! - **Δ_λ** (replace-one, rows in [−1, 1]^D): replacing x by x′ moves (1/n)Σxxᵀ by
//!   (x′x′ᵀ − xxᵀ)/n, of operator norm ≤ max(‖x‖², ‖x′‖²)/n ≤ D/n, and μμᵀ by
//!   (μvᵀ + vμᵀ)/n + vvᵀ/n² with v = x′ − x, of norm ≤ 2‖μ‖‖v‖/n + ‖v‖²/n² ≤ 4D/n + 4D/n². By
//!   Weyl's inequality λ_min moves by at most **Δ_λ = D(5n + 4)/n²** (tested), so k̂ has
//!   sensitivity 1.
//! - **Privacy.** If both neighbours satisfy the assumption, the test is ε₀-DP — k̂ is an integer
//!   of sensitivity 1 and Lap_ℤ(t) with t = 1/ε₀ exactly is (1/t)-DP for it (the discrete
//!   Laplace mechanism) — and the rows are (ε_M, δ/2)-DP: (ε₀ + ε_M, δ/2) by composition. If one
//!   does not, λ_min of the other is below σ + Δ_λ, so its k̂ ≤ 0 (and the violating one's
//!   k̂ < 0), and each passes with probability at most P(Z ≥ T − 1) = r^{T−1}/(1 + r) with
//!   r = e^{−ε₀}, which is ≤ δ₀ = δ/2 exactly when T − 1 ≥ ln(2/(δ(1 + r)))/ε₀ — the choice of T
//!   (computed in f64 with an additive margin of 2^{−30} before the ceiling, far above its
//!   rounding error): the outputs differ by the ε₀-DP refusal and a δ₀ event. (The continuous
//!   Laplace's tail ½e^{−ε₀k} would allow a threshold smaller by about ln 2/ε₀; the discrete
//!   tail is up to twice as heavy at large ε₀, and T pays for it.) The release is
//!   **(ε₀ + ε_M, δ)-DP under replace-one**, δ₀ = δ/2. The 1 in T is a margin against the
//!   floating-point error of the computed λ_min (far below Δ_λ, it moves k̂ by at most one). This
//!   guarantee has no RDP curve (the test is a (ε₀, δ₀) step), so the ledger composes it with
//!   basic composition; the MVN part alone is the curve above.
//! - **What a refusal reveals:** one bit, whether the noisy distance passed — covered by ε₀.
//!   When the theorem gives no bound at all (every order at or beyond its limit n²/(τ(n − 1)),
//!   τ = 4D/σ) the plan is refused before any data is read ([`MvnReleaseError::NoBound`]), which
//!   depends on n, D, σ and m only.
//!
//! **Utility of the guarantee.** Miura et al. 2022, Table 1: ε ≈ 3,535 at n = 10⁴. For any
//! organisation a node serves the number is far over a sane per-release cap, and the node's policy
//! refuses it with that number in the message; [`MvnGaussian`] is the release to use.
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
//!   (ε, δ) ([`calibrate_sigma`], q = 1), each block b gets the Gaussian mechanism with standard
//!   deviation σ_b = √2·z·Δ_b: two mechanisms of RDP α·Δ_b²/(2σ_b²) = α/(4z²) each, α/(2z²)
//!   together (Mironov 2017, Proposition 7 and composition) — the curve the ledger composes,
//!   **(ε, δ)-DP under replace-one**. Each block is released exactly, without a floating-point
//!   leak, by [`GridGaussian`] (values clamped to [−1, 1], which they are in: rounded to a public
//!   power-of-two grid g_b, independent discrete Gaussians of Canonne, Kamath & Steinke 2020,
//!   Algorithm 3, inflated to (σ_b/Δ_b)(Δ_b/g_b + √d_b) cells, d_b the block's length, which
//!   keeps α·Δ_b²/(2σ_b²) exactly; [`crate::privacy::discrete::grid`] has the argument). The
//!   **m synthetic rows** drawn afterwards from the noisy normal are post-processing for privacy,
//!   and are sampled with f64 Gaussian draws (`sample_rows`): they are a function of the noisy
//!   moments and fresh randomness only, so whatever their low bits reveal is about the noisy
//!   moments, which are already private. (In [`MvnPlain`] the f64 rows *are* the mechanism —
//!   there is no other noise — and remain exposed to the floating-point attack.)
//!
//! **Assumptions.** n is public (replace-one) and the rows given are the n the plan was made
//! for; every coordinate is in [−1, 1] ([`to_unit_cube`] guarantees it; anything else is refused).

use super::mvn_rdp::{MvnRdp, MvnRdpError, NRegime};
use crate::data::schema::FeatureSpec;
use crate::privacy::accounting::{AccountingError, RdpCurve, calibrate_sigma, dp_sgd_curve};
use crate::privacy::discrete::{DiscreteError, DiscreteLaplace, GridGaussian};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::{InputError, check_features, check_rows, to_unit};
use crate::util::num::Num;
use nalgebra::{DMatrix, DVector};
use normal::{empirical, first_and_second_moments, sample_rows};

mod normal;

/// Why a synthetic release cannot be planned or made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MvnReleaseError {
    /// The schema or the rows.
    #[error(transparent)]
    Input(#[from] InputError),
    /// Miura et al.'s (2022) analysis refused its parameters.
    #[error("Miura et al. 2022: {0}")]
    Rdp(#[from] MvnRdpError),
    /// The accountant refused.
    #[error("accounting: {0}")]
    Accounting(#[from] AccountingError),
    /// The exact discrete noise refused its parameters.
    #[error("discrete noise: {0}")]
    Discrete(#[from] DiscreteError),
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
        "Miura et al. 2022, Theorem 3.2 gives no bound for n = {n} rows in D = {dim} dimensions with σ = {}: it holds only for orders α < n²/(τ(n − 1)) = {} (τ = 4D/σ), and no order the ledger uses is in (1, {}); the release needs more rows or a larger σ",
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
        "the private test of Miura et al.'s (2022) assumption (smallest covariance eigenvalue ≥ σ) did not pass"
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

/// Δ_μ = 2√D/n and Δ_M = √(D² + D/2)/n for n points of [−1, 1]^D (module docs).
fn gaussian_sensitivities(n: u64, dim: usize) -> (f64, f64) {
    let (d, n) = (dim as f64, n as f64);
    (2.0 * d.sqrt() / n, (d * d + d / 2.0).sqrt() / n)
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

/// Miura et al.'s (2022) release: m rows from N(μ, Σ) with no added noise, behind a
/// propose-test-release of its eigenvalue assumption (module docs).
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

    /// Miura et al.'s (2022) analysis behind the guarantee.
    pub fn analysis(&self) -> &MvnRdp {
        &self.rdp
    }

    /// Δ_λ of this plan's n and D ([`eigen_sensitivity`]).
    pub fn eigen_sensitivity(&self) -> f64 {
        eigen_sensitivity(self.n, self.dim)
    }

    /// T = 1 + ⌈ln(2/(δ(1 + e^{−ε₀})))/ε₀⌉, an integer: with Z ~ Lap_ℤ(1/ε₀),
    /// P(Z ≥ T − 1) ≤ δ₀ = δ/2 (module docs; computed with an additive margin of 2^{−30}).
    pub fn threshold(&self) -> f64 {
        let e0 = self.params.test_epsilon;
        let tail = (2.0 / (self.params.delta * (1.0 + (-e0).exp()))).ln() / e0;
        1.0 + (tail + 2f64.powi(-30) * (1.0 + tail.abs())).ceil()
    }

    /// k̂ = ⌊(λ_min − σ)/Δ_λ⌋ of the points (module docs).
    pub fn distance(&self, points: &[Vec<f64>]) -> Result<f64, MvnReleaseError> {
        check_points(points, self.n, self.dim)?;
        let (_, cov) = empirical(points, self.dim);
        let lambda_min = cov.symmetric_eigenvalues().min();
        Ok(((lambda_min - self.params.sigma) / self.eigen_sensitivity()).floor())
    }

    /// k̂ + Z with Z ~ Lap_ℤ(1/ε₀), exactly (an integer; k̂ is clamped to ±2^62, which
    /// keeps its sensitivity 1).
    fn noisy_distance(
        &self,
        distance: f64,
        rng: &mut NoiseSource,
    ) -> Result<i128, MvnReleaseError> {
        let law = DiscreteLaplace::with_epsilon(self.params.test_epsilon)?;
        let limit = 2f64.powi(62);
        Ok((distance.clamp(-limit, limit) as i128).saturating_add(law.sample(rng)))
    }

    /// Tests the assumption privately and, if it passes, draws the m rows.
    pub fn release(
        &self,
        points: &[Vec<f64>],
        rng: &mut NoiseSource,
    ) -> Result<SyntheticRows, MvnReleaseError> {
        let distance = self.distance(points)?;
        // A NaN statistic (impossible for checked points) is refused before any noise.
        if distance.is_nan() {
            return Err(MvnReleaseError::TestFailed);
        }
        // T is an integer; compared exactly (a T above 2^120 cannot be reached).
        let threshold = self.threshold();
        let noisy = self.noisy_distance(distance, rng)?;
        let passes = threshold <= 2f64.powi(120) && noisy >= threshold as i128;
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
    /// The grid releases of μ and triu(M).
    grids: [GridGaussian; 2],
}

/// The grid releases of μ (Δ_μ, D coordinates) and triu(M) (Δ_M, D(D + 1)/2 coordinates) with
/// standard deviations √2·z·Δ_b, every value in [−1, 1] (module docs, "Noise").
fn block_grids(
    sensitivities: (f64, f64),
    dim: usize,
    multiplier: f64,
) -> Result<[GridGaussian; 2], MvnReleaseError> {
    let k = std::f64::consts::SQRT_2 * multiplier;
    let (dm, ds) = sensitivities;
    Ok([
        GridGaussian::new(k * dm, dm, dim, 1.0)?,
        GridGaussian::new(k * ds, ds, dim * (dim + 1) / 2, 1.0)?,
    ])
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
        let dim = features + 1;
        Ok(Self {
            n,
            dim,
            params,
            multiplier,
            curve: dp_sgd_curve(1.0, multiplier, 1)?,
            grids: block_grids(gaussian_sensitivities(n, dim), dim, multiplier)?,
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
        gaussian_sensitivities(self.n, self.dim)
    }

    /// The grid releases of μ and of triu(M) (module docs, "Noise").
    pub fn grids(&self) -> &[GridGaussian; 2] {
        &self.grids
    }

    /// The standard deviations σ_b = √2·z·Δ_b of the Gaussian mechanisms of the mean and the
    /// second moment (the discrete noise on the grids has standard deviation at most
    /// σ_b·(1 + 2^{−20}) and the curve of σ_b).
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

    /// μ and triu(M) released on their grids with exact discrete Gaussian noise (module docs).
    pub fn perturb(
        &self,
        exact: &(Vec<f64>, Vec<f64>),
        rng: &mut NoiseSource,
    ) -> Result<(Vec<f64>, Vec<f64>), MvnReleaseError> {
        let mean = self.grids[0].release(&exact.0, rng)?;
        let second = self.grids[1].release(&exact.1, rng)?;
        Ok((mean, second))
    }

    /// Draws the m rows from the noisy normal.
    pub fn release(
        &self,
        points: &[Vec<f64>],
        rng: &mut NoiseSource,
    ) -> Result<SyntheticRows, MvnReleaseError> {
        let (mean, triu) = self.perturb(&self.exact(points)?, rng)?;
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
        p.grids = block_grids(p.sensitivities(), p.dim, p.multiplier).expect("valid");
        p
    }
}

#[cfg(test)]
mod tests;
