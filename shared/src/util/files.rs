//! File output that is never half-written: write to a temporary file beside the target, flush it
//! to disk, then rename over the target (invariant 5).

use std::io::Write;
use std::path::Path;

/// Atomically replaces `path` with `bytes`. A new file is created with mode 0644 less the
/// process's umask (the umask cannot be read without unsafe code, so 0644 is asked of `open`,
/// which applies it): readable by others, as reports and public keys are meant to be.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temp(path, bytes, PUBLIC_MODE, |_| {})
}

/// [`atomic_write`] for a secret (a private key, the ledger's mark): the temporary file is
/// *created* with mode 0600 (`O_CREAT` with that mode, so no umask can widen it), then renamed;
/// the file is never readable by another user, not even while it is written.
pub fn atomic_write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_via_temp(path, bytes, PRIVATE_MODE, |_| {})
}

/// Mode of files [`atomic_write`] creates (less the umask).
const PUBLIC_MODE: u32 = 0o644;
/// Mode of files [`atomic_write_private`] creates.
const PRIVATE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents with mode 0700 (for folders of secrets and state).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Whether the file or folder at `path` can be read by users other than its owner and group
/// (Unix "others"); `false` where there are no such permissions.
pub fn readable_by_others(path: &Path) -> std::io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        Ok(std::fs::metadata(path)?.permissions().mode() & 0o004 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(false)
    }
}

/// Writes `bytes` to a temporary file beside `path` (created with `mode`), fsyncs it, calls
/// `before_rename` with its path (a test hook), renames it over `path` and fsyncs the folder.
///
/// The temporary file is made by [`tempfile::Builder`]: a random name `.NAME.XXXXXX` created
/// with `O_CREAT | O_EXCL`, which fails on any existing name — a symlink planted there included —
/// so nobody who can write the folder can make us write through a link into another file. The
/// rename replaces whatever is at `path` (a symlink there is replaced, never followed). On any
/// failure the temporary file is removed.
fn write_via_temp(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    before_rename: impl FnOnce(&Path),
) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(mode));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    before_rename(tmp.path());
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir);
    Ok(())
}

/// Flushes `dir`'s entries (the rename) to disk. Best effort: some file systems refuse to sync
/// a folder, and the file's own bytes are on disk already.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Checks, before any work, that an output folder can be written: `dir` itself when it exists
/// (it must be a folder), else the nearest folder above it that exists, where `dir` would be
/// created. Nothing is left behind: the probe file is removed and no folder is created.
pub fn check_writable_dir(dir: &Path) -> std::io::Result<()> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if dir.exists() && !dir.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            "exists and is not a folder",
        ));
    }
    let probe_in = dir
        .ancestors()
        .map(|a| {
            if a.as_os_str().is_empty() {
                Path::new(".")
            } else {
                a
            }
        })
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    if !probe_in.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotADirectory,
            format!("{} is not a folder", probe_in.display()),
        ));
    }
    let probe = probe_in.join(format!(".dpagg-write-probe-{}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)?;
    std::fs::remove_file(&probe)
}

#[cfg(test)]
mod tests;
