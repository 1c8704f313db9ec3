//! Organisations that know each other, with real processes: mutual TLS refuses
//! strangers at the handshake (another CA, an expired certificate), a certificate that names
//! another organisation excludes the node, the write allow-list refuses a client without touching
//! the ledger, a tampered learner fails its signature, and `verify` accepts an untouched report
//! and rejects a modified one.

use dpagg_proto::signature::SigningKey;
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_server::OrganisationNodeServer;
use dpagg_tests::{
    FakeNode, NodeProcess, assert_success, federation, run, tls_node_config, write_own_data,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// `dpagg-node health` against `node` with the identity folder `identity`.
fn health(node: &NodeProcess, identity: &Path) -> std::process::Output {
    run(
        "dpagg-node",
        &[
            "health",
            "--addr",
            &node.addr,
            "--identity",
            identity.to_str().expect("utf8"),
            "--timeout",
            "5",
        ],
        Path::new("."),
    )
}

/// Writes the aggregator's own rows (Diabetes rows 400…) and a TLS aggregator config.
fn aggregator_config(dir: &Path, identity: &Path, nodes: &[String], extra: &str) -> PathBuf {
    write_own_data(dir);
    let list: Vec<String> = nodes.iter().map(|n| format!("{n:?}")).collect();
    let path = dir.join("aggregator.toml");
    std::fs::write(
        &path,
        format!(
            "identity = {:?}\ndata = \"own.csv\"\nschema = \"agg.schema.toml\"\nout = \"report\"\nnodes = [{}]\ntimeout_ms = 5000\nretries = 0\nlambda = 0.01\n{extra}",
            identity.to_str().expect("utf8"),
            list.join(", ")
        ),
    )
    .expect("write");
    path
}

fn run_aggregator(dir: &Path, config: &Path) -> std::process::Output {
    run(
        "dpagg-aggregator",
        &["run", "--config", config.to_str().expect("utf8")],
        dir,
    )
}

fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report/report.json")).expect("report.json");
    serde_json::from_str(&text).expect("json")
}

fn node_line(report: &Value, i: usize) -> &Value {
    &report["nodes"][i]
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn strangers_are_refused_at_the_handshake() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = federation(d, "fed", "org-1,aggregator");
    let other = federation(d, "other", "aggregator");
    let log = d.join("node.log");
    let node = NodeProcess::start_logging_to(
        &tls_node_config(d, "org-1", &fed.join("org-1"), false, ""),
        &log,
    );

    assert_success(&health(&node, &fed.join("aggregator")));

    let out = health(&node, &other.join("aggregator"));
    assert!(!out.status.success(), "another CA's certificate is refused");

    assert_success(&run(
        "dpagg-node",
        &[
            "certs",
            "issue",
            "--ca",
            fed.join("ca").to_str().expect("utf8"),
            "--out",
            d.join("expired").to_str().expect("utf8"),
            "--org",
            "aggregator",
            "--not-before",
            "2020-01-01T00:00:00Z",
            "--days",
            "1",
        ],
        d,
    ));
    let out = health(&node, &d.join("expired/aggregator"));
    assert!(!out.status.success(), "an expired certificate is refused");

    // Plain text to a TLS node gets nowhere either.
    let out = run(
        "dpagg-node",
        &[
            "health",
            "--addr",
            &node.addr,
            "--insecure",
            "--timeout",
            "3",
        ],
        d,
    );
    assert!(!out.status.success(), "plain text is refused");
    // Each refusal left an audit line with the peer's address and the reason.
    let logged = std::fs::read_to_string(&log).expect("log");
    let refusals: Vec<&str> = logged
        .lines()
        .filter(|l| l.contains("refused a TLS handshake"))
        .collect();
    // Three strangers (another CA, an expired certificate, plain text), each possibly retried.
    assert!(refusals.len() >= 3, "{logged}");
    assert!(
        refusals.iter().all(|l| l.contains("peer=127.0.0.1:")),
        "{logged}"
    );
    assert!(refusals.iter().any(|l| l.contains("expired")), "{logged}");
    let reasons: std::collections::BTreeSet<&str> = refusals
        .iter()
        .filter_map(|l| l.split("reason=").nth(1))
        .map(|r| r.split(" suppressed").next().unwrap_or(r))
        .collect();
    assert!(
        reasons.len() >= 3,
        "one reason per kind of stranger: {logged}"
    );
}

#[test]
fn a_node_cannot_serve_under_another_organisations_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = federation(d, "fed", "org-1,org-2");
    let config = tls_node_config(d, "org-1", &fed.join("org-2"), false, "");
    let out = run(
        "dpagg-node",
        &["serve", "--config", config.to_str().expect("utf8")],
        d,
    );
    assert!(!out.status.success());
    let e = stderr(&out);
    assert!(e.contains("\"org-2\"") && e.contains("\"org-1\""), "{e}");
}

/// A fake node that says it is `claims` and serves `learner`.
fn impostor(claims: &str, learner: pb::PrivateLearner) -> FakeNode {
    FakeNode {
        id: claims.to_owned(),
        fingerprint: learner
            .metadata
            .as_ref()
            .map(|m| m.schema_fingerprint.clone())
            .unwrap_or_default(),
        learner,
        delay: std::time::Duration::ZERO,
    }
}

/// Serves `impostor` with mutual TLS as the organisation of the identity folder `identity` on an
/// ephemeral port, in a thread of its own, until the sender is dropped.
fn serve_impostor(
    impostor: FakeNode,
    identity: &Path,
) -> (String, tokio::sync::oneshot::Sender<()>) {
    let read = |f: &str| std::fs::read(identity.join(f)).expect("identity file");
    let tls = tonic::transport::ServerTlsConfig::new()
        .identity(tonic::transport::Identity::from_pem(
            read("cert.pem"),
            read("key.pem"),
        ))
        .client_ca_root(tonic::transport::Certificate::from_pem(read("ca.pem")));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("https://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            tonic::transport::Server::builder()
                .tls_config(tls)
                .expect("tls")
                .add_service(OrganisationNodeServer::new(impostor))
                .serve_with_incoming_shutdown(
                    tonic::transport::server::TcpIncoming::from(listener),
                    async {
                        let _ = rx.await;
                    },
                )
                .await
                .expect("serve");
        });
    });
    (url, tx)
}

/// The learner org-1's real node serves (fetched through a TLS aggregator run's report).
fn real_learner(report: &Value) -> pb::PrivateLearner {
    use prost::Message;
    let hex = node_line(report, 0)["release_protobuf"]
        .as_str()
        .expect("release_protobuf");
    let bytes = dpagg_proto::signature::unhex(hex).expect("hex");
    pb::PrivateLearner::decode(bytes.as_slice()).expect("protobuf")
}

#[test]
fn identities_signatures_and_reports_are_checked_end_to_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = federation(d, "fed", "org-1,org-2,org-3,aggregator");
    let keys = fed.join("public-keys");
    // org-1 accepts publish requests from the aggregator only.
    let node = NodeProcess::start(&tls_node_config(
        d,
        "org-1",
        &fed.join("org-1"),
        true,
        "write = [\"aggregator\"]",
    ));
    let ledger = || {
        let config = d.join("org-1.toml");
        let out = run(
            "dpagg-node",
            &["ledger", "--config", config.to_str().expect("utf8")],
            d,
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    // A client that is not on the write list: PERMISSION_DENIED naming it, and no charge.
    let as_org2 = d.join("as-org-2");
    std::fs::create_dir_all(&as_org2).expect("mkdir");
    let config = aggregator_config(
        &as_org2,
        &fed.join("org-2"),
        &[node.https_url()],
        "publish = true\n",
    );
    let out = run_aggregator(&as_org2, &config);
    assert!(!out.status.success(), "no learner, so the run fails");
    let e = stderr(&out);
    assert!(
        e.contains("PermissionDenied") && e.contains("dpagg://org/org-2"),
        "{e}"
    );
    assert!(
        !e.contains("aggregator may"),
        "the list is not revealed: {e}"
    );
    assert!(
        !d.join("org-1-state/node.sqlite").exists()
            || (ledger().contains("0 release(s)") && ledger().contains("remaining 5.000000")),
        "the ledger is unchanged: {}",
        ledger()
    );

    // The aggregator may publish: a signed learner, a signed report that verifies.
    let agg = d.join("agg");
    std::fs::create_dir_all(&agg).expect("mkdir");
    let config = aggregator_config(
        &agg,
        &fed.join("aggregator"),
        &[node.https_url()],
        "publish = true\n",
    );
    let out = run_aggregator(&agg, &config);
    assert_success(&out);
    let r = report(&agg);
    assert_eq!(node_line(&r, 0)["status"], "included", "{r}");
    assert_eq!(node_line(&r, 0)["certificate_identity"], "org-1");
    assert_eq!(node_line(&r, 0)["signature"]["organisation_id"], "org-1");
    assert_eq!(r["signed_by"], "aggregator");
    assert!(ledger().contains("1 release(s)"), "{}", ledger());
    let report_path = agg.join("report/report.json");
    let verify_as = |path: &Path, signer: &[&str]| {
        let mut args = vec![
            "verify",
            path.to_str().expect("utf8"),
            "--signing-keys",
            keys.to_str().expect("utf8"),
        ];
        args.extend_from_slice(signer);
        run("dpagg-aggregator", &args, d)
    };
    let verify = |path: &Path| verify_as(path, &[]);
    let out = verify(&report_path);
    assert_success(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("valid: 1 signed release(s)"));

    // A report signed by another member is valid as a signature, but not as the aggregator's:
    // `verify --signer` tells them apart.
    let config = aggregator_config(&as_org2, &fed.join("org-2"), &[node.https_url()], "");
    assert_success(&run_aggregator(&as_org2, &config));
    let by_org_2 = as_org2.join("report/report.json");
    assert_success(&verify(&by_org_2));
    let out = verify_as(&by_org_2, &["--signer", "aggregator"]);
    assert!(
        !out.status.success(),
        "org-2's report is not the aggregator's"
    );
    assert!(
        stderr(&out).contains("signed by \"org-2\", not by \"aggregator\""),
        "{}",
        stderr(&out)
    );
    assert_success(&verify_as(&report_path, &["--signer", "aggregator"]));

    // Modified reports are rejected: a number of the report, or the release bytes.
    let mut changed = r.clone();
    changed["final_model"]["test_accuracy"] = Value::from(0.99);
    let modified = d.join("modified.json");
    std::fs::write(&modified, serde_json::to_vec(&changed).expect("json")).expect("write");
    let out = verify(&modified);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("modified"), "{}", stderr(&out));
    let mut learner = real_learner(&r);
    learner.weights[0] *= -10.0;
    let mut changed = r.clone();
    changed["nodes"][0]["release_protobuf"] = Value::from(dpagg_proto::signature::hex(
        &prost::Message::encode_to_vec(&learner),
    ));
    std::fs::write(&modified, serde_json::to_vec(&changed).expect("json")).expect("write");
    let out = verify(&modified);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("signature does not match"),
        "{}",
        stderr(&out)
    );

    // A relay that holds org-1's TLS identity but alters the weights: the signature fails.
    let (relay, _stop_relay) = serve_impostor(impostor("org-1", learner), &fed.join("org-1"));
    // org-2's valid certificate on a node that claims to be org-1, replaying org-1's genuine
    // signed release: excluded for its identity.
    let (claims_org_1, _stop_impostor) =
        serve_impostor(impostor("org-1", real_learner(&r)), &fed.join("org-2"));
    // org-3's own certificate and its own name, but org-1's release: the signature is not
    // org-3's.
    let (replayer, _stop_replayer) =
        serve_impostor(impostor("org-3", real_learner(&r)), &fed.join("org-3"));
    let agg2 = d.join("agg2");
    std::fs::create_dir_all(&agg2).expect("mkdir");
    let config = aggregator_config(
        &agg2,
        &fed.join("aggregator"),
        &[relay, claims_org_1, replayer, node.https_url()],
        "",
    );
    let out = run_aggregator(&agg2, &config);
    assert_success(&out);
    let r = report(&agg2);
    let code = |i: usize| {
        node_line(&r, i)["exclusion"]["code"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(
        code(0).as_deref(),
        Some("signature"),
        "{}",
        node_line(&r, 0)
    );
    assert_eq!(code(1).as_deref(), Some("identity"), "{}", node_line(&r, 1));
    assert_eq!(
        code(2).as_deref(),
        Some("signature"),
        "{}",
        node_line(&r, 2)
    );
    assert_eq!(
        node_line(&r, 3)["status"],
        "included",
        "the real org-1 is kept"
    );
    assert_eq!(r["included"], 1);
}

#[test]
fn signing_keys_sign_what_the_node_serves() {
    // The signing key certs writes is the one the proto crate reads (no format drift).
    let dir = tempfile::tempdir().expect("tempdir");
    let fed = federation(dir.path(), "fed", "org-1");
    let key = SigningKey::load(&fed.join("org-1/signing.key")).expect("signing key");
    let public = std::fs::read_to_string(fed.join("public-keys/org-1.pub")).expect("pub");
    assert_eq!(public.trim(), dpagg_proto::signature::hex(key.public_key()));
}

#[test]
fn plain_text_and_tls_endpoints_do_not_mix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = federation(d, "fed", "aggregator");
    let config = aggregator_config(
        d,
        &fed.join("aggregator"),
        &["http://127.0.0.1:1".into()],
        "",
    );
    let out = run_aggregator(d, &config);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("https://"), "{}", stderr(&out));
    let out = run(
        "dpagg-aggregator",
        &[
            "run",
            "--insecure",
            "--data",
            "own.csv",
            "--schema",
            "agg.schema.toml",
            "--node",
            "https://127.0.0.1:1",
        ],
        d,
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("without TLS"),
        "https:// is never spoken to in plain text: {}",
        stderr(&out)
    );
}

/// `run --train-on synthetic` over mutual TLS: each node's synthetic rows are signed over the
/// bytes served, checked, pooled with the aggregator's rows and recorded in the signed report;
/// `verify` checks them too, and a changed byte of a synthetic release fails it.
#[test]
fn synthetic_rows_are_signed_pooled_and_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = federation(d, "fed", "org-1,org-2,aggregator");
    let keys = fed.join("public-keys");
    let nodes: Vec<NodeProcess> = ["org-1", "org-2"]
        .iter()
        .map(|org| NodeProcess::start(&tls_node_config(d, org, &fed.join(org), true, "")))
        .collect();
    let urls: Vec<String> = nodes.iter().map(NodeProcess::https_url).collect();
    let agg = d.join("agg");
    std::fs::create_dir_all(&agg).expect("mkdir");
    let config = aggregator_config(
        &agg,
        &fed.join("aggregator"),
        &urls,
        "publish = true\ntrain_on = \"synthetic\"\nsynthetic_rows = 200\n",
    );
    let out = run_aggregator(&agg, &config);
    assert_success(&out);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("synthetic rows + own rows"), "{table}");
    assert!(
        table.contains("the pooled model is") && table.contains("points from the local baseline"),
        "{table}"
    );
    let r = report(&agg);
    let syn = &r["synthetic"];
    assert_eq!(syn["synthetic_rows"], 400, "{syn}");
    for (i, org) in ["org-1", "org-2"].iter().enumerate() {
        let line = &syn["nodes"][i];
        assert_eq!(line["status"], "included", "{line}");
        assert_eq!(line["organisation_id"], *org);
        assert_eq!(line["signature"]["organisation_id"], *org);
        assert_eq!(line["epsilon"], 1.0);
    }
    let accuracy = syn["accuracy"].as_f64().expect("accuracy");
    assert!((0.5..=1.0).contains(&accuracy), "{accuracy}");
    let verify = |path: &Path| {
        run(
            "dpagg-aggregator",
            &[
                "verify",
                path.to_str().expect("utf8"),
                "--signing-keys",
                keys.to_str().expect("utf8"),
            ],
            d,
        )
    };
    let report_path = agg.join("report/report.json");
    let out = verify(&report_path);
    assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("valid: 4 signed release(s)"),
        "two learners and two synthetic releases: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // One changed byte of a synthetic release's body fails its signature.
    let mut tampered = r.clone();
    let body = tampered["synthetic"]["nodes"][0]["release_body"]
        .as_str()
        .expect("hex")
        .to_owned();
    let flipped = if body.ends_with('0') { '1' } else { '0' };
    tampered["synthetic"]["nodes"][0]["release_body"] =
        Value::String(format!("{}{flipped}", &body[..body.len() - 1]));
    let path = agg.join("tampered.json");
    std::fs::write(&path, tampered.to_string()).expect("write");
    let out = verify(&path);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("synthetic.nodes[0]"),
        "{}",
        stderr(&out)
    );
    // Each node's ledger holds the learner and the synthetic release.
    let out = run(
        "dpagg-node",
        &[
            "ledger",
            "--config",
            d.join("org-1.toml").to_str().expect("utf8"),
        ],
        d,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1 release(s)") && text.contains("1 data release(s)"),
        "{text}"
    );
}

/// Release squatting: a member re-signs another organisation's learner with its own key and is
/// listed first — with the genuine release id and content, or with a new id and its weights
/// nudged by one part in 10^15. Either way the two are near-copies: one expert, kept as the
/// smaller organisation id's (org-1's, whatever the endpoints' order), the copy named in the
/// report, the genuine learner never excluded, and the report still verifies.
#[test]
fn a_learner_re_signed_by_another_organisation_counts_once_exact_or_nudged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fed = federation(d, "fed", "org-1,org-2,org-3,aggregator");
    let mut nodes = Vec::new();
    for org in ["org-1", "org-2"] {
        let config = tls_node_config(d, org, &fed.join(org), false, "");
        assert_success(&dpagg_tests::publish_with_cli(
            &config,
            &["--epsilon", "1", "--lambda", "0.01"],
        ));
        nodes.push(NodeProcess::start(&config));
    }
    // A first run reads org-1's genuine signed release.
    let first = d.join("first");
    std::fs::create_dir_all(&first).expect("mkdir");
    let config = aggregator_config(&first, &fed.join("aggregator"), &[nodes[0].https_url()], "");
    assert_success(&run_aggregator(&first, &config));
    let genuine = real_learner(&report(&first));
    let key = SigningKey::load(&fed.join("org-3/signing.key")).expect("org-3's key");
    for (case, nudge) in [("exact", false), ("nudged", true)] {
        // org-3 re-signs it under its own name and key.
        let mut squat = genuine.clone();
        if nudge {
            squat.weights[0] *= 1.0 + 1e-15;
            squat.weights[1] += 1e-15;
            squat.metadata.as_mut().expect("metadata").release_id =
                "0123456789abcdef0123456789abcdef".into();
        }
        squat.signature = Some(key.sign("org-3", &squat).expect("sign"));
        let (squatter, _stop) = serve_impostor(impostor("org-3", squat), &fed.join("org-3"));
        let agg = d.join(format!("agg-{case}"));
        std::fs::create_dir_all(&agg).expect("mkdir");
        let config = aggregator_config(
            &agg,
            &fed.join("aggregator"),
            &[squatter, nodes[0].https_url(), nodes[1].https_url()],
            "",
        );
        assert_success(&run_aggregator(&agg, &config));
        let r = report(&agg);
        let copy = node_line(&r, 0);
        assert_eq!(copy["exclusion"]["code"], "near_copy", "{case}: {copy}");
        let reason = copy["exclusion"]["reason"].as_str().expect("reason");
        assert!(reason.contains("`org-1`"), "{case}: {reason}");
        for i in [1, 2] {
            assert_eq!(node_line(&r, i)["status"], "included", "{case}");
        }
        assert_eq!(r["included"], 2, "{case}");
        verify_report(&agg, &fed, d);
    }
}

/// `dpagg-aggregator verify` accepts the report in `agg` against the federation's keys.
fn verify_report(agg: &Path, fed: &Path, d: &Path) {
    let out = run(
        "dpagg-aggregator",
        &[
            "verify",
            agg.join("report/report.json").to_str().expect("utf8"),
            "--signing-keys",
            fed.join("public-keys").to_str().expect("utf8"),
        ],
        d,
    );
    assert_success(&out);
}
