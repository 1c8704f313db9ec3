//! **Exact discrete noise**: Laplace and Gaussian noise on the integers, sampled with exact
//! integer and rational arithmetic only (Canonne, Kamath & Steinke, "The Discrete Gaussian for
//! Differential Privacy", NeurIPS 2020, Algorithms 1–3), and releases of real values on a public
//! power-of-two grid built on them.
//!
//! **The attack it stops.** Noise drawn and added in f64 (`x + σ·N(0, 1)`, `x + λ·ln U`) is not
//! the distribution the proofs analyse: which doubles a release can produce depends on x, and
//! Mironov (CCS 2012, §4) recovers x from the low-order bits. [`crate::privacy::snapping`]
//! repairs Laplace noise in f64 at a price in ε and under an assumption on libm's `ln`; the
//! samplers here need neither: every random choice is a comparison of a uniform integer with an
//! exact rational, so the sampled law *is* the law in the theorem, and a release computed from
//! an integer sample by exact operations (a multiple of a power of two) has no floating-point
//! leak at all.
//!
//! - [`rational`]: [`Ratio`], exact non-negative rationals (a double converts to its exact
//!   dyadic value: a mechanism built from an f64 parameter is the mechanism for that exact
//!   value), and uniform integers by rejection from the [`crate::privacy::noise::NoiseSource`]
//!   (ChaCha20) — the only randomness used.
//! - [`bernoulli`]: Bernoulli(exp(−γ)) for rational γ ≥ 0 (Algorithm 1).
//! - [`laplace`]: [`DiscreteLaplace`], P(z) ∝ e^{−|z|/t} for rational t > 0 (Algorithm 2);
//!   (Δ/t)-DP for an integer query of sensitivity Δ.
//! - [`gaussian`]: [`DiscreteGaussian`], P(z) ∝ e^{−z²/(2σ²)} for rational σ² > 0 (Algorithm 3);
//!   its Rényi divergence under integer shifts is at most the continuous Gaussian's, also for
//!   vectors with independent coordinates.
//! - [`grid`]: [`GridGaussian`], a real vector query rounded to a public power-of-two grid with
//!   discrete Gaussian noise inflated to pay for the rounding, so that the continuous Gaussian
//!   mechanism's RDP curve — what the ledger composes — holds unchanged.
//! - [`lattice`]: [`LatticeSum`], sums of clipped vectors each rounded to a public grid, summed
//!   in integers, with discrete Gaussian noise: DP-SGD's noisy batch sum. [`BernoulliF64`]
//!   (in [`rational`]) draws its Poisson batches with the exact inclusion probability.
//!
//! **Machine integers where they suffice.** The algorithms are stated over big integers; where
//! every number a step forms is below 2^128 (the grid's discrete Gaussians, whose γ has a
//! denominator near 2^106, and every scale of a few dozen bits), the same steps run in `u128`.
//! A uniform integer below n draws the same words from the [`crate::privacy::noise::NoiseSource`]
//! whichever representation n has ([`rational::uniform_below`]), so each path gives the same
//! sample from the same state — the law is the big-integer path's, unchanged; the tests of
//! [`bernoulli`], [`laplace`], [`gaussian`] and [`rational`] compare the two draw for draw.
//!
//! **Assumptions.** The [`crate::privacy::noise::NoiseSource`] is a CSPRNG on release paths
//! (invariant 4); nothing else. Running time is random (geometric numbers of rounds) and depends
//! on the noise parameters — for the smooth median, on its data-dependent scale — and on the
//! noise drawn: timing side channels are out of scope, as for every mechanism here.
//!
//! The neighbour relation is the caller's: every mechanism in dpagg that uses these samplers is
//! stated under replace-one, with the sensitivities its own module derives.

pub mod bernoulli;
pub mod gaussian;
pub mod grid;
pub mod laplace;
pub mod lattice;
pub mod rational;
#[cfg(test)]
pub(crate) mod testing;

pub use bernoulli::bernoulli_exp;
pub use gaussian::DiscreteGaussian;
pub use grid::GridGaussian;
pub use laplace::DiscreteLaplace;
pub use lattice::LatticeSum;
pub use rational::{BernoulliF64, Ratio};

use crate::util::num::Num;

/// Why a discrete sampler or a grid release cannot be built or applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DiscreteError {
    /// A parameter is not in its domain.
    #[error("invalid {name} = {}: {needs}", Num(*.value))]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        needs: &'static str,
    },
    /// A derived quantity exceeds what the exact integer arithmetic supports.
    #[error("{what} = {} exceeds {}: the parameters are outside what exact discrete noise supports", Num(*.value), Num(*.limit))]
    OutOfRange {
        /// What.
        what: &'static str,
        /// Its value.
        value: f64,
        /// The limit.
        limit: f64,
    },
    /// The value to release is NaN.
    #[error("the value to release is NaN")]
    NotANumber,
}
