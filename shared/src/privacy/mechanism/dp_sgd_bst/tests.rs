//! Tests of BST's DP-SGD: line 1 and the accountant, the lattice noise against N(0, σ²) with an
//! under-noised mutant, the black-box audit, the optimiser and the refusals.

use super::*;
use crate::data::synthetic::{SyntheticSpec, generate};
use crate::util::fastmath::sigmoid;
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::util::seed::derived_rng;
use crate::util::stats::ks_test;
use statrs::distribution::{ContinuousCDF, Normal};

#[test]
fn noise_variance_is_line_1_with_log_n_over_delta() {
    let m = BstDpSgd::new(0.5, 1e-5, 0.01).expect("valid");
    let expected = 32.0 * 100.0 * 100.0 * (100.0f64 / 1e-5).ln() * (1e5f64).ln() / 0.25;
    assert!((m.noise_variance(100) - expected).abs() < 1e-9 * expected);
    // For n ≤ 2 the seed's log(2/δ) is the larger and is used.
    let seed = 32.0 * (2.0f64 / 1e-5).ln() * (1e5f64).ln() / 0.25;
    assert!((m.noise_variance(1) - seed).abs() < 1e-9 * seed);
    assert!((m.step_size(100, 4) - 1.0 / (0.01 * 100.0 * 4.0)).abs() < 1e-15);
}

/// Over the paper's range the accountant accepts line 1's σ as it is, with room to spare:
/// the discrete noise is never below the paper's.
#[test]
fn line_1_meets_the_accountant_at_every_size() {
    for epsilon in [0.01, 0.1, 0.5, 1.0] {
        for delta in [1e-3, 1e-5, 1e-9] {
            let m = BstDpSgd::new(epsilon, delta, 0.01).expect("valid");
            for n in [1, 2, 3, 10, 100, 1000, 10_000] {
                let line1 = m.noise_std(n) / n as f64;
                assert_eq!(m.noise_multiplier(n), line1, "{epsilon} {delta} {n}");
                let accounted = m.accounted_epsilon(n, line1);
                assert!(accounted < 0.9 * epsilon, "{epsilon} {delta} {n}: {accounted}");
            }
        }
    }
}

/// Where line 1 is not enough (ε far outside the paper's range), the accountant raises the
/// noise to the smallest multiplier it accepts.
#[test]
fn the_accountant_raises_noise_line_1_cannot_pay_for() {
    let m = BstDpSgd::unchecked(1000.0, 1e-5, 0.01).expect("valid");
    let line1 = m.noise_std(300) / 300.0;
    let raised = m.noise_multiplier(300);
    assert!(raised > 10.0 * line1, "{raised} {line1}");
    assert!(m.accounted_epsilon(300, raised) <= 1000.0);
    assert!(m.accounted_epsilon(300, raised * (1.0 - 1e-5)) > 1000.0);
    // The accountant is monotone: more noise, less ε.
    assert!(m.accounted_epsilon(300, 2.0 * raised) < m.accounted_epsilon(300, raised));
}

/// Residuals (noisy − exact gradient)/σ on the lattice `lattice` (the calibrated one or a
/// mutant), with σ the calibrated standard deviation.
fn standardised_residuals(lattice: &LatticeSum, sigma: f64, draws: usize, seed: u64) -> Vec<f64> {
    let theta = [0.4, -0.2, 0.7];
    let x = [0.5, 0.5, -0.5];
    let (n, lambda) = (50.0, 0.1);
    let coef = -sigmoid(-dot(&theta, &x));
    let exact: Vec<f64> = x
        .iter()
        .zip(&theta)
        .map(|(xj, tj)| n * (coef * xj + lambda * tj))
        .collect();
    let mut rng = NoiseSource::seeded(seed);
    let (mut step, mut out) = (Step::new(3), [0.0; 3]);
    (0..draws)
        .flat_map(|_| {
            step.noisy_gradient((&theta, &x, 1.0), n, lambda, lattice, &mut rng, &mut out);
            out.iter()
                .zip(&exact)
                .map(|(a, b)| (a - b) / sigma)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn calibrated() -> (LatticeSum, f64) {
    let m = BstDpSgd::new(1.0, 1e-5, 0.1).expect("valid");
    let lattice = m.lattice(50, 3).expect("lattice");
    let sigma = 50.0 * lattice.noise_std();
    assert!(sigma >= m.noise_std(50) && sigma < m.noise_std(50) * (1.0 + 1e-5));
    (lattice, sigma)
}

#[test]
fn noise_is_gaussian_with_the_paper_variance() {
    let (lattice, sigma) = calibrated();
    let r = standardised_residuals(&lattice, sigma, 1500, 1);
    let normal = Normal::new(0.0, 1.0).expect("valid");
    assert!(ks_test(&r, |x| normal.cdf(x)).p_value > 1e-3);
}

#[test]
fn under_noised_variant_fails_the_same_check() {
    let (lattice, sigma) = calibrated();
    let mutant = lattice.with_cell_variance(lattice.cell_variance() / 4.0);
    let r = standardised_residuals(&mutant, sigma, 1500, 2);
    let normal = Normal::new(0.0, 1.0).expect("valid");
    assert!(ks_test(&r, |x| normal.cdf(x)).p_value < 1e-6);
}

/// θ released on D = {(0, +1), (1, +1)} (`replaced` false) or on D′ = {(0, +1), (−1, +1)}
/// (replace-one): the two records' gradients differ by exactly 1 at every θ
/// (σ(−θ) + σ(θ) = 1), the largest difference logistic gradients on the unit ball allow, and
/// D′'s pushes θ down.
fn audit_statistic(m: &BstDpSgd, replaced: bool, noise: &mut NoiseSource) -> f64 {
    let x = if replaced { -1.0 } else { 1.0 };
    let data = Dataset::new(vec![0.0, x], vec![1.0, 1.0], 1);
    m.release(&data, noise).expect("release").classifier.coefficients()[0]
}

#[test]
fn an_empirical_audit_stays_below_the_claim_and_catches_a_miscalibrated_run() {
    use crate::privacy::mechanism::audit::epsilon_lower;
    let audit = |m: &BstDpSgd, seed| {
        epsilon_lower(
            |noise| audit_statistic(m, false, noise),
            |noise| audit_statistic(m, true, noise),
            (1e-5, 20_000),
            seed,
        )
    };
    let honest = BstDpSgd::new(1.0, 1e-5, 1.0).expect("valid");
    let lower = audit(&honest, 71);
    assert!(lower <= 1.0, "ε_lower = {lower} > the claimed 1");
    // A run with a two-hundredth of the calibrated noise under the same claim is caught.
    let caught = audit(&honest.with_noise_factor(1.0 / 200.0), 81);
    assert!(caught > 1.0, "ε_lower = {caught} for the miscalibrated run");
}

#[test]
fn guarantee_is_replace_one_and_large_epsilon_learns() {
    let d = generate(
        &SyntheticSpec {
            train: 300,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(3, &[]),
    );
    // The optimiser with little noise: ε = 1000 is outside the paper's range, so it is built
    // without the range check, which `new` enforces (checked below).
    assert!(BstDpSgd::new(1000.0, 1e-5, 0.01).is_err());
    let m = BstDpSgd::unchecked(1000.0, 1e-5, 0.01).expect("valid");
    assert_eq!(
        m.guarantee(),
        PrivacyGuarantee {
            epsilon: 1000.0,
            delta: 1e-5,
            relation: NeighbourRelation::ReplaceOne
        }
    );
    assert!(m.rdp().is_none());
    let r = m
        .release(&d.train, &mut NoiseSource::seeded(4))
        .expect("release");
    let acc = r.classifier.accuracy(&d.test);
    assert!(acc > 0.85, "test accuracy {acc}");
    assert!(
        dot(r.classifier.coefficients(), r.classifier.coefficients()).sqrt()
            <= m.radius() * (1.0 + 1e-12)
    );
    let p = &r.metadata.parameters;
    assert_eq!(p["iterations"], 90_000.0);
    assert_eq!(p["noise_multiplier"], m.noise_multiplier(300));
    assert!(p["accounted_epsilon"] <= 1000.0);
    assert_eq!(r.metadata.proof, ProofCoverage::NoiseAsSampled);
    assert!(!p.contains_key("output_grid"));
}

#[test]
fn too_many_iterations_is_refused_from_the_size_alone() {
    let m = BstDpSgd::new(1.0, 1e-5, 0.1).expect("valid");
    let refusal = MechanismError::TooManyIterations {
        mechanism: NAME,
        iterations: 100_020_001,
        cap: MAX_ITERATIONS,
    };
    assert_eq!(m.check_size(10_001, 1), Err(refusal.clone()));
    assert_eq!(m.check_size(10_000, 30), Ok(()));
    let n = 10_001;
    let data = Dataset::new(vec![0.5; n], vec![1.0; n], 1);
    assert_eq!(m.release(&data, &mut NoiseSource::seeded(1)), Err(refusal));
}

#[test]
fn a_release_is_predicted_to_take_its_steps() {
    let m = BstDpSgd::new(1.0, 1e-5, 0.1).expect("valid");
    let small = m.predicted_seconds(10, 5).expect("timed");
    let large = m.predicted_seconds(1000, 5).expect("timed");
    assert!(small > 0.0 && large > 1000.0 * small, "{small} {large}");
}

#[test]
fn invalid_parameters_are_errors() {
    for (e, d, l) in [
        (0.0, 1e-5, 0.1),
        (1.0, 0.0, 0.1),
        (1.0, 1.0, 0.1),
        (1.0, 1e-5, 0.0),
        (f64::INFINITY, 1e-5, 0.1),
    ] {
        assert!(BstDpSgd::new(e, d, l).is_err(), "{e} {d} {l}");
    }
}
