//! Tests of `config`.

use super::*;
use clap::FromArgMatches;

/// A config file with `text`, in plain text (`insecure = true`) unless it names an identity.
fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("aggregator.toml");
    let text = if text.contains("identity") {
        text.to_owned()
    } else {
        format!("insecure = true\n{text}")
    };
    std::fs::write(&path, text).expect("write");
    (dir, path)
}

#[test]
fn tls_is_the_default_and_schemes_must_match_it() {
    let (dir, path) = write(
        "identity = \"fed/aggregator\"\ndata = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"https://a:1\"]\n",
    );
    let p = path.to_str().expect("utf8");
    let c = resolve(&["--config", p]).expect("valid");
    assert_eq!(
        c.security,
        Security::Tls {
            identity: dir.path().join("fed/aggregator"),
            signing_keys: dir.path().join("fed/public-keys"),
        }
    );
    let e = resolve(&["--config", p, "--node", "http://a:1"]).expect_err("plain URL");
    assert!(e.to_string().contains("https://"), "{e}");
    let e = resolve(&["--config", p, "--insecure"]).expect_err("both");
    assert_eq!(e.key, "insecure");
    let e = resolve(&[
        "--data",
        "d.csv",
        "--schema",
        "s.toml",
        "--node",
        "https://a:1",
    ])
    .expect_err("no identity");
    assert!(
        e.to_string().contains("identity") && e.to_string().contains("--insecure"),
        "{e}"
    );
    let e = resolve(&[
        "--insecure",
        "--data",
        "d.csv",
        "--schema",
        "s.toml",
        "--node",
        "https://a:1",
    ])
    .expect_err("https in plain text");
    assert!(e.to_string().contains("without TLS"), "{e}");
}

/// Resolves settings given as command-line arguments (tests set no DPAGG_AGG_* variable).
fn resolve(args: &[&str]) -> Result<RunConfig, ConfigError> {
    let command = <Settings as clap::Args>::augment_args(clap::Command::new("run"));
    let matches = command
        .try_get_matches_from(std::iter::once("run").chain(args.iter().copied()))
        .expect("parses");
    Settings::from_arg_matches(&matches)
        .expect("settings")
        .resolve(&matches)
}

#[test]
fn file_is_resolved_relative_to_itself_and_flags_win() {
    let (dir, path) = write(
        "data = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"http://a:1\"]\nepsilon = 0.5\ntest_file = \"t.csv\"\noptions = { steps = 10.0, clip_norm = 2.0 }\n",
    );
    let path = path.to_str().expect("utf8");
    let c = resolve(&["--config", path, "--epsilon", "2", "--option", "steps=20"]).expect("valid");
    assert_eq!(c.data, dir.path().join("own.csv"));
    assert_eq!(c.test, TestSet::File(dir.path().join("t.csv")));
    assert_eq!(c.nodes, vec!["http://a:1".to_owned()]);
    match c.request {
        LearnerRequest::Spec { spec, .. } => {
            assert_eq!(spec.epsilon, 2.0);
            let expected: BTreeMap<String, f64> =
                [("clip_norm".to_owned(), 2.0), ("steps".to_owned(), 20.0)].into();
            assert_eq!(spec.options, expected);
        }
        LearnerRequest::Latest => panic!("expected a spec"),
    }
    assert_eq!(c.accept.max_delta, 1e-5);
    assert!(!c.accept.allow_seeded);
    assert_eq!(c.out, PathBuf::from("report"));
    assert_eq!(c.network.concurrency, 32);
}

#[test]
fn errors_name_the_file_and_key() {
    let (_dir, path) = write("data = \"own.csv\"\nschema = \"s.toml\"\nnodez = []\n");
    let e = resolve(&["--config", path.to_str().expect("utf8")]).expect_err("unknown key");
    let msg = e.to_string();
    assert!(msg.starts_with(&path.display().to_string()) && msg.contains("nodez"));
    assert!(!msg.contains('\n'));

    let (_dir, path) =
        write("data = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"127.0.0.1:1\"]\n");
    let e = resolve(&["--config", path.to_str().expect("utf8")]).expect_err("not a URL");
    assert!(e.to_string().contains("`nodes`"), "{e}");
    assert_eq!(e.origin, Origin::File(path));

    let e =
        resolve(&["--insecure", "--data", "x.csv", "--schema", "s.toml"]).expect_err("no nodes");
    assert!(e.to_string().contains("--node"), "{e}");
}

#[test]
fn errors_blame_the_flag_that_gave_the_value() {
    let (_dir, path) = write(
        "data = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"http://a:1\"]\nepsilon = -3.0\n",
    );
    let path = path.to_str().expect("utf8");
    let e = resolve(&["--config", path]).expect_err("negative in the file");
    assert!(
        e.to_string()
            .starts_with(&format!("{path}: `epsilon` = -3")),
        "{e}"
    );
    let e = resolve(&["--config", path, "--epsilon", "-1"]).expect_err("negative flag");
    assert_eq!(
        e.to_string(),
        "--epsilon: `epsilon` = -1: must be a finite number > 0"
    );
    let e = resolve(&["--config", path, "--epsilon", "1", "--test-fraction", "1.5"])
        .expect_err("fraction");
    assert_eq!(e.origin, Origin::Flag("--test-fraction".into()));
    let e = resolve(&["--config", path, "--latest", "--option", "steps=3"])
        .expect_err("options with latest");
    assert_eq!(e.origin, Origin::Flag("--option".into()));
    let c = resolve(&["--config", path, "--latest"]).expect("latest skips the spec");
    assert_eq!(c.request, LearnerRequest::Latest);
}

#[test]
fn a_test_file_and_a_fraction_conflict_only_when_both_are_set() {
    let (dir, path) = write(
        "data = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"http://a:1\"]\ntest_fraction = 0.3\n",
    );
    let path = path.to_str().expect("utf8");
    let c = resolve(&["--config", path]).expect("fraction from the file");
    assert_eq!(c.test, TestSet::Fraction(0.3));
    let e = resolve(&["--config", path, "--test-file", "t.csv"]).expect_err("both");
    assert!(e.to_string().contains("test_fraction"), "{e}");
    let c = resolve(&[
        "--insecure",
        "--data",
        "d.csv",
        "--schema",
        "s",
        "--node",
        "http://a:1",
        "--test-file",
        "t.csv",
    ])
    .expect("file alone");
    assert_eq!(c.test, TestSet::File(PathBuf::from("t.csv")));
    drop(dir);
}
