//! The traps a schema can set for its own data, each found with its fix.
//!
//! A schema can be valid and still waste a feature or the whole map: a `log1p` feature whose
//! `center` is in raw units (200 instead of ln 201) standardises every value to about −190, so
//! each row is projected onto the ball along that one feature and the others are squeezed to
//! nothing. `dpagg-node check` prints every finding below (and `--strict` fails on any); the
//! loader logs the data findings at `warn` level, so a node or an aggregator says so too.
//!
//! - [`schema_findings`] read the schema alone (public): bounds still observed in the data
//!   (`schema init`'s placeholders), a centre outside the transformed bounds.
//! - [`data_findings`] read a [`LoadReport`] — counts, per-feature flags and means of the local
//!   file, never single values, and only ever shown to the operator: rows alike (below), a
//!   feature constant after the map, one whose values standardise far from its centre (|z| > 5
//!   on many rows: a wrong centre or scale), many values clipped, almost all missing, any value
//!   more than [`IMPLAUSIBLE`] widths of its bounds outside them (a unit error or a corrupt
//!   cell: 1e300 in a feature bounded by 10).
//!
//! # Rows alike
//!
//! `alike` = ‖mean row‖² / mean ‖row‖² over the mapped rows' columns before the intercept
//! ([`crate::data::csv::rows::alike`]) is 1 when every row is the same point and near 0 when the
//! rows are centred on the origin; 1 − alike is the share of the rows' squared norm that varies
//! from row to row, which is all a learner can use, while its privacy noise is calibrated to
//! rows of norm up to 1. Non-negative mostly-zero or skewed features with bounds [0, hi] put
//! nearly every value at z ≈ −3, so the rows are long vectors in nearly one direction: alike
//! near 1. Above [`ALIKE`] = 0.8 (less than a fifth of the rows' squared norm varies) it is a
//! trap in ball mode, naming the features whose values sit furthest from their centres (the
//! largest |z̄|), with the fix: a declared `typical` (what `schema init` proposes), `center` and
//! `scale`, or an agreed map. Where the threshold sits was read off the wide tables measured in
//! EXPERIMENTS.md ("Wide tables with public bounds only"): Breast Cancer's bounds-only schema
//! (`data/breast_cancer.bounds.toml`, 0.84) and the EHR-like tables of [`crate::data::ehr`]
//! (0.84 to 0.88) are where private learners under the schema's map know least (mirror
//! averaging 0.68 and 0.56 at ε = 1, against 0.93 and 0.67 under an agreed map), so they are
//! traps; Diabetes' bounds-only schema (0.77), digits' (0.59, whose learners suffer from its 64
//! columns, not from alike rows) and docs/own-data.md's example (0.73) are not, nor is any
//! hand-written schema (below 0.5). Mostly-zero counts with bounds [0, hi] give 0.95 and more
//! (0.97 in this module's test), and under 0.3 once their zeros are declared typical. The paper
//! map (`mode = "paper"`, kept for the paper's experiments) is not judged: its remedies are ball
//! mode's keys.
//!
//! Rows projected onto the ball are not a trap by themselves: the default map projects most rows
//! by design, so that the rows use the whole ball (`schema/bounds_rule.rs`; `check` prints the
//! count). What makes projection harmful is one feature far from its centre, which the |z| > 5
//! finding catches.

use super::csv::LoadReport;
use super::csv::rows::{FAR, IMPLAUSIBLE};
use super::normalise::{MapMode, Transform};
use super::schema::{FeatureSpec, Schema};
use std::fmt;

/// Share of a feature's values far from its centre (|z| > [`FAR`]) above which it is a trap.
pub const SATURATED_SHARE: f64 = 0.25;
/// Share of a feature's values above which clipping is a trap.
pub const CLIPPED_SHARE: f64 = 0.05;
/// Share of missing values above which a feature is "almost all missing".
pub const MISSING_SHARE: f64 = 0.9;
/// Rows alike ([`LoadReport::alike`]) above which the map is a trap (ball mode; module docs).
pub const ALIKE: f64 = 0.8;
/// How many features the rows-alike finding names.
const ALIKE_NAMED: usize = 3;

/// One trap: the feature (or `None` for the schema as a whole), what is wrong, and the fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The feature concerned.
    pub feature: Option<String>,
    /// What is wrong, in one sentence.
    pub problem: String,
    /// What to do.
    pub fix: String,
    /// True when the finding is about the schema's own centres and scales (a centre outside its
    /// bounds, values far from their centre, rows alike): an agreed map, which replaces them,
    /// is judged on its own mapped rows instead ([`agreed_map_findings`]).
    pub follows_map: bool,
}

impl Finding {
    /// The same finding, marked as one about the schema's own centres and scales.
    fn about_map(mut self) -> Self {
        self.follows_map = true;
        self
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.feature {
            write!(f, "feature `{name}`: ")?;
        }
        write!(f, "{}; fix: {}", self.problem, self.fix)
    }
}

fn finding(f: &FeatureSpec, problem: String, fix: impl Into<String>) -> Finding {
    Finding {
        feature: Some(f.name.clone()),
        problem,
        fix: fix.into(),
        follows_map: false,
    }
}

/// Every finding of `dpagg-node check`: the schema's ([`schema_findings`]) and the file's
/// ([`data_findings`]). `check --strict` fails on any, and a node publishes no learner over
/// any unless its operator accepts them (`policy.accept_traps`).
pub fn findings(schema: &Schema, report: &LoadReport) -> Vec<Finding> {
    let mut out = schema_findings(schema);
    out.extend(data_findings(schema, report));
    out
}

/// The findings that still hold for rows mapped by an agreed map: those of [`findings`] that do
/// not follow the schema's own centres and scales, and rows alike measured on the mapped rows
/// (`alike`, over their columns before the intercept).
pub fn agreed_map_findings(all: &[Finding], alike: f64) -> Vec<Finding> {
    let mut out: Vec<Finding> = all.iter().filter(|f| !f.follows_map).cloned().collect();
    if alike > ALIKE {
        out.push(Finding {
            feature: None,
            problem: format!(
                "rows alike under the agreed map: {alike:.2} (above {ALIKE}): the mapped rows \
                 point nearly the same way"
            ),
            fix: "ask the aggregator for a map derived from rows like this node's (more rows, \
                  or more components)"
                .into(),
            follows_map: true,
        });
    }
    out
}

/// Findings from the schema alone.
pub fn schema_findings(schema: &Schema) -> Vec<Finding> {
    let mut out = Vec::new();
    let observed = schema.observed_features();
    if !observed.is_empty() {
        out.push(Finding {
            feature: None,
            problem: format!(
                "{} feature(s) still have bounds observed in the data (`bounds = \"observed\"`, \
                 from `schema init`): {}; they leak extreme values, so nodes refuse to release",
                observed.len(),
                observed.join(", ")
            ),
            fix: "replace their lo and hi with public bounds (a reference range, the \
                  instrument's range) and delete the `bounds` lines"
                .into(),
            follows_map: false,
        });
    }
    if schema.mode() == MapMode::Ball {
        out.extend(schema.features.iter().filter_map(centre_outside));
    }
    out
}

/// A centre outside [T(lo), T(hi)]: usually a centre written in raw units.
fn centre_outside(f: &FeatureSpec) -> Option<Finding> {
    let center = f.center?;
    let (a, b) = (f.transform(f.lo), f.transform(f.hi));
    if (a..=b).contains(&center) {
        return None;
    }
    let transform = f.transform.unwrap_or_default();
    let fix = match transform {
        Transform::Log1p => format!(
            "center and scale are in transformed units, ln(1 + v/unit): a raw centre of {center} \
             is {:.6}; or delete center and scale to derive both from the bounds",
            f.transform(center.clamp(f.lo, f.hi))
        ),
        Transform::Identity => {
            "give a centre within the bounds, or delete center and scale to derive both from \
             the bounds"
                .to_owned()
        }
    };
    Some(
        finding(
            f,
            format!(
                "center {center} is outside its transformed bounds [{}, {}]",
                short(a),
                short(b)
            ),
            fix,
        )
        .about_map(),
    )
}

/// A number with at most 6 significant digits.
fn short(v: f64) -> String {
    format!("{}", (v * 1e6).round() / 1e6)
}

/// Findings from a load of the local file (counts, flags and means, shown to its operator only).
pub fn data_findings(schema: &Schema, report: &LoadReport) -> Vec<Finding> {
    let rows = report.rows.max(1) as f64;
    let mut out: Vec<Finding> = rows_alike(schema, report).into_iter().collect();
    for (j, f) in schema.features.iter().enumerate() {
        let missing = report.missing.get(j).map_or(0, |m| m.1);
        let clipped = report.clipped.get(j).map_or(0, |c| c.1);
        let saturated = report.saturated.get(j).map_or(0, |s| s.1);
        let share = |n: usize| 100.0 * n as f64 / rows;
        if missing as f64 > MISSING_SHARE * rows {
            out.push(finding(
                f,
                format!("{:.0} % of its values are missing", share(missing)),
                "drop the feature, or check that its missing markers are right",
            ));
        } else if report.constant.contains(&f.name) {
            out.push(finding(
                f,
                "every value maps to the same point (the column is constant in this file, or \
                 all its values are clipped to one bound), so it carries no information"
                    .into(),
                "check its bounds, or drop the feature if it is constant everywhere",
            ));
        }
        let implausible = report.implausible.get(j).map_or(0, |c| c.1);
        if implausible > 0 {
            out.push(finding(
                f,
                format!(
                    "{implausible} value(s) lie more than {IMPLAUSIBLE} widths of [{}, {}] outside \
                     it: not an extreme patient but a unit error or a corrupt cell (clipped, and \
                     counted apart)",
                    f.lo, f.hi
                ),
                "check the column's unit and those cells in the export (fix or blank them); \
                 widen the bounds only if such values are real",
            ));
        }
        if clipped as f64 > CLIPPED_SHARE * rows {
            out.push(finding(
                f,
                format!(
                    "{:.0} % of its values lie outside [{}, {}] and were clipped",
                    share(clipped),
                    f.lo,
                    f.hi
                ),
                "widen the bounds (public ones) if such values are real, or check the unit",
            ));
        }
        if saturated as f64 > SATURATED_SHARE * rows {
            out.push(
                finding(
                    f,
                    format!(
                        "{:.0} % of its values standardise more than {FAR} scales from its \
                         centre, so rows are projected along it and the other features are \
                         squeezed",
                        share(saturated)
                    ),
                    "check its center and scale (in transformed units for log1p), or delete \
                     both to derive them from the bounds",
                )
                .about_map(),
            );
        }
    }
    out.extend(unlisted(report));
    out
}

/// Categorical columns with more than [`CLIPPED_SHARE`] of their cells not among their
/// categories: a misspelled or missing category list, whose rows all sit at the centre.
fn unlisted(report: &LoadReport) -> impl Iterator<Item = Finding> + '_ {
    let rows = report.rows.max(1) as f64;
    (report.unlisted.iter())
        .filter(move |u| u.count as f64 > CLIPPED_SHARE * rows)
        .map(move |u| Finding {
            feature: Some(u.column.clone()),
            problem: format!(
                "{:.0} % of its cells are not among its categories (first {:?} on line {}), \
                 so those rows sit at the feature's centre",
                100.0 * u.count as f64 / rows,
                u.first.1,
                u.first.0
            ),
            fix: "add the categories the column really holds (from a public code list) or \
                  fix the export's spelling"
                .into(),
            follows_map: false,
        })
}

/// Rows alike above [`ALIKE`] in ball mode, naming the features whose values sit furthest from
/// their centres on average (largest |z̄|).
fn rows_alike(schema: &Schema, report: &LoadReport) -> Option<Finding> {
    if schema.mode() != MapMode::Ball || report.alike <= ALIKE {
        return None;
    }
    let mut far: Vec<&(String, f64)> = report.mean_z.iter().collect();
    far.sort_by(|a, b| b.1.abs().total_cmp(&a.1.abs()));
    let named: Vec<String> = far
        .iter()
        .take(ALIKE_NAMED)
        .map(|(name, z)| format!("`{name}` (mean z {z:.1})"))
        .collect();
    Some(Finding {
        feature: None,
        problem: format!(
            "rows alike: {:.2} (above {ALIKE}): the mapped rows point nearly the same way, so \
             the private learners see their common offset and little else; furthest from their \
             centres: {}",
            report.alike,
            named.join(", ")
        ),
        fix: "accept the transforms and typical values `dpagg-node schema init` proposes (the \
              commented `transform = \"log1p\"` and `typical = 0.0` lines), or declare \
              `typical` or `center` and `scale` from public references, or use an agreed map \
              from the aggregator"
            .into(),
        follows_map: true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::csv::read_csv;

    const SCHEMA: &str = r#"
name = "trap"
[label]
column = "y"
positive = "1"
negative = "0"
[[features]]
name = "insulin"
lo = 0
hi = 900
transform = "log1p"
center = 200
scale = 1
[[features]]
name = "age"
lo = 20
hi = 90
"#;

    fn rows(n: usize) -> String {
        let mut s = String::from("insulin,age,y\n");
        for i in 0..n {
            s.push_str(&format!("{},{},{}\n", 20 + 3 * i, 30 + i % 40, i % 2));
        }
        s
    }

    #[test]
    fn a_raw_unit_centre_is_found_with_its_transformed_value() {
        let schema = Schema::from_toml_str(SCHEMA, "trap.toml").expect("valid");
        let found = schema_findings(&schema);
        assert_eq!(found.len(), 1, "{found:?}");
        let msg = found[0].to_string();
        assert!(
            msg.starts_with("feature `insulin`: center 200 is outside"),
            "{msg}"
        );
        assert!(msg.contains("5.303305"), "ln 201 = 5.303305: {msg}");
        let (_, report) = read_csv(rows(200).as_bytes(), "d.csv", &schema).expect("loads");
        let data = data_findings(&schema, &report);
        assert!(
            data.iter().any(|f| f.feature.as_deref() == Some("insulin")
                && f.problem.contains("scales from its centre")),
            "{data:?}"
        );
        // The fixed schema (centre and scale derived from the bounds) has no finding.
        let fixed = SCHEMA.replace("center = 200\nscale = 1\n", "");
        let schema = Schema::from_toml_str(&fixed, "ok.toml").expect("valid");
        assert!(schema_findings(&schema).is_empty());
        let (_, report) = read_csv(rows(200).as_bytes(), "d.csv", &schema).expect("loads");
        assert_eq!(data_findings(&schema, &report), vec![]);
    }

    #[test]
    fn constant_clipped_and_missing_features_are_found() {
        let schema = Schema::from_toml_str(
            &SCHEMA.replace("center = 200\nscale = 1\n", "missing = \"NA\"\n"),
            "x.toml",
        )
        .expect("valid");
        // age is always 95: clipped to 90, so constant; insulin is mostly NA.
        let mut text = String::from("insulin,age,y\n");
        for i in 0..40 {
            let insulin = if i < 37 {
                "NA".to_owned()
            } else {
                i.to_string()
            };
            text.push_str(&format!("{insulin},95,{}\n", i % 2));
        }
        let (_, report) = read_csv(text.as_bytes(), "d.csv", &schema).expect("loads");
        let found: Vec<String> = data_findings(&schema, &report)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            found
                .iter()
                .any(|m| m.contains("`insulin`: 92 % of its values are missing")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|m| m.contains("`age`: every value maps to the same point")),
            "{found:?}"
        );
        assert!(
            found
                .iter()
                .any(|m| m.contains("`age`: 100 % of its values lie outside")),
            "{found:?}"
        );
    }

    #[test]
    fn an_implausible_value_is_a_trap_counted_apart_from_clipping() {
        let schema =
            Schema::from_toml_str(&SCHEMA.replace("center = 200\nscale = 1\n", ""), "x.toml")
                .expect("valid");
        let mut text = rows(200);
        text.push_str("1e300,95,1\n");
        let (_, report) = read_csv(text.as_bytes(), "d.csv", &schema).expect("loads");
        assert_eq!(report.implausible[0], ("insulin".to_owned(), 1));
        assert_eq!(
            report.implausible[1],
            ("age".to_owned(), 0),
            "95 is near 90"
        );
        assert_eq!(report.clipped[0].1, 1, "clipped too");
        let found = data_findings(&schema, &report);
        assert_eq!(found.len(), 1, "{found:?}");
        let msg = found[0].to_string();
        assert!(
            msg.starts_with("feature `insulin`: 1 value(s) lie more than 10 widths of [0, 900]"),
            "{msg}"
        );
    }

    /// `p` count columns, 0 on about 70 % of `n` rows, else 1 to 5; bounds [0, 20].
    fn counts(p: usize, n: usize, accepted: bool) -> (Schema, String) {
        let mut schema = String::from(
            "name = \"counts\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n",
        );
        for j in 0..p {
            schema.push_str(&format!(
                "[[features]]\nname = \"c{j}\"\nlo = 0.0\nhi = 20.0\n"
            ));
            if accepted {
                schema.push_str("transform = \"log1p\"\ntypical = 0.0\n");
            }
        }
        let header: Vec<String> = (0..p).map(|j| format!("c{j}")).collect();
        let mut text = format!("{},y\n", header.join(","));
        for i in 0..n {
            for j in 0..p {
                let v = if (i * 31 + j * 17) % 10 < 7 {
                    0
                } else {
                    (i * (j + 1)) % 5 + 1
                };
                text.push_str(&format!("{v},"));
            }
            text.push_str(&format!("{}\n", i % 2));
        }
        (
            Schema::from_toml_str(&schema, "counts.toml").expect("valid"),
            text,
        )
    }

    #[test]
    fn zero_heavy_rows_are_alike_until_their_zeros_are_typical() {
        let (schema, text) = counts(12, 400, false);
        let (_, report) = read_csv(text.as_bytes(), "d.csv", &schema).expect("loads");
        assert!(report.alike > 0.95, "{}", report.alike);
        let found = data_findings(&schema, &report);
        assert_eq!(found.len(), 1, "{found:?}");
        let msg = found[0].to_string();
        assert!(msg.starts_with("rows alike: 0.9"), "{msg}");
        assert!(msg.contains("furthest from their centres: `c"), "{msg}");
        assert!(msg.contains("(mean z -2.") && msg.matches("mean z").count() == ALIKE_NAMED);
        assert!(
            msg.contains("fix: accept the transforms and typical values"),
            "{msg}"
        );
        // The paper map is not judged.
        let (_, paper) = read_csv(text.as_bytes(), "d.csv", &schema.paper_map()).expect("loads");
        assert!(data_findings(&schema.paper_map(), &paper).is_empty());
        // With the zeros declared typical (what schema init proposes) the rows differ.
        let (schema, text) = counts(12, 400, true);
        let (_, report) = read_csv(text.as_bytes(), "d.csv", &schema).expect("loads");
        assert!(report.alike < 0.3, "{}", report.alike);
        assert_eq!(data_findings(&schema, &report), vec![]);
    }

    #[test]
    fn breast_cancer_bounds_only_is_a_trap_and_diabetes_and_digits_are_not() {
        use crate::data::bundled::Bundled;
        let bounds = [
            (
                Bundled::Diabetes,
                include_str!("../../../data/diabetes.bounds.toml"),
                0.77,
                false,
            ),
            (
                Bundled::BreastCancer,
                include_str!("../../../data/breast_cancer.bounds.toml"),
                0.84,
                true,
            ),
        ];
        for (b, text, documented, trap) in bounds {
            let schema = Schema::from_toml_str(text, "bounds.toml").expect("valid");
            let (_, report) = b.load_with(&schema);
            assert_eq!(report.alike > ALIKE, trap, "{b:?}: {}", report.alike);
            assert!(
                (report.alike - documented).abs() < 0.005,
                "{b:?}: {}",
                report.alike
            );
            let (_, hand_written) = b.load();
            assert!(hand_written.alike < 0.5, "{b:?}: {}", hand_written.alike);
        }
        let schema = Schema::from_toml_str(
            include_str!("../../../data/digits.bounds.toml"),
            "digits.bounds.toml",
        )
        .expect("valid");
        let csv = include_str!("../../../data/digits.csv");
        let (_, report) = read_csv(csv.as_bytes(), "digits.csv", &schema).expect("loads");
        assert!((report.alike - 0.59).abs() < 0.005, "{}", report.alike);
    }
}
