//! `dpagg-node` as a process over real gRPC: durability across restarts and crashes, the
//! budget under concurrency, typed statuses, health and reflection, and bad input.

use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_proto::v1::{
    DescribeRequest, GetLearnerRequest, LearnerSpec, ListLearnersRequest, PrivateLearner,
    PublishLearnerRequest, get_learner_request::Selector,
};
use dpagg_tests::{
    NodeProcess, add_access, assert_one_line_error, assert_success, budget, node_config,
    one_second_node_config, publish_with_cli, run,
};
use tonic::Code;
use tonic::transport::Channel;

fn spec(epsilon: f64, lambda: f64) -> LearnerSpec {
    LearnerSpec {
        mechanism: "objective-perturbation".into(),
        epsilon,
        delta: 0.0,
        lambda,
        options: Default::default(),
        lambda_auto: false,
        map: None,
    }
}

async fn client(node: &NodeProcess) -> OrganisationNodeClient<Channel> {
    OrganisationNodeClient::connect(node.url())
        .await
        .expect("connect")
}

async fn publish(
    c: &mut OrganisationNodeClient<Channel>,
    spec: LearnerSpec,
) -> Result<PrivateLearner, tonic::Status> {
    c.publish_learner(PublishLearnerRequest { spec: Some(spec) })
        .await
        .map(tonic::Response::into_inner)
}

async fn learner_count(c: &mut OrganisationNodeClient<Channel>) -> usize {
    c.list_learners(ListLearnersRequest::default())
        .await
        .expect("list")
        .into_inner()
        .learners
        .len()
}

async fn try_get(
    c: &mut OrganisationNodeClient<Channel>,
    selector: Option<Selector>,
) -> Result<PrivateLearner, tonic::Status> {
    c.get_learner(GetLearnerRequest { selector })
        .await
        .map(tonic::Response::into_inner)
}

async fn get(c: &mut OrganisationNodeClient<Channel>, selector: Selector) -> PrivateLearner {
    try_get(c, Some(selector)).await.expect("get")
}

/// Publishes ε = 1 twice: one secure release of dimension 9, charged once.
async fn publish_once_charged_once(c: &mut OrganisationNodeClient<Channel>) -> PrivateLearner {
    let first = publish(c, spec(1.0, 0.01)).await.expect("publish");
    assert!(
        !first.metadata.as_ref().expect("metadata").seeded,
        "a node's release must use the secure RNG"
    );
    assert_eq!(first.weights.len(), 9);
    // Same spec again: same release, no new charge.
    let again = publish(c, spec(1.0, 0.01)).await.expect("publish");
    assert_eq!(again, first);
    assert_eq!(budget(c).await.epsilon_spent, 1.0);
    first
}

#[tokio::test]
async fn releases_and_ledger_survive_restart_and_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 3.0, 2.0, true, 60);
    let mut node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let first = publish_once_charged_once(&mut c).await;
    let id = first
        .metadata
        .as_ref()
        .expect("metadata")
        .release_id
        .clone();

    drop(c);
    assert!(node.terminate(), "SIGTERM must shut the node down cleanly");
    let mut node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let got = get(&mut c, Selector::ReleaseId(id.clone())).await;
    assert_eq!(got, first, "the same bytes are served after a restart");
    assert_eq!(budget(&mut c).await.epsilon_spent, 1.0);

    // A crash right after a publish: the charge was committed before the learner was returned.
    publish(&mut c, spec(1.5, 0.01)).await.expect("publish");
    node.kill();
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    assert_eq!(budget(&mut c).await.epsilon_spent, 2.5);
    assert_eq!(learner_count(&mut c).await, 2);
    let latest = get(&mut c, Selector::Latest(true)).await;
    assert_eq!(
        latest
            .metadata
            .expect("metadata")
            .spec
            .expect("spec")
            .epsilon,
        1.5
    );
    let by_spec = get(&mut c, Selector::Spec(spec(1.0, 0.01))).await;
    assert_eq!(by_spec, first);
}

fn code(r: Result<PrivateLearner, tonic::Status>) -> Code {
    r.expect_err("must fail").code()
}

#[tokio::test]
async fn typed_statuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(&node_config(dir.path(), "org-b", 1.0, 0.8, true, 60));
    let mut c = client(&node).await;
    assert_eq!(
        code(publish(&mut c, spec(0.9, 0.01)).await),
        Code::FailedPrecondition
    );
    publish(&mut c, spec(0.8, 0.01))
        .await
        .expect("within budget");
    let over = publish(&mut c, spec(0.5, 0.01))
        .await
        .expect_err("over budget");
    assert_eq!(over.code(), Code::ResourceExhausted);
    assert!(over.message().contains("remaining"), "{}", over.message());
    let mut unknown = spec(0.1, 0.01);
    unknown.mechanism = "magic".into();
    assert_eq!(code(publish(&mut c, unknown).await), Code::InvalidArgument);
    assert_eq!(
        code(publish(&mut c, spec(-1.0, 0.01)).await),
        Code::InvalidArgument
    );
    assert_eq!(
        code(
            c.publish_learner(PublishLearnerRequest { spec: None })
                .await
                .map(tonic::Response::into_inner)
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code(try_get(&mut c, Some(Selector::ReleaseId("nope".into()))).await),
        Code::NotFound
    );
    assert_eq!(code(try_get(&mut c, None).await), Code::InvalidArgument);
}

#[tokio::test]
async fn remote_publish_is_refused_when_not_allowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let closed = NodeProcess::start(&node_config(dir.path(), "org-c", 1.0, 1.0, false, 60));
    let mut c = client(&closed).await;
    assert_eq!(
        code(publish(&mut c, spec(0.5, 0.01)).await),
        Code::PermissionDenied
    );
}

#[tokio::test]
async fn concurrent_publishes_never_overspend() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-d", 5.0, 1.0, true, 60);
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    // One round trip first, so the client has the server's HTTP/2 settings (at most
    // `max_streams_per_connection` streams at once) and queues the calls beyond them instead of
    // opening streams the server must refuse (REFUSED_STREAM).
    budget(&mut c).await;
    // 50 distinct specs of ε = 1 each against ε = 5, over gRPC, plus 5 local `publish` processes
    // writing to the same ledger at the same time.
    let mut tasks = Vec::new();
    for k in 0..50 {
        let mut c = c.clone();
        tasks.push(tokio::spawn(async move {
            c.publish_learner(PublishLearnerRequest {
                spec: Some(spec(1.0, 0.01 + k as f64 * 1e-3)),
            })
            .await
            .map(|_| ())
            .map_err(|s| s.code())
        }));
    }
    let cli: Vec<_> = (0..5)
        .map(|k| {
            let config = config.clone();
            tokio::task::spawn_blocking(move || {
                let lambda = format!("{}", 0.5 + k as f64 * 1e-3);
                publish_with_cli(&config, &["--epsilon", "1", "--lambda", &lambda])
                    .status
                    .success()
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(()) => ok += 1,
            Err(code) => assert_eq!(code, Code::ResourceExhausted),
        }
    }
    for t in cli {
        ok += usize::from(t.await.expect("task"));
    }
    assert_eq!(ok, 5, "exactly the budget's worth of releases");
    let mut c = c.clone();
    let b = budget(&mut c).await;
    assert!(
        (b.epsilon_spent - 5.0).abs() < 1e-9,
        "spent {}",
        b.epsilon_spent
    );
    assert_eq!(learner_count(&mut c).await, 5);
}

/// Reflection is off unless the access policy enables it.
#[tokio::test]
async fn reflection_is_off_by_default() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(&node_config(dir.path(), "org-r", 1.0, 1.0, false, 60));
    let channel = Channel::from_shared(node.url())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: None,
    };
    let status = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream_once(request))
        .await
        .expect_err("no reflection service");
    assert_eq!(status.code(), tonic::Code::Unimplemented, "{status}");
}

#[tokio::test]
async fn health_and_reflection_are_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-e", 1.0, 1.0, false, 60);
    add_access(&config, "reflection = true\n");
    let node = NodeProcess::start(&config);
    assert_success(&run(
        "dpagg-node",
        &["health", "--addr", &node.addr, "--insecure"],
        dir.path(),
    ));
    let channel = Channel::from_shared(node.url())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let wanted = ["dpagg.v1.OrganisationNode", "grpc.health.v1.Health"];
    let v1 = list_services_v1(channel.clone()).await;
    let v1alpha = list_services_v1alpha(channel).await;
    for name in wanted {
        assert!(v1.iter().any(|n| n == name), "v1 lacks {name}: {v1:?}");
        assert!(
            v1alpha.iter().any(|n| n == name),
            "v1alpha lacks {name}: {v1alpha:?}"
        );
    }
}

/// `grpcurl list` over reflection v1.
async fn list_services_v1(channel: Channel) -> Vec<String> {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream_once(request))
        .await
        .expect("reflection v1")
        .into_inner();
    let reply = stream.message().await.expect("message").expect("one reply");
    let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else {
        panic!("unexpected reply")
    };
    list.service.into_iter().map(|s| s.name).collect()
}

/// The same over reflection v1alpha, which grpcio-reflection and older grpcurl ask.
async fn list_services_v1alpha(channel: Channel) -> Vec<String> {
    use tonic_reflection::pb::v1alpha::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1alpha::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1alpha::server_reflection_response::MessageResponse;
    let request = tonic_reflection::pb::v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream_once(request))
        .await
        .expect("reflection v1alpha")
        .into_inner();
    let reply = stream.message().await.expect("message").expect("one reply");
    let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else {
        panic!("unexpected reply")
    };
    list.service.into_iter().map(|s| s.name).collect()
}

fn tokio_stream_once<T: Send + 'static>(
    item: T,
) -> impl tonic::codegen::tokio_stream::Stream<Item = T> {
    tonic::codegen::tokio_stream::iter(vec![item])
}

#[test]
fn bad_input_gives_one_line_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = node_config(p, "org-f", 1.0, 1.0, false, 60);
    let cfg = config.to_str().expect("utf8");
    let node = |args: &[&str]| run("dpagg-node", args, p);
    assert_one_line_error(
        &node(&["ledger", "--config", cfg]),
        &["nothing has been published"],
    );
    assert_one_line_error(
        &node(&["serve", "--config", "missing.toml"]),
        &["missing.toml"],
    );
    std::fs::write(p.join("bad.toml"), "organisation_id = \n").expect("write");
    assert_one_line_error(&node(&["serve", "--config", "bad.toml"]), &["bad.toml"]);
    std::fs::write(
        p.join("unknown.toml"),
        "organisation_id = \"x\"\ncolour = \"blue\"\n",
    )
    .expect("write");
    assert_one_line_error(
        &node(&["publish", "--config", "unknown.toml", "--epsilon", "1"]),
        &["unknown.toml", "colour"],
    );
    // Schema mismatch: Breast Cancer schema over Diabetes rows.
    std::fs::copy(
        dpagg_tests::repo_root().join("data/breast_cancer.schema.toml"),
        p.join("bc.schema.toml"),
    )
    .expect("copy");
    assert_one_line_error(
        &node(&["serve", "--config", cfg, "--schema", "bc.schema.toml"]),
        &["org-f.csv"],
    );
    assert_one_line_error(
        &node(&["serve", "--config", cfg, "--listen", "not-an-address"]),
        &["listen"],
    );
    assert_one_line_error(&publish_with_cli(&config, &["--epsilon", "5"]), &["cap"]);
    assert_one_line_error(
        &node(&[
            "health",
            "--addr",
            "127.0.0.1:9",
            "--timeout",
            "1",
            "--insecure",
        ]),
        &["127.0.0.1:9"],
    );
    assert_one_line_error(
        &node(&["health", "--addr", "127.0.0.1:9"]),
        &["--identity", "--insecure"],
    );
    // serve needs an identity folder or an explicit --insecure.
    let plain = std::fs::read_to_string(&config).expect("config");
    let tls_less = p.join("no-transport.toml");
    std::fs::write(&tls_less, plain.replacen("insecure = true\n", "", 1)).expect("write");
    assert_one_line_error(
        &node(&["serve", "--config", tls_less.to_str().expect("utf8")]),
        &["identity", "--insecure"],
    );
    assert_one_line_error(
        &node(&["serve", "--config", cfg, "--identity", "nowhere"]),
        &["identity", "insecure"],
    );
}

fn mechanism_spec(
    mechanism: &str,
    epsilon: f64,
    delta: f64,
    options: &[(&str, f64)],
) -> LearnerSpec {
    LearnerSpec {
        mechanism: mechanism.into(),
        epsilon,
        delta,
        lambda: 0.01,
        options: options.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
        lambda_auto: false,
        map: None,
    }
}

/// Unproven releases are refused by default; unknown options are invalid; Prop. 13's step count
/// over the cap is a failed precondition, and its default γ is over the δ budget.
async fn assert_refusals(c: &mut OrganisationNodeClient<Channel>) {
    let spec = mechanism_spec;
    let e = publish(c, spec("gibbs-posterior-unproven", 1.0, 1e-6, &[]))
        .await
        .expect_err("unproven");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("allow_unproven"));
    let e = publish(c, spec("dp-sgd", 1.0, 1e-6, &[("stepz", 5.0)]))
        .await
        .expect_err("unknown option");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("stepz"));
    let e = publish(c, spec("gibbs-posterior", 1.0, 1e-6, &[("gamma", 1e-7)]))
        .await
        .expect_err("too many steps");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("Proposition 13"), "{}", e.message());
    let e = publish(c, spec("gibbs-posterior", 1.0, 1e-6, &[]))
        .await
        .expect_err("δ + (1 + e^ε)γ over the budget");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
}

/// A node on `rows` Diabetes rows with ε budget 100 (cap 10 per release) and δ budget 1e-3, so
/// that several (ε, δ) releases fit.
fn node_with_delta_budget(dir: &std::path::Path, id: &str, rows: usize) -> NodeProcess {
    let config = node_config(dir, id, 100.0, 10.0, true, rows);
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        text.replace("delta_total = 1e-5", "delta_total = 1e-3"),
    )
    .expect("write");
    NodeProcess::start(&config)
}

#[tokio::test]
async fn every_mechanism_publishes_with_its_guarantee_and_the_ledger_composes_them() {
    use dpagg_proto::v1::NeighbourRelation;
    let dir = tempfile::tempdir().expect("tempdir");
    let node = node_with_delta_budget(dir.path(), "org-m", 60);
    let mut c = client(&node).await;
    let spec = mechanism_spec;
    for (s, relation) in [
        (
            spec("dp-sgd", 1.0, 1e-6, &[("steps", 50.0)]),
            NeighbourRelation::AddRemoveOne,
        ),
        (
            spec("dp-sgd", 0.5, 1e-6, &[("steps", 50.0)]),
            NeighbourRelation::AddRemoveOne,
        ),
        (
            spec("dp-sgd-bst", 1.0, 1e-6, &[]),
            NeighbourRelation::ReplaceOne,
        ),
        (
            spec("output-perturbation", 1.0, 0.0, &[]),
            NeighbourRelation::ReplaceOne,
        ),
    ] {
        let l = publish(&mut c, s.clone()).await.expect("publish");
        let m = l.metadata.expect("metadata");
        assert_eq!(m.neighbour_relation, relation as i32, "{}", s.mechanism);
        assert_eq!(m.spec.expect("spec"), s);
        assert!(!m.seeded);
        assert_eq!(l.weights.len(), 9);
    }
    assert_refusals(&mut c).await;
    // The two DP-SGD releases compose by RDP, tighter than adding them, and count under
    // replace-one by group privacy.
    let b = budget(&mut c).await;
    let a = b.add_remove_one.clone().expect("add/remove");
    let r = b.replace_one.clone().expect("replace-one");
    assert_eq!((a.releases, r.releases), (2, 2));
    assert_eq!(a.accounting, "rdp");
    assert!(a.epsilon < a.basic_epsilon && (a.basic_epsilon - 1.5).abs() < 1e-12);
    assert!((r.epsilon - 2.0).abs() < 1e-12);
    assert!((b.epsilon_spent - (r.epsilon + 2.0 * a.epsilon)).abs() < 1e-9);
    assert!(
        (b.delta_spent - (r.delta + (1.0 + a.epsilon.exp()) * a.delta)).abs() < 1e-15,
        "{b:?}"
    );
    assert!(!b.unproven_allowed);
}

#[tokio::test]
async fn langevin_publishes_proven_releases_charged_by_their_rdp_curve() {
    use dpagg_proto::v1::NeighbourRelation;
    let dir = tempfile::tempdir().expect("tempdir");
    let node = node_with_delta_budget(dir.path(), "org-l", 600);
    let mut c = client(&node).await;
    let mut auto = mechanism_spec("langevin", 1.0, 1e-6, &[]);
    (auto.lambda, auto.lambda_auto) = (0.0, true);
    for s in [mechanism_spec("langevin", 1.0, 1e-6, &[]), auto] {
        let l = publish(&mut c, s.clone()).await.expect("publish");
        let m = l.metadata.expect("metadata");
        assert_eq!(m.neighbour_relation, NeighbourRelation::ReplaceOne as i32);
        assert!(m.proven == Some(true) && !m.seeded, "{m:?}");
        assert_eq!(l.weights.len(), 9);
    }
    // Two releases at ε = 1 compose by their curves, tighter than ε = 2.
    let r = budget(&mut c).await.replace_one.expect("replace-one");
    assert_eq!((r.releases, r.accounting.as_str()), (2, "rdp"));
    assert!(
        r.epsilon < r.basic_epsilon && (r.basic_epsilon - 2.0).abs() < 1e-12,
        "{r:?}"
    );
    let e = publish(&mut c, mechanism_spec("langevin", 1.0, 0.0, &[]))
        .await
        .expect_err("δ = 0");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_never_appear_in_logs_or_responses() {
    // Canary values planted in the data (one of them outside its schema bounds, so it is
    // clipped): they must not appear in the node's debug-level JSON log nor in any response.
    const CANARIES: [&str; 3] = ["187.654321", "1.23456789", "987.6543"];
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-c", 10.0, 2.0, true, 60);
    let csv = dir.path().join("org-c.csv");
    let mut text = std::fs::read_to_string(&csv).expect("data");
    text.push_str("2,187.654321,70,30,0,30.1,1.23456789,40,\"pos\"\n");
    text.push_str("2,120,987.6543,30,0,30.1,0.5,40,\"neg\"\n");
    std::fs::write(&csv, text).expect("write");
    let log = dir.path().join("node.log");
    let mut node = NodeProcess::start_logging(&config, &log);
    let mut c = client(&node).await;
    let mut responses = Vec::new();
    let published = publish(&mut c, spec(1.0, 0.01)).await.expect("publish");
    responses.push(format!("{published:?}"));
    let id = published.metadata.expect("metadata").release_id;
    responses.push(format!(
        "{:?}",
        c.describe(DescribeRequest {}).await.expect("describe")
    ));
    responses.push(format!(
        "{:?}",
        c.list_learners(ListLearnersRequest::default())
            .await
            .expect("list")
    ));
    responses.push(format!(
        "{:?}",
        c.get_learner(GetLearnerRequest {
            selector: Some(Selector::ReleaseId(id)),
        })
        .await
        .expect("get")
    ));
    // An over-budget request and a bad one: error statuses too.
    for s in [spec(5.0, 0.01), spec(1.0, -1.0)] {
        let e = publish(&mut c, s).await.expect_err("refused");
        responses.push(format!("{e:?}"));
    }
    drop(c);
    // Let the client's connection task see the drop before blocking on the node's exit.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(node.terminate(), "clean shutdown");
    let logged = std::fs::read_to_string(&log).expect("log");
    assert!(
        logged.contains("loaded the organisation's data") && logged.contains("\"clipped\":1"),
        "the log should say, as a count, that one value was clipped: {logged}"
    );
    for canary in CANARIES {
        assert!(!logged.contains(canary), "`{canary}` in the log: {logged}");
        for r in &responses {
            assert!(!r.contains(canary), "`{canary}` in a response: {r}");
        }
    }
}

/// `dpagg-node ledger | head -1` and friends: a reader that goes away is not an error.
#[test]
fn a_closed_stdout_is_a_clean_exit() {
    use dpagg_tests::{ClosePipe, assert_clean_exit_on_closed_stdout, run_closing_stdout};
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = node_config(p, "org-p", 5.0, 2.0, false, 60);
    let config = config.to_str().expect("utf8");
    let publish = ["publish", "--config", config, "--epsilon", "1"];
    for close in [ClosePipe::Immediately, ClosePipe::AfterFirstLine] {
        // The first publishes, the second finds the stored release: both print two lines.
        let (_, out) = run_closing_stdout("dpagg-node", &publish, p, close);
        assert_clean_exit_on_closed_stdout(&out);
    }
    let ledger = ["ledger", "--config", config];
    let (line, out) = run_closing_stdout("dpagg-node", &ledger, p, ClosePipe::AfterFirstLine);
    assert_eq!(line.trim(), "organisation org-p");
    assert_clean_exit_on_closed_stdout(&out);
    let (_, out) = run_closing_stdout("dpagg-node", &ledger, p, ClosePipe::Immediately);
    assert_clean_exit_on_closed_stdout(&out);
    let root = dpagg_tests::repo_root();
    let check = [
        "check",
        "--data",
        "data/diabetes.csv",
        "--schema",
        "data/diabetes.schema.toml",
    ];
    let (_, out) = run_closing_stdout("dpagg-node", &check, &root, ClosePipe::Immediately);
    assert_clean_exit_on_closed_stdout(&out);
}

/// A bad value is reported where it was written: the flag, the environment variable or the
/// file; negative numbers reach validation instead of being taken for flags.
#[test]
fn errors_blame_the_flag_variable_or_file_that_gave_the_value() {
    use dpagg_tests::run_with_env;
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = node_config(p, "org-e", 1.0, 1.0, false, 60);
    let config = config.to_str().expect("utf8");
    let ledger = ["ledger", "--config", config];
    let flag = run(
        "dpagg-node",
        &["ledger", "--config", config, "--epsilon-total", "-1"],
        p,
    );
    assert_one_line_error(
        &flag,
        &["error: --epsilon-total: `policy.epsilon_total` = -1: must be a finite number >= 0"],
    );
    let env = run_with_env("dpagg-node", &ledger, p, &[("DPAGG_EPSILON_TOTAL", "nan")]);
    assert_one_line_error(
        &env,
        &["error: $DPAGG_EPSILON_TOTAL: `policy.epsilon_total` = NaN"],
    );
    let env = run_with_env("dpagg-node", &ledger, p, &[("DPAGG_DELTA_TOTAL", "-0.5")]);
    assert_one_line_error(&env, &["$DPAGG_DELTA_TOTAL: `policy.delta_total` = -0.5"]);
    // Not a number at all: clap refuses it, and the line still names the variable.
    let env = run_with_env("dpagg-node", &ledger, p, &[("DPAGG_EPSILON_TOTAL", "lots")]);
    assert_one_line_error(&env, &["$DPAGG_EPSILON_TOTAL", "'lots'"]);
    std::fs::write(
        p.join("negative.toml"),
        "organisation_id = \"x\"\ndata = \"org-e.csv\"\nschema = \"diabetes.schema.toml\"\nstate_dir = \"s\"\n[policy]\nepsilon_total = -2.0\n",
    )
    .expect("write");
    let file = run("dpagg-node", &["ledger", "--config", "negative.toml"], p);
    assert_one_line_error(
        &file,
        &["error: negative.toml: `policy.epsilon_total` = -2: must be"],
    );
    let publish = run(
        "dpagg-node",
        &["publish", "--config", config, "--epsilon", "-1"],
        p,
    );
    let stderr = String::from_utf8_lossy(&publish.stderr);
    assert!(!publish.status.success(), "{stderr}");
    assert!(!stderr.contains("unexpected argument"), "{stderr}");
}

/// Lowering a total below what the ledger has spent cannot un-spend it: `serve` and `publish`
/// refuse to start, naming the setting, the total and the spend; `ledger` still shows it.
#[test]
fn a_total_below_the_spend_is_refused_and_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = node_config(p, "org-b", 3.0, 2.0, false, 60);
    let config = config.to_str().expect("utf8");
    let first = run(
        "dpagg-node",
        &["publish", "--config", config, "--epsilon", "1"],
        p,
    );
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let needles = [
        "`policy.epsilon_total` = 0.5",
        "already spent (1)",
        "at least 1",
    ];
    let publish = ["publish", "--config", config, "--epsilon-total", "0.5"];
    let publish = [&publish[..], &["--epsilon", "0.1"]].concat();
    assert_one_line_error(&run("dpagg-node", &publish, p), &needles);
    let serve = [
        "serve",
        "--config",
        config,
        "--epsilon-total",
        "0.5",
        "--listen",
        "127.0.0.1:0",
    ];
    // `serve` narrates at info level (loading the data) before it refuses.
    let served = run_for_at_most(&serve, p, 60);
    let stderr = String::from_utf8_lossy(&served.stderr);
    assert!(!served.status.success(), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(stderr.trim_end().ends_with(errors[0]), "{stderr}");
    for n in needles {
        assert!(
            errors[0].starts_with("error: ") && errors[0].contains(n),
            "{stderr}"
        );
    }
    let ledger = run(
        "dpagg-node",
        &["ledger", "--config", config, "--epsilon-total", "0.5"],
        p,
    );
    let text = String::from_utf8_lossy(&ledger.stdout);
    assert!(
        ledger.status.success(),
        "{}",
        String::from_utf8_lossy(&ledger.stderr)
    );
    assert!(text.contains("total 0.5 spent 1.000000"), "{text}");
    assert!(
        text.contains("BUDGET BELOW SPENT: `policy.epsilon_total` = 0.5"),
        "{text}"
    );
    // Equal to the spend: the node loads, and admits no further release.
    let stop = ["publish", "--config", config, "--epsilon-total", "1"];
    let stop = [&stop[..], &["--epsilon", "0.1"]].concat();
    assert_one_line_error(&run("dpagg-node", &stop, p), &["budget exhausted"]);
}

/// Runs `dpagg-node args`, killing it (and failing) if it is still running after `seconds`.
fn run_for_at_most(args: &[&str], cwd: &std::path::Path, seconds: u64) -> std::process::Output {
    let mut child = std::process::Command::new(dpagg_tests::binary("dpagg-node"))
        .args(args)
        .current_dir(cwd)
        .env_remove("DPAGG_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!(
                "`dpagg-node {}` still running after {seconds} s",
                args.join(" ")
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Colour codes only on a terminal: logs written to a pipe or a file are plain text.
#[test]
fn logs_are_plain_text_off_a_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = node_config(p, "org-l", 2.0, 2.0, false, 60);
    let out = dpagg_tests::run_with_env(
        "dpagg-node",
        &[
            "publish",
            "--config",
            config.to_str().expect("utf8"),
            "--epsilon",
            "1",
        ],
        p,
        &[("DPAGG_LOG", "info")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("INFO") && stderr.contains("published"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}'), "ANSI escape in {stderr:?}");
}

/// Two nodes on one state folder: the second `serve` stops at once, naming the folder and the
/// holder; after the holder ends, another organisation still cannot use the folder.
#[test]
fn a_state_folder_serves_one_node_of_one_organisation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let first = node_config(p, "org-1", 5.0, 2.0, false, 60);
    let mut holder = NodeProcess::start(&first);
    let state = p.join("org-1-state");
    let state = state.to_str().expect("utf8");
    let other = node_config(p, "org-2", 5.0, 2.0, false, 60);
    let other = other.to_str().expect("utf8");
    let serve = |config: &str| {
        run(
            "dpagg-node",
            &[
                "serve",
                "--config",
                config,
                "--state-dir",
                state,
                "--listen",
                "127.0.0.1:0",
            ],
            p,
        )
    };
    let second = serve(other);
    assert_one_line_error(&second, &[state, "in use by a running node", "`org-1`"]);
    let same = serve(first.to_str().expect("utf8"));
    assert_one_line_error(&same, &[state, "in use by a running node", "`org-1`"]);
    assert!(holder.terminate(), "clean shutdown");
    let publish = run(
        "dpagg-node",
        &[
            "publish",
            "--config",
            other,
            "--state-dir",
            state,
            "--epsilon",
            "1",
        ],
        p,
    );
    assert_one_line_error(
        &publish,
        &[state, "belongs to organisation `org-1`, not `org-2`"],
    );
    let again = serve(other);
    assert_one_line_error(&again, &["belongs to organisation `org-1`"]);
}

/// The contract's promises at its edges: the same id gives the same bytes; parameters outside
/// the accepted ranges are INVALID_ARGUMENT before anything is charged, with short numbers; a
/// huge mechanism name is not echoed; `latest = false` selects nothing.
#[tokio::test]
async fn the_contract_holds_at_its_edges() {
    use prost::Message;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-x", 5.0, 2.0, true, 60);
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let learner = publish(&mut c, spec(1.0, 0.01)).await.expect("publish");
    let ledger = run(
        "dpagg-node",
        &[
            "ledger",
            "--config",
            config.to_str().expect("utf8"),
            "--epsilon-total",
            "1e308",
        ],
        dir.path(),
    );
    assert_success(&ledger);
    let text = String::from_utf8_lossy(&ledger.stdout);
    assert!(
        text.contains("ε: total 1e308 spent 1.000000 remaining 1e308"),
        "{text}"
    );
    let id = learner
        .metadata
        .as_ref()
        .expect("metadata")
        .release_id
        .clone();
    let by_id = || Selector::ReleaseId(id.clone());
    let once = get(&mut c, by_id()).await.encode_to_vec();
    let twice = get(&mut c, by_id()).await.encode_to_vec();
    assert_eq!(once, twice, "GetLearner of one id must give the same bytes");
    assert_eq!(once, learner.encode_to_vec());
    for (s, shown) in [
        (spec(5e-324, 0.01), "epsilon = 5e-324"),
        (spec(1e308, 0.01), "epsilon = 1e308"),
        (spec(1.0, 1e300), "lambda = 1e300"),
        (spec(1.0, 1e-300), "lambda = 1e-300"),
    ] {
        let e = publish(&mut c, s).await.expect_err("out of range");
        assert_eq!(e.code(), Code::InvalidArgument, "{}", e.message());
        assert!(e.message().contains(shown), "{}", e.message());
        assert!(e.message().len() < 200, "{}", e.message());
    }
    assert_eq!(
        budget(&mut c).await.epsilon_spent,
        1.0,
        "nothing more charged"
    );
    let mut long = spec(1.0, 0.01);
    long.mechanism = "x".repeat(1 << 20);
    let e = publish(&mut c, long).await.expect_err("unknown");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().len() < 1000, "{} bytes", e.message().len());
    assert!(
        !e.message().contains("gibbs-posterior-unproven"),
        "offers only what Describe lists: {}",
        e.message()
    );
    let e = try_get(&mut c, Some(Selector::Latest(false)))
        .await
        .expect_err("selects nothing");
    assert_eq!(e.code(), Code::InvalidArgument);
}

/// A column the schema does not use is named in a warning (and by `check`), not dropped silently.
#[test]
fn extra_csv_columns_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let config = node_config(p, "org-c", 5.0, 2.0, false, 60);
    let csv = p.join("org-c.csv");
    let text = std::fs::read_to_string(&csv).expect("csv");
    let widened: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{l},{}\n", if i == 0 { "patient_id" } else { "7" }))
        .collect();
    std::fs::write(&csv, widened).expect("write");
    let out = publish_with_cli(&config, &["--epsilon", "1"]);
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not in the schema are ignored: patient_id"),
        "{stderr}"
    );
    let check = run(
        "dpagg-node",
        &[
            "check",
            "--data",
            csv.to_str().expect("utf8"),
            "--schema",
            p.join("diabetes.schema.toml").to_str().expect("utf8"),
        ],
        p,
    );
    assert_success(&check);
    let stdout = String::from_utf8_lossy(&check.stdout);
    assert!(
        stdout.contains("ignored 1 column(s) not in the schema: patient_id"),
        "{stdout}"
    );
}

/// `ListLearners` pages (all releases in one answer would outgrow the 4 MiB message limit).
#[tokio::test]
async fn list_learners_pages_through_every_release_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(&node_config(dir.path(), "org-p", 10.0, 2.0, true, 60));
    let mut c = client(&node).await;
    let mut published = Vec::new();
    for k in 0..5 {
        let l = publish(&mut c, spec(0.1, 0.01 * f64::from(k + 1)))
            .await
            .expect("publish");
        published.push(l.metadata.expect("metadata").release_id);
    }
    published.reverse(); // newest first
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = c
            .list_learners(ListLearnersRequest {
                page_size: 2,
                page_token: token.clone(),
            })
            .await
            .expect("page")
            .into_inner();
        pages += 1;
        assert!(page.learners.len() <= 2);
        seen.extend(
            page.learners
                .into_iter()
                .map(|l| l.metadata.expect("metadata").release_id),
        );
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, published);
    assert_eq!(
        learner_count(&mut c).await,
        5,
        "the default page holds them all"
    );
    for bad in [
        ListLearnersRequest {
            page_size: 1001,
            page_token: String::new(),
        },
        ListLearnersRequest {
            page_size: 0,
            page_token: "not-a-token".into(),
        },
    ] {
        let e = c.list_learners(bad).await.expect_err("refused");
        assert_eq!(e.code(), Code::InvalidArgument, "{e}");
    }
}

/// A client cannot make the node train for ever (`max_steps = 1e18` once held the
/// write lock at 100 % CPU): training runs outside the write lock and stops at the node's
/// `max_training_seconds`; the charge reserved before training stands (whether training
/// finishes in time may depend on the data), and other publishes are never blocked.
#[tokio::test]
async fn training_stops_at_the_nodes_time_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = one_second_node_config(dir.path(), "org-t");
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let mut endless = spec(1.0, 0.01);
    endless.mechanism = "gibbs-posterior-unproven".into();
    endless.delta = 1e-6;
    endless.options.insert("steps".into(), 1e12);
    let mut other = client(&node).await;
    let during = tokio::spawn(async move {
        // Published while the endless chain trains: the write lock is not held by training.
        publish(&mut other, spec(1.0, 0.01)).await
    });
    let e = publish(&mut c, endless.clone()).await.expect_err("stopped");
    assert_eq!(
        e.code(),
        Code::FailedPrecondition,
        "not a passing fault: {e}"
    );
    assert!(e.message().contains("the charge stands"), "{e}");
    // A retry (an aggregator's, or anyone's) gets the same answer and costs nothing more.
    let again = publish(&mut c, endless).await.expect_err("still stopped");
    assert_eq!(again.code(), Code::FailedPrecondition, "{again}");
    assert!(
        again.message().contains("asking again charges nothing"),
        "{again}"
    );
    during
        .await
        .expect("join")
        .expect("not blocked by the training");
    assert_eq!(budget(&mut c).await.epsilon_spent, 2.0, "both charged");
}
