//! Laplace noise that does not leak through its least significant bits: Mironov's **snapping
//! mechanism** (I. Mironov, "On significance of the least significant bits for differential
//! privacy", ACM CCS 2012, §5.2).
//!
//! **The attack it stops.** A release x + λ·ln(U) computed in f64 is not the Laplace mechanism:
//! the set of doubles it can produce depends on x (which doubles are reachable from x by adding a
//! double of the form λ ⊗ LN(u) is a porous, x-dependent set), so a single output can rule a
//! neighbouring input out entirely. Mironov's §4 recovers the input from such outputs in practice.
//!
//! **The construction** (Mironov 2012 §5.2), for an input x, a Laplace scale λ > 0 and a public
//! bound B:
//!
//! ```text
//!   f̃(x) = clamp_B( ⌊ clamp_B(x) ⊕ S ⊗ λ ⊗ LN(U*) ⌉_Λ )
//! ```
//!
//! - U* ([`uniform_open_closed`]) is the *exact* uniform distribution over the doubles of (0, 1]:
//!   each double receives the probability of the real interval that rounds up to it. It is drawn
//!   as a geometric binade (Pr[u ∈ (2^{-k-1}, 2^{-k}]] = 2^{-k-1}) and a uniform 52-bit
//!   significand — not as an integer divided by 2^53, which reaches only 2^53 of the doubles
//!   below 1 and none of the small ones.
//! - LN is the f64 natural logarithm ([`f64::ln`]), ⊗ and ⊕ are f64 multiplication and addition,
//!   S is a uniform sign.
//! - Λ is the smallest power of two ≥ λ ([`power_of_two_at_least`]); ⌊·⌉_Λ rounds to the nearest
//!   multiple of Λ. Because Λ is a power of two the rounding is exact: y/Λ only moves the exponent,
//!   rounding to an integer is exact, and the integer times Λ is representable.
//! - clamp_B limits to [−B, B]. Here B is first raised to a multiple of Λ that exceeds λ
//!   (Λ·max(⌈B/Λ⌉, 2)), so every output lies on the grid ΛZ ∩ [−B, B] and λ < B holds.
//!
//! **Guarantee (Mironov 2012, Theorem 1).** For f of sensitivity 1, the snapping mechanism with
//! parameters λ and B is **(1/λ + 2^{-49}·B/λ)-differentially private when λ < B < 2^{46}·λ**.
//! The first term is the Laplace mechanism's; **2^{-49}·B/λ** is the price of floating point. The
//! proof compares, for each input x ∈ [−B, B] and each output y, the probability of y with that
//! of an exact x + Lap(λ) falling in y's rounding cell, and the floating-point errors enter only
//! through that comparison, not through |x − x'|: for two inputs the log-ratio is at most
//! |x − x'|/λ + 2^{-49}·B/λ. [`SnappedLaplace::epsilon`] states that bound; the vector release
//! of output perturbation uses it coordinate by coordinate
//! (`docs/proofs/output-perturbation-snapping.md`).
//!
//! **Assumptions of the theorem, and how they are met here.**
//! - λ < B < 2^{46}·λ: B is raised above λ by construction; a B at or above 2^{46}·λ is refused
//!   ([`SnappingError::BoundTooLarge`]).
//! - U* exactly as above, from a cryptographically secure source ([`NoiseSource::secure`]); the
//!   binade is capped at 2^{-1021} (probability 2^{-1020} of ever reaching it), so the sampled
//!   distribution is within total variation 2^{-1020} of U*.
//! - IEEE-754 binary64 arithmetic rounding to nearest (what Rust's f64 operations are).
//! - LN is an accurately rounded logarithm. [`f64::ln`] calls the platform's libm, whose `log` is
//!   not *proven* correctly rounded (glibc documents errors below 1 ulp); the guarantee is
//!   conditional on that accuracy, as is every deployed snapping implementation's. Exact
//!   discrete sampling (Canonne, Kamath & Steinke 2020) would remove this assumption.
//! - Clamping the input makes the guarantee hold whatever x is: B need not bound the true value
//!   for privacy (it only costs accuracy if it does not).

use crate::privacy::noise::NoiseSource;
use crate::util::num::Num;
use rand::RngExt;

/// 2^{-49}: the coefficient of B/λ in the extra ε term of Mironov 2012 Theorem 1.
pub const FLOAT_TERM: f64 = 1.0 / (1u64 << 49) as f64;

/// 2^{46}: Theorem 1 requires B < 2^{46}·λ.
pub const MAX_BOUND_OVER_SCALE: f64 = (1u64 << 46) as f64;

/// The deepest binade U* samples: u ∈ (2^{-1021}, 2^{-1020}] (all normal doubles).
const MAX_BINADE: u32 = 1020;

/// Why a snapping mechanism cannot be built or applied.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum SnappingError {
    /// The Laplace scale is not a positive normal double (or its power of two overflows).
    #[error("invalid Laplace scale {}: must be a positive normal double below 2^1023", Num(*.0))]
    InvalidScale(f64),
    /// The clamping bound is not finite and positive.
    #[error("invalid clamping bound {}: must be a finite number > 0", Num(*.0))]
    InvalidBound(f64),
    /// The bound is too large for Mironov 2012 Theorem 1 (B < 2^46·λ).
    #[error(
        "clamping bound {} is not below 2^46 times the Laplace scale {}: Mironov 2012 Theorem 1 requires λ < B < 2^46·λ",
        Num(*.bound),
        Num(*.scale)
    )]
    BoundTooLarge {
        /// B (after rounding up to the grid).
        bound: f64,
        /// λ.
        scale: f64,
    },
    /// The value to release is NaN (clamping, and so the guarantee, is not defined for it).
    #[error("the value to release is NaN")]
    NotANumber,
    /// ε leaves nothing after the floating-point terms of Theorem 1 ([`calibrate_vector`]).
    #[error(
        "epsilon {} is too small: the floating-point term of Mironov 2012 Theorem 1 alone is {}",
        Num(*.epsilon),
        Num(*.floor)
    )]
    EpsilonTooSmall {
        /// ε asked for.
        epsilon: f64,
        /// The floating-point terms at their largest.
        floor: f64,
    },
    /// The achieved ε exceeds the target (a calibration bug; never expected).
    #[error("achieved epsilon {} exceeds the target {}", Num(*.achieved), Num(*.epsilon))]
    Calibration {
        /// Theorem 1's bound for the built mechanism.
        achieved: f64,
        /// The target.
        epsilon: f64,
    },
}

/// The snapping mechanism for one real value: Laplace scale λ, grid Λ, bound B (on the grid).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnappedLaplace {
    scale: f64,
    grid: f64,
    bound: f64,
}

impl SnappedLaplace {
    /// The mechanism with Laplace scale λ = `scale` and clamping bound B = `bound`, raised to
    /// Λ·max(⌈B/Λ⌉, 2) so that it lies on the grid and exceeds λ. Refused when the raised bound
    /// is not below 2^46·λ (Theorem 1's condition).
    pub fn new(scale: f64, bound: f64) -> Result<Self, SnappingError> {
        if !(scale.is_normal() && scale > 0.0) {
            return Err(SnappingError::InvalidScale(scale));
        }
        if !(bound.is_finite() && bound > 0.0) {
            return Err(SnappingError::InvalidBound(bound));
        }
        let grid = power_of_two_at_least(scale).ok_or(SnappingError::InvalidScale(scale))?;
        // B/Λ is exact (Λ is a power of two and B/Λ ≥ B/2^1023 stays in range for finite B >
        // the smallest normal; a subnormal quotient is below 1 and becomes 2 cells).
        let cells = (bound / grid).ceil().max(2.0);
        let raised = cells * grid;
        // 2^46·λ is exact (or +∞, which only makes the comparison true).
        if !(raised.is_finite() && raised < MAX_BOUND_OVER_SCALE * scale) {
            return Err(SnappingError::BoundTooLarge {
                bound: raised,
                scale,
            });
        }
        Ok(Self {
            scale,
            grid,
            bound: raised,
        })
    }

    /// λ, the Laplace scale.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Λ, the smallest power of two ≥ λ: every output is a multiple of it.
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// B as used: the requested bound raised to a multiple of Λ above λ.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// 2^{-49}·B/λ: the extra ε that floating point costs (Theorem 1), as an f64.
    pub fn float_epsilon(&self) -> f64 {
        FLOAT_TERM * self.bound / self.scale
    }

    /// The ε of one release for inputs at most `distance` apart: distance/λ + 2^{-49}·B/λ
    /// (Theorem 1 with sensitivity `distance`; see the module documentation), as an f64.
    pub fn epsilon(&self, distance: f64) -> f64 {
        (distance + FLOAT_TERM * self.bound) / self.scale
    }

    /// f̃(x) = clamp_B(⌊clamp_B(x) ⊕ S ⊗ λ ⊗ LN(U*)⌉_Λ): a multiple of Λ in [−B, B].
    pub fn sample(&self, x: f64, rng: &mut NoiseSource) -> Result<f64, SnappingError> {
        if x.is_nan() {
            return Err(SnappingError::NotANumber);
        }
        let noisy = x.clamp(-self.bound, self.bound) + laplace_f64(self.scale, rng);
        Ok(round_to_multiple(noisy, self.grid).clamp(-self.bound, self.bound))
    }
}

/// A snapped Laplace mechanism calibrated for a **vector** query, with the ε it achieves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VectorCalibration {
    /// The mechanism every coordinate is released through, independently.
    pub mechanism: SnappedLaplace,
    /// Theorem 1's ε of the whole vector: (Δ₁ + k·2^{-49}·B)/λ ≤ the target.
    pub achieved: f64,
}

/// Calibrates one snapped Laplace mechanism to release every coordinate of a vector query with
/// independent noise at total ε = `epsilon`, for neighbours whose vectors are at most
/// `sensitivity` apart in ℓ₁ and differ in at most `coordinates` coordinates, each coordinate of
/// magnitude at most `bound` (the clamping bound B).
///
/// By Theorem 1 coordinate by coordinate, a coordinate that moves by tᵢ costs
/// (tᵢ + 2^{-49}·B)/λ and one that does not move costs nothing, so the vector costs at most
/// (Δ₁ + k·2^{-49}·B)/λ. The scale is **λ = (Δ₁ + k·2^{-49}·B)/(ε − 4k·2^{-49})·(1 + 2^{-40})**:
/// B is raised onto the grid by less than 2Λ ≤ 4λ, which the 4k·2^{-49} of the denominator pays
/// for; the achieved ε is recomputed from the built mechanism and checked against the target.
pub fn calibrate_vector(
    sensitivity: f64,
    coordinates: usize,
    bound: f64,
    epsilon: f64,
) -> Result<VectorCalibration, SnappingError> {
    let k = coordinates.max(1) as f64;
    let floor = 4.0 * k * FLOAT_TERM;
    let denominator = epsilon - floor;
    if !(denominator > 0.0 && epsilon.is_finite()) {
        return Err(SnappingError::EpsilonTooSmall { epsilon, floor });
    }
    let scale = (sensitivity + k * FLOAT_TERM * bound) / denominator * (1.0 + 2f64.powi(-40));
    let mechanism = SnappedLaplace::new(scale, bound)?;
    let achieved = (sensitivity + k * FLOAT_TERM * mechanism.bound()) / mechanism.scale();
    if achieved > epsilon {
        return Err(SnappingError::Calibration { achieved, epsilon });
    }
    Ok(VectorCalibration {
        mechanism,
        achieved,
    })
}

/// A sample of U*: the exact uniform distribution over the doubles in (0, 1], each double
/// receiving the probability of the reals in (previous double, it] (Mironov 2012 §5.2).
///
/// The binade k is geometric (the number of zero bits before the first one bit of a stream of
/// fair bits: Pr(k) = 2^{-k-1}), capped at 1020 (probability 2^{-1020}); the significand
/// is 1 + m·2^{-52} with m uniform in {1, …, 2^52}, so u = 2^{-k-1}·(1 + m·2^{-52}) ∈
/// (2^{-k-1}, 2^{-k}]. Both products are exact.
pub fn uniform_open_closed(rng: &mut NoiseSource) -> f64 {
    let mut binade: u32 = 0;
    loop {
        let word: u64 = rng.random();
        if word != 0 {
            binade += word.leading_zeros();
            break;
        }
        binade += 64;
        if binade >= MAX_BINADE {
            break;
        }
    }
    let binade = binade.min(MAX_BINADE);
    let m = (rng.random::<u64>() >> 12) + 1; // uniform in {1, …, 2^52}
    let significand = 1.0 + m as f64 * f64::EPSILON; // 1 + m·2^{-52} ∈ (1, 2], exact
    // 2^{-(binade+1)}: biased exponent 1023 − binade − 1 ≥ 2, a normal power of two.
    let scale = f64::from_bits(u64::from(1022 - binade) << 52);
    significand * scale
}

/// S ⊗ λ ⊗ LN(U*): Laplace noise of scale λ as f64 arithmetic computes it, before snapping.
/// Released alone it is exposed to Mironov's attack; [`SnappedLaplace::sample`] is the release.
pub fn laplace_f64(scale: f64, rng: &mut NoiseSource) -> f64 {
    let magnitude = scale * uniform_open_closed(rng).ln(); // ≤ 0
    if rng.random::<bool>() {
        magnitude
    } else {
        -magnitude
    }
}

/// The smallest power of two ≥ `x`, computed from the bits (exact), for a positive normal `x`;
/// `None` for anything else or when it would overflow.
pub fn power_of_two_at_least(x: f64) -> Option<f64> {
    if !(x.is_normal() && x > 0.0) {
        return None;
    }
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = x.to_bits();
    if bits & MANTISSA == 0 {
        return Some(x);
    }
    let next = ((bits >> 52) + 1) << 52;
    let p = f64::from_bits(next);
    p.is_finite().then_some(p)
}

/// The multiple of `grid` (a power of two) nearest to `y`, ties away from zero; exact.
fn round_to_multiple(y: f64, grid: f64) -> f64 {
    (y / grid).round() * grid
}

/// Statistical checks of snapped Laplace noise, shared by the tests of every mechanism that uses
/// it.
#[cfg(test)]
pub(crate) mod testing {
    use super::SnappedLaplace;
    use statrs::distribution::{ChiSquared, ContinuousCDF};

    /// CDF of Laplace(0, scale).
    pub(crate) fn laplace_cdf(scale: f64) -> impl Fn(f64) -> f64 {
        move |x| {
            if x < 0.0 {
                0.5 * (x / scale).exp()
            } else {
                1.0 - 0.5 * (-x / scale).exp()
            }
        }
    }

    /// χ² statistic and p-value of snapped outputs at input `x` against the exact distribution
    /// of ⌊x + Lap(scale)⌉_Λ clamped to ±B: cells kΛ with the tails beyond ±4 cells merged.
    pub(crate) fn snapped_chi_square(
        m: &SnappedLaplace,
        outputs: &[f64],
        x: f64,
        scale: f64,
    ) -> f64 {
        let cdf = laplace_cdf(scale);
        let g = m.grid();
        let kmax = 4i64;
        let centre = (x / g).round() as i64;
        let mut observed = vec![0.0; (2 * kmax + 1) as usize];
        for &y in outputs {
            let k = ((y / g).round() as i64 - centre).clamp(-kmax, kmax);
            observed[(k + kmax) as usize] += 1.0;
        }
        let n = outputs.len() as f64;
        let mut stat = 0.0;
        for (i, o) in observed.iter().enumerate() {
            let k = i as i64 - kmax;
            let lo = if k == -kmax {
                0.0
            } else {
                cdf(((centre + k) as f64 - 0.5) * g - x)
            };
            let hi = if k == kmax {
                1.0
            } else {
                cdf(((centre + k) as f64 + 0.5) * g - x)
            };
            let e = n * (hi - lo);
            stat += (o - e) * (o - e) / e;
        }
        1.0 - ChiSquared::new((2 * kmax) as f64).expect("valid").cdf(stat)
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{laplace_cdf, snapped_chi_square};
    use super::*;
    use crate::util::stats::ks_test;

    #[test]
    fn powers_of_two_are_exact() {
        assert_eq!(power_of_two_at_least(1.0), Some(1.0));
        assert_eq!(power_of_two_at_least(0.75), Some(1.0));
        assert_eq!(power_of_two_at_least(1.0000000000000002), Some(2.0));
        assert_eq!(power_of_two_at_least(3.0e-5), Some(2f64.powi(-15)));
        assert_eq!(
            power_of_two_at_least(2f64.powi(-1000)),
            Some(2f64.powi(-1000))
        );
        assert_eq!(power_of_two_at_least(f64::MAX), None);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE / 2.0] {
            assert_eq!(power_of_two_at_least(bad), None, "{bad}");
        }
    }

    #[test]
    fn invalid_parameters_are_typed_errors() {
        for s in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-310] {
            assert!(
                matches!(
                    SnappedLaplace::new(s, 1.0),
                    Err(SnappingError::InvalidScale(_))
                ),
                "{s}"
            );
        }
        assert!(matches!(
            SnappedLaplace::new(1.0, 0.0),
            Err(SnappingError::InvalidBound(_))
        ));
        assert!(matches!(
            SnappedLaplace::new(1.0, f64::INFINITY),
            Err(SnappingError::InvalidBound(_))
        ));
        // B must be below 2^46 λ.
        assert!(SnappedLaplace::new(1.0, 2f64.powi(46) - 2.0).is_ok());
        assert!(matches!(
            SnappedLaplace::new(1.0, 2f64.powi(46)),
            Err(SnappingError::BoundTooLarge { .. })
        ));
        let m = SnappedLaplace::new(1.0, 1.0).expect("valid");
        assert_eq!(
            m.sample(f64::NAN, &mut NoiseSource::seeded(1)),
            Err(SnappingError::NotANumber)
        );
    }

    #[test]
    fn the_bound_is_raised_onto_the_grid_above_the_scale() {
        let m = SnappedLaplace::new(0.3, 1.0).expect("valid");
        assert_eq!(m.grid(), 0.5);
        assert_eq!(m.bound(), 1.0);
        let m = SnappedLaplace::new(0.3, 1.1).expect("valid");
        assert_eq!(m.bound(), 1.5);
        let m = SnappedLaplace::new(0.3, 0.01).expect("valid");
        assert_eq!(m.bound(), 1.0, "at least 2Λ > λ");
        assert!(m.bound() > m.scale());
        assert_eq!(m.float_epsilon(), 2f64.powi(-49) / 0.3);
        assert!((m.epsilon(0.3) - (1.0 + 2f64.powi(-49) / 0.3)).abs() < 1e-15);
    }

    #[test]
    fn outputs_lie_on_the_grid_and_within_the_bound() {
        let mut rng = NoiseSource::seeded(11);
        for (scale, bound, x) in [
            (0.3, 2.0, 0.123_456_789),
            (1e-4, 0.05, -0.049_999),
            (7.0, 3.0, 1e6),
            (2.0, 100.0, -1e300),
            (0.01, 1.0, 0.0),
        ] {
            let m = SnappedLaplace::new(scale, bound).expect("valid");
            let mut hit_bound = false;
            for _ in 0..2000 {
                let y = m.sample(x, &mut rng).expect("sample");
                assert!(y.abs() <= m.bound(), "{y} outside ±{}", m.bound());
                let cells = y / m.grid();
                assert_eq!(
                    cells,
                    cells.round(),
                    "{y} is not a multiple of {}",
                    m.grid()
                );
                hit_bound |= y.abs() == m.bound();
            }
            if x.abs() > bound {
                assert!(hit_bound, "a clamped input reaches the bound");
            }
        }
    }

    #[test]
    fn uniform_open_closed_is_uniform_and_reaches_small_binades() {
        let mut rng = NoiseSource::seeded(5);
        let sample: Vec<f64> = (0..20_000).map(|_| uniform_open_closed(&mut rng)).collect();
        assert!(sample.iter().all(|&u| u > 0.0 && u <= 1.0));
        assert!(ks_test(&sample, |x| x.clamp(0.0, 1.0)).p_value > 1e-3);
        // Below 2^-20 the draw keeps full precision: the significand's low bits are not zero.
        let mut rng = NoiseSource::seeded(6);
        let small: Vec<f64> = (0..4_000_000)
            .map(|_| uniform_open_closed(&mut rng))
            .filter(|&u| u < 2f64.powi(-16))
            .collect();
        assert!(
            (40..=100).contains(&small.len()),
            "≈ 61 expected below 2^-16, got {}",
            small.len()
        );
        assert!(small.iter().any(|u| u.to_bits() & 0xff != 0));
    }

    fn laplace_sample(scale: f64, count: usize, seed: u64) -> Vec<f64> {
        let mut rng = NoiseSource::seeded(seed);
        (0..count).map(|_| laplace_f64(scale, &mut rng)).collect()
    }

    #[test]
    fn unsnapped_noise_is_laplace_at_the_scale() {
        let sample = laplace_sample(0.7, 20_000, 21);
        assert!(ks_test(&sample, laplace_cdf(0.7)).p_value > 1e-3);
    }

    #[test]
    fn half_noise_fails_the_same_ks_test() {
        let sample = laplace_sample(0.35, 20_000, 22);
        assert!(ks_test(&sample, laplace_cdf(0.7)).p_value < 1e-6);
    }

    #[test]
    fn snapped_noise_matches_rounded_laplace_at_the_scale() {
        // B far from x so that the clamp plays no part within ±4 cells.
        let (scale, x) = (0.3, 0.123_456_789);
        let m = SnappedLaplace::new(scale, 1000.0).expect("valid");
        let mut rng = NoiseSource::seeded(31);
        let outputs: Vec<f64> = (0..40_000)
            .map(|_| m.sample(x, &mut rng).expect("sample"))
            .collect();
        let p = snapped_chi_square(&m, &outputs, x, scale);
        assert!(p > 1e-3, "p = {p}");
    }

    #[test]
    fn half_noise_snapped_fails_the_same_chi_square_test() {
        let (scale, x) = (0.3, 0.123_456_789);
        let m = SnappedLaplace::new(scale, 1000.0).expect("valid");
        let half = SnappedLaplace::new(scale / 2.0, 1000.0).expect("valid");
        assert_eq!(half.grid() * 2.0, m.grid());
        let mut rng = NoiseSource::seeded(32);
        // The mutant: half the noise, snapped to the same grid Λ.
        let outputs: Vec<f64> = (0..40_000)
            .map(|_| {
                let noisy = x + laplace_f64(scale / 2.0, &mut rng);
                round_to_multiple(noisy, m.grid()).clamp(-m.bound(), m.bound())
            })
            .collect();
        let p = snapped_chi_square(&m, &outputs, x, scale);
        assert!(p < 1e-6, "p = {p}");
    }

    #[test]
    fn vector_calibration_meets_its_target_at_scale_sensitivity_over_epsilon() {
        for (sensitivity, k, bound, epsilon) in [(2.0, 2, 1e3, 0.5), (90.0, 90, 1e6, 1.0)] {
            let c = calibrate_vector(sensitivity, k, bound, epsilon).expect("calibrates");
            assert!(c.achieved <= epsilon);
            assert!((c.mechanism.scale() - sensitivity / epsilon).abs() < 1e-6 * sensitivity);
            let float = k as f64 * FLOAT_TERM * c.mechanism.bound();
            let recomputed = (sensitivity + float) / c.mechanism.scale();
            assert_eq!(c.achieved, recomputed);
        }
        assert!(matches!(
            calibrate_vector(1.0, 1 << 20, 1.0, 1e-10),
            Err(SnappingError::EpsilonTooSmall { .. })
        ));
        assert!(matches!(
            calibrate_vector(1.0, 1, 1.0, f64::INFINITY),
            Err(SnappingError::EpsilonTooSmall { .. })
        ));
    }

    #[test]
    fn seeded_sources_give_the_same_release_and_secure_ones_do_not_repeat() {
        let m = SnappedLaplace::new(0.01, 1.0).expect("valid");
        let draw = |rng: &mut NoiseSource| -> Vec<f64> {
            (0..50)
                .map(|_| m.sample(0.25, rng).expect("sample"))
                .collect()
        };
        assert_eq!(
            draw(&mut NoiseSource::seeded(9)),
            draw(&mut NoiseSource::seeded(9))
        );
        assert_ne!(
            draw(&mut NoiseSource::seeded(9)),
            draw(&mut NoiseSource::seeded(10))
        );
        let mut a = NoiseSource::secure().expect("entropy");
        let mut b = NoiseSource::secure().expect("entropy");
        assert_ne!(draw(&mut a), draw(&mut b));
    }
}
