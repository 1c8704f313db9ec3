//! Small utilities shared by every layer.
//!
//! - [`num`]: [`num::Num`], numbers in errors and the ledger without 300-digit decimals.
//! - [`stats`]: mean ± sd and the Kolmogorov–Smirnov test of the noise tests.
//! - [`fastmath`]: branch-free `exp`/`log1p` on the ranges the logistic loss needs, and the
//!   stable σ and softplus built on them.
//! - [`files`]: [`files::atomic_write`], output that is never half-written (invariant 5).
//! - [`private`]: [`private::check_state_dir`], state and keys only this process's user can change.
//! - [`seed`]: [`seed::derive_seed`] and [`seed::derived_rng`], seeded streams for simulations,
//!   generators and splits (never privacy noise).
//! - [`simd`]: runtime dispatch of the pass loops to AVX-512 or AVX2 + FMA, bit-identical, no
//!   `unsafe` (the loops of every layer: passes, the row map, mirror averaging, Langevin).
//! - [`stop`]: [`stop::Stop`], cancellation and deadlines for long work.
//! - [`text`]: [`text::clean`], text from peers capped and made safe for logs and reports.
//! - [`time`]: timestamps of releases and reports.

pub mod fastmath;
pub mod files;
pub mod num;
pub mod private;
pub mod seed;
pub mod simd;
pub mod stats;
pub mod stop;
pub mod text;
pub mod time;
