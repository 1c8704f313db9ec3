//! The ledger's admission rule as a pure function: may a node make one more release?
//!
//! A release is admitted only if its ε is within the per-release cap and the composition of every
//! charge *including the new one* ([`compose`]) fits the totals, both stated under replace-one.
//! The node's store ([`dpagg-node`'s `store.rs`]) calls [`admit`] inside the transaction that
//! records the charge; keeping the rule here makes it testable without a database.

use super::AccountingError;
use super::ledger::{Charge, Composition, compose};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::util::num::{Num, Short};

/// Relative slack when comparing a charge with the remaining budget, so that ten releases of
/// ε = 0.1 fit a budget of 1.0 despite rounding (1e-12 of the budget: negligible for privacy).
pub const BUDGET_SLACK: f64 = 1e-12;

/// A node's budget, stated under replace-one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetPolicy {
    /// Total ε the node will ever spend.
    pub epsilon_total: f64,
    /// Total δ the node will ever spend.
    pub delta_total: f64,
    /// Largest ε of one release (in the release's own relation).
    pub max_epsilon_per_release: f64,
}

impl BudgetPolicy {
    /// ε left after `spent` (never negative).
    pub fn epsilon_remaining(&self, spent: &Composition) -> f64 {
        (self.epsilon_total - spent.epsilon).max(0.0)
    }

    /// δ left after `spent` (never negative).
    pub fn delta_remaining(&self, spent: &Composition) -> f64 {
        (self.delta_total - spent.delta).max(0.0)
    }
}

/// Why a release is not admitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// The release's ε exceeds the per-release cap.
    #[error("ε = {} exceeds this node's per-release cap of {}", Num(*.epsilon), Num(*.cap))]
    OverCap {
        /// ε asked for.
        epsilon: f64,
        /// The cap.
        cap: f64,
    },
    /// The composition including the release exceeds the totals.
    #[error("{}", exhausted_message(self))]
    Exhausted {
        /// The release's guarantee.
        guarantee: PrivacyGuarantee,
        /// ε spent under replace-one if it were made.
        epsilon_after: f64,
        /// δ spent under replace-one if it were made.
        delta_after: f64,
        /// The policy's ε total.
        epsilon_total: f64,
        /// The policy's δ total.
        delta_total: f64,
        /// ε remaining before it.
        remaining_epsilon: f64,
        /// δ remaining before it.
        remaining_delta: f64,
    },
}

/// "privacy budget exhausted (δ): …" naming the limit that is hit, with short numbers.
fn exhausted_message(r: &Refusal) -> String {
    let Refusal::Exhausted {
        guarantee: g,
        epsilon_after,
        delta_after,
        epsilon_total,
        delta_total,
        remaining_epsilon,
        remaining_delta,
    } = r
    else {
        return String::new();
    };
    let over = |spent: f64, total: f64| spent > total * (1.0 + BUDGET_SLACK);
    let limits: Vec<String> = [
        (
            over(*epsilon_after, *epsilon_total),
            "ε",
            *epsilon_after,
            *epsilon_total,
        ),
        (
            over(*delta_after, *delta_total),
            "δ",
            *delta_after,
            *delta_total,
        ),
    ]
    .into_iter()
    .filter(|(hit, ..)| *hit)
    .map(|(_, name, after, total)| {
        format!("{name} would reach {} of {}", Short(after), Short(total))
    })
    .collect();
    let relation = g
        .restated(NeighbourRelation::ReplaceOne)
        .map(|charged| {
            format!(
                ", {}: charged as ({}, {}) under replace-one",
                g.relation,
                Short(charged.epsilon),
                Short(charged.delta)
            )
        })
        .unwrap_or_default();
    format!(
        "privacy budget exhausted ({}): this release (ε = {}, δ = {}{relation}) is refused; {}; remaining ε = {}, δ = {}",
        limits
            .iter()
            .map(|l| &l[..l.find(' ').unwrap_or(l.len())])
            .collect::<Vec<_>>()
            .join(" and "),
        Short(g.epsilon),
        Short(g.delta),
        limits.join(", "),
        Short(*remaining_epsilon),
        Short(*remaining_delta)
    )
}

/// Admits `new` after `charges` under `policy`: the composition including it, or the refusal.
/// The outer error is an accounting failure (a corrupt curve), not a refusal.
pub fn admit(
    policy: &BudgetPolicy,
    charges: &[Charge],
    new: &Charge,
) -> Result<Result<Composition, Refusal>, AccountingError> {
    let guarantee = new.guarantee;
    let cap = policy.max_epsilon_per_release;
    if guarantee.epsilon > cap * (1.0 + BUDGET_SLACK) {
        return Ok(Err(Refusal::OverCap {
            epsilon: guarantee.epsilon,
            cap,
        }));
    }
    let before = compose(charges)?;
    let mut all = charges.to_vec();
    all.push(new.clone());
    let after = compose(&all)?;
    let over = |spent: f64, total: f64| spent > total * (1.0 + BUDGET_SLACK);
    if over(after.epsilon, policy.epsilon_total) || over(after.delta, policy.delta_total) {
        return Ok(Err(Refusal::Exhausted {
            guarantee,
            epsilon_after: after.epsilon,
            delta_after: after.delta,
            epsilon_total: policy.epsilon_total,
            delta_total: policy.delta_total,
            remaining_epsilon: policy.epsilon_remaining(&before),
            remaining_delta: policy.delta_remaining(&before),
        }));
    }
    Ok(Ok(after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::accounting::{dp_sgd_curve, dp_sgd_epsilon};

    fn policy(epsilon_total: f64, delta_total: f64, cap: f64) -> BudgetPolicy {
        BudgetPolicy {
            epsilon_total,
            delta_total,
            max_epsilon_per_release: cap,
        }
    }

    fn pure(epsilon: f64) -> Charge {
        Charge {
            guarantee: PrivacyGuarantee::replace_one(epsilon, 0.0),
            rdp: None,
        }
    }

    #[test]
    fn ten_tenths_fit_a_budget_of_one_and_the_eleventh_does_not() {
        let p = policy(1.0, 0.0, 1.0);
        let mut charges = Vec::new();
        for _ in 0..10 {
            let after = admit(&p, &charges, &pure(0.1)).expect("composes");
            assert!(after.is_ok(), "{after:?}");
            charges.push(pure(0.1));
        }
        let refused = admit(&p, &charges, &pure(0.1)).expect("composes");
        assert!(
            matches!(refused, Err(Refusal::Exhausted { .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn the_cap_is_checked_before_the_totals() {
        let refused = admit(&policy(10.0, 0.0, 2.0), &[], &pure(2.5)).expect("composes");
        assert_eq!(
            refused,
            Err(Refusal::OverCap {
                epsilon: 2.5,
                cap: 2.0
            })
        );
    }

    #[test]
    fn add_remove_one_delta_is_converted_before_the_comparison() {
        // δ_total 2e-6: one add/remove-one charge of δ = 1e-6 converts to (1 + e^ε)·1e-6 > 2e-6
        // under replace-one, so it must be refused although 1e-6 < 2e-6.
        let (q, sigma, steps, delta) = (0.01, 1.0, 1000, 1e-6);
        let eps = dp_sgd_epsilon(q, sigma, steps, delta)
            .expect("valid")
            .epsilon;
        let charge = Charge {
            guarantee: PrivacyGuarantee::add_remove_one(eps, delta),
            rdp: Some(dp_sgd_curve(q, sigma, steps).expect("valid")),
        };
        let refused = admit(&policy(100.0, 2e-6, 100.0), &[], &charge).expect("composes");
        let Err(Refusal::Exhausted { delta_after, .. }) = refused else {
            panic!("expected exhaustion, got {refused:?}");
        };
        assert!(delta_after > 2e-6);
        assert!(
            admit(&policy(100.0, 1e-3, 100.0), &[], &charge)
                .expect("composes")
                .is_ok()
        );
    }
}
