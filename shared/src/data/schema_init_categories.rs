//! Text columns with few distinct values, which `schema init` proposes as categorical features
//! ([`crate::data::schema::categorical`]).
//!
//! A column is proposed when none of its cells is a number, it holds between 2 and
//! [`MAX_PROPOSED`] distinct texts (missing markers aside), and each text is on two cells or
//! more on average (an identifier column is not a category). The categories seen are
//! statistics of the private rows — a category only one patient has identifies them — so the
//! draft marks them `bounds = "observed"`, refused by every release path exactly as observed
//! bounds are, until they are confirmed from a public code list. A data dictionary's
//! `categories` (`never|former|current`) are public: a column it lists them for is written as
//! categorical with them, and no `bounds` line.

use super::Survey;
use crate::data::dictionary::Entry;
use std::fmt::Write as _;

/// Most distinct texts a column may hold and still be proposed as categorical.
pub const MAX_PROPOSED: usize = 20;

/// A text column proposed as categorical.
#[derive(Debug, Clone, PartialEq)]
pub struct TextColumn {
    /// Header name.
    pub name: String,
    /// The categories: from the dictionary (public), else those seen, sorted, with their counts
    /// (printed to the terminal only).
    pub categories: Vec<(String, usize)>,
    /// Whether the categories are public (from a data dictionary).
    pub public: bool,
}

/// Counts `cell` among a column's distinct texts, giving up beyond [`MAX_PROPOSED`].
pub(super) fn tally(texts: &mut Option<Vec<(String, usize)>>, cell: &str) {
    let Some(list) = texts else { return };
    if let Some((_, n)) = list.iter_mut().find(|(t, _)| t == cell) {
        *n += 1;
    } else if list.len() < MAX_PROPOSED {
        list.push((cell.to_owned(), 1));
    } else {
        *texts = None;
    }
}

/// The column as a categorical feature: with the dictionary's categories when it lists some,
/// else when its cells look like categories (module docs).
pub(super) fn proposal(name: &str, s: &Survey, entry: Option<&Entry>) -> Option<TextColumn> {
    if let Some(listed) = entry.and_then(|e| e.categories.as_ref()) {
        return Some(TextColumn {
            name: name.to_owned(),
            categories: listed.iter().map(|c| (c.clone(), 0)).collect(),
            public: true,
        });
    }
    let texts = s.texts.as_ref()?;
    let cells: usize = texts.iter().map(|(_, n)| n).sum();
    if s.numbers > 0 || texts.len() < 2 || cells < 2 * texts.len() {
        return None;
    }
    let mut categories = texts.clone();
    categories.sort();
    Some(TextColumn {
        name: name.to_owned(),
        categories,
        public: false,
    })
}

/// The feature's lines of the draft.
pub(super) fn render(s: &mut String, c: &TextColumn, dictionary: &str) {
    let list: Vec<String> = c.categories.iter().map(|(t, _)| super::quote(t)).collect();
    let _ = writeln!(
        s,
        "\n[[features]]\nname = {}\nkind = \"categorical\"\ncategories = [{}]",
        super::quote(&c.name),
        list.join(", ")
    );
    if c.public {
        let _ = writeln!(
            s,
            "# public categories, from the data dictionary {dictionary}"
        );
    } else {
        let _ = writeln!(
            s,
            "bounds = \"observed\"  # the categories seen in this file: confirm them against a \
             public code list (a rare one can identify a patient), then delete this line"
        );
    }
}
