//! The ledger's high-water mark, kept outside the database: a ledger that vanished or went
//! backwards is caught before anything is served or charged.
//!
//! `ledger.mark` in the state folder holds the ledger's random id (also in the database's `meta`
//! table, made on first use) and its *settled* charges — their number and their composed ε and
//! δ ([`Store::standing`]). Settled charges are all but those of trainings in progress, which a
//! refusal from public quantities may still refund; so the standing of a ledger only grows, and
//! the mark, written from the committed database after every charge ([`Store::raise_mark`]),
//! is never ahead of it. At every open, a database that is missing while a mark exists, that has
//! another id, or that stands below the mark is refused: it is an older copy (restoring it would
//! spend the budget again), another node's ledger, or an empty one.
//!
//! The mark lives in the state folder rather than the identity folder because deployments mount
//! identities read-only. It catches `node.sqlite` moved away, replaced or rolled back; a state
//! folder wiped whole takes its mark with it — which only someone who can write the folder can
//! do, and [`Store::check_private`] refuses a folder anyone but the node's user can write.

use super::codec::release_id;
use super::{Store, StoreError};
use dpagg_shared::privacy::accounting::ledger::compose;
use rusqlite::OptionalExtension;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The mark's file name in the state folder.
pub const MARK_FILE: &str = "ledger.mark";

/// What a ledger has settled: its id and its settled charges (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// The ledger's random id.
    pub ledger_id: String,
    /// The number of settled charges.
    pub charges: u64,
    /// Their composed ε (under replace-one).
    pub epsilon: f64,
    /// Their composed δ.
    pub delta: f64,
}

impl Standing {
    /// Why `self` is behind `mark`, if it is.
    pub fn behind(&self, mark: &Standing) -> Option<String> {
        let below = |ours: f64, theirs: f64| ours < theirs - 1e-9 * (1.0 + theirs.abs());
        if self.ledger_id != mark.ledger_id {
            Some(format!(
                "it is ledger {}, the mark is of ledger {}",
                self.ledger_id, mark.ledger_id
            ))
        } else if self.charges < mark.charges {
            Some(format!(
                "it holds {} charge(s), the mark {}",
                self.charges, mark.charges
            ))
        } else if below(self.epsilon, mark.epsilon) || below(self.delta, mark.delta) {
            Some(format!(
                "it has spent ε = {}, the mark ε = {}",
                self.epsilon, mark.epsilon
            ))
        } else {
            None
        }
    }
}

/// The ledger at `path` is behind its mark: the one-line error, with the way out.
pub(super) fn behind_error(path: &Path, mark_path: &Path, why: &str) -> StoreError {
    StoreError::BehindMark {
        path: path.display().to_string(),
        mark: mark_path.display().to_string(),
        why: why.to_owned(),
    }
}

/// The mark in `state_dir`, if any.
pub(super) fn read_mark(state_dir: &Path) -> Result<Option<Standing>, StoreError> {
    let path = state_dir.join(MARK_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(StoreError::File {
                path: path.display().to_string(),
                source,
            });
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| StoreError::Accounting {
            path: path.display().to_string(),
            reason: format!(
                "unreadable high-water mark ({e}); restore it from a backup of the state folder"
            ),
        })
}

impl Store {
    /// The ledger's id and settled charges, from the committed database.
    pub fn standing(&self) -> Result<Standing, StoreError> {
        let conn = self.reader();
        let ledger_id: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key = 'ledger_id'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))?;
        let charges = self.settled_charges(&conn)?;
        let spent = compose(&charges).map_err(|e| self.accounting(&e))?;
        Ok(Standing {
            ledger_id: ledger_id.unwrap_or_default(),
            charges: charges.len() as u64,
            epsilon: spent.epsilon,
            delta: spent.delta,
        })
    }

    /// At open: gives a new ledger its id (only when there is no mark: a mark with a database
    /// without id means the database was replaced by an empty one), refuses a ledger behind the
    /// mark, and raises the mark to the ledger.
    pub(super) fn hold_to_mark(&self, mark: Option<&Standing>) -> Result<(), StoreError> {
        let mut standing = self.standing()?;
        if standing.ledger_id.is_empty() {
            if mark.is_some() {
                return Err(self.behind("it is a new, empty ledger"));
            }
            let id = release_id()?;
            self.writer()
                .execute(
                    "INSERT OR IGNORE INTO meta (key, value) VALUES ('ledger_id', ?1)",
                    [&id],
                )
                .map_err(|e| self.err(e))?;
            standing = self.standing()?;
        }
        if let Some(why) = mark.and_then(|m| standing.behind(m)) {
            return Err(self.behind(&why));
        }
        self.write_mark(&standing)
    }

    fn behind(&self, why: &str) -> StoreError {
        behind_error(&self.path, &self.mark_path(), why)
    }

    fn mark_path(&self) -> std::path::PathBuf {
        self.path.with_file_name(MARK_FILE)
    }

    fn write_mark(&self, standing: &Standing) -> Result<(), StoreError> {
        let path = self.mark_path();
        let text = serde_json::to_string(standing).map_err(|e| self.accounting(&e))?;
        dpagg_shared::util::files::atomic_write_private(&path, text.as_bytes()).map_err(|source| {
            StoreError::File {
                path: path.display().to_string(),
                source,
            }
        })
    }

    /// Raises the mark to the committed ledger: called after a charge is committed (the charge
    /// first, then the mark, so the mark is never ahead). A mark left lower by a failure here
    /// only checks less; it is logged, and the release stands.
    pub(super) fn raise_mark(&self) {
        if let Err(e) = self.standing().and_then(|s| self.write_mark(&s)) {
            tracing::warn!("cannot raise the ledger's high-water mark: {e}");
        }
    }
}
