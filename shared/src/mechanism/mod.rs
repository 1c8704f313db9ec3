//! Private learners as values that carry their privacy guarantee (OpenDP style).
//!
//! A [`Mechanism`] is constructed from its parameters (ε, δ, λ, …), validated at construction, and
//! knows its [`PrivacyGuarantee`] before it touches any data: accounting composes these values and
//! never re-derives them. [`Mechanism::release`] trains on a [`Dataset`] with noise from a
//! [`NoiseSource`] and returns a [`Release`]: the weights plus [`ReleaseMetadata`] saying which
//! paper, algorithm and equation produced them, under which neighbour relation and assumptions, and
//! whether the noise was seeded (invariant 4).
//!
//! Mechanisms (one file each, tests beside them):
//! - [`objective_perturbation`]: ε-DP, Chaudhuri, Monteleoni & Sarwate 2011 Algorithm 2.
//! - [`objective_perturbation_gaussian`]: (ε, δ)-DP, seed 001 Algorithm 1 line 5 (Kifer, Smith &
//!   Thakurta 2012).
//! - [`output_perturbation`]: ε-DP, Chaudhuri, Monteleoni & Sarwate 2011 Algorithm 1.
//! - [`gibbs_posterior`]: (ε, δ)-DP sampling from a Gibbs posterior, Minami et al. NIPS 2016
//!   (Theorem 7 / Corollary 8 for the exact sample, Proposition 13 for Langevin Monte Carlo), with
//!   a cheaper variant whose sampler is not covered by any proof and says so.
//! - [`dp_sgd`]: (ε, δ)-DP under add/remove-one, DP-SGD with Poisson subsampling and per-example
//!   clipping (Abadi et al. 2016 Algorithm 1), σ calibrated by the RDP accountant of
//!   [`crate::accounting`].
//! - [`dp_sgd_bst`]: (ε, δ)-DP, seed 001 Algorithm 2 (Bassily, Smith & Thakurta 2014): n² noisy
//!   steps on one uniformly sampled record each.
//!
//! Every mechanism here assumes ||x||₂ ≤ 1 for every row (guaranteed by schema normalisation) and
//! refuses to release otherwise.

pub mod dp_sgd;
pub mod dp_sgd_bst;
pub mod gibbs_posterior;
pub mod kind;
pub mod objective_perturbation;
pub mod objective_perturbation_gaussian;
pub mod output_perturbation;

use crate::accounting::{AccountingError, RdpCurve};
use crate::dataset::Dataset;
use crate::noise::NoiseSource;
use crate::solver::SolverError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use dp_sgd::{DpSgd, DpSgdConfig, StepSize};
pub use dp_sgd_bst::BstDpSgd;
pub use gibbs_posterior::{GibbsError, GibbsPosterior, GibbsSampler};
pub use kind::{MechanismKind, Options};
pub use objective_perturbation::ObjectivePerturbation;
pub use objective_perturbation_gaussian::GaussianObjectivePerturbation;
pub use output_perturbation::OutputPerturbation;

/// Which datasets count as neighbours in the guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeighbourRelation {
    /// D and D′ have the same size and differ in one record (seed 001 §2.1).
    ReplaceOne,
    /// D′ is D with one record added or removed.
    AddRemoveOne,
}

impl std::fmt::Display for NeighbourRelation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ReplaceOne => "replace-one",
            Self::AddRemoveOne => "add/remove-one",
        })
    }
}

/// An (ε, δ)-DP guarantee under a stated neighbour relation (seed 001 Definition 2.1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PrivacyGuarantee {
    /// ε ≥ 0.
    pub epsilon: f64,
    /// δ ∈ [0, 1).
    pub delta: f64,
    /// Neighbour relation the guarantee is stated under.
    pub relation: NeighbourRelation,
}

impl PrivacyGuarantee {
    /// The same privacy stated under replace-one. An add/remove-one (ε, δ) guarantee applied
    /// twice (remove the record, add its replacement; group privacy for k = 2) gives
    /// P[M(D) ∈ S] ≤ e^ε(e^ε P[M(D′) ∈ S] + δ) + δ, i.e. (2ε, (1 + e^ε)δ) under replace-one. The
    /// converse does not hold in general, so there is no conversion the other way.
    pub fn as_replace_one(&self) -> PrivacyGuarantee {
        match self.relation {
            NeighbourRelation::ReplaceOne => *self,
            NeighbourRelation::AddRemoveOne => PrivacyGuarantee {
                epsilon: 2.0 * self.epsilon,
                delta: if self.delta > 0.0 {
                    (1.0 + self.epsilon.exp()) * self.delta
                } else {
                    0.0
                },
                relation: NeighbourRelation::ReplaceOne,
            },
        }
    }
}

/// What the privacy proof of a mechanism assumes about data and loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Assumptions {
    /// Every feature vector satisfies ||x||₂ ≤ this (1 for all mechanisms here).
    pub max_row_norm: f64,
    /// ζ: bound on ||∇ℓ(θ; d)||₂ (1 for logistic loss with ||x|| ≤ 1).
    pub loss_gradient_bound: f64,
    /// c = λ_max: bound on the eigenvalues of ∇²ℓ(θ; d) (1/4 for logistic loss with ||x|| ≤ 1).
    pub loss_hessian_bound: f64,
}

/// The assumptions shared by the logistic-loss mechanisms: ||x|| ≤ 1, ζ = 1, λ_max = c = 1/4.
pub const LOGISTIC_UNIT_BALL: Assumptions = Assumptions {
    max_row_norm: 1.0,
    loss_gradient_bound: 1.0,
    loss_hessian_bound: 0.25,
};

/// Everything a consumer of a released learner needs to know about how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseMetadata {
    /// Mechanism identifier, e.g. `objective-perturbation`.
    pub mechanism: String,
    /// The paper, algorithm and equation implemented.
    pub reference: String,
    /// Mechanism parameters (λ, ε′, Δ, noise scale, …) by name.
    pub parameters: BTreeMap<String, f64>,
    /// The guarantee this release satisfies.
    pub guarantee: PrivacyGuarantee,
    /// What the proof of that guarantee assumes.
    pub assumptions: Assumptions,
    /// Number of training rows (public under replace-one neighbours).
    pub n: usize,
    /// Dimension of θ.
    pub dim: usize,
    /// True when the noise came from a seeded generator: such a release gives NO privacy.
    pub seeded: bool,
}

impl ReleaseMetadata {
    /// Metadata of a release of `mechanism` trained on `data` with noise from `noise`.
    pub fn new(
        mechanism: &dyn Mechanism,
        reference: &str,
        parameters: BTreeMap<String, f64>,
        assumptions: Assumptions,
        data: &Dataset,
        noise: &NoiseSource,
    ) -> Self {
        Self {
            mechanism: mechanism.name().to_owned(),
            reference: reference.to_owned(),
            parameters,
            guarantee: mechanism.guarantee(),
            assumptions,
            n: data.len(),
            dim: data.dim(),
            seeded: noise.is_seeded(),
        }
    }
}

/// A released learner: linear weights θ (classifier sign⟨θ, x⟩) and its metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Release {
    /// The weights.
    pub theta: Vec<f64>,
    /// How they were produced.
    pub metadata: ReleaseMetadata,
}

/// Why a mechanism could not be built or could not release.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MechanismError {
    /// A parameter is outside its valid range.
    #[error("invalid {name} = {value}: {requirement}")]
    InvalidParameter {
        /// Parameter name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// The data violates the norm bound the privacy proof assumes.
    #[error(
        "a feature vector has norm {norm} > {bound}: the privacy proof does not cover this data (normalise it with a schema)"
    )]
    NormBoundViolated {
        /// The largest norm found.
        norm: f64,
        /// The bound assumed.
        bound: f64,
    },
    /// Training data is empty.
    #[error("cannot release a learner trained on no data")]
    EmptyData,
    /// The optimiser failed; nothing is released.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// The Gibbs-posterior sampler cannot run as configured; nothing is released.
    #[error(transparent)]
    Gibbs(#[from] GibbsError),
    /// A mechanism option that the mechanism does not take.
    #[error("unknown option `{name}` for {mechanism} (it takes: {accepted})")]
    UnknownOption {
        /// The option given.
        name: String,
        /// The mechanism.
        mechanism: &'static str,
        /// The options it takes.
        accepted: String,
    },
    /// The privacy accountant could not calibrate the noise.
    #[error(transparent)]
    Accounting(#[from] AccountingError),
    /// The algorithm would run for more iterations than the documented cap.
    #[error(
        "{mechanism} would run {iterations} iterations on this data, more than the cap of {cap}"
    )]
    TooManyIterations {
        /// The mechanism.
        mechanism: &'static str,
        /// Iterations the algorithm prescribes.
        iterations: u128,
        /// The cap.
        cap: u64,
    },
}

/// A differentially private learner.
pub trait Mechanism: Send + Sync {
    /// Stable identifier, e.g. `objective-perturbation`.
    fn name(&self) -> &'static str;
    /// The guarantee any release of this mechanism satisfies, known before seeing data.
    fn guarantee(&self) -> PrivacyGuarantee;
    /// Trains on `data` and returns the private learner.
    fn release(&self, data: &Dataset, noise: &mut NoiseSource) -> Result<Release, MechanismError>;
    /// False when the stated guarantee is not proven for the algorithm as run (e.g. an
    /// approximate sampler with no convergence bound); a node policy may refuse such releases.
    fn is_proven(&self) -> bool {
        true
    }
    /// The Rényi-DP curve of a release, when the mechanism is analysed in RDP (known before
    /// seeing data, like [`Mechanism::guarantee`]), so that a ledger can compose releases more
    /// tightly than by adding (ε, δ). `None` for mechanisms analysed only in (ε, δ).
    fn rdp(&self) -> Option<RdpCurve> {
        None
    }
}

/// Checks the preconditions shared by all mechanisms: non-empty data within the norm bound.
pub(crate) fn check_data(data: &Dataset, assumptions: &Assumptions) -> Result<(), MechanismError> {
    if data.is_empty() {
        return Err(MechanismError::EmptyData);
    }
    let norm = data.max_row_norm();
    // No slack: schema normalisation and the synthetic generator both guarantee the computed norm
    // (as max_row_norm computes it) is ≤ 1, so anything above is data the proof does not cover.
    if norm > assumptions.max_row_norm {
        return Err(MechanismError::NormBoundViolated {
            norm,
            bound: assumptions.max_row_norm,
        });
    }
    Ok(())
}

/// Validates ε > 0 (finite).
pub(crate) fn check_epsilon(epsilon: f64) -> Result<(), MechanismError> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(())
    } else {
        Err(MechanismError::InvalidParameter {
            name: "epsilon",
            value: epsilon,
            requirement: "must be a finite number > 0",
        })
    }
}

/// Validates δ ∈ (0, 1).
pub(crate) fn check_delta(delta: f64) -> Result<(), MechanismError> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(MechanismError::InvalidParameter {
            name: "delta",
            value: delta,
            requirement: "must be in (0, 1)",
        })
    }
}

/// Validates λ > 0 (finite): the proofs need a strongly convex regulariser.
pub(crate) fn check_lambda(lambda: f64) -> Result<(), MechanismError> {
    if lambda.is_finite() && lambda > 0.0 {
        Ok(())
    } else {
        Err(MechanismError::InvalidParameter {
            name: "lambda",
            value: lambda,
            requirement: "must be a finite number > 0",
        })
    }
}

/// Samples b ∈ ℝᵈⁱᵐ with density ∝ exp(−||b||₂/scale): ||b|| ~ Gamma(dim, scale) (shape dim,
/// scale `scale`) and b/||b|| uniform on the sphere. This is the noise of CMS 2011 Algorithms 1 and 2
/// (there written exp(−β||b||) with β = 1/scale).
///
/// # Panics
/// If `dim == 0` or `scale` is not finite and positive (callers validate their parameters).
pub fn sample_gamma_ball(dim: usize, scale: f64, rng: &mut NoiseSource) -> Vec<f64> {
    use rand::RngExt;
    let gamma = rand_distr::Gamma::new(dim as f64, scale)
        .expect("shape dim ≥ 1 and a finite scale > 0 are valid");
    let norm: f64 = rng.sample(gamma);
    uniform_direction(dim, rng)
        .into_iter()
        .map(|u| u * norm)
        .collect()
}

/// Samples a direction uniformly on the unit sphere in ℝᵖ (normalised standard Gaussian).
pub(crate) fn uniform_direction(dim: usize, rng: &mut NoiseSource) -> Vec<f64> {
    use rand::RngExt;
    use rand_distr::StandardNormal;
    loop {
        let v: Vec<f64> = (0..dim).map(|_| rng.sample(StandardNormal)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            return v.into_iter().map(|x| x / norm).collect();
        }
    }
}
