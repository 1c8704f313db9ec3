//! The claims the core-library issue asks dpagg to show, at the sizes it names (Minami et al. 2015,
//! §5), with the paper's setup: objective perturbation as published (CMS 2011 Algorithm 2), λ =
//! 0.01 and the paper map of the bundled schemas.

use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::synthetic::SyntheticSpec;
use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};
use dpagg_shared::simulation::{
    DataSource, PAPER, SimulationConfig, SimulationSummary, TestSplit, run,
};

fn config(dataset: &str, source: DataSource, orgs: usize, epsilons: Vec<f64>) -> SimulationConfig {
    SimulationConfig {
        dataset: dataset.into(),
        source,
        orgs,
        mechanism: MechanismKind::ObjectivePerturbationCms2011,
        epsilons,
        delta: 0.0,
        lambda: Lambda::Fixed(0.01),
        local_lambda: None,
        local_baseline: dpagg_shared::simulation::LocalBaseline::Fixed,
        rows_per_org: None,
        beta: 3.0,
        trials: 20,
        seed: 1,
        options: Default::default(),
        combiners: Default::default(),
    }
}

fn bundled(b: Bundled) -> SimulationSummary {
    let (data, _) = b.load_paper();
    let split = b.paper_split();
    let source = DataSource::Fixed {
        data,
        test: TestSplit::Counts {
            positive: split.test_positive,
            negative: split.test_negative,
        },
    };
    run(&config(b.name(), source, split.orgs, vec![2.5]), &|| {})
        .expect("simulation")
        .0
}

#[test]
fn synthetic_100_orgs_20_trials_baselines() {
    let (s, _) = run(
        &config(
            "synthetic",
            DataSource::Synthetic(SyntheticSpec::default()),
            100,
            vec![1.9],
        ),
        &|| {},
    )
    .expect("simulation");
    assert!(
        s.centralised_accuracy >= 0.99,
        "centralised {}",
        s.centralised_accuracy
    );
    let row = &s.rows[0];
    assert!(
        row.nonprivate_aggregate_accuracy.mean >= 0.97,
        "non-private aggregate {:?}",
        row.nonprivate_aggregate_accuracy
    );
    assert_eq!(s.rows_per_org, 50);
}

/// On `data` at ε = 2.5, the private aggregate's mean accuracy beats the local-only learner's.
fn assert_private_aggregate_beats_local(data: Bundled) {
    let s = bundled(data);
    let r = &s.rows[0];
    assert!(
        r.accuracy(PAPER).mean > r.local_accuracy.mean,
        "aggregate {:?} vs local {:?}",
        r.accuracy(PAPER),
        r.local_accuracy
    );
}

#[test]
fn diabetes_private_aggregate_beats_local_at_eps_2_5() {
    assert_private_aggregate_beats_local(Bundled::Diabetes);
}

#[test]
fn breast_cancer_private_aggregate_beats_local_at_eps_2_5() {
    assert_private_aggregate_beats_local(Bundled::BreastCancer);
}
