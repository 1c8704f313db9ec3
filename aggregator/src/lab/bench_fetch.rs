//! `dpagg-aggregator bench-fetch`: how long collecting learners from many organisations takes.
//!
//! Starts N real `dpagg-node serve` processes on loopback (each with its own SQLite ledger and a
//! small shard of the bundled Diabetes data), has each publish one learner, then times the
//! collection phase of `run` (connect, `Describe`, `GetLearner`, for every node) with the default
//! concurrency against the same collection done one node at a time, best of three runs each.
//! The target of the gRPC issue is under 1 s for 100 nodes.

use crate::run::config::{LearnerRequest, Network};
use crate::run::fetch::fetch_all;
use anyhow::{Context, Result, bail};
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::privacy::mechanism::{LearnerSpec, MechanismKind};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Arguments of `bench-fetch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Number of node processes.
    #[arg(long, default_value_t = 100)]
    nodes: usize,
    /// Nodes contacted at once in the concurrent runs.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// The `dpagg-node` binary [default: next to this executable].
    #[arg(long)]
    node_binary: Option<PathBuf>,
}

/// Kills every node process when dropped, whatever happened.
struct Fleet(Vec<Child>);

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn node_binary(given: Option<PathBuf>) -> Result<PathBuf> {
    let path = match given {
        Some(p) => p,
        None => std::env::current_exe()
            .context("cannot locate this executable")?
            .with_file_name(format!("dpagg-node{}", std::env::consts::EXE_SUFFIX)),
    };
    if !path.is_file() {
        bail!(
            "{}: no dpagg-node binary (build it with `cargo build --release -p dpagg-node` or pass --node-binary)",
            path.display()
        );
    }
    Ok(path)
}

fn spawn(binary: &Path, dir: &Path, i: usize) -> Result<Child> {
    Command::new(binary)
        .arg("serve")
        .args(["--organisation-id", &format!("org-{i}")])
        .args(["--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(dir.join("data.csv"))
        .arg("--schema")
        .arg(dir.join("schema.toml"))
        .arg("--state-dir")
        .arg(dir.join(format!("state-{i}")))
        .args(["--epsilon-total", "10", "--delta-total", "1e-5"])
        .args(["--allow-remote-publish", "true"])
        .env("DPAGG_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))
}

fn listening_url(child: &mut Child) -> Result<String> {
    let stdout = child.stdout.take().context("no stdout from dpagg-node")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .context("cannot read from dpagg-node")?;
    let addr = line
        .trim()
        .strip_prefix("dpagg-node listening on ")
        .with_context(|| format!("dpagg-node did not start (said {:?})", line.trim()))?;
    Ok(format!("http://{addr}"))
}

async fn best_of_three(urls: &[String], request: &LearnerRequest, net: Network) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut ok = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let outcomes = fetch_all(urls, request, net).await;
        best = best.min(start.elapsed().as_secs_f64());
        ok = outcomes.iter().filter(|o| o.result.is_ok()).count();
    }
    (best, ok)
}

/// `bench-fetch`.
pub fn run(args: Args) -> Result<()> {
    if args.nodes == 0 || args.concurrency == 0 {
        bail!("--nodes and --concurrency must be at least 1");
    }
    let binary = node_binary(args.node_binary)?;
    let work = tempfile::tempdir().context("cannot create a temporary folder")?;
    write_shard(work.path())?;
    let started = Instant::now();
    let mut fleet = Fleet(Vec::with_capacity(args.nodes));
    for i in 0..args.nodes {
        fleet.0.push(spawn(&binary, work.path(), i)?);
    }
    let urls = fleet
        .0
        .iter_mut()
        .map(listening_url)
        .collect::<Result<Vec<_>>>()?;
    println!(
        "bench-fetch: {} dpagg-node processes listening after {:.2} s",
        urls.len(),
        started.elapsed().as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(publish_then_time(&urls, args.concurrency))?;
    drop(fleet);
    Ok(())
}

/// Writes every node's data (the bundled Diabetes data's first 60 rows) and schema into `dir`.
fn write_shard(dir: &Path) -> Result<()> {
    let bundled = Bundled::Diabetes;
    let shard: String = bundled
        .csv_text()
        .lines()
        .take(61)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("data.csv"), shard).context("cannot write the data")?;
    std::fs::write(dir.join("schema.toml"), bundled.schema_text())
        .context("cannot write the schema")
}

fn network(concurrency: usize) -> Network {
    Network {
        timeout: Duration::from_secs(30),
        retries: 0,
        backoff: Duration::from_millis(100),
        concurrency,
    }
}

fn request(publish: bool) -> LearnerRequest {
    LearnerRequest::Spec {
        spec: LearnerSpec::new(MechanismKind::ObjectivePerturbation, 1.0, 0.0, 0.01),
        publish,
    }
}

/// Has every node publish its learner, then times collecting them concurrently and one node at
/// a time, and prints both against the target.
async fn publish_then_time(urls: &[String], concurrency: usize) -> Result<()> {
    let published = fetch_all(urls, &request(true), network(concurrency)).await;
    if let Some(bad) = published.iter().find(|o| o.result.is_err()) {
        bail!(
            "{}: could not publish: {}",
            bad.endpoint,
            bad.result
                .as_ref()
                .err()
                .map(ToString::to_string)
                .unwrap_or_default()
        );
    }
    let fetch = request(false);
    let (concurrent, ok_c) = best_of_three(urls, &fetch, network(concurrency)).await;
    let (sequential, ok_s) = best_of_three(urls, &fetch, network(1)).await;
    println!(
        "collect from {} nodes, concurrency {:>3}: {concurrent:.3} s (best of 3), {ok_c}/{} learners",
        urls.len(),
        concurrency,
        urls.len()
    );
    println!(
        "collect from {} nodes, sequential     : {sequential:.3} s (best of 3), {ok_s}/{} learners → concurrent is {:.1}× faster",
        urls.len(),
        urls.len(),
        sequential / concurrent
    );
    println!(
        "target 1.00 s for 100 nodes → {:.2}× target",
        concurrent / 1.0
    );
    if ok_c != urls.len() || ok_s != urls.len() {
        bail!("some nodes did not answer during the benchmark");
    }
    Ok(())
}
