//! The scenarios of `experiment utility` (and `experiment synthetic`, on the same splits):
//! where each trial's rows come from and how they are dealt to the organisations.
//!
//! - **diabetes**, **breast-cancer**: the paper's splits (a class-stratified test set of 168 /
//!   169 rows, the other rows dealt over 10 organisations of 60 / 40 rows) under the schema's
//!   ball map; organisation 1 aggregates, the other 9 are nodes.
//! - **synthetic**: the mirror-averaging paper's §5.1 data (5,000 training points over 100
//!   organisations of 50, 1,000 test points); organisation 1 aggregates, 99 nodes.
//! - **clinic**: [`dpagg_shared::data::clinic`] — an aggregator of 100 rows, 9 hospitals of
//!   2,000, a test set of 5,000, d = 20.
//! - **diabetes-30-orgs** ([`FEW_OWN_ROWS`]): Diabetes' paper test set, its 600 training rows
//!   dealt over 30 organisations of 20: an aggregator with only 20 own rows.
//!
//! The wide scenarios are tables as a newcomer writes their schema — public bounds only — and
//! their learners use the agreed map ([`super::agreed`]) unless `--map` says otherwise:
//! - **breast-cancer-bounds**: Breast Cancer with `data/breast_cancer.bounds.toml`, a 20 %
//!   stratified test set, the rest over 10 organisations (45 rows each);
//! - **digits-bounds**: scikit-learn's digits (`data/digits.csv`, 64 pixel counts, "digit ≥ 5")
//!   with `data/digits.bounds.toml`, likewise (143 rows each); **digits-bounds-40-own**: the
//!   same with an aggregator of 40 rows and 9 nodes of 155;
//! - **ehr-d100**, **ehr-d50-n200**, **ehr-d200-n2000**: [`dpagg_shared::data::ehr`] tables of
//!   d = 100, 50 and 200 features; an aggregator of 100 rows, 9 nodes of 1,000, 200 and 2,000
//!   rows, 2,000 test rows.

use super::agreed::{RawSplit, Records};
use super::own_data::{Layout, OwnData};
use anyhow::{Context, Result, anyhow};
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::clinic::{
    CLINIC_HOSPITAL_ROWS, CLINIC_HOSPITALS, CLINIC_OWN_ROWS, CLINIC_TEST_ROWS, clinic_rows,
};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::data::ehr::EhrPopulation;
use dpagg_shared::data::partition::{equal_partition, stratified_split};
use dpagg_shared::data::synthetic::{SyntheticData, SyntheticSpec, generate};
use dpagg_shared::util::seed::derived_rng;

/// The scenarios, in table order. New ones go last: a scenario's index is part of its seed
/// path, so appending keeps every earlier scenario's trials.
pub(super) const SCENARIOS: [&str; 11] = [
    "diabetes",
    "breast-cancer",
    "synthetic",
    "clinic",
    FEW_OWN_ROWS,
    "breast-cancer-bounds",
    "digits-bounds",
    "digits-bounds-40-own",
    "ehr-d100",
    "ehr-d50-n200",
    "ehr-d200-n2000",
];

/// Scenarios run only when `--scenarios` names them (the EHR tables' other shapes).
pub(super) const EXTENDED: [&str; 2] = ["ehr-d50-n200", "ehr-d200-n2000"];

/// The first scenarios, whose schemas are written by hand: their learners use the schema's
/// map unless `--map` says otherwise; the others use the agreed map.
pub(super) const HAND_WRITTEN: usize = 5;

const BREAST_CANCER_BOUNDS: &str = include_str!("../../../../data/breast_cancer.bounds.toml");
const DIGITS_CSV: &str = include_str!("../../../../data/digits.csv");
const DIGITS_BOUNDS: &str = include_str!("../../../../data/digits.bounds.toml");

/// The rows of an EHR-like scenario's parties.
pub(super) struct Ehr {
    population: EhrPopulation,
    own: usize,
    nodes: usize,
    per_node: usize,
    test: usize,
}

impl Ehr {
    fn new(d: usize, per_node: usize) -> Self {
        Self {
            population: EhrPopulation::new(d),
            own: 100,
            nodes: 9,
            per_node,
            test: 2000,
        }
    }

    /// One trial's records, from the trial's stream.
    fn raw_split(&self, seed: u64, path: &[u64]) -> Result<RawSplit> {
        let mut rng = derived_rng(seed, path);
        let mut draw = |n: usize| {
            let (rows, positive) = self.population.rows(n, &mut rng);
            Records { rows, positive }
        };
        let own = draw(self.own);
        let nodes = (0..self.nodes).map(|_| draw(self.per_node)).collect();
        let test = draw(self.test);
        Ok(RawSplit {
            schema: self.population.bounds_schema()?,
            own,
            nodes,
            test,
        })
    }
}

/// The scenario where the aggregator has few own rows: Diabetes' training rows dealt over
/// [`FEW_OWN_ROWS_ORGS`] organisations (20 rows each, like `deploy/generate.py --orgs 30`).
pub(super) const FEW_OWN_ROWS: &str = "diabetes-30-orgs";
/// Organisations of [`FEW_OWN_ROWS`], the aggregator among them.
pub(super) const FEW_OWN_ROWS_ORGS: usize = 30;

/// Seed-path purposes.
pub(super) const SPLIT: u64 = 20;
pub(super) const NOISE: u64 = 21;
pub(super) const SELECT: u64 = 22;

/// One trial's rows.
pub(super) struct Split {
    pub(super) own: Dataset,
    pub(super) nodes: Vec<Dataset>,
    pub(super) test: Dataset,
}

/// The data a scenario draws its trials from.
pub(super) enum Source {
    /// A bundled dataset: its paper split's test rows, the rest dealt over `orgs`
    /// organisations (the paper's count when `None`).
    Real(Bundled, Dataset, Option<usize>),
    Synthetic(SyntheticData),
    Clinic,
    /// A user's CSV (`--dataset`, `--schema`), or a bundled table with a bounds-only schema.
    Csv(Box<OwnData>),
    /// EHR-like tables from the generator.
    Ehr(Ehr),
}

impl Source {
    pub(super) fn of(name: &str, seed: u64) -> Result<Self> {
        Ok(match name {
            "diabetes" => Self::Real(Bundled::Diabetes, Bundled::Diabetes.load().0, None),
            "breast-cancer" => {
                Self::Real(Bundled::BreastCancer, Bundled::BreastCancer.load().0, None)
            }
            FEW_OWN_ROWS => Self::Real(
                Bundled::Diabetes,
                Bundled::Diabetes.load().0,
                Some(FEW_OWN_ROWS_ORGS),
            ),
            "synthetic" => Self::Synthetic(generate(
                &SyntheticSpec::default(),
                &mut derived_rng(seed, &[SPLIT]),
            )),
            "clinic" => Self::Clinic,
            "breast-cancer-bounds" => Self::Csv(Box::new(OwnData::embedded(
                name,
                ("data/breast_cancer.csv", Bundled::BreastCancer.csv_text()),
                BREAST_CANCER_BOUNDS,
                Layout::tenth(),
            )?)),
            "digits-bounds" => Self::Csv(Box::new(OwnData::embedded(
                name,
                ("data/digits.csv", DIGITS_CSV),
                DIGITS_BOUNDS,
                Layout::tenth(),
            )?)),
            "digits-bounds-40-own" => Self::Csv(Box::new(OwnData::embedded(
                name,
                ("data/digits.csv", DIGITS_CSV),
                DIGITS_BOUNDS,
                Layout {
                    rows_per_org: std::iter::once(40).chain([155; 9]).collect(),
                    ..Layout::tenth()
                },
            )?)),
            "ehr-d100" => Self::Ehr(Ehr::new(100, 1000)),
            "ehr-d50-n200" => Self::Ehr(Ehr::new(50, 200)),
            "ehr-d200-n2000" => Self::Ehr(Ehr::new(200, 2000)),
            other => return Err(anyhow!("unknown scenario {other}")),
        })
    }

    /// One trial's raw records, for the scenarios that have them (the others map their rows
    /// when they load them): what an agreed map is derived from and applied to.
    pub(super) fn raw_split(&self, seed: u64, path: &[u64]) -> Result<Option<RawSplit>> {
        Ok(match self {
            Self::Csv(own) => Some(own.raw_split(seed, path)?),
            Self::Ehr(e) => Some(e.raw_split(seed, path)?),
            _ => None,
        })
    }

    /// Trial `trial`'s split; organisation 1 aggregates.
    pub(super) fn split(&self, seed: u64, path: &[u64]) -> Result<Split> {
        let mut rng = derived_rng(seed, path);
        let (test, parts) = match self {
            Self::Real(b, data, orgs) => {
                let s = b.paper_split();
                let (test, train) =
                    stratified_split(data, s.test_positive, s.test_negative, &mut rng)?;
                let parts = equal_partition(&train, orgs.unwrap_or(s.orgs), &mut rng)?;
                (test, parts)
            }
            Self::Synthetic(d) => (d.test.clone(), equal_partition(&d.train, 100, &mut rng)?),
            Self::Csv(own) => return own.split(seed, path),
            Self::Ehr(e) => {
                let raw = e.raw_split(seed, path)?;
                let map = |r: &Records| r.mapped(&raw.schema);
                return Ok(Split {
                    own: map(&raw.own),
                    nodes: raw.nodes.iter().map(map).collect(),
                    test: map(&raw.test),
                });
            }
            Self::Clinic => {
                let mut parts = vec![clinic_rows(CLINIC_OWN_ROWS, &mut rng)];
                parts.extend(
                    (0..CLINIC_HOSPITALS).map(|_| clinic_rows(CLINIC_HOSPITAL_ROWS, &mut rng)),
                );
                (clinic_rows(CLINIC_TEST_ROWS, &mut rng), parts)
            }
        };
        let mut parts = parts.into_iter();
        let own = parts.next().context("no organisation")?;
        Ok(Split {
            own,
            nodes: parts.collect(),
            test,
        })
    }
}
