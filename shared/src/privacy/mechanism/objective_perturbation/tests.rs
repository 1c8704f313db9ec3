//! Tests of the default ε-DP objective perturbation: calibration, the noise of both stages
//! (KS tests, and half-noise mutants the same tests reject), the coupling step of the proof, and
//! the release.

use super::*;
use crate::data::dataset::dot;
use crate::data::synthetic::{SyntheticSpec, generate};
use crate::learn::logistic::evaluate;
use crate::privacy::guarantee::NeighbourRelation;
use crate::util::seed::derived_rng;
use crate::util::stats::ks_test;
use statrs::distribution::{Beta, ContinuousCDF, Gamma as GammaDist};

fn pen(mu: f64, b: &[f64]) -> Penalty<'_> {
    Penalty {
        mu,
        linear: Some(b),
    }
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

fn norms(dim: usize, scale: f64, count: usize, seed: u64) -> Vec<f64> {
    let mut rng = NoiseSource::seeded(seed);
    (0..count)
        .map(|_| sample_gamma_ball(dim, scale, &mut rng))
        .map(|b| dot(&b, &b).sqrt())
        .collect()
}

/// KS p-value of `sample` against Gamma(dim, scale).
fn gamma_p(sample: &[f64], dim: usize, scale: f64) -> f64 {
    let reference = GammaDist::new(dim as f64, 1.0 / scale).expect("valid");
    ks_test(sample, |x| reference.cdf(x)).p_value
}

#[test]
fn calibration_splits_epsilon_and_follows_theorem_9_and_the_rule() {
    let m = ObjectivePerturbation::new(1.0, Lambda::Auto).expect("valid");
    let c = m.calibrate(600, 9).expect("calibrates");
    assert_eq!(c.epsilon_output, 0.01);
    assert_eq!(c.epsilon_objective, 0.99);
    let lambda = 8.0 * 3.0 / (600.0 * 0.99f64.powf(1.5));
    assert!((c.lambda - lambda).abs() < 1e-15);
    let rule = delta_rule::pure(600, 9, 0.99, c.lambda);
    assert_eq!((c.mu, c.epsilon_prime), (rule.mu, rule.epsilon_prime));
    assert!(c.mu >= c.lambda);
    let t9 = 0.99 - 2.0 * (0.25 / (600.0 * c.mu)).ln_1p();
    assert!((c.epsilon_prime - t9).abs() < 1e-15);
    assert_eq!(c.objective_scale, 2.0 / c.epsilon_prime);
    // The output stage: Q, B₀, Δ₁ = √d·2γ̃/μ and snapped Laplace at ε₂ (its float term inside).
    assert_eq!(
        c.output.noise_bound,
        c.objective_scale * (18.0 + NOISE_TAIL_SLACK)
    );
    assert_eq!(
        c.output.coordinate_bound,
        (1.0 + 1e-8 + c.output.noise_bound / 600.0) / c.mu
    );
    let widened = 1e-8 + SAMPLER_ACCURACY * c.output.noise_bound / 600.0;
    assert!((c.output.sensitivity - 3.0 * 2.0 * widened / c.mu).abs() < 1e-18);
    let snapped = c.output.calibration.mechanism;
    assert!(c.output.calibration.achieved <= 0.01);
    let float = 9.0 * crate::privacy::snapping::FLOAT_TERM * snapped.bound() / snapped.scale();
    assert!(
        (c.output.calibration.achieved - (c.output.sensitivity / snapped.scale() + float)).abs()
            < 1e-15
    );
    assert!(snapped.scale() >= c.output.sensitivity / 0.01);
    assert!(snapped.scale() < 1.01 * c.output.sensitivity / 0.01);
    assert!(snapped.bound() >= c.output.coordinate_bound);
    // A fixed λ is used as given.
    let fixed = ObjectivePerturbation::new(1.0, 0.3).expect("valid");
    assert_eq!(fixed.calibrate(600, 9).expect("calibrates").lambda, 0.3);
    // The cache keeps the first size's calibration and recomputes any other.
    assert_eq!(m.calibrate(600, 9), Ok(c));
    let other = m.calibrate(60, 9).expect("calibrates");
    assert_eq!(
        Ok(other),
        ObjectivePerturbation::new(1.0, Lambda::Auto)
            .expect("valid")
            .calibrate(60, 9)
    );
    assert!(other.lambda > c.lambda);
}

#[test]
fn objective_noise_norm_is_gamma_d_two_over_eps_prime() {
    let c = ObjectivePerturbation::new(0.7, 0.05)
        .expect("valid")
        .calibrate(60, 9)
        .expect("calibrates");
    let sample = norms(9, c.objective_scale, 4000, 1);
    assert!(gamma_p(&sample, 9, c.objective_scale) > 1e-3);
}

#[test]
fn half_objective_noise_is_rejected_by_the_same_test() {
    let c = ObjectivePerturbation::new(0.7, 0.05)
        .expect("valid")
        .calibrate(60, 9)
        .expect("calibrates");
    let sample = norms(9, c.objective_scale / 2.0, 4000, 2);
    assert!(gamma_p(&sample, 9, c.objective_scale) < 1e-6);
}

/// The output stage is snapped Laplace at the calibrated scale (χ² against the exact law of
/// the rounded, clamped output), and a half-scale mutant fails the same test.
#[test]
fn output_noise_is_snapped_laplace_at_the_calibrated_scale() {
    use crate::privacy::snapping::{SnappedLaplace, testing::snapped_chi_square};
    let c = ObjectivePerturbation::new(0.7, 0.05)
        .expect("valid")
        .calibrate(60, 9)
        .expect("calibrates");
    let m = c.output.calibration.mechanism;
    let x = 0.3 * c.output.coordinate_bound;
    let draws = |m: &SnappedLaplace, seed: u64| -> Vec<f64> {
        let mut rng = NoiseSource::seeded(seed);
        (0..4000)
            .map(|_| m.sample(x, &mut rng).expect("sample"))
            .collect()
    };
    let outputs = draws(&m, 3);
    assert!(
        outputs.iter().all(|y| (y / m.grid()).fract() == 0.0),
        "on the grid"
    );
    assert!(snapped_chi_square(&m, &outputs, x, m.scale()) > 1e-3);
    let half = SnappedLaplace::new(m.scale() / 2.0, m.bound()).expect("valid");
    assert!(snapped_chi_square(&m, &draws(&half, 4), x, m.scale()) < 1e-6);
}

#[test]
fn noise_directions_are_uniform_on_the_sphere() {
    // (u·e + 1)/2 ~ Beta((p−1)/2, (p−1)/2) for u uniform on S^{p−1} and a fixed unit e.
    let dim = 7;
    let mut rng = NoiseSource::seeded(5);
    let first: Vec<f64> = (0..4000)
        .map(|_| {
            let b = sample_gamma_ball(dim, 1.0, &mut rng);
            (b[0] / dot(&b, &b).sqrt() + 1.0) / 2.0
        })
        .collect();
    let beta = Beta::new(3.0, 3.0).expect("valid");
    assert!(ks_test(&first, |x| beta.cdf(x)).p_value > 1e-3);
    let biased: Vec<f64> = first.iter().map(|v| (v + 0.05).min(1.0)).collect();
    assert!(ks_test(&biased, |x| beta.cdf(x)).p_value < 1e-6);
}

/// The proof's coupling: with t = θ*(D, b₁) and b₁′ = −n(∇L(t; D′) + μt), t also minimises the
/// objective on D′ with b₁′, so the two computed minimisers are within 2γ/μ of each other.
#[test]
fn coupled_neighbours_have_computed_minimisers_within_two_gamma_over_mu() {
    let data = generate(
        &SyntheticSpec {
            dim: 6,
            train: 50,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(7, &[]),
    )
    .train;
    let m = ObjectivePerturbation::new(1.0, Lambda::Auto).expect("valid");
    let c = m.calibrate(data.len(), data.dim()).expect("calibrates");
    let n = data.len() as f64;
    let tight = SolverOptions {
        tolerance: 1e-13,
        ..SolverOptions::default()
    };
    let gamma = ObjectivePerturbation::solver_options();
    let mut noise = NoiseSource::seeded(8);
    for trial in 0..20 {
        let b = sample_gamma_ball(6, c.objective_scale, &mut noise);
        let t = minimise(&data, pen(c.mu, &b), tight).expect("fit").theta;
        let mut x = data.features().to_vec();
        let mut y = data.labels().to_vec();
        let i = trial % data.len();
        x[i * 6..(i + 1) * 6].copy_from_slice(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        x[i * 6 + trial % 6] = if trial % 2 == 0 { 1.0 } else { -1.0 };
        y[i] = -y[i];
        let neighbour = Dataset::new(x, y, 6);
        let grad = evaluate(&neighbour, &t, Penalty::ridge(c.mu), false).gradient;
        let b_prime: Vec<f64> = grad.iter().map(|g| -n * g).collect();
        let on_d = minimise(&data, pen(c.mu, &b), gamma).expect("fit").theta;
        let on_d_prime = minimise(&neighbour, pen(c.mu, &b_prime), gamma)
            .expect("fit")
            .theta;
        let gap = distance(&on_d, &on_d_prime);
        assert!(gap <= 2.0 * gamma.tolerance / c.mu, "trial {trial}: {gap}");
        // The coupling is not vacuous: the neighbour's own noise would move the minimiser.
        let uncoupled = minimise(&neighbour, pen(c.mu, &b), gamma)
            .expect("fit")
            .theta;
        let moved = distance(&on_d, &uncoupled);
        assert!(
            moved > 1e3 * gamma.tolerance / c.mu,
            "trial {trial}: {moved}"
        );
    }
}

#[test]
fn release_is_the_perturbed_minimiser_snapped() {
    let data = generate(
        &SyntheticSpec {
            train: 200,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(9, &[]),
    )
    .train;
    let m = ObjectivePerturbation::new(2.0, Lambda::Auto).expect("valid");
    let r = m
        .release(&data, &mut NoiseSource::seeded(10))
        .expect("release");
    let c = m.calibrate(200, 10).expect("calibrates");
    let mut rng = NoiseSource::seeded(10);
    let b1 = sample_gamma_ball(10, c.objective_scale, &mut rng);
    let fit = minimise(
        &data,
        Penalty {
            mu: c.mu,
            linear: Some(&b1),
        },
        SolverOptions::default(),
    )
    .expect("fit");
    let expected: Vec<f64> = fit
        .theta
        .iter()
        .map(|&t| {
            c.output
                .calibration
                .mechanism
                .sample(t, &mut rng)
                .expect("snapped")
        })
        .collect();
    assert_eq!(r.classifier.coefficients(), &expected[..]);
    assert_eq!(r.metadata.guarantee.epsilon, 2.0);
    assert_eq!(r.metadata.guarantee.delta, 0.0);
    assert_eq!(r.metadata.guarantee.relation, NeighbourRelation::ReplaceOne);
    assert_eq!(r.metadata.mechanism, NAME);
    assert_eq!(r.metadata.parameters["lambda"], c.lambda);
    assert_eq!(r.metadata.parameters["lambda_auto"], 1.0);
    assert_eq!(r.metadata.parameters["mu"], c.mu);
    let big = Dataset::new(vec![2.0, 0.0], vec![1.0], 2);
    assert!(matches!(
        m.release(&big, &mut NoiseSource::seeded(9)),
        Err(MechanismError::NormBoundViolated { .. })
    ));
}

#[test]
fn invalid_parameters_are_errors() {
    for (e, l, f) in [
        (0.0, Lambda::Auto, 0.01),
        (f64::NAN, Lambda::Auto, 0.01),
        (1.0, Lambda::Fixed(0.0), 0.01),
        (1.0, Lambda::Fixed(f64::INFINITY), 0.01),
        (1.0, Lambda::Auto, 0.0),
        (1.0, Lambda::Auto, 0.6),
        (1.0, Lambda::Auto, f64::NAN),
    ] {
        assert!(
            ObjectivePerturbation::with_output_fraction(e, l, f).is_err(),
            "{e} {l} {f}"
        );
    }
}
