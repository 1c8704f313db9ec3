//! Tests of the final model's candidates and selection, on planted cases.

use super::*;
use crate::aggregate::combiner::stacking::{directions, fit_stacking, stacked};
use rand::RngExt;
use rand_distr::StandardNormal;

const D: usize = 6;

/// The planted direction (unit norm, scaled to a strong signal).
fn truth() -> Vec<f64> {
    let t = [1.0, -2.0, 0.5, 1.5, -1.0, 0.0];
    let n = dot(&t, &t).sqrt();
    t.iter().map(|v| 12.0 * v / n).collect()
}

/// `n` rows with ‖x‖₂ ≤ 1 and labels drawn from the logistic model with parameter `truth()`.
fn data(n: usize, seed: u64) -> Dataset {
    let mut rng = derived_rng(seed, &[]);
    let theta = truth();
    let mut x = Vec::with_capacity(n * D);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..D)
            .map(|_| rng.sample::<f64, _>(StandardNormal) / (D as f64).sqrt())
            .collect();
        let norm = dot(&row, &row).sqrt().max(1.0);
        let row: Vec<f64> = row.iter().map(|v| v / norm).collect();
        let p = 1.0 / (1.0 + (-dot(&row, &theta)).exp());
        y.push(if rng.random::<f64>() < p { 1.0 } else { -1.0 });
        x.extend(row);
    }
    Dataset::new(x, y, D)
}

/// `m` experts of pure noise with large norms.
fn noise_experts(m: usize, seed: u64) -> Vec<LinearClassifier> {
    let mut rng = derived_rng(seed, &[]);
    (0..m)
        .map(|_| {
            LinearClassifier::new(
                (0..D)
                    .map(|_| 30.0 * rng.sample::<f64, _>(StandardNormal))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn folds_partition_the_rows_and_keep_both_classes() {
    let d = data(103, 1);
    let folds = stratified_folds(d.labels(), 5, &mut derived_rng(2, &[]));
    let mut all: Vec<usize> = folds.iter().flatten().copied().collect();
    all.sort_unstable();
    assert_eq!(all, (0..103).collect::<Vec<_>>(), "every row exactly once");
    for f in &folds {
        assert!((20..=21).contains(&f.len()), "{}", f.len());
        assert!(f.iter().any(|&i| d.label(i) > 0.0) && f.iter().any(|&i| d.label(i) < 0.0));
    }
    assert_eq!(complement(6, &[1, 4]), vec![0, 2, 3, 5]);
}

#[test]
fn one_perfect_expert_among_noise_is_used() {
    let train = data(80, 3);
    let test = data(4000, 4);
    let mut experts = noise_experts(5, 5);
    experts.insert(2, LinearClassifier::new(truth()));
    let f = choose_final(&experts, &train, &SelectionConfig::default()).expect("final");
    assert_ne!(f.chosen, Candidate::Local, "{:?}", f.cv);
    let chosen = f.classifier().accuracy(&test);
    let local = f.model(Candidate::Local).accuracy(&test);
    let bayes = LinearClassifier::new(truth()).accuracy(&test);
    assert!(chosen > local, "chosen {chosen} vs local {local}");
    assert!(chosen > bayes - 0.02, "chosen {chosen} vs Bayes {bayes}");
}

#[test]
fn when_every_expert_is_noise_the_final_model_is_local() {
    let train = data(150, 6);
    let f = choose_final(&noise_experts(6, 7), &train, &SelectionConfig::default()).expect("final");
    assert_eq!(f.chosen, Candidate::Local, "{:?}", f.cv);
    assert_eq!(f.classifier(), f.model(Candidate::Local));
    assert!(lambda_grid(&train).contains(&f.local_lambda));
}

#[test]
fn stacking_is_linear_in_x() {
    // The stacker's weight vector scores every row exactly as the stacked features do.
    let train = data(120, 8);
    let experts = noise_experts(3, 9);
    let u = directions(&experts);
    let theta = fit_stacking(&train, &u, 0.01, true).expect("fit");
    let w = fit_logistic(&stacked(&train, &u, true), 0.01)
        .expect("fit")
        .classifier();
    let z = stacked(&train, &u, true);
    for i in 0..train.len() {
        let a = theta.margin(train.row(i));
        let b = w.margin(z.row(i));
        assert!((a - b).abs() < 1e-9 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

#[test]
fn paired_gain_of_a_model_against_itself_is_zero_and_too_few_rows_are_refused() {
    let test = data(50, 10);
    let m = LinearClassifier::new(truth());
    assert_eq!(paired_gain(&m, &m, &test), (0.0, 0.0, 0.0));
    let flipped = LinearClassifier::new(truth().iter().map(|v| -v).collect());
    let (g, lo, hi) = paired_gain(&m, &flipped, &test);
    assert!(g > 0.0 && lo < g && g < hi);
    let tiny = data(7, 11);
    assert!(matches!(
        choose_final(&[], &tiny, &SelectionConfig::default()),
        Err(SelectError::TooFewRows { rows: 7, folds: 5 })
    ));
}

/// Rows that use little of the unit ball (the paper map's 1/√(d + 1)) need a small λ: the
/// grid follows the rows' scale, so the tuned model on rows shrunk 20-fold is the tuned model
/// on the original rows (issue 21: the old fixed grid stopped at 1e-4 and lost 4 points).
#[test]
fn the_lambda_grid_follows_the_rows_scale() {
    let train = data(600, 31);
    let test = data(4000, 32);
    let shrunk = |d: &Dataset, s: f64| {
        let x: Vec<f64> = (0..d.len())
            .flat_map(|i| d.row(i).iter().map(move |v| v * s))
            .collect();
        Dataset::new(x, d.labels().to_vec(), d.dim())
    };
    let (full, lambda) = tuned_logistic(&train, 5, 3).expect("tuned");
    let (small, small_lambda) = tuned_logistic(&shrunk(&train, 0.05), 5, 3).expect("tuned");
    // λ scales with the squared row scale, so the two fits are the same model.
    assert!(
        (small_lambda / lambda - 0.0025).abs() < 1e-12,
        "{lambda} {small_lambda}"
    );
    assert!(small_lambda < 1e-4, "below the old grid: {small_lambda}");
    let (a, b) = (full.accuracy(&test), small.accuracy(&shrunk(&test, 0.05)));
    assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    // The grid spans scikit-learn's C range, largest λ first.
    let grid = lambda_grid(&train);
    assert_eq!(grid.len(), 17);
    assert!(grid.windows(2).all(|w| w[0] > w[1]));
    assert!((grid[0] / grid[16] - 1e8).abs() < 1e-3 * 1e8);
}
