//! Combiners: the ways the aggregator turns the other organisations' learners and its own
//! rows into one linear classifier — each a [`Combiner`] in its own file, listed once in the
//! `combiners!` block below (the registry).
//!
//! A combiner is fitted on the aggregator's own rows and the others' learners (an [`Inputs`]),
//! after an optional one-off tuning on all training rows ([`Combiner::tune`], e.g. a stacker's
//! λ by cross-validation; held fixed inside the selection's folds), and predicts with the one
//! weight vector it returns. The selection ([`super::select`]) builds every *selectable*
//! combiner in every fold and chooses among them; the others (the comparators: the uniform
//! average and the best single learner) are fitted and reported only.
//!
//! **A new combiner** is one file here declaring `pub const REGISTERED: &[Registration]` —
//! const metadata: its name, definition, and `label`, `report_key` and `simulated` to appear in
//! the report's accuracies and the simulation's columns — and implementing the behaviour,
//! [`Combiner`] (`fit`, `tune` if it has a hyper-parameter, `selectable`), plus one line in
//! `combiners!`; `example.rs` (tests only) is such a combiner. The report, the simulation and
//! the experiments iterate over the registry: no struct has a field per combiner.
//!
//! Privacy: every combiner is a function of released learners and the aggregator's own rows,
//! so it keeps every other organisation's guarantee (Minami et al. 2015, Proposition 4.1); none is
//! DP with respect to the aggregator's own rows.

use super::loss_table::LossTable;
use super::select::SelectError;
use super::{Aggregate, AggregateError, MirrorAveraging};
use crate::data::dataset::Dataset;
use crate::learn::classifier::LinearClassifier;
use rand::rngs::ChaCha20Rng;
use serde::{Serialize, Serializer};
use std::fmt;

mod values;

pub use values::{Accuracies, PerCombiner};

/// Declares the combiner files and the registry: each file's `REGISTERED` entries, in order.
macro_rules! combiners {
    ($( $(#[$meta:meta])* $vis:vis mod $file:ident; )*) => {
        $( $(#[$meta])* $vis mod $file; )*

        /// The registry: every combiner, in the order of selections and reports.
        const REGISTRY: &[&[Registration]] = &[ $( $(#[$meta])* $file::REGISTERED, )* ];
    };
}

// The registry. The local model comes first: it is the baseline every other candidate is
// paired with. A new combiner is one file and one line here.
combiners! {
    pub mod local;
    pub mod mirror_averaging;
    pub mod mirror_with_own;
    pub mod stacking;
    pub mod stacking_margins;
    pub mod uniform_average;
    pub mod best_single;
    #[cfg(test)]
    mod example;
}

/// What a combiner is fitted on.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The other organisations' learners.
    pub experts: &'a [LinearClassifier],
    /// The aggregator's own rows it is fitted on.
    pub data: &'a Dataset,
    /// The aggregator's own model fitted on `data` (the local candidate).
    pub own: &'a LinearClassifier,
    /// Mirror-averaging temperature β.
    pub beta: f64,
    /// When given: the losses of `experts` followed by `own` on `data` ([`LossTable::new`] of
    /// them, in that order), which combiners that need them read instead of recomputing (a
    /// simulation runs several on the same rows; the results are the same bits).
    pub losses: Option<&'a LossTable>,
    /// The leading columns of `data` that are the own model's map (all of them unless the rows
    /// hold the learners' agreed map beside it): a combiner's own features.
    pub own_dim: usize,
}

/// What a combiner's one-off tuning sees: all training rows and the tuning folds.
#[derive(Debug, Clone, Copy)]
pub struct Tuning<'a> {
    /// The other organisations' learners.
    pub experts: &'a [LinearClassifier],
    /// All own training rows.
    pub data: &'a Dataset,
    /// The held-out rows of each tuning fold.
    pub folds: &'a [Vec<usize>],
    /// The local model's cross-validated λ.
    pub local_lambda: f64,
    /// As [`Inputs::own_dim`].
    pub own_dim: usize,
}

/// A fitted combiner.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    /// The one weight vector it predicts with.
    pub classifier: LinearClassifier,
    /// The experts' mixing weights λ_m, for the combiners that weight experts (else empty).
    pub mixing_weights: Vec<f64>,
}

impl From<Aggregate> for Combined {
    fn from(a: Aggregate) -> Self {
        Self {
            classifier: a.classifier,
            mixing_weights: a.mixing_weights,
        }
    }
}

impl<'a> Inputs<'a> {
    /// The inputs without a loss table (combiners compute the losses they need).
    pub fn new(
        experts: &'a [LinearClassifier],
        data: &'a Dataset,
        own: &'a LinearClassifier,
        beta: f64,
    ) -> Self {
        Self {
            experts,
            data,
            own,
            beta,
            losses: None,
            own_dim: data.dim(),
        }
    }

    /// Mirror averaging with temperature `beta` of `learners` on `data`: `experts`, or `experts`
    /// followed by `own` — the first learners of the loss table when there is one, whose
    /// losses it then reads (same bits as computing them).
    pub fn mirror_aggregate(
        &self,
        learners: &[LinearClassifier],
        rng: &mut ChaCha20Rng,
    ) -> Result<Aggregate, AggregateError> {
        let mirror = MirrorAveraging::new(self.beta)?;
        match self.losses {
            Some(table) => mirror.aggregate_from_table(learners, table, rng),
            None => mirror.aggregate(learners, self.data, rng),
        }
    }

    /// The local model when there are no experts to combine (what every combiner of experts
    /// falls back to), else `None`.
    pub fn own_without_experts(&self) -> Option<Combined> {
        self.experts.is_empty().then(|| self.own.clone().into())
    }
}

impl From<LinearClassifier> for Combined {
    fn from(classifier: LinearClassifier) -> Self {
        Self {
            classifier,
            mixing_weights: Vec::new(),
        }
    }
}

/// How a combiner appears in the simulation (`simulate`, `experiment`): fitted for every
/// organisation on the others' private learners, its own rows and its own local learner, with
/// `tuned = None`, and scored on the test rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Simulated {
    /// Its column in `runs.csv` and `summary.json` (`<prefix>_accuracy`; the experiments' sweep
    /// tables name theirs `<prefix>_mean` and `<prefix>_sd`).
    pub column: &'static str,
    /// Its name in the experiments' tables with one line per combiner (`fig7_aggregators.csv`).
    pub table_name: &'static str,
    /// The last element of the path its randomness is derived from (seed, trial, index of ε,
    /// organisation, purpose): distinct from every other combiner's and from the simulation's
    /// own purposes (checked by a test of the simulation).
    pub purpose: u64,
}

impl Simulated {
    /// The column without its `_accuracy` suffix.
    pub fn prefix(&self) -> &'static str {
        self.column.strip_suffix("_accuracy").unwrap_or(self.column)
    }
}

/// A combiner as the registry knows it: what reports, figures and file formats call it, and
/// its behaviour.
#[derive(Clone, Copy)]
pub struct Registration {
    /// The name used in reports and `model.json`.
    pub name: &'static str,
    /// What it is, one sentence without the final full stop (the report lists it).
    pub definition: &'static str,
    /// How the report's summary of accuracies and the figures' legends call it.
    pub label: &'static str,
    /// The key of its test accuracy in `report.json` (`None`: it appears in the candidate table
    /// only).
    pub report_key: Option<&'static str>,
    /// Its column in the simulation (`None`: not simulated).
    pub simulated: Option<Simulated>,
    /// Its behaviour.
    pub combiner: &'static dyn Combiner,
}

/// A way to combine the others' learners and the own rows into one linear classifier: the
/// behaviour beside a combiner's [`Registration`].
pub trait Combiner: Sync {
    /// Whether the selection may choose it as the final model (the comparators may not).
    fn selectable(&self) -> bool {
        true
    }
    /// A hyper-parameter chosen once on all training rows, before the selection's folds
    /// (`None`: nothing to tune).
    fn tune(&self, tuning: &Tuning<'_>) -> Result<Option<f64>, SelectError> {
        let _ = tuning;
        Ok(None)
    }
    /// Fits on `inputs` with the tuned value; `rng` is the fold's own randomness (visiting
    /// orders), shared by the combiners in registry order.
    fn fit(
        &self,
        inputs: &Inputs<'_>,
        tuned: Option<f64>,
        rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError>;
}

/// A registered combiner. Equal when the names are; serialised as its name.
///
/// The associated constants name the combiners the aggregator's code refers to; they keep the
/// names the former enum's variants had.
#[derive(Clone, Copy)]
pub struct Candidate(&'static Registration);

#[allow(non_upper_case_globals)]
impl Candidate {
    /// [`local`]: the aggregator's own tuned logistic regression.
    pub const Local: Self = Self(&local::REGISTERED[0]);
    /// [`mirror_averaging`]: eq. 17 over the others' learners.
    pub const MirrorAveraging: Self = Self(&mirror_averaging::REGISTERED[0]);
    /// [`mirror_with_own`]: eq. 17 with the local model as one more expert.
    pub const MirrorWithOwn: Self = Self(&mirror_with_own::REGISTERED[0]);
    /// [`stacking`]: on the own features and the experts' normalised margins.
    pub const Stacking: Self = Self(&stacking::REGISTERED[0]);
    /// [`stacking_margins`]: on the experts' normalised margins only.
    pub const StackingMargins: Self = Self(&stacking_margins::REGISTERED[0]);
    /// [`uniform_average`]: (1/M) Σ θ_m (a comparator).
    pub const UniformAverage: Self = Self(&uniform_average::REGISTERED[0]);
    /// [`best_single`]: the learner with the smallest risk on the own rows (a comparator).
    pub const BestSingle: Self = Self(&best_single::REGISTERED[0]);
}

impl Candidate {
    /// Every registered combiner, in registry order (the local model first).
    pub fn registered() -> impl Iterator<Item = Candidate> {
        REGISTRY.iter().flat_map(|g| g.iter()).map(Candidate)
    }

    /// The combiners the selection chooses among, local first.
    pub fn all() -> impl Iterator<Item = Candidate> {
        Self::registered().filter(|c| c.0.combiner.selectable())
    }

    /// The comparators: fitted and reported, never chosen.
    pub fn comparators() -> impl Iterator<Item = Candidate> {
        Self::registered().filter(|c| !c.0.combiner.selectable())
    }

    /// The name used in reports and `model.json`.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What it is (one sentence, no final full stop).
    pub fn definition(self) -> &'static str {
        self.0.definition
    }

    /// Its registration (names, definition, file-format names).
    pub fn registration(self) -> &'static Registration {
        self.0
    }

    /// Its behaviour.
    pub fn combiner(self) -> &'static dyn Combiner {
        self.0.combiner
    }

    /// How reports and figures call it.
    pub fn label(self) -> &'static str {
        self.0.label
    }

    /// Its key in `report.json`, if it has one.
    pub fn report_key(self) -> Option<&'static str> {
        self.0.report_key
    }

    /// Every combiner with a key in `report.json`: the selectable ones, then the comparators,
    /// each in registry order.
    pub fn reported() -> impl Iterator<Item = (Candidate, &'static str)> {
        Self::all()
            .chain(Self::comparators())
            .filter_map(|c| c.report_key().map(|k| (c, k)))
    }

    /// Every simulated combiner with its column, in registry order.
    pub fn simulated() -> impl Iterator<Item = (Candidate, Simulated)> {
        Self::registered().filter_map(|c| c.0.simulated.map(|s| (c, s)))
    }
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Candidate {}

impl fmt::Debug for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Candidate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}
