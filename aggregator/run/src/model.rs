//! The final model of a run: how it was chosen ([`FinalView`], the report's `final_model`, with
//! the evidence in words and its privacy, [`FINAL_PRIVACY`]), writing it as `model.json`
//! (self-contained; the file and how it is applied are defined in
//! `dpagg_shared::aggregate::model_file`) and `dpagg-aggregator predict`, which applies it to new
//! rows.
//!
//! `predict` reads the model (checking its schemas against their fingerprints), maps each row
//! of a CSV exactly as `run` mapped its own rows (the same loader) and writes, per row, the predicted label, P(positive) = σ(⟨θ, x⟩) and the margin ⟨θ, x⟩. A
//! margin of 0 predicts the positive label, as every accuracy in the report does, so
//! `predict` on the report's test file reproduces its test accuracy exactly.
//! `docs/own-data.md` shows the same computation in a few lines of Python with numpy.

use anyhow::{Context, Result, bail};
use dpagg_shared::Dataset;
use dpagg_shared::aggregate::model_file::{FORMAT, HOW, ModelFile};
use dpagg_shared::aggregate::select::{Candidate, FinalModel, paired_gain};
use dpagg_shared::cli::Out;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::util::files::atomic_write;
use serde::Serialize;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// What the final model says in words about its privacy.
pub const FINAL_PRIVACY: &str = "The final model is differentially private with respect to each other organisation's records (it post-processes their releases; Minami et al. 2015, Proposition 4.1), but not with respect to the aggregator's own records, which it uses without noise: do not publish it as a private release.";

/// One candidate of the final model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CandidateView {
    /// Its name (`local`, `mirror-averaging`, `mirror-averaging+own`, `stacking`,
    /// `stacking-margins`; see [`Candidate::definition`]).
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
    /// How far the others' learners agree on a direction (0 to 1; below the selection's
    /// `min_agreement` a candidate needs stronger evidence).
    pub agreement: f64,
    /// How sure the choice is, in one sentence: the cross-validated gain of the best
    /// candidate over local, and whether it cleared the selection's threshold.
    pub evidence: String,
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
            agreement: fin.agreement,
            evidence: evidence(fin),
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
                "final model: the local model, {:.3} — {}",
                self.test_accuracy, self.evidence
            )
        } else {
            format!(
                "final model ({}): {:.3} vs tuned local {:.3}: {} points (95 % interval {} to {}) — {}",
                self.chosen,
                self.test_accuracy,
                self.test_accuracy - self.gain_over_local,
                points(self.gain_over_local),
                points(self.gain_ci95[0]),
                points(self.gain_ci95[1]),
                self.evidence
            )
        }
    }
}

/// The selection's evidence in words (see [`FinalView::evidence`]).
/// The normal quantile of a two-sided 95 % interval.
pub(crate) const Z95: f64 = 1.96;

/// A cross-validated gain in points with its 95 % interval: "+4.2 points (95 % interval +0.3
/// to +8.1)".
fn cv_gain(gain: f64, se: f64) -> String {
    format!(
        "{:+.1} points (95 % interval {:+.1} to {:+.1})",
        100.0 * gain,
        100.0 * (gain - Z95 * se),
        100.0 * (gain + Z95 * se)
    )
}

fn evidence(fin: &FinalModel) -> String {
    let two_maps = fin.config.own_columns.is_some();
    let disagree = !two_maps && fin.agreement < fin.config.min_agreement;
    let agreement = if two_maps {
        "the learners work in a subspace chosen from your rows, where they agree whatever they \
         carry, so "
            .to_owned()
    } else if disagree {
        format!(
            "the others' learners do not agree with each other (agreement {:.2}, below {:.2}), so ",
            fin.agreement, fin.config.min_agreement
        )
    } else {
        String::new()
    };
    let rows = if fin.evidence_rows < fin.rows {
        format!(
            "{} own rows (the {} whose labels chose the subspace left out)",
            fin.evidence_rows,
            fin.rows - fin.evidence_rows
        )
    } else {
        format!("{} own rows", fin.rows)
    };
    let rule = format!(
        "{agreement}a candidate needs a gain above {} standard errors in accuracy and {} in calibrated log-loss",
        fin.config.z_accuracy, fin.config.z_loss
    );
    let best = fin
        .cv
        .iter()
        .filter(|e| e.candidate != Candidate::Local)
        .max_by(|a, b| a.gain.total_cmp(&b.gain));
    let chosen = fin.cv.iter().find(|e| e.candidate == fin.chosen);
    match (best, chosen) {
        (_, Some(e)) if fin.chosen != Candidate::Local => format!(
            "in cross-validation on {rows} {} gained {} over your own model ({rule})",
            e.candidate.name(),
            cv_gain(e.gain, e.gain_se),
        ),
        (Some(e), _) if e.gain > 0.0 && e.gain - Z95 * e.gain_se < 0.0 => format!(
            "cannot tell whether the others' learners help: in cross-validation on {rows} the best of them ({}) scored {} against your own model, an interval that spans zero ({rule}), so the final model is your own",
            e.candidate.name(),
            cv_gain(e.gain, e.gain_se),
        ),
        (Some(e), _) if e.gain > 0.0 => format!(
            "in cross-validation on {rows} {} scored {} over your own model, but that is not enough evidence ({rule}), so the final model is your own",
            e.candidate.name(),
            cv_gain(e.gain, e.gain_se),
        ),
        _ => format!(
            "the others' learners did not beat your own model in cross-validation on {rows}{}, so the final model is your own: joining changes nothing here",
            if disagree {
                format!(
                    " and do not agree with each other (agreement {:.2})",
                    fin.agreement
                )
            } else {
                String::new()
            }
        ),
    }
}

/// The model file of a run's final model, made at `generated_at`, with the schema its rows were
/// mapped by (and the learners' schema, the second block, when there is one).
pub fn model_of(
    fin: &FinalView,
    generated_at: &str,
    schema: &Schema,
    learners: Option<&Schema>,
) -> ModelFile {
    let mut columns = schema.columns();
    if let Some(l) = learners {
        columns.extend(l.columns().iter().map(|c| format!("agreed map: {c}")));
    }
    ModelFile {
        format: FORMAT.into(),
        candidate: fin.chosen.into(),
        columns,
        weights: fin.weights.clone(),
        label: schema.label.clone(),
        schema: schema.clone(),
        schema_fingerprint: schema.fingerprint(),
        learner_schema: learners.cloned(),
        learner_schema_fingerprint: learners.map(Schema::fingerprint),
        test_accuracy: fin.test_accuracy,
        generated_at: generated_at.to_owned(),
        predict: HOW.into(),
        privacy: FINAL_PRIVACY.into(),
    }
}

/// `dpagg-aggregator predict`: scores every row of `data` with the model at `model_path`,
/// writing `row,predicted,probability,margin` to `out_path` (atomically) or to stdout.
pub fn predict(
    model_path: &Path,
    data: &Path,
    out_path: Option<&Path>,
    out: &mut Out,
) -> Result<()> {
    let loaded = ModelFile::load(model_path)?;
    if let Some(p) = out_path {
        check_writable(p)?;
    }
    let (rows, labels) = loaded.rows_of_csv(data)?;
    let mut csv = String::from("row,predicted,probability,margin\n");
    let mut right = 0usize;
    for (i, score) in loaded.score(&rows).iter().enumerate() {
        let label = loaded.label_of(score);
        let _ = writeln!(
            csv,
            "{},{},{},{}",
            i + 1,
            quote(label),
            score.probability,
            score.margin
        );
        if let Some(l) = labels.as_ref().filter(|l| l[i] != 0.0) {
            right += usize::from((l[i] > 0.0) == score.positive);
        }
    }
    let model = &loaded.file;
    match out_path {
        None => out.write_all(csv.as_bytes())?,
        Some(p) => {
            atomic_write(p, csv.as_bytes())
                .with_context(|| format!("{}: cannot write", p.display()))?;
            write!(out, "wrote {} prediction(s) to {}", rows.len(), p.display())?;
            match &labels {
                Some(l) => write_accuracy(out, l, right, model)?,
                None => writeln!(out)?,
            }
        }
    }
    Ok(())
}

/// "; accuracy … against column …" over the labelled rows, and how many rows had no usable
/// label (blank, or not one of the two values: scored, left out of the accuracy).
fn write_accuracy(out: &mut Out, labels: &[f64], right: usize, model: &ModelFile) -> Result<()> {
    let labelled = labels.iter().filter(|&&l| l != 0.0).count();
    let left_out = labels.len() - labelled;
    if labelled == 0 {
        writeln!(
            out,
            "; no row has a label `{}` or `{}` in column `{}`: no accuracy",
            model.label.positive, model.label.negative, model.label.column
        )?;
        return Ok(());
    }
    write!(
        out,
        "; accuracy {} against column `{}` (model `{}`: {} on its test rows)",
        right as f64 / labelled as f64,
        model.label.column,
        model.candidate,
        model.test_accuracy
    )?;
    if left_out > 0 {
        write!(
            out,
            "; {left_out} row(s) with a blank or unknown label scored but left out of the accuracy"
        )?;
    }
    writeln!(out)?;
    Ok(())
}

/// Fails early when `path`'s folder does not exist (not after scoring every row).
fn check_writable(path: &Path) -> Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(d) = dir
        && !d.is_dir()
    {
        bail!(
            "{}: the folder {} does not exist",
            path.display(),
            d.display()
        );
    }
    Ok(())
}

/// A CSV field, quoted when it must be.
fn quote(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::aggregate::select::{CvEstimate, SelectionConfig};

    /// A final model that kept local, with the others' best cross-validated gain `gain` and their
    /// agreement `agreement`.
    fn kept_local(gain: f64, agreement: f64) -> FinalModel {
        let config = SelectionConfig::default();
        let estimate = |candidate, gain| CvEstimate {
            candidate,
            accuracy: 0.7 + gain,
            gain,
            gain_se: 0.02,
            loss_gain: gain,
            loss_gain_se: 0.02,
        };
        FinalModel {
            chosen: Candidate::Local,
            candidates: Vec::new(),
            comparators: Vec::new(),
            cv: vec![
                estimate(Candidate::Local, 0.0),
                estimate(Candidate::MirrorAveraging, gain),
            ],
            mixing_weights: Vec::new(),
            mixing_weights_with_own: Vec::new(),
            local_lambda: 0.01,
            stacking_lambda: 0.01,
            margins_lambda: 0.01,
            config: config.for_agreement(agreement),
            agreement,
            rows: 60,
            evidence_rows: 60,
        }
    }

    /// Each sentence that keeps local says why, and says when the learners did not agree.
    #[test]
    fn the_evidence_says_why_local_was_kept_and_whether_the_learners_agree() {
        let agree = evidence(&kept_local(-0.01, 0.99));
        assert!(agree.contains("did not beat your own model"), "{agree}");
        assert!(!agree.contains("agree"), "{agree}");
        let disagree = evidence(&kept_local(-0.01, 0.5));
        assert!(
            disagree.contains("did not beat")
                && disagree.contains("do not agree with each other (agreement 0.50)"),
            "{disagree}"
        );
        let short = evidence(&kept_local(0.01, 0.5));
        assert!(
            short.contains("cannot tell whether the others' learners help")
                && short.contains("scored +1.0 points (95 % interval")
                && short.contains("agreement 0.50, below 0.97"),
            "{short}"
        );
    }
}
