//! Tests of the proven Langevin learner: the curve against the exact Gaussian chain, the shift
//! recursion, the chain's noise (with an under-noised mutant), an empirical privacy audit (with
//! a miscalibrated mutant), calibration, errors and utility on Diabetes.

use super::*;
use crate::data::bundled::Bundled;
use crate::privacy::guarantee::NeighbourRelation;
use crate::privacy::mechanism::{MechanismKind, ObjectivePerturbation};
use crate::util::stats::ks_test;
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};

/// The exact Rényi divergence of order α between the outputs of the linear chain
/// θ ← cθ + b + N(0, σ²) on two neighbours whose offsets b differ by `gap`, computed by iterating
/// the means and variances (independently of the closed forms): α·Δm²/(2v).
fn linear_chain_divergence(alpha: f64, gap: f64, c: f64, sigma: f64, steps: u64) -> f64 {
    let (mut dm, mut v) = (0.0, 0.0);
    for _ in 0..steps {
        dm = c * dm + gap;
        v = c * c * v + sigma * sigma;
    }
    alpha * dm * dm / (2.0 * v)
}

#[test]
fn the_curve_is_attained_by_the_worst_case_linear_chain() {
    for &(s, c, sigma) in &[(0.1, 0.9, 1.0), (2.0, 0.3, 0.7), (1e-3, 0.999, 0.01)] {
        for steps in [1u64, 2, 5, 40, 300] {
            for alpha in [1.5, 2.0, 10.0, 64.0] {
                let exact = linear_chain_divergence(alpha, s, c, sigma, steps);
                let bound = alpha * chain_rho(s, c, sigma, Some(steps));
                assert!(
                    (exact - bound).abs() <= 1e-9 * bound,
                    "s {s} c {c} K {steps} α {alpha}: exact {exact} bound {bound}"
                );
                // A smaller shift (a milder neighbour) stays strictly below.
                let milder = linear_chain_divergence(alpha, 0.6 * s, c, sigma, steps);
                assert!(milder < bound);
                assert!(bound <= alpha * chain_rho(s, c, sigma, None) * (1.0 + 1e-12));
            }
        }
        // K → ∞: the exact divergence tends to the limit the mechanism is calibrated with.
        let far = linear_chain_divergence(2.0, s, c, sigma, 100_000);
        let limit = 2.0 * chain_rho(s, c, sigma, None);
        assert!((far - limit).abs() <= 1e-9 * limit, "{far} vs {limit}");
    }
}

#[test]
fn without_contraction_the_curve_is_k_gaussian_mechanisms() {
    let (s, sigma) = (0.3, 1.3);
    for steps in [1u64, 7, 1000] {
        let gaussian = steps as f64 * s * s / (2.0 * sigma * sigma);
        assert_eq!(chain_rho(s, 1.0, sigma, Some(steps)), gaussian);
        let near = chain_rho(s, 1.0 - 1e-9, sigma, Some(steps));
        assert!(
            (near - gaussian).abs() <= 1e-5 * gaussian,
            "{near} vs {gaussian}"
        );
    }
    assert_eq!(growth(1.0, None), f64::INFINITY);
    assert_eq!(growth(0.0, Some(3)), 1.0);
}

#[test]
fn the_bound_increases_in_k_to_its_limit() {
    for c in [0.1, 0.5, 0.9, 0.999] {
        let mut last = 0.0;
        for steps in 1..200 {
            let g = growth(c, Some(steps));
            assert!(g >= last, "c {c} K {steps}");
            assert!(g <= growth(c, None) * (1.0 + 1e-12));
            last = g;
        }
    }
}

#[test]
fn optimal_shifts_are_feasible_and_give_the_closed_form() {
    let (s, sigma) = (0.05, 0.4);
    for c in [0.2, 0.7, 0.95, 0.9999] {
        for steps in [1u64, 3, 50, 2000] {
            let a = optimal_shifts(s, c, steps);
            assert_eq!(a.len() as u64, steps);
            // z_{k+1} = c z_k + s − a_k from z₀ = 0 stays ≥ 0 and ends at 0.
            // (Tolerances are relative to the largest shift carried: rounding accumulates.)
            let (mut z, mut top): (f64, f64) = (0.0, s);
            for (k, ak) in a.iter().enumerate() {
                assert!(*ak >= 0.0);
                z = c * z + s - ak;
                top = top.max(z);
                assert!(z >= -1e-12 * top, "c {c} K {steps}: z_{} = {z}", k + 1);
            }
            assert!(z.abs() <= 1e-12 * top, "z_K = {z}");
            let cost: f64 = a.iter().map(|x| x * x).sum::<f64>() / (2.0 * sigma * sigma);
            let rho = chain_rho(s, c, sigma, Some(steps));
            assert!((cost - rho).abs() <= 1e-9 * rho, "{cost} vs {rho}");
            // Another feasible choice (a_k = s: no shift carried) costs at least as much.
            let naive = steps as f64 * s * s / (2.0 * sigma * sigma);
            assert!(naive >= rho * (1.0 - 1e-12));
        }
    }
}

fn mechanism(epsilon: f64, lambda: f64) -> Langevin {
    Langevin::with_defaults(epsilon, 1e-5, lambda).expect("valid")
}

#[test]
fn calibration_meets_the_target_for_any_step_count() {
    let mut last_sigma = f64::INFINITY;
    for epsilon in [0.1, 0.5, 1.0, 2.0, 5.0, 20.0] {
        let m = mechanism(epsilon, 0.01);
        let curve = m.rdp().expect("an RDP curve");
        let got = curve.epsilon(1e-5).expect("valid");
        assert!(
            got.epsilon <= epsilon && got.epsilon > 0.999 * epsilon,
            "{got:?}"
        );
        assert_eq!(got, m.accounted_epsilon());
        let s = m.schedule(600, 9).expect("valid");
        assert!(s.rho() <= s.rho_limit() && s.rho_limit() <= m.rho());
        assert!(
            s.rho_limit() >= m.rho() * (1.0 - 1e-12),
            "σ is not larger than needed"
        );
        // The chain's own curve at K steps converts to at most the target.
        assert!(
            s.curve()
                .expect("valid")
                .epsilon(1e-5)
                .expect("valid")
                .epsilon
                <= epsilon
        );
        assert!(s.noise_std < last_sigma, "larger ε, smaller σ");
        last_sigma = s.noise_std;
        assert!(s.bias_factor() <= DEFAULT_TOLERANCE);
        assert!(s.contraction > 0.0 && s.contraction < 1.0);
        assert_eq!(s.step_size, 1.0 / (0.25 + 0.01));
        assert_eq!(s.shift, 2.0 * s.step_size / 600.0);
    }
    // The stationary std of the linear part equals Gaussian output perturbation's √2/(nλ√ρ).
    let m = mechanism(1.0, 0.01);
    let s = m.schedule(600, 9).expect("valid");
    let stationary = s.noise_std / (1.0 - s.contraction * s.contraction).sqrt();
    let output = 2f64.sqrt() / (600.0 * 0.01 * m.rho().sqrt());
    assert!((stationary - output).abs() <= 1e-9 * output);
    // A tiny λ needs more steps than the cap: K is capped, the guarantee is unchanged.
    let tiny = mechanism(1.0, 1e-9).schedule(600, 9).expect("valid");
    assert_eq!(tiny.steps, MAX_STEPS);
    assert!(tiny.rho_limit() <= m.rho());
}

#[test]
fn bad_parameters_are_typed_errors() {
    let invalid = |r: Result<Langevin, MechanismError>, name: &str| match r {
        Err(MechanismError::InvalidParameter { name: n, .. }) => assert_eq!(n, name),
        other => panic!("{name}: {other:?}"),
    };
    invalid(Langevin::with_defaults(1.0, 0.0, 0.01), "delta");
    invalid(Langevin::with_defaults(1.0, 1.0, 0.01), "delta");
    invalid(Langevin::with_defaults(0.0, 1e-5, 0.01), "epsilon");
    invalid(Langevin::with_defaults(f64::NAN, 1e-5, 0.01), "epsilon");
    invalid(Langevin::with_defaults(1.0, 1e-5, 0.0), "lambda");
    invalid(Langevin::with_defaults(1.0, 1e-5, -0.1), "lambda");
    invalid(Langevin::new(1.0, 1e-5, 0.01, 1.5, 1e-6), "step_scale");
    invalid(Langevin::new(1.0, 1e-5, 0.01, 1.0, 1.0), "tolerance");
    let raw = |n, l, eta, sigma, k| match ChainSchedule::raw(n, l, eta, sigma, k) {
        Err(MechanismError::InvalidParameter { name, .. }) => name,
        other => panic!("{other:?}"),
    };
    assert_eq!(raw(0, 0.1, 1.0, 1.0, 10), "n");
    assert_eq!(raw(10, 0.0, 1.0, 1.0, 10), "lambda");
    assert_eq!(raw(10, 0.1, 5.0, 1.0, 10), "step_size");
    assert_eq!(raw(10, 0.1, 1.0, 0.0, 10), "noise");
    assert_eq!(raw(10, 0.1, 1.0, 1.0, 0), "steps");
    assert!(ChainSchedule::raw(10, 0.1, ChainSchedule::max_step_size(0.1), 1.0, 1).is_ok());
    // Through the kind: δ = 0 is refused, unknown options are errors.
    assert!(MechanismKind::Langevin.build(1.0, 0.0, 0.01).is_err());
    let mut o = crate::privacy::mechanism::Options::new();
    o.insert("steps".into(), 10.0);
    assert!(matches!(
        MechanismKind::Langevin.build_with(1.0, 1e-5, 0.01, &o),
        Err(MechanismError::UnknownOption { .. })
    ));
    // Data outside the unit ball is refused.
    let far = Dataset::new(vec![2.0], vec![1.0], 1);
    assert!(matches!(
        mechanism(1.0, 0.1).release(&far, &mut NoiseSource::seeded(1)),
        Err(MechanismError::NormBoundViolated { .. })
    ));
}

/// `n` rows of dimension 2 with x = 0: the logistic gradient vanishes and the chain is exactly
/// θ ← cθ + N(0, σ²I) from 0, so θ_K ~ N(0, σ²(1 − c^{2K})/(1 − c²) I).
fn zero_rows(n: usize) -> Dataset {
    let y = (0..n)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    Dataset::new(vec![0.0; 2 * n], y, 2)
}

/// Coordinates of `draws` chains run with `schedule` (its σ possibly altered), standardised by
/// the variance the honest schedule `honest` implies.
fn standardised(honest: &ChainSchedule, schedule: &ChainSchedule, draws: usize) -> Vec<f64> {
    let c = honest.contraction;
    let k = honest.steps as f64;
    let var = honest.noise_std.powi(2) * (1.0 - c.powf(2.0 * k)) / (1.0 - c * c);
    let data = zero_rows(honest.n);
    let mut noise = NoiseSource::seeded(21);
    (0..draws)
        .flat_map(|_| {
            schedule
                .run(&data, &mut noise, &Stop::never())
                .expect("runs")
        })
        .map(|t| t / var.sqrt())
        .collect()
}

/// Two-sided p-value of Σz² against χ²(len).
fn chi_square_p(z: &[f64]) -> f64 {
    let stat: f64 = z.iter().map(|v| v * v).sum();
    let cdf = ChiSquared::new(z.len() as f64).expect("valid").cdf(stat);
    2.0 * cdf.min(1.0 - cdf)
}

#[test]
fn the_chain_noise_has_the_linear_chain_variance() {
    let m = mechanism(1.0, 0.3);
    let honest = m.schedule(5, 2).expect("valid");
    assert!(honest.steps > 5);
    let z = standardised(&honest, &honest, 2000);
    let p = chi_square_p(&z);
    assert!(p > 1e-3, "χ² p = {p}");
    let normal = Normal::new(0.0, 1.0).expect("valid");
    let ks = ks_test(&z, |x| normal.cdf(x));
    assert!(ks.p_value > 1e-3, "KS p = {}", ks.p_value);
    // The release path draws the same chain.
    let data = zero_rows(5);
    let r = m
        .release(&data, &mut NoiseSource::seeded(21))
        .expect("release");
    let mut first = honest
        .run(&data, &mut NoiseSource::seeded(21), &Stop::never())
        .expect("runs");
    // Rounded to the public output grid, as every real-arithmetic release is.
    crate::privacy::mechanism::output_grid::round_to_output_grid(&mut first);
    assert_eq!(r.classifier.coefficients(), first.as_slice());
}

#[test]
fn an_under_noised_chain_fails_the_variance_test() {
    let honest = mechanism(1.0, 0.3).schedule(5, 2).expect("valid");
    let mutant = ChainSchedule {
        noise_std: honest.noise_std / 2.0,
        ..honest
    };
    let z = standardised(&honest, &mutant, 2000);
    let p = chi_square_p(&z);
    assert!(p < 1e-6, "χ² p = {p}");
}

/// One release of `m` on the one-row dataset {(x = 1, y)}: its coefficient.
fn release_on(m: &Langevin, y: f64, noise: &mut NoiseSource) -> f64 {
    let data = Dataset::new(vec![1.0], vec![y], 1);
    m.release(&data, noise).expect("release").classifier.coefficients()[0]
}

/// The audit ([`crate::privacy::mechanism::audit`]) between the worst-case neighbours
/// {(1, +1)} and {(1, −1)} (replace-one, n = 1), on 20,000 releases of each.
fn audit_epsilon_lower(m: &Langevin, delta: f64, seed: u64) -> f64 {
    crate::privacy::mechanism::audit::epsilon_lower(
        |noise| release_on(m, 1.0, noise),
        |noise| release_on(m, -1.0, noise),
        (delta, 20_000),
        seed,
    )
}

#[test]
fn an_empirical_audit_stays_below_the_claim_and_catches_a_miscalibrated_chain() {
    let claimed = 1.0;
    let honest = mechanism(claimed, 0.5);
    let lower = audit_epsilon_lower(&honest, 1e-5, 31);
    assert!(lower <= claimed, "ε_lower = {lower} > claimed {claimed}");
    // A chain calibrated for ε = 40 but claiming ε = 1: the same audit exceeds the claim.
    let mutant = mechanism(40.0, 0.5);
    let caught = audit_epsilon_lower(&mutant, 1e-5, 41);
    assert!(
        caught > claimed,
        "ε_lower = {caught} for the miscalibrated chain"
    );
}

#[test]
fn releases_carry_their_curve_and_parameters() {
    let d = Dataset::new(
        vec![0.6, 0.0, -0.5, 0.5, 0.1, -0.9],
        vec![1.0, -1.0, 1.0],
        2,
    );
    let m = MechanismKind::Langevin
        .build(1.0, 1e-5, crate::privacy::mechanism::Lambda::Auto)
        .expect("valid");
    assert!(m.is_proven());
    assert_eq!(m.name(), "langevin");
    assert_eq!(m.guarantee().relation, NeighbourRelation::ReplaceOne);
    let eps = m
        .rdp()
        .expect("a curve")
        .epsilon(1e-5)
        .expect("valid")
        .epsilon;
    assert!(eps <= 1.0 && eps > 0.99);
    let a = m.release(&d, &mut NoiseSource::seeded(5)).expect("release");
    let b = m.release(&d, &mut NoiseSource::seeded(5)).expect("release");
    assert_eq!(a, b, "deterministic given the seed");
    assert!(a.metadata.seeded && a.metadata.proven);
    let p = &a.metadata.parameters;
    assert_eq!(p["lambda_auto"], 1.0);
    assert_eq!(
        p["lambda"],
        AutoRule::Sqrt { constant: 60.0 }.lambda(3, 2, 1.0)
    );
    assert!(p["rho_steps"] <= p["rho_limit"] && p["rho_limit"] <= p["rho"]);
    assert!(p["steps"] >= 1.0 && p["bias_factor"] <= DEFAULT_TOLERANCE);
    assert!(m.predicted_seconds(3, 2).is_some_and(|s| s >= 0.0));
}

#[test]
fn a_stopped_release_releases_nothing() {
    use crate::util::stop::Stopped;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let d = zero_rows(4);
    let stop = Stop::on_flag(Arc::new(AtomicBool::new(true)));
    let got = mechanism(1.0, 0.1).release_until(&d, &mut NoiseSource::seeded(1), &stop);
    assert_eq!(got.err(), Some(MechanismError::Stopped(Stopped::Cancelled)));
}

/// Mean test accuracy of `trials` releases of `m` on `train`, and the slowest release in seconds.
fn accuracy_and_time(
    m: &dyn Mechanism,
    (train, test): (&Dataset, &Dataset),
    trials: usize,
    seed: u64,
) -> (f64, f64) {
    let mut noise = NoiseSource::seeded(seed);
    (0..trials).fold((0.0, 0.0f64), |(acc, slowest), _| {
        let start = std::time::Instant::now();
        let r = m.release(train, &mut noise).expect("release");
        let seconds = start.elapsed().as_secs_f64();
        let accuracy = r.classifier.accuracy(test) / trials as f64;
        (acc + accuracy, slowest.max(seconds))
    })
}

/// The proven chain and the default (ε-DP) objective perturbation at ε = 1, λ = auto.
fn default_learners() -> (Langevin, ObjectivePerturbation) {
    let lambda = crate::privacy::mechanism::Lambda::Auto;
    (
        Langevin::with_defaults(1.0, 1e-5, lambda).expect("valid"),
        ObjectivePerturbation::new(1.0, lambda).expect("valid"),
    )
}

#[test]
fn accuracy_on_diabetes_is_close_to_objective_perturbation() {
    let (all, _) = Bundled::Diabetes.load();
    let (test, train): (Vec<usize>, Vec<usize>) = (0..all.len()).partition(|i| i % 4 == 0);
    let split = (&all.subset(&train), &all.subset(&test));
    let (langevin, objective) = default_learners();
    let (a, _) = accuracy_and_time(&langevin, split, 20, 61);
    let (b, _) = accuracy_and_time(&objective, split, 20, 62);
    assert!(a >= b - 0.03, "langevin {a} vs objective perturbation {b}");
}

#[test]
fn a_clinic_hospital_release_is_fast_and_close_to_objective_perturbation() {
    use crate::data::clinic::{CLINIC_HOSPITAL_ROWS, clinic_rows};
    use crate::util::seed::derived_rng;
    let train = clinic_rows(CLINIC_HOSPITAL_ROWS, &mut derived_rng(71, &[]));
    let test = clinic_rows(5_000, &mut derived_rng(72, &[]));
    let (langevin, objective) = default_learners();
    let (a, slowest) = accuracy_and_time(&langevin, (&train, &test), 5, 73);
    let (b, _) = accuracy_and_time(&objective, (&train, &test), 5, 74);
    assert!(a >= b - 0.02, "langevin {a} vs objective perturbation {b}");
    assert!(slowest < 1.0, "a langevin release took {slowest} s");
}
