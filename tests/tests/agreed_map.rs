//! The agreed map with real processes: `dpagg-aggregator map` writes it, `dpagg-node publish
//! --map` trains under it and charges exactly the spec's ε, a node serves that release to a
//! request carrying the same map, a map made for another schema is refused before any charge,
//! and a hostile map (every row sent to one point) leaves the release's stated guarantee and
//! the unit-ball bound as they are.

use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_shared::data::agreed_map::AgreedMap;
use dpagg_shared::data::normalise::Subspace;
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismKind};
use dpagg_tests::{
    NodeProcess, assert_one_line_error, assert_success, budget, node_config, publish_with_cli, run,
};
use std::path::Path;

/// `dpagg-aggregator map` on the node's own file (a stand-in for the aggregator's rows).
fn make_map(dir: &Path, data: &str) -> AgreedMap {
    let out = run(
        "dpagg-aggregator",
        &[
            "map",
            "--data",
            data,
            "--schema",
            "diabetes.schema.toml",
            "--map",
            "map.toml",
            "--in-the-clear",
        ],
        dir,
    );
    assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("wrote the agreed map to map.toml (4 directions over 8 features)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    AgreedMap::load(&dir.join("map.toml")).expect("a map file")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_learner_under_an_agreed_map_is_charged_once_and_served_for_that_map() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-a", 5.0, 2.0, false, 120);
    let map = make_map(dir.path(), "org-a.csv");

    // A map made for another schema: refused before any charge, one line naming the schemas.
    let mut other = map.clone();
    other.schema = "0".repeat(64);
    std::fs::write(dir.path().join("other.toml"), other.to_toml()).expect("write");
    let refused = publish_with_cli(&config, &["--epsilon", "1", "--map", "other.toml"]);
    assert_one_line_error(
        &refused,
        &[
            "the map was made for schema 0000000000000000",
            "nothing was charged",
        ],
    );

    // Under the map: charged ε = 1 once; the same publish again charges nothing.
    assert_success(&publish_with_cli(
        &config,
        &["--epsilon", "1", "--map", "map.toml"],
    ));
    let again = publish_with_cli(&config, &["--epsilon", "1", "--map", "map.toml"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("already published"));
    // A hostile map: every row the same point. Its release states the same guarantee.
    let mut one_point = map.clone();
    one_point.subspace = Some(Subspace {
        directions: vec![vec![0.0; 8]; 4],
    });
    std::fs::write(dir.path().join("one.toml"), one_point.to_toml()).expect("write");
    assert_success(&publish_with_cli(
        &config,
        &["--epsilon", "1", "--map", "one.toml"],
    ));

    let node = NodeProcess::start(&config);
    let mut c = OrganisationNodeClient::connect(node.url())
        .await
        .expect("connect");
    let b = budget(&mut c).await;
    assert!((b.epsilon_spent - 2.0).abs() < 1e-12, "{b:?}");
    for (m, name) in [(&map, "honest"), (&one_point, "one point")] {
        let spec = LearnerSpec {
            map: Some(Box::new(m.clone())),
            ..LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, Lambda::Auto)
        };
        let got = c
            .get_learner(pb::GetLearnerRequest {
                selector: Some(pb::get_learner_request::Selector::Spec((&spec).into())),
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .into_inner();
        let meta = got.metadata.expect("metadata");
        assert_eq!((meta.epsilon, meta.delta), (1.0, 0.0), "{name}");
        assert!(meta.max_row_norm <= 1.0, "{name}");
        assert_eq!(meta.dim, 5, "{name}: 4 components and the intercept");
        assert_eq!(got.weights.len(), 5, "{name}");
        assert_eq!(meta.spec.and_then(|s| s.map), Some(m.into()), "{name}");
    }
    // The same spec without the map is another release, which this node never made.
    let plain = LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, Lambda::Auto);
    let e = c
        .get_learner(pb::GetLearnerRequest {
            selector: Some(pb::get_learner_request::Selector::Spec((&plain).into())),
        })
        .await
        .expect_err("no release without the map");
    assert_eq!(e.code(), tonic::Code::NotFound);
    // A request carrying a map for another schema is an invalid argument, not a miss.
    let wrong = LearnerSpec {
        map: Some(Box::new(other)),
        ..plain
    };
    let e = c
        .get_learner(pb::GetLearnerRequest {
            selector: Some(pb::get_learner_request::Selector::Spec((&wrong).into())),
        })
        .await
        .expect_err("another schema's map");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);
}
