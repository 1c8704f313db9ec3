//! The paper's setups: its three datasets with their ε grids, the settings a reproduction may
//! change (λ, the non-private learners' λ, the normalisation of the real data, the law of the
//! synthetic points), and [`Setup::config`], which turns a setup into the
//! [`SimulationConfig`] that [`dpagg_shared::simulation::run`] runs.
//!
//! A new setting of the protocol is a field of [`Setup`] (its default in [`Setup::paper`]), used
//! in [`Setup::config`]; `experiment variants` can then change it (see [`super::variants`]).

use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::dataset::{Dataset, dot};
use dpagg_shared::data::synthetic::{PointLaw, SyntheticSpec};
use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};
use dpagg_shared::simulation::{DataSource, SimulationConfig, TestSplit};
use dpagg_shared::util::stats::Summary;

/// How rows of a real dataset are mapped into the unit ball.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Normalisation {
    /// The public schema: clip, map each feature to [−1, 1], append 1, divide by √dim (default;
    /// a per-record map fixed in advance, as the privacy proofs need).
    Schema,
    /// The schema's map, then each row scaled to norm 1 (still per-record).
    RowUnit,
    /// Standardise each feature with the data's mean and sd, append 1, divide every row by the
    /// largest row norm. Uses statistics of the whole data set: NOT differentially private; a
    /// guess at the non-private preprocessing of 2015-era experiments.
    Standardise,
}

impl Normalisation {
    /// The name printed in the summary line of `experiment paper`.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Schema => "schema",
            Self::RowUnit => "row-unit",
            Self::Standardise => "standardise",
        }
    }
}

/// Law of the synthetic points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum Points {
    /// Uniform on the unit sphere (Minami et al. 2015, §5.1).
    Sphere,
    /// u uniform on [0, 1]^10, then u/‖u‖ (not the paper's law; see docs/experiments/paper.md).
    NormalisedCube,
}

impl Points {
    /// The name printed in the summary line of `experiment paper`.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Sphere => "sphere",
            Self::NormalisedCube => "normalised-cube",
        }
    }

    fn law(self) -> PointLaw {
        match self {
            Self::Sphere => PointLaw::Sphere,
            Self::NormalisedCube => PointLaw::NormalisedCube,
        }
    }
}

/// The three datasets of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Data {
    Synthetic,
    Real(Bundled),
}

impl Data {
    pub(super) const ALL: [Data; 3] = [
        Data::Synthetic,
        Data::Real(Bundled::BreastCancer),
        Data::Real(Bundled::Diabetes),
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Data::Synthetic => "synthetic",
            Data::Real(b) => b.name(),
        }
    }

    pub(super) fn title(self) -> &'static str {
        match self {
            Data::Synthetic => "Synthetic (n = 5,000, 100 organisations)",
            Data::Real(Bundled::BreastCancer) => "Breast Cancer (10 × 40, test 169)",
            Data::Real(Bundled::Diabetes) => "Diabetes (10 × 60, test 168)",
        }
    }

    /// The ε sweep of the paper's figure: Fig. 3's 0.1, 0.3, …, 1.9; for the real data the
    /// values §5.2 discusses (0.3, 1.5, 2.5) within a grid from 0.1 to 3.
    pub(super) fn epsilons(self) -> Vec<f64> {
        match self {
            Data::Synthetic => (0..10).map(|i| (1.0 + 2.0 * i as f64) / 10.0).collect(),
            Data::Real(_) => vec![0.1, 0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0],
        }
    }
}

/// Settings that define one run of the protocol (the paper's by default).
#[derive(Debug, Clone, Copy)]
pub(super) struct Setup {
    pub(super) trials: usize,
    pub(super) seed: u64,
    pub(super) lambda: f64,
    pub(super) local_lambda: Option<f64>,
    pub(super) normalisation: Normalisation,
    pub(super) points: Points,
}

impl Setup {
    /// The paper's setup with `trials` trials from master seed `seed`.
    pub(super) fn paper(trials: usize, seed: u64) -> Self {
        Self {
            trials,
            seed,
            lambda: 0.01,
            local_lambda: None,
            normalisation: Normalisation::Schema,
            points: Points::Sphere,
        }
    }

    /// The sweep of the paper's figures: objective perturbation as published (CMS 2011
    /// Algorithm 2), ε-DP, over `data`'s ε grid.
    pub(super) fn sweep(&self, data: Data) -> SimulationConfig {
        self.config(
            data,
            MechanismKind::ObjectivePerturbationCms2011,
            data.epsilons(),
            0.0,
        )
    }

    /// The simulation of `mechanism` at `epsilons` and `delta` on `data` under this setup.
    pub(super) fn config(
        &self,
        data: Data,
        mechanism: MechanismKind,
        epsilons: Vec<f64>,
        delta: f64,
    ) -> SimulationConfig {
        let (source, orgs) = self.source(data);
        SimulationConfig {
            dataset: data.name().into(),
            source,
            orgs,
            mechanism,
            epsilons,
            delta,
            lambda: Lambda::Fixed(self.lambda),
            local_lambda: self.local_lambda,
            local_baseline: dpagg_shared::simulation::LocalBaseline::Fixed,
            rows_per_org: None,
            beta: 3.0,
            trials: self.trials,
            seed: self.seed,
            options: Default::default(),
            combiners: Default::default(),
        }
    }

    /// Where `data`'s rows come from and over how many organisations they are spread.
    fn source(&self, data: Data) -> (DataSource, usize) {
        match data {
            Data::Synthetic => (
                DataSource::Synthetic(SyntheticSpec {
                    points: self.points.law(),
                    ..SyntheticSpec::default()
                }),
                100,
            ),
            Data::Real(b) => {
                let split = b.paper_split();
                let (data, _) = b.load_paper();
                (
                    DataSource::Fixed {
                        data: normalise(data, self.normalisation),
                        test: TestSplit::Counts {
                            positive: split.test_positive,
                            negative: split.test_negative,
                        },
                    },
                    split.orgs,
                )
            }
        }
    }
}

/// Re-maps schema-normalised rows (features in [−1, 1]/√dim, intercept 1/√dim last).
fn normalise(data: Dataset, how: Normalisation) -> Dataset {
    let dim = data.dim();
    let n = data.len();
    let labels = data.labels().to_vec();
    match how {
        Normalisation::Schema => data,
        Normalisation::RowUnit => {
            let mut x = data.features().to_vec();
            for row in x.chunks_mut(dim) {
                let norm = dot(row, row).sqrt();
                row.iter_mut().for_each(|v| *v /= norm);
                shrink_into_unit_ball(row);
            }
            Dataset::new(x, labels, dim)
        }
        Normalisation::Standardise => {
            let features = dim - 1;
            let mut x = data.features().to_vec();
            for j in 0..features {
                let col: Vec<f64> = (0..n).map(|i| x[i * dim + j]).collect();
                let s = Summary::of(&col);
                let sd = if s.sd > 0.0 { s.sd } else { 1.0 };
                for i in 0..n {
                    x[i * dim + j] = (x[i * dim + j] - s.mean) / sd;
                }
            }
            for i in 0..n {
                x[i * dim + features] = 1.0;
            }
            let max = x.chunks(dim).map(|r| dot(r, r).sqrt()).fold(0.0, f64::max);
            x.iter_mut().for_each(|v| *v /= max);
            x.chunks_mut(dim).for_each(shrink_into_unit_ball);
            Dataset::new(x, labels, dim)
        }
    }
}

/// Scales `row` down by one ulp at a time until rounding leaves its norm at most 1.
fn shrink_into_unit_ball(row: &mut [f64]) {
    while dot(row, row).sqrt() > 1.0 {
        row.iter_mut().for_each(|v| *v *= 1.0 - f64::EPSILON);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisations_keep_rows_in_the_unit_ball() {
        let (data, _) = Bundled::Diabetes.load_paper();
        for how in [
            Normalisation::Schema,
            Normalisation::RowUnit,
            Normalisation::Standardise,
        ] {
            let d = normalise(data.clone(), how);
            assert_eq!(d.len(), data.len());
            assert_eq!(d.labels(), data.labels());
            assert!(d.max_row_norm() <= 1.0, "{how:?}");
        }
        let unit = normalise(data.clone(), Normalisation::RowUnit);
        assert!((unit.max_row_norm() - 1.0).abs() < 1e-12);
        let z = normalise(data, Normalisation::Standardise);
        assert!((z.max_row_norm() - 1.0).abs() < 1e-12);
        // The intercept column is constant.
        let c = z.row(0)[8];
        assert!((0..z.len()).all(|i| z.row(i)[8] == c));
    }

    #[test]
    fn sweeps_use_the_papers_grids() {
        assert_eq!(
            Data::Synthetic.epsilons(),
            vec![0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 1.5, 1.7, 1.9]
        );
        let c = Setup::paper(2, 1).sweep(Data::Real(Bundled::BreastCancer));
        assert_eq!(c.orgs, 10);
        assert_eq!(c.lambda, Lambda::Fixed(0.01));
        assert_eq!(c.mechanism, MechanismKind::ObjectivePerturbationCms2011);
        assert_eq!(c.beta, 3.0);
    }
}
