//! Private descriptive statistics of a node's rows (issue 14 item 2, "Statistics", seed 002:
//! Kashima's lecture notes on Chapter 16 "Private Data Analysis via Output Perturbation" of
//! Aggarwal & Yu (Eds.), *Privacy-Preserving Data Mining*).
//!
//! - [`laplace_stats`]: per-class and per-feature counts, sums and means of the rows clipped to
//!   the public schema's bounds, by the Laplace mechanism with global sensitivity (seed 002,
//!   slides 15–19: Lap(GS_f/ε), the sensitivities of sums, means and histograms, and the basic
//!   composition of Lemma 16.7), each Laplace draw snapped ([`crate::privacy::snapping`]).
//!
//! - [`smooth_median`]: the median of values in a public [lo, hi] with Laplace noise calibrated
//!   to its smooth sensitivity (seed 002 slides 24–27; NRS 2007), (ε, δ)-DP.
//!
//! - [`sample_aggregate`]: sample-and-aggregate of the logistic-regression fit (seed 002, last
//!   slides; NRS 2007 §4): fits on k random disjoint blocks, clipped to [−B, B], aggregated per
//!   coordinate by the smooth-sensitivity median with (ε/D, δ/D), (ε, δ)-DP under replace-one.

pub mod laplace_stats;
pub mod sample_aggregate;
pub mod smooth_median;
