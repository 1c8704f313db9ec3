//! The data layer: where rows come from and how they reach the unit ball.
//!
//! - [`dataset`]: [`Dataset`], an in-memory normalised labelled dataset (row-major, labels ±1).
//! - [`buffer`]: [`buffer::FeatureBuffer`], a dataset's zero-initialised feature storage (huge
//!   pages for a million rows, the same values either way).
//! - [`schema`]: the public schema (declared feature bounds, label spelling, intercept, the map
//!   into the unit ball with its public centres and scales; invariant 2: declared, never measured).
//! - [`normalise`]: the two per-record maps, `paper` (Minami et al. 2015) and `ball` (the default).
//! - [`csv`]: reading a CSV file against a schema; every error names file, line and column.
//! - [`bundled`]: the two public datasets compiled into the binaries, and the paper's splits.
//! - [`synthetic`]: Minami et al. 2015, §5.1 synthetic data.
//! - [`clinic`]: the clinic scenario (a small aggregator, large hospitals, d = 20).
//! - [`ehr`]: EHR-like wide tables (zero-heavy counts, flags, skewed laboratory values) with
//!   a bounds-only schema, for the lab's wide scenarios.
//! - [`partition`]: partitions over organisations and stratified test splits.
//! - [`agreed_map`]: centres, scales and an optional subspace the organisations agree on from
//!   summaries (the aggregator's rows or the nodes' private moments) before any learner.
//!
//! A new dataset goes into [`bundled`] (a CSV and a hand-written schema in `data/`) or is read
//! from a file with [`csv::load_csv`]; nothing else needs to know about it.

pub mod agreed_map;
pub mod buffer;
pub mod bundled;
pub mod clinic;
pub mod csv;
pub mod dataset;
pub mod diagnose;
pub mod dictionary;
pub mod ehr;
pub mod normalise;
pub mod partition;
pub mod schema;
pub mod schema_init;
pub mod synthetic;

pub use dataset::Dataset;
