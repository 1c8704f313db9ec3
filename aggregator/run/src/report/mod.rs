//! The report of a run — the model ([`Report`] and its views, what `report.json` serialises)
//! here; its renderers beside it: [`text`] (the terminal table), [`html`] (the self-contained
//! `report.html` with an inline SVG chart: no scripts, fonts or files fetched). `report.json`
//! is [`Report`] through serde ([`Report::write`]).
//!
//! Every string that came from a node (organisation id, reasons) is escaped in the HTML: a node
//! must not be able to inject markup into the aggregator's report.

pub use crate::agreed::MapView;
use crate::fetch::NodeOutcome;
use crate::model::{FinalView, model_of};
use crate::synthetic::SyntheticView;
use crate::trust::SignatureView;
use crate::wire::{MAX_MECHANISM, MAX_RELEASE_ID, MAX_TEXT, clean};
use anyhow::{Context, Result};
use dpagg_shared::Dataset;
pub use dpagg_shared::aggregate::combiner::Accuracies;
use dpagg_shared::aggregate::select::Candidate;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::release::PublishedLearner;
use dpagg_shared::util::files::atomic_write;
use dpagg_shared::util::stats::wilson_interval;
pub use majority::MajorityView;
use serde::Serialize;
use std::path::Path;

mod chart;
mod html;
pub mod majority;
mod text;

/// Why a node was excluded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExclusionView {
    /// Stable short code (`unreachable`, `timeout`, `non_finite`, `over_policy`, …).
    pub code: String,
    /// One-line explanation.
    pub reason: String,
}

/// One node's line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// The endpoint as configured.
    pub endpoint: String,
    /// The organisation id it described itself with.
    pub organisation_id: Option<String>,
    /// `included` or `excluded`.
    pub status: &'static str,
    /// The release aggregated.
    pub release_id: Option<String>,
    /// Its mechanism.
    pub mechanism: Option<String>,
    /// Its ε.
    pub epsilon: Option<f64>,
    /// Its δ.
    pub delta: Option<f64>,
    /// Its neighbour relation.
    pub neighbour_relation: Option<String>,
    /// What its privacy proof covers (`noise-as-sampled`, `real-arithmetic`; `none` only
    /// when the policy allows unproven releases).
    pub proof: Option<&'static str>,
    /// Accuracy of the learner alone on the aggregator's test split.
    pub accuracy: Option<f64>,
    /// Whether that accuracy is no better than always answering the more common label there
    /// ([`majority`]).
    pub no_better_than_majority: Option<bool>,
    /// Its mirror-averaging mixing weight λ_m (eq. 16).
    pub mixing_weight: Option<f64>,
    /// Its mixing weight when the aggregator's own learner is one more expert.
    pub mixing_weight_with_own: Option<f64>,
    /// Why it was excluded.
    pub exclusion: Option<ExclusionView>,
    /// Milliseconds spent on this node.
    pub elapsed_ms: u128,
    /// The organisation named by the node's TLS certificate (absent in plain text).
    pub certificate_identity: Option<String>,
    /// The organisation's signature over the release (absent for an unsigned release).
    pub signature: Option<SignatureView>,
    /// The release exactly as the node served it: the protobuf encoding of its
    /// `PrivateLearner`, in hex. `dpagg-aggregator verify` checks the signature over it.
    pub release_protobuf: Option<String>,
}

impl NodeReport {
    /// The line for one outcome; an accepted release is described by
    /// [`NodeReport::describe_release`] and its mixing weights are filled in by the caller.
    pub fn from_outcome(o: &NodeOutcome) -> Self {
        let mut r = NodeReport {
            endpoint: o.endpoint.clone(),
            organisation_id: o.organisation_id.clone(),
            status: "excluded",
            release_id: None,
            mechanism: None,
            epsilon: None,
            delta: None,
            neighbour_relation: None,
            proof: None,
            accuracy: None,
            no_better_than_majority: None,
            mixing_weight: None,
            mixing_weight_with_own: None,
            exclusion: None,
            elapsed_ms: o.elapsed.as_millis(),
            certificate_identity: None,
            signature: None,
            release_protobuf: None,
        };
        match &o.result {
            Ok(_) => r.status = "included",
            Err(e) => {
                r.exclusion = Some(ExclusionView {
                    code: e.code().to_owned(),
                    reason: clean(&e.to_string(), MAX_TEXT),
                });
            }
        }
        r
    }

    /// Fills in the release aggregated and its accuracy alone on `test`.
    pub fn describe_release(&mut self, learner: &PublishedLearner, test: &Dataset) {
        let m = learner.metadata();
        self.release_id = Some(clean(&learner.release_id, MAX_RELEASE_ID));
        self.mechanism = Some(clean(&m.mechanism, MAX_MECHANISM));
        self.epsilon = Some(m.guarantee.epsilon);
        self.delta = Some(m.guarantee.delta);
        self.neighbour_relation = Some(m.guarantee.relation.to_string());
        self.proof = Some(m.proof.name());
        self.accuracy = Some(learner.classifier().accuracy(test));
    }
}

/// Everything a run found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// When the report was made (RFC 3339).
    pub generated_at: String,
    /// The release asked for.
    pub request: String,
    /// Fingerprint of the aggregator's public schema.
    pub schema_fingerprint: String,
    /// Mirror-averaging temperature.
    pub beta: f64,
    /// λ of the local baseline's L2 regulariser (chosen by cross-validation on own rows).
    pub l2: f64,
    /// Seed of the aggregator's own randomness.
    pub seed: u64,
    /// Own rows used to weight the learners (and fit the baseline).
    pub train_rows: usize,
    /// Own rows used for accuracies.
    pub test_rows: usize,
    /// Nodes whose learner was aggregated.
    pub included: usize,
    /// Nodes excluded.
    pub excluded: usize,
    /// The proof labels the acceptance policy accepted (`noise-as-sampled`, `real-arithmetic`,
    /// and `none` with `allow_unproven`): what "proven" meant for this run.
    pub accepted_proofs: Vec<&'static str>,
    /// The test accuracies of the selectable combiners that declare a `report.json` key (the
    /// local baseline — the aggregator's non-private learner, λ tuned by cross-validation on its
    /// own training rows: what it has without joining —, mirror averaging of the included
    /// learners, the same with the own learner as one more expert, stacking), each under its
    /// key, in registry order.
    #[serde(flatten)]
    pub candidate_accuracies: Accuracies,
    /// The final model: the candidate chosen by cross-validation on own training rows.
    pub final_model: FinalView,
    /// The comparators' test accuracies (uniform average, best single learner), the same way.
    #[serde(flatten)]
    pub comparator_accuracies: Accuracies,
    /// The accuracies above with their 95 % Wilson intervals on `test_rows` rows.
    pub summary: Vec<SummaryLine>,
    /// What limits how far the accuracies can be trusted (a tiny or one-class split).
    pub warnings: Vec<String>,
    /// One line per node, in the configured order.
    pub nodes: Vec<NodeReport>,
    /// `--train-on synthetic`: the pooled synthetic rows and the model trained on them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SyntheticView>,
    /// The agreed map the learners' rows went through, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreed_map: Option<MapView>,
    /// Learners (and mirror averaging) no better than the majority class, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub majority: Option<MajorityView>,
    /// The aggregator's organisation (from its certificate), when it signs the report.
    pub signed_by: Option<String>,
    /// The aggregator's signature over this report (`dpagg-aggregator verify`; see
    /// `crate::trust`). Absent from plain-text runs.
    pub signature: Option<SignatureView>,
    /// The schema the own rows were mapped by (written into `model.json`, not the report).
    #[serde(skip)]
    pub schema: Option<Schema>,
    /// With an agreed map that keeps a subspace: the learners' schema, the final model's second
    /// block of columns (written into `model.json`).
    #[serde(skip)]
    pub learner_schema: Option<Schema>,
}

/// One accuracy of the summary with its uncertainty.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryLine {
    /// What was measured.
    pub name: &'static str,
    /// Accuracy on the own test rows.
    pub accuracy: f64,
    /// 95 % Wilson interval of that accuracy (test rows as trials).
    pub ci95: [f64; 2],
}

/// Below this many test rows the report warns that accuracies are coarse.
pub const FEW_TEST_ROWS: usize = 100;

/// Warnings about the own split: one class only, or too few rows to compare accuracies.
pub fn split_warnings(train: &Dataset, test: &Dataset) -> Vec<String> {
    let mut out = Vec::new();
    for (name, d) in [("test", test), ("training", train)] {
        let positive = d.labels().iter().filter(|&&y| y > 0.0).count();
        if positive == 0 || positive == d.len() {
            out.push(format!(
                "the own {name} split has one class only ({} rows, all {}): {}",
                d.len(),
                if positive == 0 { "negative" } else { "positive" },
                if name == "test" {
                    "its accuracies say nothing about the other class; use a test set with both classes"
                } else {
                    "the mixing weights and the local baseline cannot tell the classes apart"
                }
            ));
        }
    }
    if test.len() < FEW_TEST_ROWS {
        let (lo, hi) = wilson_interval(0.5, test.len());
        out.push(format!(
            "accuracies are measured on {} test rows only: each is uncertain by up to ±{:.0} points (95 % interval); differences smaller than that are not evidence",
            test.len(),
            100.0 * (hi - lo) / 2.0
        ));
    }
    out
}

impl Report {
    /// Every reported combiner's test accuracy: the candidates', then the comparators'.
    pub fn reported(&self) -> impl Iterator<Item = (Candidate, f64)> + '_ {
        self.candidate_accuracies
            .values
            .iter()
            .chain(self.comparator_accuracies.values.iter())
            .map(|(c, v)| (*c, *v))
    }

    /// The test accuracy of `c`.
    ///
    /// # Panics
    /// If `c` has no `report.json` key (every combiner the aggregator names has one).
    pub fn accuracy(&self, c: Candidate) -> f64 {
        self.reported()
            .find(|(k, _)| *k == c)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("the report has no accuracy of {}", c.name()))
    }

    /// Fills [`Report::summary`] from the accuracies and the test rows.
    pub fn with_summary(mut self) -> Self {
        self.summary = Self::summary_lines(self.accuracies(), self.test_rows);
        self
    }

    /// The summary lines of `accuracies` with their intervals on `test_rows` rows.
    pub fn summary_lines(
        accuracies: Vec<(&'static str, f64)>,
        test_rows: usize,
    ) -> Vec<SummaryLine> {
        accuracies
            .into_iter()
            .map(|(name, accuracy)| {
                let (lo, hi) = wilson_interval(accuracy, test_rows);
                SummaryLine {
                    name,
                    accuracy,
                    ci95: [lo, hi],
                }
            })
            .collect()
    }

    /// The accuracies of the summary, in report order: the tuned local model, the final
    /// model, then every other reported combiner (its file's label) in registry order.
    pub fn accuracies(&self) -> Vec<(&'static str, f64)> {
        let mut lines = Vec::new();
        for (c, v) in self.reported() {
            lines.push((c.label(), v));
            if c == Candidate::Local {
                lines.push((
                    "final model (chosen on own data)",
                    self.final_model.test_accuracy,
                ));
            }
        }
        if let Some(s) = &self.synthetic {
            lines.push(("synthetic rows + own rows (pooled)", s.accuracy));
        }
        lines
    }

    /// Writes `report.json`, `model.json` and `report.html` into `dir` (created if needed), each atomically.
    pub fn write(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create the output folder", dir.display()))?;
        let json = serde_json::to_vec_pretty(self).context("cannot encode the report")?;
        let schema = self
            .schema
            .as_ref()
            .context("the report has no schema to write model.json with")?;
        let model = model_of(
            &self.final_model,
            &self.generated_at,
            schema,
            self.learner_schema.as_ref(),
        )
        .to_json()
        .context("cannot encode the model")?;
        for (name, bytes) in [
            ("report.json", json),
            ("model.json", model),
            ("report.html", self.html().into_bytes()),
        ] {
            let path = dir.join(name);
            atomic_write(&path, &bytes)
                .with_context(|| format!("{}: cannot write", path.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
