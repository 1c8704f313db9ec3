//! The data of `experiment learners`: the three datasets with the rows each learner sees, and the
//! splits of every trial, written out so that peers (tests/peers/) train on exactly the same
//! rows.
//!
//! Real data: in every trial a class-stratified test set of the paper's size (84 + 84 Diabetes,
//! 85 + 84 Breast Cancer) is drawn; the other rows are the "all" training set (600 / 400, the
//! trusted-curator reference), and a random subset of one organisation's size (60 / 40) is the
//! "org" training set. Synthetic data (Minami et al. 2015, §5.1) is drawn once from the seed: the
//! 500 + 500 test points are fixed, "all" is the 5,000 training points and "org" 50 of them per
//! trial. The clinic scenario ([`dpagg_shared::data::clinic`]) is drawn once too: 5,000 fixed test
//! rows, "all" is the nine hospitals' 18,000 training rows and "org" one hospital's 2,000 per
//! trial. Row indices refer to the bundled CSV files (0-based, header excluded) and, for generated
//! data, to `synthetic.csv` / `clinic.csv` (training rows first).

use super::figures::csv_text;
use anyhow::Result;
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::clinic::{
    CLINIC_HOSPITAL_ROWS, CLINIC_HOSPITALS, CLINIC_TEST_ROWS, clinic_rows,
};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::data::synthetic::{SyntheticSpec, generate};
use dpagg_shared::util::seed::{derive_seed, derived_rng};
use rand::seq::SliceRandom;

/// Purposes of derived seeds (the last path element).
pub(super) mod purpose {
    pub const DATA: u64 = 10;
    pub const TEST: u64 = 11;
    pub const ORG: u64 = 12;
    pub const NOISE: u64 = 13;
    pub const PEER: u64 = 14;
}

/// A dataset of the experiment with the rows under each map.
pub(super) struct LearnerData {
    /// `diabetes`, `breast-cancer`, `synthetic` or `clinic`.
    pub(super) name: &'static str,
    /// Index in the seed path.
    pub(super) index: u64,
    /// Rows under the default (ball) map; synthetic rows as drawn.
    pub(super) ball: Dataset,
    /// Rows under the paper map (the same as `ball` for synthetic data).
    pub(super) paper: Dataset,
    /// Training rows of one organisation in the paper's setup.
    pub(super) per_org: usize,
    /// Whether learners also train on all training rows (the trusted-curator reference). The
    /// clinic's 18,000 rows are left out: its curator is `experiment utility`'s column, and each
    /// of its releases costs as much as 300 Diabetes ones.
    pub(super) with_all: bool,
    /// How the test set is drawn.
    test: Test,
}

/// The test set of a dataset.
enum Test {
    /// This many positive and negative rows drawn afresh in every trial.
    Stratified(usize, usize),
    /// These rows in every trial (the training rows are the others).
    Fixed(Vec<usize>),
}

/// One trial's rows of one dataset.
pub(super) struct Split {
    /// Test rows.
    pub(super) test: Vec<usize>,
    /// "org" training rows.
    pub(super) org: Vec<usize>,
    /// "all" training rows.
    pub(super) all: Vec<usize>,
}

impl LearnerData {
    /// The three datasets, the synthetic one drawn from `seed`.
    pub(super) fn all(seed: u64) -> Vec<LearnerData> {
        let mut out: Vec<LearnerData> = [Bundled::Diabetes, Bundled::BreastCancer]
            .into_iter()
            .enumerate()
            .map(|(i, b)| {
                let split = b.paper_split();
                LearnerData {
                    name: b.name(),
                    index: i as u64,
                    ball: b.load().0,
                    paper: b.load_paper().0,
                    per_org: split.per_org,
                    with_all: true,
                    test: Test::Stratified(split.test_positive, split.test_negative),
                }
            })
            .collect();
        let spec = SyntheticSpec::default();
        let s = generate(&spec, &mut derived_rng(seed, &[2, purpose::DATA]));
        let mut synthetic = Self::generated("synthetic", 2, &s.train, &s.test, s.train.len() / 100);
        synthetic.with_all = true;
        out.push(synthetic);
        let mut rng = derived_rng(seed, &[3, purpose::DATA]);
        let train = clinic_rows(CLINIC_HOSPITALS * CLINIC_HOSPITAL_ROWS, &mut rng);
        let test = clinic_rows(CLINIC_TEST_ROWS, &mut rng);
        out.push(Self::generated(
            "clinic",
            3,
            &train,
            &test,
            CLINIC_HOSPITAL_ROWS,
        ));
        out
    }

    /// A generated dataset: fixed `test` rows after the `train` rows, already in the unit ball
    /// (one map for every learner); "org" size only.
    fn generated(
        name: &'static str,
        index: u64,
        train: &Dataset,
        test: &Dataset,
        per_org: usize,
    ) -> LearnerData {
        let rows = Dataset::concat([train, test]);
        LearnerData {
            name,
            index,
            paper: rows.clone(),
            ball: rows,
            per_org,
            with_all: false,
            test: Test::Fixed((train.len()..train.len() + test.len()).collect()),
        }
    }

    /// The training sizes learners see, with their rows in `split`: "org", and "all" unless the
    /// dataset leaves it out.
    pub(super) fn sizes<'a>(&self, split: &'a Split) -> Vec<(&'static str, &'a [usize])> {
        let mut sizes = vec![("org", split.org.as_slice())];
        if self.with_all {
            sizes.push(("all", split.all.as_slice()));
        }
        sizes
    }

    /// Whether the rows are generated (written to `<name>.csv` for peers) rather than bundled.
    pub(super) fn is_generated(&self) -> bool {
        matches!(self.test, Test::Fixed(_))
    }

    /// Trial `t`'s split (a function of the seed, the dataset and t only).
    pub(super) fn split(&self, seed: u64, t: usize) -> Split {
        let path = |p: u64| [self.index, t as u64, p];
        let labels = self.ball.labels();
        let test = match &self.test {
            Test::Fixed(rows) => rows.clone(),
            Test::Stratified(pos, neg) => {
                let mut rng = derived_rng(seed, &path(purpose::TEST));
                let mut take = |label: f64, k: usize| {
                    let mut rows: Vec<usize> =
                        (0..labels.len()).filter(|&i| labels[i] == label).collect();
                    rows.shuffle(&mut rng);
                    rows.truncate(k);
                    rows
                };
                let mut test = take(1.0, *pos);
                test.extend(take(-1.0, *neg));
                test.sort_unstable();
                test
            }
        };
        let all: Vec<usize> = (0..labels.len())
            .filter(|i| test.binary_search(i).is_err())
            .collect();
        let mut org = all.clone();
        org.shuffle(&mut derived_rng(seed, &path(purpose::ORG)));
        org.truncate(self.per_org);
        org.sort_unstable();
        Split { test, org, all }
    }

    /// `<name>.csv` of a generated dataset: its rows (x0, x1, …, label), training rows first. The
    /// real datasets' rows are the bundled CSV files.
    pub(super) fn rows_csv(&self) -> Result<Vec<u8>> {
        let dim = self.ball.dim();
        let mut header: Vec<String> = (0..dim).map(|j| format!("x{j}")).collect();
        header.push("label".into());
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let lines: Vec<Vec<String>> = (0..self.ball.len())
            .map(|i| {
                let mut l: Vec<String> =
                    self.ball.row(i).iter().map(|v| format!("{v:e}")).collect();
                l.push(format!("{}", self.ball.label(i)));
                l
            })
            .collect();
        Ok(csv_text(&header, &lines)?)
    }
}

/// The seed a peer gives its own randomness in trial `t` (fits numpy's 32-bit `random_state`).
pub(super) fn peer_seed(seed: u64, data: &LearnerData, t: usize) -> u64 {
    derive_seed(seed, &[data.index, t as u64, purpose::PEER]) >> 33
}

/// Header of `splits.csv`.
pub(super) const SPLITS_HEADER: [&str; 6] =
    ["dataset", "size", "trial", "peer_seed", "train", "test"];

/// The two lines of `splits.csv` of one trial: row indices separated by spaces.
pub(super) fn split_lines(seed: u64, data: &LearnerData, t: usize, s: &Split) -> Vec<Vec<String>> {
    let join = |rows: &[usize]| {
        rows.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(" ")
    };
    data.sizes(s)
        .into_iter()
        .map(|(size, train)| {
            vec![
                data.name.to_owned(),
                size.to_owned(),
                t.to_string(),
                peer_seed(seed, data, t).to_string(),
                join(train),
                join(&s.test),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_have_the_papers_sizes_and_are_disjoint() {
        for d in LearnerData::all(1) {
            let s = d.split(1, 3);
            let n = d.ball.len();
            let (all, org) = match d.name {
                "diabetes" => (600, 60),
                "breast-cancer" => (400, 40),
                "clinic" => (18_000, 2_000),
                _ => (5000, 50),
            };
            assert_eq!((s.all.len(), s.org.len()), (all, org), "{}", d.name);
            assert_eq!(s.test.len() + s.all.len(), n);
            assert!(s.org.iter().all(|i| s.all.binary_search(i).is_ok()));
            assert!(s.test.iter().all(|i| s.all.binary_search(i).is_err()));
            let pos = s.test.iter().filter(|&&i| d.ball.label(i) == 1.0).count();
            match d.name {
                "diabetes" => assert_eq!(pos, 84),
                "breast-cancer" => assert_eq!(pos, 85),
                "synthetic" => assert_eq!(pos, 500),
                // Balanced by symmetry, drawn at random.
                _ => assert!((2_300..2_700).contains(&pos), "clinic test positives {pos}"),
            }
            // A function of (seed, dataset, trial) only.
            let again = d.split(1, 3);
            assert_eq!((&s.test, &s.org), (&again.test, &again.org));
            assert_ne!(d.split(1, 4).org, again.org);
        }
    }
}
