//! `dpagg-aggregator run` and `demo` against real `dpagg-node` processes and fake nodes: invalid
//! learners are excluded with the right reason, a node killed with SIGKILL mid-run is excluded
//! while the run completes, publishing on request charges once, and bad input gives one line.

use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_server::OrganisationNodeServer;
use dpagg_tests::{
    FakeNode, NodeProcess, assert_one_line_error, assert_success, budget, node_config,
    one_second_node_config, publish_with_cli, repo_root, run, write_own_data,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Fingerprint of the bundled Diabetes schema, as real nodes report it.
fn diabetes_fingerprint() -> String {
    dpagg_shared::data::schema::Schema::load(&repo_root().join("data/diabetes.schema.toml"))
        .expect("bundled schema")
        .fingerprint()
}

fn meta(l: &mut pb::PrivateLearner) -> &mut pb::ReleaseMetadata {
    l.metadata.as_mut().expect("metadata")
}

/// A well-formed learner for the Diabetes schema (dimension 9) and the default spec.
fn valid_learner(id: &str) -> pb::PrivateLearner {
    // Two organisations never release near-identical weights (their noise differs); fakes that
    // agree to within 1e-6 would count once, as near-copies (aggregator/run/src/screen.rs).
    let own = id
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    pb::PrivateLearner {
        weights: vec![
            0.1,
            -0.2,
            0.3,
            f64::from(own % 1000) * 1e-4,
            0.5,
            0.1,
            0.2,
            0.1,
            -0.1,
        ],
        metadata: Some(pb::ReleaseMetadata {
            release_id: format!("fake-{id}"),
            mechanism: "objective-perturbation".into(),
            epsilon: 1.0,
            delta: 0.0,
            neighbour_relation: pb::NeighbourRelation::ReplaceOne as i32,
            max_row_norm: 1.0,
            schema_fingerprint: diabetes_fingerprint(),
            dim: 9,
            spec: Some(pb::LearnerSpec {
                mechanism: "objective-perturbation".into(),
                epsilon: 1.0,
                delta: 0.0,
                lambda: 0.0,
                options: Default::default(),
                lambda_auto: true,
                map: None,
            }),
            ..Default::default()
        }),
        signature: None,
    }
}

/// Serves `fake` on an ephemeral loopback port until the returned sender is dropped.
async fn serve_fake(fake: FakeNode) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(OrganisationNodeServer::new(fake))
            .serve_with_incoming_shutdown(
                tonic::transport::server::TcpIncoming::from(listener),
                async {
                    let _ = rx.await;
                },
            ),
    );
    (url, tx)
}

/// An endpoint where nothing listens.
fn dead_endpoint() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    drop(l);
    url
}

/// A real node with one learner published by its operator (ε = 1, λ = 0.01).
fn published_node(dir: &Path, id: &str) -> NodeProcess {
    let config = node_config(dir, id, 5.0, 2.0, false, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    NodeProcess::start(&config)
}

/// Writes the aggregator's own data (Diabetes rows 400…) and an aggregator config.
fn aggregator_config(dir: &Path, nodes: &[String], extra: &str) -> PathBuf {
    write_own_data(dir);
    let list: Vec<String> = nodes.iter().map(|n| format!("\"{n}\"")).collect();
    let path = dir.join("aggregator.toml");
    std::fs::write(
        &path,
        format!(
            "insecure = true\ndata = \"own.csv\"\nschema = \"agg.schema.toml\"\nout = \"report\"\nnodes = [{}]\ntimeout_ms = 3000\nretries = 1\nbackoff_ms = 50\n{extra}",
            list.join(", ")
        ),
    )
    .expect("write");
    path
}

/// Runs `dpagg-aggregator run --config` off the async runtime and returns its output.
async fn run_aggregator(dir: &Path, config: &Path) -> std::process::Output {
    let (dir, config) = (dir.to_owned(), config.to_owned());
    tokio::task::spawn_blocking(move || {
        run(
            "dpagg-aggregator",
            &["run", "--config", config.to_str().expect("utf8")],
            &dir,
        )
    })
    .await
    .expect("join")
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report/report.json")).expect("report.json");
    serde_json::from_str(&text).expect("json")
}

/// (status, exclusion code) of each node in the report, in order.
fn statuses(r: &Value) -> Vec<(String, String)> {
    r["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            (
                n["status"].as_str().expect("status").to_owned(),
                n["exclusion"]["code"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// A fake node `id` serving the valid learner changed by `f`, under schema `fingerprint`.
fn fake(id: &str, f: &dyn Fn(&mut pb::PrivateLearner), fingerprint: &str) -> FakeNode {
    let mut learner = valid_learner(id);
    f(&mut learner);
    FakeNode {
        id: id.to_owned(),
        learner,
        fingerprint: fingerprint.to_owned(),
        delay: Duration::ZERO,
    }
}

/// The included learners' weights are a probability vector (excluded ones have none), and every
/// reported accuracy is one.
fn assert_weights_and_accuracies(r: &Value) {
    let weights: Vec<f64> = r["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["mixing_weight"].as_f64())
        .collect();
    assert_eq!(weights.len(), 2);
    assert!((weights.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    for key in [
        "local_baseline_accuracy",
        "mirror_averaged_accuracy",
        "with_own_learner_accuracy",
    ] {
        let a = r[key].as_f64().expect(key);
        assert!((0.0..=1.0).contains(&a), "{key} = {a}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_learners_are_excluded_with_their_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let real = published_node(dir.path(), "org-a");
    let fp = diabetes_fingerprint();
    let fakes = vec![
        fake("good", &|_| {}, &fp),
        fake("nan", &|l| l.weights[3] = f64::NAN, &fp),
        fake("short", &|l| l.weights.truncate(5), &fp),
        fake("greedy", &|l| meta(l).epsilon = 5.0, &fp),
        fake("other-schema", &|_| {}, "0123456789abcdef"),
        fake("seeded", &|l| meta(l).seeded = true, &fp),
    ];
    let mut urls = vec![real.url()];
    let mut guards = Vec::new();
    for f in fakes {
        let (url, guard) = serve_fake(f).await;
        urls.push(url);
        guards.push(guard);
    }
    urls.push(dead_endpoint());
    let config = aggregator_config(dir.path(), &urls, "");
    let out = run_aggregator(dir.path(), &config).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_success(&out);
    assert!(stdout.contains("mirror averaging"), "{stdout}");
    let r = report(dir.path());
    let expected: Vec<(&str, &str)> = vec![
        ("included", ""),
        ("included", ""),
        ("excluded", "non_finite"),
        ("excluded", "dimension_mismatch"),
        ("excluded", "over_policy"),
        ("excluded", "schema_mismatch"),
        ("excluded", "seeded"),
        ("excluded", "unreachable"),
    ];
    let got = statuses(&r);
    let got: Vec<(&str, &str)> = got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(got, expected);
    assert_eq!(r["included"], 2);
    assert_eq!(r["excluded"], 6);
    assert_weights_and_accuracies(&r);
    assert!(
        r["nodes"][4]["exclusion"]["reason"]
            .as_str()
            .expect("reason")
            .contains("ε = 5")
    );
    let html = std::fs::read_to_string(dir.path().join("report/report.html")).expect("html");
    assert!(html.contains("<svg") && html.contains("non-finite weight"));
    // Nodes that described themselves keep their name when excluded; the dead one has none.
    let orgs: Vec<Option<&str>> = r["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["organisation_id"].as_str())
        .collect();
    assert_eq!(
        orgs,
        vec![
            Some("org-a"),
            Some("good"),
            Some("nan"),
            Some("short"),
            Some("greedy"),
            Some("other-schema"),
            Some("seeded"),
            None
        ]
    );
    // 200 own rows, a fifth for testing: the report says how coarse 40 rows are.
    assert_eq!(r["test_rows"], 40);
    assert!(
        stdout.contains("warning: accuracies are measured on 40 test rows only"),
        "{stdout}"
    );
    let summary = r["summary"].as_array().expect("summary");
    assert_eq!(summary.len(), 8);
    for line in summary {
        let (lo, a, hi) = (
            line["ci95"][0].as_f64().expect("lo"),
            line["accuracy"].as_f64().expect("accuracy"),
            line["ci95"][1].as_f64().expect("hi"),
        );
        assert!(lo <= a && a <= hi && hi - lo > 0.2, "{line}");
    }
    assert!(html.contains("Warning: accuracies are measured on 40 test rows"));
    // Fewer valid learners than asked for, with nothing excluded: the error says what to do.
    let config = aggregator_config(dir.path(), &urls[..2], "min_learners = 3\n");
    let out = run_aggregator(dir.path(), &config).await;
    assert_one_line_error(
        &out,
        &[
            "only 2 of 2 node(s) gave a valid learner, 3 needed",
            "add nodes or lower min_learners",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_run_is_excluded_and_the_run_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    // One node at a time: the slow fake node holds the aggregator for 1.5 s, during which the
    // real node behind it is killed with SIGKILL; a third node answers normally.
    let (slow, _guard) = serve_fake(FakeNode {
        id: "slow".into(),
        learner: valid_learner("slow"),
        fingerprint: diabetes_fingerprint(),
        delay: Duration::from_millis(1500),
    })
    .await;
    let mut victim = published_node(dir.path(), "org-victim");
    let survivor = published_node(dir.path(), "org-survivor");
    let urls = vec![slow, victim.url(), survivor.url()];
    let config = aggregator_config(dir.path(), &urls, "concurrency = 1\n");
    let work = dir.path().to_owned();
    let aggregator = tokio::spawn(async move { run_aggregator(&work, &config).await });
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!aggregator.is_finished(), "the run ended before the kill");
    victim.kill();
    let out = aggregator.await.expect("join");
    assert_success(&out);
    let r = report(dir.path());
    let got = statuses(&r);
    assert_eq!(got[0], ("included".into(), String::new()));
    assert_eq!(got[1], ("excluded".into(), "unreachable".into()));
    assert_eq!(got[2], ("included".into(), String::new()));
    assert!(
        r["nodes"][1]["exclusion"]["reason"]
            .as_str()
            .expect("reason")
            .contains("2 attempt(s)"),
        "one retry was configured: {}",
        r["nodes"][1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publishing_on_request_charges_once_and_serves_the_same_release() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node_cfg = node_config(dir.path(), "org-p", 3.0, 2.0, true, 60);
    let node = NodeProcess::start(&node_cfg);
    let config = aggregator_config(dir.path(), &[node.url()], "publish = true\n");
    let mut ids = Vec::new();
    for _ in 0..2 {
        let out = run_aggregator(dir.path(), &config).await;
        assert_success(&out);
        ids.push(report(dir.path())["nodes"][0]["release_id"].clone());
    }
    assert_eq!(ids[0], ids[1], "the same spec must return the same release");
    let ledger = run(
        "dpagg-node",
        &["ledger", "--config", node_cfg.to_str().expect("utf8")],
        dir.path(),
    );
    let text = String::from_utf8_lossy(&ledger.stdout);
    assert!(text.contains("spent 1.000000"), "{text}");
    assert!(text.contains("1 release(s)"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gives_one_line_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().to_owned();
    let agg = |args: &'static [&'static str]| {
        let p = p.clone();
        tokio::task::spawn_blocking(move || run("dpagg-aggregator", args, &p))
    };
    // Only unreachable nodes: the run fails cleanly, naming the endpoint and the reason.
    let dead = dead_endpoint();
    let config = aggregator_config(&p, std::slice::from_ref(&dead), "");
    let out = run_aggregator(&p, &config).await;
    assert_one_line_error(&out, &["only 0 of 1", &dead, "unreachable"]);
    assert!(!p.join("report/report.json").exists());
    // Every node trained under another schema.
    let (other, _guard) = serve_fake(FakeNode {
        id: "other".into(),
        learner: valid_learner("other"),
        fingerprint: "feedface".into(),
        delay: Duration::ZERO,
    })
    .await;
    let config = aggregator_config(&p, &[other], "");
    assert_one_line_error(
        &run_aggregator(&p, &config).await,
        &["schema mismatch", "feedface"],
    );
    // Missing files, malformed and unknown settings, bad endpoints, data not matching the schema.
    std::fs::write(p.join("bad.toml"), "data = \n").expect("write");
    std::fs::write(
        p.join("unknown.toml"),
        "data = \"own.csv\"\nschema = \"agg.schema.toml\"\nnodes = [\"http://127.0.0.1:1\"]\ncolour = 1\n",
    )
    .expect("write");
    std::fs::copy(
        repo_root().join("data/breast_cancer.schema.toml"),
        p.join("bc.schema.toml"),
    )
    .expect("copy");
    let cases: [(&'static [&'static str], &[&str]); 6] = [
        (&["run", "--config", "missing.toml"], &["missing.toml"]),
        (&["run", "--config", "bad.toml"], &["bad.toml"]),
        (
            &["run", "--config", "unknown.toml"],
            &["unknown.toml", "colour"],
        ),
        (
            &["run", "--config", "aggregator.toml", "--data", "nope.csv"],
            &["nope.csv"],
        ),
        (
            &[
                "run",
                "--config",
                "aggregator.toml",
                "--node",
                "127.0.0.1:50051",
            ],
            &["nodes", "http://"],
        ),
        (
            &[
                "run",
                "--config",
                "aggregator.toml",
                "--schema",
                "bc.schema.toml",
            ],
            &["own.csv"],
        ),
    ];
    for (args, needles) in cases {
        assert_one_line_error(&agg(args).await.expect("join"), needles);
    }
    assert_one_line_error(
        &agg(&["demo", "--scenario", "diabetes", "--nodes", "40"])
            .await
            .expect("join"),
        &["do not fit"],
    );
}

#[test]
fn demo_runs_nodes_over_grpc_and_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        "dpagg-aggregator",
        &[
            "demo",
            "--scenario",
            "diabetes",
            "--nodes",
            "3",
            "--out",
            "demo",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_success(&out);
    assert!(stdout.contains("3 nodes published"), "{stdout}");
    // A first run warns about nothing (its development certificates outlive the warning window).
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("WARN"), "{stderr}");
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("demo/report.json")).expect("report"),
    )
    .expect("json");
    assert_eq!(r["included"], 3);
    assert_eq!(r["test_rows"], 168);
    assert_eq!(r["train_rows"], 150);
    for n in r["nodes"].as_array().expect("nodes") {
        assert_eq!(n["epsilon"], 1.0);
        assert_eq!(n["mechanism"], "objective-perturbation");
    }
}

/// The default demo is the clinic scenario: its first summary line is the final model against
/// the tuned local one, with the report's numbers. Sizes may differ per organisation.
#[test]
fn the_clinic_demo_leads_with_the_gain_over_local() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        "dpagg-aggregator",
        &[
            "demo",
            "--nodes",
            "4",
            "--rows-per-org",
            "100,2000,1500,1000,500",
            "--out",
            "demo",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_success(&out);
    let table = stdout
        .lines()
        .find(|l| l.starts_with("final model"))
        .unwrap_or_else(|| panic!("no final-model line: {stdout}"));
    // The headline: the chosen model against tuned local, or (in the few runs where the
    // selection keeps local) why the final model is the local one.
    let headline = |text: &str| text.contains("vs tuned local") || text.contains("is your own");
    assert!(headline(table), "{table}");
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("demo/report.json")).expect("report"),
    )
    .expect("json");
    assert_eq!(r["included"], 4);
    assert_eq!(r["train_rows"], 100);
    assert_eq!(r["test_rows"], 5000);
    // The nodes draw their noise from the secure RNG, so the gain varies from run to run; that
    // the clinic's hospitals help is checked, seeded, by `experiment utility` in CI. Here: the
    // headline's numbers are the report's.
    let f = &r["final_model"];
    let gain = f["gain_over_local"].as_f64().expect("gain");
    let local = r["local_baseline_accuracy"].as_f64().expect("local");
    let chosen = f["test_accuracy"].as_f64().expect("final");
    assert!((chosen - local - gain).abs() < 1e-12, "{f}");
    assert!(table.contains(&format!("{chosen:.3}")), "{table}");
    assert!(dir.path().join("demo/model.json").exists());
    let html = std::fs::read_to_string(dir.path().join("demo/report.html")).expect("html");
    assert!(headline(&html), "{html}");
    // The report says how sure the choice is, on how many own rows.
    let evidence = f["evidence"].as_str().expect("evidence");
    assert!(evidence.contains("100 own rows"), "{evidence}");
    assert!(table.contains(evidence), "{table}");
    let bad = run(
        "dpagg-aggregator",
        &["demo", "--nodes", "2", "--rows-per-org", "100,2000"],
        dir.path(),
    );
    assert_one_line_error(&bad, &["--rows-per-org", "give 3 sizes"]);
}

/// `dpagg-aggregator run … | head -1`: a reader that goes away is not an error, and the report
/// files are still written.
#[test]
fn run_with_a_closed_stdout_is_a_clean_exit() {
    use dpagg_tests::{ClosePipe, assert_clean_exit_on_closed_stdout, run_closing_stdout};
    let dir = tempfile::tempdir().expect("tempdir");
    let node = published_node(dir.path(), "org-h");
    let config = aggregator_config(dir.path(), &[node.url()], "");
    let args = ["run", "--config", config.to_str().expect("utf8")];
    for close in [ClosePipe::AfterFirstLine, ClosePipe::Immediately] {
        let _ = std::fs::remove_dir_all(dir.path().join("report"));
        let (_, out) = run_closing_stdout("dpagg-aggregator", &args, dir.path(), close);
        assert_clean_exit_on_closed_stdout(&out);
        assert_eq!(report(dir.path())["included"], 1, "{close:?}");
    }
}

/// A bad value is reported where it was written: the flag, the environment variable or the
/// file; negative numbers reach validation instead of being taken for flags.
#[test]
fn errors_blame_the_flag_variable_or_file_that_gave_the_value() {
    use dpagg_tests::run_with_env;
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = aggregator_config(p, &[dead_endpoint()], "");
    let config = config.to_str().expect("utf8");
    let run_args = ["run", "--config", config];
    let flag = run(
        "dpagg-aggregator",
        &["run", "--config", config, "--epsilon", "-1"],
        p,
    );
    assert_one_line_error(
        &flag,
        &["error: --epsilon: `epsilon` = -1: must be a finite number > 0"],
    );
    let cases: [(&str, &str, &str); 3] = [
        (
            "DPAGG_AGG_EPSILON",
            "nan",
            "error: $DPAGG_AGG_EPSILON: `epsilon` = NaN",
        ),
        (
            "DPAGG_AGG_MIN_LEARNERS",
            "0",
            "error: $DPAGG_AGG_MIN_LEARNERS: `min_learners` = 0: must be at least 1",
        ),
        (
            "DPAGG_AGG_TIMEOUT_MS",
            "soon",
            "error: $DPAGG_AGG_TIMEOUT_MS: invalid value 'soon'",
        ),
    ];
    for (var, value, needle) in cases {
        let out = run_with_env("dpagg-aggregator", &run_args, p, &[(var, value)]);
        assert_one_line_error(&out, &[needle]);
        assert!(!String::from_utf8_lossy(&out.stderr).contains("aggregator.toml"));
    }
    aggregator_config(p, &[dead_endpoint()], "beta = -3.0\n");
    assert_one_line_error(
        &run("dpagg-aggregator", &run_args, p),
        &[
            "error: ",
            "aggregator.toml: `beta` = -3: must be a finite number > 0",
        ],
    );
}

/// The final model is built from the own training rows only: changing the test rows changes
/// the scores, never the model (`model.json`), and the report leads with the final model
/// against the tuned local one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_final_model_never_sees_the_test_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fp = diabetes_fingerprint();
    let mut urls = Vec::new();
    let mut guards = Vec::new();
    for id in ["a", "b"] {
        let (url, guard) = serve_fake(fake(id, &|_| {}, &fp)).await;
        urls.push(url);
        guards.push(guard);
    }
    let csv = std::fs::read_to_string(repo_root().join("data/diabetes.csv")).expect("data");
    let lines: Vec<&str> = csv.lines().collect();
    for (name, range) in [("test-a.csv", 1..101), ("test-b.csv", 101..201)] {
        let mut text = format!("{}\n", lines[0]);
        for l in &lines[range] {
            text.push_str(l);
            text.push('\n');
        }
        std::fs::write(dir.path().join(name), text).expect("write");
    }
    let mut models = Vec::new();
    for test in ["test-a.csv", "test-b.csv"] {
        let config = aggregator_config(dir.path(), &urls, &format!("test_file = \"{test}\"\n"));
        let out = run_aggregator(dir.path(), &config).await;
        assert_success(&out);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.starts_with("final model"), "{stdout}");
        let model = std::fs::read_to_string(dir.path().join("report/model.json")).expect("model");
        let model: Value = serde_json::from_str(&model).expect("json");
        assert!(
            model["privacy"]
                .as_str()
                .expect("privacy")
                .contains("not with respect to")
        );
        let r = report(dir.path());
        assert_eq!(r["test_rows"], 100);
        // predict on the test file reproduces the report's test accuracy exactly.
        let scored = run(
            "dpagg-aggregator",
            &[
                "predict",
                "--model",
                "report/model.json",
                "--data",
                test,
                "--out",
                "scores.csv",
            ],
            dir.path(),
        );
        assert_success(&scored);
        let said = String::from_utf8_lossy(&scored.stdout).into_owned();
        let accuracy: f64 = said
            .split("; accuracy ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no accuracy in {said}"));
        assert_eq!(
            Some(accuracy),
            r["final_model"]["test_accuracy"].as_f64(),
            "{said}"
        );
        let scores = std::fs::read_to_string(dir.path().join("scores.csv")).expect("scores");
        assert_eq!(
            scores.lines().count(),
            101,
            "a header and one line per test row"
        );
        assert!(
            scores.starts_with("row,predicted,probability,margin\n1,"),
            "{scores}"
        );
        assert_eq!(
            r["final_model"]["candidates"]
                .as_array()
                .expect("candidates")
                .len(),
            5
        );
        if test == "test-a.csv" {
            predict_scores_unlabelled_rows(dir.path(), test);
        }
        models.push(model["weights"].clone());
    }
    assert_eq!(
        models[0], models[1],
        "the test rows must not change the model"
    );
}

/// `predict` on `test` with two labels spoilt (blank, unknown): every row is scored, and the
/// accuracy is over the labelled rows, saying how many were left out.
fn predict_scores_unlabelled_rows(dir: &Path, test: &str) {
    let text = std::fs::read_to_string(dir.join(test)).expect("test file");
    let spoilt: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            1 | 2 => {
                let (row, _) = l.rsplit_once(',').expect("a label cell");
                format!("{row},{}", if i == 1 { "" } else { "maybe" })
            }
            _ => l.to_owned(),
        })
        .collect();
    std::fs::write(dir.join("spoilt.csv"), spoilt.join("\n") + "\n").expect("write");
    let scored = run(
        "dpagg-aggregator",
        &[
            "predict",
            "--model",
            "report/model.json",
            "--data",
            "spoilt.csv",
            "--out",
            "spoilt-scores.csv",
        ],
        dir,
    );
    assert_success(&scored);
    let said = String::from_utf8_lossy(&scored.stdout);
    assert!(said.starts_with("wrote 100 prediction(s)"), "{said}");
    assert!(
        said.contains(
            "; 2 row(s) with a blank or unknown label scored but left out of the accuracy"
        ),
        "{said}"
    );
    let scores = std::fs::read_to_string(dir.join("spoilt-scores.csv")).expect("scores");
    assert_eq!(scores.lines().count(), 101);
}

/// A member's own learner can carry terminal escapes, CR/LF and bidirectional overrides in the
/// text it signs, and arbitrarily long text in what gets quoted into an exclusion reason: every
/// output (the table, the logs, report.json, report.html) shows it cleaned and capped (issue
/// 23). Learners claiming ε = 0 or weights of 1e300 are excluded with a reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_text_is_cleaned_and_capped_in_every_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fp = diabetes_fingerprint();
    let huge = format!("\u{1b}[31m{}", "x".repeat(200_000));
    let fakes = vec![
        fake(
            "escapes",
            &|l| {
                meta(l).release_id = "r\u{1b}[2J\r\nFAKE LINE\u{202e}".into();
                meta(l).mechanism = "objective-perturbation\u{1b}]0;pwned\u{7}".into();
            },
            &fp,
        ),
        fake("long", &|l| meta(l).schema_fingerprint = huge.clone(), &fp),
        fake("zero", &|l| meta(l).epsilon = 0.0, &fp),
        fake("vast", &|l| l.weights[4] = 1e300, &fp),
    ];
    let mut urls = Vec::new();
    let mut guards = Vec::new();
    for f in fakes {
        let (url, guard) = serve_fake(f).await;
        urls.push(url);
        guards.push(guard);
    }
    let config = aggregator_config(dir.path(), &urls, "");
    let out = run_aggregator(dir.path(), &config).await;
    assert_success(&out);
    let r = report(dir.path());
    let got = statuses(&r);
    let got: Vec<(&str, &str)> = got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(
        got,
        vec![
            ("included", ""),
            ("excluded", "schema_mismatch"),
            ("excluded", "implausible_guarantee"),
            ("excluded", "weights_out_of_bound"),
        ]
    );
    let json = std::fs::read_to_string(dir.path().join("report/report.json")).expect("json");
    let html = std::fs::read_to_string(dir.path().join("report/report.html")).expect("html");
    let outputs = [
        ("stdout", String::from_utf8_lossy(&out.stdout).into_owned()),
        ("stderr", String::from_utf8_lossy(&out.stderr).into_owned()),
        ("report.json", json.clone()),
        ("report.html", html),
    ];
    for (name, text) in &outputs {
        for bad in ['\u{1b}', '\r', '\u{7}', '\u{202e}'] {
            assert!(!text.contains(bad), "{name} carries {bad:?}");
        }
        // JSON would escape a control character rather than carry it raw.
        assert!(!text.contains("\\u001b") && !text.contains("\\r"), "{name}");
        assert!(
            !text.contains("FAKE LINE\n") && text.len() < 60_000,
            "{name}"
        );
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("FAKE LINE"));
    let reason = r["nodes"][1]["exclusion"]["reason"]
        .as_str()
        .expect("reason");
    assert!(reason.chars().count() <= 301, "{} chars", reason.len());
    assert!(reason.ends_with('…'), "{reason}");
    assert!(
        r["nodes"][2]["exclusion"]["reason"]
            .as_str()
            .expect("reason")
            .contains("ε = 0")
    );
}

/// A spec whose training runs past the node's `max_training_seconds` is charged once: the node
/// answers FAILED_PRECONDITION (not a passing fault), the aggregator does not retry it, and a
/// second run gets the same answer without a second charge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_training_is_charged_once_however_often_the_aggregator_asks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = one_second_node_config(dir.path(), "org-t");
    let node = NodeProcess::start(&config);
    let agg = aggregator_config(
        dir.path(),
        &[node.url()],
        "mechanism = \"gibbs-posterior-unproven\"\nepsilon = 1.0\ndelta = 1e-6\nlambda = 0.01\n\
         publish = true\nallow_unproven = true\noptions = { steps = 1e12 }\n",
    );
    for run in 0..2 {
        let out = run_aggregator(dir.path(), &agg).await;
        assert!(!out.status.success(), "run {run}: no learner was released");
        let e = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(e.contains("FailedPrecondition"), "run {run}: {e}");
        assert!(
            !e.contains("retrying") && !e.contains("attempt 2"),
            "run {run}: {e}"
        );
    }
    let mut c = pb::organisation_node_client::OrganisationNodeClient::connect(node.url())
        .await
        .expect("connect");
    let spent = budget(&mut c).await;
    assert_eq!(
        spent.epsilon_spent, 1.0,
        "one charge for two runs: {spent:?}"
    );
    assert_eq!(spent.delta_spent, 1e-6, "{spent:?}");
}

/// A learner that always answers the more common label knows nothing: the report's first line
/// and `report.json` name it (and not the learner that knows something), with a likely cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_at_the_majority_class_is_flagged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fp = diabetes_fingerprint();
    // Every weight 0 but a negative intercept: "neg" (the more common label) for every row.
    let majority = |l: &mut pb::PrivateLearner| {
        l.weights = vec![0.0; 8];
        l.weights.push(-1.0);
    };
    let mut urls = Vec::new();
    let mut guards = Vec::new();
    // The signs a logistic regression finds on Pima (glucose and mass above all).
    let knows = |l: &mut pb::PrivateLearner| {
        l.weights = vec![0.3, 3.0, -0.2, 0.0, 0.2, 1.5, 0.5, 0.5, -1.0];
    };
    for f in [fake("knows", &knows, &fp), fake("majority", &majority, &fp)] {
        let (url, guard) = serve_fake(f).await;
        urls.push(url);
        guards.push(guard);
    }
    let config = aggregator_config(dir.path(), &urls, "latest = true\n");
    let out = run_aggregator(dir.path(), &config).await;
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().expect("a first line");
    assert!(
        first.contains("WARNING: 1 of 2 learner(s) (majority)")
            && first.contains("no better than always answering \"neg\""),
        "{first}"
    );
    let r = report(dir.path());
    assert_eq!(r["majority"]["learners"], serde_json::json!(["majority"]));
    assert_eq!(r["majority"]["label"], "neg");
    let flags: Vec<Option<bool>> = r["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["no_better_than_majority"].as_bool())
        .collect();
    assert_eq!(flags, [Some(false), Some(true)]);
    assert!(
        r["majority"]["cause"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{r}"
    );
    drop(guards);
}
