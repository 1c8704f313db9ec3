//! [`LossTable`]: every expert's logistic loss on every row of one dataset, computed once by the
//! mirror-averaging sweep's own kernel, so that the aggregations a simulation runs on the same
//! rows — mirror averaging of the others' learners, mirror averaging with the own model, the
//! best single learner — read the losses instead of each recomputing them.
//!
//! Each entry is what the sweep computes for that (row, expert) whatever the block it falls in
//! (a matrix product's entry, then the loss), so an aggregation that reads the table gives the
//! same bits as one that computes its own losses; `tests` check it.

use super::AggregateError;
use super::mirror::{BLOCK_ROWS, SUB_ROWS, block_losses, expert_matrix};
use crate::data::dataset::Dataset;
use rayon::prelude::*;

/// ℓ(⟨θ_m, x_t⟩, y_t) for every row t of a dataset (in its order) and expert m.
#[derive(Debug, Clone, PartialEq)]
pub struct LossTable {
    /// Row t's losses in `losses[t·m..(t + 1)·m]`.
    losses: Vec<f64>,
    experts: usize,
}

impl LossTable {
    /// The losses of `experts` on every row of `data`.
    pub fn new<E: AsRef<[f64]>>(experts: &[E], data: &Dataset) -> Result<Self, AggregateError> {
        super::validate(experts, data)?;
        let m = experts.len();
        let matrix = expert_matrix(experts, data.dim());
        let rows: Vec<usize> = (0..data.len()).collect();
        let mut losses = vec![0.0; rows.len() * m];
        for (block, out) in rows
            .chunks(BLOCK_ROWS)
            .zip(losses.chunks_mut(BLOCK_ROWS * m))
        {
            out.par_chunks_mut(SUB_ROWS * m)
                .zip(block.par_chunks(SUB_ROWS))
                .for_each(|(out, rows)| block_losses(&matrix, data, rows, out));
        }
        Ok(Self { losses, experts: m })
    }

    /// Number of experts (columns).
    pub fn experts(&self) -> usize {
        self.experts
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.losses.len() / self.experts.max(1)
    }

    /// The losses of the first `m` experts on row `t`.
    pub(super) fn row(&self, t: usize, m: usize) -> &[f64] {
        &self.losses[t * self.experts..t * self.experts + m]
    }

    /// Checks that the table holds at least `m` ≥ 1 experts.
    pub(super) fn check(&self, m: usize) -> Result<(), AggregateError> {
        if m == 0 {
            return Err(AggregateError::NoExperts);
        }
        if m > self.experts {
            return Err(AggregateError::TableMismatch {
                experts: m,
                table_experts: self.experts,
                table_rows: self.rows(),
            });
        }
        Ok(())
    }

    /// Each of the first `m` experts' total loss over the rows, summed in row order (as
    /// [`super::mirror::total_losses`] sums it).
    pub(super) fn totals(&self, m: usize) -> Vec<f64> {
        let mut totals = vec![0.0; m];
        for t in 0..self.rows() {
            for (s, l) in totals.iter_mut().zip(self.row(t, m)) {
                *s += *l;
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::{MirrorAveraging, best_single, best_single_from_table};
    use crate::data::synthetic::{SyntheticSpec, generate};
    use crate::util::seed::derived_rng;
    use rand::RngExt;

    /// 700 rows (several blocks and sub-blocks) and 12 experts near the truth.
    fn setting() -> (Dataset, Vec<Vec<f64>>) {
        let d = generate(
            &SyntheticSpec {
                train: 700,
                ..SyntheticSpec::default()
            },
            &mut derived_rng(5, &[]),
        );
        let mut rng = derived_rng(6, &[]);
        let experts = (0..12)
            .map(|_| {
                d.normal
                    .iter()
                    .map(|w| w + rng.random_range(-0.8..0.8))
                    .collect()
            })
            .collect();
        (d.train, experts)
    }

    /// Mirror averaging and the best single expert give the same bits from the table as from
    /// their own losses, for the table's leading experts and for all of them.
    #[test]
    fn aggregations_from_the_table_are_bit_identical() {
        let (data, experts) = setting();
        let table = LossTable::new(&experts, &data).expect("table");
        assert_eq!((table.experts(), table.rows()), (12, 700));
        let ma = MirrorAveraging::new(3.0).expect("beta");
        for m in [1, 11, 12] {
            let own = ma
                .aggregate(&experts[..m], &data, &mut derived_rng(7, &[m as u64]))
                .expect("aggregate");
            let read = ma
                .aggregate_from_table(&experts[..m], &table, &mut derived_rng(7, &[m as u64]))
                .expect("from table");
            assert_eq!(own, read, "m = {m}");
            assert_eq!(
                best_single(&experts[..m], &data).expect("best"),
                best_single_from_table(&table, m).expect("best from table")
            );
        }
    }

    #[test]
    fn asking_for_more_than_the_table_holds_is_an_error() {
        let (data, experts) = setting();
        let table = LossTable::new(&experts[..5], &data).expect("table");
        let ma = MirrorAveraging::new(3.0).expect("beta");
        let e = ma
            .aggregate_from_table(&experts[..6], &table, &mut derived_rng(8, &[]))
            .expect_err("six of five");
        assert!(
            matches!(e, AggregateError::TableMismatch { experts: 6, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("5 learners on 700 rows"), "{e}");
        let none: &[Vec<f64>] = &[];
        assert!(matches!(
            ma.aggregate_from_table(none, &table, &mut derived_rng(8, &[])),
            Err(AggregateError::NoExperts)
        ));
        assert!(matches!(
            best_single_from_table(&table, 6),
            Err(AggregateError::TableMismatch { .. })
        ));
    }
}
