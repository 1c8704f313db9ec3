//! The wide scenarios' lines of `experiment utility` (tables written with public bounds only,
//! their learners under the agreed map): one line per claim, each ending in `yes` or `NO`.
//!
//! - no wide cell is significantly below the tuned local model (every 95 % interval of
//!   final − local reaches 0);
//! - Breast Cancer (bounds only, 10 organisations, ε = 1): mirror averaging ≥ 0.80;
//! - digits (bounds only, 10 organisations, ε = 1): mirror averaging ≥ 0.78; with 40 own rows,
//!   final − tuned local ≥ +3 points;
//! - the EHR-like table at d = 100 (9 × 1,000 rows, 100 own, ε = 1): final − local ≥ +3 points,
//!   and mirror averaging within 5 points of the trusted curator.

use super::scenarios::{HAND_WRITTEN, SCENARIOS};
use super::utility::{Cell, column_of};
use dpagg_shared::aggregate::select::Candidate;
use std::fmt::Write as _;

fn yes(ok: bool) -> &'static str {
    if ok { "yes" } else { "NO" }
}

/// Appends the lines for the wide scenarios among `cells` (none when the run had none).
pub(super) fn must_shows(s: &mut String, cells: &[Cell]) {
    let wide: Vec<&Cell> = cells
        .iter()
        .filter(|c| SCENARIOS[HAND_WRITTEN..].contains(&c.scenario))
        .collect();
    if let Some(w) = wide.iter().min_by(|a, b| {
        a.final_minus_local
            .high
            .total_cmp(&b.final_minus_local.high)
    }) {
        let _ = writeln!(
            s,
            "wide tables: the final model is significantly below tuned local in no cell (lowest upper 95 % bound {:+.2} points, {} at ε = {}): {}",
            100.0 * w.final_minus_local.high,
            w.scenario,
            super::figures::eps(w.epsilon),
            yes(w.final_minus_local.high >= -1e-12)
        );
    }
    let cell = |name: &str| wide.iter().find(|c| c.scenario == name && c.epsilon == 1.0);
    let mirror = column_of(Candidate::MirrorAveraging);
    if let Some(c) = cell("breast-cancer-bounds") {
        let a = c.columns[mirror].mean;
        let _ = writeln!(
            s,
            "breast-cancer-bounds at ε = 1: mirror averaging {a:.3} (must be ≥ 0.80: {})",
            yes(a >= 0.80)
        );
    }
    if let Some(c) = cell("digits-bounds") {
        let a = c.columns[mirror].mean;
        let _ = writeln!(
            s,
            "digits-bounds at ε = 1: mirror averaging {a:.3} (must be ≥ 0.78: {})",
            yes(a >= 0.78)
        );
    }
    if let Some(c) = cell("digits-bounds-40-own") {
        let g = c.final_minus_local.mean;
        let _ = writeln!(
            s,
            "digits-bounds-40-own at ε = 1: final − local {:+.2} points (must be ≥ +3: {})",
            100.0 * g,
            yes(g >= 0.03)
        );
    }
    if let Some(c) = cell("ehr-d100") {
        let g = c.final_minus_local.mean;
        let curator = c.columns[c.columns.len() - 2].mean;
        let gap = curator - c.columns[mirror].mean;
        let _ = writeln!(
            s,
            "ehr-d100 at ε = 1: final − local {:+.2} points (must be ≥ +3: {}); trusted curator − mirror averaging {:+.2} points (must be ≤ 5: {})",
            100.0 * g,
            yes(g >= 0.03),
            100.0 * gap,
            yes(gap <= 0.05)
        );
    }
}
