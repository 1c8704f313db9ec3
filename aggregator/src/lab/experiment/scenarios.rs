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
//!   dealt over 30 organisations of 20: an aggregator with only 20 own rows (issue 22).

use super::own_data::OwnData;
use anyhow::{Context, Result, anyhow};
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::clinic::{
    CLINIC_HOSPITAL_ROWS, CLINIC_HOSPITALS, CLINIC_OWN_ROWS, CLINIC_TEST_ROWS, clinic_rows,
};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::data::partition::{equal_partition, stratified_split};
use dpagg_shared::data::synthetic::{SyntheticData, SyntheticSpec, generate};
use dpagg_shared::privacy::noise::derived_rng;

/// The scenarios, in table order. New ones go last: a scenario's index is part of its seed
/// path, so appending keeps every earlier scenario's trials.
pub(super) const SCENARIOS: [&str; 5] = [
    "diabetes",
    "breast-cancer",
    "synthetic",
    "clinic",
    FEW_OWN_ROWS,
];

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
    /// A user's CSV (`--dataset`, `--schema`).
    Csv(OwnData),
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
            other => return Err(anyhow!("unknown scenario {other}")),
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
