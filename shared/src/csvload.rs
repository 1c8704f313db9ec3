//! Loading a CSV file against a public [`Schema`] into a normalised [`Dataset`].
//!
//! The file must start with a header row. Columns are matched by name, in any order; quoted
//! headers and values are accepted, surrounding whitespace is trimmed, and columns the schema does
//! not mention are ignored (their names are logged at `debug` level). Every feature value must be a
//! finite number and every label must be the schema's `positive` (→ +1) or `negative` (→ −1)
//! value. Rows are normalised with [`Schema::normalise_row`], so every row of the result has
//! ||x||₂ ≤ 1.
//!
//! Errors are one line each and name the file, the 1-based line (the header is line 1) and the
//! column, e.g. ``data.csv:17: column `glucose`: not a number: "abc"``.
//!
//! Logging stays aggregate: the number of values clipped to the declared bounds is logged per
//! feature (`warn` level); record values and row numbers of clipped values are never logged.

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use crate::dataset::Dataset;
use crate::schema::Schema;

/// What loading a file did, in aggregate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadReport {
    /// Number of data rows loaded.
    pub rows: usize,
    /// For every feature, in schema order: how many of its values were clipped to the declared
    /// bounds.
    pub clipped: Vec<(String, usize)>,
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

/// Reads CSV text from `reader` against `schema` and returns the normalised dataset with a report
/// of how many values were clipped. `origin` (usually the file name) starts every error message.
pub fn read_csv<R: std::io::Read>(
    reader: R,
    origin: &str,
    schema: &Schema,
) -> Result<(Dataset, LoadReport), DataError> {
    let o = || origin.to_owned();
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(reader);

    let csv_err = |e: csv::Error, fallback_line: u64| -> DataError {
        let line = e.position().map_or(fallback_line, |p| p.line());
        let message = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        match e.into_kind() {
            csv::ErrorKind::Io(source) => DataError::Io {
                origin: o(),
                source,
            },
            _ => DataError::Csv {
                origin: o(),
                line,
                message,
            },
        }
    };

    let header = rdr.headers().map_err(|e| csv_err(e, 1))?.clone();
    if header.is_empty() {
        return Err(DataError::Empty { origin: o() });
    }

    // Column index of every header name, refusing ambiguity for the columns we use.
    let mut index: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, name) in header.iter().enumerate() {
        index.entry(name).or_default().push(i);
    }
    let find = |column: &str, role: &'static str| -> Result<usize, DataError> {
        match index.get(column).map(Vec::as_slice) {
            None | Some([]) => Err(DataError::MissingColumn {
                origin: o(),
                column: column.to_owned(),
                role,
            }),
            Some([i]) => Ok(*i),
            Some(_) => Err(DataError::DuplicateColumn {
                origin: o(),
                column: column.to_owned(),
            }),
        }
    };
    let feature_cols = schema
        .features
        .iter()
        .map(|f| find(&f.name, "feature"))
        .collect::<Result<Vec<_>, _>>()?;
    let label_col = find(&schema.label.column, "label")?;
    let used: std::collections::HashSet<&str> = schema
        .features
        .iter()
        .map(|f| f.name.as_str())
        .chain(std::iter::once(schema.label.column.as_str()))
        .collect();
    let extra: Vec<&str> = header.iter().filter(|h| !used.contains(h)).collect();
    if !extra.is_empty() {
        tracing::debug!(file = origin, ignored = ?extra, "columns not in the schema are ignored");
    }

    let dim = schema.dim();
    let p = schema.features.len();
    let mut x = Vec::new();
    let mut y = Vec::new();
    let mut raw = vec![0.0; p];
    let mut out = vec![0.0; dim];
    let mut clipped = vec![0usize; p];
    let mut record = csv::StringRecord::new();
    let mut last_line = 1;
    loop {
        match rdr.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(csv_err(e, last_line + 1)),
        }
        let line = record.position().map_or(last_line + 1, |pos| pos.line());
        last_line = line;
        if record.len() != header.len() {
            return Err(DataError::FieldCount {
                origin: o(),
                line,
                expected: header.len(),
                found: record.len(),
            });
        }
        for (j, (f, &col)) in schema.features.iter().zip(&feature_cols).enumerate() {
            let text = &record[col];
            let v: f64 = text.parse().map_err(|_| DataError::NotANumber {
                origin: o(),
                line,
                column: f.name.clone(),
                value: quoted(text),
            })?;
            if !v.is_finite() {
                return Err(DataError::NotFinite {
                    origin: o(),
                    line,
                    column: f.name.clone(),
                    value: quoted(text),
                });
            }
            raw[j] = v;
            if v < f.lo || v > f.hi {
                clipped[j] += 1;
            }
        }
        let label_text = &record[label_col];
        let label = if label_text == schema.label.positive {
            1.0
        } else if label_text == schema.label.negative {
            -1.0
        } else {
            return Err(DataError::UnknownLabel {
                origin: o(),
                line,
                column: schema.label.column.clone(),
                value: quoted(label_text),
                positive: schema.label.positive.as_str().into(),
                negative: schema.label.negative.as_str().into(),
            });
        };
        schema.normalise_row(&raw, &mut out);
        x.extend_from_slice(&out);
        y.push(label);
    }
    if y.is_empty() {
        return Err(DataError::NoRows { origin: o() });
    }

    let report = LoadReport {
        rows: y.len(),
        clipped: schema
            .features
            .iter()
            .map(|f| f.name.clone())
            .zip(clipped)
            .collect(),
    };
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
    Ok((Dataset::new(x, y, dim), report))
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
