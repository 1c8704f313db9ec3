//! The terminal table of a [`Report`], and the number formats the HTML shares.

use super::Report;
use dpagg_shared::aggregate::select::Candidate;
use std::fmt::Write as _;

/// δ in a cell: `–` when unknown, `0`, or one significant digit.
pub(super) fn delta_text(d: Option<f64>) -> String {
    match d {
        None => "–".into(),
        Some(0.0) => "0".into(),
        Some(d) => format!("{d:.0e}"),
    }
}

/// A number in a cell with `digits` decimals, `–` when unknown.
pub(super) fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |x| format!("{x:.digits$}"))
}

impl Report {
    /// The report's first line: the final model against tuned local, and a warning naming the
    /// learners (and mirror averaging) that know nothing, when there are any.
    pub fn first_line(&self) -> String {
        match &self.majority {
            None => self.final_model.headline(),
            Some(m) => format!("{}; WARNING: {}", self.final_model.headline(), m.sentence()),
        }
    }

    /// The terminal table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{}", self.first_line());
        let _ = writeln!(
            s,
            "asked for: {}; {} included, {} excluded; β = {}; proofs accepted: {}",
            self.request,
            self.included,
            self.excluded,
            super::chart::significant(self.beta, 3),
            self.accepted_proofs.join(", ")
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
        self.synthetic_table(&mut s);
        for w in &self.warnings {
            let _ = writeln!(s, "warning: {w}");
        }
        s
    }
    /// The `--train-on synthetic` lines of the terminal table (none without it).
    fn synthetic_table(&self, s: &mut String) {
        let Some(syn) = &self.synthetic else {
            return;
        };
        let _ = writeln!(
            s,
            "synthetic data asked for: {}; {} synthetic + {} own rows pooled, λ = {}",
            syn.spec,
            syn.synthetic_rows,
            syn.pooled_rows - syn.synthetic_rows,
            super::chart::significant(syn.lambda, 3)
        );
        let points = |other: f64| 100.0 * (syn.accuracy - other);
        let _ = writeln!(
            s,
            "  the pooled model is {:+.1} points from the local baseline and {:+.1} from mirror averaging; the final model is chosen without it{}",
            points(self.accuracy(Candidate::Local)),
            points(self.accuracy(Candidate::MirrorAveraging)),
            if syn.accuracy < self.accuracy(Candidate::Local) {
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
}
