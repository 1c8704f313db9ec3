//! The aggregator's own rows under the run's maps: the schema's own map, or — with an agreed
//! map ([`dpagg_shared::data::agreed_map`]) — the map the learners were trained under and the
//! map of the aggregator's own model side by side.
//!
//! With an agreed map that keeps a subspace, the final model reads two maps of the same rows:
//! first the own model's (the map's centres and scales computed exactly from the own training
//! rows, every feature — what a data scientist alone would use; it never leaves the
//! aggregator), then the learners' (the subspace). Each learner is padded with zeros for the
//! first block and the local model has zeros on the second
//! ([`SelectionConfig::own_columns`](dpagg_shared::aggregate::select::SelectionConfig)).
//! Without a subspace the two coincide and the rows are mapped once, by the agreed map.
//!
//! `dpagg-aggregator map` derives a subspace from the labels of the *map rows* — half of each
//! class of the own training rows, drawn from the aggregator's seed ([`map_rows`]) — so with a
//! subspace the final model's evidence is read on the other own rows only
//! ([`choose_final_scored`]): rows whose labels chose the subspace would flatter every
//! candidate built on the learners.
//!
//! [`choose_final_scored`]: dpagg_shared::aggregate::select::choose_final_scored

use anyhow::{Context, Result};
use dpagg_shared::data::agreed_map::own::map_rows;
use dpagg_shared::data::agreed_map::{AgreedMap, Components, from_own_rows};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::learn::classifier::LinearClassifier;

/// Raw records of one set of rows: values in schema order (NaN where missing) and labels.
#[derive(Debug, Clone, Default)]
pub struct Records {
    /// Per row, the raw values.
    pub rows: Vec<Vec<f64>>,
    /// Per row, whether its label is the positive one.
    pub positive: Vec<bool>,
}

impl Records {
    /// The records at `indices`, in that order.
    pub fn subset(&self, indices: &[usize]) -> Records {
        Records {
            rows: indices.iter().map(|&i| self.rows[i].clone()).collect(),
            positive: indices.iter().map(|&i| self.positive[i]).collect(),
        }
    }

    /// The records mapped by `schema`.
    pub fn mapped(&self, schema: &Schema) -> Dataset {
        AgreedMap::rows(schema, &self.rows, &self.positive)
    }
}

/// The own rows as the final model's selection reads them, and the schemas behind them.
#[derive(Debug, Clone)]
pub struct OwnViews {
    /// The schema the learners must carry (the public one, or it with the agreed map applied).
    pub learners: Schema,
    /// The schema of the own model's block (the learners' when there is one block).
    pub own: Schema,
    /// The agreed map, if any.
    pub map: Option<AgreedMap>,
    /// The training rows: the own block, then (with a subspace) the learners' block.
    pub train: Dataset,
    /// The test rows, in the same columns.
    pub test: Dataset,
    /// The own block's width when there are two blocks.
    pub own_columns: Option<usize>,
    /// The training rows the evidence is read on (the map rows excluded), when known.
    pub scored: Option<Vec<bool>>,
    /// The training rows as the learners see them (the learners' block).
    pub train_learners: Dataset,
    /// The test rows as the learners see them.
    pub test_learners: Dataset,
}

impl OwnViews {
    /// The views of `train` and `test` under `public` and the agreed `map` (if any); `seed` is
    /// the aggregator's, from which `dpagg-aggregator map` drew its map rows.
    pub fn new(
        public: &Schema,
        map: Option<AgreedMap>,
        train: &Records,
        test: &Records,
        seed: u64,
    ) -> Result<Self> {
        let learners = match &map {
            None => public.clone(),
            Some(m) => m.apply(public).context("the agreed map")?,
        };
        let (train_learners, test_learners) = (train.mapped(&learners), test.mapped(&learners));
        let Some(map) = map.clone().filter(|m| m.subspace.is_some()) else {
            return Ok(Self {
                train: train_learners.clone(),
                test: test_learners.clone(),
                own: learners.clone(),
                learners,
                map,
                own_columns: None,
                scored: None,
                train_learners,
                test_learners,
            });
        };
        let exact = from_own_rows(public, &train.rows, &train.positive, Components::All, seed)?;
        let own = exact.map.apply(public)?;
        let scored = Some(map_rows(&train.positive, seed).iter().map(|m| !m).collect());
        let (own_train, own_test) = (train.mapped(&own), test.mapped(&own));
        Ok(Self {
            own_columns: Some(own_train.dim()),
            train: own_train.side_by_side(&train_learners),
            test: own_test.side_by_side(&test_learners),
            own,
            learners,
            map: Some(map),
            scored,
            train_learners,
            test_learners,
        })
    }

    /// A learner as the selection reads it: zeros before its weights for the own block.
    pub fn expert(&self, learner: &LinearClassifier) -> LinearClassifier {
        match self.own_columns {
            None => learner.clone(),
            Some(pad) => {
                let mut theta = vec![0.0; pad];
                theta.extend_from_slice(learner.coefficients());
                LinearClassifier::new(theta)
            }
        }
    }
}

/// What `report.json` says about the agreed map.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct MapView {
    /// Where its constants come from, in the map's words.
    pub source: String,
    /// Its subspace's components (absent: centres and scales on every feature).
    pub components: Option<usize>,
    /// The fingerprint of the schema with the map applied, which every learner carries.
    pub learner_schema_fingerprint: String,
    /// Own training rows the final model's evidence was read on (fewer than the training rows
    /// when the labels of the others chose the subspace).
    pub evidence_rows: usize,
}

impl MapView {
    /// The view of `map` as `own` used it.
    pub fn new(map: &AgreedMap, own: &OwnViews) -> Self {
        Self {
            source: crate::wire::clean(&map.source, crate::wire::MAX_TEXT),
            components: map.components(),
            learner_schema_fingerprint: own.learners.fingerprint(),
            evidence_rows: own
                .scored
                .as_ref()
                .map_or(own.train.len(), |s| s.iter().filter(|&&b| b).count()),
        }
    }
}
