//! What a simulation returns: one [`OrgRun`] per (ε, trial, organisation) — a line of
//! `runs.csv` — and one [`SummaryRow`] per ε in the [`SimulationSummary`] (`summary.json`).
//!
//! The baselines (local, each private learner, the non-private exchange, the centralised
//! learner) are fields; the combiners are not: every simulated combiner of the registry
//! ([`Candidate::simulated`]) has one [`PerCombiner`] entry, written as the column its file
//! declares ([`crate::aggregate::combiner::Simulated`]), in registry order. So a new combiner
//! is a new column without a new field. The columns of the paper's method, mirror averaging
//! ([`PAPER`]), come first among them (it is first in the registry), and in `summary.json` its
//! two companions — the same aggregate of non-private learners and the count of organisations
//! it improves (Minami et al. 2015, Table 2) — follow it; the file formats are those written
//! before the registry, byte for byte.

use super::LocalBaseline;
use crate::aggregate::combiner::PerCombiner;
use crate::aggregate::select::Candidate;
use crate::util::stats::Summary;
use serde::Serialize;
use serde::ser::{SerializeStruct, Serializer};

/// The paper's method: the combiner whose non-private exchange and improvement count the
/// simulation also reports (Minami et al. 2015, §5).
pub const PAPER: Candidate = Candidate::MirrorAveraging;

/// The column `c` is written as.
fn column(c: Candidate) -> &'static str {
    c.registration()
        .simulated
        .map_or_else(|| c.name(), |s| s.column)
}

/// One organisation in one (ε, trial): the line of `runs.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct OrgRun {
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// Trial index.
    pub trial: usize,
    /// Organisation index.
    pub org: usize,
    /// Local-only non-private learner.
    pub local_accuracy: f64,
    /// This organisation's own private learner.
    pub private_learner_accuracy: f64,
    /// Each simulated combiner of the others' private learners (and the own rows).
    pub combiners: PerCombiner<f64>,
    /// Mirror average of the others' non-private learners.
    pub nonprivate_aggregate_accuracy: f64,
    /// Centralised learner of this trial.
    pub centralised_accuracy: f64,
}

impl OrgRun {
    /// The test accuracy of the simulated combiner `c`.
    pub fn accuracy(&self, c: Candidate) -> f64 {
        *self.combiners.get(c)
    }
}

impl Serialize for OrgRun {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("OrgRun", 8 + self.combiners.0.len())?;
        st.serialize_field("epsilon", &self.epsilon)?;
        st.serialize_field("delta", &self.delta)?;
        st.serialize_field("trial", &self.trial)?;
        st.serialize_field("org", &self.org)?;
        st.serialize_field("local_accuracy", &self.local_accuracy)?;
        st.serialize_field("private_learner_accuracy", &self.private_learner_accuracy)?;
        for (c, v) in self.combiners.iter() {
            st.serialize_field(column(*c), v)?;
        }
        st.serialize_field(
            "nonprivate_aggregate_accuracy",
            &self.nonprivate_aggregate_accuracy,
        )?;
        st.serialize_field("centralised_accuracy", &self.centralised_accuracy)?;
        st.end()
    }
}

/// One line of the summary table: one ε over all trials and organisations.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// ε.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// Local-only accuracy over (trial, organisation).
    pub local_accuracy: Summary,
    /// Individual private learners.
    pub private_learner_accuracy: Summary,
    /// Each simulated combiner.
    pub combiners: PerCombiner<Summary>,
    /// Mirror-averaged non-private learners.
    pub nonprivate_aggregate_accuracy: Summary,
    /// Organisations (per trial) whose [`PAPER`] aggregate beats their local learner.
    pub improved_orgs: Summary,
    /// λ the private learners trained with at this ε (their mechanism's rule when `auto`).
    pub private_lambda: Option<f64>,
}

impl SummaryRow {
    /// The accuracy of the simulated combiner `c`.
    pub fn accuracy(&self, c: Candidate) -> &Summary {
        self.combiners.get(c)
    }
}

impl Serialize for SummaryRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let fields = 6 + self.combiners.0.len() + usize::from(self.private_lambda.is_some());
        let mut st = s.serialize_struct("SummaryRow", fields)?;
        st.serialize_field("epsilon", &self.epsilon)?;
        st.serialize_field("delta", &self.delta)?;
        st.serialize_field("local_accuracy", &self.local_accuracy)?;
        st.serialize_field("private_learner_accuracy", &self.private_learner_accuracy)?;
        for (c, v) in self.combiners.iter() {
            st.serialize_field(column(*c), v)?;
            if *c == PAPER {
                st.serialize_field(
                    "nonprivate_aggregate_accuracy",
                    &self.nonprivate_aggregate_accuracy,
                )?;
                st.serialize_field("improved_orgs", &self.improved_orgs)?;
            }
        }
        if let Some(l) = self.private_lambda {
            st.serialize_field("private_lambda", &l)?;
        }
        st.end()
    }
}

/// `summary.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SimulationSummary {
    /// Dataset name.
    pub dataset: String,
    /// K.
    pub orgs: usize,
    /// Trials.
    pub trials: usize,
    /// Mechanism identifier (the variant actually used).
    pub mechanism: String,
    /// Master seed.
    pub seed: u64,
    /// λ of the learners when fixed; when `lambda_auto`, the non-private learners' λ (each row's
    /// `private_lambda` is the private learners').
    pub lambda: f64,
    /// True when the private learners' λ is `auto`.
    pub lambda_auto: bool,
    /// λ of the non-private learners when it differs from `lambda`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_lambda: Option<f64>,
    /// How the non-private learners chose their λ.
    pub local_baseline: LocalBaseline,
    /// Each organisation's rows when they differ (`--rows-per-org`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<usize>>,
    /// β.
    pub beta: f64,
    /// Training rows per organisation.
    pub rows_per_org: usize,
    /// Mean test accuracy of the centralised learner over trials.
    pub centralised_accuracy: f64,
    /// One row per ε.
    pub rows: Vec<SummaryRow>,
}

/// For one ε's runs: per trial (in trial order), the number of organisations whose private
/// [`PAPER`] aggregate beats their own local learner — the count of Minami et al. 2015, Table 2.
pub fn improved_per_trial(runs: &[&OrgRun]) -> Vec<f64> {
    let mut trials: Vec<usize> = runs.iter().map(|r| r.trial).collect();
    trials.sort_unstable();
    trials.dedup();
    trials
        .iter()
        .map(|&t| {
            runs.iter()
                .filter(|r| r.trial == t && r.accuracy(PAPER) > r.local_accuracy)
                .count() as f64
        })
        .collect()
}

/// The summary row of one ε's runs.
pub(super) fn summary_row(epsilon: f64, delta: f64, rs: &[&OrgRun], lambda: f64) -> SummaryRow {
    let of = |f: &dyn Fn(&OrgRun) -> f64| Summary::of(&rs.iter().map(|r| f(r)).collect::<Vec<_>>());
    let combiners = simulated_in(rs)
        .map(|c| (c, of(&|r| r.accuracy(c))))
        .collect();
    SummaryRow {
        epsilon,
        delta,
        local_accuracy: of(&|r| r.local_accuracy),
        private_learner_accuracy: of(&|r| r.private_learner_accuracy),
        combiners: PerCombiner(combiners),
        nonprivate_aggregate_accuracy: of(&|r| r.nonprivate_aggregate_accuracy),
        improved_orgs: Summary::of(&improved_per_trial(rs)),
        private_lambda: lambda.is_finite().then_some(lambda),
    }
}

/// The combiners the runs hold (every run of a simulation holds the same), in registry order.
pub fn simulated_in<'a>(runs: &'a [&OrgRun]) -> impl Iterator<Item = Candidate> + 'a {
    runs.first()
        .into_iter()
        .flat_map(|r| r.combiners.iter().map(|(c, _)| *c))
}

/// Writes `runs` as CSV (one line per (ε, trial, organisation)).
pub fn runs_csv(runs: &[OrgRun]) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in runs {
        w.serialize(r)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}
