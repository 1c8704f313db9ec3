use super::*;
use crate::data::synthetic::{SyntheticSpec, generate};
use crate::privacy::snapping::laplace_f64;
use crate::privacy::statistics::smooth_median::testing::{median_chi_square, releases};
use crate::privacy::statistics::smooth_median::{clipped_sorted, median, smooth_sensitivity};
use crate::util::seed::derived_rng;
use rand::RngExt;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The utility and comparison data: θ* of the measurements in the module docs.
const TRUTH: [f64; 5] = [6.0, -4.0, 3.0, 0.0, 1.0];

fn params(epsilon: f64, blocks: usize, l2: f64, bound: f64) -> SampleAggregateParams {
    SampleAggregateParams {
        epsilon,
        delta: 1e-5,
        blocks,
        l2,
        bound,
    }
}

/// Rows uniform in [−1, 1]^D/√D (so ‖x‖ ≤ 1), labels with P[y = 1 | x] = σ(⟨θ*, x⟩).
fn logistic_rows(n: usize, truth: &[f64], rng: &mut impl rand::Rng) -> Dataset {
    let d = truth.len();
    let scale = 1.0 / (d as f64).sqrt();
    let mut x = Vec::with_capacity(n * d);
    let mut y = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d).map(|_| rng.random_range(-scale..scale)).collect();
        let z: f64 = row.iter().zip(truth).map(|(a, b)| a * b).sum();
        let p = 1.0 / (1.0 + (-z).exp());
        y.push(if rng.random::<f64>() < p { 1.0 } else { -1.0 });
        x.extend(row);
    }
    Dataset::new(x, y, d)
}

fn column(estimates: &[Vec<f64>], j: usize) -> Vec<f64> {
    estimates.iter().map(|e| e[j]).collect()
}

/// The exact lower median of coordinate j of clipped estimates.
fn median_of(estimates: &[Vec<f64>], j: usize, bound: f64) -> f64 {
    let x = clipped_sorted(&column(estimates, j), -bound, bound).expect("no NaN");
    median(&x).expect("non-empty")
}

/// LS(x) = max(x_{m+1} − x_m, x_m − x_{m−1}) of the lower median, lo/hi beyond the ends (seed
/// 002 slide 25).
fn local_sensitivity(sorted: &[f64], lo: f64, hi: f64) -> f64 {
    let m = (sorted.len() - 1) / 2;
    let above = sorted.get(m + 1).copied().unwrap_or(hi);
    let below = if m == 0 { lo } else { sorted[m - 1] };
    (above - sorted[m]).max(sorted[m] - below)
}

#[test]
fn the_budget_is_split_equally_over_the_coordinates() {
    let sa = SampleAggregate::new(params(1.5, 7, 0.1, 4.0), 3).expect("valid");
    let c = sa.coordinate_params();
    assert_eq!(c.epsilon, 0.5);
    assert!((c.delta - 1e-5 / 3.0).abs() < 1e-20);
    assert_eq!((c.lo, c.hi), (-4.0, 4.0));
    // β = ε′/(2 ln(2/δ′)) of smooth_median.
    assert!((c.beta() - 0.5 / (2.0 * (6e5f64).ln())).abs() < 1e-15);
    assert_eq!(sa.guarantee(), PrivacyGuarantee::replace_one(1.5, 1e-5));
    assert_eq!(sa.dim(), 3);
    assert_eq!(sa.params().blocks, 7);
}

/// Fixed block estimates: k = 15, D = 3, with ties, values beyond ±B (clipped) and spreads that
/// differ per coordinate.
fn fixed_estimates() -> Vec<Vec<f64>> {
    (0..15)
        .map(|b| {
            let t = b as f64;
            vec![
                0.1 * t - 0.3,
                (t * 0.7).sin() * 3.0,
                if b < 6 { 1.0 } else { -7.0 + t },
            ]
        })
        .collect()
}

/// 2·max(S*, (hi − lo)·2^{-30})/ε′ ≤ `scale` ≤ the same·(1 + 2^{-19}) (smooth_median's grid).
fn is_the_median_scale(scale: f64, column: &[f64], c: &SmoothMedianParams) -> bool {
    let x = clipped_sorted(column, c.lo, c.hi).expect("values");
    let s = smooth_sensitivity(&x, c.lo, c.hi, c.beta()).max((c.hi - c.lo) * 2f64.powi(-30));
    let stated = 2.0 * s / c.epsilon;
    scale >= stated && scale <= stated * (1.0 + 2f64.powi(-19))
}

#[test]
fn noise_of_each_coordinate_is_discrete_laplace_at_twice_the_smooth_sensitivity_over_epsilon_share()
{
    let sa = SampleAggregate::new(params(3.0, 15, 0.1, 5.0), 3).expect("valid");
    let estimates = fixed_estimates();
    let scales = sa.noise_scales(&estimates).expect("scales");
    let c = sa.coordinate_params();
    let mut rng = NoiseSource::seeded(31);
    let draws: Vec<Vec<f64>> = (0..20_000)
        .map(|_| sa.aggregate(&estimates, &mut rng).expect("aggregate"))
        .collect();
    for (j, &scale) in scales.iter().enumerate() {
        // The scale is ≈ 2·S*/ε′ of the clipped column, computed independently here.
        let col = column(&estimates, j);
        assert!(is_the_median_scale(scale, &col, c), "{j}");
        let sample: Vec<f64> = draws.iter().map(|d| d[j]).collect();
        let p = median_chi_square(&col, c, &sample);
        assert!(p > 1e-3, "coordinate {j}: p = {p}");
        // The half-noise mutant fails the same test.
        let half = releases(&col, c, 0.5, 20_000, &mut rng);
        let pm = median_chi_square(&col, c, &half);
        assert!(pm < 1e-6, "coordinate {j}: half-noise mutant p = {pm}");
        // The no-composition mutant (each coordinate calibrated to the whole (ε, δ)) too.
        let whole = SmoothMedianParams {
            epsilon: 3.0,
            delta: 1e-5,
            lo: -5.0,
            hi: 5.0,
        };
        let mutant_scale = smooth_median::noise_scale(&col, &whole).expect("ok");
        assert!(mutant_scale < scale / 2.0);
        let mutant = releases(&col, &whole, 1.0, 20_000, &mut rng);
        assert!(median_chi_square(&col, c, &mutant) < 1e-6);
    }
}

#[test]
fn the_partition_is_uniform_and_data_independent() {
    // n = 10, k = 3, m = 3: row 0 lands in each block with probability 3/10, unused 1/10.
    let sa = SampleAggregate::new(params(1.0, 3, 0.1, 1.0), 1).expect("valid");
    let mut rng = NoiseSource::seeded(32);
    let draws = 20_000;
    let mut cells = [0.0f64; 4];
    for _ in 0..draws {
        let blocks = sa.partition(10, &mut rng).expect("partition");
        assert_eq!(blocks.len(), 3);
        let mut seen = [false; 10];
        for block in &blocks {
            assert_eq!(block.len(), 3);
            for &i in block {
                assert!(!seen[i], "blocks are disjoint");
                seen[i] = true;
            }
        }
        let cell = blocks.iter().position(|b| b.contains(&0)).unwrap_or(3);
        cells[cell] += 1.0;
    }
    let expected = [0.3, 0.3, 0.3, 0.1].map(|p| p * draws as f64);
    let stat: f64 = cells
        .iter()
        .zip(&expected)
        .map(|(o, e)| (o - e) * (o - e) / e)
        .sum();
    let p = 1.0 - ChiSquared::new(3.0).expect("df").cdf(stat);
    assert!(p > 1e-3, "p = {p}, cells {cells:?}");
    // The same seed gives the same partition whatever the data (it sees only n).
    assert_eq!(
        sa.partition(10, &mut NoiseSource::seeded(5)),
        sa.partition(10, &mut NoiseSource::seeded(5))
    );
}

/// A replacement row for row i: the worst cases (the opposite unit vector with the other label,
/// a unit corner, a NaN row that makes the block's fit fail) and a random row.
fn replacement(data: &Dataset, i: usize, case: usize, rng: &mut NoiseSource) -> (Vec<f64>, f64) {
    let d = data.dim();
    match case {
        0 => {
            let x = data.row(i);
            let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt().max(1e-12);
            (x.iter().map(|v| -v / norm).collect(), -data.label(i))
        }
        1 => {
            let mut x = vec![0.0; d];
            x[0] = 1.0;
            (x, -data.label(i))
        }
        2 => (vec![f64::NAN; d], 1.0),
        _ => {
            let row = logistic_rows(1, &TRUTH[..d], rng);
            (row.row(0).to_vec(), row.label(0))
        }
    }
}

fn replaced(data: &Dataset, i: usize, row: &[f64], label: f64) -> Dataset {
    let d = data.dim();
    let mut x = data.features().to_vec();
    x[i * d..(i + 1) * d].copy_from_slice(row);
    let mut y = data.labels().to_vec();
    y[i] = label;
    Dataset::new(x, y, d)
}

#[test]
fn replacing_one_row_changes_at_most_one_block_estimate() {
    let mut rng = NoiseSource::seeded(33);
    let (mut one_changed, mut clipped) = (0, 0);
    for trial in 0..300u64 {
        let n = 20 + (rng.random::<u64>() % 150) as usize;
        let k = 3 + (rng.random::<u64>() % 8) as usize;
        // A small λ and a small B, so that some fits are clipped.
        let sa = SampleAggregate::new(params(1.0, k, 0.05, 0.5), 3).expect("valid");
        let data = logistic_rows(n, &TRUTH[..3], &mut rng);
        let i = (rng.random::<u64>() % n as u64) as usize;
        let (row, label) = replacement(&data, i, (trial % 4) as usize, &mut rng);
        let other = replaced(&data, i, &row, label);
        let seed = 1000 + trial;
        let before = sa
            .block_estimates(&data, &mut NoiseSource::seeded(seed))
            .expect("estimates");
        let after = sa
            .block_estimates(&other, &mut NoiseSource::seeded(seed))
            .expect("estimates");
        let blocks = sa
            .partition(n, &mut NoiseSource::seeded(seed))
            .expect("partition");
        assert_eq!(before.len(), k);
        assert_eq!(after.len(), k);
        let changed: Vec<usize> = (0..k).filter(|&b| before[b] != after[b]).collect();
        assert!(changed.len() <= 1, "blocks {changed:?} changed");
        // Only the block holding row i may change (none if row i is a leftover row).
        for &b in &changed {
            assert!(blocks[b].contains(&i));
            one_changed += 1;
        }
        for e in before.iter().chain(&after) {
            assert!(e.iter().all(|v| v.abs() <= 0.5));
            clipped += e.iter().filter(|v| v.abs() == 0.5).count();
        }
    }
    // Not vacuous: most replacements change their block, and clipping happened.
    assert!(one_changed > 200, "{one_changed}");
    assert!(clipped > 100, "{clipped}");
}

#[test]
fn a_failed_block_fit_falls_back_to_zero_and_is_not_skipped() {
    let mut rng = NoiseSource::seeded(34);
    let data = logistic_rows(60, &TRUTH[..3], &mut rng);
    let bad = replaced(&data, 17, &[f64::NAN; 3], 1.0);
    let sa = SampleAggregate::new(params(1.0, 6, 0.1, 2.0), 3).expect("valid");
    let estimates = sa
        .block_estimates(&bad, &mut NoiseSource::seeded(7))
        .expect("estimates");
    let blocks = sa.partition(60, &mut NoiseSource::seeded(7)).expect("ok");
    assert_eq!(estimates.len(), 6);
    let b = blocks
        .iter()
        .position(|r| r.contains(&17))
        .expect("m·k = n");
    assert_eq!(estimates[b], vec![0.0; 3]);
    assert!(estimates.iter().flatten().all(|v| v.is_finite()));
    let r = sa
        .release(&bad, &mut NoiseSource::seeded(7))
        .expect("release");
    assert!(r.coefficients.iter().all(|v| v.is_finite()));
}

#[test]
fn the_median_moves_by_at_most_its_smooth_sensitivity_when_one_block_changes() {
    // Worst-case sensitivity of the aggregation: the k block values of each coordinate change
    // in one place, by at most 2B (clipping), and the median moves by at most LS ≤ S*. The
    // replaced block takes the extremes ±B (the worst a replaced row can do after clipping) or
    // a random value; smooth_median's own test covers S*'s β-smoothness.
    let bound = 2.0;
    let sa = SampleAggregate::new(params(1.0, 3, 0.1, bound), 2).expect("valid");
    let c = *sa.coordinate_params();
    let mut rng = NoiseSource::seeded(35);
    let mut tight = false;
    for _ in 0..2000 {
        let k = 3 + (rng.random::<u64>() % 40) as usize;
        let estimates: Vec<Vec<f64>> = (0..k)
            .map(|_| {
                (0..2)
                    .map(|_| {
                        if rng.random::<f64>() < 0.2 {
                            0.5 // ties
                        } else {
                            rng.random_range(-3.0..3.0) // some beyond ±B
                        }
                    })
                    .map(|v: f64| v.clamp(-bound, bound))
                    .collect()
            })
            .collect();
        let b = (rng.random::<u64>() % k as u64) as usize;
        let random = vec![
            rng.random_range(-bound..bound),
            rng.random_range(-bound..bound),
        ];
        for new in [vec![-bound; 2], vec![bound; 2], random] {
            let mut other = estimates.clone();
            other[b] = new;
            for j in 0..2 {
                let x = clipped_sorted(&column(&estimates, j), c.lo, c.hi).expect("ok");
                let moved = (median_of(&estimates, j, bound) - median_of(&other, j, bound)).abs();
                let ls = local_sensitivity(&x, c.lo, c.hi);
                let s = smooth_sensitivity(&x, c.lo, c.hi, c.beta());
                assert!((estimates[b][j] - other[b][j]).abs() <= 2.0 * bound);
                assert!(moved <= ls + 1e-15, "{moved} > LS {ls}");
                assert!(ls <= s + 1e-15, "LS {ls} > S* {s}");
                tight |= moved > 0.0 && moved == ls;
            }
        }
    }
    assert!(tight, "LS is attained");
}

#[test]
fn a_released_change_of_one_row_is_covered_by_the_smooth_sensitivity() {
    // End to end on real fits: replace one row (worst cases and random), recompute the block
    // estimates with the same partition, and check every coordinate's median moved by at most
    // S* of the original estimates.
    let mut rng = NoiseSource::seeded(36);
    let sa = SampleAggregate::new(params(1.0, 9, 0.05, 3.0), 3).expect("valid");
    let c = *sa.coordinate_params();
    for trial in 0..200u64 {
        let data = logistic_rows(90, &TRUTH[..3], &mut rng);
        let i = (rng.random::<u64>() % 90) as usize;
        let (row, label) = replacement(&data, i, (trial % 4) as usize, &mut rng);
        let other = replaced(&data, i, &row, label);
        let before = sa
            .block_estimates(&data, &mut NoiseSource::seeded(trial))
            .expect("estimates");
        let after = sa
            .block_estimates(&other, &mut NoiseSource::seeded(trial))
            .expect("estimates");
        let scales = sa.noise_scales(&before).expect("scales");
        for (j, scale) in scales.iter().enumerate() {
            let x = clipped_sorted(&column(&before, j), c.lo, c.hi).expect("ok");
            let s = smooth_sensitivity(&x, c.lo, c.hi, c.beta());
            assert!(is_the_median_scale(*scale, &column(&before, j), &c));
            let moved = (median_of(&before, j, 3.0) - median_of(&after, j, 3.0)).abs();
            assert!(
                moved <= s + 1e-15,
                "trial {trial}, coordinate {j}: {moved} > {s}"
            );
        }
    }
}

#[test]
fn release_is_the_clamped_aggregate_of_the_block_estimates() {
    let data = logistic_rows(103, &TRUTH[..3], &mut NoiseSource::seeded(37));
    let sa = SampleAggregate::new(params(1.0, 10, 0.1, 2.0), 3).expect("valid");
    let r = sa
        .release(&data, &mut NoiseSource::seeded(8))
        .expect("release");
    assert_eq!(r.guarantee, PrivacyGuarantee::replace_one(1.0, 1e-5));
    assert_eq!((r.blocks, r.block_size), (10, 10));
    // The same stream: the partition first, then the D noise draws.
    let mut rng = NoiseSource::seeded(8);
    let estimates = sa.block_estimates(&data, &mut rng).expect("estimates");
    let raw = sa.aggregate(&estimates, &mut rng).expect("aggregate");
    let clamped: Vec<f64> = raw.iter().map(|v| v.clamp(-2.0, 2.0)).collect();
    assert_eq!(r.coefficients, clamped);
    assert!(r.coefficients.iter().all(|v| v.abs() <= 2.0));
}

/// Accuracy on `test` of sample-and-aggregate and of the global-sensitivity baseline (the mean
/// of the same clipped block fits plus Lap(2B/(kε′)) per coordinate, basic composition as
/// well), over `releases` releases: (S&A's largest noise scale, its mean and worst accuracy, the
/// baseline's scale, its mean and worst accuracy).
fn compare(
    sa: &SampleAggregate,
    train: &Dataset,
    test: &Dataset,
    releases: u64,
) -> (f64, f64, f64, f64, f64, f64) {
    let bound = sa.params().bound;
    let k = sa.params().blocks;
    let est = sa
        .block_estimates(train, &mut NoiseSource::seeded(7))
        .expect("estimates");
    let scale = sa
        .noise_scales(&est)
        .expect("scales")
        .into_iter()
        .fold(0.0, f64::max);
    let gs_scale = 2.0 * bound / (k as f64 * sa.coordinate_params().epsilon);
    let (mut acc_sa, mut acc_gs) = (Vec::new(), Vec::new());
    for t in 0..releases {
        let mut rng = NoiseSource::seeded(100 + t);
        let theta: Vec<f64> = sa
            .aggregate(&est, &mut rng)
            .expect("aggregate")
            .into_iter()
            .map(|v| v.clamp(-bound, bound))
            .collect();
        acc_sa.push(test.accuracy(&theta));
        let mean: Vec<f64> = (0..sa.dim())
            .map(|j| {
                column(&est, j).iter().sum::<f64>() / k as f64 + laplace_f64(gs_scale, &mut rng)
            })
            .collect();
        acc_gs.push(test.accuracy(&mean));
    }
    let avg = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let worst = |v: &[f64]| v.iter().copied().fold(1.0, f64::min);
    (
        scale,
        avg(&acc_sa),
        worst(&acc_sa),
        gs_scale,
        avg(&acc_gs),
        worst(&acc_gs),
    )
}

#[test]
fn utility_is_within_a_few_points_of_the_non_private_fit() {
    // n = 20 000, D = 5, ε = 1, δ = 10⁻⁵, λ = 0.01, B = 1/λ = 100 (never clips), k = 10 000
    // blocks of 2 rows (module docs: fewer blocks leave the bound's term e^{−βk/2}·B dominant).
    // Measured: non-private 0.7868, the noise-free median of the block fits 0.7861,
    // sample-and-aggregate 0.755 on average over 20 releases (worst 0.645).
    let train = logistic_rows(20_000, &TRUTH, &mut derived_rng(4, &[20_000]));
    let test = logistic_rows(20_000, &TRUTH, &mut derived_rng(3, &[]));
    let full = test.accuracy(&fit_logistic(&train, 0.01).expect("fit").theta);
    let sa = SampleAggregate::new(params(1.0, 10_000, 0.01, 100.0), 5).expect("valid");
    let est = sa
        .block_estimates(&train, &mut NoiseSource::seeded(7))
        .expect("estimates");
    let noise_free: Vec<f64> = (0..5).map(|j| median_of(&est, j, 100.0)).collect();
    assert!((test.accuracy(&noise_free) - full).abs() < 0.01);
    let (_, mean, worst, ..) = compare(&sa, &train, &test, 20);
    assert!(full > 0.78, "{full}");
    assert!(mean > full - 0.04, "mean {mean} vs non-private {full}");
    // The worst of 20 releases moves with the noise stream (0.694 with the f64 sampler this
    // replaced, 0.645 with the exact discrete one, at the same scale): a loose bound.
    assert!(worst > full - 0.17, "worst {worst} vs non-private {full}");
    let r = sa
        .release(&train, &mut NoiseSource::seeded(9))
        .expect("release");
    assert_eq!(r.block_size, 2);
}

#[test]
fn sample_and_aggregate_beats_global_sensitivity_only_when_the_bound_is_loose() {
    // the comparison in Kashima's notes (Aggarwal & Yu 2008, ch. 16) on the same block fits (λ =
    // 0.01, so ‖θ_b‖ ≤ 1/λ and neither bound clips): the smooth-sensitivity median's noise depends
    // on the spread of the fits and, through e^{−βk/2}·B, negligibly on B; the clipped mean's is
    // 2B/(kε′), linear in B.
    let train = logistic_rows(20_000, &TRUTH, &mut derived_rng(4, &[20_000]));
    let est_of = |bound: f64| {
        let sa = SampleAggregate::new(params(1.0, 10_000, 0.01, bound), 5).expect("valid");
        let est = sa
            .block_estimates(&train, &mut NoiseSource::seeded(7))
            .expect("estimates");
        let scales = sa.noise_scales(&est).expect("scales");
        let gs = 2.0 * bound / (10_000.0 * sa.coordinate_params().epsilon);
        (est, scales, gs)
    };
    let (tight_est, tight, tight_gs) = est_of(100.0);
    let (loose_est, loose, loose_gs) = est_of(10_000.0);
    assert_eq!(tight_est, loose_est, "no clipping at B = 1/λ");
    for (t, l) in tight.iter().zip(&loose) {
        assert!(
            (t - l).abs() <= 2f64.powi(-19) * t,
            "S&A's scale does not depend on B: {t} vs {l}"
        );
        // B = 1/λ is tight: the global-sensitivity mean has the smaller noise (0.1 vs ≈ 0.36);
        assert!(tight_gs < *t, "{tight_gs} vs {t}");
        // B = 100/λ is loose: sample-and-aggregate has (10 vs ≈ 0.36).
        assert!(*l < loose_gs / 10.0, "{l} vs {loose_gs}");
    }
}

#[test]
fn refusals_are_typed_and_say_whether_they_depend_on_the_data() {
    let ok = params(1.0, 5, 0.1, 1.0);
    let refused = |p: SampleAggregateParams, dim: usize| {
        let e = SampleAggregate::new(p, dim).expect_err("refused");
        assert!(e.is_data_independent(), "{e}");
        e
    };
    assert!(matches!(
        refused(SampleAggregateParams { epsilon: 0.0, ..ok }, 2),
        SampleAggregateError::InvalidEpsilon(_)
    ));
    assert!(matches!(
        refused(
            SampleAggregateParams {
                epsilon: f64::INFINITY,
                ..ok
            },
            2
        ),
        SampleAggregateError::InvalidEpsilon(_)
    ));
    assert!(matches!(
        refused(SampleAggregateParams { delta: 1.0, ..ok }, 2),
        SampleAggregateError::InvalidDelta(_)
    ));
    assert!(matches!(
        refused(
            SampleAggregateParams {
                delta: f64::NAN,
                ..ok
            },
            2
        ),
        SampleAggregateError::InvalidDelta(_)
    ));
    assert_eq!(
        refused(SampleAggregateParams { blocks: 2, ..ok }, 2),
        SampleAggregateError::TooFewBlocks(2)
    );
    assert!(matches!(
        refused(SampleAggregateParams { bound: 0.0, ..ok }, 2),
        SampleAggregateError::InvalidBound(_)
    ));
    assert!(matches!(
        refused(SampleAggregateParams { l2: -1.0, ..ok }, 2),
        SampleAggregateError::InvalidL2(_)
    ));
    assert_eq!(refused(ok, 0), SampleAggregateError::ZeroDimension);

    let sa = SampleAggregate::new(ok, 2).expect("valid");
    let mut rng = NoiseSource::seeded(38);
    let small = logistic_rows(4, &TRUTH[..2], &mut rng);
    let e = sa.release(&small, &mut rng).expect_err("n < k");
    assert_eq!(e, SampleAggregateError::TooFewRows { rows: 4, blocks: 5 });
    assert!(e.is_data_independent());
    let wrong_dim = logistic_rows(10, &TRUTH[..3], &mut rng);
    let e = sa.block_estimates(&wrong_dim, &mut rng).expect_err("dim");
    assert!(matches!(
        e,
        SampleAggregateError::DimensionMismatch {
            expected: 2,
            got: 3
        }
    ));
    assert!(e.is_data_independent());
    let e = sa
        .aggregate(&vec![vec![0.0; 2]; 4], &mut rng)
        .expect_err("k");
    assert!(matches!(
        e,
        SampleAggregateError::EstimateCount {
            expected: 5,
            got: 4
        }
    ));
    assert!(e.is_data_independent());
    let mut bad = vec![vec![0.0; 2]; 5];
    bad[3] = vec![0.0];
    let e = sa.noise_scales(&bad).expect_err("length");
    assert!(matches!(
        e,
        SampleAggregateError::EstimateLength { block: 3, .. }
    ));
    bad[3] = vec![0.0, f64::NAN];
    let e = sa.aggregate(&bad, &mut rng).expect_err("NaN");
    assert!(matches!(
        e,
        SampleAggregateError::Median { coordinate: 1, .. }
    ));
    assert!(
        !e.is_data_independent(),
        "a NaN estimate is a property of the data"
    );
    // n = k is accepted: blocks of one row.
    let r = sa
        .release(&logistic_rows(5, &TRUTH[..2], &mut rng), &mut rng)
        .expect("n = k");
    assert_eq!(r.block_size, 1);
}

/// The seed-002 comparison of the module docs: for each (n, k, B), 20 releases of
/// sample-and-aggregate (S&A) and of the global-sensitivity baseline.
#[test]
#[ignore = "measurement for the module docs: run with --ignored --nocapture"]
fn measure_sample_and_aggregate_against_global_sensitivity() {
    let l2 = 0.01;
    let test = logistic_rows(20_000, &TRUTH, &mut derived_rng(3, &[]));
    println!("Bayes accuracy {:.4}", test.accuracy(&TRUTH));
    let sphere = generate(
        &SyntheticSpec {
            dim: 5,
            train: 20_000,
            test_per_label: 10_000,
            ..SyntheticSpec::default()
        },
        &mut derived_rng(1, &[]),
    );
    let datasets = [
        (
            "logistic",
            2_000,
            logistic_rows(2_000, &TRUTH, &mut derived_rng(4, &[2_000])),
            &test,
        ),
        (
            "logistic",
            20_000,
            logistic_rows(20_000, &TRUTH, &mut derived_rng(4, &[20_000])),
            &test,
        ),
        (
            "logistic",
            200_000,
            logistic_rows(200_000, &TRUTH, &mut derived_rng(4, &[200_000])),
            &test,
        ),
        ("sphere", 20_000, sphere.train.clone(), &sphere.test),
    ];
    for (name, n, train, test) in datasets {
        let full = fit_logistic(&train, l2).expect("fit");
        println!(
            "{name} n {n}: non-private fit {:.4}",
            test.accuracy(&full.theta)
        );
        for &k in &[100usize, 1_000, 10_000, 50_000] {
            if 2 * k > n {
                continue;
            }
            for &bound in &[1.0 / l2, 100.0 / l2] {
                let sa = SampleAggregate::new(params(1.0, k, l2, bound), 5).expect("valid");
                let (s, a, w, gs, ga, gw) = compare(&sa, &train, test, 20);
                println!(
                    "  k {k:>6} (m {:>4}) B {bound:>6}: S&A scale {s:.3} acc {a:.4} (worst {w:.4}) | GS mean scale {gs:.3} acc {ga:.4} (worst {gw:.4})",
                    n / k
                );
            }
        }
    }
}
