//! Data releases: what a node publishes besides learners — private statistics (seed
//! 002) and private synthetic data (Miura et al. 2022) — as one spec type, one calibration step and
//! one template, so node, wire and lab name them the same way.
//!
//! **The template, as for learners.** Every data kind is one file beside this one declaring
//! `pub(super) const REGISTERED: &[Registration]` — const metadata: its wire name, reference,
//! typed options ([`OptionSpec`]: name, default, range, meaning; checked by [`DataSpec::check`]
//! before anything is computed), whether it is ε-DP, computes its ε or is proven, and its row of
//! `docs/mechanisms.md` ([`docs_table`]) — and implementing the behaviour, [`DataMechanism`]:
//! it [`DataMechanism::plan`]s a release from its [`DataSpec`] and public quantities only (the
//! schema's bounds, the number of rows n — public under replace-one, which every release
//! publishes — and the dimension). The [`PlannedData`] carries its guarantee and, where the
//! mechanism has one, its RDP curve, so a node checks its policy and records the charge *before*
//! any record is read (invariant 3). [`PlannedData::run`] then reads the data and draws the
//! noise ([`DataPlan::sample`]). Every mechanism itself is one file under
//! [`crate::privacy::statistics`] or [`crate::privacy::synthetic`], which states its paper,
//! equation, sensitivity and neighbour relation; the kind files only map options to them.
//!
//! **Adding a data kind:** one file here (its `REGISTERED` entry and its [`DataMechanism`]), and
//! one line in the `data_kinds!` block below. Node, wire and aggregator take it from there;
//! `example.rs` (tests only) is such a kind.
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

mod payload;
mod spec;

/// Declares the kind files and the registry: each file's `REGISTERED` entries, in order.
macro_rules! data_kinds {
    ($( $(#[$meta:meta])* mod $file:ident; )*) => {
        $( $(#[$meta])* mod $file; )*

        /// The registry: every data kind, one line per file in the `data_kinds!` block below,
        /// in the order nodes list them ([`DataKind::all`]).
        const REGISTRY: &[&[Registration]] = &[ $( $(#[$meta])* $file::REGISTERED, )* ];
    };
}

// The registry. A new data kind is one file (its `REGISTERED` entry and its `DataMechanism`) and
// one line here.
data_kinds! {
    mod laplace_statistics;
    mod moments;
    mod histogram;
    mod smooth_median;
    mod sample_aggregate;
    mod mvn_synthetic;
    mod mvn_synthetic_gaussian;
    #[cfg(test)]
    mod example;
}

pub use payload::{ClassStatistics, DataPayload, FeatureHistogram, PublishedData};
pub use spec::DataSpec;

use crate::data::Dataset;
use crate::data::schema::FeatureSpec;
use crate::privacy::accounting::RdpCurve;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
pub use crate::privacy::registry::{DocRow, OptionSpec, OptionType};
use crate::privacy::registry::{markdown_table, options_cell};
use std::sync::Arc;

/// Most synthetic values (rows × (d + 1)) one release may carry: 16 MB of f64.
pub const MAX_SYNTHETIC_VALUES: usize = 2_000_000;

/// A data kind as the registry knows it: what users name, what it takes and how it calibrates.
#[derive(Clone, Copy)]
pub struct Registration {
    /// The wire name (`publish-data --kind`, `DataSpec.kind`).
    pub name: &'static str,
    /// The paper, section and equation the kind implements (recorded in every release).
    pub reference: &'static str,
    /// The options it takes, with their defaults and ranges.
    pub options: &'static [OptionSpec],
    /// Whether the kind is ε-DP (δ must be 0); otherwise 0 < δ < 1.
    pub pure: bool,
    /// Whether the kind computes its ε (the spec then sends ε = 0).
    pub computes_epsilon: bool,
    /// Whether its guarantee is proven for the sampler as run, floating point included. An
    /// unproven kind is refused by nodes and aggregators unless their policy sets
    /// `allow_unproven` (as unproven learners are).
    pub proven: bool,
    /// Its row of `docs/mechanisms.md` ([`docs_table`]; the options column is generated from
    /// `options`); `None` only for the test-only example.
    pub doc: Option<DocRow>,
    /// Its behaviour: how it calibrates a release.
    pub mechanism: &'static dyn DataMechanism,
}

/// What a data kind does: calibrate a release from public quantities (the behaviour every kind
/// file implements beside its [`Registration`]).
pub trait DataMechanism: Sync {
    /// Calibrates a release of `spec` (checked: option names and ranges, ranges of ε and δ)
    /// from public quantities only. Refusals are data-independent.
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

/// A kind of data release a node offers: a handle on one [`Registration`] of the registry.
/// Equal when the names are.
///
/// The associated constants name the kinds code refers to.
#[derive(Clone, Copy)]
pub struct DataKind(&'static Registration);

impl DataKind {
    /// Per-class counts, sums and means by snapped Laplace.
    pub const LAPLACE_STATISTICS: DataKind = DataKind(&laplace_statistics::REGISTERED[0]);
    /// Per-feature, per-class histograms over public bins.
    pub const HISTOGRAM: DataKind = DataKind(&histogram::REGISTERED[0]);
    /// Per-class moments by the Gaussian mechanism.
    pub const MOMENTS_GAUSSIAN: DataKind = DataKind(&moments::REGISTERED[1]);
    /// Miura et al.'s (2022) MVN synthetic rows, no added noise.
    pub const MVN_SYNTHETIC: DataKind = DataKind(&mvn_synthetic::REGISTERED[0]);
    /// MVN synthetic rows from a Gaussian-perturbed mean and covariance.
    pub const MVN_SYNTHETIC_GAUSSIAN: DataKind = DataKind(&mvn_synthetic_gaussian::REGISTERED[0]);

    /// Every kind, in the order nodes list them: the registry's.
    pub fn all() -> impl Iterator<Item = DataKind> {
        REGISTRY.iter().flat_map(|g| g.iter()).map(DataKind)
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// The kind of a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::all().find(|k| k.name() == name)
    }

    /// Every wire name, in the registry's order.
    pub fn names() -> Vec<&'static str> {
        Self::all().map(Self::name).collect()
    }

    /// The options the kind takes, with their defaults and ranges.
    pub fn options(self) -> &'static [OptionSpec] {
        self.0.options
    }

    /// The paper, section and equation the kind implements.
    pub fn reference(self) -> &'static str {
        self.0.reference
    }

    /// Whether its guarantee is proven for the sampler as run ([`Registration::proven`]).
    pub fn is_proven(self) -> bool {
        self.0.proven
    }

    /// Its registration.
    pub fn registration(self) -> &'static Registration {
        self.0
    }

    /// The kind's behaviour.
    pub fn mechanism(self) -> &'static dyn DataMechanism {
        self.0.mechanism
    }
}

/// The table of data releases in `docs/mechanisms.md` (between `<!-- generated: data-kinds -->`
/// and `<!-- end generated -->`): a row per registered kind with a [`DocRow`], in registry
/// order.
pub fn docs_table() -> String {
    let header = ["name", "what", "guarantee", "options (defaults)"];
    let rows = DataKind::all().filter_map(|k| {
        let r = k.registration();
        let doc = r.doc?;
        Some(vec![
            format!("`{}`", r.name),
            doc.what.to_owned(),
            doc.guarantee.to_owned(),
            options_cell(r.options, doc.options_note),
        ])
    });
    markdown_table(&header, rows)
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
