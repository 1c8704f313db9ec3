//! Private synthetic data: releases of rows drawn from a model fitted to the data, and the
//! analyses of what those rows reveal.
//!
//! - [`mvn_rdp`]: Miura et al. 2022 — rows drawn from the normal distribution with the
//!   data's empirical mean and covariance and **no added noise**; the Rényi-DP guarantee of that
//!   sampling (Theorem 3.1 with n private, Theorem 3.2 with n public), its composition over the
//!   released rows (Proposition 2.4), its conversion to (ε, δ) (Proposition 2.5), its RDP curve for
//!   the ledger, and the paper's Tables 1 and 2.
//!
//! - [`mvn_release`]: the releases a node makes: rows of the schema mapped to the unit
//!   cube with their label; [`mvn_release::MvnPlain`], Miura et al.'s (2022) mechanism behind a
//!   propose-test-release of its eigenvalue assumption, charged by Theorem 3.2; and
//!   [`mvn_release::MvnGaussian`], the mean and second moment perturbed by the Gaussian mechanism
//!   before sampling — the variant whose (ε, δ) is useful at a hospital's n.

pub mod mvn_rdp;
pub mod mvn_release;
