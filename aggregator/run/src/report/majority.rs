//! Learners that know nothing, said out loud: every included learner, and mirror averaging,
//! whose accuracy on the aggregator's test rows is no better than always answering the more
//! common label there, with the likely cause.
//!
//! A private learner can sit at the majority class without any error being raised: its noise
//! swamps what the rows carry (too few rows for its ε and its number of columns), or the map
//! makes every row nearly the same point (a schema whose bounds put the typical values of
//! zero-heavy or skewed features at the edge of the scale). The report's first line and
//! `report.json` (`majority`, and each node's `no_better_than_majority`) say so; the cause is
//! told apart by how alike the learners' rows are ([`alike`]).

use serde::Serialize;

/// Above this share of the rows' second moment in their common mean, the rows count as alike
/// (every row nearly the same point): the cause named is the map, not the noise.
pub const ALIKE: f64 = 0.5;

/// ‖mean row‖² / mean ‖row‖² over the first `columns` columns of `rows` (the features, without
/// the intercept): 1 when every row is the same point, near 0 for centred rows.
pub fn alike(rows: &dpagg_shared::Dataset, columns: usize) -> f64 {
    let n = rows.len().max(1) as f64;
    let k = columns.min(rows.dim());
    let mut mean = vec![0.0; k];
    let mut second = 0.0;
    for i in 0..rows.len() {
        let r = &rows.row(i)[..k];
        for (m, v) in mean.iter_mut().zip(r) {
            *m += v / n;
        }
        second += r.iter().map(|v| v * v).sum::<f64>() / n;
    }
    if second > 0.0 {
        mean.iter().map(|v| v * v).sum::<f64>() / second
    } else {
        1.0
    }
}

/// What the report says about learners at the majority class.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MajorityView {
    /// The more common label on the own test rows.
    pub label: String,
    /// Its share of them: the accuracy of always answering it.
    pub share: f64,
    /// Organisations whose learner does no better.
    pub learners: Vec<String>,
    /// Learners included.
    pub included: usize,
    /// Whether mirror averaging does no better either.
    pub mirror_averaging: bool,
    /// How alike the learners' rows are ([`alike`] of the own training rows).
    pub alike: f64,
    /// The likely cause, in one sentence.
    pub cause: String,
}

impl MajorityView {
    /// The view, when anything is at the majority class. `learners` are (organisation,
    /// accuracy) of the included learners; `columns` the learners' number of columns.
    pub fn new(
        (label, share): (&str, f64),
        learners: &[(String, f64)],
        mirror: f64,
        alike: f64,
        columns: usize,
    ) -> Option<Self> {
        let flagged: Vec<String> = learners
            .iter()
            .filter(|(_, a)| *a <= share)
            .map(|(o, _)| o.clone())
            .collect();
        let mirror_averaging = !learners.is_empty() && mirror <= share;
        if flagged.is_empty() && !mirror_averaging {
            return None;
        }
        let cause = if alike > ALIKE {
            format!(
                "the map makes your rows alike ({alike:.2} of their second moment is one common point): \
                 the schema's bounds put typical values far from their centres; use an agreed map \
                 (dpagg-aggregator map) or accept the transforms dpagg-node schema init proposes"
            )
        } else {
            format!(
                "their noise swamps what the rows carry at their ε with {columns} columns each: an \
                 agreed map with fewer directions (dpagg-aggregator map --components) or a larger \
                 ε would help"
            )
        };
        Some(Self {
            label: label.to_owned(),
            share,
            learners: flagged,
            included: learners.len(),
            mirror_averaging,
            alike,
            cause,
        })
    }

    /// The sentence of the report's first line.
    pub fn sentence(&self) -> String {
        let who = match (self.learners.len(), self.mirror_averaging) {
            (0, _) => "mirror averaging does".to_owned(),
            (n, m) => format!(
                "{n} of {} learner(s) ({}){} do",
                self.included,
                self.learners.join(", "),
                if m { " and mirror averaging" } else { "" }
            ),
        };
        format!(
            "{who} no better than always answering {:?} ({:.3} of your test rows): likely, {}",
            self.label, self.share, self.cause
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::Dataset;

    #[test]
    fn alike_rows_and_centred_rows() {
        let same = Dataset::new(vec![0.5, 0.5, 0.2, 0.5, 0.5, 0.2], vec![1.0, -1.0], 3);
        assert!((alike(&same, 2) - 1.0).abs() < 1e-12);
        let centred = Dataset::new(vec![0.5, -0.5, 0.2, -0.5, 0.5, 0.2], vec![1.0, -1.0], 3);
        assert_eq!(alike(&centred, 2), 0.0);
        // One row at (1, 0), one at (0, 0): mean (0.5, 0), second moment 0.5 → 0.5.
        let half = Dataset::new(vec![1.0, 0.0, 0.0, 0.0], vec![1.0, -1.0], 2);
        assert!((alike(&half, 2) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn learners_at_the_majority_are_named_with_a_cause() {
        let learners = vec![("a".to_owned(), 0.616), ("b".to_owned(), 0.70)];
        let v = MajorityView::new(("no", 0.616), &learners, 0.61, 0.97, 58).expect("flagged");
        assert_eq!(v.learners, ["a"]);
        assert!(v.mirror_averaging);
        let s = v.sentence();
        assert!(s.starts_with("1 of 2 learner(s) (a) and mirror averaging do no better than always answering \"no\" (0.616"), "{s}");
        assert!(s.contains("the map makes your rows alike"), "{s}");
        let noise = MajorityView::new(("no", 0.616), &learners, 0.65, 0.1, 58).expect("flagged");
        assert!(
            noise.sentence().contains("noise swamps"),
            "{}",
            noise.sentence()
        );
        assert!(MajorityView::new(("no", 0.6), &learners, 0.65, 0.1, 58).is_none());
    }
}
