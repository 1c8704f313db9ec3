//! What an agreed map is derived from: per class, the count, the means and the covariance of
//! the features' transformed values T(v), v clipped to the schema's [lo, hi] — the sufficient
//! statistics of every constant the map holds ([`super::derive()`]).
//!
//! They come exactly from the aggregator's own rows ([`Summaries::of_rows`]: then the map
//! reveals them, and the aggregator says so), or from differentially private releases of the
//! same moments (the aggregator's own, or the nodes' pooled with [`Summaries::pool`]; the
//! conversion from a moments release is in `privacy::statistics::moments`). Pooling and every
//! later step are post-processing.
//!
//! A missing value (NaN) counts for nothing in a feature's mean; in the covariance it stands at
//! the feature's mean over every summarised row, which the map then sends to its centre, as the
//! map sends every missing value.

use crate::data::schema::Schema;

/// One class's statistics, in transformed units.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSummary {
    /// Rows (noisy releases may give a fractional or negative count; pooling floors it at 0).
    pub count: f64,
    /// Per feature, the mean of T(v).
    pub mean: Vec<f64>,
    /// p × p, row-major, symmetric: the population covariance of T(v).
    pub covariance: Vec<f64>,
}

/// The two classes' statistics, negative first.
#[derive(Debug, Clone, PartialEq)]
pub struct Summaries {
    /// [negative, positive].
    pub classes: [ClassSummary; 2],
}

impl ClassSummary {
    fn empty(p: usize) -> Self {
        Self {
            count: 0.0,
            mean: vec![0.0; p],
            covariance: vec![0.0; p * p],
        }
    }
}

impl Summaries {
    /// The number of features.
    pub fn features(&self) -> usize {
        self.classes[0].mean.len()
    }

    /// Rows summarised (counts floored at 0).
    pub fn rows(&self) -> f64 {
        self.classes.iter().map(|c| c.count.max(0.0)).sum()
    }

    /// The exact summaries of `values` (per row, one T(v) per feature, NaN where missing) with
    /// labels `positive`.
    ///
    /// # Panics
    /// If the rows are not all of the same length or the labels do not match them (programming
    /// errors).
    pub fn of_rows(values: &[Vec<f64>], positive: &[bool]) -> Self {
        assert_eq!(values.len(), positive.len(), "one label per row");
        let p = values.first().map_or(0, Vec::len);
        // A missing value stands at its feature's mean over every row.
        let mut fill = vec![0.0; p];
        let mut present = vec![0usize; p];
        for row in values {
            assert_eq!(row.len(), p, "rows of one length");
            for (j, &v) in row.iter().enumerate() {
                if !v.is_nan() {
                    fill[j] += v;
                    present[j] += 1;
                }
            }
        }
        for (f, &n) in fill.iter_mut().zip(&present) {
            *f = if n > 0 { *f / n as f64 } else { 0.0 };
        }
        let filled = |row: &[f64]| -> Vec<f64> {
            row.iter()
                .zip(&fill)
                .map(|(&v, &f)| if v.is_nan() { f } else { v })
                .collect()
        };
        let mut classes = [ClassSummary::empty(p), ClassSummary::empty(p)];
        for (row, &pos) in values.iter().zip(positive) {
            let c = &mut classes[usize::from(pos)];
            c.count += 1.0;
            for (m, v) in c.mean.iter_mut().zip(filled(row)) {
                *m += v;
            }
        }
        for c in &mut classes {
            let n = c.count.max(1.0);
            c.mean.iter_mut().for_each(|m| *m /= n);
        }
        for (row, &pos) in values.iter().zip(positive) {
            let c = &mut classes[usize::from(pos)];
            let d: Vec<f64> = filled(row)
                .iter()
                .zip(&c.mean)
                .map(|(v, m)| v - m)
                .collect();
            for i in 0..p {
                for j in i..p {
                    c.covariance[i * p + j] += d[i] * d[j];
                }
            }
        }
        for c in &mut classes {
            let n = c.count.max(1.0);
            for i in 0..p {
                for j in i..p {
                    let v = c.covariance[i * p + j] / n;
                    c.covariance[i * p + j] = v;
                    c.covariance[j * p + i] = v;
                }
            }
        }
        Self { classes }
    }

    /// The exact summaries of raw records under `schema`'s transforms: per row, T(v) of each
    /// value clipped to its feature's [lo, hi] (NaN, missing, stays missing), then
    /// [`Summaries::of_rows`].
    pub fn of_records(schema: &Schema, records: &[Vec<f64>], positive: &[bool]) -> Self {
        let values: Vec<Vec<f64>> = records
            .iter()
            .map(|row| {
                schema
                    .features
                    .iter()
                    .zip(row)
                    .map(|(f, &v)| {
                        if v.is_nan() || f.is_missing(v) {
                            f64::NAN
                        } else {
                            f.transform(v.clamp(f.lo, f.hi))
                        }
                    })
                    .collect()
            })
            .collect();
        Self::of_rows(&values, positive)
    }

    /// Several organisations' summaries as one: per class, counts (floored at 0) added, means
    /// weighted by them, covariances combined by the law of total covariance. `None` when
    /// `parts` is empty or their feature counts differ.
    pub fn pool(parts: &[Summaries]) -> Option<Summaries> {
        let p = parts.first()?.features();
        if parts.iter().any(|s| s.features() != p) {
            return None;
        }
        let mut classes = [ClassSummary::empty(p), ClassSummary::empty(p)];
        for (k, out) in classes.iter_mut().enumerate() {
            let members: Vec<&ClassSummary> = parts.iter().map(|s| &s.classes[k]).collect();
            let n: f64 = members.iter().map(|c| c.count.max(0.0)).sum();
            out.count = n;
            if n <= 0.0 {
                continue;
            }
            for c in &members {
                let w = c.count.max(0.0) / n;
                for (m, v) in out.mean.iter_mut().zip(&c.mean) {
                    *m += w * v;
                }
            }
            for c in &members {
                let w = c.count.max(0.0) / n;
                let d: Vec<f64> = c.mean.iter().zip(&out.mean).map(|(a, b)| a - b).collect();
                for i in 0..p {
                    for j in 0..p {
                        out.covariance[i * p + j] += w * (c.covariance[i * p + j] + d[i] * d[j]);
                    }
                }
            }
        }
        Some(Summaries { classes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_summaries_are_the_class_means_and_covariances() {
        let values = vec![
            vec![1.0, 2.0],
            vec![3.0, 6.0],
            vec![0.0, f64::NAN],
            vec![2.0, 4.0],
        ];
        let s = Summaries::of_rows(&values, &[true, true, false, false]);
        assert_eq!(s.classes[1].count, 2.0);
        assert_eq!(s.classes[1].mean, vec![2.0, 4.0]);
        // Positive class: deviations (−1, −2), (1, 2): covariance [[1, 2], [2, 4]].
        assert_eq!(s.classes[1].covariance, vec![1.0, 2.0, 2.0, 4.0]);
        // The missing value stands at feature 1's mean over present values, (2 + 6 + 4)/3 = 4.
        assert_eq!(s.classes[0].mean, vec![1.0, 4.0]);
        assert_eq!(s.classes[0].covariance, vec![1.0, 0.0, 0.0, 0.0]);
        assert_eq!(s.rows(), 4.0);
    }

    #[test]
    fn pooling_two_halves_gives_the_whole() {
        let values: Vec<Vec<f64>> = (0..40)
            .map(|i| vec![(i as f64).sin() * 3.0, (i * i % 7) as f64, i as f64 / 10.0])
            .collect();
        let labels: Vec<bool> = (0..40).map(|i| i % 3 == 0).collect();
        let whole = Summaries::of_rows(&values, &labels);
        let a = Summaries::of_rows(&values[..17], &labels[..17]);
        let b = Summaries::of_rows(&values[17..], &labels[17..]);
        let pooled = Summaries::pool(&[a, b]).expect("same shape");
        for (w, p) in whole.classes.iter().zip(&pooled.classes) {
            assert_eq!(w.count, p.count);
            for (x, y) in w.mean.iter().zip(&p.mean) {
                assert!((x - y).abs() < 1e-12);
            }
            for (x, y) in w.covariance.iter().zip(&p.covariance) {
                assert!((x - y).abs() < 1e-12, "{x} {y}");
            }
        }
        assert!(Summaries::pool(&[]).is_none());
    }
}
