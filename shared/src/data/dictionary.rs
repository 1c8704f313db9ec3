//! A data dictionary: the public bounds of a table's columns, as a CSV a hospital already keeps
//! (`name,lo,hi`, optionally `transform`, `unit` and `categories`), read by `dpagg-node schema init --bounds`
//! so that nobody types 57 bounds by hand. A column the dictionary covers gets its public bounds
//! (and transform) in the draft, with no `bounds = "observed"` line; a column it does not cover
//! stays observed and refused, as without a dictionary.
//!
//! The dictionary is public by construction (reference ranges, instrument ranges): nothing in
//! it is read off the rows.

use super::csv::text::Text;
use super::schema::Separator;
use std::collections::BTreeMap;

/// Why a dictionary cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DictionaryError {
    /// The file cannot be read as CSV text.
    #[error(transparent)]
    Data(#[from] super::csv::DataError),
    /// A required column is missing from the header.
    #[error(
        "{origin}:1: no column `{column}` in the header (a data dictionary has name, lo, hi and optionally transform, unit, categories)"
    )]
    NoColumn {
        /// The file.
        origin: String,
        /// The column.
        column: &'static str,
    },
    /// A row is wrong.
    #[error("{origin}:{line}: {message}")]
    Row {
        /// The file.
        origin: String,
        /// 1-based line.
        line: u64,
        /// What is wrong.
        message: String,
    },
}

/// One column's public entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
    /// `identity` or `log1p`, when given.
    pub transform: Option<String>,
    /// The `log1p` unit, when given.
    pub unit: Option<f64>,
    /// A categorical column's public categories (`never|former|current`); its `lo` and `hi`
    /// are then blank and read as NaN.
    pub categories: Option<Vec<String>>,
}

/// A data dictionary: entries by column name, and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Dictionary {
    /// The file, as given.
    pub origin: String,
    /// Entries by column name.
    pub entries: BTreeMap<String, Entry>,
}

impl Dictionary {
    /// Reads a dictionary from `reader` (a CSV file named `origin`, any of the separators a
    /// data file may use).
    pub fn read<R: std::io::Read>(reader: R, origin: &str) -> Result<Self, DictionaryError> {
        let text = Text::read(reader, origin)?;
        let mut rdr = csv::ReaderBuilder::new()
            .delimiter(Separator::detect(text.first_line()).byte())
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let row_error = |line: u64, message: String| DictionaryError::Row {
            origin: origin.to_owned(),
            line,
            message,
        };
        let header = rdr
            .headers()
            .map_err(|e| row_error(1, e.to_string()))?
            .clone();
        let at = |column: &'static str| header.iter().position(|h| h.eq_ignore_ascii_case(column));
        let need = |column| {
            at(column).ok_or(DictionaryError::NoColumn {
                origin: origin.to_owned(),
                column,
            })
        };
        let (name, lo, hi) = (need("name")?, need("lo")?, need("hi")?);
        let (transform, unit, categories) = (at("transform"), at("unit"), at("categories"));
        let mut entries = BTreeMap::new();
        for (i, record) in rdr.records().enumerate() {
            let line = i as u64 + 2;
            let record = record.map_err(|e| row_error(line, e.to_string()))?;
            let cell = |j: Option<usize>| j.and_then(|j| record.get(j)).filter(|c| !c.is_empty());
            let number = |j: usize, key: &str| {
                cell(Some(j))
                    .and_then(|c| c.parse::<f64>().ok())
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| row_error(line, format!("`{key}` is not a finite number")))
            };
            let column = cell(Some(name))
                .ok_or_else(|| row_error(line, "`name` is blank".into()))?
                .to_owned();
            let listed = cell(categories).map(|c| c.split('|').map(|t| t.trim().to_owned()));
            let listed: Option<Vec<String>> = listed.map(Iterator::collect);
            let bound = |j: usize, key: &str| match listed {
                Some(_) if cell(Some(j)).is_none() => Ok(f64::NAN),
                Some(_) => Err(row_error(
                    line,
                    format!("`{key}`: a categorical column has none"),
                )),
                None => number(j, key),
            };
            let entry = Entry {
                categories: listed.clone(),
                lo: bound(lo, "lo")?,
                hi: bound(hi, "hi")?,
                transform: cell(transform).map(str::to_owned),
                unit: match unit.filter(|&j| cell(Some(j)).is_some()) {
                    None => None,
                    Some(j) => Some(number(j, "unit")?),
                },
            };
            check(&entry).map_err(|m| row_error(line, format!("`{column}`: {m}")))?;
            if entries.insert(column.clone(), entry).is_some() {
                return Err(row_error(line, format!("`{column}` is listed twice")));
            }
        }
        Ok(Self {
            origin: origin.to_owned(),
            entries,
        })
    }
}

/// An entry's own rules: lo < hi, a known transform, a positive unit; for a categorical one,
/// at least two distinct, non-empty categories and nothing numeric.
fn check(e: &Entry) -> Result<(), String> {
    if let Some(c) = &e.categories {
        let distinct: std::collections::HashSet<&String> = c.iter().collect();
        if c.len() < 2 || distinct.len() != c.len() || c.iter().any(String::is_empty) {
            return Err(
                "`categories` lists two or more distinct, non-empty texts, split by |".into(),
            );
        }
        if e.transform.is_some() || e.unit.is_some() {
            return Err("a categorical column has no transform or unit".into());
        }
        return Ok(());
    }
    if e.lo >= e.hi {
        return Err(format!("lo = {} is not below hi = {}", e.lo, e.hi));
    }
    if let Some(t) = &e.transform
        && !matches!(t.as_str(), "identity" | "log1p")
    {
        return Err(format!("transform {t:?} is not `identity` or `log1p`"));
    }
    if e.transform.as_deref() == Some("log1p") && e.lo < 0.0 {
        return Err("a `log1p` column needs lo ≥ 0".into());
    }
    if e.unit.is_some_and(|u| u <= 0.0) {
        return Err("unit must be above 0".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dictionary_reads_with_optional_columns_and_names_bad_lines() {
        let d = Dictionary::read(
            "Name;lo;hi;transform;unit\nage;18;100;;\ninsulin;0;900;log1p;10\n".as_bytes(),
            "dict.csv",
        )
        .expect("reads");
        assert_eq!(d.entries.len(), 2);
        assert_eq!(d.entries["insulin"].transform.as_deref(), Some("log1p"));
        assert_eq!(d.entries["insulin"].unit, Some(10.0));
        assert_eq!(d.entries["age"].transform, None);
        for (text, msg) in [
            (
                "name,lo,hi\nage,18,x\n",
                "dict.csv:2: `hi` is not a finite number",
            ),
            (
                "name,lo,hi\nage,18,10\n",
                "dict.csv:2: `age`: lo = 18 is not below hi = 10",
            ),
            (
                "name,lo,hi\na,0,1\na,0,2\n",
                "dict.csv:3: `a` is listed twice",
            ),
            ("name,low,hi\n", "dict.csv:1: no column `lo` in the header"),
            (
                "name,lo,hi,transform\nx,-1,1,log1p\n",
                "dict.csv:2: `x`: a `log1p` column needs lo ≥ 0",
            ),
        ] {
            let e = Dictionary::read(text.as_bytes(), "dict.csv").expect_err(text);
            assert!(e.to_string().starts_with(msg), "{e}");
        }
    }
}
