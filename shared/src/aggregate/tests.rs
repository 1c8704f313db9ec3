//! Tests of mirror averaging against its reference, its determinism and its comparators.

use super::*;
use crate::data::dataset::dot;
use crate::data::synthetic::{SyntheticSpec, generate};
use crate::learn::logistic::logistic_loss;
use crate::util::seed::derived_rng;
use rand::RngExt;

#[test]
fn blocked_parallel_weights_match_the_reference() {
    let d = generate(
        &SyntheticSpec {
            train: 2500,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(1, &[]),
    );
    let mut rng = derived_rng(2, &[]);
    let experts: Vec<Vec<f64>> = (0..37)
        .map(|k| {
            d.normal
                .iter()
                .map(|w| w * (k as f64 / 10.0) + rand::RngExt::random_range(&mut rng, -0.5..0.5))
                .collect()
        })
        .collect();
    let order: Vec<usize> = (0..d.train.len()).rev().collect();
    let ma = MirrorAveraging::new(3.0).expect("valid");
    let fast = ma.mixing_weights(&experts, &d.train, &order).expect("ok");
    let slow = reference_weights(&experts, &d.train, &order, 3.0);
    assert!((fast.iter().sum::<f64>() - 1.0).abs() < 1e-12);
    for (a, b) in fast.iter().zip(&slow) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn concentrates_on_a_perfect_expert_among_noise() {
    let d = generate(&SyntheticSpec::default(), &mut derived_rng(3, &[]));
    let mut rng = derived_rng(4, &[]);
    let mut experts: Vec<Vec<f64>> = (0..50)
        .map(|_| {
            (0..10)
                .map(|_| rand::RngExt::random_range(&mut rng, -3.0..3.0))
                .collect()
        })
        .collect();
    // A scaled true normal: near-zero loss on every point.
    experts.insert(17, d.normal.iter().map(|w| w * 200.0).collect());
    let agg = MirrorAveraging::new(3.0)
        .expect("valid")
        .aggregate(&experts, &d.train, &mut rng)
        .expect("ok");
    assert!(
        agg.mixing_weights[17] > 0.99,
        "λ of the perfect expert = {}",
        agg.mixing_weights[17]
    );
    assert!(agg.classifier.accuracy(&d.test) > 0.99);
    assert_eq!(agg.best_single(), 17);
    assert_eq!(best_single(&experts, &d.train).expect("ok"), 17);
    let direct: f64 = (0..d.train.len())
        .map(|i| logistic_loss(dot(d.train.row(i), &experts[3]), d.train.label(i)))
        .sum();
    assert!((agg.risks[3] - direct).abs() < 1e-9 * direct);
}

#[test]
fn equal_experts_get_equal_weights() {
    let d = generate(
        &SyntheticSpec {
            train: 300,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(5, &[]),
    );
    let e: Vec<f64> = (0..10).map(|i| i as f64 * 0.1 - 0.3).collect();
    let experts = vec![e.clone(); 4];
    let lambda = MirrorAveraging::new(3.0)
        .expect("valid")
        .mixing_weights_shuffled(&experts, &d.train, &mut derived_rng(6, &[]))
        .expect("ok");
    for l in &lambda {
        assert!((l - 0.25).abs() < 1e-15);
    }
}

#[test]
fn result_is_independent_of_thread_count() {
    let d = generate(
        &SyntheticSpec {
            train: 3000,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(7, &[]),
    );
    let mut rng = derived_rng(8, &[]);
    let experts: Vec<Vec<f64>> = (0..20)
        .map(|_| {
            (0..10)
                .map(|_| rand::RngExt::random_range(&mut rng, -2.0..2.0))
                .collect()
        })
        .collect();
    let order: Vec<usize> = (0..d.train.len()).collect();
    let ma = MirrorAveraging::new(3.0).expect("valid");
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool")
        .install(|| ma.mixing_weights(&experts, &d.train, &order))
        .expect("ok");
    let three = rayon::ThreadPoolBuilder::new()
        .num_threads(3)
        .build()
        .expect("pool")
        .install(|| ma.mixing_weights(&experts, &d.train, &order))
        .expect("ok");
    assert_eq!(one, three);
}

#[test]
fn bad_inputs_are_errors() {
    let d = Dataset::new(vec![0.5, 0.5], vec![1.0], 2);
    let ma = MirrorAveraging::new(3.0).expect("valid");
    assert!(
        !MirrorAveraging::new(2.0)
            .expect("valid")
            .covered_by_oracle_inequality()
    );
    assert!(
        MirrorAveraging::new(3.0)
            .expect("valid")
            .covered_by_oracle_inequality()
    );
    assert_eq!(
        MirrorAveraging::new(0.0).expect_err("must fail"),
        AggregateError::InvalidBeta(0.0)
    );
    assert!(
        MirrorAveraging::new(f64::NAN)
            .expect_err("must fail")
            .to_string()
            .contains("beta")
    );
    assert_eq!(
        ma.mixing_weights::<Vec<f64>>(&[], &d, &[0])
            .expect_err("must fail"),
        AggregateError::NoExperts
    );
    assert_eq!(
        ma.mixing_weights(&[vec![1.0]], &d, &[0])
            .expect_err("must fail"),
        AggregateError::DimensionMismatch {
            index: 0,
            found: 1,
            expected: 2
        }
    );
    assert_eq!(
        ma.mixing_weights(&[vec![1.0, f64::NAN]], &d, &[0])
            .expect_err("must fail"),
        AggregateError::NonFinite(0)
    );
    assert_eq!(
        ma.mixing_weights(&[vec![1.0, 1.0]], &d, &[1])
            .expect_err("must fail"),
        AggregateError::BadOrder(1)
    );
}

#[test]
fn comparators() {
    let experts = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![-1.0, 0.0]];
    assert_eq!(uniform_average(&experts).coefficients(), &[0.0, 1.0 / 3.0]);
    let d = Dataset::new(vec![0.9, 0.1, -0.8, 0.0], vec![1.0, -1.0], 2);
    assert_eq!(best_single(&experts, &d).expect("ok"), 0);
}

/// Eq. 15–16 from precomputed losses agree with the direct transcription.
#[test]
fn weights_from_losses_match_the_reference() {
    let d = generate(
        &SyntheticSpec {
            train: 300,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(77, &[]),
    );
    let mut rng = derived_rng(78, &[]);
    let experts: Vec<Vec<f64>> = (0..7)
        .map(|k| {
            d.normal
                .iter()
                .map(|w| w * (k as f64 / 3.0) + rand::RngExt::random_range(&mut rng, -0.5..0.5))
                .collect()
        })
        .collect();
    let order: Vec<usize> = (0..d.train.len()).rev().collect();
    let losses: Vec<f64> = order
        .iter()
        .flat_map(|&t| {
            let (x, y) = (d.train.row(t), d.train.label(t));
            experts.iter().map(move |e| logistic_loss(dot(e, x), y))
        })
        .collect();
    let got = MirrorAveraging::new(3.0)
        .expect("beta")
        .mixing_weights_from_losses(&losses, experts.len())
        .expect("weights");
    let want = reference_weights(&experts, &d.train, &order, 3.0);
    for (a, b) in got.iter().zip(&want) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
}

/// Σ_t λ^(t) one row at a time over the experts within the cutoff, as the sweep computed it
/// before its normalisers went four rows wide: [`mirror::softmax_sums`] must give these bits.
fn softmax_sums_row_by_row(cumulative: &[f64], mins: &[f64], m: usize, beta: f64) -> Vec<f64> {
    let mut acc = vec![0.0; m];
    let cutoff = mirror::NEGLIGIBLE_EXPONENT * beta;
    for (s, &min) in cumulative.chunks(m).zip(mins) {
        let live: Vec<usize> = (0..m).filter(|&j| s[j] - min <= cutoff).collect();
        let w: Vec<f64> = live
            .iter()
            .map(|&j| crate::util::fastmath::exp_nonpositive((min - s[j]) * (1.0 / beta)))
            .collect();
        let mut z = 0.0;
        for v in &w {
            z += v;
        }
        let inv = 1.0 / z;
        for (&j, v) in live.iter().zip(&w) {
            acc[j] += v * inv;
        }
    }
    acc
}

#[test]
fn softmax_sums_have_the_row_by_row_bits() {
    let mut rng = derived_rng(41, &[]);
    // Experts fewer than, equal to and beyond a lane of eight; rows that end a group of four
    // part-way; spreads that leave every expert live, some, or one; and one (spread 5000: about
    // 3 % of experts within the cutoff) where many lanes are beyond it for every row of a group
    // and are skipped.
    for (m, rows, spread) in [
        (1, 3, 1.0),
        (7, 5, 300.0),
        (8, 4, 20.0),
        (9, 9, 500.0),
        (99, 50, 2.0),
        (1000, 37, 400.0),
        (1000, 9, 5000.0),
    ] {
        let cumulative: Vec<f64> = (0..m * rows)
            .map(|_| rng.random::<f64>() * spread)
            .collect();
        let mins: Vec<f64> = cumulative
            .chunks(m)
            .map(|row| row.iter().copied().fold(f64::INFINITY, f64::min))
            .collect();
        let got = mirror::softmax_sums(&cumulative, &mins, m, 3.0);
        let want = softmax_sums_row_by_row(&cumulative, &mins, m, 3.0);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got),
            bits(&want),
            "{m} experts, {rows} rows, spread {spread}"
        );
    }
}
