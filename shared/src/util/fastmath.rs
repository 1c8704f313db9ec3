//! Branch-free, inlinable `exp` and `log1p` on the ranges the logistic loss needs.
//!
//! libm's `exp`/`log1p` are opaque calls that stop loops from vectorising and dominate the time
//! of every pass over the data. The logistic loss and its derivatives only need u = e^{−|z|} ∈ (0, 1]
//! and log(1 + u), so:
//!
//! - [`exp_nonpositive`]: e^x for x ≤ 0 by Cody–Waite reduction x = k·ln2 + r (|r| ≤ ln2/2) and the
//!   Taylor polynomial of degree 13 (truncation < 5·10⁻¹⁸), scaled by 2^k built from the bits of the
//!   rounding constant. Results below e^{−708} (≈ 3·10⁻³⁰⁸, the edge of the normal range) are
//!   flushed to 0; every caller adds them to a number ≥ 1 or multiplies them into a term that is
//!   then negligible, so the flush changes no result beyond rounding.
//! - [`log1p_unit`]: log(1 + u) for u ∈ [0, 1] as 2·atanh(t), t = u/(2 + u) ∈ [0, 1/3], by its odd
//!   series to 16 terms (truncation < 2·10⁻¹⁷ relative); no cancellation for small u.
//!
//! Both agree with libm to a few ulp (tested over dense grids below).

const EXP_COEFFS: [f64; 14] = [
    1.0,
    1.0,
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
    1.0 / 40320.0,
    1.0 / 362880.0,
    1.0 / 3628800.0,
    1.0 / 39916800.0,
    1.0 / 479001600.0,
    1.0 / 6227020800.0,
];

/// e^x for x ≤ 0; 0 for x < −708. (Positive x is outside the contract and clamped to 0.)
#[inline(always)]
pub fn exp_nonpositive(x: f64) -> f64 {
    // ln 2 split as in fdlibm: the high part has its low 21 bits zero, so k·LN2_HI is exact.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const SHIFT: f64 = 6_755_399_441_055_744.0; // 1.5·2⁵²: adding it rounds to an integer
    let xc = x.clamp(-708.0, 0.0);
    let t = xc * std::f64::consts::LOG2_E + SHIFT;
    let k = t - SHIFT;
    let r = (xc - k * LN2_HI) - k * LN2_LO;
    let p = estrin(&EXP_COEFFS, r);
    // The low mantissa bits of t hold 2⁵¹ + k; shifted into the exponent field and re-biased they
    // give 2^k for k ∈ [−1022, 0].
    let scale = f64::from_bits(t.to_bits().wrapping_shl(52).wrapping_add(1023u64 << 52));
    if x < -708.0 { 0.0 } else { p * scale }
}

/// Σ cₖ xᵏ for up to 16 coefficients by Estrin's scheme: pairs, then pairs of pairs, … — four
/// levels of independent multiply-adds instead of a chain of 15, which is what lets the pass loops
/// keep several rows in flight (Horner's rule made them latency-bound).
#[inline(always)]
fn estrin<const N: usize>(c: &[f64; N], x: f64) -> f64 {
    const { assert!(N <= 16) };
    let coeff = |k: usize| if k < N { c[k] } else { 0.0 };
    let x2 = x * x;
    let x4 = x2 * x2;
    let x8 = x4 * x4;
    let pair = |k: usize| coeff(k) + coeff(k + 1) * x;
    let quad = |k: usize| pair(k) + pair(k + 2) * x2;
    let oct = |k: usize| quad(k) + quad(k + 4) * x4;
    oct(0) + oct(8) * x8
}

/// 1/(2k + 1) for k = 0..16: the coefficients of atanh(t)/t in t².
const ATANH_COEFFS: [f64; 16] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
    1.0 / 23.0,
    1.0 / 25.0,
    1.0 / 27.0,
    1.0 / 29.0,
    1.0 / 31.0,
];

/// log(1 + u) for u ∈ [0, 1].
#[inline(always)]
pub fn log1p_unit(u: f64) -> f64 {
    let t = u / (2.0 + u);
    let t2 = t * t;
    2.0 * t * estrin(&ATANH_COEFFS, t2)
}

/// What one row of a logistic-loss pass needs from its margin m = y⟨θ, x⟩.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogisticTerms {
    /// ℓ = log(1 + e^{−m}).
    pub loss: f64,
    /// σ(−m) = −dℓ/dm.
    pub slope: f64,
    /// σ(m)σ(−m) = d²ℓ/dm².
    pub curvature: f64,
}

/// Loss, slope and curvature of the logistic loss at margin `m`, from one exp and one log1p.
#[inline(always)]
pub fn logistic_terms(m: f64) -> LogisticTerms {
    let u = exp_nonpositive(-m.abs());
    let inv = 1.0 / (1.0 + u);
    // σ(−m) is u/(1+u) for m ≥ 0 and 1/(1+u) otherwise; a 0/1 mask picks exactly one of them.
    let nonneg = f64::from(u8::from(m >= 0.0));
    LogisticTerms {
        loss: positive_part(-m) + log1p_unit(u),
        slope: inv * (nonneg * u + (1.0 - nonneg)),
        curvature: u * inv * inv,
    }
}

/// The logistic function σ(z) = 1/(1 + e⁻ᶻ), stable for large |z|.
#[inline]
pub fn sigmoid(z: f64) -> f64 {
    // logistic_terms(m).slope is σ(−m).
    logistic_terms(-z).slope
}

/// softplus(z) = log(1 + e^z).
#[inline(always)]
pub fn softplus(z: f64) -> f64 {
    positive_part(z) + log1p_unit(exp_nonpositive(-z.abs()))
}

/// max(z, 0) without a data-dependent branch: z + |z| is exactly 2z or 0 (|z| < 8·10³⁰⁷).
/// A select here compiles to a branch that random signs mispredict half the time.
#[inline(always)]
fn positive_part(z: f64) -> f64 {
    0.5 * (z + z.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(a: f64, b: f64) -> f64 {
        if a == b {
            0.0
        } else {
            (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
        }
    }

    #[test]
    fn exp_matches_libm() {
        let mut worst = 0.0f64;
        for i in 0..=2_000_000 {
            let x = -708.0 * i as f64 / 2_000_000.0;
            worst = worst.max(rel(exp_nonpositive(x), x.exp()));
        }
        assert!(worst < 1e-15, "worst relative error {worst:e}");
        assert_eq!(exp_nonpositive(0.0), 1.0);
        assert_eq!(exp_nonpositive(-800.0), 0.0);
        assert_eq!(exp_nonpositive(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn log1p_matches_libm() {
        let mut worst = 0.0f64;
        for i in 0..=1_000_000 {
            let u = i as f64 / 1_000_000.0;
            worst = worst.max(rel(log1p_unit(u), u.ln_1p()));
        }
        for e in 1..300 {
            let u = 10f64.powi(-e);
            worst = worst.max(rel(log1p_unit(u), u.ln_1p()));
        }
        assert!(worst < 1e-15, "worst relative error {worst:e}");
    }

    #[test]
    fn logistic_terms_match_the_definitions() {
        for i in -4000..=4000 {
            let m = i as f64 / 40.0;
            let t = logistic_terms(m);
            let sig = |z: f64| 1.0 / (1.0 + (-z).exp());
            let loss = if m > 0.0 {
                (-m).exp().ln_1p()
            } else {
                -m + m.exp().ln_1p()
            };
            assert!(rel(t.loss, loss) < 1e-14, "loss at {m}");
            assert!(rel(t.slope, sig(-m)) < 1e-14, "slope at {m}");
            assert!(
                rel(t.curvature, sig(m) * sig(-m)) < 1e-13,
                "curvature at {m}"
            );
            assert!(
                rel(
                    softplus(m),
                    if m > 0.0 {
                        m + (-m).exp().ln_1p()
                    } else {
                        m.exp().ln_1p()
                    }
                ) < 1e-14
            );
        }
        assert_eq!(logistic_terms(1e6).loss, 0.0);
        assert_eq!(logistic_terms(-1e6).loss, 1e6);
    }
}
