//! Data releases in the store (statistics, synthetic data): the serialised body as
//! served and its charge, one row of `data_releases`, published through the one reservation
//! path (`reserve.rs`) as learners are.

use super::codec::{encode_curve, parse_relation};
use super::pages::{PageKey, paged};
use super::reserve::{Kept, Settle};
use super::{PublishError, Store, StoreError};
use dpagg_shared::privacy::accounting::admission::BudgetPolicy;
use dpagg_shared::privacy::accounting::ledger::Charge;
use dpagg_shared::privacy::data_release::{DataReleaseError, DataSpec};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use rusqlite::{Connection, params};
use std::time::Duration;

/// A stored data release: the serialised `DataReleaseBody`, served as stored, and its charge.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredData {
    /// Its id.
    pub release_id: String,
    /// When it was made.
    pub created_unix_ms: i64,
    /// Its kind's wire name.
    pub kind: String,
    /// The body, exactly as served.
    pub body: Vec<u8>,
    /// The guarantee charged.
    pub guarantee: PrivacyGuarantee,
}

/// The store key of a data spec under a schema (never equal to a learner's key, which starts
/// with the fingerprint).
pub fn data_key(spec: &DataSpec, schema_fingerprint: &str) -> String {
    format!("data:{schema_fingerprint}:{}", spec.key())
}

/// Data releases as the reservation path keeps them: made as a body, stored with their charge
/// in one row.
struct DataReleases;

impl Kept for DataReleases {
    type Made = StoredData;
    type Stored = StoredData;
    type Error = DataReleaseError;

    fn by_key(store: &Store, key: &str) -> Result<Option<StoredData>, StoreError> {
        store.data_for_key(key)
    }

    fn by_id(store: &Store, release_id: &str) -> Result<Option<StoredData>, StoreError> {
        store.get_data(release_id)
    }

    fn settle(e: &DataReleaseError) -> Settle {
        if e.is_data_independent() {
            Settle::Refund
        } else {
            Settle::Keep("failed")
        }
    }

    fn failure(e: DataReleaseError, charged: bool) -> PublishError {
        if charged {
            PublishError::DataFailedCharged(e)
        } else {
            PublishError::Data(e)
        }
    }

    fn insert(
        store: &Store,
        tx: &Connection,
        key: &str,
        made: StoredData,
        charge: &Charge,
    ) -> Result<StoredData, StoreError> {
        let g = made.guarantee;
        tx.execute(
            "INSERT INTO data_releases (release_id, created_unix_ms, spec_key, kind, body, epsilon, delta, relation, rdp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![made.release_id, made.created_unix_ms, key, made.kind, made.body, g.epsilon, g.delta, g.relation.to_string(), charge.rdp.as_ref().map(encode_curve)],
        )
        .map_err(|e| store.err(e))?;
        Ok(made)
    }
}

impl Store {
    /// Publishes a data release under `key` (a [`data_key`]) through the reservation path
    /// (`reserve.rs`), as [`Store::publish`] does a learner: reserve the charge, run
    /// `make` outside the lock, commit the body and its charge in one row. `make` gets the
    /// reserved release id and returns the serialised body and its creation time. Returns the
    /// stored release and whether it is new.
    pub fn publish_data(
        &self,
        key: &str,
        kind: &str,
        policy: &BudgetPolicy,
        charge: Charge,
        stale_after: Duration,
        make: impl FnOnce(&str) -> Result<(Vec<u8>, i64), DataReleaseError>,
    ) -> Result<(StoredData, bool), PublishError> {
        let guarantee = charge.guarantee;
        self.publish_kept::<DataReleases>(key, policy, charge, stale_after, |release_id| {
            let (body, created_unix_ms) = make(release_id)?;
            Ok(StoredData {
                release_id: release_id.to_owned(),
                created_unix_ms,
                kind: kind.to_owned(),
                body,
                guarantee,
            })
        })
    }

    /// One data release by id.
    pub fn get_data(&self, release_id: &str) -> Result<Option<StoredData>, StoreError> {
        Ok(self
            .query_data(
                "SELECT release_id, created_unix_ms, kind, body, epsilon, delta, relation, rowid FROM data_releases WHERE release_id = ?1",
                params![release_id],
            )?
            .pop()
            .map(|(_, d)| d))
    }

    /// The data release stored under `key` (a [`data_key`]), if any.
    pub fn data_for_key(&self, key: &str) -> Result<Option<StoredData>, StoreError> {
        Ok(self
            .query_data(
                "SELECT release_id, created_unix_ms, kind, body, epsilon, delta, relation, rowid FROM data_releases WHERE spec_key = ?1",
                params![key],
            )?
            .pop()
            .map(|(_, d)| d))
    }

    /// At most `limit` data releases, newest first, after `after` (as [`Store::page`]).
    pub fn data_page(
        &self,
        after: Option<PageKey>,
        limit: usize,
    ) -> Result<(Vec<StoredData>, Option<PageKey>), StoreError> {
        paged(after, limit, |ms, rowid, fetch| {
            self.query_data(
                "SELECT release_id, created_unix_ms, kind, body, epsilon, delta, relation, rowid FROM data_releases WHERE (created_unix_ms, rowid) < (?1, ?2) ORDER BY created_unix_ms DESC, rowid DESC LIMIT ?3",
                params![ms, rowid, fetch],
            )
        })
    }

    fn query_data<P: rusqlite::Params>(
        &self,
        sql: &str,
        params: P,
    ) -> Result<Vec<(PageKey, StoredData)>, StoreError> {
        let rows = self.read(sql, params, |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Vec<u8>>(3)?,
                r.get::<_, f64>(4)?,
                r.get::<_, f64>(5)?,
                r.get::<_, String>(6)?,
                r.get::<_, i64>(7)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (release_id, created_unix_ms, kind, body, epsilon, delta, relation, rowid) = row;
            let relation = parse_relation(&relation).ok_or_else(|| StoreError::Corrupt {
                path: self.path.display().to_string(),
                release_id: release_id.clone(),
                reason: format!("unknown neighbour relation `{relation}`"),
            })?;
            out.push((
                PageKey {
                    created_unix_ms,
                    rowid,
                },
                StoredData {
                    release_id,
                    created_unix_ms,
                    kind,
                    body,
                    guarantee: PrivacyGuarantee {
                        epsilon,
                        delta,
                        relation,
                    },
                },
            ));
        }
        Ok(out)
    }
}
