//! The rows of a file as they are read: cells parsed against the schema (missing markers,
//! numbers, labels), normalised, and counted — clipped, missing, projected, saturating — for
//! [`LoadReport`], with two running sums for how alike the mapped rows are ([`alike`]). Counts,
//! per-feature flags and means only; no single value leaves this module except in the dataset
//! itself.
//!
//! # Rows alike
//!
//! With x_i the mapped rows without their intercept column, n of them,
//!
//! alike = ‖(1/n) Σ x_i‖² / ((1/n) Σ ‖x_i‖²),
//!
//! the share of the rows' mean squared norm that is their common mean: 1 − alike is the share
//! that varies from row to row (the trace of their covariance over their second moment). It is 1
//! when every row is the same point and near 0 for rows centred on the origin; it is 0 when every
//! row is the origin. Two sums kept while reading give it, so it costs one pass over each row.

use super::categories::{Categories, Cell};
use super::{DataError, LoadReport, RawRows, quoted};
use crate::data::dataset::Dataset;
use crate::data::schema::{FeatureSpec, LabelSpec, Markers, Schema, Separator};

/// Where a value stands: the file and the 1-based line.
#[derive(Clone, Copy)]
pub(super) struct Place<'a> {
    pub(super) origin: &'a str,
    pub(super) line: u64,
}

/// The header positions of the columns the schema uses.
pub(super) struct Columns {
    /// Of every feature, in schema order.
    pub(super) features: Vec<usize>,
    /// Of the label, when the file has it.
    pub(super) label: Option<usize>,
}

/// A feature cell: `None` for a declared missing marker (text or number, the feature's own or
/// the `[csv]` table's), else a finite number.
fn parse_feature(
    text: &str,
    feature: &FeatureSpec,
    global: Option<&Markers>,
    decimal_comma: bool,
    at: Place,
) -> Result<Option<f64>, DataError> {
    let marked = |m: Option<&Markers>| m.is_some_and(|m| m.has_text(text));
    if marked(feature.missing.as_ref()) || marked(global) {
        return Ok(None);
    }
    let comma_decimal = || {
        (decimal_comma && text.matches(',').count() == 1 && !text.contains('.'))
            .then(|| text.replace(',', ".").parse::<f64>().ok())
            .flatten()
    };
    let v: f64 = text
        .parse()
        .ok()
        .or_else(comma_decimal)
        .ok_or_else(|| DataError::NotANumber {
            origin: at.origin.to_owned(),
            line: at.line,
            column: feature.name.clone(),
            value: quoted(text),
        })?;
    if feature.is_missing(v) || global.is_some_and(|m| m.has_number(v)) {
        return Ok(None);
    }
    if !v.is_finite() {
        return Err(DataError::NotFinite {
            origin: at.origin.to_owned(),
            line: at.line,
            column: feature.name.clone(),
            value: quoted(text),
        });
    }
    Ok(Some(v))
}

/// A label value: the schema's positive (+1) or negative (−1) value.
fn parse_label(text: &str, label: &LabelSpec, at: Place) -> Result<f64, DataError> {
    if text == label.positive {
        Ok(1.0)
    } else if text == label.negative {
        Ok(-1.0)
    } else if text.is_empty() {
        Err(DataError::BlankLabel {
            origin: at.origin.to_owned(),
            line: at.line,
            column: label.column.clone(),
        })
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

/// How many widths of a feature's `[lo, hi]` a value may lie outside it before it is
/// implausible: a unit error (grams for kilograms) or a corrupt cell (1e300), not a patient
/// beyond the reference range. Such values are clipped like any other, counted apart
/// ([`LoadReport::implausible`]) and a trap for `check`.
pub const IMPLAUSIBLE: f64 = 10.0;

/// Whether `v` lies more than [`IMPLAUSIBLE`] widths of `[lo, hi]` outside it.
pub fn implausible(v: f64, lo: f64, hi: f64) -> bool {
    let margin = IMPLAUSIBLE * (hi - lo);
    v < lo - margin || v > hi + margin
}

/// |z| above which a value is far from its centre: the default rule gives |z| ≤ 3 within the
/// bounds, so more than this on many rows means a wrong centre or scale.
pub const FAR: f64 = 5.0;

/// Per feature: the range of its standardised values (for "constant after the map") and how
/// many lie further than [`FAR`] from the centre.
#[derive(Clone, Copy)]
struct Spread {
    low: f64,
    high: f64,
    saturated: usize,
}

/// The rows read so far: normalised features, labels and counts.
pub(super) struct Rows<'s> {
    schema: &'s Schema,
    global: Option<&'s Markers>,
    x: Vec<f64>,
    y: Vec<f64>,
    /// The current row's raw feature values (NaN where missing).
    raw: Vec<f64>,
    /// The current row, normalised.
    out: Vec<f64>,
    clipped: Vec<usize>,
    implausible: Vec<usize>,
    missing: Vec<usize>,
    /// Whether a blank or unknown label makes the row unlabelled (label 0) instead of an error:
    /// for scoring (`predict`), never for training.
    pub(super) lenient_labels: bool,
    /// Rows whose label was blank or unknown under `lenient_labels` (stored as +1).
    pub(super) unlabelled: Vec<usize>,
    spread: Vec<Spread>,
    /// Per feature, the sum of its standardised values (missing ones aside).
    z_sum: Vec<f64>,
    /// Σ x_i over the mapped rows' columns before the intercept.
    row_sum: Vec<f64>,
    /// Σ ‖x_i‖² over the same columns.
    row_square: f64,
    projected: usize,
    /// Whether `1,5` reads as 1.5 (files separated by `;`, tab or `|`, as exported in locales
    /// whose decimal mark is a comma).
    decimal_comma: bool,
    /// The raw rows, when kept.
    pub(super) kept: Option<RawRows>,
    /// The indicator features of categorical columns.
    categories: Categories,
}

impl<'s> Rows<'s> {
    pub(super) fn new(schema: &'s Schema, keep_raw: bool, separator: Separator) -> Self {
        let p = schema.features.len();
        let spread = Spread {
            low: f64::INFINITY,
            high: f64::NEG_INFINITY,
            saturated: 0,
        };
        Self {
            schema,
            global: schema.csv.as_ref().and_then(|c| c.missing.as_ref()),
            x: Vec::new(),
            y: Vec::new(),
            raw: vec![0.0; p],
            out: vec![0.0; schema.dim()],
            clipped: vec![0; p],
            implausible: vec![0; p],
            missing: vec![0; p],
            lenient_labels: false,
            unlabelled: Vec::new(),
            spread: vec![spread; p],
            z_sum: vec![0.0; p],
            row_sum: vec![0.0; schema.dim() - usize::from(schema.intercept)],
            row_square: 0.0,
            projected: 0,
            decimal_comma: separator != Separator::Comma,
            kept: keep_raw.then(RawRows::default),
            categories: Categories::new(schema),
        }
    }

    /// Number of rows read.
    pub(super) fn len(&self) -> usize {
        self.y.len()
    }

    /// Parses one record and appends it normalised; without a label column the label is +1
    /// (scoring only).
    pub(super) fn push(
        &mut self,
        record: &csv::StringRecord,
        columns: &Columns,
        at: Place,
    ) -> Result<(), DataError> {
        let features = self.schema.features.iter().zip(&columns.features);
        for (j, (f, &col)) in features.enumerate() {
            let cell = match self
                .categories
                .read(j, f, &record[col], self.global, at.line)
            {
                Cell::Numeric => {
                    parse_feature(&record[col], f, self.global, self.decimal_comma, at)?
                }
                Cell::Value(v) => Some(v),
                Cell::Missing => None,
            };
            match cell {
                None => {
                    self.raw[j] = f64::NAN;
                    self.missing[j] += 1;
                }
                Some(v) => {
                    self.raw[j] = v;
                    self.clipped[j] += usize::from(v < f.lo || v > f.hi);
                    self.implausible[j] += usize::from(implausible(v, f.lo, f.hi));
                    let z = self.schema.standardise(j, v);
                    let s = &mut self.spread[j];
                    s.low = s.low.min(z);
                    s.high = s.high.max(z);
                    s.saturated += usize::from(z.abs() > FAR);
                    self.z_sum[j] += z;
                }
            }
        }
        let label = match columns.label {
            Some(c) => match parse_label(&record[c], &self.schema.label, at) {
                Err(_) if self.lenient_labels => {
                    self.unlabelled.push(self.y.len());
                    1.0
                }
                parsed => parsed?,
            },
            None => 1.0,
        };
        let report = self.schema.normalise_row(&self.raw, &mut self.out);
        self.projected += usize::from(report.projected);
        let k = self.row_sum.len();
        for (s, v) in self.row_sum.iter_mut().zip(&self.out[..k]) {
            *s += v;
        }
        self.row_square += self.out[..k].iter().map(|v| v * v).sum::<f64>();
        self.x.extend_from_slice(&self.out);
        self.y.push(label);
        self.keep_raw(label);
        Ok(())
    }

    /// Keeps the current raw row (clipped; a missing value as the feature's raw centre) when
    /// raw rows are kept.
    fn keep_raw(&mut self, label: f64) {
        let Some(kept) = self.kept.as_mut() else {
            return;
        };
        let i = kept.values.len();
        kept.missing.extend(
            self.raw
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_nan())
                .map(|(j, _)| (i, j)),
        );
        let row = self
            .schema
            .features
            .iter()
            .zip(&self.raw)
            .map(|(f, &v)| {
                if v.is_nan() {
                    f.raw_of_center()
                } else {
                    v.clamp(f.lo, f.hi)
                }
            })
            .collect();
        kept.values.push(row);
        kept.positive.push(label > 0.0);
    }

    /// The dataset and its report.
    pub(super) fn finish(self) -> (Dataset, LoadReport) {
        let names = || self.schema.features.iter().map(|f| f.name.clone());
        let n = self.y.len();
        let mean_z: Vec<f64> = self
            .z_sum
            .iter()
            .zip(&self.missing)
            .map(|(&sum, &missing)| match n - missing {
                0 => 0.0,
                measured => sum / measured as f64,
            })
            .collect();
        let report = LoadReport {
            rows: self.y.len(),
            clipped: names().zip(self.clipped).collect(),
            implausible: names().zip(self.implausible).collect(),
            missing: names().zip(self.missing).collect(),
            saturated: names()
                .zip(self.spread.iter().map(|s| s.saturated))
                .collect(),
            constant: names()
                .zip(&self.spread)
                .enumerate()
                .filter(|(j, (_, s))| s.high <= s.low && !self.categories.is_indicator(*j))
                .map(|(_, (n, _))| n)
                .collect(),
            projected: self.projected,
            alike: alike(&self.row_sum, self.row_square, n),
            mean_z: names().zip(mean_z).collect(),
            ignored: Vec::new(),
            unlisted: self.categories.finish(),
        };
        (Dataset::new(self.x, self.y, self.schema.dim()), report)
    }
}

/// How alike `n` rows are (see the module documentation), from Σ x_i (`sum`) and Σ ‖x_i‖²
/// (`square`): 0 when every row is the origin.
pub fn alike(sum: &[f64], square: f64, n: usize) -> f64 {
    if square > 0.0 && n > 0 {
        let mean_square: f64 = sum.iter().map(|s| s * s).sum();
        (mean_square / (n as f64 * square)).min(1.0)
    } else {
        0.0
    }
}

/// How alike the rows of `rows` are over their first `columns` columns (those before the
/// intercept), as [`alike`]: for rows mapped by an agreed map, which `check` never sees.
pub fn alike_of(rows: &crate::Dataset, columns: usize) -> f64 {
    let columns = columns.min(rows.dim());
    let mut sum = vec![0.0; columns];
    let mut square = 0.0;
    for i in 0..rows.len() {
        for (s, v) in sum.iter_mut().zip(&rows.row(i)[..columns]) {
            *s += v;
            square += v * v;
        }
    }
    alike(&sum, square, rows.len())
}
