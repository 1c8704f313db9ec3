//! `dpagg-aggregator bench-fetch`: how long collecting learners from many organisations takes.
//!
//! Starts N real `dpagg-node serve` processes on loopback (each with its own SQLite ledger and a
//! small shard of the bundled Diabetes data), has each publish one learner, then times the
//! collection phase of `run` (connect, `Describe`, `GetLearner`, for every node) with the default
//! concurrency against the same collection done one node at a time, best of three runs each.
//! It does so twice in one run, first with plain-text nodes (`--insecure`) and then with mutual
//! TLS (a fresh development CA, a certificate per node, signed releases, a new TLS handshake per
//! node and run), and prints the TLS time as a ratio of the plain-text one. The target is under
//! 1 s for 100 nodes, TLS handshakes included.

use super::node_process::{self, Fleet, until_interrupted};
use anyhow::{Context, Result, bail};
use dpagg_aggregator_run::config::{LearnerRequest, Network};
use dpagg_aggregator_run::fetch::{Client, fetch_all};
use dpagg_shared::cli::Out;
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::identity::IdentityDir;
use dpagg_shared::identity::certs::{Validity, init};
use dpagg_shared::privacy::mechanism::{LearnerSpec, MechanismKind};
use dpagg_shared::util::files::atomic_write;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
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
    #[arg(long, env = node_process::NODE_BINARY_ENV)]
    node_binary: Option<PathBuf>,
}

/// Plain text or TLS with the identity folders under `dir/federation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Tls,
}

/// `dpagg-node serve` for node `i` on 127.0.0.1 (a port it picks), its log discarded.
fn serve_command(binary: &Path, dir: &Path, i: usize, mode: Mode) -> tokio::process::Command {
    let mut command = node_process::command(binary);
    match mode {
        Mode::Plain => command.arg("serve").arg("--insecure"),
        Mode::Tls => command
            .arg("serve")
            .arg("--identity")
            .arg(dir.join("federation").join(format!("org-{i}"))),
    };
    command
        .args(["--organisation-id", &format!("org-{i}")])
        .args(["--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(dir.join("data.csv"))
        .arg("--schema")
        .arg(dir.join("schema.toml"))
        .arg("--state-dir")
        .arg(dir.join(format!("state-{mode:?}-{i}")))
        .args(["--epsilon-total", "10", "--delta-total", "1e-5"])
        .args(["--allow-remote-publish", "true", "--write-allow", "*"])
        .stderr(Stdio::null());
    command
}

async fn best_of_three(
    urls: &[String],
    request: &LearnerRequest,
    net: Network,
    client: &Client,
) -> (f64, usize) {
    let mut best = f64::INFINITY;
    let mut ok = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let outcomes = fetch_all(urls, request, net, client).await;
        best = best.min(start.elapsed().as_secs_f64());
        ok = outcomes.iter().filter(|o| o.result.is_ok()).count();
    }
    (best, ok)
}

/// `bench-fetch`.
pub fn run(args: Args, stdout: &mut Out) -> Result<()> {
    if args.nodes == 0 || args.concurrency == 0 {
        bail!("--nodes and --concurrency must be at least 1");
    }
    let binary = node_process::node_binary(args.node_binary)?;
    let work = tempfile::tempdir().context("cannot create a temporary folder")?;
    write_shard(work.path())?;
    let federation = work.path().join("federation");
    let mut orgs: Vec<String> = (0..args.nodes).map(|i| format!("org-{i}")).collect();
    orgs.push("bench-aggregator".into());
    init(&federation, &orgs, &[], Validity::days_from_now(1))?;
    let tls = IdentityDir::load(&federation.join("bench-aggregator"))?.client()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut times = Vec::new();
    for (mode, client) in [
        (Mode::Plain, Client::default()),
        (
            Mode::Tls,
            Client {
                tls: Some(tls.clone()),
                ..Client::default()
            },
        ),
    ] {
        let fleet = Fleets {
            binary: &binary,
            dir: work.path(),
            nodes: args.nodes,
            concurrency: args.concurrency,
        };
        times.push(runtime.block_on(until_interrupted(fleet.measure(stdout, &client, mode)))?);
    }
    writeln!(
        stdout,
        "mutual TLS / plain text, concurrent collection: {:.2}× ({:.3} s vs {:.3} s)",
        times[1] / times[0],
        times[1],
        times[0]
    )?;
    Ok(())
}

/// What a measurement starts: `nodes` processes of `binary` over the files in `dir`.
struct Fleets<'a> {
    binary: &'a Path,
    dir: &'a Path,
    nodes: usize,
    concurrency: usize,
}

impl Fleets<'_> {
    /// Starts the nodes in `mode`, times collection from them, stops them; the concurrent time.
    async fn measure(&self, stdout: &mut Out, client: &Client, mode: Mode) -> Result<f64> {
        let started = Instant::now();
        let mut fleet = Fleet::with_capacity(self.nodes);
        for i in 0..self.nodes {
            fleet.spawn(serve_command(self.binary, self.dir, i, mode))?;
        }
        let urls = fleet.urls(mode == Mode::Tls).await?;
        writeln!(
            stdout,
            "bench-fetch ({}): {} dpagg-node processes listening after {:.2} s",
            label(mode),
            urls.len(),
            started.elapsed().as_secs_f64()
        )?;
        publish_then_time(stdout, &urls, self.concurrency, client, mode).await
    }
}

fn label(mode: Mode) -> &'static str {
    match mode {
        Mode::Plain => "plain text",
        Mode::Tls => "mutual TLS",
    }
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
    atomic_write(&dir.join("data.csv"), shard.as_bytes()).context("cannot write the data")?;
    atomic_write(&dir.join("schema.toml"), bundled.schema_text().as_bytes())
        .context("cannot write the schema")
}

fn network(concurrency: usize) -> Network {
    Network {
        connect_timeout: Duration::from_secs(30),
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
/// a time, prints both against the target and returns the concurrent time.
async fn publish_then_time(
    stdout: &mut Out,
    urls: &[String],
    concurrency: usize,
    client: &Client,
    mode: Mode,
) -> Result<f64> {
    let published = fetch_all(urls, &request(true), network(concurrency), client).await;
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
    let (concurrent, ok_c) = best_of_three(urls, &fetch, network(concurrency), client).await;
    let (sequential, ok_s) = best_of_three(urls, &fetch, network(1), client).await;
    writeln!(
        stdout,
        "{}: collect from {} nodes, concurrency {:>3}: {concurrent:.3} s (best of 3), {ok_c}/{} learners",
        label(mode),
        urls.len(),
        concurrency,
        urls.len()
    )?;
    writeln!(
        stdout,
        "{}: collect from {} nodes, sequential     : {sequential:.3} s (best of 3), {ok_s}/{} learners → concurrent is {:.1}× faster",
        label(mode),
        urls.len(),
        urls.len(),
        sequential / concurrent
    )?;
    writeln!(
        stdout,
        "target 1.00 s for 100 nodes → {:.2}× target",
        concurrent / 1.0
    )?;
    if ok_c != urls.len() || ok_s != urls.len() {
        bail!("some nodes did not answer during the benchmark");
    }
    Ok(concurrent)
}
