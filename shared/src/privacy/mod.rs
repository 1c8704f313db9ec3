//! The privacy layer: guarantees, noise, mechanisms and accounting.
//!
//! - [`guarantee`]: [`guarantee::PrivacyGuarantee`] (ε, δ, neighbour relation) and the
//!   [`guarantee::Assumptions`] proofs rest on, with the logistic loss's bounds declared once.
//! - [`release`]: what leaves a node — a classifier with its [`release::ReleaseMetadata`], and the
//!   [`release::PublishedLearner`] a node records and serves.
//! - [`noise`]: [`noise::NoiseSource`], the only source of privacy noise (a CSPRNG on release
//!   paths, seeded only in tests and simulations; invariant 4).
//! - [`snapping`]: Mironov's snapping mechanism — Laplace noise in f64 that does not leak through
//!   its least significant bits (what output perturbation releases).
//! - [`discrete`]: exact discrete Laplace and Gaussian samplers (Canonne, Kamath & Steinke
//!   2020) and the Gaussian mechanism on a public power-of-two grid: noise with no
//!   floating-point leak (the Gaussian data releases and the propose-test-release step).
//! - [`mechanism`]: private learners as values that carry their guarantee, one file each, and
//!   [`mechanism::MechanismKind`], the names users give them.
//! - [`accounting`]: RDP curves and the composition of a node's charges (its ledger rule).
//! - [`statistics`]: private counts, sums and means of a node's rows by the Laplace mechanism
//!   with global sensitivity (Kashima's notes on Aggarwal & Yu 2008, ch. 16,
//!   [`statistics::class_sums`]).
//! - [`synthetic`]: private synthetic data — the Rényi DP of rows sampled from the normal fitted
//!   to the data (Miura et al. 2022, [`synthetic::mvn_rdp`]).
//! - [`private_normalisation`]: ball-map centres and scales pooled from the organisations'
//!   private moments ([`statistics::moments`]) instead of declared constants (and what that
//!   costs in ε).
//! - [`registry`]: what the registries of mechanisms and data kinds share — typed options
//!   and the generated tables of `docs/mechanisms.md`.
//! - [`data_release`]: the data releases a node makes besides learners (statistics, synthetic
//!   data) as one spec type, calibrated from public quantities before any record is read.

pub mod accounting;
mod chacha;
pub mod data_release;
pub mod discrete;
pub mod guarantee;
pub mod mechanism;
pub mod noise;
pub mod private_normalisation;
pub mod registry;
pub mod release;
pub mod snapping;
pub mod statistics;
pub mod synthetic;
