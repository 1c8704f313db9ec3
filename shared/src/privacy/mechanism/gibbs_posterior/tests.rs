//! Tests of the Gibbs-posterior mechanism: the β bounds, Proposition 13, the Langevin chain's
//! law on closed-form and numerically integrated posteriors (with under-noised variants that the
//! checks must reject) and releases.

use super::langevin::{BLOCK_ROWS, Chain, Potential, run_chain, sample};
use super::*;
use crate::data::synthetic::{SyntheticSpec, generate};
use crate::learn::logistic::Penalty;
use crate::learn::logistic::{evaluate, logistic_loss};
use crate::privacy::guarantee::NeighbourRelation;
use crate::util::seed::derived_rng;
use crate::util::stats::ks_test;
use crate::util::stop::Stop;
use statrs::distribution::{ContinuousCDF, Normal};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs()
}

#[test]
fn beta_bound_is_eq13() {
    // (1/2)·√(0.6 / (1 + 2 ln 1e5)) and 1·√(10 / (1 + 2 ln 100)), by hand.
    let b = gibbs_beta_bound(1.0, 1e-5, 60, 0.01).expect("valid");
    assert!(close(b, 0.079_014_398_880_156_68, 1e-12), "{b}");
    let b = gibbs_beta_bound(2.0, 0.01, 100, 0.1).expect("valid");
    assert!(close(b, 0.989_646_037_293_854_4, 1e-12), "{b}");
    for (e, d, n, l) in [
        (0.0, 1e-5, 60, 0.01),
        (f64::NAN, 1e-5, 60, 0.01),
        (1.0, 0.0, 60, 0.01),
        (1.0, 1.0, 60, 0.01),
        (1.0, f64::NAN, 60, 0.01),
        (1.0, 1e-5, 0, 0.01),
        (1.0, 1e-5, 60, 0.0),
        (1.0, 1e-5, 60, f64::INFINITY),
    ] {
        assert!(
            matches!(
                gibbs_beta_bound(e, d, n, l),
                Err(MechanismError::InvalidParameter { .. })
            ),
            "{e} {d} {n} {l}"
        );
    }
}

#[test]
fn eq13_is_not_sufficient_above_epsilon_one_and_theorem7_bound_is() {
    let (delta, n, lambda) = (1e-5, 60, 0.01);
    // ε ≤ ~1.01: eq. (13) is within Theorem 7 and is what the mechanism uses.
    for eps in [0.3, 1.0] {
        let b13 = gibbs_beta_bound(eps, delta, n, lambda).expect("valid");
        let b7 = theorem7_beta_bound(eps, delta, n, lambda).expect("valid");
        assert!(b13 <= b7, "{eps}: {b13} > {b7}");
        assert!(theorem7_tail(eps, b13, n, lambda) <= delta);
        assert_eq!(gibbs_beta(eps, delta, n, lambda).expect("valid"), b13);
    }
    // ε = 2: the β of eq. (13) leaves Theorem 7's tail at 1.6e-5 > δ; Theorem 7's own bound
    // meets δ exactly and is what the mechanism uses.
    let b13 = gibbs_beta_bound(2.0, delta, n, lambda).expect("valid");
    let b7 = theorem7_beta_bound(2.0, delta, n, lambda).expect("valid");
    assert!(theorem7_tail(2.0, b13, n, lambda) > 1.5 * delta);
    assert!(close(theorem7_tail(2.0, b7, n, lambda), delta, 1e-9));
    assert_eq!(gibbs_beta(2.0, delta, n, lambda).expect("valid"), b7);
    // Theorem 7 is stated for β ≤ 1.
    assert_eq!(gibbs_beta(50.0, delta, 5000, 0.1).expect("valid"), 1.0);
}

#[test]
fn proposition13_matches_eq16_and_corrected_eq17() {
    // n = 100, d = 2, λ = 0.1, β = 1, γ = 1/4 by hand: m = 10, M = 35,
    // B = 4 ln 4 + 2 ln 3.5, h = 2·10·γ² / (2·35²·B), τ = B/20, T = τ/h.
    let p = proposition13(100, 2, 1.0, 0.1, 0.25).expect("valid");
    assert!(close(p.strong_convexity, 10.0, 1e-15));
    assert!(close(p.smoothness, 35.0, 1e-15));
    let bracket = 4.0 * 4f64.ln() + 2.0 * 3.5f64.ln();
    assert!(close(p.bracket, bracket, 1e-15));
    assert!(close(p.step_size_eq16, 6.337_385_163_226_253e-5, 1e-12));
    assert!(close(p.horizon, 0.402_535_169_073_514_94, 1e-12));
    assert!(close(p.steps, 6_351.754_843_768_896_5, 1e-12));
    // Eq. (17) as printed is the corrected T times m_π.
    assert!(close(p.steps_eq17_printed, 63_517.548_437_688_965, 1e-12));
    // h = 2mγ²/(dM²B) and T = dM²B²/(4m²γ²) symbolically.
    assert!(close(
        p.steps,
        2.0 * 35.0 * 35.0 * bracket * bracket / (4.0 * 100.0 * 0.0625),
        1e-12
    ));
    assert!(matches!(
        proposition13(100, 1, 1.0, 0.1, 0.25),
        Err(MechanismError::Gibbs(GibbsError::DimensionTooSmall {
            dim: 1
        }))
    ));
    for g in [0.0, 0.5, -0.1, f64::NAN] {
        assert!(proposition13(100, 2, 1.0, 0.1, g).is_err(), "{g}");
    }
}

#[test]
fn t_is_astronomical_for_useful_gamma() {
    // The configuration of the brief: n = 60, d = 9, λ = 0.01, ε = 1, δ = 1e-5.
    let beta = gibbs_beta(1.0, 1e-5, 60, 0.01).expect("valid");
    let expected = [
        (1e-3, 2.79e10),
        (1e-4, 4.34e12),
        (1e-5, 6.22e14),
        (1e-6, 8.44e16),
    ];
    for (gamma, t) in expected {
        let p = proposition13(60, 9, beta, 0.01, gamma).expect("valid");
        assert!(close(p.steps, t, 5e-3), "γ = {gamma}: T = {:e}", p.steps);
    }
}

#[test]
fn proven_release_refuses_when_t_exceeds_the_cap() {
    let data = generate(
        &SyntheticSpec {
            dim: 9,
            train: 60,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(1, &[]),
    )
    .train;
    let m = GibbsPosterior::proven(1.0, 1e-5, 0.01, 1e-3, 1_000_000_000).expect("valid");
    let err = m
        .release(&data, &mut NoiseSource::seeded(2))
        .expect_err("T ≈ 2.8e10 > 1e9");
    match &err {
        MechanismError::Gibbs(GibbsError::TooManySteps { steps, cap, .. }) => {
            assert!(*steps > 2.7e10 && *steps < 2.9e10, "{steps}");
            assert_eq!(*cap, 1_000_000_000);
        }
        other => panic!("unexpected {other:?}"),
    }
    let message = err.to_string();
    assert!(
        message.contains("2.79") && message.contains("1000000000"),
        "{message}"
    );
    // The same check is available before touching data.
    assert!(m.schedule(60, 9).is_err());
    // d = 1 is outside Proposition 13.
    let one_d = Dataset::new(vec![0.5, -0.5], vec![1.0, -1.0], 1);
    let m = GibbsPosterior::proven(1.0, 1e-5, 0.5, 0.2, u64::MAX).expect("valid");
    assert!(matches!(
        m.release(&one_d, &mut NoiseSource::seeded(3)),
        Err(MechanismError::Gibbs(GibbsError::DimensionTooSmall {
            dim: 1
        }))
    ));
}

#[test]
fn invalid_parameters_are_errors() {
    let ok = GibbsPosterior::proven(1.0, 1e-5, 0.01, 1e-3, 10);
    assert!(ok.is_ok());
    for (e, d, l, g, cap) in [
        (0.0, 1e-5, 0.01, 1e-3, 10),
        (1.0, 0.0, 0.01, 1e-3, 10),
        (1.0, 1e-5, 0.0, 1e-3, 10),
        (1.0, 1e-5, 0.01, 0.0, 10),
        (1.0, 1e-5, 0.01, 0.5, 10),
        (1.0, 1e-5, 0.01, 1e-3, 0),
        // δ + (1 + e)·0.3 ≥ 1: meaningless.
        (1.0, 1e-5, 0.01, 0.3, 10),
        (1000.0, 1e-5, 0.01, 1e-3, 10),
    ] {
        assert!(
            GibbsPosterior::proven(e, d, l, g, cap).is_err(),
            "{e} {d} {l} {g} {cap}"
        );
    }
    for (steps, scale) in [(0, 0.5), (10, 0.0), (10, 1.5), (10, f64::NAN)] {
        assert!(GibbsPosterior::unproven(1.0, 1e-5, 0.01, steps, scale).is_err());
    }
}

#[test]
fn gradient_of_u_matches_the_logistic_module() {
    let data = generate(
        &SyntheticSpec {
            dim: 4,
            // More than two blocks of BLOCK_ROWS, the last one partial.
            train: 2 * BLOCK_ROWS + 37,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(4, &[]),
    )
    .train;
    let (beta, lambda) = (0.3, 0.02);
    let n = data.len() as f64;
    let pot = Potential::new(&data, beta, n * lambda);
    let theta = [0.7, -1.2, 3.0, -40.0];
    let mut g = [0.0; 4];
    pot.gradient(&theta, &mut g);
    // ∇U = nβ ∇F with F = (1/n)Σℓ + (λ/2β)||θ||².
    let e = evaluate(&data, &theta, Penalty::ridge(lambda / beta), false);
    for (a, b) in g.iter().zip(&e.gradient) {
        assert!((a - n * beta * b).abs() < 1e-9, "{a} vs {}", n * beta * b);
    }
}

/// The gradient pass row by row, as it was before the margins went eight rows wide: the
/// interleaved pass must give these bits.
fn gradient_row_by_row(data: &Dataset, beta: f64, prior: f64, theta: &[f64]) -> Vec<f64> {
    let mut out: Vec<f64> = theta.iter().map(|t| prior * t).collect();
    for (x, y) in data.features().chunks(theta.len()).zip(data.labels()) {
        let m = y * crate::learn::logistic::dot_by_lanes(x, theta);
        let u = crate::util::fastmath::exp_nonpositive(-m.abs());
        let inv = 1.0 / (1.0 + u);
        let slope = if m >= 0.0 { inv * u } else { inv };
        let c = -beta * y * slope;
        for (o, v) in out.iter_mut().zip(x) {
            *o += c * v;
        }
    }
    out
}

#[test]
fn the_interleaved_gradient_pass_has_the_row_by_row_bits() {
    // Dimensions below, at and between multiples of four, and above one 32-coordinate run of
    // Σ cᵢxᵢ; rows that end a group and a block part-way.
    let shapes = [(1, 3), (3, 50), (4, 8), (5, 61), (11, 2 * BLOCK_ROWS + 37), (16, 300), (37, 70)];
    for (dim, train) in shapes {
        let data = generate(
            &SyntheticSpec {
                dim,
                train,
                ..SyntheticSpec::default()
            },
            &mut derived_rng(dim as u64, &[]),
        )
        .train;
        let theta: Vec<f64> = (0..data.dim()).map(|j| 0.9 - 0.37 * j as f64).collect();
        let pot = Potential::new(&data, 0.7, 0.05);
        let mut g = vec![0.0; data.dim()];
        pot.gradient(&theta, &mut g);
        let want = gradient_row_by_row(&data, 0.7, 0.05, &theta);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&g), bits(&want), "dim {dim}, {train} rows");
    }
}

/// The exact law after `k` steps of eq. (14) on U = (a/2)θ² from θ₀, per coordinate:
/// mean r^k θ₀, variance s²(1 − r^{2k})/(1 − r²) with r = 1 − ha, s² = 2h.
fn quadratic_law(a: f64, h: f64, k: i32, theta0: f64) -> Normal {
    let r = 1.0 - h * a;
    let var = 2.0 * h * (1.0 - r.powi(2 * k)) / (1.0 - r * r);
    Normal::new(r.powi(k) * theta0, var.sqrt()).expect("valid")
}

fn quadratic_chains(noise_sd_factor: f64, seed: u64) -> Vec<f64> {
    let (a, h, k) = (2.0, 0.05, 30u64);
    let mut rng = NoiseSource::seeded(seed);
    let mut out = Vec::new();
    for _ in 0..2000 {
        let mut theta = [1.5, -0.5];
        run_chain(
            &mut theta,
            h,
            noise_sd_factor * (2.0 * h).sqrt(),
            k,
            |t, g| {
                g[0] = a * t[0];
                g[1] = a * t[1];
            },
            &mut rng,
            &Stop::never(),
        )
        .expect("never stopped");
        out.extend_from_slice(&theta);
    }
    out
}

fn quadratic_p_values(sample: &[f64]) -> (f64, f64) {
    let (x0, x1): (Vec<f64>, Vec<f64>) = sample.chunks_exact(2).map(|c| (c[0], c[1])).unzip();
    let l0 = quadratic_law(2.0, 0.05, 30, 1.5);
    let l1 = quadratic_law(2.0, 0.05, 30, -0.5);
    (
        ks_test(&x0, |x| l0.cdf(x)).p_value,
        ks_test(&x1, |x| l1.cdf(x)).p_value,
    )
}

#[test]
fn lmc_on_a_quadratic_has_the_exact_gaussian_law() {
    let (p0, p1) = quadratic_p_values(&quadratic_chains(1.0, 10));
    assert!(p0 > 1e-3 && p1 > 1e-3, "{p0} {p1}");
}

#[test]
fn under_noised_lmc_fails_the_quadratic_check() {
    let (p0, p1) = quadratic_p_values(&quadratic_chains(0.5, 11));
    assert!(p0 < 1e-6 && p1 < 1e-6, "{p0} {p1}");
}

/// A 1-D Gibbs posterior, CDF by numerical integration of exp(−U) on a fine grid.
fn one_d_posterior(data: &Dataset, beta: f64, m_pi: f64) -> impl Fn(f64) -> f64 + use<> {
    let (lo, hi, k) = (-12.0, 12.0, 48_001usize);
    let dx = (hi - lo) / (k - 1) as f64;
    let u = |t: f64| {
        beta * (0..data.len())
            .map(|i| logistic_loss(t * data.row(i)[0], data.label(i)))
            .sum::<f64>()
            + 0.5 * m_pi * t * t
    };
    let grid: Vec<f64> = (0..k).map(|i| lo + i as f64 * dx).collect();
    let u0 = grid.iter().map(|&t| u(t)).fold(f64::INFINITY, f64::min);
    let dens: Vec<f64> = grid.iter().map(|&t| (u0 - u(t)).exp()).collect();
    let mut cdf = vec![0.0; k];
    for i in 1..k {
        cdf[i] = cdf[i - 1] + 0.5 * (dens[i - 1] + dens[i]) * dx;
    }
    let total = cdf[k - 1];
    move |t: f64| {
        let pos = ((t - lo) / dx).clamp(0.0, (k - 1) as f64);
        let i = (pos.floor() as usize).min(k - 2);
        let w = pos - i as f64;
        (cdf[i] * (1.0 - w) + cdf[i + 1] * w) / total
    }
}

fn one_d_chains(noise_sd_factor: f64, seed: u64) -> (Vec<f64>, impl Fn(f64) -> f64) {
    // Six 1-D points, not separable, β = 1, prior precision 1.
    let data = Dataset::new(
        vec![0.9, 0.4, -0.2, 0.7, -0.8, 0.1],
        vec![1.0, 1.0, -1.0, -1.0, -1.0, 1.0],
        1,
    );
    let (beta, m_pi) = (1.0, 1.0);
    let pot = Potential::new(&data, beta, m_pi);
    let big_m = 6.0 * beta * LOSS_SMOOTHNESS + m_pi;
    let h = 0.01 / big_m;
    let start = pot.mode().expect("mode");
    let mut rng = NoiseSource::seeded(seed);
    let sample: Vec<f64> = (0..3000)
        .map(|_| {
            let chain = Chain {
                smoothness: big_m,
                step_size: h,
                noise_sd: noise_sd_factor * (2.0 * h).sqrt(),
                steps: 2000,
            };
            sample(&pot, &start, chain, &mut rng, &Stop::never()).expect("finite")[0]
        })
        .collect();
    (sample, one_d_posterior(&data, beta, m_pi))
}

#[test]
fn lmc_samples_the_logistic_gibbs_posterior_in_one_dimension() {
    // Horizon 2000·h = 8 ≫ 1/m_π: the chains have mixed; the O(h) bias is far below KS's reach.
    let (sample, cdf) = one_d_chains(1.0, 20);
    let p = ks_test(&sample, cdf).p_value;
    assert!(p > 1e-3, "{p}");
}

#[test]
fn under_noised_lmc_fails_the_logistic_posterior_check() {
    let (sample, cdf) = one_d_chains(0.5, 21);
    let p = ks_test(&sample, cdf).p_value;
    assert!(p < 1e-6, "{p}");
}

#[test]
fn proven_release_runs_and_carries_its_guarantee() {
    // Small enough for Proposition 13 to be affordable: n = 20, d = 2, γ = 0.2.
    let data = generate(
        &SyntheticSpec {
            dim: 2,
            train: 20,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(5, &[]),
    )
    .train;
    let (eps, delta, lambda, gamma) = (1.0, 1e-5, 0.05, 0.2);
    let m = GibbsPosterior::proven(eps, delta, lambda, gamma, 10_000_000).expect("valid");
    assert!(m.is_proven());
    let schedule = m.schedule(20, 2).expect("affordable");
    let beta = gibbs_beta(eps, delta, 20, lambda).expect("valid");
    let p = proposition13(20, 2, beta, lambda, gamma).expect("valid");
    assert_eq!(schedule.steps, p.steps.ceil() as u64);
    assert!(schedule.step_size <= p.step_size_eq16);
    assert!(close(
        schedule.step_size * schedule.steps as f64,
        p.horizon,
        1e-12
    ));
    let r = m
        .release(&data, &mut NoiseSource::seeded(6))
        .expect("release");
    let md = &r.metadata;
    assert_eq!(md.mechanism, NAME);
    assert_eq!(
        md.guarantee,
        PrivacyGuarantee {
            epsilon: eps,
            delta: delta + (1.0 + eps.exp()) * gamma * (1.0 + TV_SLACK),
            relation: NeighbourRelation::ReplaceOne,
        }
    );
    assert!(md.proven);
    assert_eq!(md.parameters["beta"], beta);
    assert_eq!(md.parameters["gamma"], gamma);
    assert_eq!(md.parameters["step_size"], schedule.step_size);
    assert_eq!(md.parameters["steps"], schedule.steps as f64);
    assert_eq!(md.parameters["max_steps"], 10_000_000.0);
    assert!(md.seeded);
    assert!(r.classifier.coefficients().iter().all(|t| t.is_finite()));
    // Deterministic under a seeded source.
    let again = m
        .release(&data, &mut NoiseSource::seeded(6))
        .expect("release");
    assert_eq!(again.classifier, r.classifier);
}

#[test]
fn unproven_release_says_so_and_classifies_separable_data_at_large_epsilon() {
    let d = generate(
        &SyntheticSpec {
            train: 1000,
            test_per_label: 500,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(7, &[]),
    );
    let m = GibbsPosterior::unproven(50.0, 1e-5, 0.01, 3000, 0.5).expect("valid");
    assert!(!m.is_proven());
    let r = m
        .release(&d.train, &mut NoiseSource::seeded(8))
        .expect("release");
    let md = &r.metadata;
    assert_eq!(md.mechanism, NAME_UNPROVEN);
    assert!(!md.proven);
    assert!(!md.parameters.contains_key("gamma"));
    assert_eq!(md.parameters["steps"], 3000.0);
    assert_eq!(md.parameters["beta"], 1.0);
    assert!(md.reference.contains("NOT covered"));
    assert_eq!(md.guarantee.delta, 1e-5);
    let accuracy = r.classifier.accuracy(&d.test);
    assert!(accuracy > 0.9, "test accuracy {accuracy}");
}
