//! Exact non-negative rationals, and the uniform integers that are the samplers' only source of
//! randomness.
//!
//! **Exact parameters from f64.** Every finite double is a dyadic rational m·2^e (m an integer
//! below 2^53, −1074 ≤ e ≤ 971). [`Ratio::from_f64`] returns exactly that rational, reduced, so a
//! sampler built from an f64 parameter samples the law of *that exact value*; a mechanism's
//! guarantee is stated for it (the callers compute their parameters with a relative margin
//! that covers the rounding of the f64 arithmetic that produced them).
//!
//! **Uniform integers.** [`uniform_below`] draws U uniform in {0, …, n − 1} by rejection: the
//! bits of n − 1's length are drawn from the [`NoiseSource`] (ChaCha20) and a draw ≥ n is
//! redrawn (each draw is accepted with probability > ½). No floating point is involved, so
//! Bernoulli(a/b) = \[U < a\] with U uniform below b is exact ([`bernoulli`]; Canonne, Kamath &
//! Steinke 2020, §5, where every sampler is built from such comparisons).

use crate::privacy::noise::NoiseSource;
use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::{One, ToPrimitive, Zero};
use rand::RngExt;

/// A non-negative rational num/den with den > 0, in lowest terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ratio {
    num: BigUint,
    den: BigUint,
}

impl Ratio {
    /// num/den in lowest terms; `None` when den = 0.
    pub fn new(num: BigUint, den: BigUint) -> Option<Self> {
        if den.is_zero() {
            return None;
        }
        let g = num.gcd(&den);
        if g.is_one() || g.is_zero() {
            return Some(Self { num, den });
        }
        Some(Self {
            num: num / &g,
            den: den / &g,
        })
    }

    /// The integer n.
    pub fn integer(n: u64) -> Self {
        Self::whole(BigUint::from(n))
    }

    /// The integer n, of any size.
    pub fn whole(n: BigUint) -> Self {
        Self {
            num: n,
            den: BigUint::one(),
        }
    }

    /// The exact value of a finite, non-negative double (module docs); `None` for a negative,
    /// infinite or NaN one. −0 is 0.
    pub fn from_f64(x: f64) -> Option<Self> {
        if !(x.is_finite() && x >= 0.0) {
            return None;
        }
        if x == 0.0 {
            return Some(Self::integer(0));
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        // Normal: (2^52 + f)·2^(b − 1075); subnormal: f·2^(−1074).
        let (mut m, mut e) = if biased == 0 {
            (fraction, -1074i64)
        } else {
            (fraction | (1u64 << 52), biased - 1075)
        };
        let zeros = m.trailing_zeros();
        m >>= zeros;
        e += i64::from(zeros);
        let m = BigUint::from(m);
        Some(if e >= 0 {
            Self {
                num: m << (e as u64),
                den: BigUint::one(),
            }
        } else {
            Self {
                num: m,
                den: BigUint::one() << (e.unsigned_abs()),
            }
        })
    }

    /// The numerator.
    pub fn num(&self) -> &BigUint {
        &self.num
    }

    /// The denominator (> 0).
    pub fn den(&self) -> &BigUint {
        &self.den
    }

    /// True for 0.
    pub fn is_zero(&self) -> bool {
        self.num.is_zero()
    }

    /// 1/x, `None` for 0.
    pub fn recip(&self) -> Option<Self> {
        Self::new(self.den.clone(), self.num.clone())
    }

    /// ⌊x⌋.
    pub fn floor(&self) -> BigUint {
        &self.num / &self.den
    }

    /// ⌊√x⌋, exactly: ⌊√x⌋ = ⌊√⌊x⌋⌋ for x ≥ 0.
    pub fn floor_sqrt(&self) -> BigUint {
        self.floor().sqrt()
    }

    /// A double near the value (the leading 64 bits of numerator and denominator; exact for a
    /// value that came from [`Ratio::from_f64`]). For messages and tests; never used to sample.
    pub fn to_f64(&self) -> f64 {
        let (sn, sd) = (
            self.num.bits().saturating_sub(64),
            self.den.bits().saturating_sub(64),
        );
        let num = (&self.num >> sn).to_f64().unwrap_or(f64::INFINITY);
        let den = (&self.den >> sd).to_f64().unwrap_or(f64::INFINITY);
        // Multiply by 2^(sn − sd) in steps that stay in range.
        let mut x = num / den;
        let mut k = sn as i64 - sd as i64;
        while k != 0 {
            let step = k.clamp(-500, 500);
            x *= 2f64.powi(step as i32);
            k -= step;
        }
        x
    }
}

/// U uniform in {0, …, n − 1} for n > 0 (module docs); 0 when n = 0 (never asked for).
///
/// The draws from `rng` depend on n's size only: below 2^64, 64-bit words masked to n − 1's
/// length ([`uniform_below_u64`]); from 2^64 on, ⌈bits(n)/32⌉ 32-bit words, least significant
/// first, the last masked to the remaining bits. [`uniform_below_u128`] draws the same words for
/// the same n, so the two paths give the same U from the same state, bit for bit.
pub fn uniform_below(n: &BigUint, rng: &mut NoiseSource) -> BigUint {
    match n.to_u128() {
        Some(small) => BigUint::from(uniform_below_u128(small, rng)),
        None => uniform_below_words(n, rng),
    }
}

/// [`uniform_below`] from 32-bit words, for n ≥ 2^64 (any size).
fn uniform_below_words(n: &BigUint, rng: &mut NoiseSource) -> BigUint {
    let bits = n.bits();
    let words = bits.div_ceil(32) as usize;
    let top_bits = bits - 32 * (words as u64 - 1);
    let top_mask = u32::MAX >> (32 - top_bits);
    loop {
        let mut digits: Vec<u32> = (0..words).map(|_| rng.random::<u32>()).collect();
        if let Some(top) = digits.last_mut() {
            *top &= top_mask;
        }
        let u = BigUint::new(digits);
        if &u < n {
            return u;
        }
    }
}

/// U uniform in {0, …, n − 1} for 0 < n < 2^64 (0 for n ≤ 1).
pub fn uniform_below_u64(n: u64, rng: &mut NoiseSource) -> u64 {
    if n <= 1 {
        return 0;
    }
    let mask = u64::MAX >> (n - 1).leading_zeros();
    loop {
        let u = rng.random::<u64>() & mask;
        if u < n {
            return u;
        }
    }
}

/// U uniform in {0, …, n − 1} for 0 < n < 2^128, in machine integers: the draws of
/// [`uniform_below`] for the same n (below 2^64 its 64-bit path; above, its 32-bit words in the
/// same order), so the result is the same U (0 for n ≤ 1).
pub fn uniform_below_u128(n: u128, rng: &mut NoiseSource) -> u128 {
    if let Ok(small) = u64::try_from(n) {
        return u128::from(uniform_below_u64(small, rng));
    }
    let bits = 128 - n.leading_zeros();
    let words = bits.div_ceil(32);
    let top_mask = u32::MAX >> (32 * words - bits);
    loop {
        let mut u = 0u128;
        for w in 0..words {
            let mut digit = rng.random::<u32>();
            if w + 1 == words {
                digit &= top_mask;
            }
            u |= u128::from(digit) << (32 * w);
        }
        if u < n {
            return u;
        }
    }
}

/// Bernoulli(num/den) for num ≤ den, den > 0: \[U < num\] with U uniform below den (exact).
pub fn bernoulli(num: &BigUint, den: &BigUint, rng: &mut NoiseSource) -> bool {
    match den.to_u128() {
        Some(d) => {
            let u = uniform_below_u128(d, rng);
            num.to_u128().is_none_or(|n| u < n)
        }
        None => &uniform_below(den, rng) < num,
    }
}

/// Bernoulli(q) for the **exact value** of a double q ∈ \[0, 1\]: \[U < q\] for U uniform in [0, 1),
/// decided by comparing U's binary expansion, 64 bits at a time, with q's (which ends after at
/// most 1,074 bits), so P(true) = q exactly; one 64-bit draw almost always decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BernoulliF64 {
    /// q's bits after the binary point, 64 per word, most significant first; `None` for q = 1.
    words: Option<Vec<u64>>,
}

impl BernoulliF64 {
    /// The law for `q` ∈ [0, 1]; `None` outside it (NaN included).
    pub fn new(q: f64) -> Option<Self> {
        if !(0.0..=1.0).contains(&q) {
            return None;
        }
        if q == 1.0 {
            return Some(Self { words: None });
        }
        let bits = q.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as i64;
        let fraction = bits & ((1u64 << 52) - 1);
        // q = m·2^e exactly, m < 2^53.
        let (m, e) = if biased == 0 {
            (fraction, -1074i64)
        } else {
            (fraction | (1u64 << 52), biased - 1075)
        };
        // Word w holds ⌊q·2^{64(w+1)}⌋ mod 2^64; q's last bit is at position −e.
        let count = (-e).max(0) as u64;
        let words = (0..count.div_ceil(64) as i64)
            .map(|w| {
                let shift = e + 64 * (w + 1);
                if shift >= 64 {
                    0
                } else if shift >= 0 {
                    (u128::from(m) << shift) as u64
                } else {
                    m.checked_shr(shift.unsigned_abs() as u32).unwrap_or(0)
                }
            })
            .collect();
        Some(Self { words: Some(words) })
    }

    /// One draw.
    pub fn sample(&self, rng: &mut NoiseSource) -> bool {
        let Some(words) = &self.words else {
            return true;
        };
        for &w in words {
            let u = rng.random::<u64>();
            if u != w {
                return u < w;
            }
        }
        // U agrees with every bit of q, and its remaining bits are ≥ 0: U ≥ q.
        false
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::assert_same_draws;
    use super::*;

    /// q as the rational Σ words_w·2^{−64(w+1)}.
    fn value_of(b: &BernoulliF64) -> Ratio {
        let words = b.words.as_ref().expect("q < 1");
        let mut num = BigUint::from(0u32);
        for &w in words {
            num = (num << 64u32) + BigUint::from(w);
        }
        Ratio::new(num, BigUint::one() << (64 * words.len())).expect("den > 0")
    }

    #[test]
    fn the_words_are_the_exact_binary_expansion_of_q() {
        for q in [0.1, 0.5, 0.75, 1e-3, 0.999_999_999, 5e-324, 2.5e-310, 0.0] {
            let b = BernoulliF64::new(q).expect("in [0, 1]");
            let v = value_of(&b);
            let exact = Ratio::from_f64(q).expect("finite");
            assert_eq!(v.num() * exact.den(), exact.num() * v.den(), "{q}");
        }
        assert_eq!(BernoulliF64::new(1.0).expect("valid").words, None);
        for bad in [-0.1, 1.5, f64::NAN] {
            assert!(BernoulliF64::new(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn draws_have_the_stated_frequency() {
        let mut rng = NoiseSource::seeded(77);
        for q in [0.1, 0.5, 0.03] {
            let b = BernoulliF64::new(q).expect("valid");
            let n = 200_000;
            let k = (0..n).filter(|_| b.sample(&mut rng)).count() as f64;
            let se = (q * (1.0 - q) / n as f64).sqrt();
            assert!((k / n as f64 - q).abs() < 5.0 * se, "{q}: {}", k / n as f64);
        }
        let never = BernoulliF64::new(0.0).expect("valid");
        let always = BernoulliF64::new(1.0).expect("valid");
        assert!((0..1000).all(|_| !never.sample(&mut rng) && always.sample(&mut rng)));
    }

    #[test]
    fn doubles_convert_to_their_exact_value() {
        let r = Ratio::from_f64(0.75).expect("finite");
        assert_eq!(
            (r.num(), r.den()),
            (&BigUint::from(3u32), &BigUint::from(4u32))
        );
        let r = Ratio::from_f64(6.0).expect("finite");
        assert_eq!((r.num(), r.den()), (&BigUint::from(6u32), &BigUint::one()));
        // 0.1 is not 1/10: it is 3602879701896397/2^55.
        let r = Ratio::from_f64(0.1).expect("finite");
        assert_eq!(r.num(), &BigUint::from(3_602_879_701_896_397u64));
        assert_eq!(r.den(), &(BigUint::one() << 55u32));
        // The smallest subnormal and the largest double.
        let r = Ratio::from_f64(f64::from_bits(1)).expect("finite");
        assert_eq!(r.den(), &(BigUint::one() << 1074u32));
        let r = Ratio::from_f64(f64::MAX).expect("finite");
        assert_eq!(r.den(), &BigUint::one());
        assert_eq!(r.to_f64(), f64::MAX);
        for x in [0.1, 1.0 / 3.0, 7e-300, 123_456.789, 2f64.powi(80)] {
            assert_eq!(Ratio::from_f64(x).expect("finite").to_f64(), x);
        }
        assert!(Ratio::from_f64(0.0).expect("zero").is_zero());
        assert!(Ratio::from_f64(-0.0).expect("zero").is_zero());
        for bad in [-1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1e-300] {
            assert_eq!(Ratio::from_f64(bad), None, "{bad}");
        }
    }

    #[test]
    fn floor_square_root_and_reciprocal_are_exact() {
        let r = Ratio::from_f64(99.999).expect("finite");
        assert_eq!(r.floor(), BigUint::from(99u32));
        assert_eq!(r.floor_sqrt(), BigUint::from(9u32));
        assert_eq!(Ratio::integer(100).floor_sqrt(), BigUint::from(10u32));
        let third = Ratio::new(BigUint::from(2u32), BigUint::from(6u32)).expect("den > 0");
        assert_eq!(third.num(), &BigUint::one(), "reduced");
        assert_eq!(third.recip(), Some(Ratio::integer(3)));
        assert_eq!(Ratio::integer(0).recip(), None);
        assert_eq!(Ratio::new(BigUint::one(), BigUint::zero()), None);
    }

    #[test]
    fn uniform_integers_are_uniform_for_small_and_large_ranges() {
        let mut rng = NoiseSource::seeded(1);
        // Small: counts over {0..5} within 5 standard errors.
        let draws = 60_000;
        let mut counts = [0u32; 6];
        for _ in 0..draws {
            counts[uniform_below_u64(6, &mut rng) as usize] += 1;
        }
        let expected = draws as f64 / 6.0;
        let se = (expected * (5.0 / 6.0)).sqrt();
        for c in counts {
            assert!((f64::from(c) - expected).abs() < 5.0 * se, "{counts:?}");
        }
        // Large: n = 3·2^100; the top two bits' quarters are hit 1/3 each below n.
        let n = BigUint::from(3u32) << 100u32;
        let quarter = BigUint::one() << 100u32;
        let mut thirds = [0u32; 3];
        for _ in 0..30_000 {
            let u = uniform_below(&n, &mut rng);
            assert!(u < n);
            let q = (&u / &quarter).to_usize().expect("small");
            thirds[q] += 1;
        }
        for c in thirds {
            assert!((f64::from(c) - 10_000.0).abs() < 5.0 * (10_000.0f64 * 2.0 / 3.0).sqrt());
        }
        assert_eq!(uniform_below_u64(1, &mut rng), 0);
    }

    #[test]
    fn the_machine_integer_path_draws_the_same_words_as_the_big_integer_path() {
        // 2^64 up to 2^128 − 1, with lengths that are and are not multiples of 32 bits.
        for (i, e) in [65u32, 66, 95, 96, 97, 127, 128].into_iter().enumerate() {
            for n in [
                (1u128 << (e - 1)) + 1,
                (1u128 << (e - 1)) | 0x5555,
                u128::MAX >> (128 - e),
            ] {
                let fast = |rng: &mut NoiseSource| {
                    let u = uniform_below_u128(n, rng);
                    assert!(u < n);
                    BigUint::from(u)
                };
                let big = BigUint::from(n);
                assert_same_draws(70 + i as u64, 500, fast, |rng| {
                    uniform_below_words(&big, rng)
                });
            }
        }
    }
}
