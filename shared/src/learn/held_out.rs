//! Held-out scoring: the total logistic loss Σᵢ ℓ(⟨θ, xᵢ⟩, yᵢ) of many θ on one fixed set of rows
//! (cross-validation scores every λ of a grid on the same held-out fold).
//!
//! The rows are stored column by column, so the margins vectorise across rows while each row's
//! ⟨θ, x⟩ is still summed over j = 0, 1, … in order, exactly as [`crate::data::dataset::dot`]
//! sums it, and each loss is [`crate::learn::logistic::logistic_loss`]'s arithmetic: the result
//! has the bits of the row-by-row loop, at SIMD speed ([`crate::util::simd`]).

use crate::data::dataset::Dataset;
use crate::util::fastmath;
use crate::util::simd::{Kernel, vectorised};

/// Some rows of a data set, column-major, to be scored by many θ.
#[derive(Debug, Clone)]
pub struct HeldOut {
    /// Column j of the rows at `columns[j·m..(j + 1)·m]`.
    columns: Vec<f64>,
    labels: Vec<f64>,
}

impl HeldOut {
    /// The rows `rows` of `data`, in that order.
    pub fn new(data: &Dataset, rows: &[usize]) -> Self {
        let m = rows.len();
        let mut columns = vec![0.0; data.dim() * m];
        for (r, &i) in rows.iter().enumerate() {
            for (j, &v) in data.row(i).iter().enumerate() {
                columns[j * m + r] = v;
            }
        }
        Self {
            columns,
            labels: rows.iter().map(|&i| data.label(i)).collect(),
        }
    }

    /// Σᵢ ℓ(⟨θ, xᵢ⟩, yᵢ) over the rows, summed in their order.
    ///
    /// # Panics
    /// If θ does not have the rows' dimension — a programming error.
    pub fn total_loss(&self, theta: &[f64]) -> f64 {
        let m = self.labels.len();
        assert_eq!(
            theta.len() * m,
            self.columns.len(),
            "θ has the wrong dimension"
        );
        let mut losses = vec![0.0; m];
        vectorised(Losses {
            columns: &self.columns,
            labels: &self.labels,
            theta,
            out: &mut losses,
        });
        losses.iter().sum()
    }
}

/// ℓ(⟨θ, xᵢ⟩, yᵢ) of every row into `out`.
struct Losses<'a> {
    columns: &'a [f64],
    labels: &'a [f64],
    theta: &'a [f64],
    out: &'a mut [f64],
}

impl Kernel for Losses<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        let m = self.out.len();
        // The margins: column by column, each row's sum in order of j (as `dot` sums it, which
        // starts from −0.0: −0.0 + t₀ = t₀).
        self.out.fill(-0.0);
        for (column, &t) in self.columns.chunks_exact(m.max(1)).zip(self.theta) {
            for (o, &x) in self.out.iter_mut().zip(column) {
                *o += x * t;
            }
        }
        for (o, &y) in self.out.iter_mut().zip(self.labels) {
            *o = fastmath::softplus(-y * *o);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dataset::dot;
    use crate::learn::logistic::logistic_loss;

    #[test]
    fn bit_identical_to_the_row_loop() {
        let (n, d) = (37, 5);
        let x: Vec<f64> = (0..n * d)
            .map(|k| ((k * 7919 % 1000) as f64 / 500.0 - 1.0) / 3.0)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let data = Dataset::new(x, y, d);
        let rows: Vec<usize> = (0..n).rev().step_by(2).collect();
        let held = HeldOut::new(&data, &rows);
        for theta in [
            vec![0.3, -1.2, 0.0, 2.5, -0.7],
            vec![0.0; 5],
            vec![40.0, -3.0, 1.0, 0.1, 9.0],
        ] {
            let reference: f64 = rows
                .iter()
                .map(|&i| logistic_loss(dot(&theta, data.row(i)), data.label(i)))
                .sum();
            assert_eq!(held.total_loss(&theta).to_bits(), reference.to_bits());
        }
    }

    #[test]
    fn no_rows_score_zero() {
        let data = Dataset::new(vec![0.5, 0.5], vec![1.0], 2);
        assert_eq!(HeldOut::new(&data, &[]).total_loss(&[1.0, 2.0]), 0.0);
    }
}
