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

    /// The guarantee this one implies between datasets at `distance` under `relation`: its
    /// privacy map. `None` when this guarantee says nothing there.
    ///
    /// - Under its own relation, at distance k: group privacy (Dwork & Roth 2014, Theorem 2.2
    ///   and the remark after it: (kε, k·e^{(k−1)ε}·δ); Vadhan 2017, Lemma 2.2, states the looser
    ///   k·e^{kε}·δ). Chaining the (ε, δ) inequality along a path D₀, …, D_k of neighbours gives
    ///   P[M(D₀) ∈ S] ≤ e^{kε} P[M(D_k) ∈ S] + δ Σ_{i<k} e^{iε}, so (kε, δ Σ_{i<k} e^{iε}),
    ///   which is what is used here: each term is at most e^{(k−1)ε}, so the sum is within the
    ///   lemma's k·e^{(k−1)ε}·δ, and at k = 2 it is the (1 + e^ε)δ of two steps, tighter than
    ///   2e^ε·δ. Distance 1 is the guarantee itself; distance 0 (the same dataset) is (0, 0).
    /// - Replace-one at distance k from add/remove-one: a replaced record is one removed and one
    ///   added, so it is add/remove-one at distance 2k; at k = 1, (2ε, (1 + e^ε)δ).
    /// - Add/remove-one from replace-one: not derivable. Replace-one compares only datasets of
    ///   one size, so a replace-one mechanism may publish the size exactly: `None`.
    ///
    /// A δ of 0 maps to 0 at every distance (pure DP stays pure). A distance whose 2k overflows
    /// `u32` is `None` too.
    pub fn map(&self, relation: NeighbourRelation, distance: u32) -> Option<PrivacyGuarantee> {
        use NeighbourRelation::{AddRemoveOne, ReplaceOne};
        let steps = match (self.relation, relation) {
            (ReplaceOne, ReplaceOne) | (AddRemoveOne, AddRemoveOne) => distance,
            (AddRemoveOne, ReplaceOne) => distance.checked_mul(2)?,
            (ReplaceOne, AddRemoveOne) => return None,
        };
        if steps == 1 {
            return Some(*self);
        }
        Some(PrivacyGuarantee {
            epsilon: f64::from(steps) * self.epsilon,
            delta: if self.delta > 0.0 {
                chained_delta(self.epsilon, self.delta, steps)
            } else {
                0.0
            },
            relation,
        })
    }

    /// The same privacy stated under replace-one, `self.map(ReplaceOne, 1)`: itself when it is
    /// replace-one, (2ε, (1 + e^ε)δ) when it is add/remove-one. Always defined, unlike the
    /// converse.
    pub fn as_replace_one(&self) -> PrivacyGuarantee {
        self.map(NeighbourRelation::ReplaceOne, 1)
            .unwrap_or_else(|| unreachable!("every relation maps to replace-one at distance 1"))
    }

    /// This guarantee restated under `relation` (its [`Self::map`] at distance 1) when it is
    /// stated under another relation; `None` when it already is under `relation` or says
    /// nothing there. What a message adds to a guarantee it shows under another relation.
    pub fn restated(&self, relation: NeighbourRelation) -> Option<PrivacyGuarantee> {
        if self.relation == relation {
            return None;
        }
        self.map(relation, 1)
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

/// δ·Σ_{i<k} e^{iε}, the δ of group privacy at distance k ([`PrivacyGuarantee::map`]): the
/// product of [`geometric_sum`] and δ, or, where that sum overflows f64 (kε beyond about 709)
/// while the product need not, the product taken in logarithms,
/// exp(ln δ + (k − 1)ε + ln(1 − e^{−kε}) − ln(1 − e^{−ε})). Infinite only where the product
/// itself is beyond f64 (a δ above 1 says nothing either way).
fn chained_delta(epsilon: f64, delta: f64, k: u32) -> f64 {
    let chain = geometric_sum(epsilon, k);
    if chain.is_finite() {
        return chain * delta;
    }
    // An infinite sum needs e^{iε} to overflow for some i < k, so ε > 0 here.
    let largest = f64::from(k - 1) * epsilon;
    let tail = (-(-f64::from(k) * epsilon).exp_m1()).ln() - (-(-epsilon).exp_m1()).ln();
    (delta.ln() + largest + tail).exp()
}

/// Σ_{i<k} e^{iε}, the factor of δ in group privacy at distance k ([`PrivacyGuarantee::map`]).
/// Summed term by term for the distances releases use (the f64 result at k = 2 is exactly
/// `1.0 + ε.exp()`), in closed form (e^{kε} − 1)/(e^ε − 1) beyond.
fn geometric_sum(epsilon: f64, k: u32) -> f64 {
    const SUMMED: u32 = 64;
    if k == 0 {
        return 0.0;
    }
    if k <= SUMMED {
        // The first term is e^0 = 1 whatever ε is (an infinite ε included).
        return (1..k).fold(1.0, |sum, i| sum + (f64::from(i) * epsilon).exp());
    }
    if epsilon == 0.0 {
        return f64::from(k);
    }
    (f64::from(k) * epsilon).exp_m1() / epsilon.exp_m1()
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

    use NeighbourRelation::{AddRemoveOne, ReplaceOne};
    use proptest::prelude::*;

    /// The add/remove-one to replace-one conversion as it was written before the map, to the
    /// bit.
    fn doubled(g: PrivacyGuarantee) -> PrivacyGuarantee {
        PrivacyGuarantee::replace_one(
            2.0 * g.epsilon,
            if g.delta > 0.0 {
                (1.0 + g.epsilon.exp()) * g.delta
            } else {
                0.0
            },
        )
    }

    fn guarantee() -> impl Strategy<Value = PrivacyGuarantee> {
        (
            0.0..20.0f64,
            prop_oneof![Just(0.0), 1e-12..0.1f64],
            any::<bool>(),
        )
            .prop_map(|(epsilon, delta, replace)| PrivacyGuarantee {
                epsilon,
                delta,
                relation: if replace { ReplaceOne } else { AddRemoveOne },
            })
    }

    proptest! {
        #[test]
        fn distance_one_under_its_own_relation_is_the_guarantee(g in guarantee()) {
            prop_assert_eq!(g.map(g.relation, 1), Some(g));
            prop_assert_eq!(g.restated(g.relation), None);
        }

        #[test]
        fn add_remove_one_maps_to_replace_one_as_group_privacy_of_two(g in guarantee()) {
            let g = PrivacyGuarantee { relation: AddRemoveOne, ..g };
            let r = g.map(ReplaceOne, 1).expect("always derivable");
            prop_assert_eq!(r.epsilon.to_bits(), doubled(g).epsilon.to_bits());
            prop_assert_eq!(r.delta.to_bits(), doubled(g).delta.to_bits());
            prop_assert_eq!(r.relation, ReplaceOne);
            prop_assert_eq!(g.as_replace_one(), r);
            prop_assert_eq!(g.restated(ReplaceOne), Some(r));
            prop_assert_eq!(g.map(AddRemoveOne, 2).map(|a| (a.epsilon, a.delta)), Some((r.epsilon, r.delta)));
        }

        #[test]
        fn distances_compose_monotonically(g in guarantee(), k in 1u32..200, to_replace in any::<bool>()) {
            let to = if to_replace { ReplaceOne } else { g.relation };
            let near = g.map(to, k).expect("derivable");
            let far = g.map(to, k + 1).expect("derivable");
            prop_assert!(far.epsilon >= near.epsilon && far.delta >= near.delta, "{near:?} {far:?}");
            prop_assert!((near.epsilon - f64::from(k) * g.map(to, 1).expect("derivable").epsilon).abs() <= 1e-12 * near.epsilon.max(1.0));
            // The chained δ is within the lemma's k·e^{(k−1)ε}·δ.
            let steps = if to == g.relation { k } else { 2 * k };
            if g.delta > 0.0 {
                let lemma = f64::from(steps) * (f64::from(steps - 1) * g.epsilon).exp() * g.delta;
                prop_assert!(near.delta <= lemma * (1.0 + 1e-12), "{} > {lemma}", near.delta);
            } else {
                prop_assert_eq!(near.delta, 0.0);
            }
        }

        #[test]
        fn replace_one_says_nothing_under_add_remove_one(g in guarantee(), k in 0u32..100) {
            let g = PrivacyGuarantee { relation: ReplaceOne, ..g };
            prop_assert_eq!(g.map(AddRemoveOne, k), None);
            prop_assert_eq!(g.restated(AddRemoveOne), None);
        }
    }

    #[test]
    fn group_privacy_at_known_points() {
        let g = PrivacyGuarantee::add_remove_one(1.0, 1e-6);
        let same = g.map(AddRemoveOne, 0).expect("derivable");
        assert_eq!((same.epsilon, same.delta), (0.0, 0.0), "the same dataset");
        let three = g.map(AddRemoveOne, 3).expect("derivable");
        let e = 1f64.exp();
        assert_eq!(three.epsilon, 3.0);
        assert!((three.delta - (1.0 + e + e * e) * 1e-6).abs() <= 1e-20);
        let two = g.map(ReplaceOne, 2).expect("derivable");
        assert_eq!((two.epsilon, two.relation), (4.0, ReplaceOne));
        assert!((two.delta - (1.0 + e + e * e + e * e * e) * 1e-6).abs() <= 1e-20);
        assert_eq!(
            g.map(ReplaceOne, u32::MAX),
            None,
            "2k overflows the distance"
        );
        // Beyond the summed distances the closed form continues the sum.
        let (at_64, at_65) = (geometric_sum(0.01, 64), geometric_sum(0.01, 65));
        assert!((at_65 - at_64 - 0.64f64.exp()).abs() <= 1e-12 * at_65);
        assert_eq!(geometric_sum(0.0, 1000), 1000.0);
    }

    #[test]
    fn a_chained_delta_is_finite_where_only_its_sum_overflows() {
        // 68 steps at ε ≈ 10.46: e^{68ε} overflows f64, but δ·Σ_{i<68} e^{iε} ≈ 1.4e292 does not,
        // and must stay within the lemma's 68·e^{67ε}·δ.
        let g = PrivacyGuarantee::add_remove_one(10.458409023160922, 1e-12);
        assert!(geometric_sum(g.epsilon, 68).is_infinite());
        let near = g.map(AddRemoveOne, 68).expect("derivable");
        let lemma = 68.0 * (67.0 * g.epsilon).exp() * g.delta;
        assert!(
            near.delta.is_finite() && near.delta <= lemma,
            "{} > {lemma}",
            near.delta
        );
        // It equals the sum's dominant terms e^{67ε}·(1 + e^{−ε} + …)·δ to rounding.
        let dominant = (67.0 * g.epsilon).exp() * g.delta / (1.0 - (-g.epsilon).exp());
        assert!((near.delta / dominant - 1.0).abs() <= 1e-12);
        // Where the product itself is beyond f64 it is infinite, never a finite understatement.
        let huge = PrivacyGuarantee::add_remove_one(20.0, 0.1).map(AddRemoveOne, 100);
        assert_eq!(huge.map(|h| h.delta), Some(f64::INFINITY));
    }
}
