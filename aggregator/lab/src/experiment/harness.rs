//! What every experiment shares: one progress bar over all its simulations, running a
//! [`SimulationConfig`] under that bar (with [`TrialCache`] when several mechanisms run on the
//! same data), and writing outputs atomically into the output folder.

use super::plot::Figure;
use anyhow::{Context, Result};
use dpagg_shared::simulation::{OrgRun, Prepared, SimulationConfig, prepare, run, run_prepared};
use dpagg_shared::util::files::atomic_write;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::Path;

/// Runs the simulation with the progress bar, adding its work to the bar's length. The error is
/// the simulation's message on one line (Fig. 6 records it as the mechanism's refusal).
pub(super) fn simulate(
    config: &SimulationConfig,
    bar: &ProgressBar,
) -> Result<Vec<OrgRun>, String> {
    if bar.length().is_some() {
        bar.inc_length((config.epsilons.len() * config.trials) as u64);
    }
    run(config, &|| bar.inc(1))
        .map(|(_, runs)| runs)
        .map_err(|e| format!("{e:#}").replace('\n', " "))
}

/// Trials prepared once per data source and reused by every simulation on it: the splits,
/// partitions and baselines do not depend on the mechanism or ε, so Fig. 3–6 prepare each
/// dataset's trials once instead of once per mechanism. Results are bit-identical to
/// [`simulate`]'s.
#[derive(Default)]
pub(super) struct TrialCache {
    prepared: Vec<Prepared>,
}

impl TrialCache {
    /// [`simulate`] on this cache's trials for `config`, preparing them on first use.
    pub(super) fn simulate(
        &mut self,
        config: &SimulationConfig,
        bar: &ProgressBar,
    ) -> Result<Vec<OrgRun>, String> {
        let one_line = |e: &dyn std::fmt::Display| format!("{e:#}").replace('\n', " ");
        let index = match self.prepared.iter().position(|p| p.matches(config)) {
            Some(i) => i,
            None => {
                self.prepared
                    .push(prepare(config).map_err(|e| one_line(&e))?);
                self.prepared.len() - 1
            }
        };
        if bar.length().is_some() {
            bar.inc_length((config.epsilons.len() * config.trials) as u64);
        }
        run_prepared(config, &self.prepared[index], &|| bar.inc(1))
            .map(|(_, runs)| runs)
            .map_err(|e| one_line(&e))
    }
}

/// The one progress bar of an experiment, empty until [`simulate`] adds work to it.
pub(super) fn progress_bar(total: Option<u64>) -> Result<ProgressBar> {
    // A count of unknown total (the paper's sweeps add theirs as they start) shows no "0/0".
    let (bar, template) = match total {
        Some(n) => (
            ProgressBar::new(n),
            "{prefix:.bold} {msg:<44} [{bar:30}] {pos}/{len} (ε, trial) {elapsed_precise}",
        ),
        None => (
            ProgressBar::no_length(),
            "{prefix:.bold} {msg:<44} {spinner} {pos} (ε, trial) done {elapsed_precise}",
        ),
    };
    bar.set_style(
        ProgressStyle::with_template(template)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .progress_chars("=> "),
    );
    bar.set_prefix("experiment");
    Ok(bar)
}

/// Creates the output folder `out` (and its parents) if missing.
pub(super) fn create_out(out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create output folder {}", out.display()))
}

/// Writes `bytes` to `dir/name` atomically.
pub(super) fn write(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = dir.join(name);
    atomic_write(&path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

/// Writes `fig` as `dir/stem.svg` and `dir/stem.png`.
pub(super) fn write_figure(dir: &Path, stem: &str, fig: &Figure) -> Result<()> {
    write(dir, &format!("{stem}.svg"), fig.svg()?.as_bytes())?;
    write(dir, &format!("{stem}.png"), &fig.png()?)
}
