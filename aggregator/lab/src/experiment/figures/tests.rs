//! Tests of `figures`.

use super::*;

fn run(eps: f64, trial: usize, org: usize, agg: f64, local: f64) -> OrgRun {
    OrgRun {
        epsilon: eps,
        delta: 0.0,
        trial,
        org,
        local_accuracy: local,
        private_learner_accuracy: 0.5,
        combiners: PerCombiner(
            Candidate::simulated()
                .map(|(c, _)| (c, if c == PAPER { agg } else { 0.6 }))
                .collect(),
        ),
        nonprivate_aggregate_accuracy: 0.9,
        centralised_accuracy: 0.95 + trial as f64 * 0.01,
    }
}

#[test]
fn rows_count_improved_organisations_per_trial() {
    let runs = vec![
        run(0.5, 0, 0, 0.8, 0.7),
        run(0.5, 0, 1, 0.6, 0.7),
        run(0.5, 1, 0, 0.8, 0.7),
        run(0.5, 1, 1, 0.8, 0.7),
        run(1.0, 0, 0, 0.7, 0.7),
        run(1.0, 0, 1, 0.7, 0.7),
        run(1.0, 1, 0, 0.7, 0.7),
        run(1.0, 1, 1, 0.7, 0.7),
    ];
    let rs = rows(&runs);
    assert_eq!(rs.len(), 2);
    assert_eq!(rs[0].epsilon, 0.5);
    assert_eq!(rs[0].improved.mean, 1.5);
    assert_eq!((rs[0].improved_min, rs[0].improved_max), (1.0, 2.0));
    // Ties do not count as improvements.
    assert_eq!(rs[1].improved.mean, 0.0);
    assert!((rs[0].centralised.mean - 0.955).abs() < 1e-12);
    assert!((rs[0].aggregate().mean - 0.75).abs() < 1e-12);
}

#[test]
fn numbers_have_a_fixed_format() {
    assert_eq!(num(0.5), "0.5000");
    assert_eq!(num(1.0 / 3.0), "0.3333");
    assert_eq!(eps(0.1), "0.1");
    assert_eq!(eps(2.0), "2");
    assert_eq!(eps(0.30000000000000004), "0.3");
    assert_eq!(delta(0.0), "0");
    assert_eq!(delta(1e-5), "1.000e-5");
    let csv = csv_text(&["a", "b"], &[vec!["1".into(), "x, y".into()]]).expect("csv");
    assert_eq!(String::from_utf8(csv).expect("utf8"), "a,b\n1,\"x, y\"\n");
}
