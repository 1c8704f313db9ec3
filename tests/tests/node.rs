//! `dpagg-node` as a process over real gRPC: durability across restarts and crashes, the
//! budget under concurrency, typed statuses, health and reflection, and bad input.

use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_proto::v1::{
    DescribeRequest, GetLearnerRequest, LearnerSpec, ListLearnersRequest, PublishLearnerRequest,
    get_learner_request::Selector,
};
use dpagg_tests::{NodeProcess, assert_one_line_error, node_config, run};
use tonic::Code;
use tonic::transport::Channel;

fn spec(epsilon: f64, lambda: f64) -> LearnerSpec {
    LearnerSpec {
        mechanism: "objective-perturbation".into(),
        epsilon,
        delta: 0.0,
        lambda,
        options: Default::default(),
    }
}

async fn client(node: &NodeProcess) -> OrganisationNodeClient<Channel> {
    OrganisationNodeClient::connect(node.url())
        .await
        .expect("connect")
}

#[tokio::test]
async fn releases_and_ledger_survive_restart_and_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 3.0, 2.0, true, 60);
    let mut node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let first = c
        .publish_learner(PublishLearnerRequest {
            spec: Some(spec(1.0, 0.01)),
        })
        .await
        .expect("publish")
        .into_inner();
    let id = first
        .metadata
        .as_ref()
        .expect("metadata")
        .release_id
        .clone();
    assert!(
        !first.metadata.as_ref().expect("metadata").seeded,
        "a node's release must use the secure RNG"
    );
    assert_eq!(first.weights.len(), 9);
    // Same spec again: same release, no new charge.
    let again = c
        .publish_learner(PublishLearnerRequest {
            spec: Some(spec(1.0, 0.01)),
        })
        .await
        .expect("publish")
        .into_inner();
    assert_eq!(again, first);
    let spent = |d: dpagg_proto::v1::DescribeResponse| d.budget.expect("budget").epsilon_spent;
    assert_eq!(
        spent(
            c.describe(DescribeRequest {})
                .await
                .expect("describe")
                .into_inner()
        ),
        1.0
    );

    drop(c);
    assert!(node.terminate(), "SIGTERM must shut the node down cleanly");
    let mut node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let got = c
        .get_learner(GetLearnerRequest {
            selector: Some(Selector::ReleaseId(id.clone())),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got, first, "the same bytes are served after a restart");
    assert_eq!(
        spent(
            c.describe(DescribeRequest {})
                .await
                .expect("describe")
                .into_inner()
        ),
        1.0
    );

    // A crash right after a publish: the charge was committed before the learner was returned.
    c.publish_learner(PublishLearnerRequest {
        spec: Some(spec(1.5, 0.01)),
    })
    .await
    .expect("publish");
    node.kill();
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    assert_eq!(
        spent(
            c.describe(DescribeRequest {})
                .await
                .expect("describe")
                .into_inner()
        ),
        2.5
    );
    assert_eq!(
        c.list_learners(ListLearnersRequest {})
            .await
            .expect("list")
            .into_inner()
            .learners
            .len(),
        2
    );
    let latest = c
        .get_learner(GetLearnerRequest {
            selector: Some(Selector::Latest(true)),
        })
        .await
        .expect("latest")
        .into_inner();
    assert_eq!(
        latest
            .metadata
            .expect("metadata")
            .spec
            .expect("spec")
            .epsilon,
        1.5
    );
    let by_spec = c
        .get_learner(GetLearnerRequest {
            selector: Some(Selector::Spec(spec(1.0, 0.01))),
        })
        .await
        .expect("by spec")
        .into_inner();
    assert_eq!(by_spec, first);
}

#[tokio::test]
async fn typed_statuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(&node_config(dir.path(), "org-b", 1.0, 0.8, true, 60));
    let mut c = client(&node).await;
    let code = |r: Result<tonic::Response<dpagg_proto::v1::PrivateLearner>, tonic::Status>| {
        r.expect_err("must fail").code()
    };
    assert_eq!(
        code(
            c.publish_learner(PublishLearnerRequest {
                spec: Some(spec(0.9, 0.01))
            })
            .await
        ),
        Code::FailedPrecondition
    );
    c.publish_learner(PublishLearnerRequest {
        spec: Some(spec(0.8, 0.01)),
    })
    .await
    .expect("within budget");
    let over = c
        .publish_learner(PublishLearnerRequest {
            spec: Some(spec(0.5, 0.01)),
        })
        .await
        .expect_err("over budget");
    assert_eq!(over.code(), Code::ResourceExhausted);
    assert!(over.message().contains("remaining"), "{}", over.message());
    let mut unknown = spec(0.1, 0.01);
    unknown.mechanism = "magic".into();
    assert_eq!(
        code(
            c.publish_learner(PublishLearnerRequest {
                spec: Some(unknown)
            })
            .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code(
            c.publish_learner(PublishLearnerRequest {
                spec: Some(spec(-1.0, 0.01))
            })
            .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code(
            c.publish_learner(PublishLearnerRequest { spec: None })
                .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code(
            c.get_learner(GetLearnerRequest {
                selector: Some(Selector::ReleaseId("nope".into()))
            })
            .await
        ),
        Code::NotFound
    );
    assert_eq!(
        code(c.get_learner(GetLearnerRequest { selector: None }).await),
        Code::InvalidArgument
    );

    let dir2 = tempfile::tempdir().expect("tempdir");
    let closed = NodeProcess::start(&node_config(dir2.path(), "org-c", 1.0, 1.0, false, 60));
    let mut c = client(&closed).await;
    assert_eq!(
        code(
            c.publish_learner(PublishLearnerRequest {
                spec: Some(spec(0.5, 0.01))
            })
            .await
        ),
        Code::PermissionDenied
    );
}

#[tokio::test]
async fn concurrent_publishes_never_overspend() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-d", 5.0, 1.0, true, 60);
    let node = NodeProcess::start(&config);
    let c = client(&node).await;
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
                run(
                    "dpagg-node",
                    &[
                        "publish",
                        "--config",
                        config.to_str().expect("utf8"),
                        "--epsilon",
                        "1",
                        "--lambda",
                        &lambda,
                    ],
                    config.parent().expect("dir"),
                )
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
    let b = c
        .describe(DescribeRequest {})
        .await
        .expect("describe")
        .into_inner()
        .budget
        .expect("budget");
    assert!(
        (b.epsilon_spent - 5.0).abs() < 1e-9,
        "spent {}",
        b.epsilon_spent
    );
    assert_eq!(
        c.list_learners(ListLearnersRequest {})
            .await
            .expect("list")
            .into_inner()
            .learners
            .len(),
        5
    );
}

#[tokio::test]
async fn health_and_reflection_are_served() {
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let dir = tempfile::tempdir().expect("tempdir");
    let node = NodeProcess::start(&node_config(dir.path(), "org-e", 1.0, 1.0, false, 60));
    let out = run("dpagg-node", &["health", "--addr", &node.addr], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let channel = Channel::from_shared(node.url())
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let mut r = ServerReflectionClient::new(channel);
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut stream = r
        .server_reflection_info(tokio_stream_once(request))
        .await
        .expect("reflection")
        .into_inner();
    let reply = stream.message().await.expect("message").expect("one reply");
    let Some(MessageResponse::ListServicesResponse(list)) = reply.message_response else {
        panic!("unexpected reply")
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    assert!(
        names.iter().any(|n| n == "dpagg.v1.OrganisationNode"),
        "{names:?}"
    );
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
    assert_one_line_error(
        &run(
            "dpagg-node",
            &["ledger", "--config", config.to_str().expect("utf8")],
            p,
        ),
        &["nothing has been published"],
    );
    assert_one_line_error(
        &run("dpagg-node", &["serve", "--config", "missing.toml"], p),
        &["missing.toml"],
    );
    std::fs::write(p.join("bad.toml"), "organisation_id = \n").expect("write");
    assert_one_line_error(
        &run("dpagg-node", &["serve", "--config", "bad.toml"], p),
        &["bad.toml"],
    );
    std::fs::write(
        p.join("unknown.toml"),
        "organisation_id = \"x\"\ncolour = \"blue\"\n",
    )
    .expect("write");
    assert_one_line_error(
        &run(
            "dpagg-node",
            &["publish", "--config", "unknown.toml", "--epsilon", "1"],
            p,
        ),
        &["unknown.toml", "colour"],
    );
    // Schema mismatch: Breast Cancer schema over Diabetes rows.
    std::fs::copy(
        dpagg_tests::repo_root().join("data/breast_cancer.schema.toml"),
        p.join("bc.schema.toml"),
    )
    .expect("copy");
    assert_one_line_error(
        &run(
            "dpagg-node",
            &[
                "serve",
                "--config",
                config.to_str().expect("utf8"),
                "--schema",
                "bc.schema.toml",
            ],
            p,
        ),
        &["org-f.csv"],
    );
    assert_one_line_error(
        &run(
            "dpagg-node",
            &[
                "serve",
                "--config",
                config.to_str().expect("utf8"),
                "--listen",
                "not-an-address",
            ],
            p,
        ),
        &["listen"],
    );
    assert_one_line_error(
        &run(
            "dpagg-node",
            &[
                "publish",
                "--config",
                config.to_str().expect("utf8"),
                "--epsilon",
                "5",
            ],
            p,
        ),
        &["cap"],
    );
    assert_one_line_error(
        &run(
            "dpagg-node",
            &["health", "--addr", "127.0.0.1:9", "--timeout", "1"],
            p,
        ),
        &["127.0.0.1:9"],
    );
}

#[tokio::test]
async fn every_mechanism_publishes_with_its_guarantee_and_the_ledger_composes_them() {
    use dpagg_proto::v1::NeighbourRelation;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-m", 100.0, 10.0, true, 60);
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        text.replace("delta_total = 1e-5", "delta_total = 1e-3"),
    )
    .expect("write");
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let spec = |mechanism: &str, epsilon: f64, delta: f64, options: &[(&str, f64)]| LearnerSpec {
        mechanism: mechanism.into(),
        epsilon,
        delta,
        lambda: 0.01,
        options: options.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
    };
    let mut publish = async |s: LearnerSpec| {
        c.publish_learner(PublishLearnerRequest { spec: Some(s) })
            .await
            .map(tonic::Response::into_inner)
    };
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
        let l = publish(s.clone()).await.expect("publish");
        let m = l.metadata.expect("metadata");
        assert_eq!(m.neighbour_relation, relation as i32, "{}", s.mechanism);
        assert_eq!(m.spec.expect("spec"), s);
        assert!(!m.seeded);
        assert_eq!(l.weights.len(), 9);
    }
    // Unproven releases are refused by default; unknown options are invalid; Prop. 13's step
    // count over the cap is a failed precondition, and its default γ is over the δ budget.
    let e = publish(spec("gibbs-posterior-unproven", 1.0, 1e-6, &[]))
        .await
        .expect_err("unproven");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("allow_unproven"));
    let e = publish(spec("dp-sgd", 1.0, 1e-6, &[("stepz", 5.0)]))
        .await
        .expect_err("unknown option");
    assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    assert!(e.message().contains("stepz"));
    let e = publish(spec("gibbs-posterior", 1.0, 1e-6, &[("gamma", 1e-7)]))
        .await
        .expect_err("too many steps");
    assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
    assert!(e.message().contains("Proposition 13"), "{}", e.message());
    let e = publish(spec("gibbs-posterior", 1.0, 1e-6, &[]))
        .await
        .expect_err("δ + (1 + e^ε)γ over the budget");
    assert_eq!(e.code(), Code::ResourceExhausted, "{e:?}");
    // The two DP-SGD releases compose by RDP, tighter than adding them, and count under
    // replace-one by group privacy.
    let b = c
        .describe(DescribeRequest {})
        .await
        .expect("describe")
        .into_inner()
        .budget
        .expect("budget");
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
    let published = c
        .publish_learner(PublishLearnerRequest {
            spec: Some(spec(1.0, 0.01)),
        })
        .await
        .expect("publish")
        .into_inner();
    responses.push(format!("{published:?}"));
    let id = published.metadata.expect("metadata").release_id;
    responses.push(format!(
        "{:?}",
        c.describe(DescribeRequest {}).await.expect("describe")
    ));
    responses.push(format!(
        "{:?}",
        c.list_learners(ListLearnersRequest {}).await.expect("list")
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
        let e = c
            .publish_learner(PublishLearnerRequest { spec: Some(s) })
            .await
            .expect_err("refused");
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
