//! `experiment utility --dataset my.csv --schema my.toml`: "would joining pay for my data?" on a
//! CSV file the lab has never seen.
//!
//! The file is loaded with its public schema (the same map a node and the aggregator use). Every
//! trial draws a class-stratified test set (`--test-fraction`, default 0.2), then deals the other
//! rows over the organisations: `--orgs` equal parts (default 10), or `--rows-per-org` sizes
//! (the first is the aggregator's own, e.g. `100,2000,2000`; rows beyond the sum are left out).
//! Organisation 1 aggregates; the others are nodes. Everything else — the nodes' learners, the
//! final model and its candidates, the trusted curator and centralised — is `experiment
//! utility`'s own code, so the columns are the same as on the built-in scenarios.
//!
//! The split is drawn on the row *indices* with the same functions and random stream as the
//! rows themselves, so it can be written out (`utility_splits.csv`: per trial, the CSV rows of
//! each organisation and of the test set, 0-based in file order) for peers such as
//! `tests/peers/sklearn_local.py` to train on exactly the same rows.

use super::agreed::{RawSplit, Records};
use super::scenarios::Split;
use anyhow::{Context, Result, bail};
use dpagg_shared::data::csv::{RawRows, load_csv_with_raw, read_csv_with_raw_quietly};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::data::partition::{equal_partition, proportional_split, sized_partition};
use dpagg_shared::data::schema::Schema;
use dpagg_shared::util::seed::derived_rng;
use std::path::Path;

/// How a CSV scenario is split (the flags of `experiment utility`).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Layout {
    /// Fraction of each class held out as the test set.
    pub(super) test_fraction: f64,
    /// Equal organisations (ignored when `rows_per_org` is given).
    pub(super) orgs: usize,
    /// Sizes of the organisations, the aggregator's first.
    pub(super) rows_per_org: Vec<usize>,
}

/// A CSV file mapped by its schema, and how its trials are split.
pub(super) struct OwnData {
    /// The scenario's name in tables (the file's stem).
    pub(super) name: String,
    /// Every row, in file order, mapped by the schema.
    pub(super) data: Dataset,
    /// The same rows' raw records (NaN where missing), for an agreed map.
    records: Records,
    /// The public schema.
    schema: Schema,
    /// The split of every trial.
    pub(super) layout: Layout,
}

/// The rows of one trial, as indices into the file's rows (0-based, header excluded).
pub(super) struct IndexSplit {
    /// The aggregator's rows, then each node's.
    pub(super) orgs: Vec<Vec<usize>>,
    /// The test rows.
    pub(super) test: Vec<usize>,
}

impl Layout {
    /// A 20 % test set and 10 equal organisations (the defaults of `--dataset`).
    pub(super) fn tenth() -> Self {
        Self {
            test_fraction: 0.2,
            orgs: 10,
            rows_per_org: Vec::new(),
        }
    }
}

impl OwnData {
    /// Loads `data` with `schema` and checks the layout against the number of rows.
    pub(super) fn load(data: &Path, schema: &Path, layout: Layout) -> Result<Self> {
        check_layout(&layout)?;
        let schema = Schema::load(schema)?;
        warn_if_observed(&schema, data);
        let (rows, raw, report) = load_csv_with_raw(data, &schema)?;
        tracing::info!(file = %data.display(), rows = report.rows, "loaded the dataset");
        let name = data.file_stem().map_or_else(
            || "own data".to_owned(),
            |s| s.to_string_lossy().into_owned(),
        );
        Self::new(name, rows, raw, schema, layout)
            .with_context(|| format!("{}: cannot split the rows", data.display()))
    }

    /// A table compiled into the binary (`origin` and CSV text) with its schema's text.
    pub(super) fn embedded(
        name: &str,
        (origin, csv): (&str, &str),
        schema: &str,
        layout: Layout,
    ) -> Result<Self> {
        let schema = Schema::from_toml_str(schema, &format!("{name} schema"))?;
        // The lab's own tables: their traps (digits' constant border pixels, the bounds-only
        // schemas' alike rows) are what the wide scenarios are about, not news.
        let (rows, raw, _) = read_csv_with_raw_quietly(csv.as_bytes(), origin, &schema)?;
        Self::new(name.to_owned(), rows, raw, schema, layout)
            .with_context(|| format!("{name}: cannot split the rows"))
    }

    fn new(
        name: String,
        data: Dataset,
        raw: RawRows,
        schema: Schema,
        layout: Layout,
    ) -> Result<Self> {
        let records = Records {
            rows: raw.records(),
            positive: raw.positive,
        };
        let own = Self {
            name,
            data,
            records,
            schema,
            layout,
        };
        own.indices(0, &[0])?;
        Ok(own)
    }
}

/// The flags' layout, checked before any row is read.
fn check_layout(layout: &Layout) -> Result<()> {
    if !(layout.test_fraction > 0.0 && layout.test_fraction < 1.0) {
        bail!("--test-fraction: {} is not in (0, 1)", layout.test_fraction);
    }
    if layout.rows_per_org.is_empty() && layout.orgs < 2 {
        bail!(
            "--orgs: {} is too few (the aggregator and at least one node)",
            layout.orgs
        );
    }
    if !layout.rows_per_org.is_empty() && layout.rows_per_org.len() < 2 {
        bail!("--rows-per-org: give the aggregator's size and at least one node's");
    }
    Ok(())
}

impl OwnData {
    /// The split of the trial whose random stream is `(seed, path)`, as row indices.
    pub(super) fn indices(&self, seed: u64, path: &[u64]) -> Result<IndexSplit> {
        // A dataset whose one feature is the row index, with the real labels: the split
        // functions read only labels and the random stream, so they deal it exactly as they
        // would deal the rows.
        let n = self.data.len();
        let index = Dataset::new(
            (0..n).map(|i| i as f64).collect(),
            self.data.labels().to_vec(),
            1,
        );
        let mut rng = derived_rng(seed, path);
        let (test, train) = proportional_split(&index, self.layout.test_fraction, &mut rng)?;
        let parts = if self.layout.rows_per_org.is_empty() {
            equal_partition(&train, self.layout.orgs, &mut rng)?
        } else {
            sized_partition(&train, &self.layout.rows_per_org, &mut rng)?
        };
        let rows = |d: &Dataset| (0..d.len()).map(|i| d.row(i)[0] as usize).collect();
        let orgs: Vec<Vec<usize>> = parts.iter().map(rows).collect();
        if orgs.iter().any(Vec::is_empty) {
            bail!(
                "{} training rows leave an organisation with none: use fewer --orgs",
                train.len()
            );
        }
        Ok(IndexSplit {
            orgs,
            test: rows(&test),
        })
    }

    /// The rows of one trial.
    pub(super) fn split(&self, seed: u64, path: &[u64]) -> Result<Split> {
        let s = self.indices(seed, path)?;
        let mut parts = s.orgs.iter().map(|rows| self.data.subset(rows));
        let own = parts.next().context("no organisation")?;
        Ok(Split {
            own,
            nodes: parts.collect(),
            test: self.data.subset(&s.test),
        })
    }

    /// The raw records of one trial, split as [`OwnData::split`] splits the mapped rows.
    pub(super) fn raw_split(&self, seed: u64, path: &[u64]) -> Result<RawSplit> {
        let s = self.indices(seed, path)?;
        let mut parts = s.orgs.iter().map(|rows| self.records.subset(rows));
        let own = parts.next().context("no organisation")?;
        Ok(RawSplit {
            schema: self.schema.clone(),
            own,
            nodes: parts.collect(),
            test: self.records.subset(&s.test),
        })
    }

    /// `utility_splits.csv`: one line per (trial, role) with the row indices separated by
    /// spaces; roles are `own`, `node1` … and `test`.
    pub(super) fn splits_csv(
        &self,
        seed: u64,
        trials: usize,
        path_of: impl Fn(u64) -> Vec<u64>,
    ) -> Result<Vec<u8>> {
        let mut lines = Vec::new();
        for t in 0..trials as u64 {
            let s = self.indices(seed, &path_of(t))?;
            let join = |rows: &[usize]| {
                rows.iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            for (k, rows) in s.orgs.iter().enumerate() {
                let role = if k == 0 {
                    "own".to_owned()
                } else {
                    format!("node{k}")
                };
                lines.push(vec![t.to_string(), role, join(rows)]);
            }
            lines.push(vec![t.to_string(), "test".to_owned(), join(&s.test)]);
        }
        Ok(super::figures::csv_text(
            &["trial", "role", "rows"],
            &lines,
        )?)
    }
}

/// Says loudly that a schema still holds bounds observed in the data (`bounds = "observed"`,
/// written by `dpagg-node schema init`): fine for a local what-if, refused by every release.
fn warn_if_observed(schema: &Schema, data: &Path) {
    let observed = schema.observed_features();
    if !observed.is_empty() {
        tracing::warn!(
            file = %data.display(),
            "the schema's bounds of {} feature(s) were observed in the data ({}): fine for this \
             local simulation, but nodes refuse to release with them; replace them with public bounds",
            observed.len(),
            observed.join(", ")
        );
    }
}
