//! `dpagg-node schema init`: a commented schema drafted from a CSV file.
//!
//! It writes every column of the file: the label's two values, each numeric column as a feature,
//! the missing markers it saw (blank, `NA`, `NULL`, …) in `[csv] missing`, the separator when it
//! is not a comma, and a commented list of the columns left out (not numbers).
//!
//! **Bounds are never silently taken from the data (invariant 2).** A feature's `lo` and `hi`
//! are the smallest and largest values of the file rounded outward ([`round_out`]) — statistics
//! of the private rows — so each is written with `bounds = "observed"`. Every release path
//! refuses a schema that still has one ([`super::schema::Schema::require_public_bounds`]);
//! `check` lists them and `check --strict` fails, until the user replaces them by public bounds
//! and deletes the line. The exact minimum and maximum and the class counts are printed to the
//! terminal (the [`Draft`] summary) and never written into the schema, which is meant to be
//! shared.
//!
//! # Proposed transforms
//!
//! The default map centres a feature in the middle of its bounds ([`super::schema::bounds_rule`]).
//! For a non-negative column that is mostly zero or skewed (counts, lab values) every typical
//! value then sits near z = −3 and the mapped rows are alike (`dpagg-node check` warns). So for
//! such a column the draft writes a **commented proposal** under the feature, which the user
//! accepts by uncommenting it:
//!
//! - **mostly zero**: at least [`ZERO_SHARE`] of the column's numbers are 0 → `transform =
//!   "log1p"` and `typical = 0.0` (a 0/1 indicator gets `typical = 0.0` alone: a log does
//!   nothing for two values);
//! - **skewed**: otherwise, the 95th percentile is more than [`TAIL_RATIO`] times the median →
//!   `transform = "log1p"` (unit 1, the default; a `unit` near a small typical value can be
//!   added by hand). A non-negative symmetric column stays below 2 (a uniform one from 0 reaches
//!   1.9; a normal one with mean μ and deviation σ has 1 + 1.645 σ/μ), an exponential one is at
//!   4.3, a log-normal one passes 3 when the deviation of its log exceeds 0.67.
//!
//! Columns with a negative value, a constant one, or fewer than [`MIN_VALUES`] numbers get no
//! proposal. A proposal is a decision about the data's shape, read off the private rows like the
//! observed bounds: it is never an active key, the file says only which rule fired, and the
//! exact share of zeros or tail ratio is printed to the terminal alone.

use super::csv::DataError;
use super::csv::text::Text;
use super::dictionary::{Dictionary, Entry};
use super::schema::Separator;
pub use scan::Strays;
use scan::{Class, Survey, scan};
use std::fmt::Write as _;

#[path = "schema_init_scan.rs"]
mod scan;

#[path = "schema_init_categories.rs"]
pub mod schema_init_categories;
pub use schema_init_categories::TextColumn;

/// Cells that commonly mean "not measured" in exported files.
pub const MISSING_MARKERS: [&str; 14] = [
    "", "NA", "N/A", "n/a", "na", "NaN", "nan", "NULL", "null", "None", "?", ".", "-", "#N/A",
];

/// Why no schema could be drafted.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    /// The file could not be read as CSV text.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The label column is not in the header.
    #[error("{origin}:1: no column `{label}` in the header ({suggestion}columns: {columns})")]
    NoLabel {
        /// The file.
        origin: String,
        /// The column asked for.
        label: String,
        /// "did you mean `x`? " for the closest column, or nothing.
        suggestion: String,
        /// The header's columns.
        columns: String,
    },
    /// The label column does not have exactly two values.
    #[error(
        "{origin}: label column `{label}` has {count} distinct value(s) ({values}); dpagg learns a yes/no outcome: export a column with exactly two values"
    )]
    NotBinary {
        /// The file.
        origin: String,
        /// The label column.
        label: String,
        /// How many distinct values.
        count: usize,
        /// The first few, quoted.
        values: String,
    },
    /// `--positive` is not one of the label's values.
    #[error("--positive {value:?}: not a value of column `{label}` (its values: {values})")]
    NoSuchPositive {
        /// The value given.
        value: String,
        /// The label column.
        label: String,
        /// Its values.
        values: String,
    },
    /// No column other than the label holds numbers.
    #[error("{origin}: no numeric column besides `{label}`: nothing to learn from")]
    NoFeatures {
        /// The file.
        origin: String,
        /// The label column.
        label: String,
    },
}

/// One numeric column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// Header name.
    pub name: String,
    /// Smallest and largest number seen (printed to the terminal only).
    pub min: f64,
    /// See `min`.
    pub max: f64,
    /// Cells that were missing markers.
    pub missing: usize,
    /// Cells that were neither numbers nor markers (proposed, commented, as its markers).
    pub strays: Strays,
    /// What the draft proposes, in comments, for the column's shape.
    pub proposal: Option<Proposal>,
}

/// Share of zeros from which a non-negative column is "mostly zero".
pub const ZERO_SHARE: f64 = 0.5;
/// 95th percentile over median above which a non-negative column is "skewed".
pub const TAIL_RATIO: f64 = 3.0;
/// Numbers a column needs before its shape says anything.
pub const MIN_VALUES: usize = 20;

/// A commented proposal for a column's shape (module docs); the numbers are for the terminal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Proposal {
    /// At least [`ZERO_SHARE`] of the numbers are 0: `typical = 0.0`, and `transform = "log1p"`
    /// unless the column is an indicator (0 and one other value).
    MostlyZero {
        /// Share of the numbers that are 0.
        zeros: f64,
        /// Whether the other numbers are all one value.
        indicator: bool,
    },
    /// The 95th percentile is over [`TAIL_RATIO`] times the median: `transform = "log1p"`.
    Skewed {
        /// 95th percentile / median.
        tail: f64,
    },
}

impl Proposal {
    /// The keys to uncomment, as TOML lines.
    pub fn keys(&self) -> &'static [&'static str] {
        match self {
            Proposal::MostlyZero {
                indicator: true, ..
            } => &["typical = 0.0"],
            Proposal::MostlyZero { .. } => &["transform = \"log1p\"", "typical = 0.0"],
            Proposal::Skewed { .. } => &["transform = \"log1p\""],
        }
    }

    /// The rule that fired, without numbers (what the shared file says).
    pub fn shape(&self) -> String {
        match self {
            Proposal::MostlyZero { .. } => {
                format!(
                    "mostly zero, at least {:.0} % of the values are 0",
                    100.0 * ZERO_SHARE
                )
            }
            Proposal::Skewed { .. } => {
                format!("skewed, the 95th percentile over {TAIL_RATIO} times the median")
            }
        }
    }

    /// The proposal for a column's numbers, if any (module docs).
    pub fn of(values: &[f64]) -> Option<Proposal> {
        if values.len() < MIN_VALUES {
            return None;
        }
        let mut values = values.to_vec();
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let (min, max) = (values[0], values[n - 1]);
        if min < 0.0 || max <= min {
            return None;
        }
        let zeros = values.iter().take_while(|&&v| v == 0.0).count();
        if zeros as f64 >= ZERO_SHARE * n as f64 {
            return Some(Proposal::MostlyZero {
                zeros: zeros as f64 / n as f64,
                indicator: values[zeros..].iter().all(|&v| v == max),
            });
        }
        let at = |q: f64| values[((n - 1) as f64 * q).round() as usize];
        let (median, p95) = (at(0.5), at(0.95));
        (median > 0.0 && p95 > TAIL_RATIO * median).then(|| Proposal::Skewed { tail: p95 / median })
    }
}

impl std::fmt::Display for Proposal {
    /// The keys and the numbers behind them, for the terminal.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.keys().join(", "))?;
        match self {
            Proposal::MostlyZero { zeros, .. } => {
                write!(f, " ({:.0} % of its values are 0)", 100.0 * zeros)
            }
            Proposal::Skewed { tail } => {
                write!(f, " (its 95th percentile is {tail:.1} times its median)")
            }
        }
    }
}

/// What `schema init` found, and the schema text it drafted.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// The schema, TOML with comments.
    pub toml: String,
    /// Data rows read.
    pub rows: usize,
    /// The separator used.
    pub separator: Separator,
    /// The numeric columns (the features), in header order.
    pub features: Vec<Column>,
    /// The text columns written as categorical features, in header order.
    pub categorical: Vec<TextColumn>,
    /// The columns left out (not numbers, nor categories), with their cells that are not
    /// numbers.
    pub skipped: Vec<(String, Strays)>,
    /// (positive, rows), (negative, rows).
    pub classes: [(String, usize); 2],
    /// The missing markers seen, in [`MISSING_MARKERS`] order.
    pub markers: Vec<String>,
    /// Data dictionary entries that name no numeric column of the file.
    pub unused: Vec<String>,
}

/// Drafts a schema from `reader` (a CSV file named `origin`) with `label` as the outcome;
/// `positive` chooses the value mapped to +1 (default: see [`positive_of`]); `name` is the
/// schema's name.
pub fn draft<R: std::io::Read>(
    reader: R,
    origin: &str,
    label: &str,
    positive: Option<&str>,
    name: &str,
) -> Result<Draft, InitError> {
    draft_with(reader, origin, label, positive, name, None)
}

/// [`draft`], with the public bounds (and transforms) of the columns `dictionary` covers.
pub fn draft_with<R: std::io::Read>(
    reader: R,
    origin: &str,
    label: &str,
    positive: Option<&str>,
    name: &str,
    dictionary: Option<&Dictionary>,
) -> Result<Draft, InitError> {
    let scan = scan(Text::read(reader, origin)?, origin, label)?;
    let classes = binary_classes(scan.classes, origin, label, positive)?;
    let entry = |h: &str| dictionary.and_then(|d| d.entries.get(h));
    let listed = |h: &str| entry(h).is_some_and(|e| e.categories.is_some());
    let columns = || scan.header.iter().zip(&scan.surveys).enumerate();
    let categorical: Vec<TextColumn> = columns()
        .filter(|&(j, (h, s))| j != scan.label_at && (listed(h) || !s.mostly_numbers()))
        .filter_map(|(_, (h, s))| schema_init_categories::proposal(h, s, entry(h)))
        .collect();
    let is_category = |h: &str| categorical.iter().any(|c| c.name == h);
    let is_feature =
        |j: usize, h: &str, s: &Survey| j != scan.label_at && s.mostly_numbers() && !is_category(h);
    let features: Vec<Column> = columns()
        .filter(|&(j, (h, s))| is_feature(j, h, s))
        .map(|(_, (h, s))| Column {
            name: h.to_owned(),
            min: s.min,
            max: s.max,
            missing: s.missing,
            strays: s.strays.clone(),
            proposal: Proposal::of(&s.values),
        })
        .collect();
    if features.is_empty() && categorical.is_empty() {
        return Err(InitError::NoFeatures {
            origin: origin.to_owned(),
            label: label.to_owned(),
        });
    }
    let skipped = columns()
        .filter(|&(j, (h, s))| j != scan.label_at && !is_feature(j, h, s) && !is_category(h))
        .map(|(_, (h, s))| (h.to_owned(), s.strays.clone()))
        .collect();
    let markers = MISSING_MARKERS
        .iter()
        .zip(scan.seen_markers)
        .filter(|(_, seen)| *seen)
        .map(|(m, _)| (*m).to_owned())
        .collect();
    let mut d = Draft {
        toml: String::new(),
        rows: scan.rows,
        separator: scan.separator,
        features,
        categorical,
        skipped,
        classes,
        markers,
        unused: Vec::new(),
    };
    if let Some(dict) = dictionary {
        d.unused = dict
            .entries
            .keys()
            .filter(|k| !d.features.iter().any(|f| &f.name == *k))
            .filter(|k| !d.categorical.iter().any(|c| &c.name == *k))
            .cloned()
            .collect();
    }
    d.toml = render(&d, origin, label, name, dictionary);
    Ok(d)
}

/// The label's two values, positive first.
fn binary_classes(
    classes: Vec<Class>,
    origin: &str,
    label: &str,
    positive: Option<&str>,
) -> Result<[(String, usize); 2], InitError> {
    let listed = || {
        classes
            .iter()
            .take(6)
            .map(|c| {
                let blank = if c.value.is_empty() { "blank, " } else { "" };
                format!(
                    "{:?} ({blank}{} row(s), first on line {})",
                    c.value, c.rows, c.first_line
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let [a, b]: [(String, usize); 2] = classes
        .iter()
        .map(|c| (c.value.clone(), c.rows))
        .collect::<Vec<_>>()
        .try_into()
        .map_err(|_| InitError::NotBinary {
            origin: origin.to_owned(),
            label: label.to_owned(),
            count: classes.len(),
            values: listed(),
        })?;
    let first_positive = match positive {
        Some(p) if p == a.0 => true,
        Some(p) if p == b.0 => false,
        Some(p) => {
            return Err(InitError::NoSuchPositive {
                value: p.to_owned(),
                label: label.to_owned(),
                values: listed(),
            });
        }
        None => positive_of(&a, &b),
    };
    Ok(if first_positive { [a, b] } else { [b, a] })
}

/// Whether `a` is the positive class of `{a, b}`: the yes-like value of a known pair
/// (1/0, yes/no, true/false, pos/neg, positive/negative, y/n, case-insensitive), else the rarer
/// value (an outcome of interest is usually the minority), else the later one in sort order.
pub fn positive_of(a: &(String, usize), b: &(String, usize)) -> bool {
    const YES: [&str; 7] = ["1", "yes", "true", "pos", "positive", "y", "t"];
    const NO: [&str; 7] = ["0", "no", "false", "neg", "negative", "n", "f"];
    let yes = |v: &str| YES.iter().position(|y| y.eq_ignore_ascii_case(v));
    let no = |v: &str| NO.iter().position(|y| y.eq_ignore_ascii_case(v));
    match (yes(&a.0), no(&b.0), yes(&b.0), no(&a.0)) {
        (Some(i), Some(j), _, _) if i == j => true,
        (_, _, Some(i), Some(j)) if i == j => false,
        _ if a.1 != b.1 => a.1 < b.1,
        _ => a.0 > b.0,
    }
}

/// `[min, max]` rounded outward to a step of one power of ten below the range (a binary
/// column stays [0, 1]; a constant one gets a range one step wide). A non-negative minimum
/// stays non-negative.
pub fn round_out(min: f64, max: f64) -> (f64, f64) {
    let width = if max > min {
        max - min
    } else {
        min.abs().max(1.0)
    };
    let step = 10f64.powf(width.log10().floor());
    let lo = (min / step).floor() * step;
    let mut hi = (max / step).ceil() * step;
    if hi <= lo {
        hi = lo + step;
    }
    (tidy(lo), tidy(hi))
}

/// `v` printed with at most 12 significant digits (rounding noise of the step removed).
fn tidy(v: f64) -> f64 {
    format!("{v:.12e}").parse().unwrap_or(v)
}

/// The schema text.
fn render(
    d: &Draft,
    origin: &str,
    label: &str,
    name: &str,
    dictionary: Option<&Dictionary>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Public schema drafted by `dpagg-node schema init` from {origin}.\n\
         #\n\
         # BEFORE ANYTHING IS RELEASED, make every bound public. Each feature below says\n\
         # `bounds = \"observed\"`: its lo and hi are the smallest and largest values of YOUR file,\n\
         # rounded outward: statistics of private rows. dpagg-node serve and publish and\n\
         # dpagg-aggregator run refuse this schema until no such line is left. For each feature,\n\
         # write public bounds (a published reference range, the instrument's or form's range, a\n\
         # clinical plausibility range) and delete its `bounds` line; `dpagg-node check --strict`\n\
         # passes when none is left. Values outside [lo, hi] are clipped to it.\n\
         #\n\
         # Every organisation uses this same file: nodes and aggregator compare its fingerprint.\n\
         # Rows are mapped into the unit ball by centring and scaling each feature from its bounds\n\
         # (see docs/own-data.md). Under a column that looks mostly zero or skewed in this file a\n\
         # commented proposal (`transform = \"log1p\"`, `typical = 0.0`) says so: uncomment it to\n\
         # accept it, if it fits what the measurement is. For another skewed non-negative\n\
         # measurement (a count, a lab value, money) add `transform = \"log1p\"` yourself, and\n\
         # `unit = ` a typical small value."
    );
    let _ = writeln!(s, "\nname = {}", quote(name));
    let _ = writeln!(
        s,
        "description = {}",
        quote(&format!("drafted from {origin}: say what the rows are"))
    );
    if d.separator != Separator::Comma || !d.markers.is_empty() {
        let _ = writeln!(s, "\n[csv]");
        if d.separator != Separator::Comma {
            let _ = writeln!(s, "separator = {}", d.separator.toml());
        }
        if !d.markers.is_empty() {
            let list: Vec<String> = d.markers.iter().map(|m| quote(m)).collect();
            let _ = writeln!(
                s,
                "missing = [{}]  # cells meaning \"not measured\" (mapped to the feature's centre)",
                list.join(", ")
            );
        }
    }
    let _ = writeln!(
        s,
        "\n[label]\ncolumn = {}\npositive = {}  # the outcome of interest, +1\nnegative = {}",
        quote(label),
        quote(&d.classes[0].0),
        quote(&d.classes[1].0)
    );
    for f in &d.features {
        render_feature(&mut s, f, dictionary);
    }
    let origin = dictionary.map_or("", |d| d.origin.as_str());
    for c in &d.categorical {
        schema_init_categories::render(&mut s, c, origin);
    }
    if !d.skipped.is_empty() {
        let _ = writeln!(
            s,
            "\n# Columns left out (neither numbers nor a few categories): {}.",
            d.skipped
                .iter()
                .map(|(name, _)| name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    s
}

/// One feature: public bounds from the dictionary or observed ones, the commented markers for
/// its stray cells, and the commented proposal for its shape.
fn render_feature(s: &mut String, f: &Column, dictionary: Option<&Dictionary>) {
    let entry = dictionary.and_then(|dict| Some((dict, dict.entries.get(&f.name)?)));
    match entry {
        Some((dict, e)) => feature_from_dictionary(s, &f.name, e, &dict.origin),
        None => {
            let (lo, hi) = round_out(f.min, f.max);
            let _ = writeln!(
                s,
                "\n[[features]]\nname = {}\nlo = {lo:?}\nhi = {hi:?}\nbounds = \"observed\"  # replace lo and hi by public bounds, then delete this line",
                quote(&f.name)
            );
        }
    }
    if f.strays.count > 0 {
        let list: Vec<String> = f.strays.values.iter().map(|v| quote(v)).collect();
        let _ = writeln!(
            s,
            "# {} cell(s) of this column are not numbers (first on line {}); if they mean\n\
             # \"not measured\", uncomment (they are cells of your file: check that they name\n\
             # no one before sharing this schema); otherwise fix them in the export:\n\
             # missing = [{}]",
            f.strays.count,
            f.strays.first_line,
            list.join(", ")
        );
    }
    let transform_given = entry.is_some_and(|(_, e)| e.transform.is_some());
    if let Some(p) = f.proposal.as_ref().filter(|_| !transform_given) {
        let _ = writeln!(
            s,
            "# proposed by schema init (a decision about the data's shape: {});\n\
             # uncomment to accept:",
            p.shape()
        );
        for key in p.keys() {
            let _ = writeln!(s, "# {key}");
        }
    }
}

/// A feature whose public bounds (and transform) come from a data dictionary.
fn feature_from_dictionary(s: &mut String, name: &str, e: &Entry, origin: &str) {
    let _ = writeln!(
        s,
        "\n[[features]]\nname = {}\nlo = {:?}\nhi = {:?}  # public, from the data dictionary {origin}",
        quote(name),
        e.lo,
        e.hi
    );
    if let Some(t) = &e.transform {
        let _ = writeln!(s, "transform = {}", quote(t));
    }
    if let Some(u) = e.unit {
        let _ = writeln!(s, "unit = {u:?}");
    }
}

/// A TOML basic string.
fn quote(v: &str) -> String {
    toml::Value::String(v.to_owned()).to_string()
}

#[cfg(test)]
mod tests;
