//! Data releases: what a node publishes besides learners — private statistics (seed
//! 002) and private synthetic data (Miura et al. 2022) — as one spec type, one calibration step and
//! one template, so node, wire and lab name them the same way.
//!
//! **The template, as for learners.** Every data kind is one file beside this one implementing
//! [`DataMechanism`]: it states its wire name, reference, options and whether it is ε-DP, and
//! [`DataMechanism::plan`]s a release from its [`DataSpec`] and public quantities only (the
//! schema's bounds, the number of rows n — public under replace-one, which every release
//! publishes — and the dimension). The [`PlannedData`] carries its guarantee and, where the
//! mechanism has one, its RDP curve, so a node checks its policy and records the charge *before*
//! any record is read (invariant 3). [`PlannedData::run`] then reads the data and draws the
//! noise ([`DataPlan::sample`]). Every mechanism itself is one file under
//! [`crate::privacy::statistics`] or [`crate::privacy::synthetic`], which states its paper,
//! equation, sensitivity and neighbour relation; the kind files only map options to them.
//!
//! **Adding a data kind:** one file here implementing [`DataMechanism`] (with its `KIND`
//! constant), and one line in [`DataKind::ALL`]. Node, wire and aggregator take it from there.
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

mod histogram;
mod laplace_statistics;
mod moments;
mod mvn_synthetic;
mod mvn_synthetic_gaussian;
mod payload;
mod sample_aggregate;
mod smooth_median;
mod spec;

pub use payload::{ClassStatistics, DataPayload, FeatureHistogram, PublishedData};
pub use spec::DataSpec;

use crate::data::Dataset;
use crate::data::schema::FeatureSpec;
use crate::privacy::accounting::RdpCurve;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use std::sync::Arc;

/// Most synthetic values (rows × (d + 1)) one release may carry: 16 MB of f64.
pub const MAX_SYNTHETIC_VALUES: usize = 2_000_000;

/// What a data kind is: its name, reference and options, and how it calibrates a release from
/// public quantities (the template every kind file implements).
pub trait DataMechanism: Sync {
    /// The wire name.
    fn name(&self) -> &'static str;
    /// The paper, section and equation the kind implements.
    fn reference(&self) -> &'static str;
    /// The options the kind takes, with their defaults.
    fn options(&self) -> &'static [(&'static str, f64)] {
        &[]
    }
    /// Whether the kind is ε-DP (δ must be 0); otherwise 0 < δ < 1.
    fn pure(&self) -> bool {
        false
    }
    /// Whether the kind computes its ε (the spec then sends ε = 0).
    fn computes_epsilon(&self) -> bool {
        false
    }
    /// Whether its guarantee is proven for the sampler as run, floating point included. An
    /// unproven kind is refused by nodes and aggregators unless their policy sets
    /// `allow_unproven` (as unproven learners are).
    fn is_proven(&self) -> bool {
        true
    }
    /// Calibrates a release of `spec` (checked: option names, ranges of ε and δ) from public
    /// quantities only. Refusals are data-independent.
    fn plan(
        &self,
        spec: &DataSpec,
        public: &Public<'_>,
    ) -> Result<Box<dyn DataPlan>, DataReleaseError>;
}

/// A calibrated release of one kind: its guarantee, and how it reads the data.
pub trait DataPlan: std::fmt::Debug + Send + Sync {
    /// The guarantee a release will have (and the charge).
    fn guarantee(&self) -> PrivacyGuarantee;
    /// Its RDP curve, when the mechanism is analysed in RDP.
    fn rdp(&self) -> Option<RdpCurve> {
        None
    }
    /// Reads the data and draws the noise (`input` has the rows the plan was made for).
    fn sample(
        &self,
        kind: DataKind,
        input: &DataInput<'_>,
        rng: &mut NoiseSource,
    ) -> Result<DataPayload, DataReleaseError>;
}

/// The public quantities a release is calibrated from.
#[derive(Debug, Clone, Copy)]
pub struct Public<'a> {
    /// The schema's features (public bounds).
    pub features: &'a [FeatureSpec],
    /// The number of rows (public under replace-one).
    pub n: u64,
    /// `n` as a count of at least 1.
    pub rows: usize,
    /// The dimension of the normalised rows.
    pub dim: usize,
}

/// A kind of data release a node offers: one of [`DataKind::ALL`].
#[derive(Clone, Copy)]
pub struct DataKind(&'static dyn DataMechanism);

impl DataKind {
    /// Every kind, in the order nodes list them: the registry (one line per kind file).
    pub const ALL: [DataKind; 8] = [
        laplace_statistics::KIND,
        moments::LAPLACE,
        moments::GAUSSIAN,
        histogram::KIND,
        smooth_median::KIND,
        sample_aggregate::KIND,
        mvn_synthetic::KIND,
        mvn_synthetic_gaussian::KIND,
    ];
    /// Per-class counts, sums and means by snapped Laplace.
    pub const LAPLACE_STATISTICS: DataKind = laplace_statistics::KIND;
    /// Per-feature, per-class histograms over public bins.
    pub const HISTOGRAM: DataKind = histogram::KIND;
    /// Per-class moments by the Gaussian mechanism.
    pub const MOMENTS_GAUSSIAN: DataKind = moments::GAUSSIAN;
    /// Miura et al.'s (2022) MVN synthetic rows, no added noise.
    pub const MVN_SYNTHETIC: DataKind = mvn_synthetic::KIND;
    /// MVN synthetic rows from a Gaussian-perturbed mean and covariance.
    pub const MVN_SYNTHETIC_GAUSSIAN: DataKind = mvn_synthetic_gaussian::KIND;

    /// The wire name.
    pub fn name(self) -> &'static str {
        self.0.name()
    }

    /// The kind of a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Every wire name, in [`DataKind::ALL`]'s order.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|k| k.name()).collect()
    }

    /// The options the kind takes, with their defaults.
    pub fn options(self) -> &'static [(&'static str, f64)] {
        self.0.options()
    }

    /// The paper, section and equation the kind implements.
    pub fn reference(self) -> &'static str {
        self.0.reference()
    }

    /// Whether its guarantee is proven for the sampler as run ([`DataMechanism::is_proven`]).
    pub fn is_proven(self) -> bool {
        self.0.is_proven()
    }

    /// The kind's template.
    pub fn mechanism(self) -> &'static dyn DataMechanism {
        self.0
    }
}

impl PartialEq for DataKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for DataKind {}

impl std::hash::Hash for DataKind {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name().hash(state);
    }
}

impl std::fmt::Debug for DataKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DataKind({})", self.name())
    }
}

impl std::fmt::Display for DataKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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

    /// A mechanism's refusal while calibrating `kind` (public quantities only).
    pub fn calibration(kind: DataKind, e: impl std::fmt::Display) -> Self {
        Self::Calibration {
            kind,
            reason: e.to_string(),
        }
    }

    /// A failure of `kind` after the data was read, with its public summary.
    pub fn failed(kind: DataKind, public: &'static str, e: impl std::fmt::Display) -> Self {
        Self::Failed {
            kind,
            reason: e.to_string(),
            public,
        }
    }
}

/// A data release calibrated from public quantities: its guarantee is known before any record is
/// read.
#[derive(Debug, Clone)]
pub struct PlannedData {
    spec: DataSpec,
    n: u64,
    guarantee: PrivacyGuarantee,
    rdp: Option<RdpCurve>,
    plan: Arc<dyn DataPlan>,
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
    let rows = usize::try_from(n)
        .map_err(|e| DataReleaseError::calibration(spec.kind, e))?
        .max(1);
    let public = Public {
        features,
        n,
        rows,
        dim,
    };
    let plan: Arc<dyn DataPlan> = spec.kind.mechanism().plan(spec, &public)?.into();
    Ok(PlannedData {
        spec: spec.clone(),
        n,
        guarantee: plan.guarantee(),
        rdp: plan.rdp(),
        plan,
    })
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
        self.plan.sample(kind, input, rng)
    }
}

#[cfg(test)]
mod tests;
