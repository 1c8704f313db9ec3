//! One pass of `schema init` over a file: per column, its numbers, missing markers and the cells
//! that are neither (with the line of the first and how many), and the label's values with the
//! line each first appears on. Nothing here is written to the schema; the draft decides what is
//! public (`schema_init.rs`).

use super::{InitError, MISSING_MARKERS};
use crate::data::csv::DataError;
use crate::data::csv::text::Text;
use crate::data::schema::Separator;

/// A cell as a number: decimal point, or a decimal comma with a separator other than `,`.
fn number(cell: &str, separator: Separator) -> Option<f64> {
    cell.parse::<f64>().ok().or_else(|| {
        (separator != Separator::Comma && cell.matches(',').count() == 1 && !cell.contains('.'))
            .then(|| cell.replace(',', ".").parse().ok())
            .flatten()
    })
}

/// At most this many distinct non-number cells are kept per column (to propose them as
/// missing markers); a column with more is text.
pub(super) const STRAY_VALUES: usize = 3;

/// The cells of a column that are neither numbers nor missing markers.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Strays {
    /// How many.
    pub count: usize,
    /// The line of the first (1-based, the header is line 1).
    pub first_line: u64,
    /// The distinct values seen, up to [`STRAY_VALUES`] + 1 (printed to the terminal only).
    pub values: Vec<String>,
}

/// A column as it is read: numbers seen, markers seen, the cells that are neither.
#[derive(Default, Clone)]
pub(super) struct Survey {
    pub(super) min: f64,
    pub(super) max: f64,
    pub(super) numbers: usize,
    pub(super) missing: usize,
    pub(super) strays: Strays,
    /// The numbers, for the column's shape ([`super::Proposal::of`]).
    pub(super) values: Vec<f64>,
    /// The distinct texts (neither numbers nor markers) and how many cells hold each, while
    /// there are at most [`super::schema_init_categories::MAX_PROPOSED`]; `None` beyond.
    pub(super) texts: Option<Vec<(String, usize)>>,
}

impl Survey {
    /// Numbers with a few stray cells: at most [`STRAY_VALUES`] distinct ones, on at most a
    /// tenth as many cells as numbers. Such a column is a feature whose strays are proposed as
    /// missing markers; one with more is text.
    pub(super) fn mostly_numbers(&self) -> bool {
        self.numbers > 0
            && self.strays.values.len() <= STRAY_VALUES
            && self.strays.count * 10 <= self.numbers
    }
}

/// One label value: the text, how many rows, the line of the first.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Class {
    pub(super) value: String,
    pub(super) rows: usize,
    pub(super) first_line: u64,
}

/// What one pass over the file saw: the header, a survey per column, the missing markers met,
/// the label's values with their counts and the number of rows.
pub(super) struct Scan {
    pub(super) header: csv::StringRecord,
    pub(super) label_at: usize,
    pub(super) surveys: Vec<Survey>,
    pub(super) seen_markers: [bool; MISSING_MARKERS.len()],
    pub(super) classes: Vec<Class>,
    pub(super) rows: usize,
    pub(super) separator: Separator,
}

/// The header column closest to `label`: the same but for case, or within a third of its length
/// in edits.
fn closest<'h>(label: &str, header: &'h csv::StringRecord) -> Option<&'h str> {
    header
        .iter()
        .map(|h| {
            (
                h,
                strsim::levenshtein(&label.to_lowercase(), &h.to_lowercase()),
            )
        })
        .filter(|&(_, d)| d <= label.chars().count() / 3)
        .min_by_key(|&(_, d)| d)
        .map(|(h, _)| h)
}

/// The label column's index, or an error that lists the header and suggests the closest name.
fn find_label(header: &csv::StringRecord, origin: &str, label: &str) -> Result<usize, InitError> {
    if header.iter().all(str::is_empty) {
        return Err(DataError::Empty {
            origin: origin.to_owned(),
        }
        .into());
    }
    header
        .iter()
        .position(|h| h == label)
        .ok_or_else(|| InitError::NoLabel {
            origin: origin.to_owned(),
            label: label.to_owned(),
            suggestion: closest(label, header)
                .map(|h| format!("did you mean `{h}`? "))
                .unwrap_or_default(),
            columns: header.iter().collect::<Vec<_>>().join(", "),
        })
}

/// Reads every record of `text` once, surveying each feature column and counting the label's
/// values.
pub(super) fn scan(text: Text, origin: &str, label: &str) -> Result<Scan, InitError> {
    let separator = Separator::detect(text.first_line());
    let mut rdr = csv::ReaderBuilder::new()
        .delimiter(separator.byte())
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let csv_error = |e: csv::Error| DataError::Csv {
        origin: origin.to_owned(),
        line: e
            .position()
            .map_or(1, |p| text.record_line(p.byte() as usize)),
        message: e.to_string(),
    };
    let header = rdr.headers().map_err(csv_error)?.clone();
    crate::data::csv::check_width(&header, origin)?;
    let label_at = find_label(&header, origin, label)?;
    let fresh = Survey {
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        texts: Some(Vec::new()),
        ..Survey::default()
    };
    let mut scan = Scan {
        surveys: vec![fresh; header.len()],
        header,
        label_at,
        seen_markers: [false; MISSING_MARKERS.len()],
        classes: Vec::new(),
        rows: 0,
        separator,
    };
    let mut record = csv::StringRecord::new();
    while rdr.read_record(&mut record).map_err(csv_error)? {
        scan.rows += 1;
        let line = record.position().map_or(1 + scan.rows as u64, |p| {
            text.record_line(p.byte() as usize)
        });
        for (j, cell) in record.iter().enumerate().take(scan.header.len()) {
            if j != label_at {
                let s = &mut scan.surveys[j];
                survey_cell(s, &mut scan.seen_markers, cell, separator, line);
            } else if let Some(c) = scan.classes.iter_mut().find(|c| c.value == cell) {
                c.rows += 1;
            } else {
                scan.classes.push(Class {
                    value: cell.to_owned(),
                    rows: 1,
                    first_line: line,
                });
            }
        }
    }
    Ok(scan)
}

/// Counts one cell of a feature column on `line`.
fn survey_cell(s: &mut Survey, seen: &mut [bool], cell: &str, separator: Separator, line: u64) {
    if let Some(k) = MISSING_MARKERS.iter().position(|m| *m == cell) {
        seen[k] = true;
        s.missing += 1;
    } else if let Some(v) = number(cell, separator).filter(|v| v.is_finite()) {
        s.numbers += 1;
        s.min = s.min.min(v);
        s.max = s.max.max(v);
        s.values.push(v);
    } else {
        let strays = &mut s.strays;
        if strays.count == 0 {
            strays.first_line = line;
        }
        strays.count += 1;
        if strays.values.len() <= STRAY_VALUES && !strays.values.iter().any(|v| v == cell) {
            strays.values.push(cell.to_owned());
        }
        super::schema_init_categories::tally(&mut s.texts, cell);
    }
}
