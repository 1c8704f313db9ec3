//! Learners in the store: the `releases` table with their charges in `ledger`, keyed by a
//! bit-exact spec identity, published through the one reservation path (`reserve.rs`).

use super::codec::encode_curve;
use super::pages::{PageKey, paged};
use super::reserve::{Kept, Settle};
use super::{PublishError, Store, StoreError, is_data_independent};
use dpagg_shared::LinearClassifier;
use dpagg_shared::privacy::accounting::admission::BudgetPolicy;
use dpagg_shared::privacy::accounting::ledger::Charge;
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismError};
use dpagg_shared::privacy::release::{PublishedLearner, Release};
use dpagg_shared::util::time::now_ms;
use rusqlite::{Connection, params};
use std::time::Duration;

/// Identity of a spec under a schema: bit-exact parameters, so 0.1 and 0.1000…01 differ; λ = auto
/// is the word `auto`, distinct from every fixed λ. Options follow in name order (none: the key of
/// a spec stored before options existed).
pub(super) fn spec_key(spec: &LearnerSpec, schema_fingerprint: &str) -> String {
    let lambda = match spec.l2 {
        Lambda::Fixed(l) => format!("{:016x}", l.to_bits()),
        Lambda::Auto => "auto".to_owned(),
    };
    let mut key = format!(
        "{schema_fingerprint}:{}:{:016x}:{:016x}:{lambda}",
        spec.kind.name(),
        spec.epsilon.to_bits(),
        spec.delta.to_bits(),
    );
    for (name, value) in &spec.options {
        key.push_str(&format!(":{name}={:016x}", value.to_bits()));
    }
    key
}

/// Learners as the reservation path keeps them: made by training, stored in `releases` with
/// their charge in `ledger`.
struct Learners;

impl Kept for Learners {
    type Made = PublishedLearner;
    type Stored = PublishedLearner;
    type Error = MechanismError;

    fn by_key(store: &Store, key: &str) -> Result<Option<PublishedLearner>, StoreError> {
        Ok(store.query("SELECT release_id, created_unix_ms, spec_json, schema_fingerprint, weights, metadata_json, rowid FROM releases WHERE spec_key = ?1", [key])?.pop())
    }

    fn by_id(store: &Store, release_id: &str) -> Result<Option<PublishedLearner>, StoreError> {
        store.get(release_id)
    }

    fn settle(e: &MechanismError) -> Settle {
        if is_data_independent(e) {
            Settle::Refund
        } else if matches!(e, MechanismError::Stopped(_)) {
            Settle::Keep("stopped")
        } else {
            Settle::Keep("failed")
        }
    }

    fn failure(e: MechanismError, charged: bool) -> PublishError {
        if charged {
            PublishError::FailedCharged(e)
        } else {
            PublishError::Mechanism(e)
        }
    }

    fn insert(
        store: &Store,
        tx: &Connection,
        key: &str,
        made: PublishedLearner,
        charge: &Charge,
    ) -> Result<PublishedLearner, StoreError> {
        store.insert(tx, key, &made, charge)?;
        Ok(made)
    }
}

impl Store {
    /// Publishes `spec` through the reservation path (`reserve.rs`): returns the release
    /// and whether it is new.
    ///
    /// `charge` is what the mechanism promises (and what is charged); `train` runs only when
    /// the ledger's admission rule allows the charge, after it is recorded and outside the
    /// write lock. A reservation older than `stale_after` is taken to belong to a training
    /// that died.
    pub fn publish(
        &self,
        spec: &LearnerSpec,
        schema_fingerprint: &str,
        policy: &BudgetPolicy,
        charge: Charge,
        stale_after: Duration,
        train: impl FnOnce() -> Result<Release, MechanismError>,
    ) -> Result<(PublishedLearner, bool), PublishError> {
        let key = spec_key(spec, schema_fingerprint);
        self.publish_kept::<Learners>(&key, policy, charge, stale_after, |release_id| {
            let release = train()?;
            Ok(PublishedLearner {
                release_id: release_id.to_owned(),
                created_unix_ms: now_ms(),
                spec: spec.clone(),
                schema_fingerprint: schema_fingerprint.to_owned(),
                release,
            })
        })
    }

    /// Every release, newest first.
    pub fn releases(&self) -> Result<Vec<PublishedLearner>, StoreError> {
        self.query("SELECT release_id, created_unix_ms, spec_json, schema_fingerprint, weights, metadata_json, rowid FROM releases ORDER BY created_unix_ms DESC, rowid DESC", [])
    }

    /// The newest release, by a single-row query.
    pub fn latest(&self) -> Result<Option<PublishedLearner>, StoreError> {
        Ok(self.query("SELECT release_id, created_unix_ms, spec_json, schema_fingerprint, weights, metadata_json, rowid FROM releases ORDER BY created_unix_ms DESC, rowid DESC LIMIT 1", [])?.pop())
    }

    /// At most `limit` releases, newest first, starting after the position `after` (a
    /// [`PageKey`] of the previous page); with the key of the next page when there is one.
    pub fn page(
        &self,
        after: Option<PageKey>,
        limit: usize,
    ) -> Result<(Vec<PublishedLearner>, Option<PageKey>), StoreError> {
        paged(after, limit, |ms, rowid, fetch| {
            self.query_keyed(
                "SELECT release_id, created_unix_ms, spec_json, schema_fingerprint, weights, metadata_json, rowid FROM releases WHERE (created_unix_ms, rowid) < (?1, ?2) ORDER BY created_unix_ms DESC, rowid DESC LIMIT ?3",
                params![ms, rowid, fetch],
            )
        })
    }

    /// One release by id.
    pub fn get(&self, release_id: &str) -> Result<Option<PublishedLearner>, StoreError> {
        Ok(self.query("SELECT release_id, created_unix_ms, spec_json, schema_fingerprint, weights, metadata_json, rowid FROM releases WHERE release_id = ?1", [release_id])?.pop())
    }

    /// The release made for `spec` under `schema_fingerprint`, if any.
    pub fn for_spec(
        &self,
        spec: &LearnerSpec,
        schema_fingerprint: &str,
    ) -> Result<Option<PublishedLearner>, StoreError> {
        Learners::by_key(self, &spec_key(spec, schema_fingerprint))
    }

    /// Releases selected by `sql` (the six release columns, then `rowid`).
    fn query<P: rusqlite::Params>(
        &self,
        sql: &str,
        params: P,
    ) -> Result<Vec<PublishedLearner>, StoreError> {
        Ok(self
            .query_keyed(sql, params)?
            .into_iter()
            .map(|(_, r)| r)
            .collect())
    }

    /// [`Store::query`] with each release's position in the newest-first order.
    fn query_keyed<P: rusqlite::Params>(
        &self,
        sql: &str,
        params: P,
    ) -> Result<Vec<(PageKey, PublishedLearner)>, StoreError> {
        let rows = self.read(sql, params, |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, Vec<u8>>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, i64>(6)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (
                release_id,
                created_unix_ms,
                spec_json,
                schema_fingerprint,
                weights,
                metadata_json,
                rowid,
            ) = row;
            let key = PageKey {
                created_unix_ms,
                rowid,
            };
            let corrupt = |reason: String| StoreError::Corrupt {
                path: self.path.display().to_string(),
                release_id: release_id.clone(),
                reason,
            };
            let spec = serde_json::from_str(&spec_json).map_err(|e| corrupt(e.to_string()))?;
            let metadata =
                serde_json::from_str(&metadata_json).map_err(|e| corrupt(e.to_string()))?;
            if weights.len() % 8 != 0 {
                return Err(corrupt("weights are not a whole number of f64".into()));
            }
            let coefficients = weights
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
                .collect();
            out.push((
                key,
                PublishedLearner {
                    release_id,
                    created_unix_ms,
                    spec,
                    schema_fingerprint,
                    release: Release {
                        classifier: LinearClassifier::new(coefficients),
                        metadata,
                    },
                },
            ));
        }
        Ok(out)
    }

    /// Inserts the release and its charge (the caller commits both at once).
    fn insert(
        &self,
        tx: &Connection,
        key: &str,
        p: &PublishedLearner,
        charge: &Charge,
    ) -> Result<(), StoreError> {
        let guarantee = charge.guarantee;
        let weights: Vec<u8> = p
            .classifier()
            .coefficients()
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let encode = |what: &str, r: serde_json::Result<String>| {
            r.map_err(|e| StoreError::Corrupt {
                path: self.path.display().to_string(),
                release_id: p.release_id.clone(),
                reason: format!("cannot encode {what}: {e}"),
            })
        };
        let spec_json = encode("spec", serde_json::to_string(&p.spec))?;
        let metadata_json = encode("metadata", serde_json::to_string(p.metadata()))?;
        let rdp_text = charge.rdp.as_ref().map(encode_curve);
        tx.execute(
            "INSERT INTO releases (release_id, created_unix_ms, spec_key, spec_json, schema_fingerprint, weights, metadata_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![p.release_id, p.created_unix_ms, key, spec_json, p.schema_fingerprint, weights, metadata_json],
        )
        .map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT INTO ledger (release_id, epsilon, delta, relation, recorded_unix_ms, rdp) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![p.release_id, guarantee.epsilon, guarantee.delta, guarantee.relation.to_string(), p.created_unix_ms, rdp_text],
        )
        .map_err(|e| self.err(e))?;
        Ok(())
    }
}
