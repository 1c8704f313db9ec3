//! Tests of the Laplace statistics release: sensitivities, the snapped noise against its stated
//! law (with an under-noised mutant), post-processing and input errors.

use super::*;
use crate::privacy::snapping::laplace_f64;
use crate::privacy::snapping::testing::snapped_chi_square;
use rand::RngExt;

fn features() -> Vec<FeatureSpec> {
    // Half-widths 4 and 2 (powers of two): raw ↔ unit conversions are exact.
    vec![
        FeatureSpec::bounded("age", 0.0, 8.0),
        FeatureSpec::bounded("score", -2.0, 2.0),
    ]
}

fn plan(relation: NeighbourRelation) -> ClassSumsPlan {
    ClassSumsPlan::new(
        &features(),
        ClassSumsParams {
            epsilon: 1.5,
            relation,
            max_rows: 1000,
        },
    )
    .expect("valid plan")
}

fn dataset() -> (Vec<Vec<f64>>, Vec<bool>) {
    let rows = vec![
        vec![1.0, 0.5],
        vec![9.0, -3.0], // clipped to (8, −2)
        vec![4.0, 1.25],
        vec![2.5, -0.75],
        vec![7.0, 2.0],
    ];
    (rows, vec![true, true, false, true, false])
}

const DRAWS: usize = 20_000;

/// Noisy positive-class count and feature-0 positive centred sum (in units) of many releases.
fn released_noise(p: &ClassSumsPlan, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let (rows, labels) = dataset();
    let mut rng = NoiseSource::seeded(seed);
    let (mut counts, mut sums) = (Vec::new(), Vec::new());
    for _ in 0..DRAWS {
        let r = p.release(&rows, &labels, &mut rng).expect("release");
        counts.push(r.count(Class::Positive));
        // Through the raw-unit conversion, undone exactly (r = 4 is a power of two).
        sums.push(r.centred_raw(0, 1).expect("feature 0") * QUANT_UNITS / r.half_width[0]);
    }
    (counts, sums)
}

#[test]
fn scales_are_the_global_sensitivity_over_the_epsilon_share() {
    for relation in [
        NeighbourRelation::ReplaceOne,
        NeighbourRelation::AddRemoveOne,
    ] {
        let p = plan(relation);
        let share = 1.5 / 3.0;
        let (dc, ds) = ClassSumsPlan::unit_sensitivities(relation);
        let rel = |a: f64, b: f64| (a - b).abs() / b;
        assert!(rel(p.count_mechanism().scale(), dc / share) < 1e-9);
        assert!(rel(p.sum_mechanism().scale(), ds / share) < 1e-9);
        // Raw units: (hi − lo)/εᵢ under replace-one, half that under add/remove-one.
        let factor = match relation {
            NeighbourRelation::ReplaceOne => 1.0,
            NeighbourRelation::AddRemoveOne => 0.5,
        };
        let raw = p.sum_scale_raw(1).expect("feature 1");
        assert!(rel(raw, factor * 4.0 / share) < 1e-9);
        // Basic composition: the shares sum to at most ε.
        assert_eq!(p.achieved_epsilons().len(), 3);
        assert!(p.achieved_epsilons().iter().sum::<f64>() <= 1.5);
        assert!(p.achieved_epsilons().iter().all(|&e| e <= share));
        assert_eq!(
            p.guarantee(),
            PrivacyGuarantee {
                epsilon: 1.5,
                delta: 0.0,
                relation
            }
        );
    }
}

#[test]
fn count_and_sum_noise_match_snapped_laplace_at_the_stated_scale() {
    let p = plan(NeighbourRelation::ReplaceOne);
    let exact = p.exact(&dataset().0, &dataset().1).expect("exact");
    let (counts, sums) = released_noise(&p, 7);
    let c = p.count_mechanism();
    let pc = snapped_chi_square(c, &counts, exact.counts[1] as f64, c.scale());
    assert!(pc > 1e-3, "count p = {pc}");
    let s = p.sum_mechanism();
    let ps = snapped_chi_square(s, &sums, exact.centred_sums[0][1] as f64, s.scale());
    assert!(ps > 1e-3, "sum p = {ps}");
}

#[test]
fn half_noise_mutant_fails_the_same_chi_square_test() {
    let p = plan(NeighbourRelation::ReplaceOne);
    let exact = p.exact(&dataset().0, &dataset().1).expect("exact");
    let mut rng = NoiseSource::seeded(8);
    for (m, x) in [
        (p.count_mechanism(), exact.counts[1] as f64),
        (p.sum_mechanism(), exact.centred_sums[0][1] as f64),
    ] {
        // The mutant: half the scale, snapped to the same grid and bound.
        let outputs: Vec<f64> = (0..DRAWS)
            .map(|_| {
                let y = x + laplace_f64(m.scale() / 2.0, &mut rng);
                ((y / m.grid()).round() * m.grid()).clamp(-m.bound(), m.bound())
            })
            .collect();
        let pm = snapped_chi_square(m, &outputs, x, m.scale());
        assert!(pm < 1e-6, "mutant p = {pm}");
    }
}

fn random_dataset(rng: &mut NoiseSource) -> (Vec<Vec<f64>>, Vec<bool>) {
    let n = 1 + (rng.random::<u64>() % 40) as usize;
    let rows = (0..n)
        .map(|_| {
            // Values beyond the bounds too, so clipping is exercised.
            vec![
                -3.0 + 14.0 * rng.random::<f64>(),
                -4.0 + 8.0 * rng.random::<f64>(),
            ]
        })
        .collect();
    let labels = (0..n).map(|_| rng.random::<bool>()).collect();
    (rows, labels)
}

/// ℓ₁ distances (histogram, per-feature centred sums in units) of two exact statistics.
fn distances(a: &ExactStatistics, b: &ExactStatistics) -> (u64, Vec<i64>) {
    let dc = a.counts[0].abs_diff(b.counts[0]) + a.counts[1].abs_diff(b.counts[1]);
    let ds = a
        .centred_sums
        .iter()
        .zip(&b.centred_sums)
        .map(|(x, y)| (x[0] - y[0]).abs() + (x[1] - y[1]).abs())
        .collect();
    (dc, ds)
}

#[test]
fn replacing_one_row_moves_the_exact_statistics_by_at_most_the_sensitivity() {
    let p = plan(NeighbourRelation::ReplaceOne);
    let (dc_max, ds_max) = ClassSumsPlan::unit_sensitivities(NeighbourRelation::ReplaceOne);
    let mut rng = NoiseSource::seeded(9);
    let mut attained = false;
    for _ in 0..2000 {
        let (rows, labels) = random_dataset(&mut rng);
        let before = p.exact(&rows, &labels).expect("exact");
        let i = (rng.random::<u64>() % rows.len() as u64) as usize;
        // Worst case: the row at the opposite corner of the box, in the other class; and a
        // random replacement.
        let corner: Vec<f64> = features()
            .iter()
            .zip(&rows[i])
            .map(|(f, &v)| if v > (f.lo + f.hi) / 2.0 { f.lo } else { f.hi })
            .collect();
        let random = random_dataset(&mut rng);
        for (new_row, new_label) in [(corner, !labels[i]), (random.0[0].clone(), random.1[0])] {
            let (mut r2, mut l2) = (rows.clone(), labels.clone());
            r2[i] = new_row;
            l2[i] = new_label;
            let after = p.exact(&r2, &l2).expect("exact");
            let (dc, ds) = distances(&before, &after);
            assert!(dc as f64 <= dc_max);
            for (j, d) in ds.iter().enumerate() {
                assert!(*d as f64 <= ds_max, "feature {j}: {d}");
                // In raw units: at most hi − lo.
                let f = &features()[j];
                assert!(*d as f64 * (f.hi - f.lo) / 2.0 / QUANT_UNITS <= f.hi - f.lo);
                attained |= *d as f64 == ds_max;
            }
        }
    }
    assert!(
        attained,
        "the sum sensitivity is tight (lo in one class → hi in the other)"
    );
}

#[test]
fn removing_one_row_moves_the_exact_statistics_by_at_most_the_sensitivity() {
    let p = plan(NeighbourRelation::AddRemoveOne);
    let (dc_max, ds_max) = ClassSumsPlan::unit_sensitivities(NeighbourRelation::AddRemoveOne);
    let mut rng = NoiseSource::seeded(10);
    for _ in 0..2000 {
        let (rows, labels) = random_dataset(&mut rng);
        let before = p.exact(&rows, &labels).expect("exact");
        let i = (rng.random::<u64>() % rows.len() as u64) as usize;
        let (mut r2, mut l2) = (rows.clone(), labels.clone());
        r2.remove(i);
        l2.remove(i);
        let after = p.exact(&r2, &l2).expect("exact");
        let (dc, ds) = distances(&before, &after);
        assert_eq!(dc as f64, dc_max);
        assert!(ds.iter().all(|&d| d as f64 <= ds_max));
    }
}

#[test]
fn sums_and_means_are_of_the_clipped_raw_values() {
    // A huge ε and a small max_rows: noise far below the values.
    let p = ClassSumsPlan::new(
        &features(),
        ClassSumsParams {
            epsilon: 3e6,
            relation: NeighbourRelation::ReplaceOne,
            max_rows: 10,
        },
    )
    .expect("plan");
    let (rows, labels) = dataset();
    let r = p
        .release(&rows, &labels, &mut NoiseSource::seeded(11))
        .expect("release");
    assert!((r.count(Class::Positive) - 3.0).abs() < 1e-3);
    assert!((r.count(Class::Negative) - 2.0).abs() < 1e-3);
    // Positive rows clipped: (1, 0.5), (8, −2), (2.5, −0.75).
    let close = |a: Option<f64>, b: f64| (a.expect("feature") - b).abs() < 1e-3;
    assert!(close(r.sum(Class::Positive, 0), 11.5));
    assert!(close(r.mean(Class::Positive, 1), -2.25 / 3.0));
    assert!(close(r.total_sum(0), 22.5));
    assert!(close(r.total_mean(1), 1.0 / 5.0));
    assert!(r.sum(Class::Positive, 2).is_none());
    assert_eq!(r.dim(), 2);
    assert_eq!(r.guarantee().epsilon, 3e6);
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let p = plan(NeighbourRelation::ReplaceOne);
    let mut rng = NoiseSource::seeded(12);
    assert!(matches!(
        p.release(&[vec![f64::NAN, 0.0]], &[true], &mut rng),
        Err(StatsError::Input(InputError::NotANumber {
            row: 0,
            feature: 0
        }))
    ));
    assert!(matches!(
        p.release(&[vec![1.0]], &[true], &mut rng),
        Err(StatsError::Input(InputError::RowLength { .. }))
    ));
    assert!(matches!(
        p.release(&[vec![1.0, 1.0]], &[], &mut rng),
        Err(StatsError::Input(InputError::LabelCount { .. }))
    ));
    let too_many = vec![vec![1.0, 1.0]; 1001];
    assert!(matches!(
        p.release(&too_many, &vec![true; 1001], &mut rng),
        Err(StatsError::Input(InputError::TooManyRows { .. }))
    ));
    let params = |epsilon, max_rows| ClassSumsParams {
        epsilon,
        relation: NeighbourRelation::ReplaceOne,
        max_rows,
    };
    assert!(matches!(
        ClassSumsPlan::new(&features(), params(0.0, 10)),
        Err(StatsError::InvalidEpsilon(_))
    ));
    assert!(matches!(
        ClassSumsPlan::new(&features(), params(1e-20, 10)),
        Err(StatsError::Snapping(SnappingError::EpsilonTooSmall { .. }))
    ));
    assert!(matches!(
        ClassSumsPlan::new(&features(), params(1.0, 0)),
        Err(StatsError::Input(InputError::InvalidMaxRows(0)))
    ));
    assert!(matches!(
        ClassSumsPlan::new(&[], params(1.0, 10)),
        Err(StatsError::Input(InputError::NoFeatures))
    ));
    let bad = [FeatureSpec::bounded("x", 1.0, 1.0)];
    assert!(matches!(
        ClassSumsPlan::new(&bad, params(1.0, 10)),
        Err(StatsError::Input(InputError::InvalidBounds {
            index: 0,
            ..
        }))
    ));
}
