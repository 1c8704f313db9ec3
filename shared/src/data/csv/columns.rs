//! The header: where each schema column is, which columns are ignored, and — when a column is
//! missing — what the header looked like with the separator used, so that a `;`-separated
//! export read as `,` says so instead of blaming the schema.

use super::DataError;
use super::rows::Columns;
use crate::data::schema::{Schema, Separator};
use std::collections::{HashMap, HashSet};

/// Finds every schema column in `header` (features in schema order, then the label), refusing
/// missing and repeated ones; with `label_optional` a file without the label column is read
/// for scoring.
pub(super) fn find(
    header: &csv::StringRecord,
    origin: &str,
    schema: &Schema,
    separator: Separator,
    label_optional: bool,
) -> Result<Columns, DataError> {
    let mut index: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, name) in header.iter().enumerate() {
        index.entry(name).or_default().push(i);
    }
    let position = |column: &str, role: &'static str| match index.get(column).map(Vec::as_slice) {
        None | Some([]) => Err(DataError::MissingColumn {
            origin: origin.to_owned(),
            column: column.to_owned(),
            role,
            hint: hint(header, separator),
        }),
        Some([i]) => Ok(*i),
        Some(_) => Err(DataError::DuplicateColumn {
            origin: origin.to_owned(),
            column: column.to_owned(),
        }),
    };
    let features = schema
        .features
        .iter()
        .map(|f| position(f.source_column(), "feature"))
        .collect::<Result<Vec<_>, _>>()?;
    let label = match position(&schema.label.column, "label") {
        Ok(i) => Some(i),
        Err(DataError::MissingColumn { .. }) if label_optional => None,
        Err(e) => return Err(e),
    };
    Ok(Columns { features, label })
}

/// The header's columns the schema does not use, in header order.
pub(super) fn ignored(header: &csv::StringRecord, schema: &Schema) -> Vec<String> {
    let used: HashSet<&str> = schema
        .features
        .iter()
        .map(|f| f.source_column())
        .chain(std::iter::once(schema.label.column.as_str()))
        .collect();
    header
        .iter()
        .filter(|h| !used.contains(h))
        .map(str::to_owned)
        .collect()
}

/// Longest header quoted in a hint.
const MAX_HEADER: usize = 60;

/// " (header read with separator ',': 1 column, "a;b;c"; it seems to use ';': declare …)", or
/// the columns found when the separator looks right.
fn hint(header: &csv::StringRecord, separator: Separator) -> String {
    let joined = header
        .iter()
        .collect::<Vec<_>>()
        .join(&char::from(separator.byte()).to_string());
    let other = Separator::ALL
        .into_iter()
        .filter(|s| *s != separator)
        .max_by_key(|s| joined.bytes().filter(|&b| b == s.byte()).count())
        .filter(|s| joined.bytes().any(|b| b == s.byte()));
    let shown: String = if joined.chars().count() > MAX_HEADER {
        joined.chars().take(MAX_HEADER).chain(['…']).collect()
    } else {
        joined.clone()
    };
    match other {
        Some(o) if header.len() <= 2 => format!(
            " (header read with separator {}: {} column(s), {shown:?}; it seems to use {}: declare [csv] separator = {} in the schema)",
            separator.name(),
            header.len(),
            o.name(),
            o.toml()
        ),
        _ => format!(
            " (header read with separator {}: {} column(s), {shown:?})",
            separator.name(),
            header.len()
        ),
    }
}
