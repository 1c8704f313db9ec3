//! Loading a CSV file against a public [`Schema`] into a normalised [`Dataset`].
//!
//! Files as hospitals' tools export them:
//! - UTF-8 text, with or without a byte-order mark; anything else is one line naming the first
//!   line that is not UTF-8 and how to re-export ([`text`]).
//! - Lines ending in LF, CRLF or CR; line numbers in errors are the lines an editor shows.
//! - The separator `,`, `;`, tab or `|`: the schema's `[csv] separator`, or detected from the
//!   header line. With a separator other than `,`, a decimal comma (`1,5`) reads as 1.5.
//! - Missing values: cells equal to a declared marker ([`crate::data::schema::markers`]: the
//!   feature's `missing` or `[csv] missing`, texts such as `""` and `NA` or numbers such as `0`)
//!   map to the feature's centre and are counted; an undeclared blank or `NA` is an error that
//!   says how to declare it.
//!
//! The file must start with a header row. Columns are matched by name, in any order; quoted
//! headers and values are accepted, surrounding whitespace is trimmed, and columns the schema
//! does not mention are ignored (named in [`LoadReport::ignored`] and logged at `warn` level).
//! Every other feature value must be a finite number and every label the schema's `positive`
//! (→ +1) or `negative` (→ −1) value. Rows are normalised with [`Schema::normalise_row`], so
//! every row of the result has ||x||₂ ≤ 1. A header that lacks a schema column says which
//! separator it was read with and what it looked like.
//!
//! Errors are one line each and name the file, the 1-based line (the header is line 1) and the
//! column, e.g. ``data.csv:17: column `glucose`: not a number: "abc"``.
//!
//! Logging stays aggregate: the number of values clipped to the declared bounds is logged per
//! feature, and the traps of [`crate::data::diagnose`] (rows alike, a feature constant after the
//! map, far from its centre, mostly clipped or missing), at `warn` level; rows projected onto the unit
//! ball and missing values at `debug` level. Record values and row numbers are never logged.

use std::fs::File;
use std::path::Path;

use crate::data::dataset::Dataset;
use crate::data::schema::Schema;

pub mod categories;
mod columns;
mod error;
pub mod rows;
pub(crate) mod text;
pub use error::DataError;
use error::quoted;
use rows::{Place, Rows};
use text::Text;

/// What loading a file did, in aggregate.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadReport {
    /// Number of data rows loaded.
    pub rows: usize,
    /// For every feature, in schema order: how many of its values were clipped to the declared
    /// bounds.
    pub clipped: Vec<(String, usize)>,
    /// For every feature, in schema order: how many of its values lay more than
    /// [`rows::IMPLAUSIBLE`] widths of its bounds outside them (clipped too, and counted here
    /// apart: a unit error or a corrupt cell, not an extreme patient).
    pub implausible: Vec<(String, usize)>,
    /// For every feature, in schema order: how many of its values were missing (a declared
    /// marker).
    pub missing: Vec<(String, usize)>,
    /// For every feature, in schema order: how many of its values standardise far from its
    /// centre (|z| > [`rows::FAR`], [`Schema::standardise`]).
    pub saturated: Vec<(String, usize)>,
    /// Features whose every value (missing ones aside) maps to the same coordinate: constant
    /// after the map, so they carry no information.
    pub constant: Vec<String>,
    /// Rows projected onto the unit ball (ball mode; 0 otherwise).
    pub projected: usize,
    /// How alike the mapped rows are: ‖mean row‖² / mean ‖row‖² over the columns before the
    /// intercept ([`rows::alike`]); 1 when every row is the same point, near 0 for rows centred
    /// on the origin. Shown to the local operator only.
    pub alike: f64,
    /// For every feature, in schema order: the mean of its standardised values z̄, missing ones
    /// aside ([`Schema::standardise`]); how far its values sit from its centre, in scales, on
    /// average. Shown to the local operator only.
    pub mean_z: Vec<(String, f64)>,
    /// Per categorical column with any: cells not among its categories (read as missing, and
    /// counted in its indicators' `missing` too).
    pub unlisted: Vec<categories::Unlisted>,
    /// Header columns the schema does not use, in header order: ignored, and warned about, since
    /// a column the operator meant as a feature would otherwise be dropped without a word.
    pub ignored: Vec<String>,
}

impl LoadReport {
    /// Total number of clipped values over all features.
    pub fn total_clipped(&self) -> usize {
        self.clipped.iter().map(|(_, n)| n).sum()
    }
}

/// Most columns a file's header may have: far above any table (a wide EHR export has a few
/// thousand), far below what would make reading a row cost gigabytes.
pub const MAX_COLUMNS: usize = 100_000;

/// Refuses a header wider than [`MAX_COLUMNS`] before any row is read.
pub fn check_width(header: &csv::StringRecord, origin: &str) -> Result<(), DataError> {
    if header.len() > MAX_COLUMNS {
        return Err(DataError::TooWide {
            origin: origin.to_owned(),
            columns: header.len(),
            max: MAX_COLUMNS,
        });
    }
    Ok(())
}

/// Opens `path` and loads it with [`read_csv`]; messages name the path as given.
pub fn load_csv(path: &Path, schema: &Schema) -> Result<(Dataset, LoadReport), DataError> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|source| DataError::Io {
        origin: origin.clone(),
        source,
    })?;
    read_csv(file, &origin, schema)
}

/// The raw feature values of a file, clipped to the schema's bounds, for data releases
/// ([`crate::privacy::data_release`]) that are stated in raw units. A value equal to its
/// feature's `missing` sentinel (ball mode) is replaced by the raw value the map sends to 0,
/// [`FeatureSpec::raw_of_center`](crate::data::schema::FeatureSpec::raw_of_center) (T⁻¹ of the declared `center`): a public constant, so the
/// replacement reveals nothing, and it keeps a sentinel (often far outside the bounds) from
/// being clipped to a bound.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawRows {
    /// Per row, the values in schema order, each in its feature's [lo, hi].
    pub values: Vec<Vec<f64>>,
    /// Per row, whether its label is the positive one.
    pub positive: Vec<bool>,
    /// (row, feature) of every missing value, in row order (each stands in `values` at the
    /// feature's raw centre).
    pub missing: Vec<(usize, usize)>,
}

impl RawRows {
    /// The rows as a map reads them: clipped values, NaN where a value is missing (which every
    /// map sends to its feature's centre), for mapping the same records with another schema's
    /// constants ([`crate::data::agreed_map`]).
    pub fn records(&self) -> Vec<Vec<f64>> {
        let mut out = self.values.clone();
        for &(i, j) in &self.missing {
            out[i][j] = f64::NAN;
        }
        out
    }
}

/// [`load_csv`], also keeping the rows' raw values ([`RawRows`]).
pub fn load_csv_with_raw(
    path: &Path,
    schema: &Schema,
) -> Result<(Dataset, RawRows, LoadReport), DataError> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|source| DataError::Io {
        origin: origin.clone(),
        source,
    })?;
    read(file, &origin, schema, Label::Required, true).map(|r| (r.dataset, r.raw, r.report))
}

/// [`read_csv`], also keeping the rows' raw values ([`RawRows`]).
pub fn read_csv_with_raw<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
) -> Result<(Dataset, RawRows, LoadReport), DataError> {
    read(reader, origin, schema, Label::Required, true).map(|r| (r.dataset, r.raw, r.report))
}

/// [`read_csv_with_raw`] without logging the traps (the caller reports them, or the file is a
/// table the lab ships, whose traps are known).
pub fn read_csv_with_raw_quietly<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
) -> Result<(Dataset, RawRows, LoadReport), DataError> {
    read(reader, origin, schema, Label::Check, true).map(|r| (r.dataset, r.raw, r.report))
}

/// Reads CSV text from `reader` against `schema` and returns the normalised dataset with a report
/// of how many values were clipped. `origin` (usually the file name) starts every error message.
pub fn read_csv<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
) -> Result<(Dataset, LoadReport), DataError> {
    read(reader, origin, schema, Label::Required, false).map(|r| (r.dataset, r.report))
}

/// The rows of a file for scoring with a model: normalised like [`read_csv`]'s, with the labels
/// when the file has the label column (`None` when it does not): +1, −1, or 0 for a row whose
/// label cell is blank or not one of the schema's two values (scored, left out of accuracy).
pub fn load_rows(
    path: &Path,
    schema: &Schema,
) -> Result<(Dataset, Option<Vec<f64>>, LoadReport), DataError> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|source| DataError::Io {
        origin: origin.clone(),
        source,
    })?;
    let read = read(file, &origin, schema, Label::Optional, false)?;
    let labels = read.labelled.then(|| {
        let mut labels = read.dataset.labels().to_vec();
        for &i in &read.unlabelled {
            labels[i] = 0.0;
        }
        labels
    });
    Ok((read.dataset, labels, read.report))
}

/// [`load_csv`] for `dpagg-node check`, which prints the traps of [`crate::data::diagnose`]
/// itself: they are not also logged.
pub fn load_csv_for_check(
    path: &Path,
    schema: &Schema,
) -> Result<(Dataset, LoadReport), DataError> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|source| DataError::Io {
        origin: origin.clone(),
        source,
    })?;
    read(file, &origin, schema, Label::Check, false).map(|r| (r.dataset, r.report))
}

/// Whether a file must have the label column (and whether the traps are logged).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Required,
    Optional,
    /// Required, and the caller reports the traps.
    Check,
}

/// What [`read`] returns.
struct Read {
    dataset: Dataset,
    raw: RawRows,
    report: LoadReport,
    /// Whether the file had the label column (always, with [`Label::Required`]).
    labelled: bool,
    /// Rows whose label was blank or unknown ([`Label::Optional`] only; stored as +1).
    unlabelled: Vec<usize>,
}

/// Reads a whole file: text checks ([`text`]), header, rows ([`rows`]).
fn read<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
    label: Label,
    keep_raw: bool,
) -> Result<Read, DataError> {
    let text = Text::read(reader, origin)?;
    let separator = text.separator(schema);
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(separator.byte())
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = rdr
        .headers()
        .map_err(|e| csv_error(origin, e, &text))?
        .clone();
    if header.is_empty() {
        return Err(DataError::Empty {
            origin: origin.to_owned(),
        });
    }
    check_width(&header, origin)?;
    let columns = columns::find(&header, origin, schema, separator, label == Label::Optional)?;
    let ignored = columns::ignored(&header, schema);
    let mut rows = Rows::new(schema, keep_raw, separator);
    rows.lenient_labels = label == Label::Optional;
    let mut record = csv::StringRecord::new();
    while rdr
        .read_record(&mut record)
        .map_err(|e| csv_error(origin, e, &text))?
    {
        let line = record.position().map_or(1 + rows.len() as u64, |p| {
            text.record_line(p.byte() as usize)
        });
        if record.len() != header.len() {
            return Err(DataError::FieldCount {
                origin: origin.to_owned(),
                line,
                expected: header.len(),
                found: record.len(),
            });
        }
        rows.push(&record, &columns, Place { origin, line })?;
    }
    if rows.len() == 0 {
        return Err(DataError::NoRows {
            origin: origin.to_owned(),
        });
    }
    let raw = rows.kept.take().unwrap_or_default();
    let unlabelled = std::mem::take(&mut rows.unlabelled);
    let (dataset, mut report) = rows.finish();
    if !ignored.is_empty() && label != Label::Check {
        tracing::warn!(
            file = origin,
            "{} column(s) not in the schema are ignored: {}",
            ignored.len(),
            ignored.join(", ")
        );
    }
    report.ignored = ignored;
    log_report(origin, schema, &report, label != Label::Check);
    Ok(Read {
        dataset,
        raw,
        report,
        labelled: columns.label.is_some(),
        unlabelled,
    })
}

/// Logs what loading did: clipped values per feature and the traps of
/// [`crate::data::diagnose`] at `warn` (each with its fix), the rest at `debug`. Counts only.
fn log_report(origin: &str, schema: &Schema, report: &LoadReport, traps: bool) {
    let total = report.total_clipped();
    if total > 0 {
        let per_feature = report
            .clipped
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name}={n}"))
            .collect::<Vec<_>>()
            .join(", ");
        tracing::warn!(
            file = origin,
            total,
            "values outside the schema's declared bounds were clipped: {per_feature}"
        );
    }
    let missing: usize = report.missing.iter().map(|(_, n)| n).sum();
    tracing::debug!(
        file = origin,
        rows = report.rows,
        projected = report.projected,
        missing,
        "rows projected onto the unit ball, missing values"
    );
    if traps {
        for finding in crate::data::diagnose::data_findings(schema, report) {
            tracing::warn!(file = origin, "{finding}");
        }
    }
}

/// A CSV-level error as a [`DataError`], on one line, at the line of the parser's position.
fn csv_error(origin: &str, e: csv::Error, text: &Text) -> DataError {
    let line = e
        .position()
        .map_or(1, |p| text.record_line(p.byte() as usize));
    let message = e
        .to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    match e.into_kind() {
        csv::ErrorKind::Io(source) => DataError::Io {
            origin: origin.to_owned(),
            source,
        },
        _ => DataError::Csv {
            origin: origin.to_owned(),
            line,
            message,
        },
    }
}

#[cfg(test)]
mod tests;
