//! Tests that [`super::super::atomic_write`] cannot be steered by symlinks: one planted at a temporary
//! name (as the old `.NAME.tmp-PID` scheme used) is never followed, and one at the target
//! itself is replaced rather than written through.

#![cfg(unix)]

use std::os::unix::fs::symlink;
use std::path::Path;

/// The names the old scheme would have used for `name` (its pid was predictable; every pid an
/// attacker could guess is covered by this process's own and its neighbours).
fn old_temp_names(dir: &Path, name: &str) -> Vec<std::path::PathBuf> {
    let pid = std::process::id();
    (pid.saturating_sub(2)..=pid.saturating_add(2))
        .map(|p| dir.join(format!(".{name}.tmp-{p}")))
        .collect()
}

#[test]
fn a_symlink_at_a_predictable_temporary_name_is_never_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"precious").expect("write");
    for (write, name) in [
        (
            super::super::atomic_write as fn(&Path, &[u8]) -> std::io::Result<()>,
            "report.json",
        ),
        (super::super::atomic_write_private, "key.pem"),
    ] {
        for link in old_temp_names(dir.path(), name) {
            symlink(&victim, &link).expect("plant");
        }
        let target = dir.path().join(name);
        write(&target, b"ours").expect("write");
        assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
        assert_eq!(std::fs::read(&target).expect("read"), b"ours");
        let meta = std::fs::symlink_metadata(&target).expect("meta");
        assert!(meta.file_type().is_file());
    }
    // Only the planted links and the two targets: no temporary file is left behind.
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("ls").count(),
        2 * 5 + 2
    );
}

#[test]
fn a_symlink_at_the_target_is_replaced_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let victim = elsewhere.path().join("victim");
    std::fs::write(&victim, b"precious").expect("write");
    let target = dir.path().join("model.json");
    symlink(&victim, &target).expect("plant");
    super::super::atomic_write(&target, b"ours").expect("write");
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
    let meta = std::fs::symlink_metadata(&target).expect("meta");
    assert!(meta.file_type().is_file(), "the link is replaced by a file");
    assert_eq!(std::fs::read(&target).expect("read"), b"ours");
}

#[test]
fn public_files_are_not_writable_by_others_and_private_ones_are_0600() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
    let public = dir.path().join("report.html");
    super::super::atomic_write(&public, b"x").expect("write");
    assert_eq!(mode(&public) & !0o644, 0, "at most 0644");
    let private = dir.path().join("ledger.mark");
    super::super::atomic_write_private(&private, b"x").expect("write");
    assert_eq!(mode(&private), 0o600);
}
