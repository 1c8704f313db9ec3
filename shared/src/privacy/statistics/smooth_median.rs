//! The median of values in a public [lo, hi] with noise calibrated to its **smooth sensitivity**
//! (Kashima, lecture notes on Chapter 16 of Aggarwal & Yu 2008, *Privacy-Preserving Data
//! Mining*, slides 24–27, after Nissim, Raskhodnikova & Smith, "Smooth Sensitivity and Sampling
//! in Private Data Analysis", STOC 2007, which the notes cite).
//!
//! **Why not global sensitivity** (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 24): one
//! replaced value can move the median from lo to hi, so GS_med = hi − lo; the local sensitivity
//! LS_med(x) = max(x_{m+1} − x_m, x_m − x_{m−1}) (slide 25) can be 0 and cannot be used directly.
//!
//! **Smooth sensitivity** (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 26): S*(x) =
//! max_{x′} LS(x′)·e^{−β·dist_H(x, x′)}. For the median (slide 27; NRS 2007 §3, the median), with
//! the values sorted and clipped, x_1 ≤ … ≤ x_n, x_i = lo for i < 1 and x_i = hi for i > n, and m =
//! ⌈n/2⌉ (the lower median),
//!
//! ```text
//!   S*(x) = max_{k = 0..n} e^{−kβ} · max_{t = 0..k+1} (x_{m+t} − x_{m+t−k−1})
//! ```
//!
//! (k changes move the median anywhere in [x_{m−k}, x_{m+k}]; slide 27's argument).
//!
//! **Noise and guarantee — a correction to the notes.** Slide 26 states that Lap(S*/ε) with
//! β = ε is ε-DP. That is not what NRS 2007 proves, and it does not hold: when S* differs
//! between neighbours the ratio of two Laplace densities of different scales is unbounded in
//! the tails, so no pure ε follows. NRS 2007 §2 (calibrating noise to a β-smooth upper bound
//! with an (α, β)-admissible distribution; Laplace is (ε/2, ε/(2 ln(2/δ)))-admissible for
//! δ > 0) gives, with **β = ε/(2 ln(2/δ))** and noise **Lap(2·S*(x)/ε)**, an **(ε, δ)-DP**
//! release. (Pure ε-DP needs a heavy-tailed density such as 1/(1 + |z|^γ); not implemented.) That is what is implemented; the guarantee is stated
//! under **replace-one** (smooth sensitivity is defined over Hamming distance on datasets of a
//! fixed size n, slide 9's dist_H, Definition 16.4).
//!
//! **Exact discrete noise.** Laplace noise drawn in f64 leaks through its
//! low-order bits (Mironov, CCS 2012), and snapping does not apply (its Theorem 1 is for a fixed
//! scale; here the scale depends on the data). The release is therefore made on a public grid
//! ([`grid`]): the median in integer cells c = round((med − c₀)/g) of a power of two
//! g ≈ (hi − lo)·2^{−50}, plus the **discrete Laplace** Z ~ Lap_ℤ(t) (Canonne, Kamath & Steinke
//! 2020, Algorithm 2, sampled exactly: [`crate::privacy::discrete::DiscreteLaplace`]) with
//! t = ((S′/g + 2)/α)·(1 + 2^{−40}) cells, S′ = max(S*, (hi − lo)·2^{−30}) and α = ε/2; the
//! value released is c₀ + (c + Z)·g. In the values' units the scale is ≈ 2S′/ε, as before up to a
//! relative 2^{−19}. **Why (ε, δ) still holds:** S′ is a β-smooth upper bound on the local
//! sensitivity (a floor keeps smoothness); centring and rounding add at most 2 cells to the
//! shift, which the "+ 2" pays for, so neighbours' laws are discrete Laplaces whose centres are
//! at most α·t apart (in units of the first's scale t) with scales within a factor e^{β} (plus
//! 2^{−40} for f64 rounding) — NRS's two conditions, on ℤ. Those two discrete laws are within a
//! factor e^{±1/t_min} of the continuous Laplaces with the same centres and scales (after
//! spreading each integer uniformly over its cell, which changes no divergence), with
//! t_min = 2^{20}/α; so the hockey-stick divergence at ε is at most e^{a}·δ_c(ε − 2a) with
//! a = 1/t_min and δ_c the continuous certificate ([`exact_delta::discrete_delta`], proof there).
//! That is the δ the range check below certifies.
//!
//! **Range of validity.** The admissibility of Laplace holds for small ε only;
//! [`exact_delta`] computes the δ that can be certified at the requested ε — for the discrete
//! release, [`exact_delta::discrete_delta`], never below the continuous value — and a release
//! whose certified δ exceeds the stated one is refused ([`SmoothMedianError::OutsideProof`])
//! from public quantities, before any value is read (about ε ≤ 4.9 per median at δ = 10⁻⁶).
//! Sample-and-aggregate inherits the check per coordinate.
//!
//! **Assumptions and gaps:** n ≥ 1 is public (replace-one); values are clipped to [lo, hi]
//! (a NaN is refused); bounds with (hi − lo)·2^{−50} below 2^{−1000} or an infinite width, and
//! an ε so small that t could exceed 2^{100} cells, are refused from public quantities. S* is
//! computed in f64: its smoothness and upper-bound properties are those of the real S* up to a
//! relative error far below the 2^{−40} margins above (the tests check them with 10^{−12}
//! slack). The noise itself is exact; the last step, c₀ + (c + Z)·g in f64, is a deterministic
//! function of the integer c + Z.

pub mod exact_delta;
pub mod grid;

use crate::privacy::discrete::DiscreteLaplace;
use crate::privacy::guarantee::PrivacyGuarantee;
use crate::privacy::noise::NoiseSource;
use crate::util::num::{Num, Short};
use grid::MedianGrid;

/// Why a smooth-sensitivity median cannot be released.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SmoothMedianError {
    /// ε is not finite and positive.
    #[error("invalid epsilon {0}: must be finite and > 0")]
    InvalidEpsilon(f64),
    /// δ is not in (0, 1).
    #[error("invalid delta {0}: must be in (0, 1)")]
    InvalidDelta(f64),
    /// The bounds are not finite with lo < hi.
    #[error("bounds [{0}, {1}] must be finite with lo < hi")]
    InvalidBounds(f64, f64),
    /// The width hi − lo is outside what the release's grid supports.
    #[error(
        "bounds [{}, {}]: hi − lo must be finite with (hi − lo)·2^-50 ≥ 2^-1000 for the release's grid",
        Num(*.0), Num(*.1)
    )]
    UnsupportedBounds(f64, f64),
    /// ε is so small that the discrete noise could exceed 2^100 grid cells.
    #[error("epsilon {} is too small for exact discrete noise (over 2^100 grid cells)", Num(*.0))]
    EpsilonTooSmall(f64),
    /// No values.
    #[error("no values: the median of an empty dataset is undefined")]
    Empty,
    /// A value is NaN.
    #[error("value {0} is NaN")]
    NotANumber(usize),
    /// The Laplace bound does not give (ε, δ) at this ε: the real δ is larger.
    #[error(
        "ε = {} per median with δ = {} is outside the smooth-sensitivity proof: this release would only be (ε, {})-DP; use a smaller ε per median (or a larger δ)",
        Short(*epsilon), Short(*delta), Short(*actual)
    )]
    OutsideProof {
        /// ε per median.
        epsilon: f64,
        /// δ per median.
        delta: f64,
        /// The δ the release really has at that ε.
        actual: f64,
    },
}

/// Parameters of the release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothMedianParams {
    /// ε of the (ε, δ) guarantee.
    pub epsilon: f64,
    /// δ of the (ε, δ) guarantee.
    pub delta: f64,
    /// Public lower bound of the values.
    pub lo: f64,
    /// Public upper bound of the values.
    pub hi: f64,
}

impl SmoothMedianParams {
    fn validate(&self) -> Result<(), SmoothMedianError> {
        if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return Err(SmoothMedianError::InvalidEpsilon(self.epsilon));
        }
        if !(self.delta > 0.0 && self.delta < 1.0) {
            return Err(SmoothMedianError::InvalidDelta(self.delta));
        }
        if !(self.lo.is_finite() && self.hi.is_finite() && self.lo < self.hi) {
            return Err(SmoothMedianError::InvalidBounds(self.lo, self.hi));
        }
        let grid = MedianGrid::new(self)?;
        // NRS 2007's admissibility of Laplace holds for small ε only: the real δ of
        // the discrete release is computed and must not exceed the stated one (1e-9 relative
        // slack for rounding).
        let actual = exact_delta::discrete_delta(self.epsilon, self.beta(), grid.min_scale_cells());
        if actual > self.delta * (1.0 + 1e-9) {
            return Err(SmoothMedianError::OutsideProof {
                epsilon: self.epsilon,
                delta: self.delta,
                actual,
            });
        }
        Ok(())
    }

    /// Checks the parameters — including that (ε, δ) is within the proof — from public
    /// quantities only, before any value is read.
    pub fn check(&self) -> Result<(), SmoothMedianError> {
        self.validate()
    }

    /// The public grid of the release (module docs), for valid parameters.
    pub fn grid(&self) -> Result<MedianGrid, SmoothMedianError> {
        self.validate()?;
        MedianGrid::new(self)
    }

    /// β = ε/(2 ln(2/δ)) (NRS 2007 §2, Laplace's admissibility; Kashima's notes on Aggarwal & Yu
    /// 2008, ch. 16, slide 26's smoothing).
    pub fn beta(&self) -> f64 {
        self.epsilon / (2.0 * (2.0 / self.delta).ln())
    }
}

/// The values clipped to [lo, hi] and sorted; NaN refused.
pub fn clipped_sorted(values: &[f64], lo: f64, hi: f64) -> Result<Vec<f64>, SmoothMedianError> {
    let mut x = Vec::with_capacity(values.len());
    for (i, &v) in values.iter().enumerate() {
        if v.is_nan() {
            return Err(SmoothMedianError::NotANumber(i));
        }
        x.push(v.clamp(lo, hi));
    }
    x.sort_by(f64::total_cmp);
    Ok(x)
}

/// The lower median x_{⌈n/2⌉} of sorted values (`None` when empty).
pub fn median(sorted: &[f64]) -> Option<f64> {
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
}

/// S*(x) of the lower median for sorted values in [lo, hi] and smoothing β (module docs; seed
/// 002 slide 27, NRS 2007 §3). O(n²) at worst; stops once e^{−kβ}(hi − lo) cannot
/// exceed the maximum so far.
pub fn smooth_sensitivity(sorted: &[f64], lo: f64, hi: f64, beta: f64) -> f64 {
    let n = sorted.len() as i64;
    let m = (n + 1) / 2; // 1-indexed lower median
    let at = |i: i64| -> f64 {
        if i < 1 {
            lo
        } else if i > n {
            hi
        } else {
            sorted[(i - 1) as usize]
        }
    };
    let mut best = 0.0f64;
    for k in 0..=n {
        let decay = (-(k as f64) * beta).exp();
        if decay * (hi - lo) <= best {
            break;
        }
        let widest = (0..=k + 1)
            .map(|t| at(m + t) - at(m + t - k - 1))
            .fold(0.0f64, f64::max);
        best = best.max(decay * widest);
    }
    best
}

/// A released median with its guarantee.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothMedian {
    /// The noisy median c₀ + (c + Z)·g (module docs), not clamped (see
    /// [`SmoothMedian::clamped`]).
    pub value: f64,
    /// The guarantee: (ε, δ)-DP under replace-one.
    pub guarantee: PrivacyGuarantee,
}

impl SmoothMedian {
    /// The value clamped to [lo, hi] (post-processing).
    pub fn clamped(&self, params: &SmoothMedianParams) -> f64 {
        self.value.clamp(params.lo, params.hi)
    }
}

/// What a release of `values` perturbs: the grid, the median in cells c and the discrete
/// Laplace scale t in cells (module docs).
struct Planned {
    grid: MedianGrid,
    cells: i128,
    scale_cells: f64,
}

fn plan(values: &[f64], params: &SmoothMedianParams) -> Result<Planned, SmoothMedianError> {
    let grid = params.grid()?;
    let x = clipped_sorted(values, params.lo, params.hi)?;
    let med = median(&x).ok_or(SmoothMedianError::Empty)?;
    let smooth = smooth_sensitivity(&x, params.lo, params.hi, params.beta());
    Ok(Planned {
        grid,
        cells: grid.cells(med),
        scale_cells: grid.scale_cells(smooth),
    })
}

/// The discrete Laplace scale of the release for `values` in the values' units, g·t ≈
/// 2·max(S*(x), (hi − lo)·2^{−30})/ε (Kashima's notes on Aggarwal & Yu 2008, ch. 16, slide 26; NRS
/// 2007 §2 with Laplace's α = ε/2; module docs).
pub fn noise_scale(values: &[f64], params: &SmoothMedianParams) -> Result<f64, SmoothMedianError> {
    let p = plan(values, params)?;
    Ok(p.scale_cells * p.grid.grid())
}

/// Releases the median of `values` clipped to [lo, hi] on the public grid with exact discrete
/// Laplace noise of scale ≈ 2·S*(x)/ε, β = ε/(2 ln(2/δ)); (ε, δ)-DP under replace-one (module
/// docs).
pub fn release(
    values: &[f64],
    params: &SmoothMedianParams,
    rng: &mut NoiseSource,
) -> Result<SmoothMedian, SmoothMedianError> {
    release_scaled(values, params, 1.0, rng)
}

/// [`release`] with the noise scale multiplied by `factor` (1 on the release path; the tests'
/// under-noised mutants use less).
fn release_scaled(
    values: &[f64],
    params: &SmoothMedianParams,
    factor: f64,
    rng: &mut NoiseSource,
) -> Result<SmoothMedian, SmoothMedianError> {
    let p = plan(values, params)?;
    // t ∈ [2^20/α, 2^100] is a finite double > 0: the law always exists.
    let law = DiscreteLaplace::from_f64(p.scale_cells * factor)
        .map_err(|_| SmoothMedianError::EpsilonTooSmall(params.epsilon))?;
    let n = p.cells.saturating_add(law.sample(rng));
    Ok(SmoothMedian {
        value: p.grid.value(n),
        guarantee: PrivacyGuarantee::replace_one(params.epsilon, params.delta),
    })
}

/// Statistical checks of the median's discrete noise, shared with sample-and-aggregate's tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::privacy::discrete::testing::{chi_square_by_cdf, discrete_laplace_cdf, edges_for};

    /// The p-value of the χ² test of released `outputs` for `values` against the stated law
    /// c₀ + (c + Lap_ℤ(t))·g (cells of t/4 over ±8t, tails merged). The outputs must be exact
    /// (c₀ + n·g exactly representable: bounds near 0, small noise).
    pub(crate) fn median_chi_square(
        values: &[f64],
        params: &SmoothMedianParams,
        outputs: &[f64],
    ) -> f64 {
        let p = plan(values, params).expect("valid");
        let g = p.grid;
        let noise: Vec<i128> = outputs
            .iter()
            .map(|&y| ((y - g.centre()) / g.grid()).round() as i128 - p.cells)
            .collect();
        let cdf = discrete_laplace_cdf(p.scale_cells);
        let step = (p.scale_cells / 4.0) as i128;
        let edges = edges_for(&cdf, outputs.len(), -32 * step, step);
        chi_square_by_cdf(&noise, &edges, &cdf)
    }

    /// `count` releases with the noise scale multiplied by `factor` (1: the release itself).
    pub(crate) fn releases(
        values: &[f64],
        params: &SmoothMedianParams,
        factor: f64,
        count: usize,
        rng: &mut NoiseSource,
    ) -> Vec<f64> {
        (0..count)
            .map(|_| {
                release_scaled(values, params, factor, rng)
                    .expect("release")
                    .value
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    fn params() -> SmoothMedianParams {
        SmoothMedianParams {
            epsilon: 1.0,
            delta: 1e-6,
            lo: 0.0,
            hi: 10.0,
        }
    }

    fn random_values(rng: &mut NoiseSource) -> Vec<f64> {
        let n = 1 + (rng.random::<u64>() % 30) as usize;
        // Some mass outside [0, 10] (clipped) and some ties.
        (0..n)
            .map(|_| {
                if rng.random::<f64>() < 0.2 {
                    5.0
                } else {
                    -2.0 + 14.0 * rng.random::<f64>()
                }
            })
            .collect()
    }

    #[test]
    fn beta_is_epsilon_over_two_log_two_over_delta() {
        let p = params();
        assert!((p.beta() - 1.0 / (2.0 * (2e6f64).ln())).abs() < 1e-15);
    }

    #[test]
    fn smooth_sensitivity_of_a_small_example() {
        // x = (1, 2, 3), m = 2, lo = 0, hi = 10, β = ln 2 (e^{−β} = 1/2):
        // k = 0: max(x3 − x2, x2 − x1) = 1; k = 1: max(x4 − x2, x3 − x1, x2 − x0)·1/2 = 4;
        // k = 2: max(x5 − x2 = 8, …)·1/4 = 2.5; k = 3: (hi − lo)/8 = 1.25. S* = 4.
        let s = smooth_sensitivity(&[1.0, 2.0, 3.0], 0.0, 10.0, 2f64.ln());
        assert!((s - 4.0).abs() < 1e-12, "{s}");
    }

    #[test]
    fn replacing_one_value_moves_the_median_by_at_most_the_smooth_sensitivity() {
        let p = params();
        let mut rng = NoiseSource::seeded(21);
        for _ in 0..2000 {
            let values = random_values(&mut rng);
            let x = clipped_sorted(&values, p.lo, p.hi).expect("values");
            let med = median(&x).expect("non-empty");
            let s = smooth_sensitivity(&x, p.lo, p.hi, p.beta());
            let i = (rng.random::<u64>() % values.len() as u64) as usize;
            // Worst cases (lo, hi) and a random replacement.
            for v in [p.lo, p.hi, -2.0 + 14.0 * rng.random::<f64>()] {
                let mut y = values.clone();
                y[i] = v;
                let y = clipped_sorted(&y, p.lo, p.hi).expect("values");
                let med2 = median(&y).expect("non-empty");
                // LS(x) ≤ S*(x): the median moves by at most S*.
                assert!((med - med2).abs() <= s + 1e-12, "{med} → {med2}, S* = {s}");
                // β-smoothness: S*(x′) ≤ e^β S*(x) (NRS 2007 §2's β-smooth upper bound).
                let s2 = smooth_sensitivity(&y, p.lo, p.hi, p.beta());
                assert!(s2 <= p.beta().exp() * s * (1.0 + 1e-12), "{s} → {s2}");
            }
        }
    }

    #[test]
    fn noise_is_discrete_laplace_at_twice_the_smooth_sensitivity_over_epsilon() {
        let p = params();
        let values = [1.0, 2.0, 2.5, 7.0, 9.0, 3.0, 4.5];
        let scale = noise_scale(&values, &p).expect("scale");
        let x = clipped_sorted(&values, p.lo, p.hi).expect("values");
        let med = median(&x).expect("median");
        assert_eq!(med, 3.0);
        // ≈ 2S*/ε, the "+ 2 cells" and the margin adding a relative 2^-19 at most.
        let s = smooth_sensitivity(&x, p.lo, p.hi, p.beta());
        assert!(scale >= 2.0 * s / p.epsilon);
        assert!(scale <= 2.0 * s / p.epsilon * (1.0 + 2f64.powi(-19)));
        let mut rng = NoiseSource::seeded(22);
        let outputs = testing::releases(&values, &p, 1.0, 20_000, &mut rng);
        let grid = p.grid().expect("grid");
        assert!(outputs.iter().all(|&y| {
            let cells = (y - grid.centre()) / grid.grid();
            cells == cells.round()
        }));
        let pv = testing::median_chi_square(&values, &p, &outputs);
        assert!(pv > 1e-3, "p = {pv}");
        // The half-noise mutant fails the same test.
        let half = testing::releases(&values, &p, 0.5, 20_000, &mut rng);
        let pv = testing::median_chi_square(&values, &p, &half);
        assert!(pv < 1e-6, "mutant p = {pv}");
    }

    #[test]
    fn the_discrete_range_check_refuses_whatever_the_continuous_one_refused() {
        let mut refused_both = 0;
        for i in 0..60 {
            let p = SmoothMedianParams {
                epsilon: 3.5 + 0.05 * f64::from(i),
                ..params()
            };
            let continuous = exact_delta::exact_delta(p.epsilon, p.beta());
            if continuous > p.delta * (1.0 + 1e-9) {
                assert!(
                    matches!(p.check(), Err(SmoothMedianError::OutsideProof { .. })),
                    "ε = {}",
                    p.epsilon
                );
                refused_both += 1;
            }
        }
        assert!(refused_both > 10, "the sweep crosses the boundary");
    }

    #[test]
    fn tiny_smooth_sensitivity_is_floored() {
        // All values equal: S* = e^{−nβ}(hi − lo) is far below the floor (hi − lo)·2^{-30}.
        let p = params();
        let values = vec![4.0; 2000];
        let x = clipped_sorted(&values, p.lo, p.hi).expect("values");
        assert!(smooth_sensitivity(&x, p.lo, p.hi, p.beta()) < 10.0 * 2f64.powi(-30));
        let scale = noise_scale(&values, &p).expect("scale");
        assert!((scale / (2.0 * 10.0 * 2f64.powi(-30) / p.epsilon) - 1.0).abs() < 1e-5);
    }

    #[test]
    fn the_guarantee_is_epsilon_delta_under_replace_one() {
        let p = params();
        let r = release(&[1.0, 2.0], &p, &mut NoiseSource::seeded(23)).expect("release");
        assert_eq!(r.guarantee, PrivacyGuarantee::replace_one(1.0, 1e-6));
        assert!((0.0..=10.0).contains(&r.clamped(&p)));
    }

    #[test]
    fn invalid_inputs_are_typed_errors() {
        let mut rng = NoiseSource::seeded(24);
        let p = params();
        assert_eq!(release(&[], &p, &mut rng), Err(SmoothMedianError::Empty));
        assert_eq!(
            release(&[1.0, f64::NAN], &p, &mut rng),
            Err(SmoothMedianError::NotANumber(1))
        );
        let bad_delta = SmoothMedianParams { delta: 0.0, ..p };
        assert!(matches!(
            release(&[1.0], &bad_delta, &mut rng),
            Err(SmoothMedianError::InvalidDelta(_))
        ));
        let bad_eps = SmoothMedianParams { epsilon: -1.0, ..p };
        assert!(matches!(
            release(&[1.0], &bad_eps, &mut rng),
            Err(SmoothMedianError::InvalidEpsilon(_))
        ));
        let bad_bounds = SmoothMedianParams {
            lo: 3.0,
            hi: 3.0,
            ..p
        };
        assert!(matches!(
            release(&[1.0], &bad_bounds, &mut rng),
            Err(SmoothMedianError::InvalidBounds(..))
        ));
    }
}
