//! The two per-record maps of a raw row into the unit ball, chosen by the schema's
//! `[normalisation] mode`. Both are fixed functions of one record and of public constants from
//! the schema, so replacing one raw record changes exactly one mapped row and every mechanism's
//! replace-one guarantee carries over (invariant 2: nothing here is a statistic of the data).
//!
//! A *missing* value — NaN, which the CSV loader passes for a cell matching a declared missing
//! marker, or a number equal to one of the feature's numeric markers — is never clipped: it
//! maps to the feature's centre and is counted apart.
//!
//! # `paper` (Minami et al. 2015, §5's map; `[normalisation] mode = "paper"`)
//!
//! 1. clip v to the declared [lo, hi] (counted); a missing value is the middle of [lo, hi];
//! 2. map affinely onto [−1, 1]: 2(v − lo)/(hi − lo) − 1;
//! 3. append a constant 1 when the schema has an intercept;
//! 4. divide every component by √dim, so ‖x‖ ≤ 1.
//!
//! # `ball` (the default)
//!
//! For feature j of a raw record v:
//! 1. a missing value gives z = 0 (the centre);
//! 2. otherwise clip v to [lo, hi] (counted), t = T(v) with T the identity or
//!    `log1p`: ln(1 + v/unit);
//! 3. z = (t − center)/scale, with `center` and `scale` declared and cited in the schema, or,
//!    when a feature declares neither, from its bounds by the public rule of
//!    [`super::schema::bounds_rule`].
//!
//! With a `[subspace]` (an agreed map's k public directions P, [`super::agreed_map`]) the
//! features' z become u = P z, k values instead of p. Then for the row: u = row_scale · z (or
//! row_scale · P z; default row_scale = 2/√p for p features), append the intercept constant a
//! (`intercept_value`, default 0.2) when the schema has an intercept, and if ‖x‖ > 1 project x
//! onto the unit ball, x ← x/‖x‖ (counted). Projection keeps the row's direction; centred
//! features and a small intercept constant give the learners rows whose signal uses the whole
//! ball instead of a common offset.
//!
//! Both maps end with the same guard: rounding can leave the computed norm a few ulps above 1,
//! so the row is shrunk until [`crate::Dataset::max_row_norm`] computes at most 1.

use super::schema::FeatureSpec;
use serde::{Deserialize, Serialize};

/// Which map a schema uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MapMode {
    /// Clip, map to [−1, 1], append 1, divide by √dim (Minami et al. 2015, §5).
    Paper,
    /// Transform, centre and scale with public constants, then project onto the unit ball.
    #[default]
    Ball,
}

/// The per-feature transform of ball mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transform {
    /// T(v) = v.
    #[default]
    Identity,
    /// T(v) = ln(1 + v/unit).
    Log1p,
}

/// The schema's `[normalisation]` table (absent: `ball` with every default).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Normalisation {
    /// `paper` or `ball` (default `ball`).
    #[serde(default)]
    pub mode: MapMode,
    /// Ball mode: the factor applied to every standardised feature (default 2/√p).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_scale: Option<f64>,
    /// Ball mode: the constant appended for the intercept, in (0, 1) (default 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intercept_value: Option<f64>,
}

/// Ball mode: k public directions in the space of standardised features (an agreed map's
/// subspace). A row's z (one per feature) becomes u = P z, u_i = ⟨P_i, z⟩, before the row scale;
/// P is public and fixed before any row is read, so the map stays per record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subspace {
    /// P, one row of length p (the number of features) per component.
    pub directions: Vec<Vec<f64>>,
}

impl Subspace {
    /// k, the number of components.
    pub fn components(&self) -> usize {
        self.directions.len()
    }

    /// u = P z into `out` (length k).
    fn project(&self, z: &[f64], out: &mut [f64]) {
        for (o, d) in out.iter_mut().zip(&self.directions) {
            *o = d.iter().zip(z).map(|(a, b)| a * b).sum();
        }
    }
}

/// The intercept constant of ball mode unless the schema says otherwise.
pub const DEFAULT_INTERCEPT_VALUE: f64 = 0.2;
/// κ of the default row scale κ/√p.
pub const DEFAULT_ROW_SCALE_KAPPA: f64 = 2.0;

/// What normalising one row did, in counts only (never values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowReport {
    /// Values clipped to their declared bounds.
    pub clipped: usize,
    /// Missing values (NaN, or equal to one of the feature's numeric markers).
    pub missing: usize,
    /// Whether the row was projected onto the unit ball (ball mode).
    pub projected: bool,
}

/// The constants of the ball map, resolved from the schema.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BallRow {
    pub(crate) row_scale: f64,
    pub(crate) intercept: Option<f64>,
}

/// Clips `v` to [lo, hi]: the value and whether it changed.
fn clip(v: f64, f: &FeatureSpec) -> (f64, bool) {
    if v < f.lo {
        (f.lo, true)
    } else if v > f.hi {
        (f.hi, true)
    } else {
        (v, false)
    }
}

/// The paper map of `raw` into `out` (see the module documentation).
pub(crate) fn paper_row(
    features: &[FeatureSpec],
    intercept: bool,
    raw: &[f64],
    out: &mut [f64],
) -> RowReport {
    let dim = out.len();
    let scale = 1.0 / (dim as f64).sqrt();
    let mut report = RowReport::default();
    for ((f, &v), o) in features.iter().zip(raw).zip(out.iter_mut()) {
        let missing = v.is_nan() || f.is_missing(v);
        let (c, clipped) = if missing {
            (0.5 * (f.lo + f.hi), false)
        } else {
            clip(v, f)
        };
        report.clipped += usize::from(clipped);
        report.missing += usize::from(missing);
        let unit = (2.0 * (c - f.lo) / (f.hi - f.lo) - 1.0).clamp(-1.0, 1.0);
        *o = unit * scale;
    }
    if intercept {
        out[dim - 1] = scale;
    }
    shrink_into_ball(out);
    report
}

/// z of one feature in ball mode, and what happened to it (clipped, missing).
fn standardise(f: &FeatureSpec, v: f64) -> (f64, bool, bool) {
    if v.is_nan() || f.is_missing(v) {
        return (0.0, false, true);
    }
    let (c, clipped) = clip(v, f);
    let t = f.transform(c);
    let (center, scale) = (f.center.unwrap_or(0.0), f.scale.unwrap_or(1.0));
    (((t - center) / scale), clipped, false)
}

/// The ball map of `raw` into `out` (see the module documentation).
/// `z` is scratch space (resized to the number of features), so that a caller mapping many rows
/// allocates once.
pub(crate) fn ball_row(
    features: &[FeatureSpec],
    ball: BallRow,
    subspace: Option<&Subspace>,
    raw: &[f64],
    out: &mut [f64],
    z: &mut Vec<f64>,
) -> RowReport {
    let mut report = RowReport::default();
    z.clear();
    z.resize(features.len(), 0.0);
    for ((f, &v), zj) in features.iter().zip(raw).zip(z.iter_mut()) {
        let (value, clipped, missing) = standardise(f, v);
        report.clipped += usize::from(clipped);
        report.missing += usize::from(missing);
        *zj = value;
    }
    let k = match subspace {
        Some(s) => {
            s.project(z, &mut out[..s.components()]);
            s.components()
        }
        None => {
            out[..z.len()].copy_from_slice(z);
            z.len()
        }
    };
    out[..k].iter_mut().for_each(|v| *v *= ball.row_scale);
    if let Some(a) = ball.intercept {
        out[k] = a;
    }
    report.projected = into_ball(out);
    report
}

/// The last steps of the ball map on a row already scaled (and with its intercept): a row with
/// a non-finite component, or a norm above 1, is projected onto the ball (returns whether it
/// was), then shrunk until its computed norm is at most 1.
#[inline(always)]
pub(crate) fn into_ball(out: &mut [f64]) -> bool {
    let mut projected = false;
    if out.iter().any(|v| !v.is_finite()) {
        // Unreachable for a validated schema (its largest row norm is bounded); kept so that no
        // input can leave the ball: the row points along its infinite components.
        projected = true;
        out.iter_mut()
            .for_each(|v| *v = if v.is_infinite() { v.signum() } else { 0.0 });
    }
    let norm = l2_norm(out);
    if norm > 1.0 {
        projected = true;
        out.iter_mut().for_each(|v| *v /= norm);
    }
    shrink_into_ball(out);
    projected
}

/// [`into_ball`] of four rows of `dim` values each (`rows`, row-major), with the four rows'
/// norms summed side by side — each row's sum in its own order, so the same bits — instead of
/// one serial chain of additions after another; the number of rows projected. A row with a
/// non-finite value goes through [`into_ball`] alone.
#[inline(always)]
pub(crate) fn into_ball4(rows: &mut [f64], dim: usize) -> usize {
    // Counted, not `any`: a loop without an early exit is vectorised.
    if rows.iter().filter(|v| !v.is_finite()).count() > 0 {
        return rows
            .chunks_exact_mut(dim)
            .map(|r| usize::from(into_ball(r)))
            .sum();
    }
    let norms = norms4(rows, dim);
    let mut projected = 0;
    for (r, norm) in rows.chunks_exact_mut(dim).zip(norms) {
        if norm > 1.0 {
            projected += 1;
            r.iter_mut().for_each(|v| *v /= norm);
        }
    }
    // A row left alone has the norm just computed, at most 1: only a divided row can need
    // the shrink.
    if projected > 0 && norms4(rows, dim).iter().any(|&n| n > 1.0) {
        rows.chunks_exact_mut(dim).for_each(shrink_into_ball);
    }
    projected
}

/// The [`l2_norm`]s of four rows, their sums interleaved.
#[inline(always)]
fn norms4(rows: &[f64], dim: usize) -> [f64; 4] {
    let mut acc = [0.0; 4];
    for j in 0..dim {
        for (r, a) in acc.iter_mut().enumerate() {
            let v = rows[r * dim + j];
            *a += v * v;
        }
    }
    acc.map(f64::sqrt)
}

/// Rounding can leave the computed norm a few ulps above 1; shrink until it is not. Each pass
/// shrinks by more than the rounding error of the norm itself, so one pass suffices in practice;
/// the loop only makes the guarantee unconditional.
#[inline(always)]
fn shrink_into_ball(out: &mut [f64]) {
    let shrink = 1.0 - (2.0 * out.len() as f64 * f64::EPSILON).min(0.5);
    let mut norm = l2_norm(out);
    while norm > 1.0 {
        let s = shrink / norm;
        out.iter_mut().for_each(|v| *v *= s);
        norm = l2_norm(out);
    }
}

/// Euclidean norm, computed exactly as [`crate::Dataset::max_row_norm`] does.
#[inline(always)]
pub(crate) fn l2_norm(row: &[f64]) -> f64 {
    row.iter().map(|v| v * v).sum::<f64>().sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::{Schema, SchemaError};

    const BALL: &str = r#"
name = "toy"
[normalisation]
[label]
column = "y"
positive = "yes"
negative = "no"
[[features]]
name = "a"
lo = 0.0
hi = 10.0
center = 4.0
scale = 2.0
missing = -1.0
[[features]]
name = "b"
lo = 0.0
hi = 100.0
transform = "log1p"
unit = 10.0
center = 1.0
scale = 0.5
"#;

    fn ball() -> Schema {
        Schema::from_toml_str(BALL, "toy.schema.toml").expect("valid")
    }

    fn err(text: &str) -> SchemaError {
        Schema::from_toml_str(text, "bad.schema.toml").expect_err("must be rejected")
    }

    #[test]
    fn a_table_without_mode_is_ball_with_defaults_written_in() {
        let s = ball();
        assert_eq!(s.mode(), MapMode::Ball);
        let t = s.normalisation.as_ref().expect("table");
        assert_eq!(t.row_scale, Some(2.0 / 2f64.sqrt()));
        assert_eq!(t.intercept_value, Some(DEFAULT_INTERCEPT_VALUE));
        assert_eq!(s.features[0].transform, Some(Transform::Identity));
        assert_eq!(s.features[1].unit, Some(10.0));
        // Writing the defaults out gives the same schema and fingerprint.
        let explicit = BALL.replace(
            "[normalisation]",
            &format!(
                "[normalisation]\nmode = \"ball\"\nrow_scale = {}\nintercept_value = 0.2",
                2.0 / 2f64.sqrt()
            ),
        );
        let e = Schema::from_toml_str(&explicit, "x").expect("valid");
        assert_eq!(e.fingerprint(), s.fingerprint());
        // Every public constant is part of the fingerprint.
        for (from, to) in [
            ("center = 4.0", "center = 4.5"),
            ("scale = 0.5", "scale = 0.6"),
            ("missing = -1.0", "missing = -2.0"),
            ("unit = 10.0", "unit = 11.0"),
            ("[normalisation]", "[normalisation]\nintercept_value = 0.3"),
        ] {
            let other = Schema::from_toml_str(&BALL.replace(from, to), "x").expect("valid");
            assert_ne!(other.fingerprint(), s.fingerprint(), "{to}");
        }
    }

    #[test]
    fn known_row_maps_to_known_values() {
        let s = ball();
        let r = 2.0 / 2f64.sqrt();
        let mut out = [0.0; 3];
        // a = 4.5 → z = 0.25; b = 15 → T = ln 2.5, z = (ln 2.5 − 1)/0.5; norm < 1: no projection.
        let report = s.normalise_row(&[4.5, 15.0], &mut out);
        let want = [0.25 * r, (2.5f64.ln() - 1.0) / 0.5 * r, 0.2];
        assert!(want.iter().map(|v| v * v).sum::<f64>() < 1.0);
        for (o, w) in out.iter().zip(want) {
            assert!((o - w).abs() < 1e-15, "{out:?}");
        }
        assert_eq!(report, RowReport::default());
        // The missing sentinel maps to z = 0, clipping is counted, long rows are projected.
        let report = s.normalise_row(&[-1.0, 1e9], &mut out);
        assert_eq!(
            (report.missing, report.clipped, report.projected),
            (1, 1, true)
        );
        let zb = ((100.0f64 / 10.0).ln_1p() - 1.0) / 0.5 * r;
        let norm = (zb * zb + 0.04).sqrt();
        assert!(
            out[0] == 0.0
                && (out[1] - zb / norm).abs() < 1e-15
                && (out[2] - 0.2 / norm).abs() < 1e-15
        );
        // NaN is missing (the centre, counted as missing); infinities clip.
        let report = s.normalise_row(&[f64::NAN, f64::NEG_INFINITY], &mut out);
        assert_eq!((report.clipped, report.missing), (1, 1));
        assert!(out.iter().all(|v| v.is_finite()) && l2_norm(&out) <= 1.0);
    }

    #[test]
    fn ball_rows_stay_in_the_unit_ball_for_any_input() {
        let s = ball();
        let mut out = [0.0; 3];
        let values = [
            -1e300,
            -1e12,
            -10.0,
            -1.0,
            0.0,
            1e-300,
            0.5,
            4.0,
            10.0,
            99.0,
            100.0,
            1e12,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        for &a in &values {
            for &b in &values {
                s.normalise_row(&[a, b], &mut out);
                assert!(out.iter().all(|v| v.is_finite()), "{a} {b}");
                assert!(l2_norm(&out) <= 1.0, "{a} {b}: {}", l2_norm(&out));
                let d = crate::Dataset::new(out.to_vec(), vec![1.0], 3);
                assert!(d.max_row_norm() <= 1.0);
            }
        }
    }

    #[test]
    fn an_overflowing_row_still_ends_in_the_ball() {
        // No validated schema gets here (its largest row norm is bounded); the guard holds
        // for any constants all the same.
        let features = vec![FeatureSpec {
            center: Some(0.0),
            scale: Some(1e-300),
            ..FeatureSpec::bounded("a", -1.0, 1.0)
        }];
        let subspace = Subspace {
            directions: vec![vec![1e300], vec![-1e300], vec![f64::MAX]],
        };
        let ball = BallRow {
            row_scale: 1e300,
            intercept: Some(0.2),
        };
        let mut out = [0.0; 4];
        let report = ball_row(
            &features,
            ball,
            Some(&subspace),
            &[1.0],
            &mut out,
            &mut Vec::new(),
        );
        assert!(report.projected);
        assert!(out.iter().all(|v| v.is_finite()), "{out:?}");
        assert!(l2_norm(&out) <= 1.0, "{out:?}");
        assert!(out[0] > 0.0 && out[1] < 0.0, "{out:?}");
    }

    #[test]
    fn paper_map_of_a_ball_schema_is_the_old_map() {
        let s = ball();
        let p = s.paper_map();
        assert_eq!(p.mode(), MapMode::Paper);
        assert!(
            p.features
                .iter()
                .all(|f| f.center.is_none() && f.transform.is_none())
        );
        let mut out = [0.0; 3];
        p.normalise_row(&[5.0, 50.0], &mut out);
        let r3 = 3f64.sqrt();
        for (o, w) in out.iter().zip([0.0, 0.0, 1.0 / r3]) {
            assert!((o - w).abs() < 1e-15, "{out:?}");
        }
    }

    #[test]
    fn invalid_ball_keys_are_one_line_errors_naming_the_key() {
        let cases = [
            (
                "scale = 2.0",
                "scale = 1.3317993760838932e-308",
                "feature `a` scale: too small for the bounds",
            ),
            (
                "center = 4.0\n",
                "",
                "feature `a` center: declare both center and scale, or neither",
            ),
            (
                "scale = 2.0",
                "scale = 0.0",
                "feature `a` scale: must be a finite number > 0",
            ),
            (
                "scale = 2.0",
                "scale = nan",
                "feature `a` scale: must be a finite number > 0",
            ),
            (
                "missing = -1.0",
                "missing = inf",
                "feature `a` missing: must be finite numbers or texts",
            ),
            (
                "missing = -1.0",
                "unit = 3.0",
                "feature `a` unit: only used with transform = \"log1p\"",
            ),
            (
                "unit = 10.0",
                "unit = -1.0",
                "feature `b` unit: must be a finite number > 0",
            ),
            (
                "lo = 0.0\nhi = 100.0",
                "lo = -20.0\nhi = 100.0",
                "feature `b` unit: log1p needs lo > −unit",
            ),
            (
                "[normalisation]",
                "[normalisation]\nintercept_value = 1.0",
                "normalisation.intercept_value: must be in (0, 1)",
            ),
            (
                "[normalisation]",
                "[normalisation]\nrow_scale = 0",
                "normalisation.row_scale: must be a finite number > 0",
            ),
            (
                "[normalisation]",
                "[normalisation]\nmode = \"paper\"",
                "feature `a` center: only used in ball mode",
            ),
        ];
        for (from, to, want) in cases {
            assert!(BALL.contains(from), "{from}");
            let e = err(&BALL.replacen(from, to, 1));
            let msg = e.to_string();
            assert!(matches!(e, SchemaError::Normalisation { .. }), "{msg}");
            assert!(msg.starts_with("bad.schema.toml: "), "{msg}");
            assert!(msg.contains(want), "{msg} does not contain {want}");
            assert!(!msg.contains('\n'));
        }
        // Unknown keys and values are syntax errors naming them.
        let e = err(&BALL.replace("[normalisation]", "[normalisation]\nkappa = 2"));
        assert!(e.to_string().contains("kappa"), "{e}");
        let e = err(&BALL.replace("transform = \"log1p\"", "transform = \"sqrt\""));
        assert!(e.to_string().contains("sqrt"), "{e}");
    }

    #[test]
    fn paper_keys_in_a_paper_table_are_refused() {
        let text = BALL
            .replace("center = 4.0\nscale = 2.0\nmissing = -1.0\n", "")
            .replace(
                "transform = \"log1p\"\nunit = 10.0\ncenter = 1.0\nscale = 0.5\n",
                "",
            )
            .replace("[normalisation]", "[normalisation]\nmode = \"paper\"");
        let s = Schema::from_toml_str(&text, "x").expect("a paper table alone is valid");
        assert_eq!(s.mode(), MapMode::Paper);
        let e = err(&text.replace("mode = \"paper\"", "mode = \"paper\"\nrow_scale = 1.0"));
        assert!(
            e.to_string()
                .contains("normalisation.row_scale: only used in ball mode"),
            "{e}"
        );
    }
}
