//! File output that is never half-written: write to a temporary file beside the target, flush it
//! to disk, then rename over the target (invariant 5).

use std::io::Write;
use std::path::Path;

/// Atomically replaces `path` with `bytes`.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
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
mod tests {
    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("a.json");
        super::atomic_write(&p, b"one").expect("write");
        super::atomic_write(&p, b"two").expect("write");
        assert_eq!(std::fs::read(&p).expect("read"), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1);
        assert!(super::atomic_write(&dir.path().join("missing/x"), b"x").is_err());
    }

    #[test]
    fn writable_folders_are_checked_without_creating_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let new = dir.path().join("a/b/report");
        super::check_writable_dir(&new).expect("creatable below a writable folder");
        assert!(!dir.path().join("a").exists(), "nothing created");
        super::check_writable_dir(dir.path()).expect("existing folder");
        let file = dir.path().join("f");
        std::fs::write(&file, b"x").expect("write");
        assert!(
            super::check_writable_dir(&file).is_err(),
            "a file is not a folder"
        );
        assert!(
            super::check_writable_dir(&file.join("x")).is_err(),
            "below a file"
        );
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("ls").count(),
            1,
            "no probe left"
        );
    }
}
