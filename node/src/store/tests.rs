//! Tests of the store: the reservation path (reserve, train outside the lock, refund or keep,
//! commit), composition across restarts, paging, migrations and spec identities.

use super::codec::{decode_curve, encode_curve};
use super::learners::spec_key;
use super::*;
use dpagg_shared::LinearClassifier;
use dpagg_shared::privacy::accounting::RdpCurve;
use dpagg_shared::privacy::accounting::admission::{BudgetPolicy, Refusal};
use dpagg_shared::privacy::accounting::{dp_sgd_curve, dp_sgd_epsilon};
use dpagg_shared::privacy::guarantee::LOGISTIC_UNIT_BALL;
use dpagg_shared::privacy::guarantee::NeighbourRelation;
use dpagg_shared::privacy::mechanism::MechanismKind;
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismError};
use dpagg_shared::privacy::release::Release;
use dpagg_shared::privacy::release::ReleaseMetadata;

fn policy(epsilon_total: f64, delta_total: f64) -> BudgetPolicy {
    BudgetPolicy {
        epsilon_total,
        delta_total,
        max_epsilon_per_release: epsilon_total,
    }
}

fn spec(kind: MechanismKind, epsilon: f64) -> LearnerSpec {
    LearnerSpec::new(kind, epsilon, 1e-6, 0.01)
}

fn release(guarantee: PrivacyGuarantee) -> Release {
    Release {
        classifier: LinearClassifier::new(vec![0.5, -1.0]),
        metadata: ReleaseMetadata {
            mechanism: "test".into(),
            reference: "test".into(),
            parameters: Default::default(),
            guarantee,
            assumptions: LOGISTIC_UNIT_BALL,
            n: 10,
            dim: 2,
            seeded: true,
            proven: true,
            proof: dpagg_shared::privacy::guarantee::ProofCoverage::RealArithmetic,
        },
    }
}

fn dp_sgd_charge() -> Charge {
    let (q, sigma, steps, delta) = (0.01, 1.0, 1000, 1e-6);
    Charge {
        guarantee: PrivacyGuarantee {
            epsilon: dp_sgd_epsilon(q, sigma, steps, delta)
                .expect("valid")
                .epsilon,
            delta,
            relation: NeighbourRelation::AddRemoveOne,
        },
        rdp: Some(dp_sgd_curve(q, sigma, steps).expect("valid")),
    }
}

#[test]
fn rdp_curves_survive_the_database_and_compose_across_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = policy(100.0, 1e-3);
    let single;
    {
        let store = Store::open(dir.path()).expect("open");
        for i in 0..5 {
            let c = dp_sgd_charge();
            let g = c.guarantee;
            store
                .publish(
                    &spec(MechanismKind::DpSgd, 1.0 + f64::from(i)),
                    "fp",
                    &p,
                    c,
                    std::time::Duration::from_secs(3600),
                    || Ok(release(g)),
                )
                .expect("publish");
        }
        single = dp_sgd_charge().guarantee.epsilon;
    }
    let store = Store::open(dir.path()).expect("reopen");
    let s = store.spent().expect("spent");
    assert_eq!(s.add_remove_one.charges, 5);
    assert_eq!(s.add_remove_one.accounting.to_string(), "rdp");
    let long = dp_sgd_epsilon(0.01, 1.0, 5000, 5e-6)
        .expect("valid")
        .epsilon;
    assert!((s.add_remove_one.epsilon - long).abs() < 1e-9 * long);
    assert!(s.add_remove_one.epsilon < 5.0 * single);
    assert!((s.epsilon - 2.0 * long).abs() < 1e-9 * long);
}

fn replace_one(epsilon: f64) -> PrivacyGuarantee {
    PrivacyGuarantee {
        epsilon,
        delta: 0.0,
        relation: NeighbourRelation::ReplaceOne,
    }
}

fn pure(epsilon: f64) -> Charge {
    Charge {
        guarantee: replace_one(epsilon),
        rdp: None,
    }
}

const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn training_runs_outside_the_write_lock_with_its_charge_reserved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = std::sync::Arc::new(Store::open(dir.path()).expect("open"));
    let (started_tx, started_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let slow = {
        let store = store.clone();
        std::thread::spawn(move || {
            store.publish(
                &spec(MechanismKind::ObjectivePerturbation, 1.0),
                "fp",
                &policy(10.0, 0.0),
                pure(1.0),
                HOUR,
                || {
                    started_tx.send(()).expect("signal");
                    go_rx.recv().expect("go");
                    Ok(release(replace_one(1.0)))
                },
            )
        })
    };
    started_rx.recv().expect("training started");
    // While it trains: its charge is spent, another spec publishes, the same spec waits.
    assert_eq!(store.spent().expect("spent").epsilon, 1.0);
    let (_, new) = store
        .publish(
            &spec(MechanismKind::ObjectivePerturbation, 2.0),
            "fp",
            &policy(10.0, 0.0),
            pure(2.0),
            HOUR,
            || Ok(release(replace_one(2.0))),
        )
        .expect("not blocked by the training");
    assert!(new);
    let e = store
        .publish(
            &spec(MechanismKind::ObjectivePerturbation, 1.0),
            "fp",
            &policy(10.0, 0.0),
            pure(1.0),
            HOUR,
            || Ok(release(replace_one(1.0))),
        )
        .expect_err("in progress");
    assert!(matches!(e, PublishError::InProgress), "{e}");
    // A third publish must fit the budget *including* the reservation: 1 + 2 + 8 > 10.
    let e = store
        .publish(
            &spec(MechanismKind::ObjectivePerturbation, 8.0),
            "fp",
            &policy(10.0, 0.0),
            pure(8.0),
            HOUR,
            || Ok(release(replace_one(8.0))),
        )
        .expect_err("over budget");
    assert!(matches!(e, PublishError::Refused(_)), "{e}");
    go_tx.send(()).expect("go");
    let (_, new) = slow.join().expect("join").expect("published");
    assert!(new);
    assert_eq!(store.releases().expect("releases").len(), 2);
    assert_eq!(store.unfinished().expect("unfinished"), 0);
    assert_eq!(store.spent().expect("spent").epsilon, 3.0);
}

#[test]
fn a_failed_training_keeps_one_charge_until_the_operator_allows_a_retry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let s = spec(MechanismKind::ObjectivePerturbation, 1.0);
    let e = store
        .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
            Err(MechanismError::Stopped(
                dpagg_shared::util::stop::Stopped::DeadlinePassed,
            ))
        })
        .expect_err("failed");
    assert!(matches!(e, PublishError::FailedCharged(_)), "{e}");
    assert!(e.to_string().contains("the charge stands"), "{e}");
    assert_eq!(store.spent().expect("spent").epsilon, 1.0, "charged");
    // Asking again (a client's retry) is answered the same way and charges nothing.
    for _ in 0..3 {
        let again = store
            .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
                Ok(release(replace_one(1.0)))
            })
            .expect_err("the failure stands");
        assert!(
            matches!(again, PublishError::FailedBefore { ref reason, .. } if reason == "stopped"),
            "{again}"
        );
    }
    assert_eq!(store.spent().expect("spent").epsilon, 1.0, "charged once");
    let failures = store.failures().expect("failures");
    assert_eq!(failures.len(), 1);
    // The operator allows a retry: the spec is trained, and charged, again.
    assert!(store.allow_retry(&failures[0].0).expect("allow"));
    assert!(!store.allow_retry(&failures[0].0).expect("only once"));
    store
        .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
            Ok(release(replace_one(1.0)))
        })
        .expect("asked again");
    assert_eq!(store.spent().expect("spent").epsilon, 2.0, "charged again");
    let reopened = Store::open(dir.path()).expect("reopen");
    assert_eq!(reopened.spent().expect("spent").epsilon, 2.0, "durable");
    assert_eq!(reopened.unfinished().expect("unfinished"), 1);
}

#[test]
fn a_refusal_from_public_quantities_is_not_charged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let s = spec(MechanismKind::ObjectivePerturbation, 1.0);
    let e = store
        .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
            Err(MechanismError::EmptyData)
        })
        .expect_err("refused");
    assert!(
        matches!(e, PublishError::Mechanism(MechanismError::EmptyData)),
        "{e}"
    );
    assert_eq!(store.spent().expect("spent").epsilon, 0.0);
    assert_eq!(store.unfinished().expect("unfinished"), 0);
}

#[test]
fn a_reservation_left_by_a_dead_process_keeps_its_charge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = spec(MechanismKind::ObjectivePerturbation, 1.0);
    {
        let store = Store::open(dir.path()).expect("open");
        // As if the process died mid-training: reserve, then never finish.
        store
            .reserve(&spec_key(&s, "fp"), &policy(10.0, 0.0), &pure(1.0), HOUR)
            .expect("reserved");
    }
    let store = Store::open(dir.path()).expect("restart");
    assert_eq!(
        store.spent().expect("spent").epsilon,
        1.0,
        "a restart resets nothing"
    );
    let e = store
        .publish(&s, "fp", &policy(10.0, 0.0), pure(1.0), HOUR, || {
            Ok(release(replace_one(1.0)))
        })
        .expect_err("still fresh");
    assert!(matches!(e, PublishError::InProgress));
    store
        .publish(
            &s,
            "fp",
            &policy(10.0, 0.0),
            pure(1.0),
            Duration::ZERO,
            || Ok(release(replace_one(1.0))),
        )
        .expect("stale: taken over");
    assert_eq!(store.spent().expect("spent").epsilon, 2.0);
}

#[test]
fn pages_cover_every_release_once_newest_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let g = PrivacyGuarantee {
        epsilon: 0.1,
        delta: 0.0,
        relation: NeighbourRelation::ReplaceOne,
    };
    for i in 0..7 {
        store
            .publish(
                &spec(MechanismKind::ObjectivePerturbation, 0.1 + f64::from(i)),
                "fp",
                &policy(100.0, 0.0),
                Charge {
                    guarantee: g,
                    rdp: None,
                },
                std::time::Duration::from_secs(3600),
                || Ok(release(g)),
            )
            .expect("publish");
    }
    let all: Vec<String> = store
        .releases()
        .expect("all")
        .into_iter()
        .map(|r| r.release_id)
        .collect();
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let (page, next) = store.page(after, 3).expect("page");
        assert!(page.len() <= 3);
        paged.extend(page.into_iter().map(|r| r.release_id));
        match next {
            Some(k) => after = Some(PageKey::parse(&k.token()).expect("round trip")),
            None => break,
        }
    }
    assert_eq!(paged, all, "every release once, in the same order");
    assert_eq!(
        store.latest().expect("latest").map(|r| r.release_id),
        all.first().cloned()
    );
    let (exact, next) = store.page(None, 7).expect("one page");
    assert_eq!((exact.len(), next), (7, None), "no empty last page");
    assert_eq!(PageKey::parse("x.1"), None);
    assert_eq!(PageKey::parse("12"), None);
}

#[test]
fn the_composition_including_the_new_charge_must_fit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    // δ_total 2e-6: one add/remove-one charge of δ = 1e-6 converts to (1 + e^ε)·1e-6 > 2e-6
    // under replace-one, so it must be refused although 1e-6 < 2e-6.
    let c = dp_sgd_charge();
    let g = c.guarantee;
    let e = store
        .publish(
            &spec(MechanismKind::DpSgd, 1.0),
            "fp",
            &policy(100.0, 2e-6),
            c,
            std::time::Duration::from_secs(3600),
            || Ok(release(g)),
        )
        .expect_err("over the δ total after conversion");
    assert!(
        matches!(e, PublishError::Refused(Refusal::Exhausted { .. })),
        "{e}"
    );
    assert_eq!(store.spent().expect("spent").charges, 0);
}

#[test]
fn ledgers_without_the_rdp_column_are_migrated() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let c = Connection::open(dir.path().join("node.sqlite")).expect("sqlite");
        c.execute_batch(
            "CREATE TABLE releases (release_id TEXT PRIMARY KEY, created_unix_ms INTEGER NOT NULL, spec_key TEXT NOT NULL UNIQUE, spec_json TEXT NOT NULL, schema_fingerprint TEXT NOT NULL, weights BLOB NOT NULL, metadata_json TEXT NOT NULL);
             CREATE TABLE ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, release_id TEXT NOT NULL REFERENCES releases(release_id), epsilon REAL NOT NULL, delta REAL NOT NULL, relation TEXT NOT NULL, recorded_unix_ms INTEGER NOT NULL);
             INSERT INTO releases VALUES ('r1', 0, 'k', '{\"mechanism\":\"objective-perturbation\",\"epsilon\":1.0,\"delta\":0.0,\"lambda\":0.01}', 'fp', x'', '{}');
             INSERT INTO ledger (release_id, epsilon, delta, relation, recorded_unix_ms) VALUES ('r1', 1.0, 0.0, 'replace-one', 0);",
        )
        .expect("old schema");
    }
    let store = Store::open(dir.path()).expect("migrates");
    let s = store.spent().expect("spent");
    assert_eq!((s.epsilon, s.charges), (1.0, 1));
    assert_eq!(s.replace_one.accounting.to_string(), "basic");
}

#[test]
fn options_are_part_of_a_spec_identity() {
    let mut a = spec(MechanismKind::DpSgd, 1.0);
    let plain = spec_key(&a, "fp");
    assert_eq!(
        plain,
        format!(
            "fp:dp-sgd:{:016x}:{:016x}:{:016x}",
            1.0f64.to_bits(),
            1e-6f64.to_bits(),
            0.01f64.to_bits()
        ),
        "a spec without options keeps the key it had before options existed"
    );
    a.options.insert("steps".into(), 500.0);
    assert_ne!(spec_key(&a, "fp"), plain);
    let mut auto = spec(MechanismKind::DpSgd, 1.0);
    auto.l2 = Lambda::Auto;
    let key = spec_key(&auto, "fp");
    assert!(key.ends_with(":auto"), "{key}");
    assert_ne!(key, plain, "auto is not any fixed λ");
}

#[test]
fn curves_with_infinite_orders_round_trip() {
    let c = RdpCurve::new(vec![1.5, 2.0, 64.0], vec![0.1, 0.2, f64::INFINITY]).expect("valid");
    let back = decode_curve(&encode_curve(&c)).expect("decodes");
    assert_eq!(back, c);
}

/// A data release — e.g. the per-class moments a pooled agreed map is derived from — reads its
/// rows only once its charge is durably in the ledger: another connection to the same database
/// sees the spend from inside `make`, and a refused charge never reaches `make`.
#[test]
fn a_data_release_is_charged_before_its_rows_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path()).expect("open");
    let (stored, new) = store
        .publish_data(
            "moments-gaussian:fp:1",
            "moments-gaussian",
            &policy(2.0, 1e-5),
            pure(1.5),
            HOUR,
            |_| {
                // Another process's view of the ledger at the moment the rows would be read.
                let other = Store::open(dir.path()).expect("a second connection");
                assert_eq!(other.spent().expect("spent").epsilon, 1.5);
                Ok((b"payload".to_vec(), 1))
            },
        )
        .expect("published");
    assert!(new);
    assert_eq!(stored.guarantee.epsilon, 1.5);
    let mut read = false;
    let e = store
        .publish_data(
            "moments-gaussian:fp:2",
            "moments-gaussian",
            &policy(2.0, 1e-5),
            pure(1.0),
            HOUR,
            |_| {
                read = true;
                Ok((Vec::new(), 2))
            },
        )
        .expect_err("over the total");
    assert!(matches!(e, PublishError::Refused(_)), "{e}");
    assert!(!read, "a refused charge never reads the rows");
    assert_eq!(store.spent().expect("spent").epsilon, 1.5);
}
