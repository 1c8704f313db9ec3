//! `dpagg-node ledger backup` and `ledger restore`: a consistent copy of the database, and its
//! installation — refused when the copy is behind the ledger's high-water mark (`mark.rs`), so
//! restoring an older backup can never give back budget already spent.

use super::mark::{MARK_FILE, Standing, behind_error, read_mark};
use super::{Store, StoreError};
use dpagg_shared::util::files::atomic_write_private;
use std::path::Path;

/// The database's file name in the state folder.
const DB_FILE: &str = "node.sqlite";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::File {
        path: path.display().to_string(),
        source,
    }
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

impl Store {
    /// Writes a consistent copy of the database to `out` (mode 0600, replaced atomically):
    /// SQLite's `VACUUM INTO` a private temporary folder beside `out`, then a rename. Runs beside
    /// a serving node (a read transaction). Returns the copy's standing.
    pub fn backup(&self, out: &Path) -> Result<Standing, StoreError> {
        let standing = self.standing()?;
        let tmp = tempfile::Builder::new()
            .prefix(".ledger-backup.")
            .tempdir_in(folder_of(out))
            .map_err(io(out))?;
        let copy = tmp.path().join(DB_FILE);
        let text = copy.to_str().ok_or_else(|| StoreError::File {
            path: copy.display().to_string(),
            source: std::io::Error::other("not valid UTF-8"),
        })?;
        self.reader()
            .execute("VACUUM INTO ?1", [text])
            .map_err(|e| self.err(e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o600))
                .map_err(io(&copy))?;
        }
        std::fs::File::open(&copy)
            .and_then(|f| f.sync_all())
            .map_err(io(&copy))?;
        std::fs::rename(&copy, out).map_err(io(out))?;
        if let Ok(d) = std::fs::File::open(folder_of(out)) {
            let _ = d.sync_all();
        }
        Ok(standing)
    }
}

/// Installs the backup at `backup` as the ledger of `state_dir` and returns its standing;
/// refused when it is behind the state folder's mark (another ledger, fewer charges or less ε
/// spent). The caller holds the state folder's serve lock: no node serves from it meanwhile.
///
/// The backup is copied into a private temporary folder inside the state folder and opened
/// there (which checks it is a ledger), compared with the mark, then renamed over `node.sqlite`
/// after the current database's write-ahead log is folded into it and removed (a stale log must
/// never be replayed onto the restored file). A backup made before ledgers had ids gets a new
/// id there, which no mark matches: only a state folder without a mark takes it.
pub fn restore(state_dir: &Path, backup: &Path) -> Result<Standing, StoreError> {
    Store::check_private(state_dir)?;
    let mark = read_mark(state_dir)?;
    let bytes = std::fs::read(backup).map_err(io(backup))?;
    let tmp = tempfile::Builder::new()
        .prefix(".ledger-restore.")
        .tempdir_in(state_dir)
        .map_err(io(state_dir))?;
    let staged = tmp.path().join(DB_FILE);
    atomic_write_private(&staged, &bytes).map_err(io(&staged))?;
    // Closing the last connection folds the staged copy's log into it and removes the log.
    let standing = Store::open(tmp.path())
        .and_then(|store| store.standing())
        .map_err(|e| StoreError::Accounting {
            path: backup.display().to_string(),
            reason: format!("not a usable ledger backup: {e}"),
        })?;
    if let Some(why) = mark.as_ref().and_then(|m| standing.behind(m)) {
        return Err(behind_error(backup, &state_dir.join(MARK_FILE), &why));
    }
    let target = state_dir.join(DB_FILE);
    fold_log(&target)?;
    std::fs::rename(&staged, &target).map_err(io(&target))?;
    for stale in ["node.sqlite-wal", "node.sqlite-shm"] {
        let _ = std::fs::remove_file(state_dir.join(stale));
    }
    if let Ok(d) = std::fs::File::open(state_dir) {
        let _ = d.sync_all();
    }
    // Opening raises the mark to the restored ledger.
    Store::open(state_dir)?.standing()
}

/// Folds the write-ahead log of the database at `path` (if any) into it and removes the log, so
/// nothing of it can be replayed onto a file renamed over `path`. Nothing else may have the
/// database open: the caller holds the serve lock, and `ledger restore` says to stop
/// publishers first.
fn fold_log(path: &Path) -> Result<(), StoreError> {
    if !path.exists() {
        return Ok(());
    }
    let err = |source| StoreError::Sqlite {
        path: path.display().to_string(),
        source,
    };
    let conn = rusqlite::Connection::open(path).map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(60))
        .map_err(err)?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .map_err(err)?;
    // The last connection to close removes the log.
    conn.close().map_err(|(_, e)| err(e))
}
