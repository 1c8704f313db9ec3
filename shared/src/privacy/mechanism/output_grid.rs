//! The **public output grid** of releases whose proof covers real arithmetic only: every
//! coefficient of such a release is rounded to a multiple of 2^{−32} before it leaves the
//! mechanism ([`super::Mechanism::release_until`]).
//!
//! **Why.** Noise drawn in f64 is not the distribution its proof analyses: which doubles a
//! release can take depends on the data, and the low-order bits can reveal it (Mironov, CCS 2012,
//! §4). Rounding to a fixed grid far below any noise dpagg's learners add (their noise is orders
//! of magnitude above 2^{−32}) discards those bits: each grid point collects the mass of about
//! 2^{20} or more consecutive doubles, so the rounded law is close to the rounded law of the
//! real-arithmetic mechanism. It is post-processing, so it cannot weaken any guarantee; it is a
//! mitigation, not a proof — the release keeps its `real-arithmetic` (or `none`) label. Releases
//! labelled `noise-as-sampled` (snapped or exact discrete noise) already sit on their own grids
//! and are left as they are.
//!
//! Rounding is exact: the grid is a power of two, so c/g, its rounding and the product are exact
//! doubles; a coefficient of magnitude 2^{20} or more is already a multiple of 2^{−32} (its ulp is
//! at least that) and is left alone, as are non-finite values (which no mechanism releases).

/// g = 2^{−32}: every coefficient of a `real-arithmetic` release is a multiple of it.
pub const OUTPUT_GRID: f64 = 1.0 / (1u64 << 32) as f64;

/// Rounds every coefficient to the nearest multiple of [`OUTPUT_GRID`] (ties away from zero).
pub fn round_to_output_grid(coefficients: &mut [f64]) {
    for c in coefficients {
        if c.abs() < (1u64 << 20) as f64 {
            *c = (*c / OUTPUT_GRID).round() * OUTPUT_GRID;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::dataset::Dataset;
    use crate::privacy::guarantee::ProofCoverage;
    use crate::privacy::mechanism::MechanismKind;
    use crate::privacy::noise::NoiseSource;

    /// Every registered learner that releases on a small dataset: `real-arithmetic` and `none`
    /// releases are on the grid and say so; `noise-as-sampled` ones are left on their own grids.
    #[test]
    fn real_arithmetic_releases_are_on_the_grid_and_record_it() {
        let x: Vec<f64> = (0..80)
            .map(|i| ((i * 37 % 11) as f64 - 5.0) / 9.0)
            .collect();
        let y: Vec<f64> = (0..40)
            .map(|i| if i % 3 == 0 { -1.0 } else { 1.0 })
            .collect();
        let data = Dataset::new(x, y, 2);
        let mut released = Vec::new();
        // The proven Gibbs chain takes Minami et al.'s step count (minutes here); its release
        // goes through the same provided `release_until`.
        for kind in MechanismKind::all().filter(|k| k.name() != "gibbs-posterior") {
            let delta = if kind.name().starts_with("output") {
                0.0
            } else {
                1e-5
            };
            let m = kind.build(0.5, delta, 0.1).expect("builds at defaults");
            let Ok(r) = m.release(&data, &mut NoiseSource::seeded(3)) else {
                continue;
            };
            let recorded = r.metadata.parameters.get("output_grid");
            if m.proof() == ProofCoverage::NoiseAsSampled {
                assert_eq!(recorded, None, "{}", kind.name());
            } else {
                assert_eq!(recorded, Some(&OUTPUT_GRID), "{}", kind.name());
                for c in r.classifier.coefficients() {
                    assert_eq!((c / OUTPUT_GRID).fract(), 0.0, "{}: {c}", kind.name());
                }
            }
            released.push(kind.name());
        }
        for name in [
            "objective-perturbation",
            "output-perturbation",
            "dp-sgd",
            "dp-sgd-bst",
            "langevin",
        ] {
            assert!(
                released.contains(&name),
                "{name} did not release: {released:?}"
            );
        }
    }

    #[test]
    fn coefficients_land_on_the_grid_within_half_a_cell() {
        let originals = [
            0.1,
            -0.3,
            1e-12,
            -5e-10,
            123.456_789,
            0.0,
            2f64.powi(-33),
            3e6,
            -1e300,
        ];
        let mut rounded = originals;
        round_to_output_grid(&mut rounded);
        for (o, r) in originals.iter().zip(&rounded) {
            let cells = r / OUTPUT_GRID;
            assert_eq!(cells, cells.round(), "{r} is not on the grid");
            assert!((o - r).abs() <= OUTPUT_GRID / 2.0, "{o} → {r}");
        }
        assert_eq!(rounded[2], 0.0);
        assert_eq!(rounded[7], 3e6);
        // Idempotent: a value on the grid (a snapped release's, say) is unchanged.
        let again = rounded;
        round_to_output_grid(&mut rounded);
        assert_eq!(again, rounded);
    }
}
