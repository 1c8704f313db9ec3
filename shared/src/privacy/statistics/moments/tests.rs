//! Tests of the moments release: sensitivities, the noise of both mechanisms against their
//! stated laws (each with an under-noised mutant), post-processing and input errors.

use super::*;
use crate::privacy::discrete::testing::{grid_chi_square, on_grid};
use crate::privacy::guarantee::NeighbourRelation;
use crate::privacy::snapping::testing::snapped_chi_square;
use rand::RngExt;

fn features() -> Vec<FeatureSpec> {
    // Half-widths 4 and 2 (powers of two): raw ↔ unit conversions are exact.
    vec![
        FeatureSpec::bounded("age", 0.0, 8.0),
        FeatureSpec::bounded("score", -2.0, 2.0),
        FeatureSpec::bounded("dose", 10.0, 14.0),
    ]
}

fn plan(noise: MomentNoise) -> MomentsPlan {
    let delta = if noise == MomentNoise::Laplace {
        0.0
    } else {
        1e-5
    };
    MomentsPlan::new(
        &features(),
        MomentsParams {
            noise,
            epsilon: 2.0,
            delta,
            max_rows: 1000,
        },
    )
    .expect("valid plan")
}

fn dataset() -> (Vec<Vec<f64>>, Vec<bool>) {
    let rows = vec![
        vec![1.0, 0.5, 11.0],
        vec![9.0, -3.0, 13.0], // clipped to (8, −2, 13)
        vec![4.0, 1.25, 12.5],
        vec![2.5, -0.75, 10.5],
        vec![7.0, 2.0, 14.0],
        vec![3.0, 1.0, 12.0],
    ];
    (rows, vec![true, true, false, true, false, false])
}

const DRAWS: usize = 20_000;

/// Outputs (not minus exact) of coordinate `at` of the positive class.
fn outputs_of(p: &MomentsPlan, at: usize, seed: u64) -> (f64, Vec<f64>) {
    let (rows, labels) = dataset();
    let exact = p.exact(&rows, &labels).expect("exact");
    let mut rng = NoiseSource::seeded(seed);
    let outputs = (0..DRAWS)
        .map(|_| p.perturb(&exact, &mut rng).expect("perturb")[1][at])
        .collect();
    (exact[1][at], outputs)
}

#[test]
fn sensitivities_and_scales_follow_the_module_docs() {
    assert_eq!(coordinates_per_class(3), 1 + 3 + 6);
    assert_eq!(l1_sensitivity(3), 20.0);
    assert!((l2_sensitivity(3) - 2.0 * 9f64.sqrt()).abs() < 1e-12);
    assert!((l2_sensitivity(1) - 2.0 * 2f64.sqrt()).abs() < 1e-12);
    let l = plan(MomentNoise::Laplace);
    assert!((l.noise_scale() - 20.0 / 2.0).abs() < 1e-6);
    let achieved = l.laplace().expect("laplace").achieved;
    assert!(achieved <= 2.0 && achieved > 2.0 * (1.0 - 1e-9));
    assert_eq!(l.guarantee(), PrivacyGuarantee::replace_one(2.0, 0.0));
    assert!(l.rdp().is_none());
    let g = plan(MomentNoise::Gaussian);
    let z = g.multiplier().expect("gaussian");
    assert!((g.noise_scale() - z * 6.0).abs() < 1e-12);
    let eps = g.rdp().expect("curve").epsilon(1e-5).expect("eps").epsilon;
    assert!(eps <= 2.0 && eps > 1.9, "{eps}");
    assert_eq!(
        g.guarantee(),
        PrivacyGuarantee {
            epsilon: 2.0,
            delta: 1e-5,
            relation: NeighbourRelation::ReplaceOne
        }
    );
}

#[test]
fn laplace_noise_matches_snapped_laplace_at_the_stated_scale() {
    let p = plan(MomentNoise::Laplace);
    let m = p.laplace().expect("laplace").mechanism;
    // The count, a sum and a product coordinate.
    for (at, seed) in [(0, 1), (2, 2), (7, 3)] {
        let (x, outputs) = outputs_of(&p, at, seed);
        let pv = snapped_chi_square(&m, &outputs, x, m.scale());
        assert!(pv > 1e-3, "coordinate {at}: p = {pv}");
    }
}

#[test]
fn half_noise_laplace_mutant_fails_the_same_chi_square_test() {
    let p = plan(MomentNoise::Laplace);
    let m = p.laplace().expect("laplace").mechanism;
    let (x, outputs) = outputs_of(&p.halved(), 0, 4);
    let pv = snapped_chi_square(&m, &outputs, x, m.scale());
    assert!(pv < 1e-6, "mutant p = {pv}");
}

#[test]
fn gaussian_noise_is_the_discrete_gaussian_on_the_grid_and_half_noise_is_caught() {
    let p = plan(MomentNoise::Gaussian);
    let grid = p.grid().expect("gaussian");
    // The grid and the noise in cells are those of the stated σ = z·ℓ₂.
    assert!(grid.noise_std() >= p.noise_scale());
    assert!(grid.noise_std() <= p.noise_scale() * (1.0 + 2f64.powi(-19)));
    for (at, seed) in [(0, 5), (2, 6), (9, 7)] {
        let (x, outputs) = outputs_of(&p, at, seed);
        assert!(outputs.iter().all(|&y| on_grid(y, grid.grid())));
        let pv = grid_chi_square(grid, x, &outputs);
        assert!(pv > 1e-3, "coordinate {at}: p = {pv}");
    }
    let (x, mutant) = outputs_of(&p.halved(), 2, 8);
    let pv = grid_chi_square(grid, x, &mutant);
    assert!(pv < 1e-6, "mutant p = {pv}");
}

fn random_dataset(rng: &mut NoiseSource) -> (Vec<Vec<f64>>, Vec<bool>) {
    let n = 1 + (rng.random::<u64>() % 30) as usize;
    let rows = (0..n).map(|_| random_row(rng)).collect();
    let labels = (0..n).map(|_| rng.random::<bool>()).collect();
    (rows, labels)
}

/// Values beyond the bounds too, so clipping is exercised.
fn random_row(rng: &mut NoiseSource) -> Vec<f64> {
    features()
        .iter()
        .map(|f| {
            let w = f.hi - f.lo;
            f.lo - w / 4.0 + 1.5 * w * rng.random::<f64>()
        })
        .collect()
}

fn norms(a: &[Vec<f64>; 2], b: &[Vec<f64>; 2]) -> (f64, f64) {
    let diffs = a
        .iter()
        .flatten()
        .zip(b.iter().flatten())
        .map(|(x, y)| x - y);
    diffs.fold((0.0, 0.0), |(l1, l2), d| (l1 + d.abs(), l2 + d * d))
}

#[test]
fn replacing_one_row_moves_the_query_by_at_most_the_sensitivities() {
    let p = plan(MomentNoise::Gaussian);
    let d = features().len();
    let (l1_max, l2_max) = (l1_sensitivity(d), l2_sensitivity(d));
    let mut rng = NoiseSource::seeded(9);
    let mut attained = false;
    for _ in 0..2000 {
        let (rows, labels) = random_dataset(&mut rng);
        let before = p.exact(&rows, &labels).expect("exact");
        let i = (rng.random::<u64>() % rows.len() as u64) as usize;
        // The worst cases: a corner row (every |u| = 1) moved to the other class or kept in
        // it with every coordinate flipped; and a random replacement.
        let corner: Vec<f64> = features()
            .iter()
            .zip(&rows[i])
            .map(|(f, &v)| if v > (f.lo + f.hi) / 2.0 { f.lo } else { f.hi })
            .collect();
        let random = (random_row(&mut rng), rng.random::<bool>());
        let corner_source: Vec<f64> = features().iter().map(|f| f.hi).collect();
        let corner_target: Vec<f64> = features().iter().map(|f| f.lo).collect();
        let mut cases = vec![
            (rows.clone(), corner.clone(), !labels[i]),
            (rows.clone(), corner, labels[i]),
            (rows.clone(), random.0, random.1),
        ];
        // A corner row itself replaced by the opposite corner in the other class: ℓ₁ = 2K.
        let mut from_corner = rows.clone();
        from_corner[i] = corner_source;
        cases.push((from_corner, corner_target, !labels[i]));
        for (base, new_row, new_label) in cases {
            let before = if base == rows {
                before.clone()
            } else {
                p.exact(&base, &labels).expect("exact")
            };
            let (mut r2, mut l2) = (base.clone(), labels.clone());
            r2[i] = new_row;
            l2[i] = new_label;
            let after = p.exact(&r2, &l2).expect("exact");
            let (l1, l2sq) = norms(&before, &after);
            assert!(l1 <= l1_max + 1e-9, "ℓ₁ {l1} > {l1_max}");
            assert!(
                l2sq.sqrt() <= l2_max + 1e-9,
                "ℓ₂ {} > {l2_max}",
                l2sq.sqrt()
            );
            attained |= (l1 - l1_max).abs() < 1e-9;
        }
    }
    assert!(
        attained,
        "the ℓ₁ sensitivity is attained by a corner row changing class"
    );
}

/// Population mean, variance and covariance of the clipped raw values of one class.
fn reference(rows: &[Vec<f64>], labels: &[bool], class: bool) -> (Vec<f64>, Vec<f64>) {
    let f = features();
    let d = f.len();
    let clipped: Vec<Vec<f64>> = rows
        .iter()
        .zip(labels)
        .filter(|(_, l)| **l == class)
        .map(|(r, _)| r.iter().zip(&f).map(|(v, f)| v.clamp(f.lo, f.hi)).collect())
        .collect();
    let n = clipped.len() as f64;
    let mean: Vec<f64> = (0..d)
        .map(|j| clipped.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let mut cov = vec![0.0; d * d];
    for r in &clipped {
        for i in 0..d {
            for j in 0..d {
                cov[i * d + j] += (r[i] - mean[i]) * (r[j] - mean[j]) / n;
            }
        }
    }
    (mean, cov)
}

#[test]
fn released_statistics_are_those_of_the_clipped_raw_values() {
    // A huge ε: the Laplace noise is far below the quantisation error. (The Gaussian
    // mechanism shares `exact` and the post-processing; RDP cannot make its noise this small.)
    let noise = MomentNoise::Laplace;
    let p = MomentsPlan::new(
        &features(),
        MomentsParams {
            noise,
            epsilon: 1e7,
            delta: 0.0,
            max_rows: 10,
        },
    )
    .expect("plan");
    let (rows, labels) = dataset();
    let m = p
        .release(&rows, &labels, &mut NoiseSource::seeded(11))
        .expect("release");
    {
        for (k, class) in m.classes.iter().enumerate() {
            let (mean, cov) = reference(&rows, &labels, k == 1);
            assert!((class.count - 3.0).abs() < 1e-3, "{noise:?}");
            for j in 0..3 {
                // Quantisation: r·2^{-12} per value (r ≤ 4).
                assert!((class.mean[j] - mean[j]).abs() < 2e-3, "{noise:?} mean {j}");
                assert!((class.sum[j] - 3.0 * mean[j]).abs() < 6e-3);
                assert!((class.variance[j] - cov[j * 3 + j]).abs() < 1e-2);
            }
            for (a, b) in class.covariance.iter().zip(&cov) {
                assert!((a - b).abs() < 1e-2, "{noise:?} covariance {a} vs {b}");
            }
        }
    }
}

#[test]
fn post_processing_keeps_means_variances_and_correlations_in_range() {
    // A tiny ε: the noise dwarfs the data.
    let p = MomentsPlan::new(
        &features(),
        MomentsParams {
            noise: MomentNoise::Laplace,
            epsilon: 0.01,
            delta: 0.0,
            max_rows: 100,
        },
    )
    .expect("plan");
    let (rows, labels) = dataset();
    let mut rng = NoiseSource::seeded(12);
    for _ in 0..200 {
        let m = p.release(&rows, &labels, &mut rng).expect("release");
        for c in &m.classes {
            for (j, f) in features().iter().enumerate() {
                assert!((f.lo..=f.hi).contains(&c.mean[j]));
                let r = (f.hi - f.lo) / 2.0;
                assert!((0.0..=r * r).contains(&c.variance[j]));
                assert_eq!(c.covariance[j * 3 + j], c.variance[j]);
            }
            for i in 0..3 {
                for j in 0..3 {
                    let (a, b) = (c.covariance[i * 3 + j], c.covariance[j * 3 + i]);
                    assert_eq!(a, b);
                    assert!(a.abs() <= (c.variance[i] * c.variance[j]).sqrt() * (1.0 + 1e-12));
                }
            }
        }
    }
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let p = plan(MomentNoise::Laplace);
    let mut rng = NoiseSource::seeded(13);
    assert!(matches!(
        p.release(&[vec![f64::NAN, 0.0, 12.0]], &[true], &mut rng),
        Err(MomentsError::Input(InputError::NotANumber {
            row: 0,
            feature: 0
        }))
    ));
    assert!(matches!(
        p.release(&[vec![1.0]], &[true], &mut rng),
        Err(MomentsError::Input(InputError::RowLength { .. }))
    ));
    assert!(matches!(
        p.release(
            &vec![vec![1.0, 1.0, 12.0]; 1001],
            &vec![true; 1001],
            &mut rng
        ),
        Err(MomentsError::Input(InputError::TooManyRows { .. }))
    ));
    let params = |noise, epsilon, delta| MomentsParams {
        noise,
        epsilon,
        delta,
        max_rows: 10,
    };
    let f = features();
    assert!(matches!(
        MomentsPlan::new(&f, params(MomentNoise::Laplace, 0.0, 0.0)),
        Err(MomentsError::InvalidEpsilon(_))
    ));
    assert!(matches!(
        MomentsPlan::new(&f, params(MomentNoise::Laplace, 1.0, 1e-6)),
        Err(MomentsError::InvalidDelta { .. })
    ));
    assert!(matches!(
        MomentsPlan::new(&f, params(MomentNoise::Gaussian, 1.0, 0.0)),
        Err(MomentsError::InvalidDelta { .. })
    ));
    assert!(matches!(
        MomentsPlan::new(&[], params(MomentNoise::Laplace, 1.0, 0.0)),
        Err(MomentsError::Input(InputError::NoFeatures))
    ));
}
