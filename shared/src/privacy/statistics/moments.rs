//! Per-class **count, sums, means, variances and covariance matrix** of a node's rows, by the
//! Laplace mechanism with ℓ₁ global sensitivity or the Gaussian mechanism with ℓ₂ global
//! sensitivity (Kashima, lecture notes on Chapter 16 of Aggarwal &
//! Yu 2008, *Privacy-Preserving Data Mining* — slide 15, "Lap(GS_f/ε) is ε-differentially private",
//! GS_f = max over neighbours of ||f(x) − f(x′)||₁; slide 18, the global sensitivities of sums and
//! means; slide 19, statistics released together and derived by the user from noisy sums and
//! counts; slide 11, Lemma 16.7, basic composition).
//!
//! **What is perturbed.** The public schema declares each feature's bounds lo_j < hi_j. Each raw
//! value v is clipped to [lo_j, hi_j] and mapped to u = (v − c_j)/r_j ∈ [−1, 1] (c the centre, r
//! the half-width), then quantised to 2^{-11}: q = round(2^11·u) ∈ [−2^11, 2^11] (an error of at
//! most r_j·2^{-12} per value), so that every sum below is an exact dyadic rational, exactly
//! representable in f64 for n ≤ 2^30 rows. For each class k ∈ {negative, positive} the query is
//! the vector of K = 1 + d + d(d + 1)/2 coordinates
//!
//! ```text
//!   T_k = ( n_k,  Σ_{i ∈ k} u_i,  Σ_{i ∈ k} triu(u_i u_iᵀ) )      (u = q·2^{-11})
//! ```
//!
//! (count, per-feature sums, the upper triangle with the diagonal of the second moments, in
//! row-major order), and the release is (T₋, T₊) with independent noise on each of its 2K
//! coordinates.
//!
//! **Sensitivities** (replace-one: one row replaced by any row, with any label; every |u| ≤ 1):
//! - **ℓ₁ = 2(1 + d + d(d + 1)/2) = 2K.** If the class changes, one class loses the row's vector
//!   (1, u, triu(uuᵀ)) and the other gains (1, u′, triu(u′u′ᵀ)), each of ℓ₁ norm ≤ K. If it does
//!   not, the count is unchanged, each sum moves by |u_j − u′_j| ≤ 2 and each product by
//!   |u_i u_j − u′_i u′_j| ≤ 2: ≤ 2d + d(d + 1) < 2K. Attained: a corner row moved to the other
//!   class (tested).
//! - **ℓ₂ = max(2√(d + d(d + 1)/2), √(2(1 + d + d(d + 1)/2))) = 2√(d + d(d + 1)/2)** (the first
//!   term is the same-class bound, the second the class-change bound; the first is larger for
//!   every d ≥ 1).
//!
//! **Mechanisms.**
//! - [`MomentNoise::Laplace`]: every coordinate through one snapped Laplace mechanism (Mironov
//!   2012 Theorem 1, [`crate::privacy::snapping::calibrate_vector`]) with scale ≈ ℓ₁/ε and clamping
//!   bound B = max_rows (which bounds every coordinate when n ≤ max_rows): **ε-DP** (δ = 0), the
//!   floating-point price paid inside ε. Under the theorem's assumptions (IEEE-754, an accurate
//!   `ln`).
//! - [`MomentNoise::Gaussian`]: the Gaussian mechanism with standard deviation σ = z·ℓ₂, z the
//!   noise multiplier the accountant calibrates for one step at (ε, δ)
//!   ([`crate::privacy::accounting::calibrate_sigma`] with q = 1, one step); its RDP curve
//!   α/(2z²) (Mironov 2017, Proposition 7) is what the ledger composes. **(ε, δ)-DP.** The noise
//!   is exact: the 2K coordinates, clamped to ±max_rows, go through
//!   [`crate::privacy::discrete::GridGaussian`] — rounded to a public power-of-two grid g and
//!   perturbed by independent discrete Gaussians (Canonne, Kamath & Steinke 2020, Algorithm 3)
//!   of standard deviation (σ/ℓ₂)·(ℓ₂/g + √(2K)) grid cells, which pays for the rounding so
//!   that the curve α·ℓ₂²/(2σ²) = α/(2z²) holds unchanged (the argument is in
//!   [`crate::privacy::discrete::grid`]). Every output is an exact multiple of g; there is no
//!   floating-point leak.
//!
//! **Post-processing** (no further privacy cost), per class with ñ the noisy count and
//! n̄ = max(ñ, 1): the sum of clipped raw values c_j·ñ + r_j·S̃_j; the mean c_j + r_j·m_j with
//! m_j = clamp(S̃_j/n̄, −1, 1); the covariance r_i r_j·(P̃_ij/n̄ − m_i m_j) (population
//! normalisation 1/n, as Miura et al.'s (2022) empirical covariance), its diagonal — the variances
//! — clamped to [0, r_j²] and each off-diagonal entry to ±√(var_i var_j). Noise can leave the
//! covariance indefinite; a consumer that needs a positive semi-definite matrix projects it.
//!
//! **Assumptions.** max_rows is public and n ≤ max_rows ≤ 2^30 (a larger n is refused); values are
//! not NaN (refused; a schema's `missing` sentinel is replaced by its declared centre before this
//! module, [`crate::data::csv::RawRows`]). The neighbour relation is replace-one; n itself is not
//! hidden (the counts are released with noise, but n is public in every dpagg release).

use super::{InputError, check_features, check_max_rows, check_rows};
use crate::data::agreed_map::{ClassSummary, Summaries};
use crate::data::schema::FeatureSpec;
use crate::privacy::accounting::{AccountingError, RdpCurve, calibrate_sigma, dp_sgd_curve};
use crate::privacy::discrete::{DiscreteError, GridGaussian};
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::{SnappingError, VectorCalibration, calibrate_vector};

/// Bits of the quantisation of u: q = round(2^11·u).
pub const MOMENT_QUANT_BITS: i32 = 11;

const QUANT: f64 = (1u64 << MOMENT_QUANT_BITS) as f64;

/// Which noise the moments get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MomentNoise {
    /// Snapped Laplace with ℓ₁ sensitivity: ε-DP.
    Laplace,
    /// Gaussian with ℓ₂ sensitivity, exact discrete noise on a grid: (ε, δ)-DP with an RDP
    /// curve.
    Gaussian,
}

/// Parameters of a release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MomentsParams {
    /// The mechanism.
    pub noise: MomentNoise,
    /// Total ε.
    pub epsilon: f64,
    /// δ: 0 for Laplace, in (0, 1) for Gaussian.
    pub delta: f64,
    /// Public upper bound on the number of rows.
    pub max_rows: usize,
}

/// Why moments cannot be planned or released.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MomentsError {
    /// ε is not finite and positive.
    #[error("invalid epsilon {0}: must be finite and > 0")]
    InvalidEpsilon(f64),
    /// δ does not fit the mechanism.
    #[error("invalid delta {delta}: the {noise} mechanism needs {needs}")]
    InvalidDelta {
        /// δ given.
        delta: f64,
        /// "Laplace" or "Gaussian".
        noise: &'static str,
        /// What it needs.
        needs: &'static str,
    },
    /// The schema or the rows.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The snapping mechanism refused its parameters.
    #[error("snapping: {0}")]
    Snapping(#[from] SnappingError),
    /// The Gaussian noise could not be calibrated.
    #[error("calibrating the Gaussian noise: {0}")]
    Accounting(#[from] AccountingError),
    /// The discrete Gaussian on the grid refused its parameters.
    #[error("discrete Gaussian noise: {0}")]
    Discrete(#[from] DiscreteError),
}

/// The calibrated noise.
#[derive(Debug, Clone, PartialEq)]
enum Noise {
    Laplace(VectorCalibration),
    Gaussian {
        /// z: the standard deviation over the ℓ₂ sensitivity.
        multiplier: f64,
        /// z·ℓ₂.
        std: f64,
        /// α/(2z²).
        curve: RdpCurve,
        /// The release of every coordinate: discrete Gaussian noise on a grid (boxed: it is
        /// several times the size of the Laplace variant).
        grid: Box<GridGaussian>,
    },
}

/// The calibrated mechanism for one schema.
#[derive(Debug, Clone, PartialEq)]
pub struct MomentsPlan {
    params: MomentsParams,
    lo: Vec<f64>,
    hi: Vec<f64>,
    noise: Noise,
}

/// Per-class statistics in raw units (module docs, "Post-processing").
#[derive(Debug, Clone, PartialEq)]
pub struct ClassMoments {
    /// Noisy number of rows (may be negative or fractional).
    pub count: f64,
    /// Per feature, the noisy sum of clipped values.
    pub sum: Vec<f64>,
    /// Per feature, the noisy mean, in [lo, hi].
    pub mean: Vec<f64>,
    /// Per feature, the noisy variance, in [0, ((hi − lo)/2)²].
    pub variance: Vec<f64>,
    /// d × d, row-major, symmetric (not necessarily positive semi-definite).
    pub covariance: Vec<f64>,
}

/// A release: the negative class first, then the positive class.
#[derive(Debug, Clone, PartialEq)]
pub struct Moments {
    /// Its guarantee.
    pub guarantee: PrivacyGuarantee,
    /// [negative, positive].
    pub classes: [ClassMoments; 2],
}

impl Moments {
    /// The release as an agreed map's [`Summaries`] (post-processing): per class the noisy
    /// count, means and covariance, in the units of the features the plan was made for.
    pub fn summaries(&self) -> Summaries {
        let class = |c: &ClassMoments| ClassSummary {
            count: c.count,
            mean: c.mean.clone(),
            covariance: c.covariance.clone(),
        };
        Summaries {
            classes: [class(&self.classes[0]), class(&self.classes[1])],
        }
    }
}

/// K = 1 + d + d(d + 1)/2 coordinates per class.
pub fn coordinates_per_class(d: usize) -> usize {
    1 + d + d * (d + 1) / 2
}

/// ℓ₁ global sensitivity of (T₋, T₊) under replace-one: 2K (module docs).
pub fn l1_sensitivity(d: usize) -> f64 {
    2.0 * coordinates_per_class(d) as f64
}

/// ℓ₂ global sensitivity of (T₋, T₊) under replace-one (module docs).
pub fn l2_sensitivity(d: usize) -> f64 {
    let same_class = 2.0 * ((d + d * (d + 1) / 2) as f64).sqrt();
    let class_change = (2.0 * coordinates_per_class(d) as f64).sqrt();
    same_class.max(class_change)
}

/// The Gaussian noise of multiplier z for d features: σ = z·ℓ₂ on the 2K coordinates, each
/// within ±max_rows, released on a grid with discrete Gaussian noise (module docs).
fn gaussian_noise(multiplier: f64, d: usize, max_rows: usize) -> Result<Noise, MomentsError> {
    let std = multiplier * l2_sensitivity(d);
    let grid = GridGaussian::new(
        std,
        l2_sensitivity(d),
        2 * coordinates_per_class(d),
        max_rows as f64,
    )?;
    Ok(Noise::Gaussian {
        multiplier,
        std,
        curve: dp_sgd_curve(1.0, multiplier, 1)?,
        grid: Box::new(grid),
    })
}

impl MomentsPlan {
    /// Calibrates the release for the schema's bounds and `params`.
    pub fn new(features: &[FeatureSpec], params: MomentsParams) -> Result<Self, MomentsError> {
        if !(params.epsilon.is_finite() && params.epsilon > 0.0) {
            return Err(MomentsError::InvalidEpsilon(params.epsilon));
        }
        check_features(features)?;
        check_max_rows(params.max_rows)?;
        let d = features.len();
        let noise = match params.noise {
            MomentNoise::Laplace => {
                if params.delta != 0.0 {
                    return Err(MomentsError::InvalidDelta {
                        delta: params.delta,
                        noise: "Laplace",
                        needs: "delta = 0",
                    });
                }
                Noise::Laplace(calibrate_vector(
                    l1_sensitivity(d),
                    2 * coordinates_per_class(d),
                    params.max_rows as f64,
                    params.epsilon,
                )?)
            }
            MomentNoise::Gaussian => {
                if !(params.delta > 0.0 && params.delta < 1.0) {
                    return Err(MomentsError::InvalidDelta {
                        delta: params.delta,
                        noise: "Gaussian",
                        needs: "0 < delta < 1",
                    });
                }
                let multiplier = calibrate_sigma(1.0, 1, params.epsilon, params.delta)?;
                gaussian_noise(multiplier, d, params.max_rows)?
            }
        };
        Ok(Self {
            params,
            lo: features.iter().map(|f| f.lo).collect(),
            hi: features.iter().map(|f| f.hi).collect(),
            noise,
        })
    }

    /// The guarantee: (ε, 0) for Laplace, (ε, δ) for Gaussian, under replace-one.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.params.epsilon, self.params.delta)
    }

    /// The RDP curve the ledger composes (Gaussian only; replace-one).
    pub fn rdp(&self) -> Option<RdpCurve> {
        match &self.noise {
            Noise::Laplace(_) => None,
            Noise::Gaussian { curve, .. } => Some(curve.clone()),
        }
    }

    /// The noise on each coordinate: the Laplace scale λ, or the Gaussian mechanism's standard
    /// deviation σ = z·ℓ₂ (the discrete noise on the grid has standard deviation
    /// [`GridGaussian::noise_std`] ≤ σ·(1 + 2^{−20}), its curve that of σ).
    pub fn noise_scale(&self) -> f64 {
        match &self.noise {
            Noise::Laplace(c) => c.mechanism.scale(),
            Noise::Gaussian { std, .. } => *std,
        }
    }

    /// The snapping mechanism and its achieved ε (Laplace only).
    pub fn laplace(&self) -> Option<&VectorCalibration> {
        match &self.noise {
            Noise::Laplace(c) => Some(c),
            Noise::Gaussian { .. } => None,
        }
    }

    /// The grid release of the coordinates (Gaussian only).
    pub fn grid(&self) -> Option<&GridGaussian> {
        match &self.noise {
            Noise::Laplace(_) => None,
            Noise::Gaussian { grid, .. } => Some(grid),
        }
    }

    /// The Gaussian noise multiplier z (Gaussian only).
    pub fn multiplier(&self) -> Option<f64> {
        match &self.noise {
            Noise::Laplace(_) => None,
            Noise::Gaussian { multiplier, .. } => Some(*multiplier),
        }
    }

    fn dim(&self) -> usize {
        self.lo.len()
    }

    /// q = round(2^11·u) of a non-NaN raw value of feature j.
    fn quantise(&self, j: usize, v: f64) -> i64 {
        let (lo, hi) = (self.lo[j], self.hi[j]);
        let (c, r) = (lo / 2.0 + hi / 2.0, hi / 2.0 - lo / 2.0);
        let u = ((v.clamp(lo, hi) - c) / r).clamp(-1.0, 1.0);
        (u * QUANT).round() as i64
    }

    /// The exact query (T₋, T₊) of the clipped, quantised rows, each of K coordinates in units of
    /// u (module docs), exactly as perturbed.
    pub fn exact(
        &self,
        rows: &[Vec<f64>],
        positive: &[bool],
    ) -> Result<[Vec<f64>; 2], MomentsError> {
        let d = self.dim();
        check_rows(rows, positive, d, self.params.max_rows)?;
        let k = coordinates_per_class(d);
        // |Σ q_i q_j| ≤ 2^30·2^22 = 2^52: exact in i64 and in f64.
        let mut sums = [vec![0i64; k], vec![0i64; k]];
        let mut q = vec![0i64; d];
        for (row, &label) in rows.iter().zip(positive) {
            for (j, (qj, &v)) in q.iter_mut().zip(row).enumerate() {
                *qj = self.quantise(j, v);
            }
            let t = &mut sums[usize::from(label)];
            t[0] += 1;
            let mut at = 1;
            for &qj in &q {
                t[at] += qj;
                at += 1;
            }
            for i in 0..d {
                for j in i..d {
                    t[at] += q[i] * q[j];
                    at += 1;
                }
            }
        }
        Ok(sums.map(|t| {
            let mut out = Vec::with_capacity(k);
            out.push(t[0] as f64);
            out.extend(t[1..=d].iter().map(|&s| s as f64 / QUANT));
            out.extend(t[d + 1..].iter().map(|&s| s as f64 / (QUANT * QUANT)));
            out
        }))
    }

    /// (T₋, T₊) with the calibrated noise on every coordinate.
    pub fn perturb(
        &self,
        exact: &[Vec<f64>; 2],
        rng: &mut NoiseSource,
    ) -> Result<[Vec<f64>; 2], MomentsError> {
        let mut out = [Vec::new(), Vec::new()];
        for (noisy, t) in out.iter_mut().zip(exact) {
            *noisy = t
                .iter()
                .map(|&x| match &self.noise {
                    Noise::Laplace(c) => c.mechanism.sample(x, rng).map_err(MomentsError::from),
                    Noise::Gaussian { grid, .. } => grid.sample(x, rng).map_err(MomentsError::from),
                })
                .collect::<Result<_, _>>()?;
        }
        Ok(out)
    }

    /// Releases the moments of `rows` (raw values, schema order) with labels `positive`.
    pub fn release(
        &self,
        rows: &[Vec<f64>],
        positive: &[bool],
        rng: &mut NoiseSource,
    ) -> Result<Moments, MomentsError> {
        let noisy = self.perturb(&self.exact(rows, positive)?, rng)?;
        let [negative, positive] = noisy.map(|t| self.post_process(&t));
        Ok(Moments {
            guarantee: self.guarantee(),
            classes: [negative, positive],
        })
    }

    /// Raw-unit statistics of one class's noisy T (module docs, "Post-processing").
    fn post_process(&self, t: &[f64]) -> ClassMoments {
        let d = self.dim();
        let count = t[0];
        let n = count.max(1.0);
        let (centre, half): (Vec<f64>, Vec<f64>) = self
            .lo
            .iter()
            .zip(&self.hi)
            .map(|(l, h)| (l / 2.0 + h / 2.0, h / 2.0 - l / 2.0))
            .unzip();
        let m: Vec<f64> = t[1..=d].iter().map(|s| (s / n).clamp(-1.0, 1.0)).collect();
        let mut second = vec![0.0; d * d];
        let mut at = d + 1;
        for i in 0..d {
            for j in i..d {
                second[i * d + j] = t[at] / n;
                second[j * d + i] = t[at] / n;
                at += 1;
            }
        }
        let var_u: Vec<f64> = (0..d)
            .map(|j| (second[j * d + j] - m[j] * m[j]).clamp(0.0, 1.0))
            .collect();
        let mut covariance = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                let c = if i == j {
                    var_u[i]
                } else {
                    let limit = (var_u[i] * var_u[j]).sqrt();
                    (second[i * d + j] - m[i] * m[j]).clamp(-limit, limit)
                };
                covariance[i * d + j] = half[i] * half[j] * c;
            }
        }
        ClassMoments {
            count,
            sum: (0..d)
                .map(|j| centre[j] * count + half[j] * t[1 + j])
                .collect(),
            mean: (0..d).map(|j| centre[j] + half[j] * m[j]).collect(),
            variance: (0..d).map(|j| half[j] * half[j] * var_u[j]).collect(),
            covariance,
        }
    }

    /// The same plan with half the noise: the mutant the statistical tests must catch.
    #[cfg(test)]
    fn halved(&self) -> Self {
        let mut p = self.clone();
        p.noise = match &self.noise {
            Noise::Laplace(c) => Noise::Laplace(VectorCalibration {
                mechanism: crate::privacy::snapping::SnappedLaplace::new(
                    c.mechanism.scale() / 2.0,
                    c.mechanism.bound(),
                )
                .expect("valid"),
                achieved: 2.0 * c.achieved,
            }),
            Noise::Gaussian { multiplier, .. } => {
                gaussian_noise(multiplier / 2.0, self.dim(), self.params.max_rows).expect("valid")
            }
        };
        p
    }
}

#[cfg(test)]
mod tests;
