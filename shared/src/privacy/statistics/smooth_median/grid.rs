//! The public grid of the smooth-median release and its discrete Laplace scale (noise
//! without floating-point leaks). The argument that the release keeps its (ε, δ) is in
//! the parent module's documentation and in [`super::exact_delta::discrete_delta`].
//!
//! For values in [lo, hi] (w = hi − lo), all public:
//! - the centre c₀ = lo/2 + hi/2 (clamped to [lo, hi]) and the grid g = the largest power of two
//!   ≤ w·2^{−50} (so g ∈ (w·2^{−51}, w·2^{−50}]);
//! - the floor F = w·2^{−30} of the smooth sensitivity: S′ = max(S*, F) is still a β-smooth upper
//!   bound on the local sensitivity (a maximum of β-smooth bounds is one), and F/g ≥ 2^{20};
//! - a value v is released in cells c = round(fl(v − c₀)/g): fl(v − c₀) errs by at most
//!   2^{−53}·w < g/2 (|v − c₀| ≤ w), and rounding by ½, so neighbours' cells differ by at most
//!   |v − v′|/g + 2;
//! - the noise Z ~ Lap_ℤ(t) with t = ((S′/g + 2)/α)·(1 + 2^{−40}), α = ε/2, so that
//!   |c − c′| ≤ α·t, and t′/t ∈ [e^{−β−2^{−40}}, e^{β+2^{−40}}] (the 2^{−40} covers the f64
//!   rounding of S* and t); t ≥ t_min = 2^{20}/α;
//! - the released value c₀ + (c + Z)·g is a deterministic function of the integer c + Z
//!   (post-processing: its own rounding reveals nothing more).

use super::SmoothMedianError;
use super::SmoothMedianParams;
use crate::privacy::discrete::grid::power_of_two_at_most;

/// g ≤ w·2^{−GRID_BITS}.
const GRID_BITS: i32 = 50;

/// F = w·2^{−FLOOR_BITS}.
const FLOOR_BITS: i32 = 30;

/// t_min·α = F/g ≥ 2^{FLOOR_GAP}.
const FLOOR_GAP: i32 = GRID_BITS - FLOOR_BITS;

/// The relative margin on t.
const MARGIN: f64 = 1.0 + 1.0 / (1u64 << 40) as f64;

/// The largest scale t allowed (in cells): magnitudes stay far inside `i128`.
pub const MAX_SCALE_CELLS: f64 = 1_267_650_600_228_229_401_496_703_205_376.0; // 2^100

/// The public grid of one median release (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MedianGrid {
    centre: f64,
    grid: f64,
    floor: f64,
    alpha: f64,
}

impl MedianGrid {
    /// The grid of valid `params` (bounds finite with lo < hi, ε > 0); refused when w is outside
    /// what the grid supports (w·2^{−50} not a normal double above 2^{−1000}, or w infinite) or
    /// when t could exceed 2^{100} cells (ε below about 2^{−47}).
    pub fn new(params: &SmoothMedianParams) -> Result<Self, SmoothMedianError> {
        let (lo, hi) = (params.lo, params.hi);
        let width = hi - lo;
        let grid = power_of_two_at_most(width * 2f64.powi(-GRID_BITS))
            .filter(|g| *g >= 2f64.powi(-1000) && width.is_finite())
            .ok_or(SmoothMedianError::UnsupportedBounds(lo, hi))?;
        let alpha = params.epsilon / 2.0;
        let m = Self {
            centre: (lo / 2.0 + hi / 2.0).clamp(lo, hi),
            grid,
            floor: width * 2f64.powi(-FLOOR_BITS),
            alpha,
        };
        // S* ≤ w, so t ≤ (w/g + 2)/α·(1 + 2^{-40}).
        let largest = m.scale_cells(width);
        if largest.is_nan() || largest > MAX_SCALE_CELLS {
            return Err(SmoothMedianError::EpsilonTooSmall(params.epsilon));
        }
        Ok(m)
    }

    /// g.
    pub fn grid(&self) -> f64 {
        self.grid
    }

    /// c₀.
    pub fn centre(&self) -> f64 {
        self.centre
    }

    /// t_min = 2^{20}/α, a lower bound on every t (public).
    pub fn min_scale_cells(&self) -> f64 {
        2f64.powi(FLOOR_GAP) / self.alpha
    }

    /// t = ((max(S*, F)/g + 2)/α)·(1 + 2^{−40}) for the smooth sensitivity `smooth` = S*.
    pub fn scale_cells(&self, smooth: f64) -> f64 {
        ((smooth.max(self.floor) / self.grid + 2.0) / self.alpha) * MARGIN
    }

    /// c = round(fl(v − c₀)/g) for a value v in [lo, hi]: |c| ≤ 2^{51}.
    pub fn cells(&self, v: f64) -> i128 {
        ((v - self.centre) / self.grid).round() as i128
    }

    /// c₀ + n·g, the released value of the integer n.
    pub fn value(&self, n: i128) -> f64 {
        self.centre + n as f64 * self.grid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(lo: f64, hi: f64, epsilon: f64) -> SmoothMedianParams {
        SmoothMedianParams {
            epsilon,
            delta: 1e-6,
            lo,
            hi,
        }
    }

    #[test]
    fn the_grid_the_floor_and_the_scale_follow_the_module_docs() {
        let m = MedianGrid::new(&params(0.0, 10.0, 1.0)).expect("valid");
        assert_eq!(m.grid(), 2f64.powi(-47), "8.9e-15 → 2^-47 = 7.1e-15");
        assert_eq!(m.centre(), 5.0);
        assert!(m.min_scale_cells() * m.grid() * 0.5 <= 10.0 * 2f64.powi(-30));
        // A smooth sensitivity above the floor: t·g ≈ 2S*/ε.
        let t = m.scale_cells(0.25);
        assert!((t * m.grid() / 0.5 - 1.0).abs() < 1e-12, "{t}");
        // Below the floor the floor counts.
        assert_eq!(m.scale_cells(0.0), m.scale_cells(10.0 * 2f64.powi(-30)));
        assert!(m.scale_cells(0.0) >= m.min_scale_cells());
        assert_eq!(m.cells(5.0), 0);
        assert_eq!(m.value(m.cells(7.5)), 7.5);
    }

    #[test]
    fn centring_and_rounding_move_neighbours_by_at_most_two_cells_more() {
        // Bounds far from 0: fl(v − c₀) rounds, yet |c − c′| ≤ |v − v′|/g + 2.
        let m = MedianGrid::new(&params(1000.0, 1001.0, 1.0)).expect("valid");
        let (mut v, step) = (1000.0f64, 0.000_123_456_789);
        while v < 1001.0 {
            let w = (v + 3.3 * step).min(1001.0);
            let moved = (m.cells(w) - m.cells(v)).abs() as f64;
            assert!(moved <= (w - v) / m.grid() + 2.0, "{v} {w}");
            v += step;
        }
    }

    #[test]
    fn absurd_bounds_and_epsilon_are_refused() {
        assert!(MedianGrid::new(&params(-1e308, 1e308, 1.0)).is_err());
        assert!(MedianGrid::new(&params(0.0, 1e-290, 1.0)).is_err());
        assert!(MedianGrid::new(&params(0.0, 1.0, 1e-20)).is_err());
        assert!(MedianGrid::new(&params(0.0, 1.0, 1e-12)).is_ok());
    }
}
