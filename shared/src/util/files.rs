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
}
