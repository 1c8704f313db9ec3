//! Rényi DP of synthetic rows drawn from the normal distribution fitted to the data (Miura et al.
//! 2022).
//!
//! **Paper.** Miura, Kii, Shibahara, Ichikawa, Yamamoto & Chida, 「合成データ生成のランダム性が持つ
//! Rényi 差分プライバシー性の評価」 ("On Rényi Differential Privacy in Synthetic Data Generation"),
//! Miura et al. 2022 (`/work/shared/seeds/003_9edefac4076e83ab.txt`). The paper numbers no
//! displayed equation; formulas are cited by their theorem, proposition or lemma and by the name of
//! the term.
//!
//! **Mechanism M_G (§2.3).** The data are n rows x₁, …, xₙ ∈ [−1, 1]^d (§2.1). The mechanism
//! computes the empirical mean μ = (1/n) Σ xᵢ and covariance Σ = (1/n) Σ xᵢ xᵢᵀ − μ μᵀ, draws a row
//! from N(μ, Σ) and clips it to [−1, 1]^d (post-processing). Nothing else is added: the only
//! randomness is the sampling. Releasing m rows is m draws (Proposition 2.4).
//!
//! **Assumption (§3.1).** Every dataset considered lies in D_σ: the smallest eigenvalue of its
//! covariance is at least a public σ > 0; τ := 4d/σ. Two consequences are enforced here because
//! otherwise D_σ is empty and a bound over it says nothing about any data:
//! - σ ≤ 1: each diagonal entry of Σ is the variance of values in [−1, 1], at most 1, and the
//!   smallest eigenvalue is at most any diagonal entry;
//! - n ≥ d + 1: the covariance of n rows has rank at most n − 1, so it is singular when n ≤ d.
//!
//! With σ ≤ 1, τ ≥ 4d ≥ 4, so Theorem 3.1's first condition n/(n + 1) < τ always holds. The range
//! of orders either theorem allows is empty (its limit is ≤ 1) unless n exceeds about τ.
//!
//! **Neighbours (Definition 2.1).**
//! - *n private* (秘匿 n 条件): add/remove-one. [`theorem_3_1`] bounds the Rényi divergence between
//!   the release on a dataset of n rows and on one of n + 1 rows, in both directions: ε_α1 from the
//!   n-row side (Lemmas 4.2–4.5 with s = +1), ε_α2 from the (n + 1)-row side (s = −1 with n → n + 1,
//!   footnote 6); conditions α > 1 and α < min{n + 1, n²/(τ(n + 1) − n)}.
//! - *n public* (公開 n 条件): replace-one. [`theorem_3_2`], condition 1 < α < n²/(τ(n − 1)).
//!
//! **Which n.** Tables 1–2 put the dataset's size as the theorem's n, which covers that dataset
//! against its (n + 1)-row neighbours. Under add/remove-one a dataset of n rows also has (n − 1)-row
//! neighbours (one of its members removed), which is Theorem 3.1 at n − 1. [`MvnRdp::epsilon`] and
//! [`MvnRdp::curve`] follow the paper (theorem at n); [`MvnRdp::dataset_epsilon`] and
//! [`MvnRdp::dataset_curve`] cover every neighbour of an n-row dataset (the larger of the theorem at
//! n − 1 and at n). At Table 1's n = 10⁴ this is 3538.97 instead of 3535.17.
//!
//! **Orders.** Outside a theorem's range of α the analysis gives no bound: the scalar functions
//! return [`MvnRdpError::OrderOutOfRange`] and the curves hold +∞ there ("no bound at this order",
//! which [`RdpCurve`] accepts and the ledger ignores when minimising over orders).
//!
//! **Conversion.** [`rdp_to_dp`] is Proposition 2.5 (Mironov 2017, Proposition 3):
//! (α, ε)-RDP ⇒ (ε + log(1/δ)/(α − 1), δ)-DP, with natural logarithms (Table 2's columns differ
//! by ln 10/(α − 1)). The ledger converts a composed curve with the tighter bound of
//! [`RdpCurve::epsilon`] instead.
//!
//! **Numerics.** The d-terms of Theorem 3.1, (α/(α − 1))·(d/2)·log(n/(n + 1)) − (d/(2(α − 1)))·
//! log(1 − α/(n + 1)) and their ε_α2 counterparts, are two O(α/n) logarithms whose sum is O(α²/n²);
//! they are computed together as α·log(1 + x) − log(1 + αx) by its power series when |αx| is
//! small (`log1p_gap`), so the result stays accurate (and ≥ 0) for any n. The logarithm of the
//! ratio in each minimum is rewritten the same way (see [`theorem_3_1`]'s body). Every other
//! logarithm is taken with `ln_1p`.

use crate::privacy::accounting::{AccountingError, RdpCurve, default_orders};
use crate::privacy::guarantee::NeighbourRelation;

/// Which of Miura et al.'s (2022) neighbour settings (Definition 2.1), and so which theorem,
/// applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NRegime {
    /// n private (秘匿 n 条件): datasets differ by one added or removed row; Theorem 3.1.
    Private,
    /// n public (公開 n 条件): datasets have the same n and differ in one row; Theorem 3.2.
    Public,
}

impl NRegime {
    /// [`NRegime::Public`] when `public_n`, else [`NRegime::Private`].
    pub fn from_public_n(public_n: bool) -> Self {
        if public_n {
            Self::Public
        } else {
            Self::Private
        }
    }

    /// The neighbour relation of the guarantee: add/remove-one (n private) or replace-one
    /// (n public).
    pub fn relation(self) -> NeighbourRelation {
        match self {
            Self::Private => NeighbourRelation::AddRemoveOne,
            Self::Public => NeighbourRelation::ReplaceOne,
        }
    }

    /// The theorem of Miura et al. 2022 that bounds one row: "Theorem 3.1" or "Theorem 3.2".
    pub fn theorem(self) -> &'static str {
        match self {
            Self::Private => "Theorem 3.1",
            Self::Public => "Theorem 3.2",
        }
    }
}

impl std::fmt::Display for NRegime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Private => write!(f, "n private ({}, add/remove-one)", self.theorem()),
            Self::Public => write!(f, "n public ({}, replace-one)", self.theorem()),
        }
    }
}

/// Why Miura et al.'s (2022) bound could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MvnRdpError {
    /// The dimension is 0.
    #[error("invalid dimension d = 0: rows need at least one feature")]
    NoDimensions,
    /// n ≤ d: no covariance of n rows has a positive smallest eigenvalue.
    #[error(
        "n = {n} records in d = {dim} dimensions: the covariance of n ≤ d rows is singular, so no dataset meets Miura et al.'s (2022) assumption (smallest eigenvalue ≥ σ > 0); n must be at least d + 1"
    )]
    TooFewRecords {
        /// Number of records.
        n: u64,
        /// Dimension.
        dim: usize,
    },
    /// n − 1 ≤ d: a dataset of n rows has neighbours (one row removed) outside the assumption.
    #[error(
        "a dataset of n = {n} records in d = {dim} dimensions has neighbours of n − 1 ≤ d records, whose covariance is singular: Miura et al.'s (2022) Theorem 3.1 does not cover removing one of its rows"
    )]
    RemovalOutsideDomain {
        /// Number of records.
        n: u64,
        /// Dimension.
        dim: usize,
    },
    /// σ is not a number in (0, 1].
    #[error(
        "invalid σ = {0}: the public lower bound on the covariance's smallest eigenvalue must be in (0, 1] (rows in [−1, 1]^d have variances of at most 1)"
    )]
    InvalidSigma(f64),
    /// α is not a finite number > 1.
    #[error("invalid RDP order α = {0}: must be a finite number > 1")]
    InvalidOrder(f64),
    /// δ is outside (0, 1).
    #[error("invalid δ = {0}: must be in (0, 1)")]
    InvalidDelta(f64),
    /// Zero rows were asked for.
    #[error("invalid number of synthetic rows 0: must be at least 1")]
    NoSamples,
    /// α is at or beyond the theorem's limit (the matrices of its proof are not positive definite).
    #[error(
        "Miura et al. 2022, {theorem} does not apply at α = {alpha} for n = {n}, d = {dim}, σ = {sigma}: it needs α < {limit}"
    )]
    OrderOutOfRange {
        /// "Theorem 3.1" or "Theorem 3.2".
        theorem: &'static str,
        /// The order asked for.
        alpha: f64,
        /// The supremum of the admissible orders (excluded).
        limit: f64,
        /// Number of records.
        n: u64,
        /// Dimension.
        dim: usize,
        /// σ.
        sigma: f64,
    },
    /// The RDP curve could not be built (an order outside the accountant's range).
    #[error(transparent)]
    Accounting(#[from] AccountingError),
}

/// Checks the assumptions shared by both theorems: d ≥ 1, σ ∈ (0, 1], n ≥ d + 1 (module docs).
fn check_domain(n: u64, dim: usize, sigma: f64) -> Result<(), MvnRdpError> {
    if dim == 0 {
        return Err(MvnRdpError::NoDimensions);
    }
    if !(sigma > 0.0 && sigma <= 1.0) {
        return Err(MvnRdpError::InvalidSigma(sigma));
    }
    if n <= dim as u64 {
        return Err(MvnRdpError::TooFewRecords { n, dim });
    }
    Ok(())
}

fn check_order(alpha: f64) -> Result<(), MvnRdpError> {
    if alpha.is_finite() && alpha > 1.0 {
        Ok(())
    } else {
        Err(MvnRdpError::InvalidOrder(alpha))
    }
}

fn check_delta(delta: f64) -> Result<(), MvnRdpError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(MvnRdpError::InvalidDelta(delta))
    }
}

/// τ = 4d/σ (Miura et al. 2022, §3.1): the squared diameter 4d of [−1, 1]^d over σ.
fn tau(dim: usize, sigma: f64) -> f64 {
    4.0 * dim as f64 / sigma
}

/// α·log(1 + x) − log(1 + αx) for α > 1 and αx > −1, which is ≥ 0.
///
/// For |αx| ≤ 0.01 it is the series Σ_{k≥2} (α^k − α)(−x)^k / k: the two logarithms are O(αx)
/// while their difference is O(α²x²), so the direct form would lose about log₁₀(1/|αx|) digits.
/// Above 0.01 the direct form loses at most a few units in 10¹⁴.
fn log1p_gap(alpha: f64, x: f64) -> f64 {
    let ax = alpha * x;
    if ax.abs() > 0.01 {
        return alpha * x.ln_1p() - ax.ln_1p();
    }
    // (−x)^k and α^k, from k = 1.
    let (mut minus_x_k, mut alpha_k) = (-x, alpha);
    let mut sum = 0.0;
    for k in 2..64 {
        minus_x_k *= -x;
        alpha_k *= alpha;
        // (α^k − α)(−x)^k = (−αx)^k − α(−x)^k, each tiny: no overflow for any α.
        let term = (alpha_k * minus_x_k - alpha * minus_x_k) / f64::from(k);
        sum += term;
        if term.abs() <= 1e-18 * sum.abs() {
            break;
        }
    }
    sum
}

/// The two bounds of Miura et al. 2022, Theorem 3.1 at one order; the theorem's ε_α is the larger.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theorem31 {
    /// ε_α1 (first display of Theorem 3.1): D_α from the n-row dataset to its (n + 1)-row
    /// neighbour (a row added; Lemmas 4.4 and 4.5 with s = +1).
    pub epsilon_add: f64,
    /// ε_α2 (second display of Theorem 3.1): D_α from the (n + 1)-row dataset to its n-row
    /// neighbour (a row removed; Lemmas 4.4 and 4.5 with s = −1 and n → n + 1).
    pub epsilon_remove: f64,
}

impl Theorem31 {
    /// ε_α = max{ε_α1, ε_α2}, the RDP of one synthetic row (Theorem 3.1).
    pub fn epsilon(&self) -> f64 {
        self.epsilon_add.max(self.epsilon_remove)
    }
}

/// The supremum (excluded) of the orders at which Miura et al. 2022, Theorem 3.1 applies:
/// min{n + 1, n²/(τ(n + 1) − n)}, τ = 4d/σ (Theorem 3.1's hypothesis; Lemma 4.3 with n → n + 1,
/// where it makes Σ_α and so T_α positive definite). n private, add/remove-one neighbours; rows in
/// [−1, 1]^d, covariance eigenvalues ≥ σ ∈ (0, 1], n ≥ d + 1.
pub fn theorem_3_1_order_limit(n: u64, dim: usize, sigma: f64) -> Result<f64, MvnRdpError> {
    check_domain(n, dim, sigma)?;
    Ok(limit_3_1(n, dim, sigma))
}

fn limit_3_1(n: u64, dim: usize, sigma: f64) -> f64 {
    let (nf, t) = (n as f64, tau(dim, sigma));
    // τ(n + 1) − n > 0 because τ ≥ 4 (module docs).
    (nf + 1.0).min(nf * nf / (t * (nf + 1.0) - nf))
}

/// The supremum (excluded) of the orders at which Miura et al. 2022, Theorem 3.2 applies: n²/(τ(n −
/// 1)), τ = 4d/σ (Theorem 3.2's hypothesis; Lemma 4.7, where it makes Σ_α positive definite). n
/// public, replace-one neighbours; rows in [−1, 1]^d, covariance eigenvalues ≥ σ ∈ (0, 1], n ≥ d +
/// 1.
pub fn theorem_3_2_order_limit(n: u64, dim: usize, sigma: f64) -> Result<f64, MvnRdpError> {
    check_domain(n, dim, sigma)?;
    Ok(limit_3_2(n, dim, sigma))
}

fn limit_3_2(n: u64, dim: usize, sigma: f64) -> f64 {
    let (nf, t) = (n as f64, tau(dim, sigma));
    // n ≥ d + 1 ≥ 2, so n − 1 ≥ 1.
    nf * nf / (t * (nf - 1.0))
}

/// Miura et al. 2022 **Theorem 3.1**: the RDP at order α of releasing **one** row drawn from
/// N(μ, Σ) of a dataset, under **n private** (add/remove-one neighbours), between datasets of n and
/// n + 1 rows in both directions.
///
/// With τ = 4d/σ, c = 1/(2(α − 1)):
/// - ε_α1 = (α/2)·τ/((n+1)(n+1−α)) + c·αd·log(n/(n+1)) − c·d·log(1 − α/(n+1))
///   − c·log min{1, (1 + αnτ/((n+1)(n+1−α))) / (1 + τ/(n+1))^α};
/// - ε_α2 = (α/2)·τ/(n(n+α) − α(n+1)τ) + c·αd·log((n+1)/n) − c·d·log(1 + α/n)
///   − c·log min{1, (1 − α(n+1)τ/((n+α)n)) / (1 − τ/n)^α};
///
/// the first term is Lemma 4.4's bound on L₁ = ᵗ(μ₁ − μ₂) Σ_α⁻¹ (μ₁ − μ₂), the others Lemma 4.5's
/// bound on L₂, combined by Proposition 4.1 (the Rényi divergence of two normals).
///
/// **Assumptions:** rows in [−1, 1]^d; the covariance of every dataset compared has smallest
/// eigenvalue ≥ σ, with σ ∈ (0, 1] and n ≥ d + 1 (else D_σ is empty: [`MvnRdpError::InvalidSigma`],
/// [`MvnRdpError::TooFewRecords`]); α > 1 ([`MvnRdpError::InvalidOrder`]); n/(n + 1) < τ (always
/// true here) and α < min{n + 1, n²/(τ(n + 1) − n)} ([`MvnRdpError::OrderOutOfRange`]).
pub fn theorem_3_1(n: u64, dim: usize, sigma: f64, alpha: f64) -> Result<Theorem31, MvnRdpError> {
    let limit = theorem_3_1_order_limit(n, dim, sigma)?;
    check_order(alpha)?;
    let out_of_range = || MvnRdpError::OrderOutOfRange {
        theorem: NRegime::Private.theorem(),
        alpha,
        limit,
        n,
        dim,
        sigma,
    };
    let (nf, d, t) = (n as f64, dim as f64, tau(dim, sigma));
    let n1 = nf + 1.0;
    // The theorem's conditions, checked on the very quantities whose signs they guarantee.
    let add_gap = n1 - alpha; // α < n + 1
    let remove_den = nf * (nf + alpha) - alpha * n1 * t; // α < n²/(τ(n + 1) − n)
    let remove_a = alpha * n1 * t / ((nf + alpha) * nf); // < 1, the same condition
    let remove_t = t / nf; // < 1, implied by it for α > 1
    if !(alpha < limit && add_gap > 0.0 && remove_den > 0.0 && remove_a < 1.0 && remove_t < 1.0) {
        return Err(out_of_range());
    }
    let c = 1.0 / (2.0 * (alpha - 1.0));

    // ε_α1 (s = +1). α·log(n/(n+1)) − log(1 − α/(n+1)) = gap(α, −1/(n+1)). The ratio in the
    // minimum is (1 + a)/(1 + t)^α with a = αnτ/((n+1)(n+1−α)), t = τ/(n+1); a − αt =
    // α(α−1)τ/((n+1)(n+1−α)) exactly, so its log is log(1 + (a − αt)/(1 + αt)) − gap(α, t),
    // free of the cancellation of log(1 + a) − α·log(1 + t) when t is small.
    let l1_add = t / (n1 * add_gap);
    let t_add = t / n1;
    let excess_add = alpha * (alpha - 1.0) * t / (n1 * add_gap);
    let log_ratio_add = (excess_add / (1.0 + alpha * t_add)).ln_1p() - log1p_gap(alpha, t_add);
    let epsilon_add =
        alpha / 2.0 * l1_add + c * d * log1p_gap(alpha, -1.0 / n1) + c * (-log_ratio_add).max(0.0);

    // ε_α2 (s = −1, n → n + 1). α·log((n+1)/n) − log(1 + α/n) = gap(α, 1/n). The ratio in the
    // minimum is (1 − a)/(1 − t)^α with a = α(n+1)τ/((n+α)n), t = τ/n; αt − a = α(α−1)τ/(n(n+α))
    // exactly, so when αt ≤ 1/2 its log is log(1 + (αt − a)/(1 − αt)) − gap(α, −t).
    let l1_remove = t / remove_den;
    let log_ratio_remove = if alpha * remove_t <= 0.5 {
        let excess = alpha * (alpha - 1.0) * t / (nf * (nf + alpha));
        (excess / (1.0 - alpha * remove_t)).ln_1p() - log1p_gap(alpha, -remove_t)
    } else {
        (-remove_a).ln_1p() - alpha * (-remove_t).ln_1p()
    };
    let epsilon_remove = alpha / 2.0 * l1_remove
        + c * d * log1p_gap(alpha, 1.0 / nf)
        + c * (-log_ratio_remove).max(0.0);

    Ok(Theorem31 {
        epsilon_add,
        epsilon_remove,
    })
}

/// Miura et al. 2022 **Theorem 3.2**: the RDP at order α of releasing **one** row drawn from
/// N(μ, Σ) of a dataset of n rows, under **n public** (replace-one neighbours):
///
/// ε_α = (α/2)·τ/(n² − α(n−1)τ) + (α/(2(α−1)))·log(1 + (n−1)τ/n²) − (1/(2(α−1)))·log(1 − α(n−1)τ/n²),
///
/// τ = 4d/σ: Lemma 4.8's bound on L₁ and Lemma 4.9's on L₂ in Proposition 4.1.
///
/// **Assumptions:** rows in [−1, 1]^d; both datasets' covariances have smallest eigenvalue ≥ σ,
/// σ ∈ (0, 1], n ≥ d + 1 ([`MvnRdpError::InvalidSigma`], [`MvnRdpError::TooFewRecords`]); α > 1
/// ([`MvnRdpError::InvalidOrder`]) and α < n²/(τ(n − 1)) ([`MvnRdpError::OrderOutOfRange`]). The
/// paper itself notes (§3.2) that Lemma 4.9 is loose, so this bound is of little use in practice.
pub fn theorem_3_2(n: u64, dim: usize, sigma: f64, alpha: f64) -> Result<f64, MvnRdpError> {
    let limit = theorem_3_2_order_limit(n, dim, sigma)?;
    check_order(alpha)?;
    let (nf, t) = (n as f64, tau(dim, sigma));
    let x = (nf - 1.0) * t / (nf * nf);
    let den = nf * nf - alpha * (nf - 1.0) * t;
    if !(alpha < limit && alpha * x < 1.0 && den > 0.0) {
        return Err(MvnRdpError::OrderOutOfRange {
            theorem: NRegime::Public.theorem(),
            alpha,
            limit,
            n,
            dim,
            sigma,
        });
    }
    let c = 1.0 / (2.0 * (alpha - 1.0));
    Ok(alpha / 2.0 * t / den + c * (alpha * x.ln_1p() - (-alpha * x).ln_1p()))
}

/// Miura et al. 2022 **Proposition 2.5** (Mironov 2017, Proposition 3): an (α, ε)-RDP mechanism is
/// (ε + log(1/δ)/(α − 1), δ)-DP for every δ ∈ (0, 1), under the same neighbour relation
/// (natural logarithm). Needs α > 1, ε ≥ 0 (+∞ stays +∞) and δ ∈ (0, 1).
pub fn rdp_to_dp(rdp_epsilon: f64, alpha: f64, delta: f64) -> Result<f64, MvnRdpError> {
    check_order(alpha)?;
    check_delta(delta)?;
    if rdp_epsilon.is_nan() || rdp_epsilon < 0.0 {
        return Err(MvnRdpError::Accounting(AccountingError::InvalidRdp {
            order: alpha,
            value: rdp_epsilon,
        }));
    }
    Ok(rdp_epsilon - delta.ln() / (alpha - 1.0))
}

/// A release of m synthetic rows drawn from N(μ, Σ) of a dataset of n rows (Miura et al. 2022,
/// §2.3's M_G run m times), with the public σ and the neighbour setting its guarantee is stated
/// under.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MvnRdp {
    n: u64,
    dim: usize,
    sigma: f64,
    samples: u64,
    regime: NRegime,
}

impl MvnRdp {
    /// The release of `samples` rows from a dataset of `n` rows in `dim` dimensions whose
    /// covariance has smallest eigenvalue ≥ `sigma`. Errors when no such dataset exists
    /// (σ ∉ (0, 1], n ≤ d, d = 0) or `samples` is 0.
    pub fn new(
        n: u64,
        dim: usize,
        sigma: f64,
        samples: u64,
        regime: NRegime,
    ) -> Result<Self, MvnRdpError> {
        check_domain(n, dim, sigma)?;
        if samples == 0 {
            return Err(MvnRdpError::NoSamples);
        }
        Ok(Self {
            n,
            dim,
            sigma,
            samples,
            regime,
        })
    }

    /// Number of records n.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Dimension d.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The public lower bound σ on the covariance's smallest eigenvalue.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// Number of synthetic rows m.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The neighbour setting (which theorem).
    pub fn regime(&self) -> NRegime {
        self.regime
    }

    /// The neighbour relation of the guarantee (add/remove-one or replace-one).
    pub fn relation(&self) -> NeighbourRelation {
        self.regime.relation()
    }

    /// The supremum (excluded) of the orders at which the theorem applies at n
    /// ([`theorem_3_1_order_limit`] or [`theorem_3_2_order_limit`]).
    pub fn order_limit(&self) -> f64 {
        // The domain was checked by `new`.
        match self.regime {
            NRegime::Private => limit_3_1(self.n, self.dim, self.sigma),
            NRegime::Public => limit_3_2(self.n, self.dim, self.sigma),
        }
    }

    /// RDP at order α of **one** row: Miura et al. 2022, Theorem 3.1 (n private, add/remove-one;
    /// ε_α = max{ε_α1, ε_α2}) or Theorem 3.2 (n public, replace-one) at the theorem's n = this n —
    /// the convention of Tables 1 and 2. Errors as [`theorem_3_1`] / [`theorem_3_2`].
    pub fn row_epsilon(&self, alpha: f64) -> Result<f64, MvnRdpError> {
        row_epsilon_at(self.regime, self.n, self.dim, self.sigma, alpha)
    }

    /// RDP at order α of the **m** rows: m·ε_α (Miura et al. 2022, Proposition 2.4 applied m − 1
    /// times; §2.3 "ε を入力サンプル数倍"), with ε_α from [`MvnRdp::row_epsilon`] (Theorem 3.1 or 3.2 at n).
    /// This is Table 1's quantity when m = n.
    pub fn epsilon(&self, alpha: f64) -> Result<f64, MvnRdpError> {
        Ok(self.samples as f64 * self.row_epsilon(alpha)?)
    }

    /// (ε, δ)-DP of the m rows from [`MvnRdp::epsilon`] at order α by Miura et al. 2022,
    /// Proposition 2.5: m·ε_α + log(1/δ)/(α − 1). Table 2's quantity when m = n (n private).
    pub fn dp_epsilon(&self, alpha: f64, delta: f64) -> Result<f64, MvnRdpError> {
        check_delta(delta)?;
        rdp_to_dp(self.epsilon(alpha)?, alpha, delta)
    }

    /// The RDP curve of the m rows over `orders` (each in (1, 10⁵]): [`MvnRdp::epsilon`] at every
    /// order where the theorem applies, +∞ ("no bound") where α is at or beyond its limit
    /// ([`MvnRdp::order_limit`]). Stated under [`MvnRdp::relation`]; composable with other curves
    /// of that relation over the same orders.
    pub fn curve(&self, orders: &[f64]) -> Result<RdpCurve, MvnRdpError> {
        self.curve_with(orders, |alpha| self.epsilon(alpha))
    }

    /// [`MvnRdp::curve`] over the accountant's orders ([`default_orders`]), as the ledger composes.
    pub fn default_curve(&self) -> Result<RdpCurve, MvnRdpError> {
        self.curve(&default_orders())
    }

    /// RDP at order α of the m rows against **every** neighbour of a dataset of n rows. Under n
    /// public this is [`MvnRdp::epsilon`]. Under n private (add/remove-one) the neighbours have
    /// n + 1 rows (Theorem 3.1 at n) or n − 1 rows (Theorem 3.1 at n − 1, by footnote 6's
    /// n → n − 1), so this is m·max{ε_α(n − 1), ε_α(n)}; it needs n − 1 ≥ d + 1
    /// ([`MvnRdpError::RemovalOutsideDomain`]) and α below both limits.
    pub fn dataset_epsilon(&self, alpha: f64) -> Result<f64, MvnRdpError> {
        match self.regime {
            NRegime::Public => self.epsilon(alpha),
            NRegime::Private => {
                let below = self.n - 1;
                if below <= self.dim as u64 {
                    return Err(MvnRdpError::RemovalOutsideDomain {
                        n: self.n,
                        dim: self.dim,
                    });
                }
                let at_n = self.row_epsilon(alpha)?;
                let at_below = theorem_3_1(below, self.dim, self.sigma, alpha)?.epsilon();
                Ok(self.samples as f64 * at_n.max(at_below))
            }
        }
    }

    /// The curve of [`MvnRdp::dataset_epsilon`] over `orders` (+∞ at the orders where the theorem
    /// at n or at n − 1 does not apply): what a node holding n rows charges under add/remove-one.
    /// The whole curve is refused with [`MvnRdpError::RemovalOutsideDomain`] when n − 1 ≤ d.
    pub fn dataset_curve(&self, orders: &[f64]) -> Result<RdpCurve, MvnRdpError> {
        self.curve_with(orders, |alpha| self.dataset_epsilon(alpha))
    }

    fn curve_with(
        &self,
        orders: &[f64],
        epsilon: impl Fn(f64) -> Result<f64, MvnRdpError>,
    ) -> Result<RdpCurve, MvnRdpError> {
        let values = orders
            .iter()
            .map(|&alpha| match epsilon(alpha) {
                Ok(v) => Ok(v),
                Err(MvnRdpError::OrderOutOfRange { .. }) => Ok(f64::INFINITY),
                Err(e) => Err(e),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RdpCurve::new(orders.to_vec(), values)?)
    }
}

fn row_epsilon_at(
    regime: NRegime,
    n: u64,
    dim: usize,
    sigma: f64,
    alpha: f64,
) -> Result<f64, MvnRdpError> {
    match regime {
        NRegime::Private => Ok(theorem_3_1(n, dim, sigma, alpha)?.epsilon()),
        NRegime::Public => theorem_3_2(n, dim, sigma, alpha),
    }
}

mod tables;
pub use tables::{
    TABLE_1_N, TABLE_1_ORDER, TABLE_2_DELTAS, TABLE_2_N, TABLE_2_ORDERS, TABLE_DIM, TABLE_SIGMA,
    Table1, table_1, table_2,
};

#[cfg(test)]
mod tests;
