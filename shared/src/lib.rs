//! # dpagg-shared — the core library of dpagg
//!
//! Everything an organisation needs to learn with others under differential privacy, without any
//! networking: schema-bound data loading ([`schema`], [`csvload`]), the paper's synthetic data
//! ([`synthetic`]), partitions ([`partition`]), L2-regularised logistic regression ([`logistic`],
//! [`solver`]), private learners as values that carry their guarantee ([`mechanism`]), mirror
//! averaging and the other aggregators ([`aggregate`]), and the in-process simulation of seed 001 §5
//! ([`simulation`]).
//!
//! The privacy invariants of the project are enforced here; `ARCHITECTURE.md` says where.
#![forbid(unsafe_code)]

pub mod accounting;
pub mod aggregate;
pub mod bundled;
pub mod csvload;
pub mod dataset;
pub mod fastmath;
pub mod fsutil;
pub mod logistic;
pub mod mechanism;
pub mod noise;
pub mod partition;
pub mod schema;
pub mod simulation;
pub mod solver;
pub mod stats;
pub mod synthetic;

pub use dataset::Dataset;
