//! Composition of a node's releases into the privacy it has spent.
//!
//! Each charge carries the guarantee its mechanism states — (ε, δ) under a neighbour relation —
//! and, when the mechanism is analysed in Rényi DP, its RDP curve ([`crate::privacy::mechanism::Mechanism::rdp`]).
//!
//! **Per relation.** Guarantees stated under different neighbour relations are never added as
//! raw numbers. Within one relation:
//! - *basic composition* (Dwork & Roth 2014, Theorem 3.16): (Σε, Σδ);
//! - when **every** charge of the relation has an RDP curve, the curves add order by order
//!   (Mironov 2017, Proposition 1) and the sum converts to (ε_RDP, Σδ) ([`RdpCurve::epsilon`]).
//!
//! Both are valid (·, Σδ) guarantees, so the relation's spend is the one with the smaller ε.
//!
//! **Across relations.** The node's budget is stated under **replace-one** (the relation of
//! Minami et al. 2015 and of most mechanisms here). Add/remove-one spend (ε_A, δ_A) is converted to
//! replace-one by group privacy, (2ε_A, (1 + e^{ε_A})δ_A)
//! ([`PrivacyGuarantee::as_replace_one`]) — never the other way — and the total is the basic
//! composition of the two relations' spends.

use super::{AccountingError, RdpCurve};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};

/// One release's charge.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// What the mechanism guarantees.
    pub guarantee: PrivacyGuarantee,
    /// Its RDP curve, if it has one (same relation as the guarantee).
    pub rdp: Option<RdpCurve>,
}

/// Which bound gave a relation's spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accounting {
    /// No charges.
    None,
    /// Basic composition.
    Basic,
    /// Composed RDP curves, converted to (ε, δ).
    Rdp,
}

impl std::fmt::Display for Accounting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::None => "none",
            Self::Basic => "basic",
            Self::Rdp => "rdp",
        })
    }
}

/// The spend under one neighbour relation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelationSpend {
    /// The relation.
    pub relation: NeighbourRelation,
    /// ε spent (the tighter bound).
    pub epsilon: f64,
    /// δ spent (Σδ).
    pub delta: f64,
    /// Σε, for comparison.
    pub basic_epsilon: f64,
    /// Which bound `epsilon` is.
    pub accounting: Accounting,
    /// Number of charges.
    pub charges: usize,
}

/// Everything a node has spent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Composition {
    /// Spend of replace-one guarantees.
    pub replace_one: RelationSpend,
    /// Spend of add/remove-one guarantees.
    pub add_remove_one: RelationSpend,
    /// Total ε under replace-one (add/remove converted by group privacy).
    pub epsilon: f64,
    /// Total δ under replace-one.
    pub delta: f64,
    /// Number of charges.
    pub charges: usize,
}

fn spend(
    relation: NeighbourRelation,
    charges: &[&Charge],
) -> Result<RelationSpend, AccountingError> {
    let basic_epsilon: f64 = charges.iter().map(|c| c.guarantee.epsilon).sum();
    let delta: f64 = charges.iter().map(|c| c.guarantee.delta).sum();
    let mut out = RelationSpend {
        relation,
        epsilon: basic_epsilon,
        delta,
        basic_epsilon,
        accounting: if charges.is_empty() {
            Accounting::None
        } else {
            Accounting::Basic
        },
        charges: charges.len(),
    };
    let curves: Option<Vec<&RdpCurve>> = charges.iter().map(|c| c.rdp.as_ref()).collect();
    if let (Some(curves), true) = (curves, delta > 0.0 && delta < 1.0)
        && let Some((first, rest)) = curves.split_first()
    {
        let mut total = (*first).clone();
        for c in rest {
            total = total.compose(c)?;
        }
        let rdp_epsilon = total.epsilon(delta)?.epsilon;
        if rdp_epsilon < out.epsilon {
            out.epsilon = rdp_epsilon;
            out.accounting = Accounting::Rdp;
        }
    }
    Ok(out)
}

/// Composes `charges` (see the module documentation).
pub fn compose(charges: &[Charge]) -> Result<Composition, AccountingError> {
    let of = |r: NeighbourRelation| -> Vec<&Charge> {
        charges
            .iter()
            .filter(|c| c.guarantee.relation == r)
            .collect()
    };
    let replace_one = spend(
        NeighbourRelation::ReplaceOne,
        &of(NeighbourRelation::ReplaceOne),
    )?;
    let add_remove_one = spend(
        NeighbourRelation::AddRemoveOne,
        &of(NeighbourRelation::AddRemoveOne),
    )?;
    let converted = PrivacyGuarantee {
        epsilon: add_remove_one.epsilon,
        delta: add_remove_one.delta,
        relation: NeighbourRelation::AddRemoveOne,
    }
    .as_replace_one();
    Ok(Composition {
        replace_one,
        add_remove_one,
        epsilon: replace_one.epsilon + converted.epsilon,
        delta: replace_one.delta + converted.delta,
        charges: charges.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accounting::{dp_sgd_curve, dp_sgd_epsilon};

    fn charge(epsilon: f64, delta: f64, relation: NeighbourRelation) -> Charge {
        Charge {
            guarantee: PrivacyGuarantee {
                epsilon,
                delta,
                relation,
            },
            rdp: None,
        }
    }

    fn dp_sgd(q: f64, sigma: f64, steps: u64, delta: f64) -> Charge {
        let epsilon = dp_sgd_epsilon(q, sigma, steps, delta)
            .expect("valid")
            .epsilon;
        Charge {
            guarantee: PrivacyGuarantee {
                epsilon,
                delta,
                relation: NeighbourRelation::AddRemoveOne,
            },
            rdp: Some(dp_sgd_curve(q, sigma, steps).expect("valid")),
        }
    }

    #[test]
    fn empty_ledger_spends_nothing() {
        let c = compose(&[]).expect("empty");
        assert_eq!((c.epsilon, c.delta, c.charges), (0.0, 0.0, 0));
        assert_eq!(c.replace_one.accounting, Accounting::None);
    }

    #[test]
    fn replace_one_charges_add_up() {
        let c = compose(&[
            charge(0.5, 0.0, NeighbourRelation::ReplaceOne),
            charge(1.0, 1e-6, NeighbourRelation::ReplaceOne),
        ])
        .expect("valid");
        assert_eq!(c.epsilon, 1.5);
        assert_eq!(c.delta, 1e-6);
        assert_eq!(c.replace_one.accounting, Accounting::Basic);
        assert_eq!(c.add_remove_one.charges, 0);
    }

    #[test]
    fn rdp_composition_is_tighter_than_adding_and_equals_one_long_run() {
        // Ten identical DP-SGD releases: composing curves equals one run of 10·T steps at the
        // summed δ, and is well below ten times the single ε.
        let one = dp_sgd(0.01, 1.0, 1000, 1e-6);
        let ten: Vec<Charge> = (0..10).map(|_| one.clone()).collect();
        let c = compose(&ten).expect("valid");
        let a = c.add_remove_one;
        assert_eq!(a.accounting, Accounting::Rdp);
        assert!((a.delta - 1e-5).abs() < 1e-18);
        let long = dp_sgd_epsilon(0.01, 1.0, 10_000, 1e-5)
            .expect("valid")
            .epsilon;
        assert!(
            (a.epsilon - long).abs() <= 1e-9 * long,
            "{} vs {long}",
            a.epsilon
        );
        assert!(a.epsilon < 0.5 * a.basic_epsilon);
        // Converted to replace-one by group privacy.
        assert!((c.epsilon - 2.0 * a.epsilon).abs() < 1e-12);
        assert!((c.delta - (1.0 + a.epsilon.exp()) * a.delta).abs() < 1e-18);
    }

    #[test]
    fn a_charge_without_a_curve_falls_back_to_basic_for_its_relation() {
        let mut charges = vec![dp_sgd(0.01, 1.0, 1000, 1e-6), dp_sgd(0.01, 1.0, 1000, 1e-6)];
        charges.push(charge(0.3, 1e-6, NeighbourRelation::AddRemoveOne));
        let c = compose(&charges).expect("valid");
        assert_eq!(c.add_remove_one.accounting, Accounting::Basic);
        assert_eq!(c.add_remove_one.epsilon, c.add_remove_one.basic_epsilon);
    }

    #[test]
    fn relations_are_never_added_raw() {
        let c = compose(&[
            charge(1.0, 0.0, NeighbourRelation::ReplaceOne),
            charge(0.5, 1e-6, NeighbourRelation::AddRemoveOne),
        ])
        .expect("valid");
        assert_eq!(c.replace_one.epsilon, 1.0);
        assert_eq!(c.add_remove_one.epsilon, 0.5);
        // 1 + 2·0.5, not 1 + 0.5.
        assert_eq!(c.epsilon, 2.0);
        assert!((c.delta - (1.0 + 0.5f64.exp()) * 1e-6).abs() < 1e-20);
    }
}
