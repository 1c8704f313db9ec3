//! An in-memory, already-normalised labelled dataset.
//!
//! Rows are stored row-major in one contiguous `Vec<f64>` so that solver passes stream through
//! memory once. Labels are ±1. A `Dataset` does not know where its rows came from; the invariant
//! that every row satisfies ||x||₂ ≤ 1 is established by [`crate::data::csv`] (schema normalisation)
//! and [`crate::data::synthetic`] (unit-sphere data) and checked by [`Dataset::max_row_norm`] in tests.

use serde::{Deserialize, Serialize};

/// A labelled dataset: `n` rows of dimension `dim`, labels in {−1, +1}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    x: Vec<f64>,
    y: Vec<f64>,
    dim: usize,
}

impl Dataset {
    /// Builds a dataset from row-major features and ±1 labels.
    ///
    /// # Panics
    /// If `x.len() != y.len() * dim` or a label is not ±1: both are programming errors of the
    /// caller, never consequences of user input (loaders validate before building).
    pub fn new(x: Vec<f64>, y: Vec<f64>, dim: usize) -> Self {
        assert_eq!(
            x.len(),
            y.len() * dim,
            "feature buffer does not match n × dim"
        );
        assert!(
            y.iter().all(|&v| v == 1.0 || v == -1.0),
            "labels must be ±1"
        );
        Self { x, y, dim }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// True when the dataset has no rows.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Number of columns (features, including the intercept column if the schema adds one).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Row `i` as a slice of length [`Dataset::dim`].
    pub fn row(&self, i: usize) -> &[f64] {
        &self.x[i * self.dim..(i + 1) * self.dim]
    }

    /// Label of row `i` (±1).
    pub fn label(&self, i: usize) -> f64 {
        self.y[i]
    }

    /// All labels.
    pub fn labels(&self) -> &[f64] {
        &self.y
    }

    /// The row-major feature buffer.
    pub fn features(&self) -> &[f64] {
        &self.x
    }

    /// A new dataset holding the given rows, in the given order.
    pub fn subset(&self, rows: &[usize]) -> Dataset {
        let mut x = Vec::with_capacity(rows.len() * self.dim);
        let mut y = Vec::with_capacity(rows.len());
        for &i in rows {
            x.extend_from_slice(self.row(i));
            y.push(self.y[i]);
        }
        Dataset {
            x,
            y,
            dim: self.dim,
        }
    }

    /// Concatenates datasets of equal dimension (used for the centralised baseline).
    ///
    /// # Panics
    /// If the dimensions differ (a programming error).
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a Dataset>) -> Dataset {
        let mut it = parts.into_iter().peekable();
        let dim = it.peek().map_or(0, |d| d.dim);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for part in it {
            assert_eq!(
                part.dim, dim,
                "cannot concatenate datasets of different dimension"
            );
            x.extend_from_slice(&part.x);
            y.extend_from_slice(&part.y);
        }
        Dataset { x, y, dim }
    }

    /// Largest Euclidean row norm (0 for an empty dataset). Privacy proofs need this ≤ 1.
    pub fn max_row_norm(&self) -> f64 {
        (0..self.len())
            .map(|i| self.row(i).iter().map(|v| v * v).sum::<f64>().sqrt())
            .fold(0.0, f64::max)
    }

    /// Fraction of rows on which `sign(⟨θ, x⟩)` equals the label (a zero margin counts as +1).
    ///
    /// Rows go [`ACCURACY_LANES`] at a time, each margin summed in feature order exactly as
    /// [`dot`] sums it (the same margins, up to the sign of a zero margin, which both count as
    /// +1): the lanes are independent chains of additions that run side by side instead of one
    /// row's chain waiting on each addition.
    pub fn accuracy(&self, theta: &[f64]) -> f64 {
        if self.is_empty() {
            return f64::NAN;
        }
        let p = self.dim;
        let predicts = |z: f64, y: f64| (if z >= 0.0 { 1.0 } else { -1.0 }) == y;
        let mut correct = 0usize;
        // Rows in whole blocks of lanes (none when there are no features).
        let full = if p == 0 {
            0
        } else {
            self.len() / ACCURACY_LANES * ACCURACY_LANES
        };
        for (block, labels) in self.x[..full * p]
            .chunks_exact(ACCURACY_LANES * p)
            .zip(self.y.chunks_exact(ACCURACY_LANES))
        {
            let mut z = [0.0; ACCURACY_LANES];
            for (j, t) in theta.iter().enumerate() {
                for (r, zr) in z.iter_mut().enumerate() {
                    *zr += block[r * p + j] * t;
                }
            }
            correct += z
                .iter()
                .zip(labels)
                .filter(|(z, y)| predicts(**z, **y))
                .count();
        }
        correct += (full..self.len())
            .filter(|&i| predicts(dot(self.row(i), theta), self.y[i]))
            .count();
        correct as f64 / self.len() as f64
    }
}

/// Rows whose margins [`Dataset::accuracy`] computes side by side.
const ACCURACY_LANES: usize = 8;

/// Dot product of two equal-length slices.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(u, v)| u * v).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocked margins predict exactly as `dot` row by row, at every row count around the
    /// block size and with zero margins.
    #[test]
    fn accuracy_is_that_of_dot_row_by_row() {
        let mut rng = crate::privacy::noise::derived_rng(7, &[]);
        for (n, p) in [(1, 3), (7, 3), (8, 3), (9, 1), (17, 10), (64, 31), (101, 5)] {
            use rand::RngExt;
            let mut x: Vec<f64> = (0..n * p).map(|_| rng.random::<f64>() - 0.5).collect();
            // A zero row: margin 0 counts as +1.
            x[..p].iter_mut().for_each(|v| *v = 0.0);
            let y: Vec<f64> = (0..n)
                .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
                .collect();
            let d = Dataset::new(x, y, p);
            let theta: Vec<f64> = (0..p).map(|_| rng.random::<f64>() - 0.5).collect();
            let reference = (0..n)
                .filter(|&i| {
                    (if dot(d.row(i), &theta) >= 0.0 {
                        1.0
                    } else {
                        -1.0
                    }) == d.label(i)
                })
                .count() as f64
                / n as f64;
            assert_eq!(d.accuracy(&theta), reference, "n = {n}, p = {p}");
        }
    }

    #[test]
    fn subset_concat_and_accuracy() {
        let d = Dataset::new(
            vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0],
            vec![1.0, -1.0, -1.0],
            2,
        );
        assert_eq!(d.len(), 3);
        let s = d.subset(&[2, 0]);
        assert_eq!(s.row(0), &[-1.0, 0.0]);
        assert_eq!(s.labels(), &[-1.0, 1.0]);
        let c = Dataset::concat([&s, &d]);
        assert_eq!(c.len(), 5);
        // θ = (1, -1): row0 z=1 (+1 ✓), row1 z=-1 (−1 ✓), row2 z=-1 (−1 ✓)
        assert_eq!(d.accuracy(&[1.0, -1.0]), 1.0);
        assert_eq!(d.accuracy(&[-1.0, 1.0]), 0.0);
        assert!((d.max_row_norm() - 1.0).abs() < 1e-15);
    }
}
