//! Loading a CSV file against a public [`Schema`] into a normalised [`Dataset`].
//!
//! The file must start with a header row. Columns are matched by name, in any order; quoted
//! headers and values are accepted, surrounding whitespace is trimmed, and columns the schema does
//! not mention are ignored (named in [`LoadReport::ignored`] and logged at `warn` level). Every feature value must be a
//! finite number and every label must be the schema's `positive` (→ +1) or `negative` (→ −1)
//! value. Rows are normalised with [`Schema::normalise_row`], so every row of the result has
//! ||x||₂ ≤ 1.
//!
//! Errors are one line each and name the file, the 1-based line (the header is line 1) and the
//! column, e.g. ``data.csv:17: column `glucose`: not a number: "abc"``.
//!
//! Logging stays aggregate: the number of values clipped to the declared bounds is logged per
//! feature (`warn` level); with a ball-mode schema the number of rows projected onto the unit ball
//! and of values equal to a feature's `missing` sentinel are logged at `debug` level. Record
//! values and row numbers are never logged.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use crate::data::dataset::Dataset;
use crate::data::normalise::MapMode;
use crate::data::schema::{FeatureSpec, LabelSpec, Schema};

mod error;
pub use error::DataError;
use error::quoted;

/// What loading a file did, in aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// Number of data rows loaded.
    pub rows: usize,
    /// For every feature, in schema order: how many of its values were clipped to the declared
    /// bounds.
    pub clipped: Vec<(String, usize)>,
    /// For every feature, in schema order: how many of its values were its `missing` sentinel
    /// (ball mode; all zero otherwise).
    pub missing: Vec<(String, usize)>,
    /// Rows projected onto the unit ball (ball mode; 0 otherwise).
    pub projected: usize,
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

/// Opens `path` and loads it with [`read_csv`]; messages name the path as given.
pub fn load_csv(path: &Path, schema: &Schema) -> Result<(Dataset, LoadReport), DataError> {
    let origin = path.display().to_string();
    let file = File::open(path).map_err(|source| DataError::Io {
        origin: origin.clone(),
        source,
    })?;
    read_csv(BufReader::new(file), &origin, schema)
}

/// The raw feature values of a file, clipped to the schema's bounds, for data releases
/// ([`crate::privacy::data_release`]) that are stated in raw units. A value equal to its
/// feature's `missing` sentinel (ball mode) is replaced by the raw value the map sends to 0,
/// [`FeatureSpec::raw_of_center`] (T⁻¹ of the declared `center`): a public constant, so the
/// replacement reveals nothing, and it keeps a sentinel (often far outside the bounds) from
/// being clipped to a bound.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RawRows {
    /// Per row, the values in schema order, each in its feature's [lo, hi].
    pub values: Vec<Vec<f64>>,
    /// Per row, whether its label is the positive one.
    pub positive: Vec<bool>,
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
    read(BufReader::new(file), &origin, schema, true)
}

/// [`read_csv`], also keeping the rows' raw values ([`RawRows`]).
pub fn read_csv_with_raw<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
) -> Result<(Dataset, RawRows, LoadReport), DataError> {
    read(reader, origin, schema, true)
}

/// Reads CSV text from `reader` against `schema` and returns the normalised dataset with a report
/// of how many values were clipped. `origin` (usually the file name) starts every error message.
pub fn read_csv<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
) -> Result<(Dataset, LoadReport), DataError> {
    read(reader, origin, schema, false).map(|(d, _, r)| (d, r))
}

/// [`read_csv`], keeping the raw rows when `keep_raw`.
fn read<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
    keep_raw: bool,
) -> Result<(Dataset, RawRows, LoadReport), DataError> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(reader);
    let header = rdr.headers().map_err(|e| csv_error(origin, e, 1))?.clone();
    if header.is_empty() {
        return Err(DataError::Empty {
            origin: origin.to_owned(),
        });
    }
    let columns = Columns::find(&header, origin, schema)?;
    let ignored = ignored_columns(&header, schema);
    let mut rows = Rows::new(schema);
    rows.keep_raw = keep_raw;
    let mut record = csv::StringRecord::new();
    let mut last_line = 1;
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_error(origin, e, last_line + 1)),
        }
        let line = record.position().map_or(last_line + 1, |pos| pos.line());
        last_line = line;
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
    if rows.y.is_empty() {
        return Err(DataError::NoRows {
            origin: origin.to_owned(),
        });
    }
    let raw = std::mem::take(&mut rows.kept);
    let (dataset, mut report) = rows.finish(origin);
    if !ignored.is_empty() {
        tracing::warn!(
            file = origin,
            "{} column(s) not in the schema are ignored: {}",
            ignored.len(),
            ignored.join(", ")
        );
    }
    report.ignored = ignored;
    Ok((dataset, raw, report))
}

/// A CSV-level error as a [`DataError`], on one line; `fallback_line` where the parser gives none.
fn csv_error(origin: &str, e: csv::Error, fallback_line: u64) -> DataError {
    let line = e.position().map_or(fallback_line, |p| p.line());
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

/// Where a value stands: the file and the 1-based line.
#[derive(Clone, Copy)]
struct Place<'a> {
    origin: &'a str,
    line: u64,
}

/// The header positions of the columns the schema uses.
struct Columns {
    /// Of every feature, in schema order.
    features: Vec<usize>,
    /// Of the label.
    label: usize,
}

impl Columns {
    /// Finds every schema column in `header`, refusing missing and repeated ones (features in
    /// schema order first, then the label).
    fn find(header: &csv::StringRecord, origin: &str, schema: &Schema) -> Result<Self, DataError> {
        let mut index: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, name) in header.iter().enumerate() {
            index.entry(name).or_default().push(i);
        }
        let features = schema
            .features
            .iter()
            .map(|f| column_index(&index, &f.name, "feature", origin))
            .collect::<Result<Vec<_>, _>>()?;
        let label = column_index(&index, &schema.label.column, "label", origin)?;
        Ok(Self { features, label })
    }
}

/// The one position of `column` in the header, by its header `index`.
fn column_index(
    index: &HashMap<&str, Vec<usize>>,
    column: &str,
    role: &'static str,
    origin: &str,
) -> Result<usize, DataError> {
    match index.get(column).map(Vec::as_slice) {
        None | Some([]) => Err(DataError::MissingColumn {
            origin: origin.to_owned(),
            column: column.to_owned(),
            role,
        }),
        Some([i]) => Ok(*i),
        Some(_) => Err(DataError::DuplicateColumn {
            origin: origin.to_owned(),
            column: column.to_owned(),
        }),
    }
}

/// The header's columns the schema does not use, in header order.
fn ignored_columns(header: &csv::StringRecord, schema: &Schema) -> Vec<String> {
    let used: std::collections::HashSet<&str> = schema
        .features
        .iter()
        .map(|f| f.name.as_str())
        .chain(std::iter::once(schema.label.column.as_str()))
        .collect();
    header
        .iter()
        .filter(|h| !used.contains(h))
        .map(str::to_owned)
        .collect()
}

/// A feature value: a finite number.
fn parse_feature(text: &str, feature: &FeatureSpec, at: Place) -> Result<f64, DataError> {
    let v: f64 = text.parse().map_err(|_| DataError::NotANumber {
        origin: at.origin.to_owned(),
        line: at.line,
        column: feature.name.clone(),
        value: quoted(text),
    })?;
    if !v.is_finite() {
        return Err(DataError::NotFinite {
            origin: at.origin.to_owned(),
            line: at.line,
            column: feature.name.clone(),
            value: quoted(text),
        });
    }
    Ok(v)
}

/// A label value: the schema's positive (+1) or negative (−1) value.
fn parse_label(text: &str, label: &LabelSpec, at: Place) -> Result<f64, DataError> {
    if text == label.positive {
        Ok(1.0)
    } else if text == label.negative {
        Ok(-1.0)
    } else {
        Err(DataError::UnknownLabel {
            origin: at.origin.to_owned(),
            line: at.line,
            column: label.column.clone(),
            value: quoted(text),
            positive: label.positive.as_str().into(),
            negative: label.negative.as_str().into(),
        })
    }
}

/// The rows read so far: normalised features, labels and clipping counts.
struct Rows<'s> {
    schema: &'s Schema,
    x: Vec<f64>,
    y: Vec<f64>,
    /// The current row's raw feature values.
    raw: Vec<f64>,
    /// The current row, normalised.
    out: Vec<f64>,
    /// Per feature, how many values lay outside the declared bounds.
    clipped: Vec<usize>,
    /// Per feature, how many values were its `missing` sentinel.
    missing: Vec<usize>,
    /// Rows projected onto the unit ball.
    projected: usize,
    /// Whether to keep the raw rows in `kept`.
    keep_raw: bool,
    /// The raw rows, when kept.
    kept: RawRows,
}

impl<'s> Rows<'s> {
    fn new(schema: &'s Schema) -> Self {
        let p = schema.features.len();
        Self {
            schema,
            x: Vec::new(),
            y: Vec::new(),
            raw: vec![0.0; p],
            out: vec![0.0; schema.dim()],
            clipped: vec![0usize; p],
            missing: vec![0usize; p],
            projected: 0,
            keep_raw: false,
            kept: RawRows::default(),
        }
    }

    /// Parses one record (features in schema order, then the label) and appends it normalised.
    fn push(
        &mut self,
        record: &csv::StringRecord,
        columns: &Columns,
        at: Place,
    ) -> Result<(), DataError> {
        let ball = self.schema.mode() == MapMode::Ball;
        let features = self.schema.features.iter().zip(&columns.features);
        for (j, (f, &col)) in features.enumerate() {
            let v = parse_feature(&record[col], f, at)?;
            self.raw[j] = v;
            if ball && f.is_missing(v) {
                self.missing[j] += 1;
            } else if v < f.lo || v > f.hi {
                self.clipped[j] += 1;
            }
        }
        let label = parse_label(&record[columns.label], &self.schema.label, at)?;
        let report = self.schema.normalise_row(&self.raw, &mut self.out);
        self.projected += usize::from(report.projected);
        self.x.extend_from_slice(&self.out);
        self.y.push(label);
        if self.keep_raw {
            let row = self
                .schema
                .features
                .iter()
                .zip(&self.raw)
                .map(|(f, &v)| {
                    if ball && f.is_missing(v) {
                        f.raw_of_center()
                    } else {
                        v.clamp(f.lo, f.hi)
                    }
                })
                .collect();
            self.kept.values.push(row);
            self.kept.positive.push(label > 0.0);
        }
        Ok(())
    }

    /// The dataset and its report; logs (at `warn` level) how many values each feature clipped.
    fn finish(self, origin: &str) -> (Dataset, LoadReport) {
        let names = || self.schema.features.iter().map(|f| f.name.clone());
        let report = LoadReport {
            rows: self.y.len(),
            clipped: names().zip(self.clipped).collect(),
            missing: names().zip(self.missing).collect(),
            projected: self.projected,
            ignored: Vec::new(),
        };
        if self.schema.mode() == MapMode::Ball {
            let missing: usize = report.missing.iter().map(|(_, n)| n).sum();
            tracing::debug!(
                file = origin,
                rows = report.rows,
                projected = report.projected,
                missing,
                "ball map: rows projected onto the unit ball, values equal to their missing sentinel"
            );
        }
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
        (Dataset::new(self.x, self.y, self.schema.dim()), report)
    }
}

#[cfg(test)]
mod tests;
