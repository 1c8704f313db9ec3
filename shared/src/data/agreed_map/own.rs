//! The agreed map from the aggregator's own training rows, released to the nodes in the clear
//! (the aggregator's choice: they are its rows), and the split that keeps its final model's
//! evidence honest.
//!
//! Centres, scales and the correlation C read no label, so they come from every own training
//! row. The subspace's direction s (the standardised class difference, [`super::derive()`]) reads
//! labels; it comes from the *map rows* only — [`MAP_ROWS`] of each class, drawn from the
//! aggregator's seed — and the final model's cross-validated evidence is read on the other own
//! rows ([`crate::aggregate::select::choose_final_scored`]). Without that split, the rows whose
//! labels chose the subspace make every candidate built on the learners look better than it is
//! (measured: in the lab's EHR-like tables the final model fell 2 to 4 points below the local
//! one; EXPERIMENTS.md, "Wide tables").

use super::{AgreedMap, Components, MapError, Summaries, derive, derive_split};
use crate::data::schema::Schema;
use rand::SeedableRng;
use rand::rngs::ChaCha20Rng;
use rand::seq::SliceRandom;

/// The share of each class of the own training rows whose labels choose the subspace.
pub const MAP_ROWS: f64 = 0.5;

/// The map and, when it has a subspace, which own rows chose it.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnMap {
    /// The map.
    pub map: AgreedMap,
    /// Per own training row, whether its label chose the subspace (`None` without a subspace:
    /// no label was read).
    pub map_rows: Option<Vec<bool>>,
}

impl OwnMap {
    /// The own rows the final model's evidence may be read on: all but the map rows.
    pub fn scored(&self) -> Option<Vec<bool>> {
        self.map_rows
            .as_ref()
            .map(|m| m.iter().map(|chose| !chose).collect())
    }
}

/// The map rows among rows labelled `positive`: [`MAP_ROWS`] of each class, drawn from `seed`.
pub fn map_rows(positive: &[bool], seed: u64) -> Vec<bool> {
    let mut marks = vec![false; positive.len()];
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    for class in [true, false] {
        let mut rows: Vec<usize> = (0..positive.len())
            .filter(|&i| positive[i] == class)
            .collect();
        rows.shuffle(&mut rng);
        let take = (rows.len() as f64 * MAP_ROWS).round() as usize;
        for &i in &rows[..take] {
            marks[i] = true;
        }
    }
    marks
}

/// The agreed map of `schema` from the own training `records` (raw values, NaN where missing)
/// labelled `positive`, in the clear; `seed` draws the map rows.
pub fn from_own_rows(
    schema: &Schema,
    records: &[Vec<f64>],
    positive: &[bool],
    components: Components,
    seed: u64,
) -> Result<OwnMap, MapError> {
    let all = Summaries::of_records(schema, records, positive);
    let n = records.len();
    if components == Components::All {
        let source = format!("the aggregator's {n} own training rows, in the clear");
        return Ok(OwnMap {
            map: derive(schema, &all, components, &source)?,
            map_rows: None,
        });
    }
    let marks = map_rows(positive, seed);
    let (rows, labels): (Vec<Vec<f64>>, Vec<bool>) = (0..n)
        .filter(|&i| marks[i])
        .map(|i| (records[i].clone(), positive[i]))
        .unzip();
    let labelled = Summaries::of_records(schema, &rows, &labels);
    let source = format!(
        "the aggregator's {n} own training rows, in the clear (the directions from the labels \
         of {} of them)",
        rows.len()
    );
    Ok(OwnMap {
        map: derive_split(schema, &all, &labelled, components, &source)?,
        map_rows: Some(marks),
    })
}
