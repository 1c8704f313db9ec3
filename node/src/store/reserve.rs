//! The one reservation path of every release, learner or data (invariant 3): reserve the charge
//! durably, make the release outside any lock, refund or keep the charge if that fails, commit
//! the release with its charge — and serve the stored release again for the same spec.
//!
//! A kind of release takes part by implementing [`Kept`]: where its rows are found, how a
//! failure is settled, and how a made release is inserted in the committing transaction.

use super::codec::{encode_curve, release_id};
use super::{PublishError, Store, StoreError};
use dpagg_shared::privacy::accounting::admission::{BudgetPolicy, admit};
use dpagg_shared::privacy::accounting::ledger::Charge;
use dpagg_shared::util::time::now_ms;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::time::Duration;

/// What step 1 of a publish found.
pub(super) enum Reserved {
    /// The spec's release is stored already.
    Existing(String),
    /// A charge was reserved for a new release with this id.
    New(String),
}

/// How a failed make is settled.
pub(super) enum Settle {
    /// Refused from public quantities only: the reservation is removed, nothing is charged.
    Refund,
    /// May depend on the data: the charge stays for good, the spec is marked failed with this
    /// public word (`stopped`, `failed`).
    Keep(&'static str),
}

/// A kind of release the store keeps (learners, data releases).
pub(super) trait Kept {
    /// What making a release gives, given its reserved id.
    type Made;
    /// What is stored, and served again for the same spec.
    type Stored;
    /// Why making it failed.
    type Error;
    /// The release stored under a spec key, if any.
    fn by_key(store: &Store, key: &str) -> Result<Option<Self::Stored>, StoreError>;
    /// The release stored under an id, if any.
    fn by_id(store: &Store, release_id: &str) -> Result<Option<Self::Stored>, StoreError>;
    /// Whether a failure is refunded or keeps its charge.
    fn settle(e: &Self::Error) -> Settle;
    /// The error of a failure, refunded (`charged` false) or charged.
    fn failure(e: Self::Error, charged: bool) -> PublishError;
    /// Inserts the release and its charge in the committing transaction `tx`.
    fn insert(
        store: &Store,
        tx: &Connection,
        key: &str,
        made: Self::Made,
        charge: &Charge,
    ) -> Result<Self::Stored, StoreError>;
}

impl Store {
    /// Publishes the release of `key` (see the module docs): returns it and whether it is new.
    ///
    /// `charge` is what the mechanism promises (and what is charged); `make` runs only when the
    /// ledger's admission rule ([`admit`]) allows the charge, after it is recorded and outside
    /// the write lock, with the reserved release id. A reservation older than `stale_after` is
    /// taken to belong to a training that died.
    pub(super) fn publish_kept<K: Kept>(
        &self,
        key: &str,
        policy: &BudgetPolicy,
        charge: Charge,
        stale_after: Duration,
        make: impl FnOnce(&str) -> Result<K::Made, K::Error>,
    ) -> Result<(K::Stored, bool), PublishError> {
        if let Some(existing) = K::by_key(self, key)? {
            return Ok((existing, false));
        }
        let release_id = match self.reserve(key, policy, &charge, stale_after)? {
            Reserved::Existing(id) => {
                return K::by_id(self, &id)?
                    .map(|r| (r, false))
                    .ok_or_else(|| PublishError::Store(self.corrupt(id, "vanished")));
            }
            Reserved::New(id) => id,
        };
        // Making runs outside the write lock: other publishes, reads and the ledger go on.
        let made = match make(&release_id) {
            Ok(made) => made,
            Err(e) => {
                return Err(match K::settle(&e) {
                    Settle::Refund => {
                        self.refund(key, &release_id)?;
                        K::failure(e, false)
                    }
                    Settle::Keep(reason) => {
                        self.abandon(key, &release_id, reason)?;
                        self.raise_mark();
                        K::failure(e, true)
                    }
                });
            }
        };
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let mine = tx
            .execute(
                "DELETE FROM unfinished WHERE spec_key = ?1 AND release_id = ?2",
                params![key, release_id],
            )
            .map_err(|e| self.err(e))?;
        if mine != 1 {
            // The reservation was declared stale and taken over: its charge stays unfinished.
            return Err(PublishError::InProgress);
        }
        let stored = K::insert(self, &tx, key, made, &charge)?;
        tx.commit().map_err(|e| self.err(e))?;
        drop(conn);
        // The charge is on disk; now the mark outside the database follows it.
        self.raise_mark();
        Ok((stored, true))
    }

    /// Admits `charge` and records it as an unfinished training of `key` (step 1 of a publish,
    /// in one short transaction), or finds the release already stored. A reservation older than
    /// `stale_after` belongs to a training that died (a crash): its charge stays, and a new one
    /// is made.
    pub(super) fn reserve(
        &self,
        key: &str,
        policy: &BudgetPolicy,
        charge: &Charge,
        stale_after: Duration,
    ) -> Result<Reserved, PublishError> {
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        // Another process may have published the same spec since the caller looked.
        if let Some(id) = self.published_id(&tx, key)? {
            return Ok(Reserved::Existing(id));
        }
        let pending: Option<(i64, Option<String>, String)> = tx
            .query_row(
                "SELECT started_unix_ms, failed, release_id FROM unfinished WHERE spec_key = ?1",
                [key],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        // A spec whose training failed keeps its one charge and the same answer until the
        // operator allows a retry: asking again is never charged again.
        if let Some((_, Some(reason), release_id)) = &pending {
            return Err(PublishError::FailedBefore {
                release_id: release_id.clone(),
                reason: reason.clone(),
            });
        }
        if let Some((started, None, _)) = pending {
            let age = now_ms().saturating_sub(started);
            if age < i64::try_from(stale_after.as_millis()).unwrap_or(i64::MAX) {
                return Err(PublishError::InProgress);
            }
            tx.execute(
                "UPDATE unfinished SET spec_key = NULL WHERE spec_key = ?1",
                [key],
            )
            .map_err(|e| self.err(e))?;
        }
        let charges = self.charges(&tx)?;
        admit(policy, &charges, charge).map_err(|e| self.accounting(&e))??;
        let id = release_id()?;
        let g = charge.guarantee;
        tx.execute(
            "INSERT INTO unfinished (spec_key, release_id, started_unix_ms, epsilon, delta, relation, rdp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![key, id, now_ms(), g.epsilon, g.delta, g.relation.to_string(), charge.rdp.as_ref().map(encode_curve)],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(Reserved::New(id))
    }

    /// A training that refused before it learnt anything from the data (see
    /// [`super::is_data_independent`]): its reservation is removed, as if it had never been
    /// asked for.
    fn refund(&self, key: &str, release_id: &str) -> Result<(), StoreError> {
        let conn = self.writer();
        conn.execute(
            "DELETE FROM unfinished WHERE spec_key = ?1 AND release_id = ?2",
            params![key, release_id],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A training that failed: its charge stays (unfinished, for good), and the spec is marked
    /// failed with `reason` (public words only: `stopped`, `failed`), so that asking again gets
    /// [`PublishError::FailedBefore`] and no new charge until [`Store::allow_retry`].
    fn abandon(&self, key: &str, release_id: &str, reason: &str) -> Result<(), StoreError> {
        let conn = self.writer();
        conn.execute(
            "UPDATE unfinished SET failed = ?3 WHERE spec_key = ?1 AND release_id = ?2",
            params![key, release_id, reason],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// The operator's decision after a failed training (`dpagg-node releases --allow-retry`):
    /// the spec of the failed reservation `release_id` may be asked for again, and charged
    /// again. Its first charge stays. Returns whether such a failure was found.
    pub fn allow_retry(&self, release_id: &str) -> Result<bool, StoreError> {
        let conn = self.writer();
        let n = conn
            .execute(
                "UPDATE unfinished SET spec_key = NULL WHERE release_id = ?1 AND failed IS NOT NULL AND spec_key IS NOT NULL",
                [release_id],
            )
            .map_err(|e| self.err(e))?;
        Ok(n > 0)
    }

    /// The failed trainings whose specs are still held (release id, reason, start time).
    pub fn failures(&self) -> Result<Vec<(String, String, i64)>, StoreError> {
        self.read(
            "SELECT release_id, failed, started_unix_ms FROM unfinished WHERE failed IS NOT NULL AND spec_key IS NOT NULL ORDER BY seq",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }

    /// Charges of trainings that did not produce a release (failed, stopped, or killed), and of
    /// trainings in progress.
    pub fn unfinished(&self) -> Result<usize, StoreError> {
        let n: Vec<i64> = self.read("SELECT COUNT(*) FROM unfinished", [], |r| r.get(0))?;
        Ok(n.first().map_or(0, |n| usize::try_from(*n).unwrap_or(0)))
    }

    /// The id of the release (learner or data) stored under `key`, if any (inside the
    /// publishing transaction).
    fn published_id(&self, tx: &Connection, key: &str) -> Result<Option<String>, StoreError> {
        tx.query_row(
            "SELECT release_id FROM releases WHERE spec_key = ?1 \
             UNION ALL SELECT release_id FROM data_releases WHERE spec_key = ?1",
            [key],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| self.err(e))
    }
}
