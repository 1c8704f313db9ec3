//! A node's state only its user can change, with real processes: `serve` and `ledger` refuse a
//! state folder writable by others, a ledger file writable by its group, and a state folder
//! below a world-writable folder without the sticky bit — each with a one-line error naming the
//! path and the `chmod` that fixes it.

#![cfg(unix)]

use dpagg_tests::{assert_one_line_error, assert_success, node_config, publish_with_cli, run};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// `dpagg-node serve` on `config` (on a free port; every case here is refused before listening).
fn serve(config: &Path) -> std::process::Output {
    run(
        "dpagg-node",
        &[
            "serve",
            "--config",
            config.to_str().expect("utf8"),
            "--listen",
            "127.0.0.1:0",
        ],
        config.parent().expect("folder"),
    )
}

fn ledger(config: &Path) -> std::process::Output {
    run(
        "dpagg-node",
        &["ledger", "--config", config.to_str().expect("utf8")],
        config.parent().expect("folder"),
    )
}

#[test]
fn a_state_folder_writable_by_others_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-1", 10.0, 2.0, false, 60);
    let state = dir.path().join("org-1-state");
    std::fs::create_dir(&state).expect("mkdir");
    chmod(&state, 0o777);
    let out = serve(&config);
    let shown = state.display().to_string();
    assert_one_line_error(&out, &[&shown, "writable by group or others", "chmod 700"]);
    assert!(!state.join("serve.lock").exists(), "nothing made inside");
}

#[test]
fn a_group_writable_ledger_file_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-1", 10.0, 2.0, false, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let db = dir.path().join("org-1-state/node.sqlite");
    chmod(&db, 0o660);
    let shown = db.display().to_string();
    assert_one_line_error(&serve(&config), &[&shown, "mode 0660", "chmod 600"]);
    assert_one_line_error(&ledger(&config), &[&shown, "chmod 600"]);
    chmod(&db, 0o600);
    assert_success(&ledger(&config));
}

#[test]
fn a_state_folder_below_a_world_writable_folder_is_refused_unless_sticky() {
    let dir = tempfile::tempdir().expect("tempdir");
    let open = dir.path().join("shared");
    std::fs::create_dir(&open).expect("mkdir");
    let config = node_config(&open, "org-1", 10.0, 2.0, false, 60);
    chmod(&open, 0o777);
    let shown = open.display().to_string();
    assert_one_line_error(
        &serve(&config),
        &[&shown, "folder above the state folder", "chmod go-w"],
    );
    assert!(!open.join("org-1-state").exists(), "nothing created");
    // Sticky (like /tmp): nobody may rename another user's entry there.
    chmod(&open, 0o1777);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    chmod(&open, 0o700);
}
