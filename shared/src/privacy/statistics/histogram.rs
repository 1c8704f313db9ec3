//! Per-feature, per-class **histograms over public bins**, by the Laplace mechanism with global
//! sensitivity (Kashima, lecture notes on Chapter 16 of Aggarwal & Yu 2008,
//! *Privacy-Preserving Data Mining* — slide 15, Lap(GS_f/ε); slide 18, "GS_hist = 2" for a
//! histogram under replace-one; slide 11, Lemma 16.7, composition).
//!
//! **Bins.** For feature j with the schema's public bounds lo_j < hi_j and a public number of bins
//! b, the edges are lo_j + (hi_j − lo_j)·t/b for t = 0, …, b (equal width, from the schema only,
//! never from the data). A raw value is clipped to [lo_j, hi_j] and falls in bin
//! min(⌊b·(v − lo_j)/(hi_j − lo_j)⌋, b − 1) (the last bin is closed). The query is, for every
//! feature j and class k, the b counts of the rows of class k: 2·d·b integers.
//!
//! **Sensitivity** (replace-one: one row replaced by any row, with any label). For each feature
//! the old row leaves one cell of that feature's two class histograms and the new row enters one:
//! ℓ₁ ≤ 2 per feature (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 18's GS_hist = 2, the
//! class being part of the cell), so
//! **ℓ₁ = 2d** over all features, with at most 2d coordinates changed. Attained whenever the two
//! rows fall in different cells for every feature (tested).
//!
//! **Mechanism.** Every count through one snapped Laplace mechanism (Mironov 2012 Theorem 1,
//! [`crate::privacy::snapping::calibrate_vector`]) of scale ≈ 2d/ε and clamping bound
//! B = max_rows: **ε-DP** (δ = 0) under replace-one, the floating-point price paid inside ε.
//! Equivalently, by Lemma 16.7, each feature's histogram pair spends ε/d.
//!
//! **Assumptions.** max_rows is public and n ≤ max_rows ≤ 2^30; values are not NaN (refused);
//! under Theorem 1's assumptions (IEEE-754 arithmetic, an accurate `ln`). Counts are released as
//! they come out of the mechanism (they may be negative); clamping them at 0 is post-processing a
//! consumer may apply.

use super::{InputError, check_features, check_max_rows, check_rows};
use crate::data::schema::FeatureSpec;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::privacy::snapping::{SnappingError, VectorCalibration, calibrate_vector};

/// Parameters of a release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramParams {
    /// Total ε (δ = 0).
    pub epsilon: f64,
    /// Bins per feature.
    pub bins: usize,
    /// Public upper bound on the number of rows.
    pub max_rows: usize,
}

/// Why histograms cannot be planned or released.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HistogramError {
    /// ε is not finite and positive.
    #[error("invalid epsilon {0}: must be finite and > 0")]
    InvalidEpsilon(f64),
    /// No bins.
    #[error("invalid number of bins 0: must be at least 1")]
    NoBins,
    /// The schema or the rows.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The snapping mechanism refused its parameters.
    #[error("snapping: {0}")]
    Snapping(#[from] SnappingError),
}

/// A release: per feature, the public edges and the noisy counts [negative, positive].
#[derive(Debug, Clone, PartialEq)]
pub struct Histograms {
    /// Its guarantee.
    pub guarantee: PrivacyGuarantee,
    /// Per feature, bins + 1 edges.
    pub edges: Vec<Vec<f64>>,
    /// Per feature, [negative counts, positive counts], bins each.
    pub counts: Vec<[Vec<f64>; 2]>,
}

/// The calibrated mechanism for one schema.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramPlan {
    params: HistogramParams,
    lo: Vec<f64>,
    hi: Vec<f64>,
    calibration: VectorCalibration,
}

/// ℓ₁ global sensitivity of all features' histograms under replace-one: 2d.
pub fn l1_sensitivity(d: usize) -> f64 {
    2.0 * d as f64
}

impl HistogramPlan {
    /// Calibrates the release for the schema's bounds and `params`.
    pub fn new(features: &[FeatureSpec], params: HistogramParams) -> Result<Self, HistogramError> {
        if !(params.epsilon.is_finite() && params.epsilon > 0.0) {
            return Err(HistogramError::InvalidEpsilon(params.epsilon));
        }
        if params.bins == 0 {
            return Err(HistogramError::NoBins);
        }
        check_features(features)?;
        check_max_rows(params.max_rows)?;
        let d = features.len();
        let calibration = calibrate_vector(
            l1_sensitivity(d),
            2 * d,
            params.max_rows as f64,
            params.epsilon,
        )?;
        Ok(Self {
            params,
            lo: features.iter().map(|f| f.lo).collect(),
            hi: features.iter().map(|f| f.hi).collect(),
            calibration,
        })
    }

    /// The guarantee: (ε, 0) under replace-one.
    pub fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(self.params.epsilon, 0.0)
    }

    /// The snapping mechanism every count goes through, and its achieved ε.
    pub fn calibration(&self) -> &VectorCalibration {
        &self.calibration
    }

    /// Feature j's public edges.
    pub fn edges(&self, j: usize) -> Vec<f64> {
        let (lo, hi, b) = (self.lo[j], self.hi[j], self.params.bins);
        (0..=b)
            .map(|t| {
                if t == b {
                    hi
                } else {
                    lo + (hi - lo) * t as f64 / b as f64
                }
            })
            .collect()
    }

    /// The bin of a non-NaN raw value of feature j.
    fn bin(&self, j: usize, v: f64) -> usize {
        let (lo, hi, b) = (self.lo[j], self.hi[j], self.params.bins);
        let at = ((v.clamp(lo, hi) - lo) / (hi - lo) * b as f64).floor();
        // `as usize` saturates; the min closes the last bin.
        (at as usize).min(b - 1)
    }

    /// The exact counts: per feature, [negative, positive] counts per bin.
    pub fn exact(
        &self,
        rows: &[Vec<f64>],
        positive: &[bool],
    ) -> Result<Vec<[Vec<u64>; 2]>, HistogramError> {
        let d = self.lo.len();
        check_rows(rows, positive, d, self.params.max_rows)?;
        let b = self.params.bins;
        let mut counts = vec![[vec![0u64; b], vec![0u64; b]]; d];
        for (row, &label) in rows.iter().zip(positive) {
            for (j, &v) in row.iter().enumerate() {
                counts[j][usize::from(label)][self.bin(j, v)] += 1;
            }
        }
        Ok(counts)
    }

    /// Releases the histograms of `rows` (raw values, schema order) with labels `positive`.
    pub fn release(
        &self,
        rows: &[Vec<f64>],
        positive: &[bool],
        rng: &mut NoiseSource,
    ) -> Result<Histograms, HistogramError> {
        let exact = self.exact(rows, positive)?;
        let m = self.calibration.mechanism;
        let mut counts = Vec::with_capacity(exact.len());
        for feature in &exact {
            let mut noisy = [Vec::new(), Vec::new()];
            for (out, class) in noisy.iter_mut().zip(feature) {
                *out = class
                    .iter()
                    .map(|&c| m.sample(c as f64, rng))
                    .collect::<Result<_, _>>()?;
            }
            counts.push(noisy);
        }
        Ok(Histograms {
            guarantee: self.guarantee(),
            edges: (0..self.lo.len()).map(|j| self.edges(j)).collect(),
            counts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::snapping::{SnappedLaplace, testing::snapped_chi_square};
    use rand::RngExt;

    fn features() -> Vec<FeatureSpec> {
        vec![
            FeatureSpec::bounded("age", 0.0, 100.0),
            FeatureSpec::bounded("score", -1.0, 1.0),
        ]
    }

    fn plan(epsilon: f64) -> HistogramPlan {
        HistogramPlan::new(
            &features(),
            HistogramParams {
                epsilon,
                bins: 4,
                max_rows: 1000,
            },
        )
        .expect("valid plan")
    }

    fn dataset() -> (Vec<Vec<f64>>, Vec<bool>) {
        let rows = vec![
            vec![10.0, -0.9],
            vec![30.0, 0.2],
            vec![130.0, 1.0], // age clipped to 100: last bin
            vec![50.0, -0.5], // on an edge: the upper bin
            vec![-5.0, 0.9],  // clipped to 0
        ];
        (rows, vec![true, false, true, true, false])
    }

    #[test]
    fn edges_are_public_and_values_fall_in_their_bins() {
        let p = plan(1.0);
        assert_eq!(p.edges(0), vec![0.0, 25.0, 50.0, 75.0, 100.0]);
        assert_eq!(p.edges(1), vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
        let (rows, labels) = dataset();
        let c = p.exact(&rows, &labels).expect("exact");
        assert_eq!(c[0][1], vec![1, 0, 1, 1]);
        assert_eq!(c[0][0], vec![1, 1, 0, 0]);
        assert_eq!(c[1][1], vec![1, 1, 0, 1]);
        assert_eq!(c[1][0], vec![0, 0, 1, 1]);
        assert_eq!(l1_sensitivity(2), 4.0);
        let cal = p.calibration();
        assert!((cal.mechanism.scale() - 4.0).abs() < 1e-6);
        assert!(cal.achieved <= 1.0);
        assert_eq!(p.guarantee(), PrivacyGuarantee::replace_one(1.0, 0.0));
    }

    const DRAWS: usize = 20_000;

    /// Released counts of feature 0, positive class, bin `bin`, from `p`.
    fn released(p: &HistogramPlan, bin: usize, seed: u64) -> Vec<f64> {
        let (rows, labels) = dataset();
        let mut rng = NoiseSource::seeded(seed);
        (0..DRAWS)
            .map(|_| p.release(&rows, &labels, &mut rng).expect("release").counts[0][1][bin])
            .collect()
    }

    #[test]
    fn counts_get_snapped_laplace_noise_at_the_stated_scale() {
        let p = plan(1.0);
        let m = p.calibration().mechanism;
        for (bin, seed) in [(0, 1), (1, 2)] {
            let x = p.exact(&dataset().0, &dataset().1).expect("exact")[0][1][bin] as f64;
            let pv = snapped_chi_square(&m, &released(&p, bin, seed), x, m.scale());
            assert!(pv > 1e-3, "bin {bin}: p = {pv}");
        }
    }

    #[test]
    fn half_noise_mutant_fails_the_same_chi_square_test() {
        let p = plan(1.0);
        let m = p.calibration().mechanism;
        let mut mutant = p.clone();
        mutant.calibration.mechanism =
            SnappedLaplace::new(m.scale() / 2.0, m.bound()).expect("valid");
        let pv = snapped_chi_square(&m, &released(&mutant, 0, 3), 1.0, m.scale());
        assert!(pv < 1e-6, "mutant p = {pv}");
    }

    #[test]
    fn replacing_one_row_moves_the_counts_by_at_most_2d() {
        let p = plan(1.0);
        let max = l1_sensitivity(2);
        let mut rng = NoiseSource::seeded(4);
        let mut attained = false;
        let random_row = |rng: &mut NoiseSource| {
            vec![
                -20.0 + 140.0 * rng.random::<f64>(),
                -1.5 + 3.0 * rng.random::<f64>(),
            ]
        };
        for _ in 0..2000 {
            let n = 1 + (rng.random::<u64>() % 30) as usize;
            let rows: Vec<Vec<f64>> = (0..n).map(|_| random_row(&mut rng)).collect();
            let labels: Vec<bool> = (0..n).map(|_| rng.random::<bool>()).collect();
            let before = p.exact(&rows, &labels).expect("exact");
            let i = (rng.random::<u64>() % n as u64) as usize;
            // Worst case: the opposite end of every range, in the other class; and a random row.
            let far: Vec<f64> = features()
                .iter()
                .zip(&rows[i])
                .map(|(f, &v)| if v > (f.lo + f.hi) / 2.0 { f.lo } else { f.hi })
                .collect();
            let random = random_row(&mut rng);
            for (new_row, new_label) in [(far, !labels[i]), (random, rng.random::<bool>())] {
                let (mut r2, mut l2) = (rows.clone(), labels.clone());
                r2[i] = new_row;
                l2[i] = new_label;
                let after = p.exact(&r2, &l2).expect("exact");
                let l1: u64 = before
                    .iter()
                    .flatten()
                    .flatten()
                    .zip(after.iter().flatten().flatten())
                    .map(|(a, b)| a.abs_diff(*b))
                    .sum();
                assert!(l1 as f64 <= max, "ℓ₁ {l1}");
                attained |= l1 as f64 == max;
            }
        }
        assert!(attained);
    }

    #[test]
    fn invalid_inputs_are_typed_errors() {
        let params = |epsilon, bins| HistogramParams {
            epsilon,
            bins,
            max_rows: 10,
        };
        assert!(matches!(
            HistogramPlan::new(&features(), params(0.0, 3)),
            Err(HistogramError::InvalidEpsilon(_))
        ));
        assert!(matches!(
            HistogramPlan::new(&features(), params(1.0, 0)),
            Err(HistogramError::NoBins)
        ));
        let p = HistogramPlan::new(&features(), params(1.0, 3)).expect("plan");
        let mut rng = NoiseSource::seeded(5);
        assert!(matches!(
            p.release(&[vec![1.0, f64::NAN]], &[true], &mut rng),
            Err(HistogramError::Input(InputError::NotANumber {
                row: 0,
                feature: 1
            }))
        ));
        assert!(matches!(
            p.release(&[vec![1.0, 0.0]], &[], &mut rng),
            Err(HistogramError::Input(InputError::LabelCount { .. }))
        ));
    }
}
