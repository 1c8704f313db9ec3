//! The claims the core-library issue asks dpagg to show, at the sizes it names (seed 001 §5).

use dpagg_shared::bundled::Bundled;
use dpagg_shared::mechanism::MechanismKind;
use dpagg_shared::simulation::{DataSource, SimulationConfig, SimulationSummary, TestSplit, run};
use dpagg_shared::synthetic::SyntheticSpec;

fn config(dataset: &str, source: DataSource, orgs: usize, epsilons: Vec<f64>) -> SimulationConfig {
    SimulationConfig {
        dataset: dataset.into(),
        source,
        orgs,
        mechanism: MechanismKind::ObjectivePerturbation,
        epsilons,
        delta: 0.0,
        lambda: 0.01,
        local_lambda: None,
        beta: 3.0,
        trials: 20,
        seed: 1,
        options: Default::default(),
    }
}

fn bundled(b: Bundled) -> SimulationSummary {
    let (data, _) = b.load();
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

#[test]
fn diabetes_private_aggregate_beats_local_at_eps_2_5() {
    let s = bundled(Bundled::Diabetes);
    let r = &s.rows[0];
    assert!(
        r.aggregate_accuracy.mean > r.local_accuracy.mean,
        "aggregate {:?} vs local {:?}",
        r.aggregate_accuracy,
        r.local_accuracy
    );
}

#[test]
fn breast_cancer_private_aggregate_beats_local_at_eps_2_5() {
    let s = bundled(Bundled::BreastCancer);
    let r = &s.rows[0];
    assert!(
        r.aggregate_accuracy.mean > r.local_accuracy.mean,
        "aggregate {:?} vs local {:?}",
        r.aggregate_accuracy,
        r.local_accuracy
    );
}
