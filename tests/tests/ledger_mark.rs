//! A ledger that vanished or went backwards is caught, with real processes: the node's database
//! moved away is refused at start against the high-water mark kept beside it, an older backup
//! cannot be restored over a newer ledger, and a current backup restores with the same spend.

use dpagg_tests::{assert_one_line_error, assert_success, node_config, publish_with_cli, run};
use std::path::Path;

fn node(config: &Path, args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--config", config.to_str().expect("utf8")]);
    run("dpagg-node", &all, config.parent().expect("folder"))
}

/// The spent ε `dpagg-node ledger` prints.
fn spent(config: &Path) -> String {
    let out = node(config, &["ledger"]);
    assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text
        .lines()
        .find(|l| l.starts_with("ε:"))
        .unwrap_or_else(|| panic!("no ε line in {text}"));
    let after = line.split(" spent ").nth(1).expect("spent");
    after.split_whitespace().next().expect("value").to_owned()
}

#[test]
fn a_ledger_moved_away_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-1", 10.0, 2.0, false, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let state = dir.path().join("org-1-state");
    let away = dir.path().join("away");
    std::fs::create_dir(&away).expect("mkdir");
    for f in ["node.sqlite", "node.sqlite-wal", "node.sqlite-shm"] {
        if state.join(f).exists() {
            std::fs::rename(state.join(f), away.join(f)).expect("move");
        }
    }
    let needles = ["behind its high-water mark", "dpagg-node ledger restore"];
    let serve = node(&config, &["serve", "--listen", "127.0.0.1:0"]);
    assert_one_line_error(&serve, &needles);
    assert_one_line_error(&publish_with_cli(&config, &["--epsilon", "1"]), &needles);
    assert_one_line_error(&node(&config, &["ledger"]), &needles);
    assert!(!state.join("node.sqlite").exists(), "no empty ledger made");
    // An empty ledger put in its place is no better.
    std::fs::write(state.join("node.sqlite"), b"").expect("write");
    assert_one_line_error(&node(&config, &["ledger"]), &needles);
    std::fs::remove_file(state.join("node.sqlite")).expect("rm");
    for f in ["node.sqlite", "node.sqlite-wal", "node.sqlite-shm"] {
        if away.join(f).exists() {
            std::fs::rename(away.join(f), state.join(f)).expect("move back");
        }
    }
    assert_eq!(spent(&config), "1.000000");
}

#[test]
fn an_older_backup_is_refused_and_a_current_one_restores_the_same_spend() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-1", 10.0, 2.0, false, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let old = dir.path().join("old.sqlite");
    assert_success(&node(&config, &["ledger", "backup", "--out", "old.sqlite"]));
    assert!(old.exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&old).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the backup is private");
    }
    assert_success(&publish_with_cli(&config, &["--epsilon", "0.5"]));
    assert_eq!(spent(&config), "1.500000");
    let refused = node(&config, &["ledger", "restore", "old.sqlite"]);
    assert_one_line_error(&refused, &["old.sqlite", "behind its high-water mark"]);
    assert_eq!(spent(&config), "1.500000", "the ledger is untouched");
    // A current backup restores, even after the database went missing, with the same spend.
    assert_success(&node(&config, &["ledger", "backup", "--out", "now.sqlite"]));
    std::fs::remove_file(dir.path().join("org-1-state/node.sqlite")).expect("rm");
    assert_success(&node(&config, &["ledger", "restore", "now.sqlite"]));
    assert_eq!(spent(&config), "1.500000");
    // The restored ledger still counts the releases: publishing again charges on top.
    assert_success(&publish_with_cli(&config, &["--epsilon", "0.25"]));
    assert_eq!(spent(&config), "1.750000");
}
