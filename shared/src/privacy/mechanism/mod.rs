//! Private learners as values that carry their privacy guarantee (OpenDP style).
//!
//! A [`Mechanism`] is constructed from its parameters (ε, δ, λ, …), validated at construction, and
//! knows its [`PrivacyGuarantee`] before it touches any data: accounting composes these values and
//! never re-derives them. [`Mechanism::release`] trains on a [`Dataset`] with noise from a
//! [`NoiseSource`] and returns a [`Release`]: the classifier plus [`ReleaseMetadata`] saying which
//! paper, algorithm and equation produced it, under which neighbour relation and assumptions, and
//! whether the noise was seeded (invariant 4).
//!
//! `Mechanism` is a template: `release` is provided once here (check the data against the
//! mechanism's assumptions, call its [`Mechanism::sample`], attach the metadata), so a mechanism
//! states only its name, reference, guarantee and algorithm. **A new mechanism** is one file here
//! implementing the trait and declaring its registry entry (`REGISTERED`: name, summary, typed
//! options, its `auto` λ rule, its neighbour relation, its row of `docs/mechanisms.md`
//! ([`docs_table`]), how it is built; [`kind::Registration`]), with its noise tests beside it,
//! plus one line in the `mechanisms!` block below; the loss bounds it assumes come from
//! [`crate::privacy::guarantee`]. `example.rs` (tests only) is such a mechanism.
//!
//! Mechanisms (one file each, tests beside them):
//! - [`objective_perturbation`]: ε-DP, Chaudhuri, Monteleoni & Sarwate 2011 Theorem 9 with the
//!   expected-excess-risk Δ rule of [`delta_rule`] and an output stage that covers the solver's
//!   inexact minimiser (a pure-ε form of approximate minima perturbation, Iyengar et al. 2019) —
//!   the default ε-DP learner.
//! - [`objective_perturbation_cms2011`]: ε-DP, Chaudhuri, Monteleoni & Sarwate 2011 Algorithm 2,
//!   exactly as published (the reproduction's learner).
//! - [`objective_perturbation_gaussian`]: (ε, δ)-DP, Minami et al. 2015, Algorithm 1 line 5 (Kifer,
//!   Smith & Thakurta 2012), with Δ as published (the reproduction) or by the Δ rule followed by
//!   the snapped [`output_stage`] (the default learner with δ > 0).
//! - [`output_stage`]: the snapped output stage that covers the inexact minimiser of both
//!   objective-perturbation learners.
//! - [`output_perturbation`]: ε-DP, Chaudhuri, Monteleoni & Sarwate 2011 Algorithm 1 with
//!   per-coordinate Laplace noise snapped as Mironov 2012 prescribes
//!   ([`crate::privacy::snapping`]), safe in floating point.
//! - [`output_perturbation_cms2011`]: the same algorithm as published, with f64 noise (exposed to
//!   Mironov's attack): for the lab's reproductions, not offered by nodes.
//!
//! Output perturbation and the default objective perturbation (both δ branches) release on a
//! snapped public grid, and DP-SGD and BST add exact discrete Gaussian noise on a lattice; the
//! reproductions and the Gibbs and Langevin chains still draw f64 noise (ARCHITECTURE.md,
//! invariant 4, "Floating point").
//! - [`gibbs_posterior`]: (ε, δ)-DP sampling from a Gibbs posterior, Minami et al. NIPS 2016
//!   (Theorem 7 / Corollary 8 for the exact sample, Proposition 13 for Langevin Monte Carlo), with
//!   a cheaper variant whose sampler is not covered by any proof and says so.
//! - [`dp_sgd`]: (ε, δ)-DP under add/remove-one, DP-SGD with Poisson subsampling and per-example
//!   clipping (Abadi et al. 2016 Algorithm 1), σ calibrated by the RDP accountant of
//!   [`crate::privacy::accounting`].
//! - [`dp_sgd_bst`]: (ε, δ)-DP, Minami et al. 2015, Algorithm 2 (Bassily, Smith & Thakurta 2014):
//!   n² noisy steps on one uniformly sampled record each, with exact discrete Gaussian noise on a
//!   lattice, accounted along BST14's proof (`docs/proofs/dp-sgd-bst-lattice.md`).
//! - [`langevin`]: (ε, δ)-DP under replace-one, noisy full-batch gradient descent (the Langevin
//!   chain of Minami et al. eq. 14) proven for the chain as run at any step count by shifted
//!   Rényi divergences (privacy amplification by iteration, Feldman et al. 2018), with its RDP
//!   curve; proof in `docs/proofs/langevin.md`.
//!
//! Every mechanism here assumes ||x||₂ ≤ 1 for every row (guaranteed by schema normalisation) and
//! refuses to release otherwise. λ is a number or `auto` ([`lambda`]), resolved from public
//! quantities (n, d, ε) when the mechanism trains and recorded as `parameters["lambda"]`.

#[cfg(test)]
pub(crate) mod audit;
pub mod delta_rule;
pub mod kind;
pub mod lambda;
pub mod objective_perturbation_gaussian;
pub mod output_grid;
pub mod output_stage;
pub mod spec;

/// Declares the mechanism files and the registry: each file's `REGISTERED` entries, in order.
macro_rules! mechanisms {
    ($( $(#[$meta:meta])* $vis:vis mod $file:ident; )*) => {
        $( $(#[$meta])* $vis mod $file; )*

        /// The registry: every mechanism users can name, one line per file in the
        /// `mechanisms!` block below, listed in this order ([`MechanismKind::all`]).
        const REGISTRY: &[&[kind::Registration]] = &[ $( $(#[$meta])* $file::REGISTERED, )* ];
    };
}

// The registry. A new mechanism is one file (its `Mechanism` implementation and its
// `REGISTERED` entry) and one line here.
mechanisms! {
    pub mod objective_perturbation;
    pub mod objective_perturbation_cms2011;
    pub mod output_perturbation;
    pub mod output_perturbation_cms2011;
    pub mod gibbs_posterior;
    pub mod dp_sgd;
    pub mod dp_sgd_bst;
    pub mod langevin;
    #[cfg(test)]
    mod example;
}

use crate::data::dataset::Dataset;
use crate::learn::classifier::LinearClassifier;
use crate::learn::solver::SolverError;
use crate::privacy::accounting::{AccountingError, RdpCurve};
use crate::privacy::guarantee::{
    Assumptions, LOGISTIC_UNIT_BALL, NeighbourRelation, PrivacyGuarantee, ProofCoverage,
};
use crate::privacy::noise::NoiseSource;
use crate::privacy::registry::{markdown_table, options_cell};
use crate::privacy::release::{Parameters, Release, ReleaseMetadata};
use crate::util::num::Num;
use crate::util::stop::{Stop, Stopped};

pub use dp_sgd::{DpSgd, DpSgdConfig, StepSize};
pub use dp_sgd_bst::BstDpSgd;
pub use gibbs_posterior::{GibbsError, GibbsPosterior, GibbsSampler};
pub use kind::{MechanismKind, Options};
pub use lambda::Lambda;
pub use langevin::Langevin;
pub use objective_perturbation::ObjectivePerturbation;
pub use objective_perturbation_cms2011::ObjectivePerturbationCms2011;
pub use objective_perturbation_gaussian::GaussianObjectivePerturbation;
pub use output_perturbation::OutputPerturbation;
pub use output_perturbation_cms2011::OutputPerturbationCms2011;
pub use spec::LearnerSpec;

/// The table of learners in `docs/mechanisms.md` (between `<!-- generated: mechanisms -->` and
/// `<!-- end generated -->`): a row per registered mechanism with a [`kind::DocRow`], in
/// registry order; a relation other than replace-one (the nodes' budget relation) is in bold.
pub fn docs_table() -> String {
    let header = [
        "name",
        "what",
        "guarantee",
        "neighbours",
        "options (defaults)",
    ];
    let rows = MechanismKind::all().filter_map(|k| {
        let r = k.registration();
        let doc = r.doc?;
        let neighbours = match r.neighbours {
            NeighbourRelation::ReplaceOne => r.neighbours.to_string(),
            other => format!("**{other}**"),
        };
        Some(vec![
            format!("`{}`", r.name),
            doc.what.to_owned(),
            doc.guarantee.to_owned(),
            neighbours,
            options_cell(r.options, doc.options_note),
        ])
    });
    markdown_table(&header, rows)
}

/// Why a mechanism could not be built or could not release.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MechanismError {
    /// A parameter is outside its valid range.
    #[error("invalid {name} = {}: {requirement}", Num(*.value))]
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
    /// The caller stopped the work (shutdown, or a time limit); nothing is released.
    #[error(transparent)]
    Stopped(#[from] Stopped),
    /// The snapped noise of output perturbation cannot be calibrated for this data (Mironov
    /// 2012 Theorem 1 needs the coordinate bound below 2^46 times the Laplace scale).
    #[error(transparent)]
    Snapping(#[from] crate::privacy::snapping::SnappingError),
    /// Exact discrete noise cannot be set up for these public parameters (a grid or a noise
    /// scale beyond what the exact samplers support).
    #[error(transparent)]
    Discrete(#[from] crate::privacy::discrete::DiscreteError),
    /// A mechanism kept for the lab's reproductions, which nodes do not release.
    #[error(
        "{mechanism} is kept for reproductions and not released by nodes: its f64 noise is exposed to Mironov's 2012 floating-point attack (use {instead})"
    )]
    ReproductionOnly {
        /// The mechanism asked for.
        mechanism: &'static str,
        /// The mechanism nodes release instead.
        instead: &'static str,
    },
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

/// What a mechanism's own algorithm produces from the data: the coefficients θ and the
/// parameters it ran with (noise scales, ε′, Δ, step counts, …), recorded in the metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// θ.
    pub coefficients: Vec<f64>,
    /// The parameters the release records, by name.
    pub parameters: Parameters,
}

/// A differentially private learner, written as a template: a mechanism states its name, paper,
/// guarantee and assumptions, and implements [`Mechanism::sample`]; the provided
/// [`Mechanism::release`] checks the data against the assumptions, samples, and attaches the
/// metadata. Implementations must not override `release`.
pub trait Mechanism: Send + Sync {
    /// Stable identifier, e.g. `objective-perturbation`.
    fn name(&self) -> &'static str;
    /// The paper, algorithm and equation implemented (recorded in every release).
    fn reference(&self) -> &'static str;
    /// The guarantee any release of this mechanism satisfies, known before seeing data.
    fn guarantee(&self) -> PrivacyGuarantee;
    /// What the proof of the guarantee assumes about data and loss.
    fn assumptions(&self) -> Assumptions {
        LOGISTIC_UNIT_BALL
    }
    /// False when the stated guarantee is not proven for the algorithm as run (e.g. an
    /// approximate sampler with no convergence bound); a node policy may refuse such releases.
    fn is_proven(&self) -> bool {
        true
    }
    /// What the proof covers ([`ProofCoverage`]): by default `real-arithmetic` when proven (the
    /// noise is drawn in f64) and `none` otherwise; a mechanism whose noise is exact or snapped
    /// says `noise-as-sampled`. Must agree with its registration's `proof`.
    fn proof(&self) -> ProofCoverage {
        ProofCoverage::of_legacy(self.is_proven())
    }
    /// The Rényi-DP curve of a release, when the mechanism is analysed in RDP (known before
    /// seeing data, like [`Mechanism::guarantee`]), so that a ledger can compose releases more
    /// tightly than by adding (ε, δ). `None` for mechanisms analysed only in (ε, δ).
    fn rdp(&self) -> Option<RdpCurve> {
        None
    }
    /// A lower estimate of the seconds a release on `n` rows of dimension `dim` takes on this
    /// machine, from those public quantities and the mechanism's parameters alone (a short
    /// timing of the same inner loop on public rows); `None` when training is a few passes (a
    /// Newton solve) and always fast. A node refuses, before any charge, a release whose
    /// estimate already exceeds its training time limit.
    fn predicted_seconds(&self, n: usize, dim: usize) -> Option<f64> {
        let _ = (n, dim);
        None
    }
    /// Refuses, from the public size of the data alone (`n` rows of dimension `dim`) and the
    /// mechanism's parameters, a release its algorithm could not run (an iteration cap, integer
    /// sums that would not be exact). A node calls it before anything is charged; the provided
    /// [`Mechanism::release_until`] calls it before [`Mechanism::sample`].
    fn check_size(&self, n: usize, dim: usize) -> Result<(), MechanismError> {
        let _ = (n, dim);
        Ok(())
    }
    /// The mechanism's algorithm on data already checked against [`Mechanism::assumptions`],
    /// drawing its noise from `noise`. Long loops call `stop.check()` now and then and return
    /// [`MechanismError::Stopped`] when asked to.
    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Sample, MechanismError>;
    /// Trains on `data` and returns the private learner with its metadata (invariants 1 and 4:
    /// data outside the assumed norm bound is refused; the metadata records whether the noise
    /// was seeded). A release whose proof is not `noise-as-sampled` is rounded to the public
    /// [`output_grid`] (recorded as `parameters["output_grid"]`).
    fn release(&self, data: &Dataset, noise: &mut NoiseSource) -> Result<Release, MechanismError> {
        self.release_until(data, noise, &Stop::never())
    }
    /// [`Mechanism::release`] that gives up (releasing nothing) when `stop` says so.
    fn release_until(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Release, MechanismError> {
        let assumptions = self.assumptions();
        check_data(data, &assumptions)?;
        self.check_size(data.len(), data.dim())?;
        let Sample {
            mut coefficients,
            mut parameters,
        } = self.sample(data, noise, stop)?;
        if self.proof() != ProofCoverage::NoiseAsSampled {
            output_grid::round_to_output_grid(&mut coefficients);
            parameters.insert("output_grid".to_owned(), output_grid::OUTPUT_GRID);
        }
        let metadata = ReleaseMetadata {
            mechanism: self.name().to_owned(),
            reference: self.reference().to_owned(),
            parameters,
            guarantee: self.guarantee(),
            assumptions,
            n: data.len(),
            dim: data.dim(),
            seeded: noise.is_seeded(),
            proven: self.is_proven(),
            proof: self.proof(),
        };
        Ok(Release {
            classifier: LinearClassifier::new(coefficients),
            metadata,
        })
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
