//! Tests of [`super::atomic_write`] and [`super::atomic_write_private`]: what they write, with
//! which modes, and ([`symlinks`]) that no planted symlink steers them.

#[cfg(unix)]
mod symlinks;

use std::path::Path;

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

/// The secret is never on disk with a wider mode, not even as the temporary file (checked
/// before the rename), whatever the process's umask.
#[cfg(unix)]
#[test]
fn private_files_are_created_0600_and_folders_0700() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("keys/key.pem");
    super::create_private_dir(key.parent().expect("parent")).expect("mkdir");
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode(key.parent().expect("parent")), 0o700);
    let mut seen = None;
    super::write_via_temp(&key, b"secret", 0o600, |tmp| seen = Some(mode(tmp))).expect("write");
    assert_eq!(seen, Some(0o600), "the temporary file is born 0600");
    assert_eq!(mode(&key), 0o600);
    assert!(!super::readable_by_others(&key).expect("mode"));
    // An existing, wider file is replaced by a 0600 one.
    std::fs::write(&key, b"old").expect("write");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert!(super::readable_by_others(&key).expect("mode"));
    super::atomic_write_private(&key, b"new").expect("write");
    assert_eq!(mode(&key), 0o600);
    assert_eq!(std::fs::read(&key).expect("read"), b"new");
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
