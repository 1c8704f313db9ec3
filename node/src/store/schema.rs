//! The database's tables ([`SCHEMA_SQL`]) and the migrations that keep the state of earlier
//! versions readable: an existing `node.sqlite` opens and keeps its ledger.

use rusqlite::Connection;
use std::path::Path;

pub(super) const SCHEMA_SQL: &str = "
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
-- Data releases (statistics, synthetic data): the serialised body as served, and its
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
-- What the node's operator published with `dpagg-node publish` / `publish-data` (a process
-- beside `serve`): who (the OS user), what, its outcome and how long it took, so the serving
-- node's metrics and the audit trail show every release.
CREATE TABLE IF NOT EXISTS operator_publishes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    unix_ms INTEGER NOT NULL,
    operator TEXT NOT NULL,
    kind TEXT NOT NULL,
    outcome TEXT NOT NULL,
    release_id TEXT,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    seconds REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
";

/// Creates `path` empty with mode 0600 if it does not exist (an existing file is left as is).
/// SQLite then writes the file in place (it is the database, not an output replaced whole, so
/// `atomic_write` does not apply); the state folder is checked to be writable by its owner alone
/// before this runs, so nobody else can plant a link at this name.
pub(super) fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path).map(drop)
}

/// Adds the `rdp` column to ledgers created before charges carried RDP curves (their charges
/// have none, so they compose by basic composition as before).
pub(super) fn migrate(conn: &Connection) -> Result<(), rusqlite::Error> {
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
