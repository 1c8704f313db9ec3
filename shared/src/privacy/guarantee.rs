//! What a release promises: an (ε, δ) guarantee under a neighbour relation, and the assumptions
//! about data and loss its proof rests on.
//!
//! The bounds of the logistic loss on the unit ball are declared **once** here
//! ([`LOGISTIC_UNIT_BALL`]); every mechanism reads ζ and c from it instead of re-declaring them. A
//! new loss declares its own [`Assumptions`] constant beside this one.

use serde::{Deserialize, Serialize};

/// Which datasets count as neighbours in the guarantee.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeighbourRelation {
    /// D and D′ have the same size and differ in one record (Minami et al. 2015, §2.1).
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

/// An (ε, δ)-DP guarantee under a stated neighbour relation (Minami et al. 2015, Definition 2.1).
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
    /// (ε, δ)-DP under replace-one.
    pub fn replace_one(epsilon: f64, delta: f64) -> Self {
        Self {
            epsilon,
            delta,
            relation: NeighbourRelation::ReplaceOne,
        }
    }

    /// (ε, δ)-DP under add/remove-one.
    pub fn add_remove_one(epsilon: f64, delta: f64) -> Self {
        Self {
            epsilon,
            delta,
            relation: NeighbourRelation::AddRemoveOne,
        }
    }

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

    /// The add/remove-one guarantee whose [`Self::as_replace_one`] is this one: (ε/2,
    /// δ/(1 + e^{ε/2})), the parameters to run an add/remove-one mechanism at for a replace-one
    /// target. Already add/remove-one: itself.
    pub fn add_remove_one_within(&self) -> PrivacyGuarantee {
        match self.relation {
            NeighbourRelation::AddRemoveOne => *self,
            NeighbourRelation::ReplaceOne => {
                let half = self.epsilon / 2.0;
                PrivacyGuarantee::add_remove_one(half, self.delta / (1.0 + half.exp()))
            }
        }
    }
}

/// What a release's privacy proof covers, from strongest to weakest. Every release carries one
/// ([`crate::privacy::release::ReleaseMetadata::proof`]); an aggregator accepts the first two by
/// default and can be told to accept only the first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProofCoverage {
    /// The proof covers the noise as sampled: exact samplers over integers and rationals, or
    /// noise snapped to a public grid as Mironov (2012) prescribes, so the guarantee holds for
    /// the floating-point numbers that run.
    NoiseAsSampled,
    /// The proof covers the algorithm in real arithmetic; the noise is drawn in f64 and no proof
    /// covers its floating-point samples (Mironov 2012 shows such samples can leak).
    RealArithmetic,
    /// No proof covers the stated guarantee for the algorithm as run (an approximate sampler
    /// without a convergence bound).
    None,
}

impl ProofCoverage {
    /// Every label, strongest first.
    pub const ALL: [ProofCoverage; 3] = [Self::NoiseAsSampled, Self::RealArithmetic, Self::None];

    /// The label on the wire, in files and in messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoiseAsSampled => "noise-as-sampled",
            Self::RealArithmetic => "real-arithmetic",
            Self::None => "none",
        }
    }

    /// The label named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The label of a release recorded before labels existed: `real-arithmetic` when it was
    /// proven (the weaker of the two proven labels: nothing then said its noise was covered),
    /// `none` otherwise.
    pub fn of_legacy(proven: bool) -> Self {
        if proven {
            Self::RealArithmetic
        } else {
            Self::None
        }
    }

    /// Whether a proof covers the stated guarantee at all (`proven` in release metadata).
    pub fn is_proven(self) -> bool {
        self != Self::None
    }
}

impl std::fmt::Display for ProofCoverage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What the privacy proof of a mechanism assumes about data and loss.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Assumptions {
    /// Every feature vector satisfies ||x||₂ ≤ this (1 for all mechanisms here).
    pub max_row_norm: f64,
    /// ζ (also written L): bound on ||∇ℓ(θ; d)||₂, the Lipschitz constant of θ ↦ ℓ(θ; d).
    pub loss_gradient_bound: f64,
    /// c = λ_max = M_ℓ: bound on the eigenvalues of ∇²ℓ(θ; d), the smoothness of θ ↦ ℓ(θ; d).
    pub loss_hessian_bound: f64,
}

/// The logistic loss on the unit ball: ||x|| ≤ 1, ζ = 1 (|ℓ′| ≤ 1), c = λ_max = 1/4
/// (σ(m)σ(−m) ≤ 1/4). Declared once; every logistic-loss mechanism uses it.
pub const LOGISTIC_UNIT_BALL: Assumptions = Assumptions {
    max_row_norm: 1.0,
    loss_gradient_bound: 1.0,
    loss_hessian_bound: 0.25,
};

#[cfg(test)]
mod tests {
    use super::*;

    /// Running at `add_remove_one_within` and converting back gives the replace-one target.
    #[test]
    fn the_two_conversions_are_inverse_for_a_replace_one_target() {
        for (epsilon, delta) in [(1.0, 1e-5), (0.3, 0.0), (8.0, 1e-9)] {
            let target = PrivacyGuarantee::replace_one(epsilon, delta);
            let run = target.add_remove_one_within();
            assert_eq!(run.relation, NeighbourRelation::AddRemoveOne);
            let back = run.as_replace_one();
            assert_eq!(back.relation, NeighbourRelation::ReplaceOne);
            assert!((back.epsilon - epsilon).abs() <= 1e-15 * epsilon);
            assert!((back.delta - delta).abs() <= 1e-15 * delta.max(f64::MIN_POSITIVE));
        }
        let g = PrivacyGuarantee::add_remove_one(1.0, 1e-6);
        assert_eq!(g.add_remove_one_within(), g);
    }
}
