//! Cells of categorical columns: each indicator feature
//! ([`crate::data::schema::categorical`]) reads its column's cell as 1 (its category), 0 (another
//! listed category) or missing (a missing marker, or a text not among the categories — counted
//! apart, per column, with the line and value of the first).

use crate::data::schema::{FeatureSpec, Markers, Schema};

/// Longest cell text kept for the report.
const SHOWN: usize = 40;

/// One indicator feature's column: the column's categories and whether this feature is the
/// column's first indicator (which counts its unlisted cells).
struct Indicator {
    category: String,
    siblings: Vec<String>,
    first: bool,
}

/// Unlisted cells of one categorical column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlisted {
    /// The column.
    pub column: String,
    /// How many cells were not among its categories (read as missing).
    pub count: usize,
    /// The first such cell's 1-based line and its text.
    pub first: (u64, String),
}

/// The indicator features of a schema, by feature index, and the unlisted cells seen so far.
pub(super) struct Categories {
    by_feature: Vec<Option<Indicator>>,
    unlisted: Vec<Unlisted>,
}

/// What one indicator cell reads.
pub(super) enum Cell {
    /// Not an indicator feature: parse the cell as a number.
    Numeric,
    /// 1 or 0.
    Value(f64),
    /// A missing marker, or a text not among the categories.
    Missing,
}

impl Categories {
    pub(super) fn new(schema: &Schema) -> Self {
        let mut seen = std::collections::HashSet::new();
        let by_feature = (schema.features.iter())
            .map(|f| {
                let (column, category) = (f.column.as_deref()?, f.category.as_deref()?);
                Some(Indicator {
                    category: category.to_owned(),
                    siblings: (schema.categories_of(column).into_iter())
                        .map(str::to_owned)
                        .collect(),
                    first: seen.insert(column.to_owned()),
                })
            })
            .collect();
        Self {
            by_feature,
            unlisted: Vec::new(),
        }
    }

    /// Feature `j`'s reading of `text` (module docs); an unlisted text is counted once per
    /// row, by the column's first indicator.
    pub(super) fn read(
        &mut self,
        j: usize,
        f: &FeatureSpec,
        text: &str,
        global: Option<&Markers>,
        line: u64,
    ) -> Cell {
        let Some(ind) = &self.by_feature[j] else {
            return Cell::Numeric;
        };
        let marked = |m: Option<&Markers>| m.is_some_and(|m| m.has_text(text));
        if marked(f.missing.as_ref()) || marked(global) {
            return Cell::Missing;
        }
        let text = text.trim();
        if text == ind.category {
            return Cell::Value(1.0);
        }
        if ind.siblings.iter().any(|s| s == text) {
            return Cell::Value(0.0);
        }
        if ind.first {
            let column = f.source_column();
            match self.unlisted.iter_mut().find(|u| u.column == column) {
                Some(u) => u.count += 1,
                None => self.unlisted.push(Unlisted {
                    column: column.to_owned(),
                    count: 1,
                    first: (line, crate::util::text::clean(text, SHOWN)),
                }),
            }
        }
        Cell::Missing
    }

    /// Whether feature `j` is an indicator.
    pub(super) fn is_indicator(&self, j: usize) -> bool {
        self.by_feature[j].is_some()
    }

    /// The unlisted cells, per column, in the order first seen.
    pub(super) fn finish(self) -> Vec<Unlisted> {
        self.unlisted
    }
}
