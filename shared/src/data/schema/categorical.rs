//! Categorical features: a text column (sex, smoking status, ward, admission type) with a
//! public list of categories, one-hot encoded inside the unit-ball map.
//!
//! A schema declares
//!
//! ```toml
//! [[features]]
//! name = "smoking"
//! kind = "categorical"
//! categories = ["never", "former", "current"]
//! ```
//!
//! and reading it ([`Schema::validated`]) replaces that entry by one **indicator feature** per
//! category, in the order listed: `smoking=never`, `smoking=former`, `smoking=current`, each
//! with `column = "smoking"`, `category = …`, bounds [0, 1], the identity transform, centre 0
//! and scale 1 (ball mode). A cell equal to a category reads 1 in its indicator and 0 in the
//! others; a cell that is a missing marker, or that is not among the categories, is missing in
//! every indicator, so the whole feature sits at its centre (z = 0 in each, under the default
//! map the zero vector; under an agreed map, whose centres are the categories' shares, the
//! shares). Unlisted cells are counted apart from missing ones ([`crate::data::csv`]).
//!
//! **Its share of the row norm.** One category is active at a time, so under the default map a
//! categorical feature adds exactly 1 to ‖z‖² — what a numeric feature adds one scale from its
//! centre — and counts as one feature in the default row scale κ/√p. Everything after the
//! expansion (clipping, centring, an agreed map's centres, scales and directions, the
//! projection onto the unit ball) treats indicators as the numeric features they are, so every
//! proof that assumes only ‖x‖₂ ≤ 1 holds unchanged.
//!
//! The expanded form is what the fingerprint, `model.json` and `Describe` carry; reading it
//! again gives the same schema. The list of categories is public like bounds: a category seen
//! in one hospital's rows alone can identify a patient, so `schema init` marks the categories
//! it proposes `bounds = "observed"` and every release path refuses them until they are
//! confirmed from a public code list.

use super::{FeatureSpec, Schema, SchemaError};
use crate::data::normalise::MapMode;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Most categories one feature may list.
pub const MAX_CATEGORIES: usize = 256;

/// What a feature's cells hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureKind {
    /// Numbers within `[lo, hi]` (the default).
    #[default]
    Numeric,
    /// One of a public list of texts (`categories`).
    Categorical,
}

/// The value of `lo` and `hi` when a feature does not declare them: a NaN with its own
/// payload, told apart from a `nan` written in the file (refused as a non-finite bound).
pub(super) fn absent() -> f64 {
    f64::from_bits(ABSENT)
}

const ABSENT: u64 = 0x7ff8_0000_0000_0a0b;

/// Whether a bound was left out of the file.
fn is_absent(v: f64) -> bool {
    v.to_bits() == ABSENT
}

impl FeatureSpec {
    /// The CSV column this feature reads: its `column`, else its name.
    pub fn source_column(&self) -> &str {
        self.column.as_deref().unwrap_or(&self.name)
    }
}

impl Schema {
    /// Replaces every `kind = "categorical"` feature by its indicator features (module docs);
    /// a schema without one is left as it is, so reading an expanded schema again is a no-op.
    pub(super) fn expand_categorical(&mut self, origin: &str) -> Result<(), SchemaError> {
        let ball = self.mode() == MapMode::Ball;
        let mut out = Vec::with_capacity(self.features.len());
        for f in std::mem::take(&mut self.features) {
            check_declared(&f, origin)?;
            match (f.kind.unwrap_or_default(), &f.categories) {
                (FeatureKind::Numeric, _) => out.push(f),
                (FeatureKind::Categorical, Some(categories)) => {
                    if !ball {
                        return Err(bad(origin, &f, "kind", NEEDS_BALL));
                    }
                    out.extend(categories.iter().map(|c| indicator(&f, c)));
                }
                (FeatureKind::Categorical, None) => unreachable!("checked by check_declared"),
            }
        }
        self.features = out;
        self.check_indicators(origin)
    }

    /// The number of features as declared: a categorical feature's indicators count once (the
    /// `p` of the default row scale κ/√p).
    pub fn declared_features(&self) -> usize {
        let mut columns = HashSet::new();
        self.features
            .iter()
            .filter(|f| f.category.is_none() || columns.insert(f.source_column()))
            .count()
    }

    /// The categories of `column`'s indicator features, in order (empty for a numeric one).
    pub fn categories_of(&self, column: &str) -> Vec<&str> {
        self.features
            .iter()
            .filter(|f| f.column.as_deref() == Some(column))
            .filter_map(|f| f.category.as_deref())
            .collect()
    }

    /// Indicator features read their column as a category: bounds [0, 1], the identity
    /// transform, and `column` only together with `category`.
    fn check_indicators(&self, origin: &str) -> Result<(), SchemaError> {
        let numeric: HashSet<&str> = (self.features.iter())
            .filter(|f| f.category.is_none())
            .map(|f| f.name.as_str())
            .collect();
        for f in &self.features {
            match (&f.column, &f.category) {
                (None, None) => continue,
                (Some(c), Some(_)) if c == &self.label.column => {
                    return Err(SchemaError::LabelIsFeature {
                        origin: origin.to_owned(),
                        column: c.clone(),
                    });
                }
                (Some(c), Some(_)) if numeric.contains(c.as_str()) => {
                    let m = format!("column `{c}` is also read as a numeric feature");
                    return Err(bad(origin, f, "column", &m));
                }
                (Some(_), Some(_)) => {}
                _ => return Err(bad(origin, f, "column", "column and category go together")),
            }
            if f.lo != 0.0 || f.hi != 1.0 {
                return Err(bad(origin, f, "lo", "an indicator's bounds are 0 and 1"));
            }
            if f.transform.unwrap_or_default() != Default::default() || f.unit.is_some() {
                return Err(bad(
                    origin,
                    f,
                    "transform",
                    "an indicator is not transformed",
                ));
            }
        }
        Ok(())
    }
}

const NEEDS_BALL: &str = "categorical features need the ball map ([normalisation] mode = \"ball\")";

/// The keys a feature declares are those of its kind: `categories` for a categorical one (at
/// least two, distinct, non-empty), `lo` and `hi` for a numeric one.
fn check_declared(f: &FeatureSpec, origin: &str) -> Result<(), SchemaError> {
    let kind = f.kind.unwrap_or_default();
    if kind == FeatureKind::Numeric {
        if f.categories.is_some() {
            return Err(bad(
                origin,
                f,
                "categories",
                "only with kind = \"categorical\"",
            ));
        }
        for (key, v) in [("lo", f.lo), ("hi", f.hi)] {
            if is_absent(v) {
                let m = "missing: a numeric feature declares lo and hi (a text column: kind = \
                         \"categorical\" with its categories)";
                return Err(bad(origin, f, key, m));
            }
        }
        return Ok(());
    }
    let numeric_keys = [
        ("lo", !is_absent(f.lo)),
        ("hi", !is_absent(f.hi)),
        ("transform", f.transform.is_some()),
        ("unit", f.unit.is_some()),
        ("center", f.center.is_some()),
        ("scale", f.scale.is_some()),
        ("typical", f.typical.is_some()),
        ("column", f.column.is_some()),
        ("category", f.category.is_some()),
    ];
    if let Some((key, _)) = numeric_keys.iter().find(|(_, present)| *present) {
        return Err(bad(origin, f, key, "not used by a categorical feature"));
    }
    let categories = f.categories.as_deref().unwrap_or_default();
    if categories.len() < 2 || categories.len() > MAX_CATEGORIES {
        let m = format!("a categorical feature lists between 2 and {MAX_CATEGORIES} categories");
        return Err(bad(origin, f, "categories", &m));
    }
    let mut seen = HashSet::new();
    for c in categories {
        if c.trim().is_empty() || c.trim() != c {
            let m = format!("{c:?}: a category is a non-empty text without outer spaces");
            return Err(bad(origin, f, "categories", &m));
        }
        if !seen.insert(c.as_str()) {
            return Err(bad(
                origin,
                f,
                "categories",
                &format!("{c:?} is listed twice"),
            ));
        }
    }
    Ok(())
}

/// The indicator feature of category `c` of the categorical feature `f`.
fn indicator(f: &FeatureSpec, c: &str) -> FeatureSpec {
    FeatureSpec {
        column: Some(f.name.clone()),
        category: Some(c.to_owned()),
        description: f.description.clone(),
        center: Some(0.0),
        scale: Some(1.0),
        missing: f.missing.clone(),
        source: f.source.clone(),
        bounds: f.bounds,
        ..FeatureSpec::bounded(format!("{}={c}", f.name), 0.0, 1.0)
    }
}

fn bad(origin: &str, f: &FeatureSpec, key: &str, message: &str) -> SchemaError {
    SchemaError::Normalisation {
        origin: origin.to_owned(),
        field: format!("feature `{}` {key}", f.name),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests;
