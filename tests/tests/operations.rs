//! Operating a node for months, with real processes: metrics a Prometheus parser
//! reads and that match the ledger, an audit line for every read with the caller's identity,
//! JSON fatal errors, no budget spent on a training that cannot finish in time, budget messages
//! that name the limit, TLS failures named and not retried, `releases --json`, and commands that
//! say what is wrong before doing work or leaving folders behind.

use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_tests::{
    NodeProcess, assert_one_line_error, assert_success, node_config, publish_with_cli, run,
    run_with_env, tls_node_config, write_own_data,
};
use serde_json::Value;
use std::io::{Read, Write};
use std::path::Path;

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `dpagg-node releases --json --config CONFIG`.
fn releases_json(config: &Path) -> Value {
    let out = run(
        "dpagg-node",
        &[
            "releases",
            "--json",
            "--config",
            config.to_str().expect("utf8"),
        ],
        config.parent().expect("folder"),
    );
    assert_success(&out);
    serde_json::from_str(&stdout(&out)).expect("json")
}

/// `GET /metrics` at `addr`, by hand (HTTP/1.1, one request).
fn scrape(addr: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the metrics endpoint");
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut response = String::new();
    s.read_to_string(&mut response).expect("read");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("a header and a body");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    body.to_owned()
}

/// The value of the sample `name` whose labels include every `(key, value)` of `labels`.
fn sample(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let s = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .unwrap_or_else(|| panic!("no sample {name} {labels:?}"));
    match s.value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Gauge(v)
        | prometheus_parse::Value::Untyped(v) => v,
        _ => panic!("{name} is not a number"),
    }
}

/// A node under a publish and read load exposes metrics a Prometheus text parser accepts, and
/// its budget and release figures are the ledger's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_and_match_the_ledger() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-m", 10.0, 2.0, true, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let (node, metrics) = NodeProcess::start_with_metrics(&config);
    let mut client = OrganisationNodeClient::connect(node.url())
        .await
        .expect("connect");
    client
        .publish_learner(pb::PublishLearnerRequest {
            spec: Some(pb::LearnerSpec {
                mechanism: "objective-perturbation".into(),
                epsilon: 0.5,
                lambda_auto: true,
                ..Default::default()
            }),
        })
        .await
        .expect("publish");
    for _ in 0..3 {
        client
            .get_learner(pb::GetLearnerRequest {
                selector: Some(pb::get_learner_request::Selector::Latest(true)),
            })
            .await
            .expect("read");
    }
    let missing = client
        .get_learner(pb::GetLearnerRequest {
            selector: Some(pb::get_learner_request::Selector::ReleaseId("nope".into())),
        })
        .await
        .expect_err("no such release");
    assert!(
        missing.message().contains("publish it first"),
        "{missing:?}"
    );
    let text = tokio::task::spawn_blocking(move || scrape(&metrics))
        .await
        .expect("scrape");
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    let parsed = prometheus_parse::Scrape::parse(lines).expect("a Prometheus text parser reads it");
    let ledger = releases_json(&config);
    let spent = ledger["budget"]["epsilon_spent"].as_f64().expect("spent");
    assert!(spent > 1.4, "two releases of ε 1 and 0.5: {spent}");
    let g = |name: &str, labels: &[(&str, &str)]| sample(&parsed, name, labels);
    assert_eq!(g("dpagg_budget_epsilon", &[("state", "spent")]), spent);
    assert_eq!(g("dpagg_budget_epsilon", &[("state", "total")]), 10.0);
    assert_eq!(
        g("dpagg_budget_epsilon", &[("state", "remaining")]),
        10.0 - spent
    );
    assert_eq!(g("dpagg_releases", &[("kind", "learner")]), 2.0);
    assert_eq!(ledger["learners"].as_array().expect("learners").len(), 2);
    assert_eq!(
        g(
            "dpagg_publish_requests_total",
            &[("kind", "learner"), ("outcome", "published")]
        ),
        1.0
    );
    assert_eq!(
        g(
            "dpagg_rpc_requests_total",
            &[("method", "GetLearner"), ("code", "Ok")]
        ),
        3.0
    );
    assert_eq!(
        g(
            "dpagg_rpc_requests_total",
            &[("method", "GetLearner"), ("code", "NotFound")]
        ),
        1.0
    );
    assert!(
        text.contains("dpagg_rpc_seconds_bucket{"),
        "latency histogram"
    );
    // Training time only in coarse buckets: no sum, no exact figure, no fine histogram.
    assert!(
        text.contains("dpagg_trainings_within_total{le=\"+Inf\"} 1"),
        "{text}"
    );
    assert!(!text.contains("training_seconds"), "{text}");
    assert!(
        !text.contains("dpagg_rpc_seconds_count{method=\"PublishLearner\"}"),
        "a publish call's latency is its training's time: {text}"
    );
    assert!(
        text.trim_end().ends_with("# EOF"),
        "OpenMetrics ends with # EOF"
    );
}

/// Writes a TLS aggregator config naming `nodes`, with the own data beside it.
fn tls_aggregator(
    dir: &Path,
    identity: &Path,
    nodes: &[String],
    extra: &str,
) -> std::path::PathBuf {
    write_own_data(dir);
    let list: Vec<String> = nodes.iter().map(|n| format!("{n:?}")).collect();
    let path = dir.join("aggregator.toml");
    std::fs::write(
        &path,
        format!(
            "identity = {:?}\ndata = \"own.csv\"\nschema = \"agg.schema.toml\"\nout = \"report\"\nnodes = [{}]\nepsilon = 1.0\n{extra}",
            identity.to_str().expect("utf8"),
            list.join(", ")
        ),
    )
    .expect("write");
    path
}

fn certs(dir: &Path, name: &str, orgs: &str) -> std::path::PathBuf {
    let out = dir.join(name);
    let to = out.to_str().expect("utf8");
    assert_success(&run(
        "dpagg-node",
        &["certs", "init", "--out", to, "--org", orgs],
        dir,
    ));
    out
}

/// Every read is in the node's audit log with the caller's certificate identity and the
/// release id; a certificate from another CA is named as such, once, without retries.
#[test]
fn reads_are_audited_and_a_wrong_ca_is_named_not_retried() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = certs(d, "fed", "org-a,aggregator");
    let other = certs(d, "other", "aggregator");
    let config = tls_node_config(d, "org-a", &fed.join("org-a"), false, "");
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let log = d.join("node.log");
    let node = NodeProcess::start_logging(&config, &log);
    let agg = tls_aggregator(d, &fed.join("aggregator"), &[node.https_url()], "");
    let out = run(
        "dpagg-aggregator",
        &["run", "--config", agg.to_str().expect("utf8")],
        d,
    );
    assert_success(&out);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join("report/report.json")).expect("report"),
    )
    .expect("json");
    let release = report["nodes"][0]["release_id"]
        .as_str()
        .expect("release id")
        .to_owned();
    let logged = std::fs::read_to_string(&log).expect("log");
    let read = logged
        .lines()
        .find(|l| l.contains("\"rpc\":\"GetLearner\"") && l.contains("\"outcome\":\"read\""))
        .unwrap_or_else(|| panic!("no audited read in {logged}"));
    assert!(read.contains("dpagg://org/aggregator"), "{read}");
    assert!(read.contains(&release), "{read}");
    assert!(
        read.contains("objective-perturbation"),
        "the spec asked for: {read}"
    );

    // Another federation's aggregator: the exclusion says what is wrong, with no retry.
    let other_dir = d.join("stranger");
    std::fs::create_dir_all(&other_dir).expect("mkdir");
    let agg = tls_aggregator(
        &other_dir,
        &other.join("aggregator"),
        &[node.https_url()],
        "retries = 2\n",
    );
    let out = run(
        "dpagg-aggregator",
        &["run", "--config", agg.to_str().expect("utf8")],
        &other_dir,
    );
    assert_one_line_error(
        &out,
        &["TLS: the node's certificate is not signed by this federation's CA"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("attempt(s)"), "not retried: {stderr}");
    // health says the same, and takes host:port or an https:// URL alike.
    let addr = format!("https://{}", node.addr);
    let id = other.join("aggregator");
    let out = run(
        "dpagg-node",
        &[
            "health",
            "--addr",
            &addr,
            "--identity",
            id.to_str().expect("utf8"),
        ],
        d,
    );
    assert_one_line_error(&out, &["not signed by this federation's CA"]);
    let id = fed.join("aggregator");
    let out = run(
        "dpagg-node",
        &[
            "health",
            "--addr",
            &addr,
            "--identity",
            id.to_str().expect("utf8"),
        ],
        d,
    );
    assert_success(&out);
    assert!(stdout(&out).ends_with(": SERVING\n"), "{}", stdout(&out));
}

/// Under `--log-format json` a fatal error is one JSON log event; an unknown log level is
/// refused instead of silently ignored.
#[test]
fn fatal_errors_are_json_and_unknown_log_levels_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = [
        "--log-format",
        "json",
        "check",
        "--data",
        "none.csv",
        "--schema",
        "none.toml",
    ];
    let out = run("dpagg-node", &args, dir.path());
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    let event: Value = serde_json::from_str(lines[0]).expect("one JSON object");
    assert_eq!(event["level"], "ERROR");
    let message = event["fields"]["message"].as_str().expect("message");
    assert!(
        message.starts_with("error: none.toml: cannot read schema"),
        "{message}"
    );
    let out = run_with_env(
        "dpagg-node",
        &["check", "--data", "none.csv", "--schema", "none.toml"],
        dir.path(),
        &[("DPAGG_LOG", "verbose")],
    );
    assert_one_line_error(
        &out,
        &["$DPAGG_LOG = \"verbose\": `verbose` is not a log level"],
    );
}

/// A DP-SGD request that cannot finish within the node's time limit is refused before any
/// charge; a δ over the total is named as the limit; a DP-SGD charge is explained.
#[test]
fn no_budget_is_spent_for_nothing_and_limits_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-t", 10.0, 2.0, false, 60);
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        text.replace("delta_total = 1e-5", "delta_total = 1e-6")
            .replace("[policy]", "[policy]\nmax_training_seconds = 1"),
    )
    .expect("write");
    let slow = [
        "--mechanism",
        "dp-sgd",
        "--epsilon",
        "1",
        "--delta",
        "1e-7",
        "--option",
        "steps=10000000",
        "--option",
        "sampling_rate=1",
    ];
    let out = publish_with_cli(&config, &slow);
    assert_one_line_error(
        &out,
        &[
            "this release would take at least",
            "max_training_seconds = 1",
            "nothing was charged",
        ],
    );
    let ledger = releases_json(&config);
    assert_eq!(ledger["budget"]["epsilon_spent"], 0.0, "{ledger}");
    assert_eq!(ledger["unfinished_charges"], 0);

    // A feasible DP-SGD release says how the ledger counts it.
    let out = publish_with_cli(
        &config,
        &["--mechanism", "dp-sgd", "--epsilon", "1", "--delta", "1e-7"],
    );
    assert_success(&out);
    assert!(
        stdout(&out).contains("charged under replace-one, the ledger's relation, as ε = 2"),
        "{}",
        stdout(&out)
    );
    // δ is the limit now: (1 + e)·3e-7 ≈ 1.1e-6 on top of what is spent exceeds 1e-6.
    let out = publish_with_cli(
        &config,
        &[
            "--mechanism",
            "dp-sgd",
            "--epsilon",
            "1",
            "--delta",
            "3e-7",
            "--lambda",
            "0.1",
        ],
    );
    assert_one_line_error(
        &out,
        &["privacy budget exhausted (δ)", "δ would reach", "of 1e-6"],
    );
}

/// `releases --json` lists a learner and a data release with their guarantees and charges;
/// `--show` prints one in full.
#[test]
fn releases_lists_learners_and_data_releases_with_their_charges() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-r", 10.0, 2.0, false, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let mut args = vec!["publish-data", "--config", config.to_str().expect("utf8")];
    args.extend([
        "--kind",
        "histogram",
        "--epsilon",
        "0.5",
        "--option",
        "bins=4",
    ]);
    assert_success(&run("dpagg-node", &args, dir.path()));
    let all = releases_json(&config);
    let learner = &all["learners"][0];
    assert_eq!(learner["kind"], "learner");
    assert_eq!(learner["guarantee"]["epsilon"], 1.0);
    assert_eq!(learner["charge_replace_one"]["epsilon"], 1.0);
    assert_eq!(learner["spec"]["mechanism"], "objective-perturbation");
    let data = &all["data_releases"][0];
    assert_eq!(
        (data["kind"].as_str(), data["mechanism"].as_str()),
        (Some("data"), Some("histogram"))
    );
    assert_eq!(data["charge_replace_one"]["epsilon"], 0.5);
    assert_eq!(data["spec"]["options"]["bins"], 4.0);
    assert_eq!(all["budget"]["epsilon_spent"], 1.5);
    let id = learner["release_id"].as_str().expect("id");
    let shown = run(
        "dpagg-node",
        &[
            "releases",
            "--config",
            config.to_str().expect("utf8"),
            "--show",
            id,
        ],
        dir.path(),
    );
    assert_success(&shown);
    let one: Value = serde_json::from_str(&stdout(&shown)).expect("json");
    assert!(
        one["weights"].as_array().is_some_and(|w| w.len() == 9),
        "{one}"
    );
    let table = run(
        "dpagg-node",
        &["releases", "--config", config.to_str().expect("utf8")],
        dir.path(),
    );
    assert_success(&table);
    assert!(
        stdout(&table).contains("1 learner(s), 1 data release(s)"),
        "{}",
        stdout(&table)
    );
}

/// Commands say what is wrong before the work, and a failed start leaves no state folder.
#[test]
fn problems_are_found_before_the_work_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // A schema error on a fresh node: refused, and no empty state folder is left.
    let config = node_config(d, "org-f", 10.0, 2.0, false, 60);
    std::fs::write(d.join("diabetes.schema.toml"), "not a schema").expect("write");
    let out = publish_with_cli(&config, &["--epsilon", "1"]);
    assert_one_line_error(&out, &["diabetes.schema.toml"]);
    assert!(
        !d.join("org-f-state").exists(),
        "no state folder left behind"
    );
    // A cap above the total is refused while the node can publish.
    let config = node_config(d, "org-c", 5.0, 20.0, false, 60);
    let out = publish_with_cli(&config, &["--epsilon", "1"]);
    assert_one_line_error(
        &out,
        &["`policy.max_epsilon_per_release` = 20 is above `policy.epsilon_total` = 5"],
    );
    // simulate: a test fraction out of range, or one that a bundled dataset ignores.
    let out = run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "diabetes",
            "--test-fraction",
            "0.3",
        ],
        d,
    );
    assert_one_line_error(&out, &["--test-fraction applies to a CSV dataset"]);
    let out = run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "diabetes",
            "--test-fraction",
            "1.5",
        ],
        d,
    );
    assert_one_line_error(&out, &["--test-fraction: 1.5 is not in (0, 1)"]);
    // run: an output folder that cannot be written is found before any node is asked.
    std::fs::write(d.join("blocker"), b"a file").expect("write");
    write_own_data(d);
    let args = [
        "run",
        "--insecure",
        "--data",
        "own.csv",
        "--schema",
        "agg.schema.toml",
        "--node",
        "http://127.0.0.1:9",
        "--out",
        "blocker/report",
    ];
    let out = run("dpagg-aggregator", &args, d);
    assert_one_line_error(
        &out,
        &["blocker/report: the report cannot be written there (out)"],
    );
}

/// `train_on = "synthetic"` with no synthetic release anywhere is an error, not "+0.0 points".
#[test]
fn train_on_synthetic_without_releases_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let config = node_config(d, "org-s", 10.0, 2.0, false, 60);
    assert_success(&publish_with_cli(&config, &["--epsilon", "1"]));
    let node = NodeProcess::start(&config);
    write_own_data(d);
    let agg = d.join("aggregator.toml");
    std::fs::write(
        &agg,
        format!(
            "insecure = true\ndata = \"own.csv\"\nschema = \"agg.schema.toml\"\nout = \"report\"\nnodes = [{:?}]\nepsilon = 1.0\ntrain_on = \"synthetic\"\nretries = 0\n",
            node.url()
        ),
    )
    .expect("write");
    let out = run(
        "dpagg-aggregator",
        &["run", "--config", agg.to_str().expect("utf8")],
        d,
    );
    assert_one_line_error(
        &out,
        &[
            "train_on = \"synthetic\": no node gave synthetic rows",
            "publish-data",
        ],
    );
}

/// What the operator publishes with `dpagg-node publish` beside a serving node appears in that
/// node's metrics (read from the ledger at the scrape), with its outcome and time, and every
/// publish writes an audit line naming the OS user and what was charged.
#[test]
fn an_operator_publish_shows_in_the_serving_nodes_metrics_and_the_audit_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 5.0, 2.0, false, 200);
    let (_node, metrics) = NodeProcess::start_with_metrics(&config);
    let published = publish_with_cli(&config, &["--epsilon", "1", "--log-format", "json"]);
    assert_success(&published);
    assert_success(&publish_with_cli(&config, &["--epsilon", "0.5"]));
    assert!(
        !publish_with_cli(&config, &["--epsilon", "3"])
            .status
            .success()
    );
    let audit: Value = String::from_utf8_lossy(&published.stderr)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["target"] == "dpagg::audit")
        .expect("an audit line with its target");
    let uid = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .expect("uid");
    let fields = &audit["fields"];
    assert!(
        fields["operator"]
            .as_str()
            .is_some_and(|o| o.contains(&format!("uid {uid}"))),
        "{audit}"
    );
    assert_eq!(fields["outcome"], "published", "{audit}");
    assert_eq!(fields["epsilon"], 1.0, "{audit}");
    assert_eq!(fields["charged"], true, "{audit}");

    let text = scrape(&metrics);
    let parsed =
        prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_owned()))).expect("parses");
    let operator = "dpagg_operator_publishes_total";
    let learner = ("kind", "learner");
    assert_eq!(
        sample(&parsed, operator, &[learner, ("outcome", "published")]),
        2.0
    );
    assert_eq!(
        sample(&parsed, operator, &[learner, ("outcome", "refused_cap")]),
        1.0
    );
    let within = "dpagg_operator_publishes_within_total";
    assert_eq!(sample(&parsed, within, &[learner, ("le", "+Inf")]), 3.0);
    assert!(!text.contains("operator_publish_seconds"), "{text}");
    assert_eq!(
        sample(&parsed, "dpagg_budget_epsilon", &[("state", "spent")]),
        1.5
    );
}
