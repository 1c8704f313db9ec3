//! **Sample-and-aggregate** of an L2-regularised logistic-regression fit (Kashima,
//! lecture notes on Chapter 16 of Aggarwal & Yu 2008, *Privacy-Preserving Data Mining*, last
//! slides, "標本抽出と集約による平滑化感度の近似"; Nissim, Raskhodnikova & Smith, "Smooth Sensitivity and
//! Sampling in Private Data Analysis", STOC 2007, §4).
//!
//! **The framework** (Kashima's notes on Aggarwal & Yu 2008, ch. 16, last slides; NRS 2007 §4):
//! when the smooth sensitivity of f cannot be computed, split x into random disjoint blocks U₁ …
//! U_k, compute f on each block and combine the k values with an aggregation g whose smooth
//! sensitivity *can* be computed; the privacy analysis is then g's ("話を g の平滑化感度にすり替える"). The slide
//! names the mean as an example of g; the mean of values in [−B, B] has smooth sensitivity equal to
//! its global sensitivity 2B/k, which is the global-sensitivity baseline compared below. Here g is
//! the **median** (NRS 2007 §3–4), released by [`crate::privacy::statistics::smooth_median`].
//!
//! **What is computed.** f is the non-private fit θ̂ = argmin (1/m)Σℓ(yᵢ⟨θ, xᵢ⟩) + (λ/2)‖θ‖²
//! of [`crate::learn::solver::fit_logistic`] (λ = `l2`), θ̂ ∈ ℝ^D.
//!
//! 1. **Partition.** A uniformly random permutation π of the n rows is drawn from the
//!    [`NoiseSource`] (Fisher–Yates); block b is the rows π(b·m), …, π(b·m + m − 1) with
//!    m = ⌊n/k⌋, b = 0 … k − 1 (the n − k·m leftover rows are unused).
//! 2. **Block fits.** θ_b = f(rows of block b), each coordinate clipped to the public [−B, B]
//!    (B = `bound`). A fit that fails (solver non-convergence, a non-finite objective) or has a
//!    non-finite coordinate is replaced by the **fixed vector 0**: the fallback is a
//!    deterministic function of the block's rows only, so it is part of f; a failed block is
//!    never skipped (that would change k and the median's neighbour relation).
//! 3. **Aggregation.** For each coordinate j = 1 … D, the lower median of (θ_{1,j}, …, θ_{k,j})
//!    plus discrete Laplace noise of scale ≈ 2·S*_j/ε′ on a public grid, S*_j its smooth
//!    sensitivity with lo = −B, hi = B and β = ε′/(2 ln(2/δ′)), (ε′, δ′) = (ε/D, δ/D)
//!    (smooth_median's docs: NRS 2007 §2–3, and the discrete release's certificate). The
//!    released coefficient is clamped to [−B, B] (post-processing).
//!
//! **Neighbour relation: replace-one** on rows (n is public, as smooth sensitivity's Hamming
//! distance is over datasets of a fixed size).
//!
//! **Privacy proof.** Fix the permutation π; it is drawn from the noise source independently of
//! the data, and the block size m = ⌊n/k⌋ depends only on n and k, both public. Let x, x′ differ
//! in row i only. Row i lies in exactly one block b(i) (or in none, if it is a leftover row); the
//! other blocks hold identical rows in identical order, and the solver is deterministic
//! (bit-identical for any thread count, [`crate::learn::logistic`]), so θ_b(x) = θ_b(x′) for
//! every b ≠ b(i). Hence for every coordinate j the k-vectors (θ_{1,j}, …, θ_{k,j}) of x and x′
//! are at Hamming distance ≤ 1: neighbours under the median's replace-one relation, with every
//! value in [−B, B]. The smooth-sensitivity median with (ε′, δ′) is (ε′, δ′)-DP for such
//! neighbours (NRS 2007 §2, noise calibrated to a β-smooth upper bound with Laplace's
//! (ε/2, ε/(2 ln(2/δ)))-admissibility; see [`crate::privacy::statistics::smooth_median`]). The
//! D coordinates get independent noise, so by **basic composition** (Kashima's notes on Aggarwal &
//! Yu 2008, ch. 16, slide 11, Lemma 16.7, for ε; the δ's add as well, Dwork & Roth 2014 Theorem
//! 3.16) the vector is (D·ε′, D·δ′) = (ε, δ)-DP given π. Since this holds for every π and π is
//! independent of the data, the mixture over π is (ε, δ)-DP: P[M(x) ∈ S] = E_π P[M_π(x) ∈ S] ≤
//! E_π (e^ε P[M_π(x′) ∈ S] + δ) = e^ε P[M(x′) ∈ S] + δ. The final clamp is post-processing.
//!
//! **Sensitivities.** Each clipped block coordinate moves by at most 2B between neighbours (one
//! block, one value per coordinate); the median of k values in [−B, B] has global sensitivity 2B
//! (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 24) but local sensitivity LS(x) =
//! max(x_{m+1} − x_m, x_m − x_{m−1}) ≤ S*(x) (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slides
//! 25–27), and the noise is calibrated to S*, not to 2B. The clipped **mean** of the block values,
//! the baseline, has global sensitivity 2B/k per coordinate (one value moves by at most 2B, divided
//! by k).
//!
//! **Assumptions.** The partition's randomness comes from the same [`NoiseSource`] as the noise
//! (a secure one on release paths). The privacy proof does *not* need ‖x‖ ≤ 1 or ±1 labels
//! (any row, even a NaN one, only changes its block's fit, and clipping bounds every value);
//! the normalisation matters for utility, and ‖θ̂‖ ≤ 1/λ then holds for every block fit
//! (stationarity: λθ̂ = −(1/m)Σℓ′·yᵢxᵢ with |ℓ′| ≤ 1), so B = 1/λ never clips. The noise is
//! smooth_median's exact discrete Laplace on a public grid of [−B, B] (no floating-point leak;
//! its (ε′, δ′) is certified for the discrete law, smooth_median's docs).
//!
//! **Refusals.** ε not finite and positive, δ ∉ (0, 1), k < 3, B or λ not finite and positive,
//! D = 0, a dataset of another dimension, and n < k (blocks would be empty). All of these depend
//! on public quantities only (parameters, the schema's D, n under replace-one):
//! [`SampleAggregateError::is_data_independent`] says so. No refusal depends on the rows' values.
//!
//! **When it helps, and when it is useless** (the comparison in Kashima's notes (Aggarwal & Yu
//! 2008, ch. 16) of the smooth-sensitivity median with global sensitivity). With β = ε′/(2
//! ln(2/δ′)), ε′ = ε/D, δ′ = δ/D, the noise of a coordinate is 2S*/ε′ with S* ≈ max(c·s/(βk),
//! B·e^{−βk/2}): s is the spread of the k block fits (∝ 1/√m, m = n/k rows per block), and the
//! second term is the price of the bound, since ≈ k/2 changed blocks move the median to ±B. The
//! baseline, the mean of the same clipped fits, has noise 2B/(kε′) (global sensitivity 2B/k). Hence
//! sample-and-aggregate
//! - needs **k ≫ 2 ln(B/s)/β ≈ 4D ln(2D/δ)·ln(B/s)/ε** blocks — thousands for D = 5, ε = 1,
//!   δ = 10⁻⁵ (β ≈ 0.0072): with k = 1 000 the bound's term alone gives a noise scale of 27
//!   and the released classifier is a coin flip; it is **useless** when n is too small to give
//!   that many blocks that can each be fitted (m rows per block must give a fit concentrated
//!   around the full-data direction: the fit lies in the span of its m rows, a proper
//!   subspace when m < D, and any bias of f at m rows is what the median estimates);
//! - then has noise ∝ s/(βkε′) ∝ D² ln(2D/δ)/(ε²√(kn)): it **helps** when n is large and D
//!   small, and it adapts to the data: its noise does not depend on B (once βk/2 ≫ ln(B/s)),
//!   where the baseline pays for B linearly. With a tight bound the baseline wins; with a
//!   loose one (B far above the fits, as for an f whose range is not known) it loses.
//!
//! For this f a tight bound is known (B = 1/λ), and the whole-data fit even has a known
//! sensitivity (2/(nλ), CMS 2011; [`crate::privacy::mechanism`]'s output perturbation), so
//! sample-and-aggregate is not the learner to use here; it is the route for an f without one.
//!
//! Measured (`cargo test -p dpagg-shared --release --lib sample_aggregate -- --ignored
//! --nocapture`: rows uniform in [−1, 1]⁵/√5, P[y = 1 | x] = σ(⟨θ*, x⟩), θ* = (6, −4, 3, 0, 1),
//! Bayes accuracy 0.788, 20 000 test rows; λ = 0.01, ε = 1, δ = 10⁻⁵; accuracy averaged over
//! 20 releases of the same block fits, worst in brackets; "GS" is the baseline):
//!
//! ```text
//!   n        k       m    non-private   B = 1/λ = 100: S&A   GS              B = 10⁴: S&A   GS
//!   20 000   1 000   20   0.787         0.523 (0.303)   0.710 (0.524)    0.500          0.490
//!   20 000   10 000  2    0.787         0.755 (0.645)   0.785 (0.778)    0.755 (0.645)  0.540
//!   200 000  10 000  20   0.788         0.784 (0.762)   0.787 (0.786)    0.784 (0.762)  0.535
//!   200 000  50 000  4    0.788         0.787 (0.786)   0.787 (0.786)    0.787 (0.786)  0.581
//! ```
//!
//! (noise scales at n = 20 000, k = 10 000: S&A ≤ 0.357, GS 0.1 at B = 100 and 10 at B = 10⁴).
//! At n = 20 000 only k = n/2 blocks of 2 rows leave the bound's term negligible: the release is
//! 3 points below the non-private fit on average and 14 in the worst of 20. On Minami et al.'s
//! (2015) separable sphere data (D = 5, n = 20 000, same k, λ, B = 100) it is 0.940 (worst 0.858)
//! against 1.000 non-private and 0.978 for GS. (Measured with the exact discrete noise of issue
//! 23; the f64 Laplace it replaced, at the same scale, gave 0.758 (worst 0.694) in the second
//! row — the worst of 20 releases varies with the noise stream, the law does not.)

use crate::data::dataset::Dataset;
use crate::learn::solver::fit_logistic;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::smooth_median::{self, SmoothMedianError, SmoothMedianParams};
use rand::seq::SliceRandom;

/// The fewest blocks allowed: with k ≤ 2 the lower median is the smallest block value, which one
/// block alone moves anywhere in [−B, B] (nothing is aggregated).
pub const MIN_BLOCKS: usize = 3;

/// Why a sample-and-aggregate release cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleAggregateError {
    /// ε is not finite and positive.
    #[error("invalid epsilon {0}: must be finite and > 0")]
    InvalidEpsilon(f64),
    /// δ is not in (0, 1).
    #[error("invalid delta {0}: must be in (0, 1)")]
    InvalidDelta(f64),
    /// Fewer than [`MIN_BLOCKS`] blocks.
    #[error("{0} blocks: sample-and-aggregate needs at least 3")]
    TooFewBlocks(usize),
    /// The clipping bound B is not finite and positive.
    #[error("invalid bound {0}: must be finite and > 0")]
    InvalidBound(f64),
    /// The regulariser λ is not finite and positive.
    #[error("invalid l2 {0}: must be finite and > 0")]
    InvalidL2(f64),
    /// The dimension D is 0.
    #[error("the dimension must be at least 1")]
    ZeroDimension,
    /// The dataset's dimension is not the mechanism's D.
    #[error("the dataset has dimension {got}, the mechanism was built for {expected}")]
    DimensionMismatch {
        /// The mechanism's D.
        expected: usize,
        /// The dataset's dimension.
        got: usize,
    },
    /// The per-coordinate smooth median is outside its proof (ε per coordinate too large).
    #[error("per coordinate: {0}")]
    MedianOutsideProof(String),
    /// Fewer rows than blocks: some block would be empty.
    #[error("{rows} rows cannot fill {blocks} non-empty blocks")]
    TooFewRows {
        /// n.
        rows: usize,
        /// k.
        blocks: usize,
    },
    /// [`SampleAggregate::aggregate`] was given another number of block estimates than k.
    #[error("{got} block estimates given, the mechanism has {expected} blocks")]
    EstimateCount {
        /// k.
        expected: usize,
        /// Estimates given.
        got: usize,
    },
    /// A block estimate has another length than D.
    #[error("block estimate {block} has {got} coordinates, expected {expected}")]
    EstimateLength {
        /// Block index.
        block: usize,
        /// D.
        expected: usize,
        /// Its length.
        got: usize,
    },
    /// The median release refused its input (a NaN estimate passed to `aggregate`).
    #[error("median of coordinate {coordinate}: {source}")]
    Median {
        /// Coordinate index.
        coordinate: usize,
        /// The median's error.
        source: SmoothMedianError,
    },
}

impl SampleAggregateError {
    /// True when the refusal depends only on public quantities (the parameters, the dimension
    /// D of the public schema, n under replace-one, the shape of the estimates), so refusing
    /// reveals nothing about the rows' values. False only for a NaN estimate passed to
    /// [`SampleAggregate::aggregate`] (never produced by [`SampleAggregate::release`], whose
    /// estimates are clipped and NaN-free).
    pub fn is_data_independent(&self) -> bool {
        match self {
            Self::Median { source, .. } => !matches!(source, SmoothMedianError::NotANumber(_)),
            _ => true,
        }
    }
}

/// Parameters of the release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleAggregateParams {
    /// ε of the (ε, δ) guarantee (split as ε/D over the coordinates).
    pub epsilon: f64,
    /// δ of the (ε, δ) guarantee (split as δ/D over the coordinates).
    pub delta: f64,
    /// k, the number of disjoint blocks (≥ 3).
    pub blocks: usize,
    /// λ of each block's fit, (λ/2)‖θ‖².
    pub l2: f64,
    /// B: each block coordinate is clipped to [−B, B]. B = 1/λ never clips on the unit ball.
    pub bound: f64,
}

/// The calibrated mechanism for a dimension D.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleAggregate {
    params: SampleAggregateParams,
    dim: usize,
    median: SmoothMedianParams,
}

/// A released classifier with its guarantee.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleAggregateRelease {
    /// (ε, δ)-DP under replace-one.
    pub guarantee: PrivacyGuarantee,
    /// θ ∈ [−B, B]^D: per coordinate the noisy median of the block fits, clamped.
    pub coefficients: Vec<f64>,
    /// k.
    pub blocks: usize,
    /// m = ⌊n/k⌋ rows per block.
    pub block_size: usize,
}

impl SampleAggregate {
    /// Validates the parameters for dimension `dim` (module docs, "Refusals").
    pub fn new(params: SampleAggregateParams, dim: usize) -> Result<Self, SampleAggregateError> {
        if !(params.epsilon.is_finite() && params.epsilon > 0.0) {
            return Err(SampleAggregateError::InvalidEpsilon(params.epsilon));
        }
        if !(params.delta > 0.0 && params.delta < 1.0) {
            return Err(SampleAggregateError::InvalidDelta(params.delta));
        }
        if params.blocks < MIN_BLOCKS {
            return Err(SampleAggregateError::TooFewBlocks(params.blocks));
        }
        if !(params.bound.is_finite() && params.bound > 0.0) {
            return Err(SampleAggregateError::InvalidBound(params.bound));
        }
        if !(params.l2.is_finite() && params.l2 > 0.0) {
            return Err(SampleAggregateError::InvalidL2(params.l2));
        }
        if dim == 0 {
            return Err(SampleAggregateError::ZeroDimension);
        }
        let d = dim as f64;
        let median = SmoothMedianParams {
            epsilon: params.epsilon / d,
            delta: params.delta / d,
            lo: -params.bound,
            hi: params.bound,
        };
        if median.epsilon <= 0.0 {
            return Err(SampleAggregateError::InvalidEpsilon(params.epsilon));
        }
        // Each coordinate's median inherits the smooth median's range of validity.
        median
            .check()
            .map_err(|e| SampleAggregateError::MedianOutsideProof(e.to_string()))?;
        Ok(Self {
            params,
            dim,
            median,
        })
    }

    /// The parameters.
    pub fn params(&self) -> &SampleAggregateParams {
        &self.params
    }

    /// D.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Each coordinate's median release: (ε/D, δ/D) on [−B, B] (basic composition).
    pub fn coordinate_params(&self) -> &SmoothMedianParams {
        &self.median
    }

    /// (ε, δ)-DP under replace-one (module docs, "Privacy proof").
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.params.epsilon, self.params.delta)
    }

    /// m = ⌊n/k⌋, refused when n < k (public under replace-one).
    pub fn block_size(&self, rows: usize) -> Result<usize, SampleAggregateError> {
        let k = self.params.blocks;
        if rows < k {
            return Err(SampleAggregateError::TooFewRows { rows, blocks: k });
        }
        Ok(rows / k)
    }

    /// The k disjoint blocks of m = ⌊n/k⌋ row indices of a uniformly random permutation of
    /// 0 … n − 1 drawn from `rng` (a function of n and the randomness only, never of the rows).
    pub fn partition(
        &self,
        rows: usize,
        rng: &mut NoiseSource,
    ) -> Result<Vec<Vec<usize>>, SampleAggregateError> {
        let m = self.block_size(rows)?;
        let mut order: Vec<usize> = (0..rows).collect();
        order.shuffle(rng);
        Ok(order
            .chunks_exact(m)
            .take(self.params.blocks)
            .map(<[usize]>::to_vec)
            .collect())
    }

    /// f on one block: the fit clipped to [−B, B], or the fixed 0 when the fit fails.
    fn block_fit(&self, block: &Dataset) -> Vec<f64> {
        let b = self.params.bound;
        match fit_logistic(block, self.params.l2) {
            Ok(fit) if fit.theta.iter().all(|t| t.is_finite()) => {
                fit.theta.iter().map(|t| t.clamp(-b, b)).collect()
            }
            _ => vec![0.0; self.dim],
        }
    }

    /// The k clipped block fits θ_b ∈ [−B, B]^D of a partition drawn from `rng` (module docs,
    /// steps 1–2). Not private by itself: this is the input of [`SampleAggregate::aggregate`].
    pub fn block_estimates(
        &self,
        data: &Dataset,
        rng: &mut NoiseSource,
    ) -> Result<Vec<Vec<f64>>, SampleAggregateError> {
        if data.dim() != self.dim {
            return Err(SampleAggregateError::DimensionMismatch {
                expected: self.dim,
                got: data.dim(),
            });
        }
        let blocks = self.partition(data.len(), rng)?;
        Ok(blocks
            .iter()
            .map(|rows| self.block_fit(&data.subset(rows)))
            .collect())
    }

    /// Checks that `estimates` are k vectors of length D.
    fn check_shape(&self, estimates: &[Vec<f64>]) -> Result<(), SampleAggregateError> {
        if estimates.len() != self.params.blocks {
            return Err(SampleAggregateError::EstimateCount {
                expected: self.params.blocks,
                got: estimates.len(),
            });
        }
        if let Some((block, e)) = estimates
            .iter()
            .enumerate()
            .find(|(_, e)| e.len() != self.dim)
        {
            return Err(SampleAggregateError::EstimateLength {
                block,
                expected: self.dim,
                got: e.len(),
            });
        }
        Ok(())
    }

    /// Coordinate j of every block estimate.
    fn column(estimates: &[Vec<f64>], j: usize) -> Vec<f64> {
        estimates.iter().map(|e| e[j]).collect()
    }

    /// The discrete Laplace scale ≈ 2·S*_j/ε′ of each coordinate for these block estimates, in
    /// the coefficients' units (smooth_median's [`smooth_median::noise_scale`] with (ε/D, δ/D)
    /// on [−B, B]).
    pub fn noise_scales(&self, estimates: &[Vec<f64>]) -> Result<Vec<f64>, SampleAggregateError> {
        self.check_shape(estimates)?;
        (0..self.dim)
            .map(|j| {
                smooth_median::noise_scale(&Self::column(estimates, j), &self.median).map_err(
                    |source| SampleAggregateError::Median {
                        coordinate: j,
                        source,
                    },
                )
            })
            .collect()
    }

    /// Step 3 without the final clamp: per coordinate, the median of the k estimates (clipped to
    /// [−B, B]) plus exact discrete Laplace noise of scale ≈ 2·S*_j/ε′ on the public grid.
    /// (ε, δ)-DP under replace-one on the k estimates (one estimate replaced).
    pub fn aggregate(
        &self,
        estimates: &[Vec<f64>],
        rng: &mut NoiseSource,
    ) -> Result<Vec<f64>, SampleAggregateError> {
        self.check_shape(estimates)?;
        (0..self.dim)
            .map(|j| {
                smooth_median::release(&Self::column(estimates, j), &self.median, rng)
                    .map(|m| m.value)
                    .map_err(|source| SampleAggregateError::Median {
                        coordinate: j,
                        source,
                    })
            })
            .collect()
    }

    /// Releases θ: partition, block fits, noisy medians clamped to [−B, B] (module docs);
    /// (ε, δ)-DP under replace-one.
    pub fn release(
        &self,
        data: &Dataset,
        rng: &mut NoiseSource,
    ) -> Result<SampleAggregateRelease, SampleAggregateError> {
        let block_size = self.block_size(data.len())?;
        let estimates = self.block_estimates(data, rng)?;
        let b = self.params.bound;
        let coefficients = self
            .aggregate(&estimates, rng)?
            .into_iter()
            .map(|t| t.clamp(-b, b))
            .collect();
        Ok(SampleAggregateRelease {
            guarantee: self.guarantee(),
            coefficients,
            blocks: self.params.blocks,
            block_size,
        })
    }
}

#[cfg(test)]
mod tests;
