//! The public data schema: which columns a dataset has, how its label is spelled, the declared
//! bounds of every feature and how rows are mapped into the unit ball.
//!
//! A schema is a small TOML file written by hand and shared by every organisation taking part in a
//! learning round:
//!
//! ```toml
//! name = "diabetes"
//! description = "Pima Indians Diabetes"
//! intercept = true            # append a constant-1 column (default true)
//! [label]
//! column = "diabetes"
//! positive = "pos"            # maps to +1
//! negative = "neg"            # maps to -1; any other value is an error
//! [normalisation]             # optional
//! mode = "ball"               # "ball" (the default) | "paper" (Minami et al.'s (2015) map)
//! row_scale = 0.7071          # ball: factor on every standardised feature (default 2/sqrt(p))
//! intercept_value = 0.2       # ball: the constant appended for the intercept, in (0, 1)
//! [csv]                       # optional, not fingerprinted: how the files are written
//! separator = ";"             # , ; tab or |; detected from the header when absent
//! missing = ["", "NA"]        # cells meaning "not measured" in every feature column
//! [[features]]
//! name = "glucose"
//! lo = 0.0
//! hi = 200.0
//! description = "2-h OGTT plasma glucose"   # optional
//! transform = "identity"      # ball: "identity" (default) | "log1p", T(v) = ln(1 + v/unit)
//! unit = 1.0                  # ball, log1p only: > 0, with lo > −unit
//! center = 140.0              # ball: finite; with scale, or neither (then from the bounds)
//! scale = 40.0                # ball: > 0
//! # typical = 0.0             # ball, without center and scale: a raw value in [lo, hi] the
//! #                           #   bounds rule centres on (z = 0) instead of their middle
//! missing = 0.0               # optional: a number or text (or a list) meaning "not measured"
//! source = "WHO 1999 / ADA"   # optional: where center and scale come from
//! # bounds = "observed"       # written by `schema init`: lo/hi read off the data, refused
//! #                           #   by every release until replaced by public bounds
//! [[features]]
//! name = "smoking"            # a text column, one-hot encoded ([`categorical`])
//! kind = "categorical"
//! categories = ["never", "former", "current"]
//! ```
//!
//! # Why the bounds are declared, never measured
//!
//! Every privacy guarantee in this project (Minami et al. 2015, §4.2) assumes that the support of
//! the feature vector `X` lies inside the unit ball, ||x||₂ ≤ 1. Mapping raw records into the unit
//! ball needs a scale, and that scale must be **public**: it comes from this schema, never from the
//! private data. A maximum or a range computed from the data is a function of single records (the
//! largest one), so rescaling by it would leak that record, and it would also change the
//! sensitivity the proofs rely on. Hence bounds are written in the schema from domain knowledge or
//! published documentation and are never derived from a dataset at run time.
//!
//! The same holds for the centres and scales of ball mode: they are written by hand from domain
//! knowledge or published reference values (cited in the schema's comments and `source`), or
//! derived from the declared bounds (and a declared `typical` value) by [`bounds_rule`], never
//! computed from the data. A draft
//! from `dpagg-node schema init` does hold bounds observed in the data, marked
//! `bounds = "observed"`; [`Schema::require_public_bounds`] refuses it on every release path.
//!
//! # Normalisation
//!
//! [`Schema::normalise_row`] maps a raw row to a row of norm at most 1 with one of two per-record
//! maps ([`super::normalise`]): `paper` (clip, map to [−1, 1], append 1, divide by √dim —
//! `mode = "paper"`, Minami et al.'s (2015) map) or `ball`, the default (clip, transform, centre
//! and scale with public constants, multiply by `row_scale`, append `intercept_value`, project onto
//! the unit ball). A final guard rescales the row if floating-point rounding pushes
//! the computed norm above `1.0`, so the bound holds exactly as [`crate::Dataset::max_row_norm`]
//! computes it, whatever the input.
//!
//! # Fingerprint
//!
//! [`Schema::fingerprint`] is what nodes and aggregators compare to make sure they learn on the
//! same features, in the same order, mapped the same way. Keys of ball mode that are absent are
//! left out of the canonical form, and an explicit paper map is canonicalised as a schema
//! without a `[normalisation]` table, so a paper-map schema keeps the fingerprint it had before
//! ball mode existed; `[csv]` (how files are written) is left out.

use std::path::Path;

use super::normalise::{
    BallRow, DEFAULT_INTERCEPT_VALUE, DEFAULT_ROW_SCALE_KAPPA, MapMode, Normalisation, RowReport,
    Subspace, Transform,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub mod bounds_rule;
pub mod categorical;
mod diff;
mod error;
pub mod markers;
mod row_map;
mod validate;
pub use categorical::FeatureKind;
pub use error::SchemaError;
use error::{line_col, one_line};
pub use markers::{CsvFormat, Marker, Markers, Separator};
pub use row_map::{RowMap, RowsReport};

/// One feature column with its declared, public bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureSpec {
    /// Column name, matched against the CSV header.
    pub name: String,
    /// Declared lower bound; smaller values are clipped to it. Required of a numeric feature;
    /// a categorical one has none (NaN while it is read, 0 once it is one-hot encoded).
    #[serde(default = "categorical::absent")]
    pub lo: f64,
    /// Declared upper bound; larger values are clipped to it. Must be `> lo`.
    #[serde(default = "categorical::absent")]
    pub hi: f64,
    /// `"categorical"`: a text column with the public list `categories`, one-hot encoded into
    /// one indicator feature per category when the schema is read ([`categorical`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<FeatureKind>,
    /// A categorical feature's public categories, as its cells spell them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<String>>,
    /// An indicator feature (one column of a one-hot encoding): the CSV column it reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    /// An indicator feature: the category whose cells read 1 (cells of the column's other
    /// categories read 0; unlisted and missing cells are missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Free-text description (unit, meaning); informative only.
    #[serde(default)]
    pub description: Option<String>,
    /// Ball mode: T, the transform applied before centring (default identity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<Transform>,
    /// Ball mode, `log1p` only: T(v) = ln(1 + v/unit) (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<f64>,
    /// Ball mode: the public centre of T(v).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<f64>,
    /// Ball mode: the public scale of T(v), > 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// Ball mode, in place of `center` and `scale`: a typical raw value within [lo, hi] (0 for a
    /// mostly-zero count) that the bounds rule maps to z = 0 ([`bounds_rule`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical: Option<f64>,
    /// Values meaning "not measured" (numbers and cell texts, see [`markers`]): mapped to the
    /// centre (z = 0), never clipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Markers>,
    /// Where `center` and `scale` come from; informative only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// `"observed"`: `lo` and `hi` were read off the data by `dpagg-node schema init` and must be
    /// replaced by public bounds (then this key deleted) before anything is released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<BoundsOrigin>,
}

/// Where a feature's bounds came from, when they are not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BoundsOrigin {
    /// Smallest and largest values of the data, rounded outward (`schema init`): a statistic of
    /// the private rows, so every release path refuses them (invariant 2).
    Observed,
}

impl FeatureSpec {
    /// A feature with bounds only (what a paper-mode schema declares).
    pub fn bounded(name: impl Into<String>, lo: f64, hi: f64) -> Self {
        Self {
            name: name.into(),
            lo,
            hi,
            kind: None,
            categories: None,
            column: None,
            category: None,
            description: None,
            transform: None,
            unit: None,
            center: None,
            scale: None,
            typical: None,
            missing: None,
            source: None,
            bounds: None,
        }
    }

    /// True when `v` is one of this feature's numeric `missing` markers.
    pub fn is_missing(&self, v: f64) -> bool {
        self.missing.as_ref().is_some_and(|m| m.has_number(v))
    }

    /// T(v), the declared transform (ball mode: identity, or ln(1 + v/unit) for `log1p`).
    pub fn transform(&self, v: f64) -> f64 {
        match self.transform.unwrap_or_default() {
            Transform::Identity => v,
            Transform::Log1p => (v / self.unit.unwrap_or(1.0)).ln_1p(),
        }
    }

    /// The raw value that stands for a missing one in raw-unit releases: T⁻¹(center), the value
    /// the ball map sends to 0 (where it sends a missing value), clipped to [lo, hi]; without a
    /// `center`, the declared `typical` value, else the middle of [lo, hi]. `center` is in
    /// transformed units, so for a `log1p` feature this is unit·(e^center − 1), not `center`
    /// itself; a centre the rule took from `typical` gives `typical` back exactly.
    pub fn raw_of_center(&self) -> f64 {
        let raw = match (self.center, self.typical) {
            (None, typical) => typical.unwrap_or(self.lo / 2.0 + self.hi / 2.0),
            (Some(c), Some(t)) if c == self.transform(t) => t,
            (Some(c), _) => match self.transform.unwrap_or_default() {
                Transform::Identity => c,
                Transform::Log1p => self.unit.unwrap_or(1.0) * c.exp_m1(),
            },
        };
        raw.clamp(self.lo, self.hi)
    }

    /// The keys only ball mode reads, by name, when present.
    fn ball_keys(&self) -> Vec<&'static str> {
        [
            ("transform", self.transform.is_some()),
            ("unit", self.unit.is_some()),
            ("center", self.center.is_some()),
            ("scale", self.scale.is_some()),
            ("typical", self.typical.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, present)| present.then_some(k))
        .collect()
    }
}

/// The label column and the spelling of its two classes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSpec {
    /// Column name, matched against the CSV header.
    pub column: String,
    /// Value mapped to the label `+1`.
    pub positive: String,
    /// Value mapped to the label `−1`. Any value other than `positive` and `negative` is an error.
    pub negative: String,
}

/// A validated public schema. Build it with [`Schema::from_toml_str`] or [`Schema::load`], which
/// check every invariant listed on [`SchemaError`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schema {
    /// Short name of the dataset (e.g. `diabetes`).
    pub name: String,
    /// Free-text description; informative only.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether a constant-1 column is appended after the features (default `true`).
    #[serde(default = "default_intercept")]
    pub intercept: bool,
    /// The label column.
    pub label: LabelSpec,
    /// The feature columns, in the order they appear in normalised rows.
    pub features: Vec<FeatureSpec>,
    /// How rows are mapped into the unit ball; absent means the `ball` map with centres and
    /// scales from the bounds ([`bounds_rule`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalisation: Option<Normalisation>,
    /// How the organisations' files are written (separator, missing markers of every column);
    /// not part of the fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<CsvFormat>,
    /// Ball mode: the standardised features projected onto k public directions before the row
    /// scale (an agreed map's subspace, [`crate::data::agreed_map`]); rows then have k columns
    /// (plus the intercept) instead of one per feature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subspace: Option<Subspace>,
    /// Where this schema's map came from when it is an agreed map applied to a public schema
    /// ([`crate::data::agreed_map::AgreedMap::apply`]); part of the fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agreed_map: Option<MapNote>,
}

/// The provenance an agreed map leaves in the schema it makes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MapNote {
    /// Fingerprint of the public schema the map was applied to.
    pub base: String,
    /// Where its constants come from and what their release cost, in words.
    pub source: String,
}

fn default_intercept() -> bool {
    true
}

impl Schema {
    /// Parses and validates a schema from TOML text. `origin` (usually the file name) starts every
    /// error message.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Schema, SchemaError> {
        let schema: Schema = toml::from_str(text).map_err(|e| {
            let (line, column) = match e.span() {
                Some(span) => {
                    let (l, c) = line_col(text, span.start);
                    (Some(l), Some(c))
                }
                None => (None, None),
            };
            SchemaError::Syntax {
                origin: origin.to_owned(),
                line,
                column,
                message: one_line(e.message()),
            }
        })?;
        schema.validate_declared(origin)?;
        schema.validated(origin)
    }

    /// Checks a schema built or deserialised by other means (e.g. read back from `model.json`)
    /// as [`Schema::from_toml_str`] does, filling in the ball map's defaults; `origin` starts
    /// every error message.
    pub fn validated(mut self, origin: &str) -> Result<Schema, SchemaError> {
        self.expand_categorical(origin)?;
        self.validate(origin)?;
        self.fill_ball_defaults();
        self.validate_normalisation(origin)?;
        Ok(self)
    }

    /// In ball mode, writes every default (the table itself, row scale, intercept constant,
    /// transform, unit, and a feature's centre and scale from its bounds and `typical` by
    /// [`bounds_rule`] when it declares neither) into the schema, so that its fingerprint covers the map actually
    /// used.
    fn fill_ball_defaults(&mut self) {
        if self.mode() != MapMode::Ball {
            return;
        }
        let ball = self.ball();
        let t = self.normalisation.get_or_insert(Normalisation {
            mode: MapMode::Ball,
            row_scale: None,
            intercept_value: None,
        });
        t.row_scale = Some(ball.row_scale);
        t.intercept_value = t.intercept_value.or(Some(DEFAULT_INTERCEPT_VALUE));
        for f in &mut self.features {
            let transform = f.transform.unwrap_or_default();
            f.transform = Some(transform);
            if transform == Transform::Log1p {
                f.unit = f.unit.or(Some(1.0));
            }
            if f.center.is_none() && f.scale.is_none() {
                let (center, scale) = bounds_rule::center_scale(f);
                f.center = Some(center);
                f.scale = Some(scale);
            }
        }
    }

    /// Refuses a schema with observed bounds (invariant 2): every release path calls this
    /// before reading a row.
    pub fn require_public_bounds(&self, origin: &str) -> Result<(), SchemaError> {
        let observed = self.observed_features();
        match observed.split_first() {
            None => Ok(()),
            Some((first, rest)) => Err(SchemaError::ObservedBounds {
                origin: origin.to_owned(),
                first: (*first).to_owned(),
                more: if rest.is_empty() {
                    String::new()
                } else {
                    format!(" and {} more", rest.len())
                },
            }),
        }
    }

    /// The features whose bounds were observed in the data (`bounds = "observed"`), by name:
    /// every release path refuses a schema that has any.
    pub fn observed_features(&self) -> Vec<&str> {
        self.features
            .iter()
            .filter(|f| f.bounds == Some(BoundsOrigin::Observed))
            .map(|f| f.name.as_str())
            .collect()
    }

    /// Reads, parses and validates a schema file. Error messages start with the path as given.
    pub fn load(path: &Path) -> Result<Schema, SchemaError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| SchemaError::Io {
            origin: origin.clone(),
            source,
        })?;
        Schema::from_toml_str(&text, &origin)
    }

    /// The map rows go through: `ball` unless `[normalisation] mode = "paper"`.
    pub fn mode(&self) -> MapMode {
        self.normalisation
            .as_ref()
            .map_or(MapMode::Ball, |n| n.mode)
    }

    /// This schema with the paper map and none of the ball-mode keys or missing markers: the
    /// schema Minami et al.'s (2015) experiments use, with the fingerprint a schema of the same
    /// bounds had before ball mode.
    pub fn paper_map(&self) -> Schema {
        let mut s = self.clone();
        s.normalisation = Some(Normalisation {
            mode: MapMode::Paper,
            row_scale: None,
            intercept_value: None,
        });
        for f in &mut s.features {
            *f = FeatureSpec {
                description: f.description.take(),
                column: f.column.take(),
                category: f.category.take(),
                ..FeatureSpec::bounded(f.name.clone(), f.lo, f.hi)
            };
        }
        s.subspace = None;
        s.agreed_map = None;
        s
    }

    /// The constants of the ball map (defaults filled in).
    fn ball(&self) -> BallRow {
        let t = self.normalisation.as_ref();
        let p = self.declared_features() as f64;
        BallRow {
            row_scale: t
                .and_then(|t| t.row_scale)
                .unwrap_or(DEFAULT_ROW_SCALE_KAPPA / p.sqrt()),
            intercept: self.intercept.then(|| {
                t.and_then(|t| t.intercept_value)
                    .unwrap_or(DEFAULT_INTERCEPT_VALUE)
            }),
        }
    }

    /// Dimension of a normalised row: the number of features (or of the subspace's components),
    /// plus one if there is an intercept.
    pub fn dim(&self) -> usize {
        self.subspace
            .as_ref()
            .map_or(self.features.len(), Subspace::components)
            + usize::from(self.intercept)
    }

    /// The names of a normalised row's columns: the features (or `component 1` … `component k`
    /// of the subspace), then `(intercept)` when the schema has one.
    pub fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = match &self.subspace {
            Some(s) => (1..=s.components())
                .map(|i| format!("component {i}"))
                .collect(),
            None => self.features.iter().map(|f| f.name.clone()).collect(),
        };
        if self.intercept {
            out.push("(intercept)".into());
        }
        out
    }

    /// Lowercase hex SHA-256 of the schema's canonical serialisation: `serde_json` of this struct
    /// (fields in declaration order: `name`, `description`, `intercept`, `label` {`column`,
    /// `positive`, `negative`}, `features` [{`name`, `lo`, `hi`, `description`}]; absent options
    /// are `null`, no whitespace).
    ///
    /// Nodes and aggregators compare fingerprints to check that they learn on the same columns, in
    /// the same order, with the same bounds and label mapping. Any change, including to a bound or
    /// a description, gives a different fingerprint; TOML formatting and comments do not matter.
    pub fn fingerprint(&self) -> String {
        let canonical = serde_json::to_vec(&self.canonical())
            .expect("a schema (strings, finite floats, bools) always serialises");
        let digest = Sha256::digest(&canonical);
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// What the fingerprint covers: the schema without how its files are written, and without
    /// the normalisation table under the paper map (a bounds-only schema meant the paper map
    /// once: `mode = "paper"` keeps the fingerprint such a schema had).
    fn canonical(&self) -> Self {
        let mut canonical = self.clone();
        canonical.csv = None;
        if canonical.mode() == MapMode::Paper {
            canonical.normalisation = None;
        }
        canonical
    }

    /// Feature `j`'s standardised value for the raw value `v` (clipped to its bounds):
    /// z = (T(v) − center)/scale in ball mode, the [−1, 1] value in paper mode. Within bounds the
    /// default rule gives |z| ≤ 3 ([`bounds_rule`]); a |z| far above that on many rows means the
    /// centre or scale is off (see [`crate::data::diagnose`]).
    ///
    /// # Panics
    /// If `j` is not a feature index (a programming error).
    pub fn standardise(&self, j: usize, v: f64) -> f64 {
        let f = &self.features[j];
        let c = v.clamp(f.lo, f.hi);
        match self.mode() {
            MapMode::Paper => 2.0 * (c - f.lo) / (f.hi - f.lo) - 1.0,
            MapMode::Ball => (f.transform(c) - f.center.unwrap_or(0.0)) / f.scale.unwrap_or(1.0),
        }
    }

    /// Normalises one raw row (feature values in schema order) into `out` (length [`Schema::dim`])
    /// with the schema's map and reports, in counts, what it did (values clipped to their declared
    /// bounds, `missing` sentinels, whether the row was projected onto the ball).
    ///
    /// See [`super::normalise`] for the maps. The result always satisfies ||out||₂ ≤ 1 as computed
    /// by [`crate::Dataset::max_row_norm`]. Infinite values clip to the nearer bound; a NaN (which
    /// the CSV loader rejects before calling this) is mapped to the middle of the range (paper) or
    /// the centre (ball) and counted as clipped, so the bound holds for every input.
    ///
    /// # Panics
    /// If `raw.len()` is not the number of features or `out.len()` is not [`Schema::dim`]
    /// (programming errors).
    pub fn normalise_row(&self, raw: &[f64], out: &mut [f64]) -> RowReport {
        self.row_map().normalise(raw, out)
    }
}

#[cfg(test)]
mod tests;
