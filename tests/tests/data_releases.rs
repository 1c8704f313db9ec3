//! Data releases over real gRPC: a `dpagg-node` process publishes statistics and a
//! synthetic dataset under its policy, the ledger shows each charge, the composed spend and the
//! releases survive a restart and a crash, and refusals get their typed statuses.

use dpagg_proto::data::body;
use dpagg_proto::v1::data_release_body::Payload;
use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_proto::v1::{
    DataRelease, DataReleaseBody, DataSpec, DescribeRequest, GetDataRequest, ListDataRequest,
    PublishDataRequest, get_data_request::Selector,
};
use dpagg_tests::{NodeProcess, add_access, assert_success, budget, node_config, run};
use tonic::Code;
use tonic::transport::Channel;

fn spec(kind: &str, epsilon: f64, delta: f64, options: &[(&str, f64)]) -> DataSpec {
    DataSpec {
        kind: kind.into(),
        epsilon,
        delta,
        options: options.iter().map(|(k, v)| ((*k).into(), *v)).collect(),
    }
}

async fn client(node: &NodeProcess) -> OrganisationNodeClient<Channel> {
    OrganisationNodeClient::connect(node.url())
        .await
        .expect("connect")
        .max_decoding_message_size(64 << 20)
}

async fn publish(
    c: &mut OrganisationNodeClient<Channel>,
    spec: DataSpec,
) -> Result<DataRelease, tonic::Status> {
    c.publish_data(PublishDataRequest { spec: Some(spec) })
        .await
        .map(tonic::Response::into_inner)
}

/// The data kinds the node lists in `Describe`.
async fn data_kinds(c: &mut OrganisationNodeClient<Channel>) -> Vec<String> {
    c.describe(DescribeRequest {})
        .await
        .expect("describe")
        .into_inner()
        .data_kinds
}

fn decoded(r: &DataRelease) -> DataReleaseBody {
    body(r).expect("a body")
}

const FEATURES: usize = 8;

#[tokio::test]
async fn statistics_and_synthetic_data_are_charged_served_as_stored_and_survive_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 6.0, 2.0, true, 400);
    // More requests than the default rate limit of 10 a minute.
    add_access(&config, "publish_per_minute = 100\n");
    let mut node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let kinds = data_kinds(&mut c).await;
    for kind in ["moments-gaussian", "histogram", "mvn-synthetic-gaussian"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind}");
    }

    // Statistics by the Gaussian mechanism: per class count, sums, means, variances, covariance.
    let moments = publish(&mut c, spec("moments-gaussian", 1.0, 1e-6, &[]))
        .await
        .expect("moments");
    let m = decoded(&moments);
    assert_eq!((m.epsilon, m.delta, m.n), (1.0, 1e-6, 400));
    assert!(!m.seeded, "a node's release uses the secure generator");
    assert_eq!(m.features.len(), FEATURES);
    let Some(Payload::Moments(stats)) = &m.payload else {
        panic!("moments expected, got {:?}", m.payload)
    };
    assert_eq!(stats.classes.len(), 2);
    for class in &stats.classes {
        assert_eq!(class.mean.len(), FEATURES);
        assert_eq!(class.variance.len(), FEATURES);
        assert_eq!(class.covariance.len(), FEATURES * FEATURES);
    }
    let total: f64 = stats.classes.iter().map(|k| k.count).sum();
    // Each class count has noise of sd z·2√(d + d(d + 1)/2) ≈ 4.4·13.3 ≈ 59 (ℓ₂ sensitivity of
    // the whole moment vector): the total is within 6 sd of n.
    assert!(
        (total - 400.0).abs() < 6.0 * 59.0 * 2f64.sqrt(),
        "noisy total count {total}"
    );
    // The same spec again: the same bytes, no new charge.
    let again = publish(&mut c, spec("moments-gaussian", 1.0, 1e-6, &[]))
        .await
        .expect("again");
    assert_eq!(again, moments);
    assert_eq!(budget(&mut c).await.replace_one.expect("spend").releases, 1);

    // Histograms over public bins (ε-DP).
    let hist = publish(&mut c, spec("histogram", 0.5, 0.0, &[("bins", 5.0)]))
        .await
        .expect("histogram");
    let Some(Payload::Histograms(h)) = decoded(&hist).payload else {
        panic!("histograms expected")
    };
    assert_eq!(h.features.len(), FEATURES);
    assert!(
        h.features
            .iter()
            .all(|f| f.edges.len() == 6 && f.negative.len() == 5 && f.positive.len() == 5)
    );

    // Synthetic rows from the Gaussian-perturbed normal.
    let synthetic = publish(
        &mut c,
        spec("mvn-synthetic-gaussian", 1.0, 1e-6, &[("rows", 300.0)]),
    )
    .await
    .expect("synthetic");
    let Some(Payload::Synthetic(rows)) = decoded(&synthetic).payload else {
        panic!("synthetic rows expected")
    };
    assert_eq!((rows.dim, rows.rows), (FEATURES as u32 + 1, 300));
    assert_eq!(rows.values.len(), 300 * (FEATURES + 1));
    assert!(rows.values.iter().all(|v| (-1.0..=1.0).contains(v)));

    // Miura et al.'s (2022) plain release draws its rows in f64 with no noise to mask them: it
    // is unproven as run, so this node (allow_unproven off) neither lists nor makes it, before
    // any charge.
    assert!(!kinds.iter().any(|k| k == "mvn-synthetic"));
    let plain = publish(&mut c, spec("mvn-synthetic", 0.0, 1e-6, &[("sigma", 0.5)]))
        .await
        .expect_err("unproven");
    assert_eq!(plain.code(), Code::FailedPrecondition, "{plain:?}");
    assert!(
        plain.message().contains("not proven"),
        "{}",
        plain.message()
    );
    // Bad specs are INVALID_ARGUMENT and cost nothing.
    for bad in [
        spec("telepathy", 1.0, 0.0, &[]),
        spec("histogram", 1.0, 0.0, &[("rows", 3.0)]),
        spec("moments-gaussian", 1.0, 0.0, &[]),
    ] {
        let e = publish(&mut c, bad).await.expect_err("invalid");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    }
    let b = budget(&mut c).await;
    assert_eq!(b.replace_one.expect("spend").releases, 3);
    assert!(
        (b.epsilon_spent - 2.5).abs() < 1e-9,
        "basic composition of 1 + 0.5 + 1 (the histogram has no RDP curve): {}",
        b.epsilon_spent
    );
    // Over the remaining budget (6 − 2.5): RESOURCE_EXHAUSTED, naming what remains.
    publish(&mut c, spec("histogram", 2.0, 0.0, &[]))
        .await
        .expect("2 more");
    let over = publish(&mut c, spec("histogram", 1.9, 0.0, &[]))
        .await
        .expect_err("over budget");
    assert_eq!(over.code(), Code::ResourceExhausted, "{over:?}");
    assert!(over.message().contains("remaining"), "{}", over.message());

    // A clean restart and a crash: the same bytes, the same spend.
    let spent = budget(&mut c).await.epsilon_spent;
    drop(c);
    assert!(node.terminate());
    let mut node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let id = decoded(&synthetic).release_id;
    let got = c
        .get_data(GetDataRequest {
            selector: Some(Selector::ReleaseId(id.clone())),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(got, synthetic, "the same bytes after a restart");
    let by_spec = c
        .get_data(GetDataRequest {
            selector: Some(Selector::Spec(spec("moments-gaussian", 1.0, 1e-6, &[]))),
        })
        .await
        .expect("get by spec")
        .into_inner();
    assert_eq!(by_spec, moments);
    assert_eq!(budget(&mut c).await.epsilon_spent, spent);
    node.kill();
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    assert_eq!(budget(&mut c).await.epsilon_spent, spent);
    let listed = c
        .list_data(ListDataRequest::default())
        .await
        .expect("list")
        .into_inner();
    assert_eq!(listed.releases.len(), 4);
    assert!(listed.releases.iter().all(|r| r.payload.is_none()));
    assert_eq!(listed.releases[3].release_id, decoded(&moments).release_id);
    let missing = c
        .get_data(GetDataRequest {
            selector: Some(Selector::ReleaseId("0".repeat(32))),
        })
        .await
        .expect_err("no such release");
    assert_eq!(missing.code(), Code::NotFound);
    drop(c);
    drop(node);

    // The operator's ledger lists each charge.
    let out = run(
        "dpagg-node",
        &["ledger", "--config", config.to_str().expect("utf8")],
        dir.path(),
    );
    assert_success(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("4 data release(s):"), "{text}");
    for kind in ["moments-gaussian", "histogram", "mvn-synthetic-gaussian"] {
        assert!(text.contains(kind), "{kind} in {text}");
    }
}

/// With `allow_unproven` the plain MVN release is offered, and still refused over the policy
/// with what it would cost (or because Theorem 3.2 gives no bound at all), before any charge.
#[tokio::test]
async fn the_plain_mvn_release_is_unproven_and_over_any_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 6.0, 2.0, true, 400);
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(&config, format!("{text}allow_unproven = true\n")).expect("write");
    let node = NodeProcess::start(&config);
    let mut c = client(&node).await;
    let kinds = data_kinds(&mut c).await;
    assert!(kinds.iter().any(|k| k == "mvn-synthetic"));
    let plain = publish(&mut c, spec("mvn-synthetic", 0.0, 1e-6, &[("sigma", 0.5)]))
        .await
        .expect_err("the plain MVN release is far over any cap at n = 400");
    assert_eq!(plain.code(), Code::FailedPrecondition, "{plain:?}");
    assert!(
        plain.message().contains("ε = ") && plain.message().contains("exceeds"),
        "{}",
        plain.message()
    );
    // With the default σ = 0.01 Theorem 3.2 gives no bound at all at n = 400: refused too.
    let unbounded = publish(&mut c, spec("mvn-synthetic", 0.0, 1e-6, &[]))
        .await
        .expect_err("no bound");
    assert_eq!(unbounded.code(), Code::FailedPrecondition, "{unbounded:?}");
    let b = budget(&mut c).await;
    assert_eq!(b.epsilon_spent, 0.0);
}
