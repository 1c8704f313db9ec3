//! Small utilities shared by every layer.
//!
//! - [`stats`]: mean ± sd and the Kolmogorov–Smirnov test of the noise tests.
//! - [`files`]: [`files::atomic_write`], output that is never half-written (invariant 5).
//! - [`stop`]: [`stop::Stop`], cancellation and deadlines for long work.
//! - [`time`]: timestamps of releases and reports.

pub mod files;
pub mod stats;
pub mod stop;
pub mod time;
