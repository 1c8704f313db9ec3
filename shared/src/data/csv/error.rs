//! [`DataError`]: why a CSV file could not be loaded, one line each, naming file, line and column.

/// Why a CSV file could not be loaded. Every message is one line and starts with the file name,
/// followed by the line number and column where they apply.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The file could not be opened or read.
    #[error("{origin}: cannot read: {source}")]
    Io {
        /// The file, as given.
        origin: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no header row.
    #[error("{origin}:1: empty file: a header row naming the columns is required")]
    Empty {
        /// The file, as given.
        origin: String,
    },
    /// The header has more columns than any table this reads ([`super::MAX_COLUMNS`]).
    #[error(
        "{origin}:1: {columns} columns in the header, more than the {max} a table may have (is this the right file and separator?)"
    )]
    TooWide {
        /// The file, as given.
        origin: String,
        /// Columns in its header.
        columns: usize,
        /// [`super::MAX_COLUMNS`].
        max: usize,
    },
    /// The file has a header but no data rows.
    #[error("{origin}:1: header only, no data rows")]
    NoRows {
        /// The file, as given.
        origin: String,
    },
    /// A column the schema needs is not in the header.
    #[error("{origin}:1: column `{column}`: schema {role} missing from the header{hint}")]
    MissingColumn {
        /// The file, as given.
        origin: String,
        /// The missing column.
        column: String,
        /// `"label"` or `"feature"`.
        role: &'static str,
        /// What the header looked like read with the separator used, and what to do (starts
        /// with a space, or empty).
        hint: String,
    },
    /// A column the schema needs appears more than once in the header (ambiguous).
    #[error("{origin}:1: column `{column}`: appears more than once in the header")]
    DuplicateColumn {
        /// The file, as given.
        origin: String,
        /// The repeated column.
        column: String,
    },
    /// A line has a different number of fields than the header.
    #[error("{origin}:{line}: expected {expected} fields (as in the header), found {found}")]
    FieldCount {
        /// The file, as given.
        origin: String,
        /// 1-based line.
        line: u64,
        /// Number of header fields.
        expected: usize,
        /// Number of fields on this line.
        found: usize,
    },
    /// A feature value does not parse as a number (and is not a declared missing marker).
    #[error(
        "{origin}:{line}: column `{column}`: not a number: {value:?} (if it means \"not measured\", declare it in [csv] missing or the feature's `missing`{})",
        declare(value)
    )]
    NotANumber {
        /// The file, as given.
        origin: String,
        /// 1-based line.
        line: u64,
        /// The feature column.
        column: String,
        /// The offending text (truncated if long).
        value: String,
    },
    /// A feature value is NaN or infinite.
    #[error("{origin}:{line}: column `{column}`: value must be finite, found {value:?}")]
    NotFinite {
        /// The file, as given.
        origin: String,
        /// 1-based line.
        line: u64,
        /// The feature column.
        column: String,
        /// The offending text (truncated if long).
        value: String,
    },
    /// A label value is neither the schema's positive nor negative value.
    #[error(
        "{origin}:{line}: column `{column}`: unknown label {value:?} (allowed: {positive:?} for +1, {negative:?} for -1)"
    )]
    UnknownLabel {
        /// The file, as given.
        origin: String,
        /// 1-based line.
        line: u64,
        /// The label column.
        column: String,
        /// The offending text (truncated if long).
        value: String,
        /// The schema's positive value (boxed to keep the error small).
        positive: Box<str>,
        /// The schema's negative value (boxed to keep the error small).
        negative: Box<str>,
    },
    /// A training row's label cell is blank.
    #[error(
        "{origin}:{line}: column `{column}`: the label is blank; every row a model learns from needs one (delete the row, or score unlabelled rows with `dpagg-aggregator predict`)"
    )]
    BlankLabel {
        /// The file, as given.
        origin: String,
        /// 1-based line.
        line: u64,
        /// The label column.
        column: String,
    },
    /// The file is not UTF-8 text.
    #[error(
        "{origin}:{line}: not UTF-8 text (byte 0x{byte:02x}); save the file as UTF-8 (e.g. Excel's \"CSV UTF-8\", or iconv -f latin1 -t utf-8)"
    )]
    NotUtf8 {
        /// The file, as given.
        origin: String,
        /// 1-based line of the first byte that is not UTF-8.
        line: u64,
        /// That byte.
        byte: u8,
    },
    /// Any other CSV-level problem.
    #[error("{origin}:{line}: {message}")]
    Csv {
        /// The file, as given.
        origin: String,
        /// 1-based line (best effort).
        line: u64,
        /// The parser's message, on one line.
        message: String,
    },
}

/// Longest offending value quoted in an error message.
pub(super) const MAX_QUOTED: usize = 40;

pub(super) fn quoted(value: &str) -> String {
    if value.chars().count() <= MAX_QUOTED {
        value.to_owned()
    } else {
        let mut s: String = value.chars().take(MAX_QUOTED).collect();
        s.push('…');
        s
    }
}

/// The marker to declare for a short non-number (`, e.g. [csv] missing = ["NA"]`), or nothing.
fn declare(value: &str) -> String {
    if value.chars().count() <= 12 {
        format!(", e.g. [csv] missing = [{value:?}]")
    } else {
        String::new()
    }
}
