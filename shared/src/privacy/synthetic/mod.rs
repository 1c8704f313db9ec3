//! Private synthetic data: releases of rows drawn from a model fitted to the data, and the
//! analyses of what those rows reveal.
//!
//! - [`mvn_rdp`]: seed 003 (Miura et al.) — rows drawn from the normal distribution with the
//!   data's empirical mean and covariance and **no added noise**; the Rényi-DP guarantee of that
//!   sampling (Theorem 3.1 with n private, Theorem 3.2 with n public), its composition over the
//!   released rows (Proposition 2.4), its conversion to (ε, δ) (Proposition 2.5), its RDP curve for
//!   the ledger, and the paper's Tables 1 and 2.

pub mod mvn_rdp;
