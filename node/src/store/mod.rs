//! The node's durable state: releases and the privacy ledger, in one SQLite database.
//!
//! **Invariant 3 is enforced here.** [`Store::publish`] reserves, trains, then commits:
//! 1. one short `BEGIN IMMEDIATE` transaction (which serialises concurrent publishers across
//!    processes) returns the existing release if the same spec was published before; otherwise
//!    it checks the policy against the spent budget *including* every reservation, and records
//!    the charge as an unfinished training of the spec (`unfinished` table), committed with
//!    `synchronous = FULL` — the budget is spent from here on;
//! 2. training runs outside any lock, so a long training blocks no other publish or read; a
//!    second request for the same spec meanwhile gets [`PublishError::InProgress`];
//! 3. a second short transaction inserts the release and moves its charge to the ledger.
//!
//! Only after that commit does the caller get the learner, so a learner never leaves without its
//! charge on disk. A training that fails, is stopped, or dies with the process keeps its charge
//! in `unfinished` for good: whether and when training fails may depend on the data — except
//! refusals computed from public quantities only ([`is_data_independent`]), which are refunded. Releases are
//! stored as bytes and served as stored; nothing is ever retrained per request. The budget is
//! recomputed from `ledger` and `unfinished` on every check, so a restart cannot reset it.
//!
//! Data releases (statistics, synthetic data; [`Store::publish_data`]) take the same three
//! steps under the same policy — the one path of `reserve.rs`, which every kind of release
//! implements through its `Kept` trait; their body and charge are one row of `data_releases`,
//! and the composition below covers them with the learners.
//!
//! Outside the database, `ledger.mark` keeps the ledger's high-water mark, so a database moved
//! away or rolled back is refused at open (`mark.rs`); `backup.rs` copies the ledger out and
//! restores a copy that is not behind the mark.
//!
//! Files: `reserve.rs` (the path, failures and retries), `learners.rs` and `data.rs` (each kind's
//! table, reads and pages), `operator.rs` (what the operator published beside `serve`), `schema.rs` (tables and migrations: an existing `node.sqlite` stays
//! readable), `codec.rs` (relations, RDP curves, release ids), `pages.rs`, `error.rs`, `tests.rs`.
//!
//! Each charge records its guarantee, its neighbour relation and, when the mechanism has one, its
//! RDP curve. The spent budget is [`dpagg_shared::privacy::accounting::ledger::compose`] of all charges:
//! per relation, composed RDP curves where every release of the relation has one and basic
//! composition otherwise; add/remove-one spend converted to replace-one by group privacy. A
//! publish is allowed only if the composition *including the new charge* fits the policy.

mod backup;
mod codec;
mod data;
mod error;
mod learners;
mod mark;
mod operator;
mod pages;
mod reserve;
mod schema;

pub use backup::restore;
pub use data::{StoredData, data_key};
pub use error::{PublishError, StoreError, is_data_independent};
pub use mark::{MARK_FILE, Standing};
pub use operator::{OperatorCount, OperatorPublish};
pub use pages::PageKey;

use codec::{decode_curve, parse_relation};
use dpagg_shared::privacy::accounting::ledger::{Charge, Composition, compose};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior};
use schema::{SCHEMA_SQL, create_private_file, migrate};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The files of the state folder the node uses (checked by [`Store::check_private`]).
pub const STATE_FILES: &[&str] = &[
    "node.sqlite",
    "node.sqlite-wal",
    "node.sqlite-shm",
    "serve.lock",
    "ledger.mark",
];

/// Spent budget: the composition of every charge (see the module documentation).
pub type Spent = Composition;

/// The node's database.
pub struct Store {
    path: PathBuf,
    writer: Mutex<Connection>,
    reader: Mutex<Connection>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Store {
    /// Refuses a state folder that someone other than this process's user can change: the
    /// folder, the files of [`STATE_FILES`] in it, or a folder above it
    /// ([`dpagg_shared::util::private::check_state_dir`]). Whoever can write them can swap the
    /// ledger for an older copy and spend the budget again.
    pub fn check_private(state_dir: &Path) -> Result<(), StoreError> {
        Ok(dpagg_shared::util::private::check_state_dir(
            state_dir,
            STATE_FILES,
        )?)
    }

    /// Opens (creating if needed) `state_dir/node.sqlite`, after [`Store::check_private`].
    pub fn open(state_dir: &Path) -> Result<Self, StoreError> {
        Self::check_private(state_dir)?;
        dpagg_shared::util::files::create_private_dir(state_dir).map_err(|source| {
            StoreError::Io {
                path: state_dir.display().to_string(),
                source,
            }
        })?;
        let mark = mark::read_mark(state_dir)?;
        let path = state_dir.join("node.sqlite");
        if mark.is_some() && !path.exists() {
            let mark_path = state_dir.join(MARK_FILE);
            return Err(mark::behind_error(
                &path,
                &mark_path,
                "the database is missing",
            ));
        }
        // Created 0600 before SQLite opens it: SQLite gives its -wal and -shm files the mode of
        // the database file, so no state file is ever readable by other users.
        create_private_file(&path).map_err(|source| StoreError::Io {
            path: path.display().to_string(),
            source,
        })?;
        let err = |source| StoreError::Sqlite {
            path: path.display().to_string(),
            source,
        };
        let open = || -> Result<Connection, rusqlite::Error> {
            let c = Connection::open(&path)?;
            c.busy_timeout(Duration::from_secs(60))?;
            c.pragma_update(None, "journal_mode", "WAL")?;
            c.pragma_update(None, "synchronous", "FULL")?;
            c.pragma_update(None, "foreign_keys", "ON")?;
            Ok(c)
        };
        let writer = open().map_err(err)?;
        writer.execute_batch(SCHEMA_SQL).map_err(err)?;
        migrate(&writer).map_err(err)?;
        let reader = open().map_err(err)?;
        let store = Self {
            path,
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
        };
        store.hold_to_mark(mark.as_ref())?;
        Ok(store)
    }

    /// Binds the state folder to `organisation_id` on first use, and refuses any other
    /// organisation afterwards ([`StoreError::OtherOrganisation`]).
    pub fn claim(&self, organisation_id: &str) -> Result<(), StoreError> {
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let owner: Option<String> = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'organisation_id'",
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        match owner {
            Some(owner) if owner != organisation_id => {
                return Err(StoreError::OtherOrganisation {
                    path: self.path.display().to_string(),
                    owner,
                    ours: organisation_id.to_owned(),
                });
            }
            Some(_) => {}
            None => {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES ('organisation_id', ?1)",
                    [organisation_id],
                )
                .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// The reading connection (a panic elsewhere does not poison the database).
    fn reader(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The writing connection (a panic elsewhere does not poison the database).
    fn writer(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite {
            path: self.path.display().to_string(),
            source,
        }
    }

    /// Budget spent so far (recomputed from the ledger).
    pub fn spent(&self) -> Result<Spent, StoreError> {
        let conn = self.reader();
        let charges = self.charges(&conn)?;
        self.compose(&charges)
    }

    fn compose(&self, charges: &[Charge]) -> Result<Spent, StoreError> {
        compose(charges).map_err(|e| self.accounting(&e))
    }

    fn accounting(&self, e: &dyn std::fmt::Display) -> StoreError {
        StoreError::Accounting {
            path: self.path.display().to_string(),
            reason: e.to_string(),
        }
    }

    /// Every charge: the ledger's (one per learner), the data releases' and those of unfinished
    /// trainings.
    fn charges(&self, conn: &Connection) -> Result<Vec<Charge>, StoreError> {
        self.charges_where(conn, "")
    }

    /// The charges that can never be refunded: every charge but those of trainings in progress
    /// (whose reservation a refusal from public quantities may still remove). Their number and
    /// composition only grow, which makes them the ledger's high-water mark (`mark.rs`).
    fn settled_charges(&self, conn: &Connection) -> Result<Vec<Charge>, StoreError> {
        self.charges_where(conn, " WHERE failed IS NOT NULL OR spec_key IS NULL")
    }

    /// The charges, with `unfinished` filtered by `filter` (a constant `WHERE` clause).
    fn charges_where(&self, conn: &Connection, filter: &str) -> Result<Vec<Charge>, StoreError> {
        let mut stmt = conn
            .prepare_cached(&format!(
                "SELECT epsilon, delta, relation, rdp FROM ledger \
                 UNION ALL SELECT epsilon, delta, relation, rdp FROM data_releases \
                 UNION ALL SELECT epsilon, delta, relation, rdp FROM unfinished{filter}"
            ))
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, f64>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (epsilon, delta, relation, rdp) = row.map_err(|e| self.err(e))?;
            let corrupt = |reason: String| StoreError::Accounting {
                path: self.path.display().to_string(),
                reason,
            };
            let relation = parse_relation(&relation)
                .ok_or_else(|| corrupt(format!("unknown neighbour relation `{relation}`")))?;
            let rdp = rdp
                .map(|text| decode_curve(&text).map_err(corrupt))
                .transpose()?;
            out.push(Charge {
                guarantee: PrivacyGuarantee {
                    epsilon,
                    delta,
                    relation,
                },
                rdp,
            });
        }
        Ok(out)
    }

    /// Runs a read-only query on the reader connection, mapping every row with `map`.
    fn read<T, P: rusqlite::Params>(
        &self,
        sql: &str,
        params: P,
        map: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let conn = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut stmt = conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, map).map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// A stored row that cannot be used.
    fn corrupt(&self, release_id: String, reason: &str) -> StoreError {
        StoreError::Corrupt {
            path: self.path.display().to_string(),
            release_id,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests;
