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
//! steps under the same policy; their body and charge are one row of `data_releases`, and the
//! composition below covers them with the learners.
//!
//! Each charge records its guarantee, its neighbour relation and, when the mechanism has one, its
//! RDP curve. The spent budget is [`dpagg_shared::privacy::accounting::ledger::compose`] of all charges:
//! per relation, composed RDP curves where every release of the relation has one and basic
//! composition otherwise; add/remove-one spend converted to replace-one by group privacy. A
//! publish is allowed only if the composition *including the new charge* fits the policy.

use dpagg_shared::LinearClassifier;
use dpagg_shared::privacy::accounting::RdpCurve;
use dpagg_shared::privacy::accounting::admission::{BudgetPolicy, Refusal, admit};
use dpagg_shared::privacy::accounting::ledger::{Charge, Composition, compose};
use dpagg_shared::privacy::data_release::{DataReleaseError, DataSpec};
use dpagg_shared::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismError};
use dpagg_shared::privacy::release::{PublishedLearner, Release};
use dpagg_shared::util::time::now_ms;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// Identity of a spec under a schema: bit-exact parameters, so 0.1 and 0.1000…01 differ; λ = auto
/// is the word `auto`, distinct from every fixed λ. Options follow in name order (none: the key of
/// a spec stored before options existed).
fn spec_key(spec: &LearnerSpec, schema_fingerprint: &str) -> String {
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

/// Spent budget: the composition of every charge (see the module documentation).
pub type Spent = Composition;

/// Database failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("{path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// The error.
        source: rusqlite::Error,
    },
    /// The state folder cannot be created.
    #[error("{path}: cannot create the state folder: {source}")]
    Io {
        /// The folder.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A stored row cannot be decoded.
    #[error("{path}: corrupt release {release_id}: {reason}")]
    Corrupt {
        /// The database file.
        path: String,
        /// The release.
        release_id: String,
        /// What is wrong.
        reason: String,
    },
    /// The operating system refused entropy for a release id.
    #[error("cannot obtain entropy for a release id: {0}")]
    Entropy(String),
    /// The state folder was claimed by another organisation: its releases were trained on that
    /// organisation's data and must never be served under another name.
    #[error(
        "{path}: this state folder belongs to organisation `{owner}`, not `{ours}`: its releases were trained on `{owner}`'s data; give each organisation's node its own state folder"
    )]
    OtherOrganisation {
        /// The database file.
        path: String,
        /// The organisation recorded in the folder.
        owner: String,
        /// The organisation asking.
        ours: String,
    },
    /// The ledger's charges cannot be composed.
    #[error("{path}: cannot compose the ledger: {reason}")]
    Accounting {
        /// The database file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Why a publish did not release anything.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The ledger's admission rule refuses the charge (per-release cap or totals).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The mechanism's guarantee is not proven for the algorithm as run, and the policy refuses
    /// such releases.
    #[error(
        "{0} releases state a guarantee that is not proven for the sampler used; this node's policy refuses them (policy.allow_unproven = false)"
    )]
    Unproven(String),
    /// The mechanism refused (invalid parameter, data outside its assumptions, solver failure).
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The database failed; nothing was released.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The release would take longer than the node's training time limit (predicted from n, d
    /// and the spec, before any charge).
    #[error(
        "this release would take at least {} s here, over this node's max_training_seconds = {}: ask for fewer steps or a smaller sampling rate, or raise the limit (nothing was charged)",
        dpagg_shared::util::num::Short(*predicted),
        dpagg_shared::util::num::Short(*limit)
    )]
    TooSlow {
        /// Predicted seconds (a lower estimate).
        predicted: f64,
        /// The limit.
        limit: f64,
    },
    /// This spec's training failed or stopped before (reservation `release_id`): its one charge
    /// stands and nothing new is charged until the operator allows a retry.
    #[error(
        "this spec's training {reason} before (reservation {release_id}): its charge stands and asking again charges nothing; the node's operator may allow a retry (dpagg-node releases --allow-retry {release_id}), or ask for another spec"
    )]
    FailedBefore {
        /// The failed reservation.
        release_id: String,
        /// `stopped` or `failed`.
        reason: String,
    },
    /// The same spec is being trained right now (by this node or a `publish` beside it).
    #[error("a release for this spec is being trained now; ask again when it is done")]
    InProgress,
    /// Training failed after its charge was reserved: the charge stands, since whether and
    /// when training fails may depend on the data.
    #[error(
        "{0}; nothing was released, and the charge stands (a failed training may depend on the data)"
    )]
    FailedCharged(MechanismError),
    /// A data release refused from public quantities only (refunded).
    #[error(transparent)]
    Data(DataReleaseError),
    /// A data release failed after reading the data: the charge stands.
    #[error("{0}; nothing was released, and the charge stands")]
    DataFailedCharged(DataReleaseError),
}

/// Whether a training failure is a function of public quantities only (the spec, n and d, which
/// every release publishes), so that refusing reveals nothing about the records and need not be
/// charged: invalid parameters and options, step counts over a cap, a snapping bound out of
/// range, an empty dataset. Everything else (a row outside the assumed norm, a solver or sampler
/// failure, a stop at the time limit) may depend on the data and stays charged.
pub fn is_data_independent(e: &MechanismError) -> bool {
    use dpagg_shared::privacy::mechanism::GibbsError;
    matches!(
        e,
        MechanismError::InvalidParameter { .. }
            | MechanismError::UnknownOption { .. }
            | MechanismError::ReproductionOnly { .. }
            | MechanismError::Accounting(_)
            | MechanismError::TooManyIterations { .. }
            | MechanismError::Snapping(_)
            | MechanismError::EmptyData
            | MechanismError::Gibbs(
                GibbsError::TooManySteps { .. } | GibbsError::DimensionTooSmall { .. }
            )
    )
}

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

/// What step 1 of a publish found.
enum Reserved {
    /// The spec's release is stored already.
    Existing(String),
    /// A charge was reserved for a new release with this id.
    New(String),
}

/// A release's position in the newest-first order of [`Store::releases`]: what a page token of
/// `ListLearners` encodes.
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

const SCHEMA_SQL: &str = "
CREATE TABLE IF NOT EXISTS releases (
    release_id TEXT PRIMARY KEY,
    created_unix_ms INTEGER NOT NULL,
    spec_key TEXT NOT NULL UNIQUE,
    spec_json TEXT NOT NULL,
    schema_fingerprint TEXT NOT NULL,
    weights BLOB NOT NULL,
    metadata_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ledger (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    release_id TEXT NOT NULL REFERENCES releases(release_id),
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    relation TEXT NOT NULL,
    recorded_unix_ms INTEGER NOT NULL,
    rdp TEXT
);
-- Charges of trainings that have not (yet) produced a release: reserved before training, outside
-- the write lock; a finished training moves its charge to `ledger`, a failed or abandoned one
-- keeps it here for good (spec_key NULL), since the failure may depend on the data.
CREATE TABLE IF NOT EXISTS unfinished (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    spec_key TEXT UNIQUE,
    release_id TEXT NOT NULL,
    started_unix_ms INTEGER NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    relation TEXT NOT NULL,
    rdp TEXT
);
-- Data releases (statistics, synthetic data; issue 14): the serialised body as served, and its
-- charge in the same row (one statement commits both).
CREATE TABLE IF NOT EXISTS data_releases (
    release_id TEXT PRIMARY KEY,
    created_unix_ms INTEGER NOT NULL,
    spec_key TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    body BLOB NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    relation TEXT NOT NULL,
    rdp TEXT
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

impl Store {
    /// Opens (creating if needed) `state_dir/node.sqlite`.
    pub fn open(state_dir: &Path) -> Result<Self, StoreError> {
        dpagg_shared::util::files::create_private_dir(state_dir).map_err(|source| {
            StoreError::Io {
                path: state_dir.display().to_string(),
                source,
            }
        })?;
        let path = state_dir.join("node.sqlite");
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
        Ok(Self {
            path,
            writer: Mutex::new(writer),
            reader: Mutex::new(reader),
        })
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
        let conn = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        let mut stmt = conn
            .prepare_cached(
                "SELECT epsilon, delta, relation, rdp FROM ledger \
                 UNION ALL SELECT epsilon, delta, relation, rdp FROM data_releases \
                 UNION ALL SELECT epsilon, delta, relation, rdp FROM unfinished",
            )
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
        Ok(self.query("SELECT release_id, created_unix_ms, spec_json, schema_fingerprint, weights, metadata_json, rowid FROM releases WHERE spec_key = ?1", [spec_key(spec, schema_fingerprint)])?.pop())
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

    /// Publishes `spec` (see the module docs): returns the release and whether it is new.
    ///
    /// `charge` is what the mechanism promises (and what is charged); `train` runs only when
    /// the ledger's admission rule ([`admit`]) allows the charge, after it is recorded and
    /// outside the write lock. A reservation older than `stale_after` is taken to belong to a
    /// training that died.
    pub fn publish(
        &self,
        spec: &LearnerSpec,
        schema_fingerprint: &str,
        policy: &BudgetPolicy,
        charge: Charge,
        stale_after: Duration,
        train: impl FnOnce() -> Result<Release, MechanismError>,
    ) -> Result<(PublishedLearner, bool), PublishError> {
        if let Some(existing) = self.for_spec(spec, schema_fingerprint)? {
            return Ok((existing, false));
        }
        let key = spec_key(spec, schema_fingerprint);
        let release_id = match self.reserve(&key, policy, &charge, stale_after)? {
            Reserved::Existing(id) => {
                return self.get(&id)?.map(|r| (r, false)).ok_or_else(|| {
                    PublishError::Store(StoreError::Corrupt {
                        path: self.path.display().to_string(),
                        release_id: id,
                        reason: "vanished".into(),
                    })
                });
            }
            Reserved::New(id) => id,
        };
        // Training runs outside the write lock: other publishes, reads and the ledger go on.
        let release = match train() {
            Ok(r) => r,
            Err(e) if is_data_independent(&e) => {
                self.refund(&key, &release_id)?;
                return Err(PublishError::Mechanism(e));
            }
            Err(e) => {
                let reason = if matches!(e, MechanismError::Stopped(_)) {
                    "stopped"
                } else {
                    "failed"
                };
                self.abandon(&key, &release_id, reason)?;
                return Err(PublishError::FailedCharged(e));
            }
        };
        let published = PublishedLearner {
            release_id,
            created_unix_ms: now_ms(),
            spec: spec.clone(),
            schema_fingerprint: schema_fingerprint.to_owned(),
            release,
        };
        let mut conn = self.writer();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let mine = tx
            .execute(
                "DELETE FROM unfinished WHERE spec_key = ?1 AND release_id = ?2",
                params![key, published.release_id],
            )
            .map_err(|e| self.err(e))?;
        if mine != 1 {
            // The reservation was declared stale and taken over: its charge stays unfinished.
            return Err(PublishError::InProgress);
        }
        self.insert(&tx, &key, &published, &charge)?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok((published, true))
    }

    /// Publishes a data release under `key` (a [`data_key`]), as [`Store::publish`] does a
    /// learner: reserve the charge, run `make` outside the lock, commit the body and its charge
    /// in one row. `make` gets the reserved release id and returns the serialised body and its
    /// creation time. Returns the stored release and whether it is new.
    pub fn publish_data(
        &self,
        key: &str,
        kind: &str,
        policy: &BudgetPolicy,
        charge: Charge,
        stale_after: Duration,
        make: impl FnOnce(&str) -> Result<(Vec<u8>, i64), DataReleaseError>,
    ) -> Result<(StoredData, bool), PublishError> {
        if let Some(existing) = self.data_for_key(key)? {
            return Ok((existing, false));
        }
        let release_id = match self.reserve(key, policy, &charge, stale_after)? {
            Reserved::Existing(id) => {
                return self.get_data(&id)?.map(|r| (r, false)).ok_or_else(|| {
                    PublishError::Store(StoreError::Corrupt {
                        path: self.path.display().to_string(),
                        release_id: id,
                        reason: "vanished".into(),
                    })
                });
            }
            Reserved::New(id) => id,
        };
        let (body, created_unix_ms) = match make(&release_id) {
            Ok(made) => made,
            Err(e) if e.is_data_independent() => {
                self.refund(key, &release_id)?;
                return Err(PublishError::Data(e));
            }
            Err(e) => {
                self.abandon(key, &release_id, "failed")?;
                return Err(PublishError::DataFailedCharged(e));
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
            return Err(PublishError::InProgress);
        }
        let g = charge.guarantee;
        tx.execute(
            "INSERT INTO data_releases (release_id, created_unix_ms, spec_key, kind, body, epsilon, delta, relation, rdp) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![release_id, created_unix_ms, key, kind, body, g.epsilon, g.delta, g.relation.to_string(), charge.rdp.as_ref().map(encode_curve)],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok((
            StoredData {
                release_id,
                created_unix_ms,
                kind: kind.to_owned(),
                body,
                guarantee: g,
            },
            true,
        ))
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

    /// Admits `charge` and records it as an unfinished training of `key` (step 1 of a publish,
    /// in one short transaction), or finds the release already stored. A reservation older than
    /// `stale_after` belongs to a training that died (a crash): its charge stays, and a new one
    /// is made.
    fn reserve(
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
    /// [`is_data_independent`]): its reservation is removed, as if it had never been asked for.
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
        let conn = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut st = conn
            .prepare(
                "SELECT release_id, failed, started_unix_ms FROM unfinished WHERE failed IS NOT NULL AND spec_key IS NOT NULL ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }

    /// Charges of trainings that did not produce a release (failed, stopped, or killed), and of
    /// trainings in progress.
    pub fn unfinished(&self) -> Result<usize, StoreError> {
        let conn = self
            .reader
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        conn.query_row("SELECT COUNT(*) FROM unfinished", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| usize::try_from(n).unwrap_or(0))
        .map_err(|e| self.err(e))
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

/// Adds the `rdp` column to ledgers created before charges carried RDP curves (their charges
/// have none, so they compose by basic composition as before).
/// Creates `path` empty with mode 0600 if it does not exist (an existing file is left as is).
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map(drop)
}

fn migrate(conn: &Connection) -> Result<(), rusqlite::Error> {
    let has_rdp: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('ledger') WHERE name = 'rdp'",
        [],
        |r| r.get(0),
    )?;
    if !has_rdp {
        conn.execute_batch("ALTER TABLE ledger ADD COLUMN rdp TEXT")?;
    }
    let has_failed: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('unfinished') WHERE name = 'failed'",
        [],
        |r| r.get(0),
    )?;
    if !has_failed {
        conn.execute_batch("ALTER TABLE unfinished ADD COLUMN failed TEXT")?;
    }
    Ok(())
}

fn parse_relation(text: &str) -> Option<NeighbourRelation> {
    [
        NeighbourRelation::ReplaceOne,
        NeighbourRelation::AddRemoveOne,
    ]
    .into_iter()
    .find(|r| r.to_string() == text)
}

/// An RDP curve as stored: `{"orders": [...], "values": [...]}` with `null` for +∞ (JSON has no
/// infinity; NaN never occurs in a valid curve).
fn encode_curve(curve: &RdpCurve) -> String {
    let values: Vec<Option<f64>> = curve
        .values()
        .iter()
        .map(|v| v.is_finite().then_some(*v))
        .collect();
    serde_json::json!({ "orders": curve.orders(), "values": values }).to_string()
}

fn decode_curve(text: &str) -> Result<RdpCurve, String> {
    #[derive(Deserialize)]
    struct Stored {
        orders: Vec<f64>,
        values: Vec<Option<f64>>,
    }
    let s: Stored = serde_json::from_str(text).map_err(|e| format!("bad RDP curve: {e}"))?;
    let values = s
        .values
        .into_iter()
        .map(|v| v.unwrap_or(f64::INFINITY))
        .collect();
    RdpCurve::new(s.orders, values).map_err(|e| format!("bad RDP curve: {e}"))
}

fn release_id() -> Result<String, StoreError> {
    use rand::TryRng;
    let mut bytes = [0u8; 16];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| StoreError::Entropy(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One page of a newest-first listing: `query(ms, rowid, fetch)` returns up to `fetch` rows
/// strictly before the position (ms, rowid); one row more than `limit` is fetched to learn
/// whether a next page exists, whose key is then the last row kept.
fn paged<T>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::privacy::accounting::{dp_sgd_curve, dp_sgd_epsilon};
    use dpagg_shared::privacy::guarantee::LOGISTIC_UNIT_BALL;
    use dpagg_shared::privacy::mechanism::MechanismKind;
    use dpagg_shared::privacy::release::ReleaseMetadata;

    fn policy(epsilon_total: f64, delta_total: f64) -> BudgetPolicy {
        BudgetPolicy {
            epsilon_total,
            delta_total,
            max_epsilon_per_release: epsilon_total,
        }
    }

    fn spec(kind: MechanismKind, epsilon: f64) -> LearnerSpec {
        LearnerSpec::new(kind, epsilon, 1e-6, 0.01)
    }

    fn release(guarantee: PrivacyGuarantee) -> Release {
        Release {
            classifier: LinearClassifier::new(vec![0.5, -1.0]),
            metadata: ReleaseMetadata {
                mechanism: "test".into(),
                reference: "test".into(),
                parameters: Default::default(),
                guarantee,
                assumptions: LOGISTIC_UNIT_BALL,
                n: 10,
                dim: 2,
                seeded: true,
                proven: true,
            },
        }
    }

    fn dp_sgd_charge() -> Charge {
        let (q, sigma, steps, delta) = (0.01, 1.0, 1000, 1e-6);
        Charge {
            guarantee: PrivacyGuarantee {
                epsilon: dp_sgd_epsilon(q, sigma, steps, delta)
                    .expect("valid")
                    .epsilon,
                delta,
                relation: NeighbourRelation::AddRemoveOne,
            },
            rdp: Some(dp_sgd_curve(q, sigma, steps).expect("valid")),
        }
    }

    #[test]
    fn rdp_curves_survive_the_database_and_compose_across_restarts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = policy(100.0, 1e-3);
        let single;
        {
            let store = Store::open(dir.path()).expect("open");
            for i in 0..5 {
                let c = dp_sgd_charge();
                let g = c.guarantee;
                store
                    .publish(
                        &spec(MechanismKind::DpSgd, 1.0 + f64::from(i)),
                        "fp",
                        &p,
                        c,
                        std::time::Duration::from_secs(3600),
                        || Ok(release(g)),
                    )
                    .expect("publish");
            }
            single = dp_sgd_charge().guarantee.epsilon;
        }
        let store = Store::open(dir.path()).expect("reopen");
        let s = store.spent().expect("spent");
        assert_eq!(s.add_remove_one.charges, 5);
        assert_eq!(s.add_remove_one.accounting.to_string(), "rdp");
        let long = dp_sgd_epsilon(0.01, 1.0, 5000, 5e-6)
            .expect("valid")
            .epsilon;
        assert!((s.add_remove_one.epsilon - long).abs() < 1e-9 * long);
        assert!(s.add_remove_one.epsilon < 5.0 * single);
        assert!((s.epsilon - 2.0 * long).abs() < 1e-9 * long);
    }

    fn replace_one(epsilon: f64) -> PrivacyGuarantee {
        PrivacyGuarantee {
            epsilon,
            delta: 0.0,
            relation: NeighbourRelation::ReplaceOne,
        }
    }

    fn pure(epsilon: f64) -> Charge {
        Charge {
            guarantee: replace_one(epsilon),
            rdp: None,
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn training_runs_outside_the_write_lock_with_its_charge_reserved() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = std::sync::Arc::new(Store::open(dir.path()).expect("open"));
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let slow = {
            let store = store.clone();
            std::thread::spawn(move || {
                store.publish(
                    &spec(MechanismKind::ObjectivePerturbation, 1.0),
                    "fp",
                    &policy(10.0, 0.0),
                    pure(1.0),
                    HOUR,
                    || {
                        started_tx.send(()).expect("signal");
                        go_rx.recv().expect("go");
                        Ok(release(replace_one(1.0)))
                    },
                )
            })
        };
        started_rx.recv().expect("training started");
        // While it trains: its charge is spent, another spec publishes, the same spec waits.
        assert_eq!(store.spent().expect("spent").epsilon, 1.0);
        let (_, new) = store
            .publish(
                &spec(MechanismKind::ObjectivePerturbation, 2.0),
                "fp",
                &policy(10.0, 0.0),
                pure(2.0),
                HOUR,
                || Ok(release(replace_one(2.0))),
            )
            .expect("not blocked by the training");
        assert!(new);
        let e = store
            .publish(
                &spec(MechanismKind::ObjectivePerturbation, 1.0),
                "fp",
                &policy(10.0, 0.0),
                pure(1.0),
                HOUR,
                || Ok(release(replace_one(1.0))),
            )
            .expect_err("in progress");
        assert!(matches!(e, PublishError::InProgress), "{e}");
        // A third publish must fit the budget *including* the reservation: 1 + 2 + 8 > 10.
        let e = store
            .publish(
                &spec(MechanismKind::ObjectivePerturbation, 8.0),
                "fp",
                &policy(10.0, 0.0),
                pure(8.0),
                HOUR,
                || Ok(release(replace_one(8.0))),
            )
            .expect_err("over budget");
        assert!(matches!(e, PublishError::Refused(_)), "{e}");
        go_tx.send(()).expect("go");
        let (_, new) = slow.join().expect("join").expect("published");
        assert!(new);
        assert_eq!(store.releases().expect("releases").len(), 2);
        assert_eq!(store.unfinished().expect("unfinished"), 0);
        assert_eq!(store.spent().expect("spent").epsilon, 3.0);
    }

    #[test]
    fn a_failed_training_keeps_one_charge_until_the_operator_allows_a_retry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let s = spec(MechanismKind::ObjectivePerturbation, 1.0);
        let e = store
            .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
                Err(MechanismError::Stopped(
                    dpagg_shared::util::stop::Stopped::DeadlinePassed,
                ))
            })
            .expect_err("failed");
        assert!(matches!(e, PublishError::FailedCharged(_)), "{e}");
        assert!(e.to_string().contains("the charge stands"), "{e}");
        assert_eq!(store.spent().expect("spent").epsilon, 1.0, "charged");
        // Asking again (a client's retry) is answered the same way and charges nothing.
        for _ in 0..3 {
            let again = store
                .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
                    Ok(release(replace_one(1.0)))
                })
                .expect_err("the failure stands");
            assert!(
                matches!(again, PublishError::FailedBefore { ref reason, .. } if reason == "stopped"),
                "{again}"
            );
        }
        assert_eq!(store.spent().expect("spent").epsilon, 1.0, "charged once");
        let failures = store.failures().expect("failures");
        assert_eq!(failures.len(), 1);
        // The operator allows a retry: the spec is trained, and charged, again.
        assert!(store.allow_retry(&failures[0].0).expect("allow"));
        assert!(!store.allow_retry(&failures[0].0).expect("only once"));
        store
            .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
                Ok(release(replace_one(1.0)))
            })
            .expect("asked again");
        assert_eq!(store.spent().expect("spent").epsilon, 2.0, "charged again");
        let reopened = Store::open(dir.path()).expect("reopen");
        assert_eq!(reopened.spent().expect("spent").epsilon, 2.0, "durable");
        assert_eq!(reopened.unfinished().expect("unfinished"), 1);
    }

    #[test]
    fn a_refusal_from_public_quantities_is_not_charged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let s = spec(MechanismKind::ObjectivePerturbation, 1.0);
        let e = store
            .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
                Err(MechanismError::EmptyData)
            })
            .expect_err("refused");
        assert!(
            matches!(e, PublishError::Mechanism(MechanismError::EmptyData)),
            "{e}"
        );
        assert_eq!(store.spent().expect("spent").epsilon, 0.0);
        assert_eq!(store.unfinished().expect("unfinished"), 0);
    }

    #[test]
    fn a_reservation_left_by_a_dead_process_keeps_its_charge() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = spec(MechanismKind::ObjectivePerturbation, 1.0);
        {
            let store = Store::open(dir.path()).expect("open");
            // As if the process died mid-training: reserve, then never finish.
            store
                .reserve(&spec_key(&s, "fp"), &policy(10.0, 0.0), &pure(1.0), HOUR)
                .expect("reserved");
        }
        let store = Store::open(dir.path()).expect("restart");
        assert_eq!(
            store.spent().expect("spent").epsilon,
            1.0,
            "a restart resets nothing"
        );
        let e = store
            .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
                Ok(release(replace_one(1.0)))
            })
            .expect_err("still fresh");
        assert!(matches!(e, PublishError::InProgress));
        store
            .publish(
                &s,
                "fp",
                &policy(10.0, 0.0),
                pure(1.0),
                Duration::ZERO,
                || Ok(release(replace_one(1.0))),
            )
            .expect("stale: taken over");
        assert_eq!(store.spent().expect("spent").epsilon, 2.0);
    }

    #[test]
    fn pages_cover_every_release_once_newest_first() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        let g = PrivacyGuarantee {
            epsilon: 0.1,
            delta: 0.0,
            relation: NeighbourRelation::ReplaceOne,
        };
        for i in 0..7 {
            store
                .publish(
                    &spec(MechanismKind::ObjectivePerturbation, 0.1 + f64::from(i)),
                    "fp",
                    &policy(100.0, 0.0),
                    Charge {
                        guarantee: g,
                        rdp: None,
                    },
                    std::time::Duration::from_secs(3600),
                    || Ok(release(g)),
                )
                .expect("publish");
        }
        let all: Vec<String> = store
            .releases()
            .expect("all")
            .into_iter()
            .map(|r| r.release_id)
            .collect();
        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let (page, next) = store.page(after, 3).expect("page");
            assert!(page.len() <= 3);
            paged.extend(page.into_iter().map(|r| r.release_id));
            match next {
                Some(k) => after = Some(PageKey::parse(&k.token()).expect("round trip")),
                None => break,
            }
        }
        assert_eq!(paged, all, "every release once, in the same order");
        assert_eq!(
            store.latest().expect("latest").map(|r| r.release_id),
            all.first().cloned()
        );
        let (exact, next) = store.page(None, 7).expect("one page");
        assert_eq!((exact.len(), next), (7, None), "no empty last page");
        assert_eq!(PageKey::parse("x.1"), None);
        assert_eq!(PageKey::parse("12"), None);
    }

    #[test]
    fn the_composition_including_the_new_charge_must_fit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path()).expect("open");
        // δ_total 2e-6: one add/remove-one charge of δ = 1e-6 converts to (1 + e^ε)·1e-6 > 2e-6
        // under replace-one, so it must be refused although 1e-6 < 2e-6.
        let c = dp_sgd_charge();
        let g = c.guarantee;
        let e = store
            .publish(
                &spec(MechanismKind::DpSgd, 1.0),
                "fp",
                &policy(100.0, 2e-6),
                c,
                std::time::Duration::from_secs(3600),
                || Ok(release(g)),
            )
            .expect_err("over the δ total after conversion");
        assert!(
            matches!(e, PublishError::Refused(Refusal::Exhausted { .. })),
            "{e}"
        );
        assert_eq!(store.spent().expect("spent").charges, 0);
    }

    #[test]
    fn ledgers_without_the_rdp_column_are_migrated() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let c = Connection::open(dir.path().join("node.sqlite")).expect("sqlite");
            c.execute_batch(
                "CREATE TABLE releases (release_id TEXT PRIMARY KEY, created_unix_ms INTEGER NOT NULL, spec_key TEXT NOT NULL UNIQUE, spec_json TEXT NOT NULL, schema_fingerprint TEXT NOT NULL, weights BLOB NOT NULL, metadata_json TEXT NOT NULL);
                 CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, release_id TEXT NOT NULL REFERENCES releases(release_id), epsilon REAL NOT NULL, delta REAL NOT NULL, relation TEXT NOT NULL, recorded_unix_ms INTEGER NOT NULL);
                 INSERT INTO releases VALUES ('r1', 0, 'k', '{\"mechanism\":\"objective-perturbation\",\"epsilon\":1.0,\"delta\":0.0,\"lambda\":0.01}', 'fp', x'', '{}');
                 INSERT INTO ledger (release_id, epsilon, delta, relation, recorded_unix_ms) VALUES ('r1', 1.0, 0.0, 'replace-one', 0);",
            )
            .expect("old schema");
        }
        let store = Store::open(dir.path()).expect("migrates");
        let s = store.spent().expect("spent");
        assert_eq!((s.epsilon, s.charges), (1.0, 1));
        assert_eq!(s.replace_one.accounting.to_string(), "basic");
    }

    #[test]
    fn options_are_part_of_a_spec_identity() {
        let mut a = spec(MechanismKind::DpSgd, 1.0);
        let plain = spec_key(&a, "fp");
        assert_eq!(
            plain,
            format!(
                "fp:dp-sgd:{:016x}:{:016x}:{:016x}",
                1.0f64.to_bits(),
                1e-6f64.to_bits(),
                0.01f64.to_bits()
            ),
            "a spec without options keeps the key it had before options existed"
        );
        a.options.insert("steps".into(), 500.0);
        assert_ne!(spec_key(&a, "fp"), plain);
        let mut auto = spec(MechanismKind::DpSgd, 1.0);
        auto.l2 = Lambda::Auto;
        let key = spec_key(&auto, "fp");
        assert!(key.ends_with(":auto"), "{key}");
        assert_ne!(key, plain, "auto is not any fixed λ");
    }

    #[test]
    fn curves_with_infinite_orders_round_trip() {
        let c = RdpCurve::new(vec![1.5, 2.0, 64.0], vec![0.1, 0.2, f64::INFINITY]).expect("valid");
        let back = decode_curve(&encode_curve(&c)).expect("decodes");
        assert_eq!(back, c);
    }
}
