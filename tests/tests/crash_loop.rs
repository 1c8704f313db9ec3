//! A kill -9 loop: a real `dpagg-node serve` is SIGKILLed 100 times, each time in the
//! middle of a burst of concurrent `PublishLearner` calls, and restarted on the same state folder.
//! After every restart:
//!
//! - every release a client was told had succeeded (an OK answer) is served again, with the same
//!   bytes it was answered with;
//! - no release id is ever served with different bytes than before, and none is listed twice;
//! - the ledger has exactly one stored charge per stored release (no release without its charge),
//!   with the ε the release states; the only other charges are those of trainings the kill cut
//!   short (the `unfinished` table: reserved before training, kept for good), and none of them
//!   names a served release;
//! - the spent budget the node reports equals the sum of all stored charges (read independently,
//!   from the SQLite tables and from the releases' metadata): every release here is replace-one,
//!   pure ε, so the node composes them by basic composition.
//!
//! A publish cut short by the kill may or may not have been committed; only OK answers promise
//! anything, and a committed release nobody saw must still carry its charge.

use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_proto::v1::{
    Budget, DescribeRequest, GetLearnerRequest, LearnerSpec, ListLearnersRequest,
    NeighbourRelation, PrivateLearner, PublishLearnerRequest, get_learner_request::Selector,
};
use dpagg_tests::{NodeProcess, add_access, assert_success, node_config, run};
use prost::Message;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

/// Kills (and restarts) of the node.
const KILLS: usize = 100;
/// Concurrent publishing clients per burst, each on its own connection.
const CLIENTS: usize = 8;
/// At most this many publishes are asked for per burst (bounds the ledger's growth).
const PER_BURST: usize = 64;

/// The k-th spec of the whole run: distinct for every k (λ differs), so each is a new release
/// with a new charge; ε varies so that a lost or doubled charge changes the sum.
fn spec(k: usize) -> LearnerSpec {
    LearnerSpec {
        mechanism: "objective-perturbation".into(),
        epsilon: 0.001 * (1 + k % 10) as f64,
        delta: 0.0,
        lambda: 0.01 + k as f64 * 1e-6,
        options: Default::default(),
        map: None,
        lambda_auto: false,
    }
}

/// The delay before the i-th kill: deterministic, spread over 0–40 ms.
fn kill_delay(i: usize) -> Duration {
    Duration::from_millis(((i * 37 + 11) % 41) as u64)
}

async fn client(node: &NodeProcess) -> OrganisationNodeClient<Channel> {
    let channel = Endpoint::from_shared(node.url())
        .expect("url")
        .timeout(Duration::from_secs(60))
        .connect()
        .await
        .expect("connect");
    // Thousands of releases accumulate over the loop; ListLearners pages through them.
    OrganisationNodeClient::new(channel)
}

fn release_id(learner: &PrivateLearner) -> String {
    learner
        .metadata
        .as_ref()
        .expect("metadata")
        .release_id
        .clone()
}

/// What the clients of one burst saw.
#[derive(Default)]
struct Burst {
    /// Releases answered OK, as answered.
    ok: Vec<PrivateLearner>,
    /// Failed calls by status code.
    failed: BTreeMap<String, usize>,
}

/// Publishes distinct specs from `CLIENTS` connections until the node dies or `PER_BURST`
/// publishes were asked for; SIGKILLs the node after `delay`; returns what the clients saw.
async fn burst(node: &mut NodeProcess, next: &Arc<AtomicUsize>, delay: Duration) -> Burst {
    let first = next.load(Ordering::SeqCst);
    let mut tasks = Vec::new();
    for _ in 0..CLIENTS {
        let mut c = client(node).await;
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            let mut seen = Burst::default();
            loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                if k >= first + PER_BURST {
                    return seen;
                }
                let answer = c
                    .publish_learner(PublishLearnerRequest {
                        spec: Some(spec(k)),
                    })
                    .await;
                match answer {
                    Ok(r) => seen.ok.push(r.into_inner()),
                    Err(status) => {
                        *seen
                            .failed
                            .entry(format!("{:?}", status.code()))
                            .or_default() += 1;
                        // The node is gone (or going): this client's burst is over.
                        return seen;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(delay).await;
    node.kill();
    let mut all = Burst::default();
    for t in tasks {
        let seen = t.await.expect("publishing task");
        all.ok.extend(seen.ok);
        for (code, n) in seen.failed {
            *all.failed.entry(code).or_default() += n;
        }
    }
    // Every spec index was handed out at most once, even to tasks that then failed.
    next.store(
        next.load(Ordering::SeqCst).max(first + PER_BURST),
        Ordering::SeqCst,
    );
    all
}

/// One stored charge, as the ledger table holds it.
struct StoredCharge {
    release_id: String,
    epsilon: f64,
    delta: f64,
    relation: String,
}

/// The ledger table of the node's database, read-only (while the node has it open; a read-only
/// connection never checkpoints or rewrites anything).
fn stored_charges(state_dir: &Path) -> Vec<StoredCharge> {
    read_charges(state_dir, "ledger")
}

/// Charges of trainings that did not finish (cut short by a kill), from the same database.
fn unfinished_charges(state_dir: &Path) -> Vec<StoredCharge> {
    read_charges(state_dir, "unfinished")
}

fn read_charges(state_dir: &Path, table: &str) -> Vec<StoredCharge> {
    use rusqlite::{Connection, OpenFlags};
    let conn = Connection::open_with_flags(
        state_dir.join("node.sqlite"),
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .expect("open the node's database read-only");
    conn.busy_timeout(Duration::from_secs(30))
        .expect("busy timeout");
    let mut stmt = conn
        .prepare(&format!(
            "SELECT release_id, epsilon, delta, relation FROM {table} ORDER BY seq"
        ))
        .expect("prepare the ledger query");
    stmt.query_map([], |r| {
        Ok(StoredCharge {
            release_id: r.get(0)?,
            epsilon: r.get(1)?,
            delta: r.get(2)?,
            relation: r.get(3)?,
        })
    })
    .expect("query the ledger")
    .collect::<Result<_, _>>()
    .expect("read the ledger")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
}

/// Checks the restarted node against everything clients saw so far (`seen`: id → bytes of the
/// OK answer) and everything it served before (`served`: id → bytes); records what it serves now.
async fn check_after_restart(
    round: usize,
    c: &mut OrganisationNodeClient<Channel>,
    state_dir: &Path,
    new_ok: &[PrivateLearner],
    seen: &HashMap<String, Vec<u8>>,
    served: &mut HashMap<String, Vec<u8>>,
) {
    // (1) Each release answered OK in the last burst: served by id, byte for byte as answered.
    for answered in new_ok {
        let id = release_id(answered);
        let got = c
            .get_learner(GetLearnerRequest {
                selector: Some(Selector::ReleaseId(id.clone())),
            })
            .await
            .unwrap_or_else(|s| {
                panic!("round {round}: release {id} was answered OK, then lost by a kill: {s}")
            })
            .into_inner();
        assert_eq!(
            &got, answered,
            "round {round}: release {id} is served with other bytes than it was answered with"
        );
    }

    // (2) The full list: every release ever answered OK is there, no id twice, no id changed.
    let mut listed = Vec::new();
    let mut token = String::new();
    loop {
        let page = c
            .list_learners(ListLearnersRequest {
                page_size: 1000,
                page_token: token,
            })
            .await
            .expect("list learners")
            .into_inner();
        listed.extend(page.learners);
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    let mut now: HashMap<String, Vec<u8>> = HashMap::with_capacity(listed.len());
    let mut listed_epsilon: HashMap<String, f64> = HashMap::with_capacity(listed.len());
    for learner in &listed {
        let id = release_id(learner);
        let meta = learner.metadata.as_ref().expect("metadata");
        assert_eq!(
            meta.neighbour_relation,
            NeighbourRelation::ReplaceOne as i32,
            "round {round}: {id}"
        );
        assert_eq!(meta.delta, 0.0, "round {round}: {id} is pure ε");
        listed_epsilon.insert(id.clone(), meta.epsilon);
        let bytes = learner.encode_to_vec();
        if let Some(before) = served.get(&id) {
            assert!(
                *before == bytes,
                "round {round}: release {id} is served with different bytes after a restart"
            );
        }
        assert!(
            now.insert(id.clone(), bytes).is_none(),
            "round {round}: release {id} is listed twice"
        );
    }
    for (id, bytes) in seen {
        let listed = now.get(id).unwrap_or_else(|| {
            panic!("round {round}: release {id} was answered OK but is not listed")
        });
        assert!(
            listed == bytes,
            "round {round}: release {id} is listed with other bytes than it was answered with"
        );
    }
    for id in served.keys() {
        assert!(
            now.contains_key(id),
            "round {round}: release {id} was served before a kill and is gone after it"
        );
    }

    // (3) The stored charges: one per stored release, with the release's ε, replace-one, δ = 0.
    let charges = stored_charges(state_dir);
    let mut charged: HashMap<&str, f64> = HashMap::with_capacity(charges.len());
    for ch in &charges {
        assert!(
            charged.insert(&ch.release_id, ch.epsilon).is_none(),
            "round {round}: release {} is charged twice",
            ch.release_id
        );
        assert_eq!(ch.relation, "replace-one", "round {round}");
        assert_eq!(ch.delta, 0.0, "round {round}");
        let stated = listed_epsilon
            .get(ch.release_id.as_str())
            .unwrap_or_else(|| {
                panic!(
                    "round {round}: a charge for {} whose release is not served",
                    ch.release_id
                )
            });
        assert_eq!(
            ch.epsilon.to_bits(),
            stated.to_bits(),
            "round {round}: release {} states ε = {stated} but was charged {}",
            ch.release_id,
            ch.epsilon
        );
    }
    assert_eq!(
        charges.len(),
        listed.len(),
        "round {round}: stored charges and stored releases differ in number"
    );

    // (4) The spend the node reports is the sum of the stored charges, those of unfinished
    // trainings included; no unfinished charge names a served release.
    let unfinished = unfinished_charges(state_dir);
    for ch in &unfinished {
        assert!(
            !listed_epsilon.contains_key(ch.release_id.as_str()),
            "round {round}: {} is served but its charge is unfinished",
            ch.release_id
        );
        assert_eq!(ch.relation, "replace-one", "round {round}");
    }
    let stored_sum: f64 = charges.iter().chain(&unfinished).map(|ch| ch.epsilon).sum();
    let b: Budget = c
        .describe(DescribeRequest {})
        .await
        .expect("describe")
        .into_inner()
        .budget
        .expect("budget");
    let r1 = b.replace_one.expect("replace-one spend");
    assert_eq!(
        r1.releases as usize,
        charges.len() + unfinished.len(),
        "round {round}"
    );
    assert_eq!(
        r1.accounting, "basic",
        "round {round}: pure ε composes by Σε"
    );
    for (what, reported) in [
        ("epsilon_spent", b.epsilon_spent),
        ("replace_one.epsilon", r1.epsilon),
        ("replace_one.basic_epsilon", r1.basic_epsilon),
    ] {
        assert!(
            close(reported, stored_sum),
            "round {round}: the node reports {what} = {reported}, the stored charges sum to {stored_sum}"
        );
    }
    assert_eq!(b.delta_spent, 0.0, "round {round}");
    *served = now;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_publish_bursts_loses_no_release_and_no_charge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = node_config(dir.path(), "org-k", 1000.0, 1.0, true, 60);
    // One anonymous (plain-text) caller publishes thousands of times: lift the rate limit.
    add_access(&config, "publish_per_minute = 1000000\n");
    let state_dir = dir.path().join("org-k-state");

    let next = Arc::new(AtomicUsize::new(0));
    let mut seen: HashMap<String, Vec<u8>> = HashMap::new();
    let mut served: HashMap<String, Vec<u8>> = HashMap::new();
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    let mut interrupted = 0;
    let mut node = NodeProcess::start(&config);
    let started = Instant::now();
    for round in 0..KILLS {
        let b = burst(&mut node, &next, kill_delay(round)).await;
        // SIGKILL released the serve lock with the process: restart on the same folder.
        node = NodeProcess::start(&config);
        let mut c = client(&node).await;
        check_after_restart(round, &mut c, &state_dir, &b.ok, &seen, &mut served).await;
        for learner in &b.ok {
            let id = release_id(learner);
            let bytes = learner.encode_to_vec();
            if let Some(before) = seen.insert(id.clone(), bytes.clone()) {
                assert!(
                    before == bytes,
                    "round {round}: {id} answered twice, differently"
                );
            }
        }
        interrupted += usize::from(!b.failed.is_empty());
        for (code, n) in b.failed {
            *failed.entry(code).or_default() += n;
        }
    }

    // A failed call is the kill's doing, never a refusal by a live node.
    for refusal in [
        Code::ResourceExhausted,
        Code::InvalidArgument,
        Code::FailedPrecondition,
        Code::PermissionDenied,
        Code::NotFound,
    ] {
        assert!(
            !failed.contains_key(&format!("{refusal:?}")),
            "a live node refused a publish: {failed:?}"
        );
    }

    // The operator's view agrees with the last restart.
    let ledger = run(
        "dpagg-node",
        &["ledger", "--config", config.to_str().expect("utf8")],
        dir.path(),
    );
    assert_success(&ledger);
    let text = String::from_utf8_lossy(&ledger.stdout);
    assert!(
        text.contains(&format!("\n{} release(s):", served.len())),
        "{text}"
    );
    eprintln!(
        "{KILLS} kills in {:.1} s: {} releases answered OK, {} stored; {interrupted} bursts cut by the kill; failed calls {failed:?}",
        started.elapsed().as_secs_f64(),
        seen.len(),
        served.len(),
    );
}
