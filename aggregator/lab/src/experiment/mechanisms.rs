//! The mechanism grid of Fig. 6: every mechanism dpagg ships, at equal ε on each dataset, as the
//! paper's setup runs them (objective perturbation as published: CMS 2011 Algorithm 2 and KST
//! 2012; output perturbation as published: CMS 2011 Algorithm 1 with f64 noise, kind
//! `output-perturbation-cms2011`, which nodes do not offer — their `output-perturbation` snaps its
//! noise (Mironov 2012) and is not what this figure shows; λ = 0.01; the paper map).
//! `experiment learners` compares the default learners.
//!
//! Each configuration runs at every ε of [`MECHANISM_EPSILONS`]; an ε a mechanism refuses is
//! recorded with its reason instead of failing the experiment. DP-SGD, whose guarantee is under
//! add/remove-one, is also run at (ε/2, δ/(1 + e^{ε/2})), which is (ε, δ) under replace-one by
//! group privacy, so that it is compared with the others at the same guarantee. A new mechanism
//! of the figure is a new [`MechanismSpec`] in [`MECHANISMS`]; a registered mechanism the figure
//! shows through its published form is listed in this file's test (which fails on one that is
//! in neither).

use super::figures::{self, MechanismPoint};
use super::harness::TrialCache;
use super::setups::{Data, Setup};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use dpagg_shared::privacy::mechanism::MechanismKind;
use dpagg_shared::simulation::{Combiners, SimulationConfig};
use indicatif::ProgressBar;

/// δ of every (ε, δ) mechanism in the mechanism figure.
const DELTA: f64 = 1e-5;

/// One mechanism configuration of Fig. 6.
struct MechanismSpec {
    label: &'static str,
    kind: MechanismKind,
    delta: f64,
    neighbours: &'static str,
    /// DP-SGD run at (ε/2, δ/(1 + e^{ε/2})) so that its replace-one guarantee is (ε, δ).
    replace_one: bool,
}

const MECHANISMS: &[MechanismSpec] = &[
    MechanismSpec {
        label: "objective perturbation, ε-DP",
        kind: MechanismKind::ObjectivePerturbationCms2011,
        delta: 0.0,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "objective perturbation, (ε, δ)",
        kind: MechanismKind::ObjectivePerturbationCms2011,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "output perturbation, ε-DP",
        kind: MechanismKind::OutputPerturbationCms2011,
        delta: 0.0,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "DP-SGD, ε add/remove-one",
        kind: MechanismKind::DpSgd,
        delta: DELTA,
        neighbours: "add/remove-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "DP-SGD at replace-one ε",
        kind: MechanismKind::DpSgd,
        delta: DELTA,
        neighbours: "replace-one (group privacy)",
        replace_one: true,
    },
    MechanismSpec {
        label: "DP-SGD, BST 2014",
        kind: MechanismKind::DpSgdBst,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "Gibbs posterior (proven)",
        kind: MechanismKind::GibbsPosterior,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "Gibbs posterior, unproven sampler",
        kind: MechanismKind::GibbsPosteriorUnproven,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
    MechanismSpec {
        label: "Langevin chain (noisy GD, proven)",
        kind: MechanismKind::Langevin,
        delta: DELTA,
        neighbours: "replace-one",
        replace_one: false,
    },
];

/// The ε of the figure's x-axis.
const MECHANISM_EPSILONS: [f64; 4] = [0.5, 1.0, 2.0, 5.0];

impl MechanismSpec {
    /// The ε and δ to run the mechanism with for a guarantee of ε (and `self.delta`).
    fn run_at(&self, epsilon: f64) -> (f64, f64) {
        if self.replace_one {
            // Group privacy: add/remove-one (ε', δ') gives replace-one (2ε', (1 + e^ε')δ').
            let run = PrivacyGuarantee::replace_one(epsilon, self.delta).add_remove_one_within();
            (run.epsilon, run.delta)
        } else {
            (epsilon, self.delta)
        }
    }
}

/// The simulation of one configuration of the figure: it reports mirror averaging only, so the
/// organisations fit no other combiner (same bits for mirror averaging as a full simulation's).
fn fig6_config(
    setup: &Setup,
    data: Data,
    kind: MechanismKind,
    epsilons: Vec<f64>,
    delta: f64,
) -> SimulationConfig {
    SimulationConfig {
        combiners: Combiners::PaperOnly,
        ..setup.config(data, kind, epsilons, delta)
    }
}

/// Every configuration of [`MECHANISMS`] at every ε of [`MECHANISM_EPSILONS`] on `data`.
pub(super) fn mechanism_points(
    setup: &Setup,
    data: Data,
    cache: &mut TrialCache,
    bar: &ProgressBar,
) -> Vec<MechanismPoint> {
    let mut out = Vec::new();
    for (style, m) in MECHANISMS.iter().enumerate() {
        bar.set_message(format!("Fig. 6 {}: {}", data.name(), m.label));
        let point = |epsilon: f64, run_epsilon: f64, run_delta: f64, outcome| MechanismPoint {
            dataset: data.name().into(),
            label: m.label.into(),
            style,
            neighbours: m.neighbours,
            epsilon,
            delta: m.delta,
            run_epsilon,
            run_delta,
            outcome,
        };
        // All ε at once when the mechanism accepts them; one at a time to find which it refuses.
        let all = if m.replace_one {
            None
        } else {
            cache
                .simulate(
                    &fig6_config(setup, data, m.kind, MECHANISM_EPSILONS.to_vec(), m.delta),
                    bar,
                )
                .ok()
        };
        if let Some(runs) = all {
            for r in figures::rows(&runs) {
                out.push(point(r.epsilon, r.epsilon, m.delta, Ok(r)));
            }
            continue;
        }
        for &e in &MECHANISM_EPSILONS {
            let (run_e, run_d) = m.run_at(e);
            let outcome = cache
                .simulate(&fig6_config(setup, data, m.kind, vec![run_e], run_d), bar)
                .and_then(|runs| {
                    figures::rows(&runs)
                        .into_iter()
                        .next()
                        .ok_or_else(|| "no runs".to_owned())
                });
            out.push(point(e, run_e, run_d, outcome));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registered mechanisms the figure shows through another one, their published form (the
    /// figure reproduces the paper's setup).
    const SHOWN_AS: &[(&str, &str)] = &[
        ("objective-perturbation", "objective-perturbation-cms2011"),
        ("output-perturbation", "output-perturbation-cms2011"),
    ];

    /// Every registered mechanism is in the figure or shown through its published form, and
    /// each row's neighbour relation is its mechanism's (or group privacy's, for the DP-SGD row
    /// run at a replace-one guarantee).
    #[test]
    fn every_registered_mechanism_is_in_the_figure() {
        for kind in MechanismKind::all() {
            let shown = MECHANISMS.iter().any(|m| m.kind == kind);
            let through = SHOWN_AS.iter().find(|(name, _)| *name == kind.name());
            assert!(
                shown != through.is_some(),
                "{kind}: in the figure or in SHOWN_AS"
            );
            if let Some((_, published)) = through {
                assert!(MECHANISMS.iter().any(|m| m.kind.name() == *published));
            }
        }
        for m in MECHANISMS {
            let registered = m.kind.registration().neighbours.to_string();
            if m.replace_one {
                assert_eq!(m.neighbours, "replace-one (group privacy)");
            } else {
                assert_eq!(m.neighbours, registered, "{}", m.label);
            }
        }
    }
}
