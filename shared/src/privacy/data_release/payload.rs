//! What a data release carries ([`DataPayload`]) and a release as a node serves it
//! ([`PublishedData`], the domain type of the wire's `DataReleaseBody`, converted in
//! `dpagg-proto`'s `data` module).

use super::DataSpec;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::statistics::moments::ClassMoments;
use std::collections::BTreeMap;

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

/// A data release as a node records and serves it: the payload with its spec, guarantee and
/// provenance (as [`crate::privacy::release::PublishedLearner`] is for learners). Its mechanism
/// name and reference are the spec's kind's.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishedData {
    /// Its id.
    pub release_id: String,
    /// When it was made.
    pub created_unix_ms: i64,
    /// The organisation that made it.
    pub organisation_id: String,
    /// The fingerprint of the public schema it was made under.
    pub schema_fingerprint: String,
    /// What was asked for.
    pub spec: DataSpec,
    /// The guarantee it was charged.
    pub guarantee: PrivacyGuarantee,
    /// Whether its noise came from a seeded (not secure) generator.
    pub seeded: bool,
    /// The number of rows it was calibrated for.
    pub n: u64,
    /// The schema's feature names, in order.
    pub features: Vec<String>,
    /// Every option with its value ([`DataSpec::parameters`]).
    pub parameters: BTreeMap<String, f64>,
    /// The released values.
    pub payload: DataPayload,
}
