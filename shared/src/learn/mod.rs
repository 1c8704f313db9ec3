//! The learning layer: L2-regularised logistic regression without any privacy.
//!
//! - [`logistic`]: stable loss, gradient and Hessian of the (possibly perturbed) objective.
//! - [`solver`]: damped Newton to a certified gradient tolerance; [`curvature`]: its exact or
//!   sub-sampled Hessian, kept while it serves on large data; [`warm_start`]: the start of a large
//!   fit from sub-samples; [`hessian`]: the Hessian over all rows or a sub-sample, by [`gram`]'s
//!   dgemm bits or [`quick_gram`]; [`cholesky`]: the factor of each Newton step, with nalgebra's
//!   bits.
//! - [`margins`]: the passes' yᵢ⟨θ, xᵢ⟩ stage, four rows at a time; [`row_sums`]: their Σ cᵢxᵢ
//!   stage; both bit-identical to one row at a time.
//! - [`held_out`]: the total loss of many θ on one fixed fold (cross-validation's scores).
//! - [`classifier`]: [`classifier::LinearClassifier`], the fitted model every layer passes around.
//!
//! Mechanisms in [`crate::privacy::mechanism`] call [`solver::minimise`] with the penalty their
//! algorithm prescribes; a new loss would live here beside [`logistic`], with its bounds (ζ, c)
//! declared once in [`crate::privacy::guarantee`].

pub(crate) mod cholesky;
pub mod classifier;
pub mod curvature;
pub(crate) mod gram;
pub mod held_out;
pub mod hessian;
pub mod logistic;
pub(crate) mod margins;
pub(crate) mod quick_gram;
pub(crate) mod row_sums;
pub mod solver;
pub(crate) mod warm_start;
