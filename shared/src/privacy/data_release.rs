//! Data releases: what a node publishes besides learners (issue 14) — private statistics (seed
//! 002) and private synthetic data (seed 003) — as one spec type, one calibration step and one
//! dispatcher, so node, wire and lab name them the same way.
//!
//! **Two steps, as for learners.** [`plan`] calibrates a release from its [`DataSpec`] and public
//! quantities only (the schema's bounds, the number of rows n — public under replace-one, which
//! every release publishes — and the dimension): the [`PlannedData`] carries its guarantee and,
//! where the mechanism has one, its RDP curve, so a node checks its policy and records the charge
//! *before* any record is read (invariant 3). [`PlannedData::run`] then reads the data and draws
//! the noise. Every mechanism is one file under [`crate::privacy::statistics`] or
//! [`crate::privacy::synthetic`], which states its paper, equation, sensitivity and neighbour
//! relation; this module only maps names and options to them.
//!
//! **Neighbour relation.** Every kind is stated under replace-one with n public (the node's
//! budget relation; n is in every release).
//!
//! **Inputs.** Statistics and synthetic data are of the raw feature values clipped to the
//! schema's [lo, hi] ([`DataInput::raw`]); sample-and-aggregate fits the normalised rows
//! ([`DataInput::dataset`]), as learners do.
//!
//! **Errors.** [`DataReleaseError::is_data_independent`] tells refusals computed from public
//! quantities (a bad option, too many rows asked for) — refunded by the node — from failures
//! after the data was read (a propose-test-release test that failed), whose charge stands.

use crate::data::Dataset;
use crate::data::schema::FeatureSpec;
use crate::privacy::accounting::RdpCurve;
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::privacy::statistics::histogram::{HistogramParams, HistogramPlan};
use crate::privacy::statistics::laplace_stats::{Class, LaplaceStatsParams, LaplaceStatsPlan};
use crate::privacy::statistics::moments::{ClassMoments, MomentNoise, MomentsParams, MomentsPlan};
use crate::privacy::statistics::sample_aggregate::{SampleAggregate, SampleAggregateParams};
use crate::privacy::statistics::smooth_median::{self, SmoothMedianParams};
use crate::privacy::synthetic::mvn_release::{
    MvnGaussian, MvnGaussianParams, MvnPlain, MvnPlainParams,
};
use std::collections::BTreeMap;

/// Most synthetic values (rows × (d + 1)) one release may carry: 16 MB of f64.
pub const MAX_SYNTHETIC_VALUES: usize = 2_000_000;

/// The kinds of data release a node offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DataKind {
    /// Per-class counts, sums and means by snapped Laplace ([`crate::privacy::statistics::laplace_stats`]).
    LaplaceStatistics,
    /// Per-class count, sum, mean, variance and covariance by snapped Laplace.
    MomentsLaplace,
    /// The same by the Gaussian mechanism.
    MomentsGaussian,
    /// Per-feature, per-class histograms over public bins.
    Histogram,
    /// Per-feature medians by smooth sensitivity.
    SmoothMedian,
    /// Logistic-regression coefficients by sample-and-aggregate.
    SampleAggregate,
    /// Seed 003's MVN synthetic rows, no added noise.
    MvnSynthetic,
    /// MVN synthetic rows from a Gaussian-perturbed mean and covariance.
    MvnSyntheticGaussian,
}

impl DataKind {
    /// Every kind with its wire name.
    pub const ALL: [(&'static str, DataKind); 8] = [
        ("laplace-statistics", Self::LaplaceStatistics),
        ("moments-laplace", Self::MomentsLaplace),
        ("moments-gaussian", Self::MomentsGaussian),
        ("histogram", Self::Histogram),
        ("smooth-median", Self::SmoothMedian),
        ("sample-and-aggregate", Self::SampleAggregate),
        ("mvn-synthetic", Self::MvnSynthetic),
        ("mvn-synthetic-gaussian", Self::MvnSyntheticGaussian),
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// The kind of a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// The options the kind takes, with their defaults.
    pub fn options(self) -> &'static [(&'static str, f64)] {
        match self {
            Self::LaplaceStatistics | Self::MomentsLaplace | Self::MomentsGaussian => &[],
            Self::SmoothMedian => &[],
            Self::Histogram => &[("bins", 10.0)],
            // blocks 0: ⌊n/2⌋ blocks of two rows; bound 0: 1/l2, which bounds every fit's norm
            // (‖θ̂‖ ≤ 1/λ for rows in the unit ball), so the clipping never binds.
            Self::SampleAggregate => &[("blocks", 0.0), ("l2", 0.01), ("bound", 0.0)],
            Self::MvnSynthetic => &[("rows", 1000.0), ("sigma", 0.01), ("test_epsilon", 0.1)],
            Self::MvnSyntheticGaussian => &[("rows", 1000.0), ("eigen_floor", 1e-3)],
        }
    }

    /// Whether δ must be 0 (ε-DP kinds), or > 0.
    fn pure(self) -> bool {
        matches!(
            self,
            Self::LaplaceStatistics | Self::MomentsLaplace | Self::Histogram
        )
    }

    /// The paper, section and equation the kind implements.
    pub fn reference(self) -> &'static str {
        match self {
            Self::LaplaceStatistics => {
                "Laplace mechanism with global sensitivity (seed 002 slides 15-19; Dwork et al. 2006), snapped (Mironov 2012 Thm 1)"
            }
            Self::MomentsLaplace => {
                "Laplace mechanism on (n_k, sum u, sum triu(uu^T)) with l1 global sensitivity (seed 002 slides 15-18), snapped (Mironov 2012 Thm 1)"
            }
            Self::MomentsGaussian => {
                "Gaussian mechanism on (n_k, sum u, sum triu(uu^T)) with l2 global sensitivity, RDP (Mironov 2017 Prop 7), as exact discrete Gaussian noise on a public grid (Canonne, Kamath & Steinke 2020)"
            }
            Self::Histogram => {
                "Laplace mechanism on histograms, GS_hist = 2 per histogram (seed 002 slide 18), snapped (Mironov 2012 Thm 1)"
            }
            Self::SmoothMedian => {
                "Median with smooth sensitivity, beta = eps/(2 ln(2/delta)), Lap(2S*/eps) as exact discrete Laplace noise on a public grid (seed 002 slides 24-27; Nissim, Raskhodnikova & Smith 2007; Canonne, Kamath & Steinke 2020)"
            }
            Self::SampleAggregate => {
                "Sample-and-aggregate of a logistic-regression fit, smooth-sensitivity median per coordinate (seed 002 last slides; NRS 2007 sec. 4)"
            }
            Self::MvnSynthetic => {
                "MVN synthetic data without added noise, Theorem 3.2 with Prop. 2.4 (seed 003, Miura et al.), after propose-test-release of the eigenvalue assumption (Dwork & Lei 2009)"
            }
            Self::MvnSyntheticGaussian => {
                "MVN synthetic data from a mean and second moment perturbed by the Gaussian mechanism (RDP, Mironov 2017 Prop 7) as exact discrete Gaussian noise on a public grid (Canonne, Kamath & Steinke 2020); sampling is post-processing"
            }
        }
    }
}

impl std::fmt::Display for DataKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What data release to make: a kind, its (ε, δ) and options (absent options take the kind's
/// defaults). Its identity is bit-exact, as a learner spec's.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSpec {
    /// The kind.
    pub kind: DataKind,
    /// ε (0 for [`DataKind::MvnSynthetic`], whose ε is computed).
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// Options by name.
    pub options: BTreeMap<String, f64>,
}

impl DataSpec {
    /// A spec with default options.
    pub fn new(kind: DataKind, epsilon: f64, delta: f64) -> Self {
        Self {
            kind,
            epsilon,
            delta,
            options: BTreeMap::new(),
        }
    }

    /// The value of option `name` (given, else the default).
    pub fn option(&self, name: &str) -> f64 {
        self.options.get(name).copied().unwrap_or_else(|| {
            self.kind
                .options()
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(f64::NAN, |(_, v)| *v)
        })
    }

    /// The spec's identity, bit-exact (for the node's store).
    pub fn key(&self) -> String {
        let mut key = format!(
            "{}:{:016x}:{:016x}",
            self.kind.name(),
            self.epsilon.to_bits(),
            self.delta.to_bits()
        );
        for (name, value) in &self.options {
            key.push_str(&format!(":{name}={:016x}", value.to_bits()));
        }
        key
    }

    /// Checks ranges and option names (public quantities only).
    pub fn check(&self) -> Result<(), DataReleaseError> {
        let invalid = |what: String| Err(DataReleaseError::InvalidSpec(what));
        for name in self.options.keys() {
            if !self.kind.options().iter().any(|(n, _)| n == name) {
                let takes: Vec<&str> = self.kind.options().iter().map(|(n, _)| *n).collect();
                return invalid(format!(
                    "`{}` takes no option `{name}` (it takes: {})",
                    self.kind,
                    if takes.is_empty() {
                        "none".to_owned()
                    } else {
                        takes.join(", ")
                    }
                ));
            }
        }
        for (name, value) in &self.options {
            if !value.is_finite() {
                return invalid(format!("option `{name}` = {value} is not a finite number"));
            }
        }
        if self.kind == DataKind::MvnSynthetic {
            if self.epsilon != 0.0 {
                return invalid(format!(
                    "`mvn-synthetic` computes its ε from n, d, sigma, rows and δ: send epsilon = 0, not {}",
                    self.epsilon
                ));
            }
        } else if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return invalid(format!(
                "epsilon = {} must be a finite number > 0",
                self.epsilon
            ));
        }
        if self.kind.pure() {
            if self.delta != 0.0 {
                return invalid(format!(
                    "`{}` is ε-DP: delta must be 0, not {}",
                    self.kind, self.delta
                ));
            }
        } else if !(self.delta > 0.0 && self.delta < 1.0) {
            return invalid(format!(
                "`{}` needs 0 < delta < 1, not {}",
                self.kind, self.delta
            ));
        }
        Ok(())
    }

    /// Option `name` as a whole number in [lo, hi].
    fn count(&self, name: &str, lo: usize, hi: usize) -> Result<usize, DataReleaseError> {
        let v = self.option(name);
        if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
            return Err(DataReleaseError::InvalidSpec(format!(
                "option `{name}` = {v} must be a whole number in [{lo}, {hi}]"
            )));
        }
        Ok(v as usize)
    }
}

/// Per-class statistics in raw units with their class label (arrays a kind does not release —
/// `laplace-statistics` has no variance or covariance — are empty).
#[derive(Debug, Clone, PartialEq)]
pub struct ClassStatistics {
    /// −1 or +1.
    pub label: f64,
    /// Count, sums, means, variances, covariance.
    pub moments: ClassMoments,
}

/// What a data release carries.
#[derive(Debug, Clone, PartialEq)]
pub enum DataPayload {
    /// Per-class statistics, negative class first.
    Moments(Vec<ClassStatistics>),
    /// Per feature: public edges and noisy counts per class.
    Histograms(Vec<FeatureHistogram>),
    /// Per feature, the noisy median clamped to [lo, hi].
    Medians(Vec<f64>),
    /// A linear classifier over the normalised rows.
    Coefficients {
        /// θ.
        weights: Vec<f64>,
        /// k.
        blocks: usize,
        /// Rows per block.
        block_size: usize,
    },
    /// Synthetic rows in [−1, 1]^dim, row-major, the label last.
    Synthetic {
        /// d + 1.
        dim: usize,
        /// m.
        rows: usize,
        /// The values.
        values: Vec<f64>,
    },
}

/// One feature's histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureHistogram {
    /// bins + 1 edges.
    pub edges: Vec<f64>,
    /// Noisy counts of the negative class.
    pub negative: Vec<f64>,
    /// Noisy counts of the positive class.
    pub positive: Vec<f64>,
}

/// The data a release reads.
#[derive(Debug, Clone, Copy)]
pub struct DataInput<'a> {
    /// The schema's features (public bounds).
    pub features: &'a [FeatureSpec],
    /// Raw feature values per row, in schema order (clipped by each mechanism).
    pub raw: &'a [Vec<f64>],
    /// Row labels (true = positive).
    pub positive: &'a [bool],
    /// The normalised rows, as learners see them.
    pub dataset: &'a Dataset,
}

/// Why a data release was not made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DataReleaseError {
    /// The spec is invalid (a function of the spec and public quantities only).
    #[error("{0}")]
    InvalidSpec(String),
    /// A mechanism refused while calibrating (public quantities only).
    #[error("{kind}: {reason}")]
    Calibration {
        /// The kind.
        kind: DataKind,
        /// Why.
        reason: String,
    },
    /// The release failed after reading the data (its charge stands).
    #[error("{kind}: {reason}")]
    Failed {
        /// The kind.
        kind: DataKind,
        /// Why (may depend on the data: logged locally, never sent).
        reason: String,
        /// A short public description of what failed, for statuses.
        public: &'static str,
    },
}

impl DataReleaseError {
    /// Whether the refusal is a function of public quantities only (the node refunds it).
    pub fn is_data_independent(&self) -> bool {
        !matches!(self, Self::Failed { .. })
    }
}

/// The calibrated mechanism behind a [`PlannedData`].
#[derive(Debug, Clone)]
enum Plan {
    Laplace(LaplaceStatsPlan),
    Moments(MomentsPlan),
    Histogram(HistogramPlan),
    Median(Vec<SmoothMedianParams>),
    SampleAggregate(SampleAggregate),
    MvnPlain(MvnPlain),
    MvnGaussian(MvnGaussian),
}

/// A data release calibrated from public quantities: its guarantee is known before any record is
/// read.
#[derive(Debug, Clone)]
pub struct PlannedData {
    spec: DataSpec,
    n: u64,
    guarantee: PrivacyGuarantee,
    rdp: Option<RdpCurve>,
    plan: Plan,
}

/// Calibrates `spec` for `n` rows of the schema's `features` (normalised rows of `dim`
/// coordinates, for sample-and-aggregate).
pub fn plan(
    spec: &DataSpec,
    features: &[FeatureSpec],
    n: u64,
    dim: usize,
) -> Result<PlannedData, DataReleaseError> {
    spec.check()?;
    let kind = spec.kind;
    let calibration = |e: &dyn std::fmt::Display| DataReleaseError::Calibration {
        kind,
        reason: e.to_string(),
    };
    let rows = usize::try_from(n).map_err(|e| calibration(&e))?.max(1);
    let (plan, guarantee, rdp) = match kind {
        DataKind::LaplaceStatistics => {
            let p = LaplaceStatsPlan::new(
                features,
                LaplaceStatsParams {
                    epsilon: spec.epsilon,
                    relation: NeighbourRelation::ReplaceOne,
                    max_rows: rows,
                },
            )
            .map_err(|e| calibration(&e))?;
            let g = p.guarantee();
            (Plan::Laplace(p), g, None)
        }
        DataKind::MomentsLaplace | DataKind::MomentsGaussian => {
            let noise = if kind == DataKind::MomentsLaplace {
                MomentNoise::Laplace
            } else {
                MomentNoise::Gaussian
            };
            let p = MomentsPlan::new(
                features,
                MomentsParams {
                    noise,
                    epsilon: spec.epsilon,
                    delta: spec.delta,
                    max_rows: rows,
                },
            )
            .map_err(|e| calibration(&e))?;
            let (g, r) = (p.guarantee(), p.rdp());
            (Plan::Moments(p), g, r)
        }
        DataKind::Histogram => {
            let bins = spec.count("bins", 1, 1000)?;
            let p = HistogramPlan::new(
                features,
                HistogramParams {
                    epsilon: spec.epsilon,
                    bins,
                    max_rows: rows,
                },
            )
            .map_err(|e| calibration(&e))?;
            let g = p.guarantee();
            (Plan::Histogram(p), g, None)
        }
        DataKind::SmoothMedian => {
            if features.is_empty() {
                return Err(DataReleaseError::InvalidSpec(
                    "the schema has no features".into(),
                ));
            }
            // Basic composition over the d features (seed 002 Lemma 16.7).
            let d = features.len() as f64;
            let params: Vec<SmoothMedianParams> = features
                .iter()
                .map(|f| SmoothMedianParams {
                    epsilon: spec.epsilon / d,
                    delta: spec.delta / d,
                    lo: f.lo,
                    hi: f.hi,
                })
                .collect();
            // Refused here, from public quantities, so the refusal is never charged.
            for p in &params {
                p.check()
                    .map_err(|e| DataReleaseError::InvalidSpec(e.to_string()))?;
            }
            (
                Plan::Median(params),
                PrivacyGuarantee::replace_one(spec.epsilon, spec.delta),
                None,
            )
        }
        DataKind::SampleAggregate => {
            let blocks = match spec.count("blocks", 0, 10_000_000)? {
                0 => rows / 2,
                k => k,
            };
            let l2 = spec.option("l2");
            let bound = match spec.option("bound") {
                0.0 if l2 > 0.0 => 1.0 / l2,
                b => b,
            };
            if blocks < 3 || n < blocks as u64 {
                return Err(DataReleaseError::InvalidSpec(format!(
                    "sample-and-aggregate needs at least 3 blocks and a row per block: `blocks` = {blocks}, and this node has {n} rows"
                )));
            }
            let s = SampleAggregate::new(
                SampleAggregateParams {
                    epsilon: spec.epsilon,
                    delta: spec.delta,
                    blocks,
                    l2,
                    bound,
                },
                dim,
            )
            .map_err(|e| calibration(&e))?;
            let g = s.guarantee();
            (Plan::SampleAggregate(s), g, None)
        }
        DataKind::MvnSynthetic => {
            let rows = synthetic_rows(spec, features.len())?;
            let m = MvnPlain::new(
                n,
                features.len(),
                MvnPlainParams {
                    rows,
                    sigma: spec.option("sigma"),
                    delta: spec.delta,
                    test_epsilon: spec.option("test_epsilon"),
                },
            )
            .map_err(|e| calibration(&e))?;
            let g = m.guarantee();
            (Plan::MvnPlain(m), g, None)
        }
        DataKind::MvnSyntheticGaussian => {
            let rows = synthetic_rows(spec, features.len())?;
            let m = MvnGaussian::new(
                n,
                features.len(),
                MvnGaussianParams {
                    rows,
                    epsilon: spec.epsilon,
                    delta: spec.delta,
                    eigen_floor: spec.option("eigen_floor"),
                },
            )
            .map_err(|e| calibration(&e))?;
            let (g, r) = (m.guarantee(), m.rdp());
            (Plan::MvnGaussian(m), g, r)
        }
    };
    Ok(PlannedData {
        spec: spec.clone(),
        n,
        guarantee,
        rdp,
        plan,
    })
}

/// The `rows` option, within the per-release size limit.
fn synthetic_rows(spec: &DataSpec, features: usize) -> Result<usize, DataReleaseError> {
    let most = MAX_SYNTHETIC_VALUES / (features + 1);
    spec.count("rows", 1, most)
}

impl PlannedData {
    /// The spec.
    pub fn spec(&self) -> &DataSpec {
        &self.spec
    }

    /// The guarantee a release will have (and the charge).
    pub fn guarantee(&self) -> PrivacyGuarantee {
        self.guarantee
    }

    /// Its RDP curve, when the mechanism is analysed in RDP.
    pub fn rdp(&self) -> Option<RdpCurve> {
        self.rdp.clone()
    }

    /// The number of rows it was calibrated for.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Reads the data and releases. `input` must have the n rows the plan was made for.
    pub fn run(
        &self,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError> {
        let kind = self.spec.kind;
        if input.raw.len() as u64 != self.n || input.dataset.len() as u64 != self.n {
            return Err(DataReleaseError::InvalidSpec(format!(
                "{kind}: calibrated for {} rows, given {}",
                self.n,
                input.raw.len()
            )));
        }
        let failed = |public: &'static str| {
            move |e: &dyn std::fmt::Display| DataReleaseError::Failed {
                kind,
                reason: e.to_string(),
                public,
            }
        };
        Ok(match &self.plan {
            Plan::Laplace(p) => {
                let s = p
                    .release(input.raw, input.positive, rng)
                    .map_err(|e| failed("the statistics could not be computed")(&e))?;
                let d = s.dim();
                let class = |c: Class, label: f64| ClassStatistics {
                    label,
                    moments: ClassMoments {
                        count: s.count(c),
                        sum: (0..d).filter_map(|j| s.sum(c, j)).collect(),
                        mean: (0..d).filter_map(|j| s.mean(c, j)).collect(),
                        variance: Vec::new(),
                        covariance: Vec::new(),
                    },
                };
                DataPayload::Moments(vec![
                    class(Class::Negative, -1.0),
                    class(Class::Positive, 1.0),
                ])
            }
            Plan::Moments(p) => {
                let m = p
                    .release(input.raw, input.positive, rng)
                    .map_err(|e| failed("the statistics could not be computed")(&e))?;
                let [negative, positive] = m.classes;
                DataPayload::Moments(vec![
                    ClassStatistics {
                        label: -1.0,
                        moments: negative,
                    },
                    ClassStatistics {
                        label: 1.0,
                        moments: positive,
                    },
                ])
            }
            Plan::Histogram(p) => {
                let h = p
                    .release(input.raw, input.positive, rng)
                    .map_err(|e| failed("the histograms could not be computed")(&e))?;
                DataPayload::Histograms(
                    h.edges
                        .iter()
                        .zip(&h.counts)
                        .map(|(edges, [neg, pos])| FeatureHistogram {
                            edges: edges.clone(),
                            negative: neg.clone(),
                            positive: pos.clone(),
                        })
                        .collect(),
                )
            }
            Plan::Median(params) => {
                let mut values = Vec::with_capacity(params.len());
                for (j, p) in params.iter().enumerate() {
                    let column: Vec<f64> = input
                        .raw
                        .iter()
                        .map(|r| r.get(j).copied().unwrap_or(f64::NAN))
                        .collect();
                    let m = smooth_median::release(&column, p, rng)
                        .map_err(|e| failed("a median could not be computed")(&e))?;
                    values.push(m.clamped(p));
                }
                DataPayload::Medians(values)
            }
            Plan::SampleAggregate(s) => {
                let r = s
                    .release(input.dataset, rng)
                    .map_err(|e| failed("sample-and-aggregate failed")(&e))?;
                DataPayload::Coefficients {
                    weights: r.coefficients,
                    blocks: r.blocks,
                    block_size: r.block_size,
                }
            }
            Plan::MvnPlain(m) => {
                let points = mvn_points(kind, input)?;
                let rows = m.release(&points, rng).map_err(|e| {
                    failed("the private test of the covariance's eigenvalue assumption did not pass, or sampling failed")(&e)
                })?;
                DataPayload::Synthetic {
                    dim: rows.dim,
                    rows: rows.rows,
                    values: rows.values,
                }
            }
            Plan::MvnGaussian(m) => {
                let points = mvn_points(kind, input)?;
                let rows = m
                    .release(&points, rng)
                    .map_err(|e| failed("sampling failed")(&e))?;
                DataPayload::Synthetic {
                    dim: rows.dim,
                    rows: rows.rows,
                    values: rows.values,
                }
            }
        })
    }
}

/// The rows as points of [−1, 1]^(d+1) (seed 003's domain; the label last).
fn mvn_points(kind: DataKind, input: &DataInput<'_>) -> Result<Vec<Vec<f64>>, DataReleaseError> {
    crate::privacy::synthetic::mvn_release::to_unit_cube(input.features, input.raw, input.positive)
        .map_err(|e| DataReleaseError::Failed {
            kind,
            reason: e.to_string(),
            public: "the rows could not be mapped to the unit cube",
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_options_are_checked() {
        for (name, kind) in DataKind::ALL {
            assert_eq!(DataKind::parse(name), Some(kind));
            assert_eq!(kind.name(), name);
        }
        let mut spec = DataSpec::new(DataKind::Histogram, 1.0, 0.0);
        assert!(spec.check().is_ok());
        assert_eq!(spec.option("bins"), 10.0);
        spec.options.insert("rows".into(), 5.0);
        let e = spec.check().expect_err("an unknown option");
        assert!(e.to_string().contains("takes no option `rows`"), "{e}");
        assert!(e.is_data_independent());
        let spec = DataSpec::new(DataKind::MomentsGaussian, 1.0, 0.0);
        assert!(spec.check().is_err(), "Gaussian needs δ > 0");
        let spec = DataSpec::new(DataKind::MvnSynthetic, 1.0, 1e-6);
        assert!(spec.check().is_err(), "the plain MVN's ε is computed");
    }

    #[test]
    fn keys_are_bit_exact_and_name_every_option() {
        let a = DataSpec::new(DataKind::Histogram, 0.1, 0.0);
        let mut b = a.clone();
        b.epsilon = 0.1 + f64::EPSILON;
        assert_ne!(a.key(), b.key());
        let mut c = a.clone();
        c.options.insert("bins".into(), 10.0);
        assert_ne!(a.key(), c.key(), "an explicit default is a different spec");
    }
}
