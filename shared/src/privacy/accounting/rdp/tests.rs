//! Tests of [`super`]: the RDP curves against the committed `dp-accounting` 0.6.0 fixture,
//! conversion to (ε, δ) and σ calibration.
use super::*;
use statrs::function::erf::erfc;

/// The fixture written by `fixtures/make_rdp_fixture.py` (dp-accounting 0.6.0).
const REFERENCE: &str = include_str!("../fixtures/rdp_reference.csv");

struct Row {
    q: f64,
    sigma: f64,
    steps: u64,
    delta: f64,
    epsilon: f64,
    order: f64,
}

fn reference_rows() -> Vec<Row> {
    REFERENCE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("q,") && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let num = |i: usize| f[i].parse::<f64>().expect("number");
            Row {
                q: num(0),
                sigma: num(1),
                steps: f[2].parse().expect("integer"),
                delta: num(3),
                epsilon: num(4),
                order: num(5),
            }
        })
        .collect()
}

#[test]
fn default_orders_are_dp_accountings() {
    let o = default_orders();
    assert_eq!(o.len(), 156);
    assert_eq!(o[0], 1.1);
    assert_eq!(o[9], 2.0);
    assert_eq!(o[98], 10.9);
    assert_eq!(o[99], 11.0);
    assert_eq!(o[151], 63.0);
    assert_eq!(&o[152..], &[128.0, 256.0, 512.0, 1024.0]);
    assert!(o.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn log_erfc_matches_reference_values_and_the_asymptotic_series() {
    // log(math.erfc(x)) from CPython 3 (correctly rounded to within an ulp or so of erfc).
    for (x, expected) in [
        (-6.0, std::f64::consts::LN_2), // erfc(−6) = 2 − 2e-17
        (-3.0, 0.6931361352504468),
        (-1.53, 0.6777879334499635),
        (-1.0, 0.6112323176780705),
        (-0.5, 0.41903914777555956),
        (-0.001, 0.0011277426501149156),
        (0.001, -0.001129015889621394),
        (0.5, -0.7350111298370844),
        (1.0, -1.8496055099332482),
        (1.53, -3.4905601823192183),
        (1.99, -5.320852015139977),
        (2.0, -5.364941264616638),
        (2.01, -5.409215264190247),
        (2.5, -7.806815272727264),
        (3.7, -15.604367894999848),
        (5.0, -27.200889545537436),
        (10.0, -102.87988902484489),
        (20.0, -403.56934333410425),
        (26.0, -679.8311997631943),
    ] {
        let ours = log_erfc(x);
        let rel = (ours - expected).abs() / expected.abs();
        assert!(rel < 1e-13, "x = {x}: {ours} vs {expected} ({rel:e})");
    }
    // A dense sweep against statrs, a sanity check only: its erfc is off by up to ~1e-10 (at
    // x = 0.51, say, where CPython agrees with ours to 1e-16).
    let mut x = -8.0;
    while x <= 26.0 {
        let ours = log_erfc(x);
        let theirs = erfc(x).ln();
        let err = (ours - theirs).abs() / theirs.abs().max(1e-3);
        assert!(err < 1e-9, "x = {x}: {ours} vs {theirs} ({err:e})");
        x += 0.01;
    }
    // The far tail, where erfc underflows: log erfc(x) = −x² − log(x√π) − 1/(2x²) + 5/(8x⁴) − …
    for x in [30.0f64, 100.0, 1e3, 1e6] {
        let asym = -x * x - (x * std::f64::consts::PI.sqrt()).ln() - 0.5 / (x * x)
            + 0.625 / x.powi(4)
            - 37.0 / 24.0 / x.powi(6);
        assert!(
            ((log_erfc(x) - asym) / asym).abs() < 1e-14,
            "x = {x}: {} vs {asym}",
            log_erfc(x)
        );
    }
    assert_eq!(log_erfc(f64::INFINITY), f64::NEG_INFINITY);
    assert!((log_erfc(f64::NEG_INFINITY) - 2f64.ln()).abs() < 1e-15);
    assert_eq!(log_erfc(0.0), 0.0);
}

#[test]
fn epsilon_matches_the_dp_accounting_fixture() {
    let rows = reference_rows();
    assert_eq!(rows.len(), 300);
    let orders = default_orders();
    let mut worst: f64 = 0.0;
    let mut same_order = 0;
    let mut cache: Vec<((f64, f64), RdpCurve)> = Vec::new();
    for r in &rows {
        let curve = match cache.iter().find(|(k, _)| *k == (r.q, r.sigma)) {
            Some((_, c)) => c.clone(),
            None => {
                let c = poisson_subsampled_gaussian(r.q, r.sigma, &orders).expect("valid");
                cache.push(((r.q, r.sigma), c.clone()));
                c
            }
        };
        let ours = curve.self_compose(r.steps).epsilon(r.delta).expect("valid");
        let rel = (ours.epsilon - r.epsilon).abs() / r.epsilon;
        assert!(
            rel <= 1e-3,
            "q={} σ={} T={} δ={}: ε {} vs dp-accounting {}",
            r.q,
            r.sigma,
            r.steps,
            r.delta,
            ours.epsilon,
            r.epsilon
        );
        worst = worst.max(rel);
        same_order += usize::from(ours.order == r.order);
    }
    // The agreement is far better than the required 1e-3, and the best orders agree.
    assert!(worst < 1e-9, "worst relative error {worst:e}");
    assert_eq!(same_order, rows.len());
}

#[test]
fn gaussian_and_composition_closed_forms() {
    // q = 1: the Gaussian mechanism, ρ(α) = α/(2σ²); composition adds.
    let orders = vec![1.5, 2.0, 32.0];
    let c = poisson_subsampled_gaussian(1.0, 2.0, &orders).expect("valid");
    for (a, r) in c.orders().iter().zip(c.values()) {
        assert!((r - a / 8.0).abs() < 1e-15);
    }
    let twice = c.compose(&c).expect("same orders");
    assert_eq!(twice, c.self_compose(2));
    assert_eq!(c.self_compose(0), RdpCurve::zero(orders).expect("valid"));
    // Integer and fractional paths agree with each other around an integer order.
    let grid = [2.999_999, 3.0, 3.000_001];
    let v = poisson_subsampled_gaussian(0.05, 1.3, &grid).expect("valid");
    assert!((v.values()[0] - v.values()[1]).abs() < 1e-5 * v.values()[1]);
    assert!((v.values()[2] - v.values()[1]).abs() < 1e-5 * v.values()[1]);
    // Integer order 2 in closed form: A₂ = (1 − q)² + 2q(1 − q) + q² e^{1/σ²} = 1 + q²(e^{1/σ²} − 1).
    let (q, s) = (0.1, 1.5);
    let r = poisson_subsampled_gaussian(q, s, &[2.0]).expect("valid");
    let expected = (q * q * (1.0 / (s * s)).exp_m1()).ln_1p();
    assert!((r.values()[0] - expected).abs() < 1e-15);
}

#[test]
fn conversion_edge_cases() {
    let orders = default_orders();
    // Zero RDP gives ε = 0.
    let zero = RdpCurve::zero(orders.clone()).expect("valid");
    assert_eq!(zero.epsilon(1e-5).expect("valid").epsilon, 0.0);
    // Infinite RDP everywhere gives ε = ∞ at the first order.
    let inf = RdpCurve::new(orders.clone(), vec![f64::INFINITY; orders.len()]).expect("valid");
    let b = inf.epsilon(1e-5).expect("valid");
    assert_eq!(b.epsilon, f64::INFINITY);
    assert_eq!(b.order, 1.1);
    // Orders ≤ 1.01 are never used for the bound.
    let near_one = RdpCurve::new(vec![1.005], vec![0.1]).expect("valid");
    assert_eq!(
        near_one.epsilon(1e-5).expect("valid").epsilon,
        f64::INFINITY
    );
    // The bound at one order, by hand.
    let one = RdpCurve::new(vec![8.0], vec![0.5]).expect("valid");
    let e = 0.5 + (7.0f64 / 8.0).ln() - (1e-5f64 * 8.0).ln() / 7.0;
    assert!((one.epsilon(1e-5).expect("valid").epsilon - e).abs() < 1e-14);
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let o = default_orders();
    for q in [0.0, -0.1, 1.5, f64::NAN] {
        assert!(matches!(
            poisson_subsampled_gaussian(q, 1.0, &o),
            Err(AccountingError::InvalidSamplingRate(_))
        ));
    }
    for s in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        assert!(matches!(
            poisson_subsampled_gaussian(0.1, s, &o),
            Err(AccountingError::InvalidNoiseMultiplier(_))
        ));
    }
    for d in [0.0, 1.0, -1e-5, f64::NAN] {
        assert!(matches!(
            calibrate_sigma(0.1, 10, 1.0, d),
            Err(AccountingError::InvalidDelta(_))
        ));
    }
    for e in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        assert!(matches!(
            calibrate_sigma(0.1, 10, e, 1e-5),
            Err(AccountingError::InvalidEpsilon(_))
        ));
    }
    assert_eq!(
        calibrate_sigma(0.1, 0, 1.0, 1e-5),
        Err(AccountingError::NoSteps)
    );
    assert!(matches!(
        calibrate_sigma(1.5, 10, 1.0, 1e-5),
        Err(AccountingError::InvalidSamplingRate(_))
    ));
    for a in [1.0, 0.5, 2e5, f64::INFINITY, f64::NAN] {
        assert!(matches!(
            poisson_subsampled_gaussian(0.1, 1.0, &[a]),
            Err(AccountingError::InvalidOrder(_))
        ));
    }
    assert!(matches!(
        RdpCurve::new(vec![2.0], vec![-1.0]),
        Err(AccountingError::InvalidRdp { .. })
    ));
    assert!(matches!(
        RdpCurve::new(vec![2.0, 3.0], vec![1.0]),
        Err(AccountingError::LengthMismatch { .. })
    ));
    let a = RdpCurve::zero(vec![2.0]).expect("valid");
    let b = RdpCurve::zero(vec![3.0]).expect("valid");
    assert_eq!(a.compose(&b), Err(AccountingError::OrdersDiffer));
    // A target no σ ≤ MAX_SIGMA reaches: 10⁷ full-batch steps at ε = 10⁻⁶, δ = 10⁻¹².
    assert!(matches!(
        calibrate_sigma(1.0, 10_000_000, 1e-6, 1e-12),
        Err(AccountingError::Unreachable { .. })
    ));
}

#[test]
fn calibrated_sigma_is_the_smallest_meeting_the_target() {
    for (q, steps, eps, delta) in [
        (0.01, 1000, 1.0, 1e-5),
        (0.1, 50, 0.5, 1e-6),
        (1.0, 1, 2.0, 1e-5),
        (0.002, 10_000, 4.0, 1e-5),
    ] {
        let sigma = calibrate_sigma(q, steps, eps, delta).expect("reachable");
        let at = dp_sgd_epsilon(q, sigma, steps, delta)
            .expect("valid")
            .epsilon;
        assert!(at <= eps, "σ = {sigma} gives ε = {at} > {eps}");
        let below = dp_sgd_epsilon(q, sigma * (1.0 - 1e-3), steps, delta)
            .expect("valid")
            .epsilon;
        assert!(below > eps, "σ(1 − 1e-3) still gives ε = {below} ≤ {eps}");
    }
}

#[test]
fn epsilon_decreases_with_sigma_and_grows_with_steps_and_q() {
    let e = |q, s, t| dp_sgd_epsilon(q, s, t, 1e-5).expect("valid").epsilon;
    assert!(e(0.01, 1.0, 100) > e(0.01, 1.1, 100));
    assert!(e(0.01, 1.0, 100) < e(0.01, 1.0, 200));
    assert!(e(0.01, 1.0, 100) < e(0.02, 1.0, 100));
}
