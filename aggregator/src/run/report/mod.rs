//! The report of a run: a terminal table, `report.json` and a self-contained `report.html` with
//! an inline SVG chart (no scripts, fonts or files fetched).
//!
//! Every string that came from a node (organisation id, reasons) is escaped in the HTML: a node
//! must not be able to inject markup into the aggregator's report.

use crate::run::fetch::{MAX_TEXT, NodeOutcome, clean};
use crate::run::model::ModelFile;
use crate::run::synthetic::SyntheticView;
use crate::run::trust::SignatureView;
use anyhow::{Context, Result};
use dpagg_shared::Dataset;
use dpagg_shared::aggregate::select::{Candidate, FinalModel, paired_gain};
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::release::PublishedLearner;
use dpagg_shared::util::files::atomic_write;
use dpagg_shared::util::stats::wilson_interval;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Longest release id shown (nodes make 32 hex characters).
pub const MAX_RELEASE_ID: usize = 64;

/// Longest mechanism name shown.
pub const MAX_MECHANISM: usize = 80;

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
    /// Accuracy of the learner alone on the aggregator's test split.
    pub accuracy: Option<f64>,
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
            accuracy: None,
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
    /// The aggregator's non-private learner on its own training rows, λ tuned by
    /// cross-validation on those rows: what it has without joining.
    pub local_baseline_accuracy: f64,
    /// Mirror averaging of the included learners (eq. 17).
    pub mirror_averaged_accuracy: f64,
    /// Mirror averaging with the aggregator's own learner as one more expert.
    pub with_own_learner_accuracy: f64,
    /// The own learner's mixing weight in that aggregate.
    pub own_learner_mixing_weight: f64,
    /// Stacking on the own features and the learners' margins.
    pub stacking_accuracy: f64,
    /// The final model: the candidate chosen by cross-validation on own training rows.
    pub final_model: FinalView,
    /// Uniform average of the included learners.
    pub uniform_average_accuracy: f64,
    /// The included learner with the smallest loss on the own training rows.
    pub best_single_accuracy: f64,
    /// The accuracies above with their 95 % Wilson intervals on `test_rows` rows.
    pub summary: Vec<SummaryLine>,
    /// What limits how far the accuracies can be trusted (a tiny or one-class split).
    pub warnings: Vec<String>,
    /// One line per node, in the configured order.
    pub nodes: Vec<NodeReport>,
    /// `--train-on synthetic`: the pooled synthetic rows and the model trained on them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SyntheticView>,
    /// The aggregator's organisation (from its certificate), when it signs the report.
    pub signed_by: Option<String>,
    /// The aggregator's signature over this report (`dpagg-aggregator verify`; see
    /// `crate::run::trust`). Absent from plain-text runs.
    pub signature: Option<SignatureView>,
    /// The schema the own rows were mapped by (written into `model.json`, not the report).
    #[serde(skip)]
    pub schema: Option<Schema>,
}

/// What the final model says in words about its privacy.
pub const FINAL_PRIVACY: &str = "The final model is differentially private with respect to each other organisation's records (it post-processes their releases; seed 001 Proposition 4.1), but not with respect to the aggregator's own records, which it uses without noise: do not publish it as a private release.";

/// What a candidate of the final model is, in one sentence (the report's definitions; the
/// match makes a new candidate fail to compile until it is defined here).
pub fn candidate_definition(c: Candidate) -> &'static str {
    match c {
        Candidate::Local => {
            "the local baseline: a non-private logistic regression on the own training rows, λ tuned by cross-validation"
        }
        Candidate::MirrorAveraging => {
            "mirror averaging of the included learners (seed 001 eq. 17), weighted by their loss on the own training rows"
        }
        Candidate::MirrorWithOwn => "the same with the local model as one more expert",
        Candidate::Stacking => {
            "a regularised logistic regression on the own features and the learners' normalised margins ⟨θ_m/‖θ_m‖, x⟩ (a noisy learner with a large norm cannot dominate)"
        }
        Candidate::StackingMargins => {
            "the same on the learners' normalised margins only, without the own features (fewer parameters: better when the learners carry most of the signal and the own rows are few)"
        }
    }
}

/// One candidate of the final model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateView {
    /// Its name (`local`, `mirror-averaging`, `mirror-averaging+own`, `stacking`,
    /// `stacking-margins`; see [`candidate_definition`]).
    pub name: &'static str,
    /// Mean held-out accuracy in cross-validation on own training rows.
    pub cv_accuracy: f64,
    /// Its cross-validated gain over local (accuracy as a fraction).
    pub cv_gain: f64,
    /// Standard error of `cv_gain`.
    pub cv_gain_se: f64,
    /// Accuracy on the own test rows.
    pub test_accuracy: f64,
}

/// The final model, how it was chosen, and what it gains over the tuned local model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FinalView {
    /// The candidate chosen.
    pub chosen: &'static str,
    /// Its accuracy on the own test rows.
    pub test_accuracy: f64,
    /// Test accuracy minus the tuned local model's (paired, same rows).
    pub gain_over_local: f64,
    /// 95 % interval of that gain (normal, paired per-row differences).
    pub gain_ci95: [f64; 2],
    /// λ of the local model (cross-validated).
    pub local_lambda: f64,
    /// λ of the stacker (cross-validated).
    pub stacking_lambda: f64,
    /// Every candidate.
    pub candidates: Vec<CandidateView>,
    /// The chosen model's weights (one per schema column, intercept last).
    pub weights: Vec<f64>,
    /// Its privacy, in words.
    pub privacy: &'static str,
}

impl FinalView {
    /// The view of `fin`, scored on `test`.
    pub fn new(fin: &FinalModel, test: &Dataset) -> Self {
        let local = fin.model(Candidate::Local);
        let (gain, lo, hi) = paired_gain(fin.classifier(), local, test);
        Self {
            chosen: fin.chosen.name(),
            test_accuracy: fin.classifier().accuracy(test),
            gain_over_local: gain,
            gain_ci95: [lo, hi],
            local_lambda: fin.local_lambda,
            stacking_lambda: fin.stacking_lambda,
            candidates: fin
                .cv
                .iter()
                .map(|e| CandidateView {
                    name: e.candidate.name(),
                    cv_accuracy: e.accuracy,
                    cv_gain: e.gain,
                    cv_gain_se: e.gain_se,
                    test_accuracy: fin.model(e.candidate).accuracy(test),
                })
                .collect(),
            weights: fin.classifier().coefficients().to_vec(),
            privacy: FINAL_PRIVACY,
        }
    }

    /// The headline: the final model against the tuned local one.
    pub fn headline(&self) -> String {
        let points = |x: f64| format!("{:+.1}", 100.0 * x);
        if self.chosen == Candidate::Local.name() {
            format!(
                "final model: the local model, {:.3} — the others' learners did not beat it in cross-validation on own data, so joining changes nothing here",
                self.test_accuracy
            )
        } else {
            format!(
                "final model ({}): {:.3} vs tuned local {:.3}: {} points (95 % interval {} to {})",
                self.chosen,
                self.test_accuracy,
                self.test_accuracy - self.gain_over_local,
                points(self.gain_over_local),
                points(self.gain_ci95[0]),
                points(self.gain_ci95[1])
            )
        }
    }
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

fn delta_text(d: Option<f64>) -> String {
    match d {
        None => "–".into(),
        Some(0.0) => "0".into(),
        Some(d) => format!("{d:.0e}"),
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

impl Report {
    /// The terminal table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{}", self.final_model.headline());
        let _ = writeln!(
            s,
            "asked for: {}; {} included, {} excluded; β = {}",
            self.request, self.included, self.excluded, self.beta
        );
        let _ = writeln!(
            s,
            "{:<28} {:<18} {:<9} {:<32} {:>5} {:>8} {:>8} {:>13}  excluded because",
            "node", "organisation", "status", "release", "ε", "δ", "accuracy", "mixing weight"
        );
        for n in &self.nodes {
            let _ = writeln!(
                s,
                "{:<28} {:<18} {:<9} {:<32} {:>5} {:>8} {:>8} {:>13}  {}",
                n.endpoint,
                n.organisation_id.as_deref().unwrap_or("–"),
                n.status,
                n.release_id.as_deref().unwrap_or("–"),
                opt(n.epsilon, 2),
                delta_text(n.delta),
                opt(n.accuracy, 3),
                opt(n.mixing_weight, 3),
                n.exclusion.as_ref().map_or("", |e| e.reason.as_str())
            );
        }
        let _ = writeln!(
            s,
            "accuracy on {} own test rows (mixing weights from {} own training rows):",
            self.test_rows, self.train_rows
        );
        for line in &self.summary {
            let _ = writeln!(
                s,
                "  {:<38} {:.3}  (95 % interval {:.3}–{:.3})",
                line.name, line.accuracy, line.ci95[0], line.ci95[1]
            );
        }
        if let Some(syn) = &self.synthetic {
            let _ = writeln!(
                s,
                "synthetic data asked for: {}; {} synthetic + {} own rows pooled, λ = {}",
                syn.spec,
                syn.synthetic_rows,
                syn.pooled_rows - syn.synthetic_rows,
                syn.lambda
            );
            let points = |other: f64| 100.0 * (syn.accuracy - other);
            let _ = writeln!(
                s,
                "  the pooled model is {:+.1} points from the local baseline and {:+.1} from mirror averaging; the final model is chosen without it{}",
                points(self.local_baseline_accuracy),
                points(self.mirror_averaged_accuracy),
                if syn.accuracy < self.local_baseline_accuracy {
                    " (here the synthetic rows made the pooled model worse than your own rows alone)"
                } else {
                    ""
                }
            );
            for n in &syn.nodes {
                let _ = writeln!(
                    s,
                    "  {:<28} {:<18} {:<9} {:<32} {:>6} rows  {}",
                    n.endpoint,
                    n.organisation_id.as_deref().unwrap_or("–"),
                    n.status,
                    n.release_id.as_deref().unwrap_or("–"),
                    n.rows,
                    n.exclusion.as_deref().unwrap_or("")
                );
            }
        }
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
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

    /// The accuracies of the summary, in report order (the tuned local model first).
    pub fn accuracies(&self) -> Vec<(&'static str, f64)> {
        let mut lines = vec![
            (
                "local baseline (tuned, own data only)",
                self.local_baseline_accuracy,
            ),
            (
                "final model (chosen on own data)",
                self.final_model.test_accuracy,
            ),
            ("mirror averaging", self.mirror_averaged_accuracy),
            (
                "mirror averaging + own learner",
                self.with_own_learner_accuracy,
            ),
            ("stacking", self.stacking_accuracy),
            ("uniform average", self.uniform_average_accuracy),
            ("best single learner", self.best_single_accuracy),
        ];
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
        let model = ModelFile::of(self, schema).to_json()?;
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

    /// The final model's candidates as an HTML table.
    fn candidates_table(&self) -> String {
        let mut rows = String::new();
        for c in &self.final_model.candidates {
            let _ = writeln!(
                rows,
                "<tr><td>{}{}</td><td>{:.3}</td><td>{:+.1} ± {:.1}</td><td>{:.3}</td></tr>",
                c.name,
                if c.name == self.final_model.chosen {
                    " (chosen)"
                } else {
                    ""
                },
                c.cv_accuracy,
                100.0 * c.cv_gain,
                100.0 * c.cv_gain_se,
                c.test_accuracy
            );
        }
        let definitions: String = Candidate::ALL
            .iter()
            .map(|&c| {
                format!(
                    "<li><b>{}</b>: {}.</li>\n",
                    c.name(),
                    candidate_definition(c)
                )
            })
            .collect();
        format!(
            "<table><tr><th>candidate</th><th>CV accuracy (own training rows)</th><th>CV gain over local, points ± s.e.</th><th>test accuracy</th></tr>\n{rows}</table>\n<ul class=\"candidates\">\n{definitions}</ul>\n<p>The local model is kept unless another candidate's mean cross-validated gain in accuracy over it (paired, row by row, on the held-out rows of repeated stratified folds) exceeds one standard error; if several do, the one with the highest gain − 1 s.e. is chosen. The local model's λ = {} and stacking's λ = {} were chosen by 5-fold cross-validation on the own training rows. Weights of the final model: <code>model.json</code>.</p>",
            self.final_model.local_lambda, self.final_model.stacking_lambda
        )
    }

    /// The `--train-on synthetic` section (empty without it).
    fn synthetic_html(&self) -> String {
        let Some(syn) = &self.synthetic else {
            return String::new();
        };
        let mut rows = String::new();
        for n in &syn.nodes {
            let _ = writeln!(
                rows,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"reason\">{}</td></tr>",
                esc(&n.endpoint),
                esc(n.organisation_id.as_deref().unwrap_or("–")),
                n.status,
                n.status,
                esc(n.release_id.as_deref().unwrap_or("–")),
                opt(n.epsilon, 3),
                delta_text(n.delta),
                n.rows,
                esc(n.exclusion.as_deref().unwrap_or("")),
            );
        }
        format!(
            "<h2>Synthetic data</h2>\n<p>Asked for: {}. {} synthetic rows pooled with {} own training rows; a logistic regression (λ = {} by cross-validation on the pool) reaches {:.3} on the own test rows (mirror averaging: {:.3}; local baseline: {:.3}). Each organisation spent the same ε on its synthetic rows as on its learner.</p>\n<table><tr><th>endpoint</th><th>organisation</th><th>status</th><th>release</th><th>ε</th><th>δ</th><th>rows</th><th>excluded because</th></tr>\n{rows}</table>\n",
            esc(&syn.spec),
            syn.synthetic_rows,
            syn.pooled_rows - syn.synthetic_rows,
            syn.lambda,
            syn.accuracy,
            self.mirror_averaged_accuracy,
            self.local_baseline_accuracy,
        )
    }

    /// The self-contained HTML page.
    pub fn html(&self) -> String {
        let mut bars: Vec<Bar> = self
            .summary
            .iter()
            .map(|l| Bar {
                label: l.name.to_owned(),
                value: l.accuracy,
                colour: COMBINED,
                ci95: Some(l.ci95),
            })
            .collect();
        if let Some(local) = bars.first_mut() {
            local.colour = LOCAL;
        }
        for n in self.nodes.iter().filter(|n| n.status == "included") {
            let name = n
                .organisation_id
                .clone()
                .unwrap_or_else(|| n.endpoint.clone());
            let value = n.accuracy.unwrap_or(0.0);
            let (lo, hi) = wilson_interval(value, self.test_rows);
            bars.push(Bar {
                label: format!("learner of {name}"),
                value,
                colour: SINGLE,
                ci95: Some([lo, hi]),
            });
        }
        let warnings: String = self
            .warnings
            .iter()
            .map(|w| format!("<p class=\"warning\">Warning: {}</p>\n", esc(w)))
            .collect();
        let mut rows = String::new();
        for n in &self.nodes {
            let _ = writeln!(
                rows,
                "<tr><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"reason\">{}</td></tr>",
                esc(&n.endpoint),
                esc(n.organisation_id.as_deref().unwrap_or("–")),
                n.status,
                n.status,
                esc(n.release_id.as_deref().unwrap_or("–")),
                esc(n.mechanism.as_deref().unwrap_or("–")),
                opt(n.epsilon, 3),
                delta_text(n.delta),
                opt(n.accuracy, 3),
                opt(n.mixing_weight, 4),
                esc(n.exclusion.as_ref().map_or("", |e| e.reason.as_str())),
            );
        }
        format!(
            r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dpagg report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
td, th {{ border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }}
td.excluded {{ color: #b00; }} td.included {{ color: #070; }}
td.reason {{ max-width: 32em; overflow-wrap: anywhere; }}
td code {{ overflow-wrap: anywhere; }}
p.warning {{ background: #fff3cd; border-left: 4px solid #e0a800; padding: 0.4em 0.8em; }}
.legend span {{ display: inline-block; width: 0.9em; height: 0.9em; margin: 0 0.3em 0 1em; vertical-align: middle; }}
</style></head><body>
<h1>dpagg aggregation report</h1>
<p>Generated {generated}. Asked for: {request}. {included} node(s) included, {excluded} excluded.
Mirror averaging (seed 001 eq. 15–17) with β = {beta} on {train} own training rows; accuracies on
{test} own test rows. Schema fingerprint <code>{fp}</code>.</p>
<p class="headline"><b>{headline}</b></p>
{candidates}
<p>{privacy}</p>
{warnings}<h2>Accuracy on the aggregator's test split</h2>
<p class="legend">Bars:<span style="background:{LOCAL}"></span>local baseline (a non-private
logistic regression on the aggregator's own training rows)<span style="background:{COMBINED}"></span>combinations
of the organisations' learners<span style="background:{SINGLE}"></span>one organisation's learner alone.
Whiskers: 95 % Wilson intervals on {test} test rows.</p>
{chart}
<p><b>Mirror averaging</b>: the learners weighted by their loss on the own training rows (eq. 16–17).
<b>+ own learner</b>: the local baseline added as one more expert. <b>Uniform average</b>: the
learners' parameters averaged with equal weights. <b>Best single learner</b>: the one
organisation's learner with the smallest logistic loss on the own <em>training</em> rows (chosen
without looking at the test rows), scored on the test rows.</p>
<h2>Nodes</h2>
<table><tr><th>endpoint</th><th>organisation</th><th>status</th><th>release</th><th>mechanism</th><th>ε</th><th>δ</th><th>accuracy</th><th>mixing weight λ<sub>m</sub></th><th>excluded because</th></tr>
{rows}</table>
<p>The own learner's mixing weight when added as an expert: {own:.4}.</p>
{synthetic}</body></html>
"#,
            generated = esc(&self.generated_at),
            request = esc(&self.request),
            included = self.included,
            excluded = self.excluded,
            beta = self.beta,
            train = self.train_rows,
            test = self.test_rows,
            fp = esc(&self.schema_fingerprint),
            warnings = warnings,
            headline = esc(&self.final_model.headline()),
            candidates = self.candidates_table(),
            privacy = esc(FINAL_PRIVACY),
            chart = bar_chart(&bars),
            rows = rows,
            own = self.own_learner_mixing_weight,
            synthetic = self.synthetic_html(),
        )
    }
}

/// Colour of the local baseline's bar.
const LOCAL: &str = "#888888";
/// Colour of the combinations' bars.
const COMBINED: &str = "#1f5fa8";
/// Colour of a single organisation's learner.
const SINGLE: &str = "#e08a2c";

/// One bar of the chart.
struct Bar {
    label: String,
    value: f64,
    colour: &'static str,
    ci95: Option<[f64; 2]>,
}

/// A horizontal bar chart of accuracies in [0, 1] as inline SVG, with a labelled axis and
/// interval whiskers.
fn bar_chart(bars: &[Bar]) -> String {
    const LABEL_W: f64 = 260.0;
    const PLOT_W: f64 = 420.0;
    const ROW_H: f64 = 22.0;
    let height = ROW_H * bars.len() as f64 + 40.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{height}\" role=\"img\" aria-label=\"accuracy per learner\" font-family=\"sans-serif\" font-size=\"12\">\n",
        w = LABEL_W + PLOT_W + 60.0
    );
    for (i, bar) in bars.iter().enumerate() {
        let y = ROW_H * i as f64 + 5.0;
        let w = PLOT_W * bar.value.clamp(0.0, 1.0);
        let [lo, hi] = bar.ci95.unwrap_or([bar.value, bar.value]);
        let (x_lo, x_hi) = (LABEL_W + PLOT_W * lo, LABEL_W + PLOT_W * hi);
        let _ = writeln!(
            svg,
            "<text x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{label}</text><rect x=\"{LABEL_W}\" y=\"{y}\" width=\"{w:.1}\" height=\"{bh}\" fill=\"{colour}\"/><line x1=\"{x_lo:.1}\" y1=\"{my}\" x2=\"{x_hi:.1}\" y2=\"{my}\" stroke=\"#222\"/><text x=\"{vx:.1}\" y=\"{ty}\">{value:.3}</text>",
            lx = LABEL_W - 6.0,
            ty = y + 13.0,
            my = y + (ROW_H - 6.0) / 2.0,
            bh = ROW_H - 6.0,
            vx = x_hi.max(LABEL_W + w) + 4.0,
            label = esc(&bar.label),
            colour = bar.colour,
            value = bar.value,
        );
    }
    let axis_y = ROW_H * bars.len() as f64 + 5.0;
    let _ = writeln!(
        svg,
        "<line x1=\"{LABEL_W}\" y1=\"{axis_y}\" x2=\"{x2}\" y2=\"{axis_y}\" stroke=\"#444\"/>",
        x2 = LABEL_W + PLOT_W
    );
    for k in 0..=5 {
        let v = k as f64 / 5.0;
        let x = LABEL_W + PLOT_W * v;
        let _ = writeln!(
            svg,
            "<line x1=\"{x}\" y1=\"{axis_y}\" x2=\"{x}\" y2=\"{t}\" stroke=\"#444\"/><text x=\"{x}\" y=\"{ty}\" text-anchor=\"middle\">{v:.1}</text>",
            t = axis_y + 4.0,
            ty = axis_y + 16.0
        );
    }
    let _ = writeln!(
        svg,
        "<text x=\"{x}\" y=\"{y}\" text-anchor=\"middle\">accuracy</text></svg>",
        x = LABEL_W + PLOT_W / 2.0,
        y = axis_y + 32.0
    );
    svg
}

/// Escapes text for HTML and SVG.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_strings_are_escaped_in_html() {
        let report = Report {
            generated_at: "now".into(),
            request: "latest".into(),
            schema_fingerprint: "fp".into(),
            beta: 3.0,
            l2: 0.01,
            seed: 1,
            train_rows: 10,
            test_rows: 5,
            included: 1,
            excluded: 0,
            local_baseline_accuracy: 0.5,
            mirror_averaged_accuracy: 0.6,
            with_own_learner_accuracy: 0.6,
            own_learner_mixing_weight: 0.1,
            uniform_average_accuracy: 0.5,
            best_single_accuracy: 0.6,
            stacking_accuracy: 0.65,
            final_model: FinalView {
                chosen: "stacking",
                test_accuracy: 0.65,
                gain_over_local: 0.15,
                gain_ci95: [0.05, 0.25],
                local_lambda: 0.01,
                stacking_lambda: 0.1,
                candidates: Vec::new(),
                weights: vec![1.0],
                privacy: FINAL_PRIVACY,
            },
            summary: Vec::new(),
            warnings: vec!["a <b>warning</b>".into()],
            nodes: vec![NodeReport {
                endpoint: "http://x:1".into(),
                organisation_id: Some("<script>alert(1)</script>".into()),
                status: "included",
                release_id: Some("r".into()),
                mechanism: Some("m".into()),
                epsilon: Some(1.0),
                delta: Some(0.0),
                neighbour_relation: Some("replace-one".into()),
                accuracy: Some(0.7),
                mixing_weight: Some(1.0),
                mixing_weight_with_own: Some(0.9),
                exclusion: None,
                elapsed_ms: 1,
                certificate_identity: None,
                signature: None,
                release_protobuf: None,
            }],
            synthetic: None,
            signed_by: None,
            signature: None,
            schema: None,
        }
        .with_summary();
        let html = report.html();
        assert!(!html.contains("<script>") && !html.contains("<b>warning"));
        assert!(html.contains("Best single learner") && html.contains("class=\"legend\""));
        assert_eq!(report.summary.len(), 7);
        assert!(
            report
                .table()
                .starts_with("final model (stacking): 0.650 vs tuned local 0.500: +15.0 points"),
            "{}",
            report.table()
        );
        assert!(html.contains("not with respect to the aggregator&#39;s own records"));
        let schema = Schema::from_toml_str(
            "name = \"t\"\nintercept = false\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n[[features]]\nname = \"a\"\nlo = 0\nhi = 1\n",
            "t.toml",
        )
        .expect("schema");
        let model = ModelFile::of(&report, &schema);
        assert_eq!(
            (model.weights[0], model.candidate.as_str()),
            (1.0, "stacking")
        );
        assert_eq!(model.columns, ["a"]);
        assert!(report.table().contains("95 % interval"));
        assert!(report.table().contains("warning: a <b>warning</b>"));
        assert!(html.contains("&lt;script&gt;"));
        assert!(html.contains("<svg") && html.contains("accuracy</text>"));
        assert!(report.table().contains("mirror averaging"));
        // Every candidate the selection can choose is defined where the report names it, and the
        // mixing-weight column is not labelled λ (the regulariser's name).
        assert!(
            Candidate::ALL
                .iter()
                .all(|c| html.contains(&format!("<li><b>{}</b>: ", c.name()))),
            "{html}"
        );
        let header = report.table().lines().nth(2).unwrap_or_default().to_owned();
        assert!(
            header.contains("accuracy mixing weight  excluded because") && !header.contains('λ'),
            "{header}"
        );
    }

    #[test]
    fn one_class_and_small_splits_are_warned_about() {
        let data = |labels: &[f64]| Dataset::new(vec![0.5; labels.len()], labels.to_vec(), 1);
        let mixed: Vec<f64> = (0..200)
            .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert!(split_warnings(&data(&mixed), &data(&mixed)).is_empty());
        let w = split_warnings(&data(&mixed), &data(&[-1.0; 120]));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("test split has one class only (120 rows, all negative)"));
        let w = split_warnings(&data(&[1.0; 30]), &data(&mixed[..63]));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("training split has one class only"));
        assert!(
            w[1].contains("63 test rows only") && w[1].contains("±12 points"),
            "{w:?}"
        );
    }
}
