//! A trap `dpagg-node check --strict` finds costs no budget: `publish` refuses it before any
//! charge and `serve` refuses to start over it, each with check's message and fix; an operator
//! who accepts the traps says so (`--accept-traps`), and every release made so records it. An
//! aggregator whose schema is not the node's names the keys that differ.

use dpagg_tests::{
    NodeProcess, assert_one_line_error, assert_success, node_config, publish_with_cli, run,
    write_own_data,
};
use std::path::Path;

/// The node's ledger as `dpagg-node ledger` prints it.
fn ledger(config: &Path) -> String {
    let out = run(
        "dpagg-node",
        &["ledger", "--config", config.to_str().expect("utf8")],
        config.parent().expect("folder"),
    );
    assert_success(&out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `dpagg-node releases --show` of the release a successful `publish` printed.
fn shown(config: &Path, published: &std::process::Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&published.stdout);
    let id = stdout
        .split_whitespace()
        .nth(2)
        .expect("published release <id>");
    let config = config.to_str().expect("utf8");
    let out = run(
        "dpagg-node",
        &["releases", "--config", config, "--show", id],
        Path::new(config).parent().expect("folder"),
    );
    assert_success(&out);
    serde_json::from_slice(&out.stdout).expect("json")
}

/// A Diabetes node whose schema gives insulin's `log1p` centre in raw units (200 instead of
/// ln 201): every insulin value standardises about −190 scales from it.
fn raw_unit_centre(dir: &Path) -> std::path::PathBuf {
    let config = node_config(dir, "org-a", 5.0, 2.0, false, 300);
    let schema = dir.join("diabetes.schema.toml");
    let text = std::fs::read_to_string(&schema).expect("schema");
    assert!(text.contains("center = 3.96902"), "insulin's centre moved");
    std::fs::write(&schema, text.replace("center = 3.96902", "center = 200")).expect("write");
    config
}

#[test]
fn a_raw_unit_centre_is_refused_by_publish_with_no_ledger_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = raw_unit_centre(dir.path());
    let refused = publish_with_cli(&config, &["--epsilon", "0.5"]);
    assert_one_line_error(
        &refused,
        &[
            "fails `dpagg-node check --strict`",
            "feature `insulin`: center 200 is outside its transformed bounds",
            "a raw centre of 200 is 5.303305",
            "nothing was charged",
            "--accept-traps",
        ],
    );
    let before = ledger(&config);
    assert!(before.contains("spent 0.000000"), "{before}");
    assert!(before.contains("0 release(s)"), "{before}");

    // Accepted explicitly: published, charged, and the release says so.
    let accepted = publish_with_cli(&config, &["--epsilon", "0.5", "--accept-traps"]);
    assert_success(&accepted);
    let after = ledger(&config);
    assert!(after.contains("spent 0.500000"), "{after}");
    let json = shown(&config, &accepted);
    assert_eq!(json["parameters"]["traps_accepted"], 1.0, "{json}");
}

#[test]
fn serve_refuses_to_start_over_a_trap_unless_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = raw_unit_centre(dir.path());
    let out = run(
        "dpagg-node",
        &[
            "serve",
            "--config",
            config.to_str().expect("utf8"),
            "--listen",
            "127.0.0.1:0",
        ],
        dir.path(),
    );
    assert_one_line_error(
        &out,
        &[
            "diabetes.schema.toml: `dpagg-node check --strict` fails",
            "center 200 is outside",
            "the node serves no learner over them",
        ],
    );
    assert!(ledger(&config).contains("spent 0.000000"));
}

#[test]
fn a_schema_without_traps_publishes_without_the_flag_and_records_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 5.0, 2.0, false, 300);
    let out = publish_with_cli(&config, &["--epsilon", "0.5"]);
    assert_success(&out);
    let json = shown(&config, &out);
    assert!(json["parameters"].get("traps_accepted").is_none(), "{json}");
}

#[test]
fn a_schema_mismatch_names_the_keys_that_differ() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 5.0, 2.0, false, 300);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let node = NodeProcess::start(&config);
    write_own_data(dir.path());
    let schema = dir.path().join("agg.schema.toml");
    let text = std::fs::read_to_string(&schema).expect("schema");
    let glucose = "name = \"glucose\"\nlo = 0.0\nhi = 200.0\n";
    assert!(text.contains(glucose), "glucose's bounds moved");
    let ours = glucose.replace("hi = 200.0", "hi = 250.0");
    std::fs::write(&schema, text.replace(glucose, &ours)).expect("write");
    std::fs::write(
        dir.path().join("aggregator.toml"),
        format!(
            "insecure = true\ndata = \"own.csv\"\nschema = \"agg.schema.toml\"\nout = \"report\"\nnodes = [\"{}\"]\ntimeout_ms = 3000\nretries = 1\n",
            node.url()
        ),
    )
    .expect("write");
    let out = run(
        "dpagg-aggregator",
        &["run", "--config", "aggregator.toml"],
        dir.path(),
    );
    assert_one_line_error(
        &out,
        &[
            "schema mismatch (the node's schema differs in: features.glucose.hi: ours 250.0, theirs 200.0)",
        ],
    );
}
