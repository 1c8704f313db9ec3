//! Tests of the synthetic releases: the unit-cube map, Miura et al.'s (2022) guarantee and its
//! refusal, the propose-test-release step (its Laplace noise, its pass rate, its eigenvalue
//! sensitivity), the Gaussian variant's noise and sensitivities, and the sampled rows against the
//! fitted normal.

use super::*;
use crate::privacy::discrete::testing::{
    chi_square_by_cdf, discrete_laplace_cdf, edges_for, grid_chi_square, on_grid,
};
use rand::RngExt;

const DRAWS: usize = 20_000;

fn features() -> Vec<FeatureSpec> {
    vec![
        FeatureSpec::bounded("age", 0.0, 100.0),
        FeatureSpec::bounded("score", -2.0, 2.0),
    ]
}

/// n random points of [−1, 1]^dim, some at the faces.
fn random_points(n: usize, dim: usize, rng: &mut NoiseSource) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| {
            (0..dim)
                .map(|_| (-1.2 + 2.4 * rng.random::<f64>()).clamp(-1.0, 1.0))
                .collect()
        })
        .collect()
}

#[test]
fn rows_map_to_the_unit_cube_and_back() {
    let rows = vec![vec![25.0, 1.0], vec![150.0, -3.0], vec![50.0, 0.0]];
    let points = to_unit_cube(&features(), &rows, &[true, false, true]).expect("map");
    assert_eq!(points[0], vec![-0.5, 0.5, 1.0]);
    assert_eq!(points[1], vec![1.0, -1.0, -1.0], "clipped to the bounds");
    assert_eq!(points[2], vec![0.0, 0.0, 1.0]);
    assert_eq!(
        from_unit_cube(&features(), &points[0]),
        (vec![25.0, 1.0], true)
    );
    assert_eq!(
        from_unit_cube(&features(), &points[1]),
        (vec![100.0, -2.0], false)
    );
    // Out-of-cube and NaN coordinates of a synthetic point land inside the bounds.
    let (raw, positive) = from_unit_cube(&features(), &[3.0, f64::NAN, 0.2]);
    assert_eq!((raw, positive), (vec![100.0, 0.0], true));
    assert!(matches!(
        to_unit_cube(&features(), &rows, &[true]),
        Err(MvnReleaseError::Input(InputError::LabelCount { .. }))
    ));
    assert!(matches!(
        to_unit_cube(&features(), &[vec![f64::NAN, 0.0]], &[true]),
        Err(MvnReleaseError::Input(InputError::NotANumber { .. }))
    ));
}

fn plain(n: u64, features: usize, sigma: f64) -> Result<MvnPlain, MvnReleaseError> {
    MvnPlain::new(
        n,
        features,
        MvnPlainParams {
            rows: 50,
            sigma,
            delta: 1e-6,
            test_epsilon: 0.5,
        },
    )
}

#[test]
fn plain_guarantee_is_the_test_plus_theorem_3_2_over_the_rows() {
    let p = plain(100_000, 5, 0.1).expect("a bound exists");
    let analysis = MvnRdp::new(100_000, 6, 0.1, 50, NRegime::Public).expect("domain");
    let expected = analysis
        .default_curve()
        .expect("curve")
        .epsilon(0.5e-6)
        .expect("epsilon")
        .epsilon;
    assert_eq!(p.mvn_epsilon(), expected);
    assert_eq!(
        p.guarantee(),
        PrivacyGuarantee::replace_one(0.5 + expected, 1e-6)
    );
    // m rows cost m times one row at every order (Proposition 2.4).
    let one = MvnRdp::new(100_000, 6, 0.1, 1, NRegime::Public).expect("domain");
    assert!(
        (analysis.epsilon(2.0).expect("order") - 50.0 * one.epsilon(2.0).expect("order")).abs()
            < 1e-9
    );
}

#[test]
fn the_threshold_is_the_smallest_integer_whose_discrete_tail_is_within_delta0() {
    for (delta, e0) in [(1e-6, 0.5), (1e-5, 0.1), (1e-9, 3.0), (0.3, 8.0)] {
        let p = MvnPlain::new(
            100_000,
            5,
            MvnPlainParams {
                rows: 50,
                sigma: 0.1,
                delta,
                test_epsilon: e0,
            },
        )
        .expect("plan");
        let t = p.threshold();
        assert_eq!(t, t.round(), "an integer");
        // P(Z ≥ k) = r^k/(1 + r) for Lap_ℤ(1/ε₀), r = e^{−ε₀}.
        let tail = |k: f64| (-e0 * k).exp() / (1.0 + (-e0).exp());
        assert!(
            tail(t - 1.0) <= delta / 2.0,
            "δ = {delta}, ε₀ = {e0}: T = {t}"
        );
        // The smallest such T (up to the 2^-30 margin): one less would not do.
        assert!(
            tail(t - 2.0) > delta / 2.0 * (1.0 - 1e-6),
            "δ = {delta}, ε₀ = {e0}"
        );
        // The continuous Laplace's threshold t = 1 + ln(1/δ)/ε₀ ("k̂ + Z > t", i.e.
        // Z ≥ ⌊t⌋ when k̂ = 1) is not enough for the discrete tail here.
        if (delta, e0) == (1e-9, 3.0) {
            let continuous = 1.0 + (1.0 / delta).ln() / e0;
            assert!(tail(continuous.floor()) > delta / 2.0, "{continuous}");
        }
    }
}

#[test]
fn plain_release_without_a_bound_is_refused_with_the_numbers() {
    // n = 400, D = 9, σ = 0.01: τ = 3600, limit 400²/(3600·399) ≈ 0.111.
    let e = plain(400, 8, 0.01).expect_err("no bound");
    let MvnReleaseError::NoBound { limit, .. } = e else {
        panic!("{e:?}")
    };
    assert!((limit - 160_000.0 / (3600.0 * 399.0)).abs() < 1e-12);
    let message = e.to_string();
    assert!(
        message.contains("Theorem 3.2") && message.contains("n = 400"),
        "{message}"
    );
    assert!(matches!(
        plain(400, 8, 2.0),
        Err(MvnReleaseError::Rdp(MvnRdpError::InvalidSigma(_)))
    ));
    assert!(matches!(
        plain(5, 8, 0.5),
        Err(MvnReleaseError::Rdp(MvnRdpError::TooFewRecords { .. }))
    ));
}

fn lambda_min(points: &[Vec<f64>]) -> f64 {
    let dim = points[0].len();
    empirical(points, dim).1.symmetric_eigenvalues().min()
}

#[test]
fn replacing_one_point_moves_the_smallest_eigenvalue_by_at_most_its_sensitivity() {
    let mut rng = NoiseSource::seeded(1);
    let mut largest_ratio: f64 = 0.0;
    for _ in 0..3000 {
        let dim = 1 + (rng.random::<u64>() % 4) as usize;
        let n = dim + 2 + (rng.random::<u64>() % 30) as usize;
        let points = random_points(n, dim, &mut rng);
        let bound = eigen_sensitivity(n as u64, dim);
        let before = lambda_min(&points);
        let i = (rng.random::<u64>() % n as u64) as usize;
        let corner: Vec<f64> = points[i]
            .iter()
            .map(|&v| if v > 0.0 { -1.0 } else { 1.0 })
            .collect();
        let mean: Vec<f64> = (0..dim)
            .map(|j| points.iter().map(|p| p[j]).sum::<f64>() / n as f64)
            .collect();
        let towards_mean = mean.iter().map(|m| m.clamp(-1.0, 1.0)).collect();
        for new in [
            corner,
            towards_mean,
            random_points(1, dim, &mut rng).remove(0),
        ] {
            let mut after = points.clone();
            after[i] = new;
            let moved = (lambda_min(&after) - before).abs();
            assert!(moved <= bound * (1.0 + 1e-9), "moved {moved} > Δ_λ {bound}");
            largest_ratio = largest_ratio.max(moved / bound);
        }
    }
    // The bound is not vacuous: some replacement moves λ_min by a good part of it.
    assert!(largest_ratio > 0.2, "largest moved/Δ_λ = {largest_ratio}");
}

fn noisy(p: &MvnPlain, distance: f64, seed: u64) -> Vec<i128> {
    let mut rng = NoiseSource::seeded(seed);
    (0..DRAWS)
        .map(|_| p.noisy_distance(distance, &mut rng).expect("noise"))
        .collect()
}

#[test]
fn the_test_statistic_gets_discrete_laplace_noise_of_scale_one_over_epsilon0() {
    let p = plain(100_000, 1, 0.1).expect("plan");
    let cdf = discrete_laplace_cdf(2.0);
    let edges = edges_for(&cdf, DRAWS, -80, 1);
    let noise: Vec<i128> = noisy(&p, 7.0, 2).iter().map(|z| z - 7).collect();
    let pv = chi_square_by_cdf(&noise, &edges, &cdf);
    assert!(pv > 1e-3, "p = {pv}");
    // The mutant: ε₀ doubled in the noise only (half the noise).
    let mut mutant = p.clone();
    mutant.params.test_epsilon = 1.0;
    let noise: Vec<i128> = noisy(&mutant, 7.0, 3).iter().map(|z| z - 7).collect();
    let pv = chi_square_by_cdf(&noise, &edges, &cdf);
    assert!(pv < 1e-6, "mutant p = {pv}");
}

#[test]
fn the_test_passes_with_the_discrete_laplace_tail_probability() {
    let p = plain(100_000, 1, 0.1).expect("plan");
    // k̂ six units below T: it passes when Z ≥ 6, P = r^6/(1 + r), r = e^{−1/2}.
    let t = p.threshold();
    let passes = noisy(&p, t - 6.0, 4)
        .iter()
        .filter(|&&z| z as f64 >= t)
        .count();
    let r = (-0.5f64).exp();
    let expected = r.powi(6) / (1.0 + r);
    let se = (expected * (1.0 - expected) / DRAWS as f64).sqrt();
    let observed = passes as f64 / DRAWS as f64;
    assert!(
        (observed - expected).abs() < 5.0 * se,
        "{observed} vs {expected}"
    );
}

#[test]
fn data_outside_the_assumption_is_refused_by_the_test() {
    // Every label +1: the label coordinate is constant, λ_min = 0 < σ.
    let mut rng = NoiseSource::seeded(4);
    let n = 2000;
    let mut points = random_points(n, 2, &mut rng);
    for p in &mut points {
        p[1] = 1.0;
    }
    let p = MvnPlain::new(
        n as u64,
        1,
        MvnPlainParams {
            rows: 10,
            sigma: 0.2,
            delta: 1e-6,
            test_epsilon: 1.0,
        },
    )
    .expect("plan");
    // (0 − σ)/Δ_λ = −0.2/0.005.
    assert!(p.distance(&points).expect("distance") <= -40.0);
    for _ in 0..200 {
        assert_eq!(
            p.release(&points, &mut rng),
            Err(MvnReleaseError::TestFailed)
        );
    }
}

/// n points (u, label): u uniform in [−0.5, 0.5], label +1 with probability (1 + u)/2, so that
/// E[label | u] = u: covariance [[1/12, 1/12], [1/12, 1]], smallest eigenvalue ≈ 0.076.
fn labelled_points(n: usize, rng: &mut NoiseSource) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| {
            let u = rng.random::<f64>() - 0.5;
            let label = if u + 2.0 * rng.random::<f64>() - 1.0 > 0.0 {
                1.0
            } else {
                -1.0
            };
            vec![u, label]
        })
        .collect()
}

fn column_mean_and_variance(values: &[f64], dim: usize, j: usize) -> (f64, f64) {
    let column: Vec<f64> = values.iter().skip(j).step_by(dim).copied().collect();
    let n = column.len() as f64;
    let mean = column.iter().sum::<f64>() / n;
    (
        mean,
        column.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n,
    )
}

#[test]
fn plain_rows_are_drawn_from_the_empirical_normal() {
    let mut rng = NoiseSource::seeded(5);
    let n = 20_000;
    let points = labelled_points(n, &mut rng);
    let m = 20_000;
    let p = MvnPlain::new(
        n as u64,
        1,
        MvnPlainParams {
            rows: m,
            sigma: 0.05,
            delta: 1e-6,
            test_epsilon: 1.0,
        },
    )
    .expect("plan");
    let (mean, cov) = empirical(&points, 2);
    let out = p
        .release(&points, &mut rng)
        .expect("the assumption holds by far");
    assert_eq!((out.dim, out.rows, out.values.len()), (2, m, 2 * m));
    assert!(out.values.iter().all(|v| (-1.0..=1.0).contains(v)));
    assert_eq!(out.guarantee, p.guarantee());
    // The feature coordinate (3.4 standard deviations from the faces: clipping is negligible).
    let (sm, sv) = column_mean_and_variance(&out.values, 2, 0);
    let sd = cov[(0, 0)].sqrt();
    assert!(
        (sm - mean[0]).abs() < 5.0 * sd / (m as f64).sqrt(),
        "{sm} vs {}",
        mean[0]
    );
    assert!(
        (sv - cov[(0, 0)]).abs() < 0.05 * cov[(0, 0)],
        "{sv} vs {}",
        cov[(0, 0)]
    );
    // The feature and the label are positively correlated in the data and in the rows.
    let covariance: f64 = out
        .values
        .chunks(2)
        .map(|r| (r[0] - sm) * r[1])
        .sum::<f64>()
        / m as f64;
    assert!(
        cov[(0, 1)] > 0.07 && covariance > 0.5 * cov[(0, 1)],
        "{covariance}"
    );
}

fn gaussian(n: u64, features: usize, epsilon: f64) -> MvnGaussian {
    MvnGaussian::new(
        n,
        features,
        MvnGaussianParams {
            rows: 40,
            epsilon,
            delta: 1e-5,
            eigen_floor: 1e-3,
        },
    )
    .expect("plan")
}

#[test]
fn gaussian_noise_is_discrete_on_the_grids_and_half_noise_is_caught() {
    let g = gaussian(50, 2, 1.0);
    let mut rng = NoiseSource::seeded(6);
    let points = random_points(50, 3, &mut rng);
    let exact = g.exact(&points).expect("exact");
    let [mean_grid, second_grid] = g.grids();
    // The grids carry the stated standard deviations (up to 2^-20 for the rounding).
    let (sm, ss) = g.noise_stds();
    for (grid, std) in [(mean_grid, sm), (second_grid, ss)] {
        assert!(grid.noise_std() >= std && grid.noise_std() <= std * (1.0 + 2f64.powi(-19)));
    }
    let draws = |plan: &MvnGaussian, rng: &mut NoiseSource| -> (Vec<f64>, Vec<f64>) {
        (0..DRAWS)
            .map(|_| {
                let (m, s) = plan.perturb(&exact, rng).expect("perturb");
                (m[1], s[2])
            })
            .unzip()
    };
    let (means, seconds) = draws(&g, &mut rng);
    assert!(means.iter().all(|&y| on_grid(y, mean_grid.grid())));
    assert!(seconds.iter().all(|&y| on_grid(y, second_grid.grid())));
    let pv = grid_chi_square(mean_grid, exact.0[1], &means);
    assert!(pv > 1e-3, "mean p = {pv}");
    let pv = grid_chi_square(second_grid, exact.1[2], &seconds);
    assert!(pv > 1e-3, "second moment p = {pv}");
    let (means, seconds) = draws(&g.halved(), &mut rng);
    let pv = grid_chi_square(mean_grid, exact.0[1], &means);
    assert!(pv < 1e-6, "mutant mean p = {pv}");
    let pv = grid_chi_square(second_grid, exact.1[2], &seconds);
    assert!(pv < 1e-6, "mutant second moment p = {pv}");
}

#[test]
fn gaussian_noise_is_calibrated_to_epsilon_and_the_sensitivities() {
    let g = gaussian(50, 2, 1.0);
    let (dm, ds) = g.sensitivities();
    assert!((dm - 2.0 * 3f64.sqrt() / 50.0).abs() < 1e-15);
    assert!((ds - (9.0f64 + 1.5).sqrt() / 50.0).abs() < 1e-15);
    let eps = g.rdp().expect("curve").epsilon(1e-5).expect("eps").epsilon;
    assert!(eps <= 1.0 && eps > 0.95, "{eps}");
    // The two blocks together: α·(Δ_μ²/(2σ_μ²) + Δ_M²/(2σ_M²)) = α/(2z²), the curve.
    let (sm, ss) = g.noise_stds();
    let rdp_at_2 = 2.0 * (dm * dm / (2.0 * sm * sm) + ds * ds / (2.0 * ss * ss));
    let curve = g.rdp().expect("curve");
    let at = curve
        .orders()
        .iter()
        .position(|&a| a == 2.0)
        .expect("order 2");
    assert!((rdp_at_2 - curve.values()[at]).abs() < 1e-12 * rdp_at_2);
    assert_eq!(g.guarantee(), PrivacyGuarantee::replace_one(1.0, 1e-5));
}

#[test]
fn replacing_one_point_moves_the_moments_by_at_most_the_sensitivities() {
    let mut rng = NoiseSource::seeded(7);
    let mut largest: [f64; 2] = [0.0; 2];
    for _ in 0..2000 {
        let features = (rng.random::<u64>() % 4) as usize;
        let dim = features + 1;
        let n = 1 + (rng.random::<u64>() % 20) as usize;
        let g = gaussian(n as u64, features, 1.0);
        let (dm, ds) = g.sensitivities();
        let points = random_points(n, dim, &mut rng);
        let before = g.exact(&points).expect("exact");
        let i = (rng.random::<u64>() % n as u64) as usize;
        // Worst cases: the opposite corner; a corner orthogonal-ish to the point; the origin;
        // a random point.
        let opposite: Vec<f64> = points[i]
            .iter()
            .map(|&v| if v > 0.0 { -1.0 } else { 1.0 })
            .collect();
        let alternating: Vec<f64> = (0..dim)
            .map(|j| if j % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let mut cases = vec![
            opposite,
            alternating,
            vec![0.0; dim],
            random_points(1, dim, &mut rng).remove(0),
        ];
        let mut from_corner = points.clone();
        from_corner[i] = vec![1.0; dim];
        for (base, new) in cases
            .drain(..)
            .map(|c| (points.clone(), c))
            .chain([(from_corner, vec![0.0; dim])])
        {
            let start = g.exact(&base).expect("exact");
            let mut after = base.clone();
            after[i] = new;
            let end = g.exact(&after).expect("exact");
            let norm = |a: &[f64], b: &[f64]| {
                a.iter()
                    .zip(b)
                    .map(|(x, y)| (x - y) * (x - y))
                    .sum::<f64>()
                    .sqrt()
            };
            let (m, s) = (norm(&start.0, &end.0), norm(&start.1, &end.1));
            assert!(m <= dm * (1.0 + 1e-12), "mean moved {m} > {dm}");
            assert!(s <= ds * (1.0 + 1e-12), "second moment moved {s} > {ds}");
            largest = [largest[0].max(m / dm), largest[1].max(s / ds)];
        }
        let _ = before;
    }
    assert!(
        largest[0] > 0.999,
        "the mean's sensitivity is attained: {largest:?}"
    );
    assert!(
        largest[1] > 0.9,
        "the second moment's is nearly attained: {largest:?}"
    );
}

#[test]
fn gaussian_rows_follow_the_data_when_the_noise_is_small() {
    let mut rng = NoiseSource::seeded(8);
    let n = 20_000;
    let points = labelled_points(n, &mut rng);
    let g = MvnGaussian::new(
        n as u64,
        1,
        MvnGaussianParams {
            rows: 20_000,
            epsilon: 1.0,
            delta: 1e-6,
            eigen_floor: 1e-3,
        },
    )
    .expect("plan");
    let out = g.release(&points, &mut rng).expect("release");
    assert_eq!((out.dim, out.rows, out.values.len()), (2, 20_000, 40_000));
    assert!(out.values.iter().all(|v| (-1.0..=1.0).contains(v)));
    let (mean, cov) = empirical(&points, 2);
    let (sm, sv) = column_mean_and_variance(&out.values, 2, 0);
    // Noise stds ≈ z·3e-4 and sampling error ≈ 2e-3: both far below these tolerances.
    assert!((sm - mean[0]).abs() < 0.01, "{sm} vs {}", mean[0]);
    assert!(
        (sv - cov[(0, 0)]).abs() < 0.1 * cov[(0, 0)],
        "{sv} vs {}",
        cov[(0, 0)]
    );
}

#[test]
fn gaussian_rows_exist_even_when_the_noise_swamps_the_moments() {
    // n = 10: the noisy covariance is far from positive semi-definite; the floor makes it one.
    let mut rng = NoiseSource::seeded(9);
    let g = gaussian(10, 3, 0.5);
    let points = random_points(10, 4, &mut rng);
    for _ in 0..50 {
        let out = g.release(&points, &mut rng).expect("release");
        assert_eq!(out.values.len(), 40 * 4);
        assert!(
            out.values
                .iter()
                .all(|v| (-1.0..=1.0).contains(v) && v.is_finite())
        );
    }
}

#[test]
fn invalid_parameters_and_points_are_typed_errors() {
    let params = |rows, epsilon, delta, eigen_floor| MvnGaussianParams {
        rows,
        epsilon,
        delta,
        eigen_floor,
    };
    for bad in [
        params(0, 1.0, 1e-6, 1e-3),
        params(5, 0.0, 1e-6, 1e-3),
        params(5, 1.0, 0.0, 1e-3),
        params(5, 1.0, 1e-6, 0.0),
        params(5, 1.0, 1e-6, 2.0),
    ] {
        assert!(
            matches!(
                MvnGaussian::new(10, 2, bad),
                Err(MvnReleaseError::InvalidParameter { .. })
            ),
            "{bad:?}"
        );
    }
    let g = gaussian(3, 1, 1.0);
    let mut rng = NoiseSource::seeded(10);
    let e = g.release(&[vec![0.0, 1.0]], &mut rng).expect_err("count");
    assert!(e.to_string().contains("expected 3 points"), "{e}");
    let e = g
        .release(&[vec![0.0, 1.0], vec![0.0, 1.5], vec![0.0, -1.0]], &mut rng)
        .expect_err("outside");
    assert!(e.to_string().contains("point 1, coordinate 1"), "{e}");
    assert!(
        !e.to_string().contains("1.5"),
        "no value of the data in the message"
    );
}
