//! [`ServeLock`]: one serving node per state folder.
//!
//! `serve` holds an exclusive advisory lock on `state_dir/serve.lock` for its whole life (the
//! operating system drops it when the process ends, even on `kill -9`), and writes who holds it
//! into the file, so a second `serve` on the same folder stops at once with an error naming the
//! folder and the holder. `publish` and `ledger` do not take the lock: they may run beside
//! `serve` (SQLite's `BEGIN IMMEDIATE` serialises publishers), and the folder's organisation
//! binding ([`crate::store::Store::claim`]) stops another organisation from using it at all.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside the state folder.
pub const LOCK_FILE: &str = "serve.lock";

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process serves from this folder.
    #[error(
        "{folder}: this state folder is in use by a running node ({holder}); run one node per state folder (`dpagg-node publish` and `ledger` may run beside it)"
    )]
    Held {
        /// The state folder.
        folder: String,
        /// What the holder wrote: organisation, pid and address.
        holder: String,
    },
    /// The lock file cannot be opened or written.
    #[error("{path}: cannot lock the state folder: {source}")]
    Io {
        /// The lock file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct ServeLock {
    _file: File,
    path: PathBuf,
}

impl ServeLock {
    /// Takes the lock on `state_dir` for `organisation_id` (creating the folder if needed), or
    /// says who holds it.
    pub fn acquire(state_dir: &Path, organisation_id: &str) -> Result<Self, LockError> {
        let path = state_dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.display().to_string(),
            source,
        };
        dpagg_shared::util::files::create_private_dir(state_dir).map_err(io)?;
        // Opened in place, not through `atomic_write`: the lock lives on this very inode. The
        // state folder is checked to be writable by its owner alone before anything opens it
        // (`dpagg_shared::util::private`), so nobody else can plant a link at this name.
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(&path).map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                // Best effort: the holder may be writing its line this instant.
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                return Err(LockError::Held {
                    folder: state_dir.display().to_string(),
                    holder: if holder.is_empty() {
                        "holder unknown".to_owned()
                    } else {
                        holder.to_owned()
                    },
                });
            }
            Err(TryLockError::Error(e)) => return Err(io(e)),
        }
        let line = format!(
            "organisation `{organisation_id}`, pid {}",
            std::process::id()
        );
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(line.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(Self { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_with_the_first_ones_name_and_the_lock_is_released_on_drop() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = ServeLock::acquire(dir.path(), "org-1").expect("free");
        let e = ServeLock::acquire(dir.path(), "org-2").expect_err("held");
        let text = e.to_string();
        assert!(
            text.starts_with(&dir.path().display().to_string()),
            "{text}"
        );
        assert!(text.contains("organisation `org-1`"), "{text}");
        assert!(!text.contains('\n'), "{text}");
        drop(first);
        let again = ServeLock::acquire(dir.path(), "org-1").expect("released");
        assert!(again.path().ends_with(LOCK_FILE));
    }
}
