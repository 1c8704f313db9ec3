//! An in-memory, already-normalised labelled dataset.
//!
//! Rows are stored row-major in one contiguous buffer ([`FeatureBuffer`]: a `Vec`, or huge pages
//! for a large map's rows) so that solver passes stream through memory once. Labels are ±1. A
//! `Dataset` does not know where its rows came from; the invariant that every row satisfies
//! ||x||₂ ≤ 1 is established by [`crate::data::csv`] (schema normalisation) and
//! [`crate::data::synthetic`] (unit-sphere data), and checked with [`Dataset::max_row_norm`]
//! before every release (`Mechanism::release`, [`crate::privacy::mechanism`]).

use crate::data::buffer::FeatureBuffer;
use serde::{Deserialize, Serialize};

/// A labelled dataset: `n` rows of dimension `dim`, labels in {−1, +1}.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    x: FeatureBuffer,
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
        Self::from_buffer(x.into(), y, dim)
    }

    /// [`Dataset::new`] over a [`FeatureBuffer`] (a large map's rows in huge pages).
    ///
    /// # Panics
    /// As [`Dataset::new`].
    pub fn from_buffer(x: FeatureBuffer, y: Vec<f64>, dim: usize) -> Self {
        assert_eq!(
            x.len(),
            y.len() * dim,
            "feature buffer does not match n × dim"
        );
        // Counted, not `all`: a loop without an early exit is vectorised.
        assert!(
            y.iter().filter(|&&v| v != 1.0 && v != -1.0).count() == 0,
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
            x: x.into(),
            y,
            dim: self.dim,
        }
    }

    /// A new dataset of the first `k` columns of every row (all of them when `k` ≥ the
    /// dimension).
    pub fn leading_columns(&self, k: usize) -> Dataset {
        let k = k.min(self.dim);
        let mut x = Vec::with_capacity(self.len() * k);
        for i in 0..self.len() {
            x.extend_from_slice(&self.row(i)[..k]);
        }
        Dataset {
            x: x.into(),
            y: self.y.clone(),
            dim: k,
        }
    }

    /// Every row of `self` followed by the same row of `right`: one dataset whose columns are
    /// both maps of the same records (labels from `self`).
    ///
    /// # Panics
    /// If the row counts differ (a programming error).
    pub fn side_by_side(&self, right: &Dataset) -> Dataset {
        assert_eq!(self.len(), right.len(), "the same rows in both maps");
        let dim = self.dim + right.dim;
        let mut x = Vec::with_capacity(self.len() * dim);
        for i in 0..self.len() {
            x.extend_from_slice(self.row(i));
            x.extend_from_slice(right.row(i));
        }
        Dataset {
            x: x.into(),
            y: self.y.clone(),
            dim,
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
        Dataset {
            x: x.into(),
            y,
            dim,
        }
    }

    /// Largest Euclidean row norm (0 for an empty dataset). Privacy proofs need this ≤ 1. Each
    /// row's norm is computed as [`crate::data::normalise`] computes it; blocks of rows in
    /// parallel (a maximum does not depend on the order it is taken in).
    pub fn max_row_norm(&self) -> f64 {
        use rayon::prelude::*;
        const BLOCK_ROWS: usize = 4096;
        if self.dim == 0 {
            return 0.0;
        }
        self.x
            .par_chunks(BLOCK_ROWS * self.dim)
            .map(|block| {
                block
                    .chunks_exact(self.dim)
                    .map(|row| row.iter().map(|v| v * v).sum::<f64>().sqrt())
                    .fold(0.0, f64::max)
            })
            .reduce(|| 0.0, f64::max)
    }

    /// Fraction of rows on which `sign(⟨θ, x⟩)` equals the label (a zero margin counts as +1).
    pub fn accuracy(&self, theta: &[f64]) -> f64 {
        if self.is_empty() {
            return f64::NAN;
        }
        let groups = self.x.chunks_exact(4 * self.dim.max(1));
        let whole = groups.len() * 4;
        let grouped: usize = groups
            .zip(self.y.chunks_exact(4))
            .map(|(rows, labels)| {
                let z = four_dots(rows, theta);
                (0..4).filter(|&k| predicts(z[k], labels[k])).count()
            })
            .sum();
        let rest = (whole..self.len())
            .filter(|&i| predicts(dot(self.row(i), theta), self.y[i]))
            .count();
        (grouped + rest) as f64 / self.len() as f64
    }
}

/// True when sign(z) (a zero margin counting as +1) is the label `y`.
fn predicts(z: f64, y: f64) -> bool {
    let pred = if z >= 0.0 { 1.0 } else { -1.0 };
    pred == y
}

/// [`dot`] of each of four consecutive rows (`rows` holds 4·θ.len() values) with θ, the four
/// sums interleaved so that they do not wait on one another. Each is [`dot`]'s own left-to-right
/// sum from −0.0, so every margin has [`dot`]'s bits.
fn four_dots(rows: &[f64], theta: &[f64]) -> [f64; 4] {
    let d = theta.len();
    let (r0, rest) = rows.split_at(d);
    let (r1, rest) = rest.split_at(d);
    let (r2, r3) = rest.split_at(d);
    let mut s = [-0.0f64; 4];
    for j in 0..d {
        s[0] += r0[j] * theta[j];
        s[1] += r1[j] * theta[j];
        s[2] += r2[j] * theta[j];
        s[3] += r3[j] * theta[j];
    }
    s
}

/// Dot product of two equal-length slices.
#[inline]
pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(u, v)| u * v).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_row_norm_is_the_largest_row_norm_over_every_block() {
        let (n, p) = (3 * 4096 + 5, 3);
        let mut x: Vec<f64> = (0..n * p)
            .map(|i| ((i * 37) % 101) as f64 / 404.0)
            .collect();
        for (row, v) in [(7, 0.9), (2 * 4096 + 1, 0.95), (n - 1, 0.97)] {
            x[row * p] = v;
        }
        let d = Dataset::new(x, vec![1.0; n], p);
        let serial = (0..n)
            .map(|i| d.row(i).iter().map(|v| v * v).sum::<f64>().sqrt())
            .fold(0.0, f64::max);
        assert_eq!(d.max_row_norm().to_bits(), serial.to_bits());
        assert_eq!(Dataset::new(vec![], vec![], 2).max_row_norm(), 0.0);
    }

    #[test]
    fn grouped_margins_have_the_bits_of_dot() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::ChaCha20Rng::seed_from_u64(5);
        let mut next = move || rng.random_range(-1.0..1.0);
        for d in 1..12 {
            let theta: Vec<f64> = (0..d).map(|j| if j == 0 { -0.0 } else { next() }).collect();
            let rows: Vec<f64> = (0..4 * d).map(|_| next() * 1e3).collect();
            let z = four_dots(&rows, &theta);
            for k in 0..4 {
                let want = dot(&rows[k * d..(k + 1) * d], &theta);
                assert_eq!(z[k].to_bits(), want.to_bits(), "d = {d}, row {k}");
            }
        }
        // Every row count mod 4 against the row-at-a-time count; every even row is all zeros, so
        // its margin is exactly zero.
        for n in 0..11 {
            let x: Vec<f64> = (0..2 * n)
                .map(|i| if i % 4 < 2 { 0.0 } else { next() })
                .collect();
            let y: Vec<f64> = (0..n)
                .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            let data = Dataset::new(x, y, 2);
            let theta = [0.7, -0.2];
            let correct = (0..n)
                .filter(|&i| predicts(dot(data.row(i), &theta), data.label(i)))
                .count();
            let want = if n == 0 {
                f64::NAN
            } else {
                correct as f64 / n as f64
            };
            assert_eq!(data.accuracy(&theta).to_bits(), want.to_bits(), "n = {n}");
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
