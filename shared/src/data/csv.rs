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
    /// The file has a header but no data rows.
    #[error("{origin}:1: header only, no data rows")]
    NoRows {
        /// The file, as given.
        origin: String,
    },
    /// A column the schema needs is not in the header.
    #[error("{origin}:1: column `{column}`: schema {role} missing from the header")]
    MissingColumn {
        /// The file, as given.
        origin: String,
        /// The missing column.
        column: String,
        /// `"label"` or `"feature"`.
        role: &'static str,
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
    /// A feature value does not parse as a number.
    #[error("{origin}:{line}: column `{column}`: not a number: {value:?}")]
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
    /// Any other CSV-level problem (e.g. invalid UTF-8).
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
const MAX_QUOTED: usize = 40;

fn quoted(value: &str) -> String {
    if value.chars().count() <= MAX_QUOTED {
        value.to_owned()
    } else {
        let mut s: String = value.chars().take(MAX_QUOTED).collect();
        s.push('…');
        s
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
mod tests {
    use super::*;

    const SCHEMA: &str = r#"
name = "toy"
[label]
column = "outcome"
positive = "pos"
negative = "neg"
[[features]]
name = "glucose"
lo = 0.0
hi = 200.0
[[features]]
name = "age"
lo = 20.0
hi = 90.0
"#;

    fn schema() -> Schema {
        Schema::from_toml_str(SCHEMA, "toy.schema.toml").expect("valid schema")
    }

    fn read(text: &str) -> Result<(Dataset, LoadReport), DataError> {
        read_csv(text.as_bytes(), "data.csv", &schema())
    }

    /// Asserts the error is one line, starts with `data.csv:{line}` and mentions `needle`.
    fn check_msg(e: &DataError, line: u64, needle: &str) {
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(msg.starts_with(&format!("data.csv:{line}:")), "{msg}");
        assert!(msg.contains(needle), "{msg} should contain {needle}");
    }

    #[test]
    fn loads_quoted_reordered_with_extra_columns() {
        let text = "\"age\",\"id\",\"outcome\",\"glucose\"\n55,\"a\",\"pos\",100\n 20 , b , neg , 250\n90,c,pos,-1e3\n";
        let (d, report) = read(text).expect("loads");
        assert_eq!(d.len(), 3);
        assert_eq!(d.dim(), 3);
        assert_eq!(d.labels(), &[1.0, -1.0, 1.0]);
        let r3 = 3f64.sqrt();
        // glucose 100 → 0, age 55 → 0, intercept 1: all divided by sqrt(3).
        let want = [0.0, 0.0, 1.0 / r3];
        assert!(
            d.row(0)
                .iter()
                .zip(want)
                .all(|(a, b)| (a - b).abs() < 1e-15),
            "{:?}",
            d.row(0)
        );
        // glucose 250 clipped to 200 → +1, age 20 → −1.
        let want = [1.0 / r3, -1.0 / r3, 1.0 / r3];
        assert!(
            d.row(1)
                .iter()
                .zip(want)
                .all(|(a, b)| (a - b).abs() < 1e-15),
            "{:?}",
            d.row(1)
        );
        assert_eq!(report.rows, 3);
        assert_eq!(
            report.clipped,
            vec![("glucose".to_owned(), 2), ("age".to_owned(), 0)]
        );
        assert_eq!(report.total_clipped(), 2);
        assert_eq!(report.ignored, vec!["id".to_owned()]);
        assert!(d.max_row_norm() <= 1.0);
    }

    #[test]
    fn accepts_crlf_bom_and_blank_trailing_line() {
        let text = "\u{feff}glucose,age,outcome\r\n100,30,neg\r\n\r\n";
        let (d, report) = read(text).expect("loads");
        assert_eq!(d.len(), 1);
        assert_eq!(report.rows, 1);
    }

    #[test]
    fn load_csv_reads_a_file_and_names_a_missing_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("data.csv");
        std::fs::write(&p, "glucose,age,outcome\n100,30,neg\n").expect("write");
        let (d, _) = load_csv(&p, &schema()).expect("loads");
        assert_eq!(d.len(), 1);
        let missing = dir.path().join("nope.csv");
        let e = load_csv(&missing, &schema()).expect_err("missing");
        assert!(matches!(e, DataError::Io { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("{}: cannot read", missing.display())),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn empty_file() {
        for text in ["", "\n", "\n\n"] {
            let e = read(text).expect_err("empty");
            assert!(matches!(e, DataError::Empty { .. }), "{text:?}: {e:?}");
            check_msg(&e, 1, "empty file");
        }
    }

    #[test]
    fn header_only() {
        for text in [
            "glucose,age,outcome",
            "glucose,age,outcome\n",
            "glucose,age,outcome\n\n",
        ] {
            let e = read(text).expect_err("no rows");
            assert!(matches!(e, DataError::NoRows { .. }), "{e:?}");
            check_msg(&e, 1, "no data rows");
        }
    }

    #[test]
    fn missing_feature_column() {
        let e = read("glucose,outcome\n1,pos\n").expect_err("missing");
        assert!(
            matches!(
                e,
                DataError::MissingColumn {
                    role: "feature",
                    ..
                }
            ),
            "{e:?}"
        );
        check_msg(&e, 1, "column `age`");
    }

    #[test]
    fn missing_label_column() {
        let e = read("glucose,age,label\n1,30,pos\n").expect_err("missing");
        assert!(
            matches!(e, DataError::MissingColumn { role: "label", .. }),
            "{e:?}"
        );
        check_msg(&e, 1, "column `outcome`");
    }

    #[test]
    fn duplicate_used_column() {
        let e = read("glucose,age,glucose,outcome\n1,30,2,pos\n").expect_err("ambiguous");
        assert!(matches!(e, DataError::DuplicateColumn { .. }), "{e:?}");
        check_msg(&e, 1, "column `glucose`");
        // A repeated column the schema does not use is harmless.
        read("x,glucose,age,x,outcome\n0,1,30,0,pos\n").expect("loads");
    }

    #[test]
    fn wrong_field_count() {
        let e = read("glucose,age,outcome\n1,30,pos\n2,31\n").expect_err("short");
        assert!(
            matches!(
                e,
                DataError::FieldCount {
                    line: 3,
                    expected: 3,
                    found: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        check_msg(&e, 3, "expected 3 fields");
        let e = read("glucose,age,outcome\n1,30,pos,extra\n").expect_err("long");
        assert!(
            matches!(
                e,
                DataError::FieldCount {
                    line: 2,
                    found: 4,
                    ..
                }
            ),
            "{e:?}"
        );
    }

    #[test]
    fn non_numeric_value() {
        let e = read("glucose,age,outcome\n1,30,pos\n1,30,neg\nabc,30,pos\n").expect_err("nan");
        assert!(matches!(e, DataError::NotANumber { line: 4, .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "data.csv:4: column `glucose`: not a number: \"abc\""
        );
        let e = read("glucose,age,outcome\n1,,pos\n").expect_err("empty");
        assert!(matches!(e, DataError::NotANumber { line: 2, .. }), "{e:?}");
        check_msg(&e, 2, "column `age`");
        // Long values are truncated, embedded newlines stay escaped.
        let long = "x".repeat(500);
        let e = read(&format!("glucose,age,outcome\n\"{long}\n\",30,pos\n")).expect_err("long");
        let msg = e.to_string();
        assert!(msg.len() < 200 && !msg.contains('\n'), "{msg}");
    }

    #[test]
    fn line_numbers_count_multiline_quoted_fields() {
        let e = read("glucose,age,outcome\n1,30,\"pos\"\n\"1\",\"3\n0\",neg\n7,x,pos\n")
            .expect_err("bad");
        // Record 2 spans lines 3–4 (and its age is not a number either): it is reported first.
        assert!(matches!(e, DataError::NotANumber { line: 3, .. }), "{e:?}");
        let e = read("glucose,age,outcome\n1,30,\"p\nos\"\n7,x,pos\n").expect_err("bad");
        assert!(
            matches!(e, DataError::UnknownLabel { line: 2, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn nan_value() {
        for v in ["NaN", "nan"] {
            let e = read(&format!("glucose,age,outcome\n1,30,pos\n{v},30,pos\n")).expect_err("nan");
            assert!(matches!(e, DataError::NotFinite { line: 3, .. }), "{e:?}");
            check_msg(&e, 3, "column `glucose`");
            assert!(e.to_string().contains("finite"));
        }
    }

    #[test]
    fn infinite_value() {
        for v in ["inf", "-inf", "infinity", "1e400"] {
            let e = read(&format!("glucose,age,outcome\n1,{v},neg\n")).expect_err("inf");
            assert!(
                matches!(e, DataError::NotFinite { line: 2, .. }),
                "{v}: {e:?}"
            );
            check_msg(&e, 2, "column `age`");
        }
    }

    #[test]
    fn unknown_label_value() {
        let e = read("glucose,age,outcome\n1,30,pos\n1,30,maybe\n").expect_err("label");
        assert!(
            matches!(e, DataError::UnknownLabel { line: 3, .. }),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "data.csv:3: column `outcome`: unknown label \"maybe\" (allowed: \"pos\" for +1, \"neg\" for -1)"
        );
        // Labels are case-sensitive.
        let e = read("glucose,age,outcome\n1,30,POS\n").expect_err("label");
        assert!(
            matches!(e, DataError::UnknownLabel { line: 2, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn invalid_utf8_is_reported_with_line() {
        let mut bytes = b"glucose,age,outcome\n1,30,pos\n1,30,".to_vec();
        bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
        let e = read_csv(bytes.as_slice(), "data.csv", &schema()).expect_err("utf8");
        assert!(matches!(e, DataError::Csv { line: 3, .. }), "{e:?}");
        check_msg(&e, 3, "utf-8");
    }

    #[test]
    fn wild_values_still_give_unit_rows() {
        let mut text = String::from("glucose,age,outcome\n");
        let vals = [
            "-1e12", "1e12", "0", "200", "3.5e-300", "-0", "1e308", "-1e308",
        ];
        for (i, a) in vals.iter().enumerate() {
            for b in vals {
                text.push_str(&format!(
                    "{a},{b},{}\n",
                    if i % 2 == 0 { "pos" } else { "neg" }
                ));
            }
        }
        let (d, report) = read(&text).expect("loads");
        assert_eq!(d.len(), 64);
        assert!(d.max_row_norm() <= 1.0);
        assert!(report.total_clipped() > 0);
    }
}
