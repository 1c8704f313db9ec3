//! Tests of [`super::DpSgd`]: clipping, Poisson batches, the discrete Gaussian noise of the
//! clipped sums on the lattice and an under-noised mutant, σ calibration over the integer
//! orders, step sizes, stopping and releases; the black-box audit is in `audit.rs`.
use super::*;
use rand::RngExt;
use crate::data::synthetic::{SyntheticSpec, generate};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::util::seed::derived_rng;
use crate::util::stats::ks_test;
use statrs::distribution::{Binomial, ChiSquared, ContinuousCDF, Discrete, Normal};

fn synthetic(train: usize, seed: u64) -> crate::data::synthetic::SyntheticData {
    generate(
        &SyntheticSpec {
            train,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(seed, &[]),
    )
}

#[test]
fn clipped_gradients_never_exceed_the_clip_norm() {
    let mut rng = NoiseSource::seeded(1);
    for trial in 0..5000 {
        let dim = 1 + trial % 7;
        // Rows of any norm (clipping must hold whatever the data), θ of any scale.
        let scale_x = [1e-3, 0.5, 1.0, 10.0, 1e6][trial % 5];
        let scale_t = [0.0, 0.1, 3.0, 100.0][trial % 4];
        let x: Vec<f64> = (0..dim)
            .map(|_| scale_x * rng.random_range(-1.0..1.0))
            .collect();
        let theta: Vec<f64> = (0..dim)
            .map(|_| scale_t * rng.random_range(-1.0..1.0))
            .collect();
        let y = if rng.random_bool(0.5) { 1.0 } else { -1.0 };
        let clip = [0.01, 0.3, 1.0, 7.0][trial % 4];
        let mut g = vec![0.0; dim];
        add_clipped_gradient(&theta, &x, y, clip, &mut g);
        let norm = dot(&g, &g).sqrt();
        assert!(norm <= clip, "‖ḡ‖ = {norm} > C = {clip}");
        // Unclipped gradients are left alone.
        let coef = -y * sigmoid(-y * dot(&theta, &x));
        if coef.abs() * dot(&x, &x).sqrt() < clip {
            for (gj, xj) in g.iter().zip(&x) {
                assert!((gj - coef * xj).abs() <= 1e-15 * (coef * xj).abs().max(1e-300));
            }
        }
    }
}

#[test]
fn poisson_batch_sizes_are_binomial() {
    let (n, q, draws) = (60usize, 0.1, 4000);
    let gaps = BernoulliF64::new(q).expect("valid");
    let mut rng = NoiseSource::seeded(2);
    let mut counts = vec![0usize; n + 1];
    let mut per_row = vec![0usize; n];
    for _ in 0..draws {
        let b = poisson_batch(n, &gaps, &mut rng);
        assert!(b.windows(2).all(|w| w[0] < w[1]) && b.iter().all(|&i| i < n));
        counts[b.len()] += 1;
        b.iter().for_each(|&i| per_row[i] += 1);
    }
    let binom = Binomial::new(q, n as u64).expect("valid");
    // χ² over the bins 0..=11 and a tail bin ≥ 12 (every expected count ≥ 5).
    let mut stat = 0.0;
    let mut tail_obs = 0.0;
    let mut tail_p = 1.0;
    for (k, &c) in counts.iter().enumerate().take(12) {
        let expected = binom.pmf(k as u64) * draws as f64;
        stat += (c as f64 - expected).powi(2) / expected;
        tail_p -= binom.pmf(k as u64);
    }
    tail_obs += counts[12..].iter().sum::<usize>() as f64;
    let tail_exp = tail_p * draws as f64;
    stat += (tail_obs - tail_exp).powi(2) / tail_exp;
    let p = 1.0 - ChiSquared::new(12.0).expect("valid").cdf(stat);
    assert!(p > 1e-3, "χ² = {stat}, p = {p}");
    // Every row is included at rate q (a row-level bias would not show in the sizes).
    let row_sd = (draws as f64 * q * (1.0 - q)).sqrt();
    for (i, &c) in per_row.iter().enumerate() {
        assert!(
            (c as f64 - draws as f64 * q).abs() < 5.0 * row_sd,
            "row {i} sampled {c} times"
        );
    }
    // q = 1 takes every row.
    let all = BernoulliF64::new(1.0).expect("valid");
    assert_eq!(poisson_batch(5, &all, &mut rng), vec![0, 1, 2, 3, 4]);
}

/// Residuals (noisy − clipped sum)/(σC) of `draws` steps, with the lattice's cell variance
/// divided by `shrink` (1: the mechanism's own noise).
fn standardised_residuals(m: &DpSgd, shrink: f64, draws: usize, seed: u64) -> Vec<f64> {
    let data = synthetic(40, 3).train;
    let theta: Vec<f64> = (0..10).map(|j| 0.3 * j as f64 - 1.0).collect();
    let batch: Vec<usize> = (0..40).step_by(3).collect();
    let c = m.config().clip_norm;
    let mut clipped = vec![0.0; 10];
    for &i in &batch {
        add_clipped_gradient(&theta, data.row(i), data.label(i), c, &mut clipped);
    }
    let honest = m.lattice(10).expect("valid");
    let lattice = honest.with_cell_variance(honest.cell_variance() / shrink);
    let mut rng = NoiseSource::seeded(seed);
    (0..draws)
        .flat_map(|_| {
            let noisy = noisy_clipped_sum(&data, &batch, &theta, (c, &lattice), &mut rng);
            noisy
                .iter()
                .zip(&clipped)
                .map(|(a, b)| (a - b) / m.noise_std())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn test_mechanism() -> DpSgd {
    let config = DpSgdConfig {
        clip_norm: 0.5,
        ..DpSgdConfig::default()
    };
    DpSgd::new(1.0, 1e-5, 0.01, config).expect("valid")
}

#[test]
fn a_stopped_release_releases_nothing() {
    use crate::util::stop::{Stop, Stopped};
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let d = synthetic(200, 11);
    let stop = Stop::on_flag(Arc::new(AtomicBool::new(true)));
    let got = test_mechanism().release_until(&d.train, &mut NoiseSource::seeded(1), &stop);
    assert_eq!(got.err(), Some(MechanismError::Stopped(Stopped::Cancelled)));
    let never = Stop::never();
    assert!(
        test_mechanism()
            .release_until(&d.train, &mut NoiseSource::seeded(1), &never)
            .is_ok()
    );
}

#[test]
fn noise_is_gaussian_with_std_sigma_times_c() {
    let m = test_mechanism();
    let r = standardised_residuals(&m, 1.0, 400, 4);
    let normal = Normal::new(0.0, 1.0).expect("valid");
    let ks = ks_test(&r, |x| normal.cdf(x));
    assert!(ks.p_value > 1e-3, "KS p = {}", ks.p_value);
}

#[test]
fn under_noised_variant_fails_the_same_check() {
    let m = test_mechanism();
    let r = standardised_residuals(&m, 4.0, 400, 5);
    let normal = Normal::new(0.0, 1.0).expect("valid");
    let ks = ks_test(&r, |x| normal.cdf(x));
    assert!(ks.p_value < 1e-6, "KS p = {}", ks.p_value);
}

#[test]
fn sigma_is_calibrated_before_data_and_meets_the_target() {
    let m = DpSgd::new(2.0, 1e-6, 0.01, DpSgdConfig::default()).expect("valid");
    let c = m.config();
    let lattice_epsilon = |sigma: f64| {
        accounting::dp_sgd_lattice_curve(c.sampling_rate, sigma, c.steps)
            .and_then(|curve| curve.epsilon(1e-6))
            .expect("valid")
    };
    let at = lattice_epsilon(m.noise_multiplier());
    assert!(at.epsilon <= 2.0);
    assert_eq!(at, m.accounted_epsilon());
    assert_eq!(at.order.fract(), 0.0, "an integer order");
    assert!(lattice_epsilon(m.noise_multiplier() * (1.0 - 1e-3)).epsilon > 2.0);
    // The integer orders cost a little over the continuous accountant, never less.
    let continuous = accounting::calibrate_sigma(c.sampling_rate, c.steps, 2.0, 1e-6).expect("valid");
    assert!(m.noise_multiplier() >= continuous && m.noise_multiplier() < 1.1 * continuous);
    assert_eq!(
        m.guarantee(),
        PrivacyGuarantee {
            epsilon: 2.0,
            delta: 1e-6,
            relation: NeighbourRelation::AddRemoveOne
        }
    );
    let curve = m.rdp().expect("DP-SGD has an RDP curve");
    assert_eq!(curve.epsilon(1e-6).expect("valid"), m.accounted_epsilon());
}

#[test]
fn step_size_schedules() {
    assert_eq!(StepSize::Constant(0.3).at(7, 10), 0.3);
    assert!((StepSize::InverseSqrt(2.0).at(4, 10) - 1.0).abs() < 1e-15);
    assert_eq!(StepSize::Cosine(2.0).at(1, 10), 2.0);
    assert!((StepSize::Cosine(2.0).at(6, 10) - 1.0).abs() < 1e-15);
    assert!(StepSize::Cosine(2.0).at(10, 10) > 0.0);
}

#[test]
fn reaches_high_accuracy_at_large_epsilon() {
    let d = synthetic(2000, 6);
    let config = DpSgdConfig {
        sampling_rate: 0.05,
        steps: 400,
        ..DpSgdConfig::default()
    };
    let m = DpSgd::new(50.0, 1e-5, 1e-4, config).expect("valid");
    let r = m
        .release(&d.train, &mut NoiseSource::seeded(7))
        .expect("release");
    let acc = r.classifier.accuracy(&d.test);
    assert!(acc > 0.9, "test accuracy {acc}");
    assert!(r.metadata.seeded);
    assert_eq!(r.metadata.guarantee, m.guarantee());
    assert_eq!(
        r.metadata.parameters["noise_multiplier"],
        m.noise_multiplier()
    );
    assert_eq!(r.metadata.parameters["batch_divisor"], 100.0);
    assert_eq!(r.metadata.parameters["steps"], 400.0);
}

#[test]
fn release_is_deterministic_given_the_seed_and_honours_a_fixed_divisor() {
    let d = synthetic(300, 8).train;
    let config = DpSgdConfig {
        steps: 50,
        sampling_rate: 0.1,
        batch_divisor: Some(25.0),
        ..DpSgdConfig::default()
    };
    let m = DpSgd::new(1.0, 1e-5, 0.01, config).expect("valid");
    let a = m.release(&d, &mut NoiseSource::seeded(9)).expect("release");
    let b = m.release(&d, &mut NoiseSource::seeded(9)).expect("release");
    assert_eq!(a, b);
    assert_eq!(a.metadata.parameters["batch_divisor"], 25.0);
}

#[test]
fn invalid_parameters_are_errors() {
    let ok = DpSgdConfig::default();
    for (e, d, l) in [
        (0.0, 1e-5, 0.1),
        (f64::NAN, 1e-5, 0.1),
        (1.0, 0.0, 0.1),
        (1.0, 1.0, 0.1),
        (1.0, 1e-5, -0.1),
        (1.0, 1e-5, f64::INFINITY),
    ] {
        assert!(DpSgd::new(e, d, l, ok).is_err(), "{e} {d} {l}");
    }
    let bad = [
        DpSgdConfig {
            clip_norm: 0.0,
            ..ok
        },
        DpSgdConfig {
            sampling_rate: 0.0,
            ..ok
        },
        DpSgdConfig {
            sampling_rate: 1.5,
            ..ok
        },
        DpSgdConfig { steps: 0, ..ok },
        DpSgdConfig {
            steps: MAX_STEPS + 1,
            ..ok
        },
        DpSgdConfig {
            step_size: StepSize::Constant(-1.0),
            ..ok
        },
        DpSgdConfig {
            batch_divisor: Some(0.0),
            ..ok
        },
    ];
    for c in bad {
        assert!(
            matches!(
                DpSgd::new(1.0, 1e-5, 0.1, c),
                Err(MechanismError::InvalidParameter { .. })
            ),
            "{c:?}"
        );
    }
    // Data outside the unit ball is refused.
    let m = DpSgd::new(1.0, 1e-5, 0.1, ok).expect("valid");
    let far = Dataset::new(vec![2.0, 0.0], vec![1.0], 2);
    assert!(matches!(
        m.release(&far, &mut NoiseSource::seeded(1)),
        Err(MechanismError::NormBoundViolated { .. })
    ));
}

/// DP-SGD for the audit: C = 0.1 (so the added record's gradient, of norm σ(−θ) > 0.1 while
/// θ < 2.2, is always clipped to exactly C: the worst case), q = 0.5, 10 steps of η = 0.1, no
/// regulariser and a fixed divisor (so that n, which differs between the neighbours, is not
/// used), calibrated for `calibrated_for` — the claim is always ε = 1.
fn audited(calibrated_for: f64) -> DpSgd {
    let config = DpSgdConfig {
        clip_norm: 0.1,
        sampling_rate: 0.5,
        steps: 10,
        step_size: StepSize::Constant(0.1),
        batch_divisor: Some(1.0),
    };
    DpSgd::new(calibrated_for, 1e-5, 0.0, config).expect("valid")
}

/// −θ_T of a release on D = {(0, +1)} (`with_record` false: a row whose gradient is 0) or on
/// D′ = D ∪ {(1, +1)} (add/remove-one): the added record pushes θ up, so −θ tends lower on D′.
fn audit_statistic(m: &DpSgd, with_record: bool, noise: &mut NoiseSource) -> f64 {
    let (x, y) = if with_record {
        (vec![0.0, 1.0], vec![1.0, 1.0])
    } else {
        (vec![0.0], vec![1.0])
    };
    let data = Dataset::new(x, y, 1);
    -m.release(&data, noise).expect("release").classifier.coefficients()[0]
}

#[test]
fn an_empirical_audit_stays_below_the_claim_and_catches_a_miscalibrated_run() {
    use crate::privacy::mechanism::audit::epsilon_lower;
    let audit = |m: &DpSgd, seed| {
        epsilon_lower(
            |noise| audit_statistic(m, false, noise),
            |noise| audit_statistic(m, true, noise),
            (1e-5, 20_000),
            seed,
        )
    };
    let honest = audited(1.0);
    let lower = audit(&honest, 51);
    assert!(lower <= 1.0, "ε_lower = {lower} > the claimed 1");
    // Noise calibrated for ε = 8 under a claim of ε = 1: the same audit exceeds the claim.
    let caught = audit(&audited(8.0), 61);
    assert!(caught > 1.0, "ε_lower = {caught} for the miscalibrated run");
}
