//! The agreed map in `experiment utility`: per trial, the map every node applies before it
//! trains its learner, derived exactly as `dpagg-aggregator map` derives it
//! ([`dpagg_shared::data::agreed_map`]), and the views of the trial's rows that the learners,
//! the final model's selection, the trusted curator and centralised see.
//!
//! - `schema`: every party maps its rows by the schema (the hand-written scenarios' maps).
//! - `own`: centres, scales and a k-dimensional subspace from the aggregator's own training
//!   rows, sent to the nodes in the clear (the nodes pay nothing for it).
//! - `pooled`: the same derived from the nodes' private moments (Gaussian mechanism,
//!   replace-one, δ = [`POOLED_DELTA`]) at a share of each node's ε; its learner gets the rest,
//!   so a node's whole ε for the round is the ε in the table.
//!
//! With a subspace the final model reads two maps of the same rows side by side: the own
//! model's (the map's constants on every feature — what a data scientist alone would use) and
//! the learners' (the subspace); the learners are padded with zeros on the first, the local
//! model has zeros on the second ([`SelectionConfig::own_columns`]). The trusted curator uses
//! the learners' map on every training row, centralised the own model's.
//!
//! [`SelectionConfig::own_columns`]: dpagg_shared::aggregate::select::SelectionConfig

use super::scenarios::Split;
use anyhow::{Context, Result};
use dpagg_aggregator_run::map_command::private_summaries;
use dpagg_shared::data::agreed_map::{AgreedMap, Components, Summaries, derive, from_own_rows};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::learn::classifier::LinearClassifier;
use dpagg_shared::privacy::noise::NoiseSource;

/// δ of each node's moments release under `pooled`.
pub(super) const POOLED_DELTA: f64 = 1e-6;

/// How the learners' rows are mapped (`--map`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MapChoice {
    /// `schema` for the five hand-written scenarios, `own` for the wide ones and --dataset.
    Auto,
    /// The schema's map.
    Schema,
    /// From the aggregator's own training rows, in the clear.
    Own,
    /// Pooled from the nodes' private moments, at --map-share of each node's ε.
    Pooled,
}

/// How the map is made, resolved for a scenario.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct MapPlan {
    /// `schema`, `own` or `pooled` (never `auto`).
    pub(super) choice: MapChoice,
    /// The subspace's components (0: every feature).
    pub(super) components: Option<usize>,
    /// Under `pooled`, the share of ε spent on the moments.
    pub(super) share: f64,
}

/// Raw records of one party: values in schema order (NaN where missing), labels.
#[derive(Debug, Clone, Default)]
pub(super) struct Records {
    pub(super) rows: Vec<Vec<f64>>,
    pub(super) positive: Vec<bool>,
}

impl Records {
    /// The records at `indices`, in that order.
    pub(super) fn subset(&self, indices: &[usize]) -> Records {
        Records {
            rows: indices.iter().map(|&i| self.rows[i].clone()).collect(),
            positive: indices.iter().map(|&i| self.positive[i]).collect(),
        }
    }

    /// Every record of `parts`, in order.
    fn concat<'a>(parts: impl IntoIterator<Item = &'a Records>) -> Records {
        let mut out = Records::default();
        for p in parts {
            out.rows.extend(p.rows.iter().cloned());
            out.positive.extend(&p.positive);
        }
        out
    }

    /// The records mapped by `schema`.
    pub(super) fn mapped(&self, schema: &Schema) -> Dataset {
        AgreedMap::rows(schema, &self.rows, &self.positive)
    }
}

/// One trial's raw records and the public schema.
pub(super) struct RawSplit {
    pub(super) schema: Schema,
    pub(super) own: Records,
    pub(super) nodes: Vec<Records>,
    pub(super) test: Records,
}

/// What every party's rows look like in one trial at one ε (module docs).
pub(super) struct Views {
    /// Each node's rows, as its learner sees them.
    pub(super) nodes: Vec<Dataset>,
    /// The selection's rows: the own model's map, then (with a subspace) the learners'.
    pub(super) own: Dataset,
    /// The test rows, in `own`'s columns.
    pub(super) test: Dataset,
    /// [`dpagg_shared::aggregate::select::SelectionConfig::own_columns`].
    pub(super) own_columns: Option<usize>,
    /// Zeros to put before a learner's weights so that it reads `own`'s columns.
    pad: usize,
    /// The trusted curator's training and test rows (the learners' map).
    pub(super) curator: (Dataset, Dataset),
    /// Centralised's training and test rows (the own model's map).
    pub(super) central: (Dataset, Dataset),
    /// The share of ε the learners get (1 unless the map was paid for from it).
    pub(super) learner_share: f64,
    /// The own rows the final model's evidence is read on (the others chose the subspace).
    pub(super) scored: Option<Vec<bool>>,
}

impl Views {
    /// Every party reads the scenario's own map (`schema`).
    pub(super) fn of_split(split: Split) -> Views {
        let all = Dataset::concat(std::iter::once(&split.own).chain(&split.nodes));
        Views {
            curator: (all.clone(), split.test.clone()),
            central: (all, split.test.clone()),
            nodes: split.nodes,
            own: split.own,
            test: split.test,
            own_columns: None,
            pad: 0,
            learner_share: 1.0,
            scored: None,
        }
    }

    /// The views under an agreed map (`own` or `pooled`; see the module docs). `noise_seed(k)`
    /// seeds node k's moments under `pooled`; `epsilon` is each node's whole ε.
    pub(super) fn agreed(
        raw: &RawSplit,
        plan: MapPlan,
        epsilon: f64,
        split_seed: u64,
        noise_seed: impl Fn(u64) -> u64,
    ) -> Result<Views> {
        let schema = &raw.schema;
        let own_summaries = Summaries::of_records(schema, &raw.own.rows, &raw.own.positive);
        let own_map =
            derive(schema, &own_summaries, Components::All, "own rows")?.without_subspace();
        let own_schema = own_map.apply(schema)?;
        let p = schema.features.len();
        let components = match plan.components {
            None => Components::auto(p),
            Some(0) => Components::All,
            Some(k) => Components::Subspace(k.min(p)),
        };
        let (map, learner_share, scored) = match plan.choice {
            MapChoice::Pooled => {
                let summaries = pooled(raw, epsilon * plan.share, &noise_seed)?;
                let source = format!(
                    "pooled private moments of {} nodes (Gaussian, ε = {}, δ = {POOLED_DELTA} each)",
                    raw.nodes.len(),
                    epsilon * plan.share
                );
                let map = derive(schema, &summaries, components, &source)?;
                (map, 1.0 - plan.share, None)
            }
            _ => {
                let own = from_own_rows(
                    schema,
                    &raw.own.rows,
                    &raw.own.positive,
                    components,
                    split_seed,
                )?;
                let scored = own.scored();
                (own.map, 1.0, scored)
            }
        };
        let learner_schema = map.apply(schema)?;
        let all = Records::concat(std::iter::once(&raw.own).chain(&raw.nodes));
        let nodes = raw
            .nodes
            .iter()
            .map(|r| r.mapped(&learner_schema))
            .collect();
        let (own_o, test_o) = (raw.own.mapped(&own_schema), raw.test.mapped(&own_schema));
        let central = (all.mapped(&own_schema), test_o.clone());
        let curator = (
            all.mapped(&learner_schema),
            raw.test.mapped(&learner_schema),
        );
        let one_map = map.subspace.is_none() && plan.choice == MapChoice::Own;
        let (own, test, own_columns, pad) = if one_map {
            (own_o, test_o, None, 0)
        } else {
            let own_l = raw.own.mapped(&learner_schema);
            let cols = own_o.dim();
            (
                own_o.side_by_side(&own_l),
                test_o.side_by_side(&curator.1),
                Some(cols),
                cols,
            )
        };
        Ok(Views {
            nodes,
            own,
            test,
            own_columns,
            pad,
            curator,
            central,
            learner_share,
            scored,
        })
    }

    /// A learner as the selection reads it (zeros before its weights for the own model's
    /// columns).
    pub(super) fn expert(&self, learner: LinearClassifier) -> LinearClassifier {
        if self.pad == 0 {
            return learner;
        }
        let mut theta = vec![0.0; self.pad];
        theta.extend_from_slice(learner.coefficients());
        LinearClassifier::new(theta)
    }
}

/// The nodes' moments (Gaussian mechanism at (`epsilon`, [`POOLED_DELTA`]), seeded noise: a
/// simulation) of their transformed values, pooled.
fn pooled(raw: &RawSplit, epsilon: f64, noise_seed: &impl Fn(u64) -> u64) -> Result<Summaries> {
    let parts = raw
        .nodes
        .iter()
        .enumerate()
        .map(|(k, node)| {
            let mut noise = NoiseSource::seeded(noise_seed(k as u64));
            private_summaries(
                &raw.schema,
                &node.rows,
                &node.positive,
                (epsilon, POOLED_DELTA),
                &mut noise,
            )
            .context("a node's moments")
        })
        .collect::<Result<Vec<_>>>()?;
    Summaries::pool(&parts).context("no node to pool")
}
