//! What the nodes of `experiment utility` release: the default (objective perturbation, ε-DP,
//! λ = auto) or the mechanism and δ of `--mechanism` / `--delta`, e.g. the proven `langevin` chain
//! (the final model's must-shows with nodes releasing it).

use super::args::UtilityArgs;
use anyhow::{Context, Result};
use dpagg_shared::data::dataset::Dataset;
use dpagg_shared::learn::classifier::LinearClassifier;
use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};
use dpagg_shared::privacy::noise::NoiseSource;

/// What every node releases: a mechanism at λ = auto and a δ.
#[derive(Debug, Clone, Copy)]
pub(super) struct NodeLearner {
    kind: MechanismKind,
    delta: f64,
}

impl Default for NodeLearner {
    /// Objective perturbation, ε-DP: the node's default.
    fn default() -> Self {
        NodeLearner {
            kind: MechanismKind::ObjectivePerturbation,
            delta: 0.0,
        }
    }
}

impl NodeLearner {
    /// `--mechanism` and `--delta`, checked once before any trial runs.
    pub(super) fn of(args: &UtilityArgs) -> Result<Self> {
        let kind = MechanismKind::parse(&args.mechanism)
            .map_err(|e| anyhow::anyhow!("--mechanism: {e}"))?;
        let learner = NodeLearner {
            kind,
            delta: args.delta,
        };
        let first = args.sweep.epsilons.first().copied().unwrap_or(1.0);
        kind.build(first, args.delta, Lambda::Auto)
            .with_context(|| format!("--mechanism {} --delta {}", kind.name(), args.delta))?;
        Ok(learner)
    }

    /// The release at `epsilon` on `data`, with seeded noise.
    pub(super) fn release(
        self,
        epsilon: f64,
        data: &Dataset,
        seed: u64,
    ) -> Result<LinearClassifier> {
        let m = self.kind.build(epsilon, self.delta, Lambda::Auto)?;
        Ok(m.release(data, &mut NoiseSource::seeded(seed))?.classifier)
    }

    /// How the report names it, e.g. `objective-perturbation (ε-DP, λ = auto)`.
    pub(super) fn describe(self) -> String {
        if self.delta > 0.0 {
            format!("{} ((ε, δ = {:e}), λ = auto)", self.kind.name(), self.delta)
        } else {
            format!("{} (ε-DP, λ = auto)", self.kind.name())
        }
    }
}
