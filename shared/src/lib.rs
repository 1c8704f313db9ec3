//! # dpagg-shared — the core library of dpagg
//!
//! Everything an organisation needs to learn with others under differential privacy, without any
//! networking (except the TLS of the `identity` feature), grouped by layer:
//!
//! - [`data`]: schema-bound data loading, the bundled and synthetic datasets, partitions.
//! - [`learn`]: L2-regularised logistic regression (loss, solver).
//! - [`privacy`]: guarantees, noise, private learners ([`privacy::mechanism`]) and accounting.
//! - [`aggregate`]: mirror averaging (Minami et al. 2015, eq. 15–17) and the comparators.
//! - [`simulation`]: the in-process simulation of Minami et al. 2015, §5.
//! - [`util`]: what every layer uses — seeded streams, the SIMD dispatch and fast math of the
//!   pass loops, statistics for tests and summaries, atomic file output.
//! - `cli` (cargo feature `cli`): the plumbing of the command-line tools — logging, settings
//!   resolved with the origin of every value, one-line errors and a stdout that may close.
//! - `identity` (cargo feature `identity`): organisations' identities — mutual TLS
//!   configurations and connector, identity folders, organisation ids in certificates,
//!   handshake failures in words, and the development CA (`certs`). Both binaries use it, so
//!   neither depends on the other. With this feature the crate does networking (TLS); without
//!   it, none.
//!
//! The names most users need are re-exported here; deeper paths stay available. The privacy
//! invariants of the project are enforced in this crate; `ARCHITECTURE.md` says where.
#![forbid(unsafe_code)]

pub mod aggregate;
#[cfg(feature = "cli")]
pub mod cli;
pub mod data;
#[cfg(feature = "identity")]
pub mod identity;
pub mod learn;
pub mod privacy;
pub mod simulation;
pub mod util;

pub use aggregate::MirrorAveraging;
pub use data::Dataset;
pub use data::bundled::Bundled;
pub use data::csv::load_csv;
pub use data::schema::Schema;
pub use learn::classifier::LinearClassifier;
pub use learn::solver::fit_logistic;
pub use privacy::accounting::RdpCurve;
pub use privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
pub use privacy::mechanism::{LearnerSpec, Mechanism, MechanismError, MechanismKind};
pub use privacy::noise::NoiseSource;
pub use privacy::release::{PublishedLearner, Release, ReleaseMetadata};
pub use simulation::SimulationConfig;
