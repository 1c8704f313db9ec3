//! Tests of the node's settings: files, flags and variables resolved, and errors that name where a bad value came from.
use super::*;
use clap::FromArgMatches;
use dpagg_shared::cli::Origin;
use std::path::Path;

fn write(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("node.toml");
    std::fs::write(&p, text).expect("write");
    p
}

/// Resolves settings given as command-line arguments (the environment as it is: tests do
/// not set DPAGG_* variables).
fn resolve(args: &[&str]) -> Result<NodeConfig, ConfigError> {
    let command = <Settings as clap::Args>::augment_args(clap::Command::new("node"));
    let matches = command
        .try_get_matches_from(std::iter::once("node").chain(args.iter().copied()))
        .expect("parses");
    Settings::from_arg_matches(&matches)
        .expect("settings")
        .resolve(&matches)
}

const VALID: &str =
    "organisation_id = \"a\"\ndata = \"a.csv\"\nschema = \"s.toml\"\nstate_dir = \"st\"\n";

#[test]
fn file_values_flags_and_relative_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(
        dir.path(),
        &format!("{VALID}[policy]\nepsilon_total = 5.0\n"),
    );
    let p = p.to_str().expect("utf8");
    let c = resolve(&["--config", p]).expect("valid");
    assert_eq!(c.data, dir.path().join("a.csv"));
    assert_eq!(c.policy.cap(), 5.0);
    assert_eq!(c.policy.delta_total, 0.0);
    assert!(!c.policy.allow_remote_publish);
    assert_eq!(c.listen.to_string(), DEFAULT_LISTEN);
    let c = resolve(&["--config", p, "--epsilon-total", "2", "--data", "x.csv"]).expect("valid");
    assert_eq!(c.policy.epsilon_total, 2.0);
    assert_eq!(c.data, PathBuf::from("x.csv"));
    let c = resolve(&["--config", p, "--allow-remote-publish", "true"]).expect("valid");
    assert!(c.policy.allow_remote_publish);
}

#[test]
fn errors_name_the_file_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nope = dir.path().join("nope.toml");
    let missing = resolve(&["--config", nope.to_str().expect("utf8")])
        .expect_err("must fail")
        .to_string();
    assert!(missing.contains("nope.toml"), "{missing}");
    let p = write(dir.path(), "organisation_id = \"a\"\nbogus = 1\n");
    let e = resolve(&["--config", p.to_str().expect("utf8")])
        .expect_err("must fail")
        .to_string();
    assert!(e.contains("node.toml") && e.contains("bogus"), "{e}");
    let p = write(dir.path(), VALID);
    let p = p.to_str().expect("utf8");
    let e = resolve(&["--config", p])
        .expect_err("must fail")
        .to_string();
    assert!(e.contains("epsilon_total"), "{e}");
    let e = resolve(&[
        "--config",
        p,
        "--epsilon-total",
        "1",
        "--delta-total",
        "1.5",
    ])
    .expect_err("must fail")
    .to_string();
    assert!(e.contains("delta_total"), "{e}");
    assert!(!e.contains('\n'));
}

#[test]
fn errors_blame_the_flag_or_the_file_that_gave_the_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(
        dir.path(),
        &format!("{VALID}[policy]\nepsilon_total = nan\n"),
    );
    let p = p.to_str().expect("utf8");
    let e = resolve(&["--config", p]).expect_err("NaN");
    assert_eq!(e.origin, Origin::File(PathBuf::from(p)));
    assert_eq!(e.key, "policy.epsilon_total");
    assert!(
        e.to_string()
            .starts_with(&format!("{p}: `policy.epsilon_total` = NaN"))
    );
    let e = resolve(&["--config", p, "--epsilon-total", "-1"]).expect_err("negative");
    assert_eq!(
        e.to_string(),
        "--epsilon-total: `policy.epsilon_total` = -1: must be a finite number >= 0"
    );
    let e = resolve(&[
        "--config",
        p,
        "--epsilon-total",
        "1",
        "--max-epsilon-per-release",
        "0",
    ])
    .expect_err("zero cap");
    assert_eq!(e.origin, Origin::Flag("--max-epsilon-per-release".into()));
    let e = resolve(&[
        "--config",
        p,
        "--epsilon-total",
        "1",
        "--organisation-id",
        " ",
    ])
    .expect_err("blank id");
    assert_eq!(e.origin, Origin::Flag("--organisation-id".into()));
}

#[test]
fn a_zero_total_is_a_valid_policy_that_admits_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(dir.path(), &format!("{VALID}[policy]\nepsilon_total = 0\n"));
    let c = resolve(&["--config", p.to_str().expect("utf8")]).expect("valid");
    assert_eq!(c.policy.cap(), 0.0);
}

#[test]
fn totals_below_the_spend_are_named() {
    let policy = Policy {
        epsilon_total: 1.0,
        delta_total: 1e-5,
        max_epsilon_per_release: None,
        allow_remote_publish: false,
        allow_unproven: false,
        accept_traps: false,
        max_training_seconds: 120.0,
    };
    assert!(policy.below_spent(1.0, 1e-5).is_empty());
    assert!(policy.below_spent(1.0 + 1e-15, 0.0).is_empty(), "rounding");
    let below = policy.below_spent(1.5, 2e-5);
    assert_eq!(below.len(), 2);
    let text = below[0].to_string();
    assert!(
        text.contains("`policy.epsilon_total` = 1") && text.contains("(1.5)"),
        "{text}"
    );
    assert_eq!(below[1].key, "policy.delta_total");
}
