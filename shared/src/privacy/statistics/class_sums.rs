//! Counts, sums and means of a node's rows, per class and per feature, by the **Laplace mechanism
//! with global sensitivity** (Kashima, lecture notes on Chapter 16 of Aggarwal & Yu 2008,
//! *Privacy-Preserving Data Mining*, slide numbers as printed on its pages; slides 13–14, Lap(1/ε)
//! for a sum query; slide 15, "Lap(GS_f/ε) is ε-differentially private" with
//! GS_f = max over neighbours of ||f(x) − f(x′)||₁; slide 18, the global sensitivities of sums,
//! means and histograms; slide 19, a histogram and subset sums released together with ε′ = ε/2
//! each; slide 11, Lemma 16.7, basic composition ε′ = Σᵢ εᵢ).
//!
//! **What is released.** The public schema declares for each feature j bounds lo_j < hi_j
//! ([`crate::data::schema::FeatureSpec`]). Statistics are of the **raw values clipped to
//! [lo_j, hi_j]** (not of normalised values): organisations agree normalisations in raw units, and
//! the clipping is what makes the sensitivity finite. With centre c_j = (lo_j + hi_j)/2 and
//! half-width r_j = (hi_j − lo_j)/2, each clipped value v becomes the centred value
//! u = clamp(v − c_j, −r_j, r_j), quantised to q = round(u/r_j · 2^22) ∈ [−2^22, 2^22] (an error
//! of at most r_j·2^{-23} per value) so that every sum below is an exact integer, exactly
//! representable in f64 (|Σq| ≤ 2^30·2^22 = 2^52). Two quantities are released with noise:
//!
//! 1. the class histogram (n₋, n₊): the number of rows of each class;
//! 2. for each feature j, the centred class sums (Q₋,j, Q₊,j), Q_{k,j} = Σ_{rows of class k} q.
//!
//! Everything else is post-processing (no further ε): the sum of clipped values
//! s_{k,j} = c_j·ñ_k + Q̃_{k,j}·r_j·2^{-22}, the mean m_{k,j} = clamp(c_j + Q̃_{k,j}·r_j·2^{-22} /
//! max(ñ_k, 1), lo_j, hi_j), and the totals over both classes (Kashima's notes on Aggarwal & Yu
//! 2008, ch. 16, slide 19: the cluster means are computed by the user from the noisy sums and
//! counts). Centring makes the sum's sensitivity hi − lo instead of 2·max(|lo|, |hi|).
//!
//! **Sensitivities** (ℓ₁, of the exact integer vectors; GS_f of Kashima's notes on Aggarwal & Yu
//! 2008, ch. 16, slide 15):
//! - replace-one (one row replaced by any other row, with any label):
//!   - histogram: **2** (a row that changes class moves one unit from one count to the other;
//!     Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 18, "GS_hist = 2");
//!   - centred sums of feature j: **2·2^22** units = **hi_j − lo_j** in raw units (same class:
//!     |q − q′| ≤ 2·2^22; class changes: |q| + |q′| ≤ 2·2^22;
//!     Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 18's subset sum);
//! - add/remove-one (one row added or removed):
//!   - histogram: **1**;
//!   - centred sums of feature j: **2^22** units = **(hi_j − lo_j)/2** in raw units.
//!
//! **Composition** (Kashima's notes on Aggarwal & Yu 2008, ch. 16, Lemma 16.7): ε is split equally
//! over the d + 1 released quantities, εᵢ = ε/(d + 1) for the histogram and for each feature's pair
//! of sums; their independent noise composes to ε.
//!
//! **Noise.** Each coordinate gets Laplace noise of scale λᵢ through Mironov's snapping mechanism
//! ([`crate::privacy::snapping::SnappedLaplace`], Mironov 2012 Theorem 1), so the floating-point
//! attack on x + Lap(λ) does not apply. The clamping bound is public: B = max_rows for counts and
//! max_rows·2^22 for centred sums (which bound the true values when n ≤ max_rows). Theorem 1
//! bounds the log-ratio of one coordinate by |x − x′|/λ + 2^{-49}·B/λ, so for a pair of coordinates
//! with ℓ₁ sensitivity Δ it is (Δ + 2·2^{-49}·B)/λ. The scale is
//! **λᵢ = (Δᵢ + 2^{-48}·Bᵢ)/(εᵢ − 2^{-46})·(1 + 2^{-40})** (B is raised by less than 4λ onto
//! the grid), and the achieved εᵢ is checked against the budget after construction: the
//! floating-point price is paid inside ε. To first order λᵢ = Δᵢ/εᵢ, Lap(GS_f/ε) of slide 15.
//!
//! **Guarantee:** ε-DP (δ = 0) under the chosen neighbour relation
//! ([`crate::privacy::guarantee::NeighbourRelation`]), under Theorem 1's assumptions (IEEE-754
//! arithmetic, an accurate `ln`). **Assumptions:** max_rows is public and n ≤ max_rows ≤ 2^30
//! (a larger n is refused, which under add/remove-one reveals that n > max_rows: set it
//! generously); values are not NaN (a NaN is refused; a schema's `missing` sentinel is clipped
//! like any value, so callers drop or impute missing values first).

use super::{InputError, centres_and_half_widths, check_features, check_max_rows, check_rows};
use crate::data::schema::FeatureSpec;
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::{SnappedLaplace, SnappingError, calibrate_vector};

/// Bits of the fixed-point quantisation of centred values: q ∈ [−2^22, 2^22].
pub const QUANT_BITS: i32 = 22;

/// 2^22: one half-width r_j in quantisation units.
pub const QUANT_UNITS: f64 = (1u64 << QUANT_BITS) as f64;

/// A class of the binary label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// The negative class (label −1).
    Negative,
    /// The positive class (label +1).
    Positive,
}

impl Class {
    fn index(self) -> usize {
        match self {
            Self::Negative => 0,
            Self::Positive => 1,
        }
    }
}

/// Why statistics cannot be planned or released.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// ε is not finite and positive.
    #[error("invalid epsilon {0}: must be finite and > 0")]
    InvalidEpsilon(f64),
    /// The schema or the rows.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The snapping mechanism refused its parameters, or ε/(d + 1) leaves nothing after its
    /// floating-point term.
    #[error("snapping: {0}")]
    Snapping(#[from] SnappingError),
}

/// Parameters of a release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassSumsParams {
    /// Total ε of the release (δ = 0).
    pub epsilon: f64,
    /// Neighbour relation the sensitivities and the guarantee are stated under.
    pub relation: NeighbourRelation,
    /// Public upper bound on the number of rows (the snapping bound; see the module docs).
    pub max_rows: usize,
}

/// The exact (noise-free) integer statistics the mechanism perturbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExactStatistics {
    /// Rows per class, indexed [negative, positive].
    pub counts: [u64; 2],
    /// Per feature, the centred quantised sums Q_{k,j} per class, in units of r_j·2^{-22}.
    pub centred_sums: Vec<[i64; 2]>,
}

/// The calibrated mechanism for one schema: bounds, sensitivities and snapped Laplace scales.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSumsPlan {
    params: ClassSumsParams,
    lo: Vec<f64>,
    hi: Vec<f64>,
    centre: Vec<f64>,
    half_width: Vec<f64>,
    count_mechanism: SnappedLaplace,
    sum_mechanism: SnappedLaplace,
    achieved: Vec<f64>,
}

/// λ = (Δ + 2^{-48}·B)/(εᵢ − 2^{-46})·(1 + 2^{-40}) and its snapping mechanism (module docs):
/// [`calibrate_vector`] for a pair of coordinates.
fn calibrate(
    sensitivity: f64,
    bound: f64,
    share: f64,
) -> Result<(SnappedLaplace, f64), StatsError> {
    let c = calibrate_vector(sensitivity, 2, bound, share)?;
    Ok((c.mechanism, c.achieved))
}

impl ClassSumsPlan {
    /// Calibrates the release for the schema's features (their `lo`/`hi`) and `params`.
    pub fn new(features: &[FeatureSpec], params: ClassSumsParams) -> Result<Self, StatsError> {
        if !(params.epsilon.is_finite() && params.epsilon > 0.0) {
            return Err(StatsError::InvalidEpsilon(params.epsilon));
        }
        check_features(features)?;
        check_max_rows(params.max_rows)?;
        let lo: Vec<f64> = features.iter().map(|f| f.lo).collect();
        let hi: Vec<f64> = features.iter().map(|f| f.hi).collect();
        let (centre, half_width) = centres_and_half_widths(features);
        let quantities = features.len() + 1;
        let share = params.epsilon / quantities as f64;
        let (count_sens, sum_sens) = Self::unit_sensitivities(params.relation);
        let max_rows = params.max_rows as f64;
        let (count_mechanism, count_eps) = calibrate(count_sens, max_rows, share)?;
        let (sum_mechanism, sum_eps) = calibrate(sum_sens, max_rows * QUANT_UNITS, share)?;
        let mut achieved = vec![count_eps];
        achieved.extend(std::iter::repeat_n(sum_eps, features.len()));
        Ok(Self {
            params,
            lo,
            hi,
            centre,
            half_width,
            count_mechanism,
            sum_mechanism,
            achieved,
        })
    }

    /// ℓ₁ global sensitivities (histogram, one feature's centred sums in quantisation units)
    /// under `relation` (module docs; Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 18).
    pub fn unit_sensitivities(relation: NeighbourRelation) -> (f64, f64) {
        match relation {
            NeighbourRelation::ReplaceOne => (2.0, 2.0 * QUANT_UNITS),
            NeighbourRelation::AddRemoveOne => (1.0, QUANT_UNITS),
        }
    }

    /// The snapped Laplace mechanism of each class count (scale λ₀ ≈ Δ_hist/εᵢ).
    pub fn count_mechanism(&self) -> &SnappedLaplace {
        &self.count_mechanism
    }

    /// The snapped Laplace mechanism of each centred sum, in quantisation units (scale ≈
    /// Δ_sum/εᵢ; the same for every feature, since units are relative to r_j).
    pub fn sum_mechanism(&self) -> &SnappedLaplace {
        &self.sum_mechanism
    }

    /// Laplace scale of feature j's class sums in raw units: λ·r_j·2^{-22} ≈ (hi_j − lo_j)/εᵢ
    /// under replace-one, (hi_j − lo_j)/(2εᵢ) under add/remove-one.
    pub fn sum_scale_raw(&self, j: usize) -> Option<f64> {
        self.half_width
            .get(j)
            .map(|r| self.sum_mechanism.scale() * r / QUANT_UNITS)
    }

    /// Theorem 1's ε of each released quantity (histogram first), each ≤ ε/(d + 1).
    pub fn achieved_epsilons(&self) -> &[f64] {
        &self.achieved
    }

    /// The guarantee of a release: ε-DP, δ = 0, under the chosen relation.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee {
            epsilon: self.params.epsilon,
            delta: 0.0,
            relation: self.params.relation,
        }
    }

    /// The exact statistics: class counts and centred quantised class sums of the clipped rows.
    /// `positive[i]` is row i's label (true for the positive class).
    pub fn exact(
        &self,
        rows: &[Vec<f64>],
        positive: &[bool],
    ) -> Result<ExactStatistics, StatsError> {
        let d = self.lo.len();
        check_rows(rows, positive, d, self.params.max_rows)?;
        let mut counts = [0u64; 2];
        let mut centred_sums = vec![[0i64; 2]; d];
        for (values, &pos) in rows.iter().zip(positive) {
            let k = if pos { 1 } else { 0 };
            counts[k] += 1;
            for (feature, &v) in values.iter().enumerate() {
                centred_sums[feature][k] += self.quantise(feature, v);
            }
        }
        Ok(ExactStatistics {
            counts,
            centred_sums,
        })
    }

    /// q = round(clamp((v − c)/r, −1, 1)·2^22) ∈ [−2^22, 2^22] for a non-NaN v.
    fn quantise(&self, feature: usize, v: f64) -> i64 {
        let (l, h) = (self.lo[feature], self.hi[feature]);
        let u = (v.clamp(l, h) - self.centre[feature]) / self.half_width[feature];
        // |q| ≤ 2^22 whatever rounding did to u.
        (u.clamp(-1.0, 1.0) * QUANT_UNITS).round() as i64
    }

    /// Releases the statistics of `rows` (raw values) with labels `positive`.
    pub fn release(
        &self,
        rows: &[Vec<f64>],
        positive: &[bool],
        rng: &mut NoiseSource,
    ) -> Result<LaplaceStatistics, StatsError> {
        let exact = self.exact(rows, positive)?;
        let mut counts = [0.0; 2];
        for (noisy, &c) in counts.iter_mut().zip(&exact.counts) {
            *noisy = self.count_mechanism.sample(c as f64, rng)?;
        }
        let mut centred_sums = Vec::with_capacity(exact.centred_sums.len());
        for sums in &exact.centred_sums {
            let mut noisy = [0.0; 2];
            for (out, &s) in noisy.iter_mut().zip(sums) {
                *out = self.sum_mechanism.sample(s as f64, rng)?;
            }
            centred_sums.push(noisy);
        }
        Ok(LaplaceStatistics {
            guarantee: self.guarantee(),
            lo: self.lo.clone(),
            hi: self.hi.clone(),
            centre: self.centre.clone(),
            half_width: self.half_width.clone(),
            counts,
            centred_sums,
        })
    }
}

/// A release: noisy class counts and centred class sums, with its guarantee; sums and means are
/// post-processing of them (module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct LaplaceStatistics {
    guarantee: PrivacyGuarantee,
    lo: Vec<f64>,
    hi: Vec<f64>,
    centre: Vec<f64>,
    half_width: Vec<f64>,
    counts: [f64; 2],
    centred_sums: Vec<[f64; 2]>,
}

impl LaplaceStatistics {
    /// The guarantee of this release.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        self.guarantee
    }

    /// Number of features.
    pub fn dim(&self) -> usize {
        self.lo.len()
    }

    /// Noisy number of rows of `class`.
    pub fn count(&self, class: Class) -> f64 {
        self.counts[class.index()]
    }

    /// Noisy number of rows.
    pub fn total_count(&self) -> f64 {
        self.counts[0] + self.counts[1]
    }

    fn centred_raw(&self, j: usize, k: usize) -> Option<f64> {
        let s = self.centred_sums.get(j)?;
        Some(s[k] * self.half_width[j] / QUANT_UNITS)
    }

    /// Noisy sum of feature j's clipped values over rows of `class`: c_j·ñ_k + Q̃·r_j·2^{-22}.
    pub fn sum(&self, class: Class, j: usize) -> Option<f64> {
        let k = class.index();
        Some(self.centre.get(j)? * self.counts[k] + self.centred_raw(j, k)?)
    }

    /// Noisy sum of feature j's clipped values over all rows.
    pub fn total_sum(&self, j: usize) -> Option<f64> {
        Some(self.sum(Class::Negative, j)? + self.sum(Class::Positive, j)?)
    }

    /// Noisy mean of feature j over rows of `class`: c_j + centred sum / max(ñ_k, 1), clamped to
    /// [lo_j, hi_j].
    pub fn mean(&self, class: Class, j: usize) -> Option<f64> {
        let k = class.index();
        let m = self.centre.get(j)? + self.centred_raw(j, k)? / self.counts[k].max(1.0);
        Some(m.clamp(self.lo[j], self.hi[j]))
    }

    /// Noisy mean of feature j over all rows, clamped to [lo_j, hi_j].
    pub fn total_mean(&self, j: usize) -> Option<f64> {
        let centred = self.centred_raw(j, 0)? + self.centred_raw(j, 1)?;
        let m = self.centre.get(j)? + centred / self.total_count().max(1.0);
        Some(m.clamp(self.lo[j], self.hi[j]))
    }
}

#[cfg(test)]
mod tests;
