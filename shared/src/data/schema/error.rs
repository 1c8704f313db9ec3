//! [`SchemaError`]: why a schema could not be loaded, one line each, starting with the file.

use std::fmt;

/// Why a schema could not be loaded. Every message is one line and starts with the file name.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The schema file could not be read.
    #[error("{origin}: cannot read schema: {source}")]
    Io {
        /// The file, as given.
        origin: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Malformed TOML, a missing or mistyped field, or an unknown key.
    #[error("{origin}{}: {message}", Position(*.line, *.column))]
    Syntax {
        /// The file, as given.
        origin: String,
        /// 1-based line of the offending text, when the parser reports one.
        line: Option<usize>,
        /// 1-based column of the offending text, when the parser reports one.
        column: Option<usize>,
        /// The parser's message, on one line.
        message: String,
    },
    /// No `[[features]]` entry.
    #[error("{origin}: features: at least one `[[features]]` entry is required")]
    NoFeatures {
        /// The file, as given.
        origin: String,
    },
    /// A name (schema name, feature name, label column or label value) is empty.
    #[error("{origin}: {field}: must not be empty")]
    EmptyName {
        /// The file, as given.
        origin: String,
        /// Which field, e.g. ``feature #3 name`` or `label.positive`.
        field: String,
    },
    /// Two features share a name.
    #[error("{origin}: feature `{name}`: declared more than once")]
    DuplicateFeature {
        /// The file, as given.
        origin: String,
        /// The repeated name.
        name: String,
    },
    /// The label column is also declared as a feature.
    #[error("{origin}: label.column `{column}`: is also declared as a feature")]
    LabelIsFeature {
        /// The file, as given.
        origin: String,
        /// The column name.
        column: String,
    },
    /// A bound is NaN or infinite, or `hi − lo` overflows.
    #[error(
        "{origin}: feature `{name}`: lo ({lo}) and hi ({hi}) must be finite, with a finite hi − lo"
    )]
    NonFiniteBound {
        /// The file, as given.
        origin: String,
        /// The feature.
        name: String,
        /// Declared lower bound.
        lo: f64,
        /// Declared upper bound.
        hi: f64,
    },
    /// `lo ≥ hi`.
    #[error("{origin}: feature `{name}`: lo ({lo}) must be < hi ({hi})")]
    EmptyRange {
        /// The file, as given.
        origin: String,
        /// The feature.
        name: String,
        /// Declared lower bound.
        lo: f64,
        /// Declared upper bound.
        hi: f64,
    },
    /// `label.positive == label.negative`.
    #[error("{origin}: label: positive and negative must differ (both are {value:?})")]
    SameLabelValues {
        /// The file, as given.
        origin: String,
        /// The value given to both.
        value: String,
    },
    /// Features whose bounds were observed in the data (`bounds = "observed"`): refused by every
    /// release path.
    #[error(
        "{origin}: feature `{first}`{more}: bounds observed in the data (`bounds = \"observed\"`, from `schema init`) must be replaced by public bounds before anything is released; then delete the `bounds` lines (dpagg-node check --strict lists them)"
    )]
    ObservedBounds {
        /// The file, as given.
        origin: String,
        /// The first such feature.
        first: String,
        /// ` and N more`, or empty.
        more: String,
    },
    /// A key of the `[normalisation]` table or a ball-mode key of a feature is missing, out of
    /// range, or given in paper mode.
    #[error("{origin}: {field}: {message}")]
    Normalisation {
        /// The file, as given.
        origin: String,
        /// Which key, e.g. ``feature `glucose` scale`` or `normalisation.row_scale`.
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// Formats an optional `:line:column` suffix.
pub(super) struct Position(Option<usize>, Option<usize>);

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(l), Some(c)) => write!(f, ":{l}:{c}"),
            (Some(l), None) => write!(f, ":{l}"),
            _ => Ok(()),
        }
    }
}

/// 1-based (line, column) of byte offset `at` in `text` (column counted in characters).
pub(super) fn line_col(text: &str, at: usize) -> (usize, usize) {
    let at = at.min(text.len());
    let at = (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Collapses whitespace runs (including newlines) to single spaces, so messages stay on one line.
pub(super) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
