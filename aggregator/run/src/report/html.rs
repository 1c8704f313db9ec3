//! The self-contained `report.html` of a [`Report`]: tables, the candidates' definitions and an
//! inline SVG bar chart (no scripts, fonts or files fetched). Every string from a node is
//! escaped ([`esc`]).

use super::Report;
use super::chart::{Bar, accuracy_chart, gains_chart, significant};
use super::text::{delta_text, opt};
use crate::model::{FINAL_PRIVACY, Z95};
use dpagg_shared::aggregate::select::Candidate;
use dpagg_shared::util::stats::wilson_interval;
use std::fmt::Write as _;

impl Report {
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
        let definitions: String = Candidate::all()
            .map(|c| format!("<li><b>{}</b>: {}.</li>\n", c.name(), c.definition()))
            .collect();
        format!(
            "<table><tr><th>candidate</th><th>CV accuracy (own training rows)</th><th>CV gain over local, points ± s.e.</th><th>test accuracy</th></tr>\n{rows}</table>\n<ul class=\"candidates\">\n{definitions}</ul>\n<p>The local model is kept unless another candidate's mean cross-validated gain over it (paired, row by row, on the held-out rows of repeated stratified folds) clears the selection's thresholds, in accuracy and in calibrated log-loss, each in standard errors; if several do, the one with the highest accuracy gain is chosen. The thresholds rise when the others' learners do not agree on a direction (their agreement here: {:.2}). Here: {}. The local model's λ = {} and stacking's λ = {} were chosen by 5-fold cross-validation on the own training rows. Weights of the final model: <code>model.json</code>.</p>",
            self.final_model.agreement,
            esc(&self.final_model.evidence),
            significant(self.final_model.local_lambda, 3),
            significant(self.final_model.stacking_lambda, 3)
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
            significant(syn.lambda, 3),
            syn.accuracy,
            self.accuracy(Candidate::MirrorAveraging),
            self.accuracy(Candidate::Local),
        )
    }

    /// The chart's bars: the summary's accuracies (local baseline first), then each included
    /// organisation's learner.
    fn bars(&self) -> Vec<Bar> {
        let mut bars: Vec<Bar> = self
            .summary
            .iter()
            .map(|l| Bar {
                label: l.name.to_owned(),
                value: l.accuracy,
                colour: COMBINED,
                ci95: l.ci95,
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
                ci95: [lo, hi],
            });
        }
        bars
    }

    /// The gains chart's bars, in points: each candidate's cross-validated gain over the tuned
    /// local model (what the selection weighs), then the final model's gain on the test rows.
    fn gain_bars(&self) -> Vec<Bar> {
        let f = &self.final_model;
        let mut bars: Vec<Bar> = (f.candidates.iter())
            .filter(|c| c.name != Candidate::Local.name())
            .map(|c| Bar {
                label: format!("{} (cross-validated)", c.name),
                value: 100.0 * c.cv_gain,
                colour: COMBINED,
                ci95: [-Z95, Z95].map(|z| 100.0 * (c.cv_gain + z * c.cv_gain_se)),
            })
            .collect();
        bars.push(Bar {
            label: format!("final model, {} (test rows)", f.chosen),
            value: 100.0 * f.gain_over_local,
            colour: COMBINED,
            ci95: f.gain_ci95.map(|g| 100.0 * g),
        });
        bars
    }

    /// The nodes table's rows.
    fn node_rows(&self) -> String {
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
        rows
    }

    /// The self-contained HTML page.
    pub fn html(&self) -> String {
        let (chart, from) = accuracy_chart(&self.bars());
        let warnings: String = self
            .warnings
            .iter()
            .map(|w| format!("<p class=\"warning\">Warning: {}</p>\n", esc(w)))
            .collect();
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
Mirror averaging (Minami et al. 2015, eq. 15–17) with β = {beta} on {train} own training rows; accuracies on
{test} own test rows. Schema fingerprint <code>{fp}</code>.</p>
<p class="headline"><b>{headline}</b></p>
{candidates}
<p>{privacy}</p>
{warnings}<h2>Gain over your own model</h2>
<p>Each candidate's gain over the tuned local model in accuracy points, with its 95 % interval:
green when the interval lies above zero, red below, grey when it spans zero (the data cannot
tell). Cross-validated on the own training rows for the candidates; on the {test} test rows for
the final model.</p>
{gains}
<h2>Accuracy on the aggregator's test split</h2>
<p class="legend">The axis starts at {from}. Bars:<span style="background:{LOCAL}"></span>local baseline (a non-private
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
            beta = significant(self.beta, 3),
            train = self.train_rows,
            test = self.test_rows,
            fp = esc(&self.schema_fingerprint),
            warnings = warnings,
            headline = esc(&self.first_line()),
            candidates = self.candidates_table(),
            privacy = esc(FINAL_PRIVACY),
            gains = gains_chart(&self.gain_bars()),
            chart = chart,
            from = significant(from, 3),
            rows = self.node_rows(),
            own = self.candidate_accuracies.own_learner_mixing_weight,
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

/// Escapes text for HTML and SVG.
pub(super) fn esc(s: &str) -> String {
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
