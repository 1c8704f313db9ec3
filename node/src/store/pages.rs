//! Newest-first listings in pages: [`PageKey`], the position a page token encodes, and
//! [`paged`], one page of any listing.

use super::StoreError;

/// A release's position in the newest-first order of [`super::Store::releases`]: what a page
/// token of `ListLearners` encodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageKey {
    /// When the release was recorded.
    pub created_unix_ms: i64,
    /// Its row, breaking ties.
    pub rowid: i64,
}

impl PageKey {
    /// The opaque token clients pass back (`<ms>.<row>`).
    pub fn token(&self) -> String {
        format!("{}.{}", self.created_unix_ms, self.rowid)
    }

    /// The key of a token this node gave, or `None`.
    pub fn parse(token: &str) -> Option<Self> {
        let (ms, row) = token.split_once('.')?;
        Some(Self {
            created_unix_ms: ms.parse().ok()?,
            rowid: row.parse().ok()?,
        })
    }
}

/// One page of a newest-first listing: `query(ms, rowid, fetch)` returns up to `fetch` rows
/// strictly before the position (ms, rowid); one row more than `limit` is fetched to learn
/// whether a next page exists, whose key is then the last row kept.
pub(super) fn paged<T>(
    after: Option<PageKey>,
    limit: usize,
    query: impl FnOnce(i64, i64, i64) -> Result<Vec<(PageKey, T)>, StoreError>,
) -> Result<(Vec<T>, Option<PageKey>), StoreError> {
    let (ms, rowid) = after.map_or((i64::MAX, i64::MAX), |k| (k.created_unix_ms, k.rowid));
    let limit_i64 = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut rows = query(ms, rowid, limit_i64.saturating_add(1))?;
    let more = rows.len() > limit;
    rows.truncate(limit);
    let next = if more {
        rows.last().map(|(key, _)| *key)
    } else {
        None
    };
    Ok((rows.into_iter().map(|(_, r)| r).collect(), next))
}
