//! [`Schema`]'s invariants: names, bounds, label values, missing markers, and the ball-mode keys
//! (checked after the ball defaults are filled in, so a centre and scale absent together were
//! derived from the bounds). Every failure is one [`SchemaError`] line naming the file and key.
//!
//! A schema as written (TOML, [`Schema::from_toml_str`]) may declare `typical` only in place of
//! `center` and `scale`, since the bounds rule derives both from it. A schema with its defaults
//! written in (a model's map read back, an agreed map applied) holds all three, and is checked
//! without that rule.

use super::{FeatureSpec, Markers, Schema, SchemaError};
use crate::data::normalise::{MapMode, Transform};

impl Schema {
    /// Checks every invariant; called by the constructors.
    pub(super) fn validate(&self, origin: &str) -> Result<(), SchemaError> {
        let o = || origin.to_owned();
        let empty = |field: String| SchemaError::EmptyName { origin: o(), field };
        if self.name.trim().is_empty() {
            return Err(empty("name".into()));
        }
        if self.label.column.trim().is_empty() {
            return Err(empty("label.column".into()));
        }
        if self.label.positive.trim().is_empty() {
            return Err(empty("label.positive".into()));
        }
        if self.label.negative.trim().is_empty() {
            return Err(empty("label.negative".into()));
        }
        if self.label.positive == self.label.negative {
            return Err(SchemaError::SameLabelValues {
                origin: o(),
                value: self.label.positive.clone(),
            });
        }
        if self.features.is_empty() {
            return Err(SchemaError::NoFeatures { origin: o() });
        }
        let mut seen = std::collections::HashSet::new();
        for (i, f) in self.features.iter().enumerate() {
            if f.name.trim().is_empty() {
                return Err(empty(format!("feature #{} name", i + 1)));
            }
            if !seen.insert(f.name.as_str()) {
                return Err(SchemaError::DuplicateFeature {
                    origin: o(),
                    name: f.name.clone(),
                });
            }
            if f.name == self.label.column {
                return Err(SchemaError::LabelIsFeature {
                    origin: o(),
                    column: f.name.clone(),
                });
            }
            if !f.lo.is_finite() || !f.hi.is_finite() || !(f.hi - f.lo).is_finite() {
                return Err(SchemaError::NonFiniteBound {
                    origin: o(),
                    name: f.name.clone(),
                    lo: f.lo,
                    hi: f.hi,
                });
            }
            if f.lo >= f.hi {
                return Err(SchemaError::EmptyRange {
                    origin: o(),
                    name: f.name.clone(),
                    lo: f.lo,
                    hi: f.hi,
                });
            }
            if let Some(m) = f.missing.as_ref().and_then(Markers::non_finite) {
                return Err(SchemaError::Normalisation {
                    origin: o(),
                    field: format!("feature `{}` missing", f.name),
                    message: format!("must be finite numbers or texts, found {m}"),
                });
            }
        }
        if let Some(m) = self
            .csv
            .as_ref()
            .and_then(|c| c.missing.as_ref())
            .and_then(Markers::non_finite)
        {
            return Err(SchemaError::Normalisation {
                origin: o(),
                field: "csv.missing".into(),
                message: format!("must be finite numbers or texts, found {m}"),
            });
        }
        Ok(())
    }

    /// Checks what only a written schema must satisfy, before any default is filled in: a
    /// feature declares `typical` or `center` and `scale`, not both.
    pub(super) fn validate_declared(&self, origin: &str) -> Result<(), SchemaError> {
        match self
            .features
            .iter()
            .find(|f| f.typical.is_some() && (f.center.is_some() || f.scale.is_some()))
        {
            None => Ok(()),
            Some(f) => Err(SchemaError::Normalisation {
                origin: origin.to_owned(),
                field: format!("feature `{}` typical", f.name),
                message: "declare typical, or center and scale, not both (the bounds rule \
                          derives center and scale from typical)"
                    .into(),
            }),
        }
    }

    /// Checks the `[normalisation]` table and the ball-mode keys of every feature: required and in
    /// range in ball mode, absent in paper mode (so nothing declared is silently ignored).
    pub(super) fn validate_normalisation(&self, origin: &str) -> Result<(), SchemaError> {
        let bad = |field: String, message: &str| SchemaError::Normalisation {
            origin: origin.to_owned(),
            field,
            message: message.to_owned(),
        };
        let table = self.normalisation.as_ref();
        if self.mode() == MapMode::Paper {
            let only_ball = "only used in ball mode ([normalisation] mode = \"ball\")";
            if table.is_some_and(|t| t.row_scale.is_some()) {
                return Err(bad("normalisation.row_scale".into(), only_ball));
            }
            if table.is_some_and(|t| t.intercept_value.is_some()) {
                return Err(bad("normalisation.intercept_value".into(), only_ball));
            }
            if let Some((f, key)) = self
                .features
                .iter()
                .find_map(|f| f.ball_keys().first().map(|k| (f, *k)))
            {
                return Err(bad(format!("feature `{}` {key}", f.name), only_ball));
            }
            if self.subspace.is_some() {
                return Err(bad("subspace".into(), only_ball));
            }
            return Ok(());
        }
        if let Some(s) = &self.subspace {
            check_subspace(s, self.features.len()).map_err(|(field, m)| bad(field, &m))?;
        }
        if let Some(r) = table.and_then(|t| t.row_scale)
            && !(r.is_finite() && r > 0.0)
        {
            return Err(bad(
                "normalisation.row_scale".into(),
                "must be a finite number > 0",
            ));
        }
        if let Some(a) = table.and_then(|t| t.intercept_value)
            && !(a > 0.0 && a < 1.0)
        {
            return Err(bad(
                "normalisation.intercept_value".into(),
                "must be in (0, 1)",
            ));
        }
        self.features.iter().try_for_each(|f| {
            check_ball_feature(f).map_err(|(key, m)| bad(format!("feature `{}` {key}", f.name), m))
        })?;
        let largest = self.largest_row_norm();
        if largest.is_nan() || largest > MAX_ROW_NORM {
            return Err(bad(
                "normalisation.row_scale".into(),
                "too large for the features' scales (and subspace): a row within the bounds could \
                 reach a norm above 1e150 before its projection onto the unit ball",
            ));
        }
        Ok(())
    }

    /// The largest norm a row within the bounds can have in ball mode before its projection
    /// onto the unit ball: row_scale · ‖(Σ_j |P_ij| z̄_j)_i‖ (z̄_j the largest |z| of feature j;
    /// P the identity without a subspace), plus the intercept. Infinite when it overflows.
    fn largest_row_norm(&self) -> f64 {
        let far: Vec<f64> = self
            .features
            .iter()
            .map(|f| {
                let (c, s) = (f.center.unwrap_or(0.0), f.scale.unwrap_or(1.0));
                [f.lo, f.hi]
                    .iter()
                    .map(|&v| ((f.transform(v) - c) / s).abs())
                    .fold(0.0, f64::max)
            })
            .collect();
        let row_scale = self
            .normalisation
            .as_ref()
            .and_then(|n| n.row_scale)
            .unwrap_or(1.0);
        let squares: f64 = match &self.subspace {
            None => far.iter().map(|z| z * z).sum(),
            Some(s) => s
                .directions
                .iter()
                .map(|d| {
                    let u: f64 = d.iter().zip(&far).map(|(p, z)| p.abs() * z).sum();
                    u * u
                })
                .sum(),
        };
        row_scale * squares.sqrt() + 1.0
    }
}

/// The ball-mode keys of one feature: (key, what is wrong) for the first bad one. Runs after
/// [`Schema::fill_ball_defaults`], so a centre and scale absent together were derived from the
/// bounds; one without the other is an error.
fn check_ball_feature(f: &FeatureSpec) -> Result<(), (&'static str, &'static str)> {
    match (f.transform.unwrap_or_default(), f.unit) {
        (Transform::Identity, Some(_)) => {
            return Err(("unit", "only used with transform = \"log1p\""));
        }
        (Transform::Log1p, Some(u)) if !(u.is_finite() && u > 0.0) => {
            return Err(("unit", "must be a finite number > 0"));
        }
        (Transform::Log1p, u) if f.lo <= -u.unwrap_or(1.0) => {
            return Err((
                "unit",
                "log1p needs lo > −unit (ln(1 + v/unit) of every clipped value)",
            ));
        }
        _ => {}
    }
    match f.typical {
        Some(t) if !t.is_finite() => return Err(("typical", "must be finite")),
        Some(t) if !(f.lo..=f.hi).contains(&t) => {
            return Err(("typical", "must be within [lo, hi] (a raw value)"));
        }
        _ => {}
    }
    let both = "declare both center and scale, or neither (both then come from the bounds)";
    match f.center {
        None => return Err(("center", both)),
        Some(c) if !c.is_finite() => return Err(("center", "must be finite")),
        _ => {}
    }
    match f.scale {
        None => return Err(("scale", both)),
        Some(s) if !(s.is_finite() && s > 0.0) => {
            return Err(("scale", "must be a finite number > 0"));
        }
        _ => {}
    }
    // The bounds' standardised values must stay far from overflow, or a row's norm becomes
    // infinite and its projection NaN (found by shared/tests/fuzz.rs: scale = 1e-308).
    let t = |v: f64| f.transform(v);
    let (center, scale) = (f.center.unwrap_or(0.0), f.scale.unwrap_or(1.0));
    let far = [f.lo, f.hi]
        .iter()
        .map(|&v| ((t(v) - center) / scale).abs())
        .fold(0.0, f64::max);
    if !far.is_finite() || far > MAX_STANDARDISED {
        return Err((
            "scale",
            "too small for the bounds: (lo or hi − center)/scale must stay within 1e12",
        ));
    }
    Ok(())
}

/// A subspace's directions: between 1 and `p` of them, each `p` finite numbers; (field, what
/// is wrong) for the first bad one.
fn check_subspace(s: &crate::data::normalise::Subspace, p: usize) -> Result<(), (String, String)> {
    if s.directions.is_empty() || s.components() > p {
        return Err((
            "subspace.directions".into(),
            format!("must hold between 1 and {p} directions (one per component)"),
        ));
    }
    if let Some(i) = s.directions.iter().position(|d| d.len() != p) {
        return Err((
            format!("subspace.directions[{i}]"),
            format!("must hold {p} numbers, one per feature"),
        ));
    }
    match s
        .directions
        .iter()
        .position(|d| d.iter().any(|v| !v.is_finite()))
    {
        Some(i) => Err((
            format!("subspace.directions[{i}]"),
            "must be finite numbers".into(),
        )),
        None => Ok(()),
    }
}

/// Largest |(T(v) − center)/scale| a feature's bounds may reach in ball mode.
const MAX_STANDARDISED: f64 = 1e12;

/// Largest norm a row within the bounds may reach before its projection onto the unit ball (far
/// from overflow, so that the projection divides by a finite norm).
const MAX_ROW_NORM: f64 = 1e150;
