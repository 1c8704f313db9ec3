//! The **agreed map**: centres, scales (and optionally a k-dimensional subspace) that every
//! organisation applies to its rows before training a learner, agreed from summaries before
//! any learner is trained, instead of the default map's constants from the schema's bounds.
//!
//! Why. The default map ([`crate::data::schema::bounds_rule`]) centres each feature in the
//! middle of its declared bounds. For a zero-heavy or skewed feature every typical value then
//! lands near the edge of the scale, every row becomes a long vector in nearly the same
//! direction, and after the projection onto the unit ball the rows are alike: a private
//! learner's noise swamps what is left. A map that fits the rows — standardisation by the
//! rows' own means and spreads, and on a wide table a few directions that carry the label —
//! gives the learners rows that differ.
//!
//! Where the constants come from ([`summaries`], [`derive`](mod@derive)): per-class counts, means and
//! covariances of the transformed values, either exactly from the aggregator's own rows
//! (which the aggregator then reveals to the nodes, knowingly) or from differentially private
//! releases of them (the aggregator's own, charged to its rows, or the nodes' pooled, charged in
//! each node's ledger like any release). Everything after the summaries is post-processing.
//!
//! **A node's guarantee does not depend on the map** (`docs/proofs/agreed-map.md`). The map is
//! fixed before the node reads a row and is applied to one record at a time, and its output is
//! projected onto the unit ball like every map; so replacing one record changes one mapped row
//! and every mechanism's replace-one proof, which assumes only ‖x‖₂ ≤ 1, holds as it is. A
//! hostile map — every row sent to one point, or a map aimed at one record — can waste the
//! node's learner, never its budget: the guarantee is the mechanism's, stated before training.
//!
//! The map travels in the learner request (`LearnerSpec.map` on the wire), is part of the
//! spec's identity and of the signed release metadata, and the learner's schema fingerprint is
//! that of the schema with the map applied ([`AgreedMap::apply`]), which `model.json` records.

use crate::data::dataset::Dataset;
use crate::data::normalise::{MapMode, Normalisation, Subspace, Transform};
use crate::data::schema::{MapNote, Schema, SchemaError};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub mod derive;
pub mod own;
pub mod summaries;

pub use derive::{Components, DEFAULT_COMPONENTS, derive, derive_split};
pub use own::{OwnMap, from_own_rows};
pub use summaries::{ClassSummary, Summaries};

/// The `format` of a map file this version writes and reads.
pub const FORMAT: &str = "dpagg-map/1";

/// Most features or components a map may hold (a wire message's bound).
pub const MAX_FEATURES: usize = 4096;

/// Longest `source` text a map may carry.
pub const MAX_SOURCE: usize = 500;

/// One feature's constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureMap {
    /// The feature's name (must match the schema's, in order).
    pub name: String,
    /// T, applied before centring.
    pub transform: Transform,
    /// log1p only: T(v) = ln(1 + v/unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<f64>,
    /// The centre of T(v).
    pub center: f64,
    /// The scale of T(v), > 0.
    pub scale: f64,
}

/// A map the organisations agreed on (module docs). Serialised as a TOML file (`map.toml`)
/// and carried by `LearnerSpec.map`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgreedMap {
    /// [`FORMAT`].
    pub format: String,
    /// Fingerprint of the public schema it applies to.
    pub schema: String,
    /// Where its constants come from and what their release cost, in words.
    pub source: String,
    /// The factor on every standardised feature (or component).
    pub row_scale: f64,
    /// The constant appended for the intercept, in (0, 1).
    pub intercept_value: f64,
    /// Per feature, in the schema's order.
    pub features: Vec<FeatureMap>,
    /// The k directions, when the map keeps a subspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subspace: Option<Subspace>,
}

/// Why a map cannot be read, made or applied.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The file cannot be read.
    #[error("{origin}: {source}")]
    Io {
        /// The file.
        origin: String,
        /// The error.
        source: std::io::Error,
    },
    /// The text is not a map.
    #[error("{origin}: {message}")]
    Syntax {
        /// The file.
        origin: String,
        /// What is wrong, with its line when known.
        message: String,
    },
    /// The map was made for another schema.
    #[error(
        "the map was made for schema {map}…, this schema's fingerprint is {ours}… (both sides must use the same schema file)"
    )]
    OtherSchema {
        /// The map's schema fingerprint (first 16 characters).
        map: String,
        /// Ours (first 16 characters).
        ours: String,
    },
    /// The map's features are not the schema's.
    #[error("{0}")]
    Features(String),
    /// The schema uses the paper map.
    #[error("schema `{0}` uses the paper map; an agreed map replaces the ball map's constants")]
    NotBall(String),
    /// A subspace larger than the features.
    #[error("{k} components asked for {p} features: choose between 1 and {p}")]
    Components {
        /// Asked for.
        k: usize,
        /// Features.
        p: usize,
    },
    /// The summaries cannot give a map.
    #[error("cannot derive a map: {0}")]
    Summaries(String),
    /// The schema with the map applied is invalid (a constant out of range).
    #[error(transparent)]
    Invalid(#[from] SchemaError),
}

fn short(fingerprint: &str) -> String {
    fingerprint.chars().take(16).collect()
}

impl AgreedMap {
    /// `schema` with this map's constants, subspace and provenance: the schema learners under
    /// this map are trained on, whose fingerprint they carry. Checks that the map was made for
    /// `schema` (its fingerprint and features) and that every constant is valid.
    pub fn apply(&self, schema: &Schema) -> Result<Schema, MapError> {
        if self.format != FORMAT {
            return Err(MapError::Features(format!(
                "map format {:?}, this version reads {FORMAT:?}",
                self.format
            )));
        }
        if schema.mode() != MapMode::Ball {
            return Err(MapError::NotBall(schema.name.clone()));
        }
        if self.source.chars().count() > MAX_SOURCE || self.source.chars().any(char::is_control) {
            return Err(MapError::Features(format!(
                "the map's source must be one line of at most {MAX_SOURCE} characters"
            )));
        }
        let ours = schema.fingerprint();
        if self.schema != ours {
            return Err(MapError::OtherSchema {
                map: short(&self.schema),
                ours: short(&ours),
            });
        }
        if self.features.len() != schema.features.len() {
            return Err(MapError::Features(format!(
                "the map has {} features, the schema {}",
                self.features.len(),
                schema.features.len()
            )));
        }
        let mut out = schema.clone();
        for (f, m) in out.features.iter_mut().zip(&self.features) {
            if f.name != m.name {
                return Err(MapError::Features(format!(
                    "the map's feature `{}` stands where the schema has `{}`",
                    m.name, f.name
                )));
            }
            f.transform = Some(m.transform);
            f.unit = m.unit;
            f.center = Some(m.center);
            f.scale = Some(m.scale);
            f.source = None;
        }
        out.normalisation = Some(Normalisation {
            mode: MapMode::Ball,
            row_scale: Some(self.row_scale),
            intercept_value: Some(self.intercept_value),
        });
        out.subspace = self.subspace.clone();
        out.agreed_map = Some(MapNote {
            base: self.schema.clone(),
            source: self.source.clone(),
        });
        Ok(out.validated("the agreed map")?)
    }

    /// The same constants on every feature, without the subspace (row scale 2/√p): the map of
    /// the aggregator's own model, which is not private and needs no reduction.
    pub fn without_subspace(&self) -> AgreedMap {
        let p = self.features.len().max(1) as f64;
        AgreedMap {
            subspace: None,
            row_scale: crate::data::normalise::DEFAULT_ROW_SCALE_KAPPA / p.sqrt(),
            ..self.clone()
        }
    }

    /// `records` (raw values in schema order, NaN where missing) with labels `positive`,
    /// mapped by `schema` — the public schema with this map applied ([`AgreedMap::apply`]):
    /// one record at a time, so replacing a record changes one row.
    pub fn rows(schema: &Schema, records: &[Vec<f64>], positive: &[bool]) -> Dataset {
        let dim = schema.dim();
        let mut x = Vec::with_capacity(records.len() * dim);
        let mut out = vec![0.0; dim];
        for row in records {
            schema.normalise_row(row, &mut out);
            x.extend_from_slice(&out);
        }
        let y = positive
            .iter()
            .map(|&p| if p { 1.0 } else { -1.0 })
            .collect();
        Dataset::new(x, y, dim)
    }

    /// k, when the map keeps a subspace.
    pub fn components(&self) -> Option<usize> {
        self.subspace.as_ref().map(Subspace::components)
    }

    /// Reads a map file (TOML). Errors start with the path.
    pub fn load(path: &Path) -> Result<AgreedMap, MapError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| MapError::Io {
            origin: origin.clone(),
            source,
        })?;
        Self::from_toml_str(&text, &origin)
    }

    /// Parses a map from TOML text; `origin` starts every error.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<AgreedMap, MapError> {
        toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
            MapError::Syntax {
                origin: origin.to_owned(),
                message: match line {
                    Some(l) => format!("line {l}: {message}"),
                    None => message,
                },
            }
        })
    }

    /// The map as a TOML file, with a comment that says what it is and what it reveals.
    pub fn to_toml(&self) -> String {
        let body = toml::to_string(self).unwrap_or_default();
        let mut head = String::from(
            "# An agreed map (dpagg-aggregator map): every organisation applies it to its rows\n\
             # before training a learner (dpagg-node publish --map FILE). It is public: send it\n\
             # with the schema.\n",
        );
        head.push_str(&format!("# Source: {}\n", self.source));
        head + &body
    }
}

#[cfg(test)]
mod tests;
