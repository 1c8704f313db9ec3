//! `dpagg-node`: one organisation's node.
//!
//! - `serve`: the gRPC service (health and reflection included) until SIGTERM or Ctrl-C.
//! - `publish`: release a learner locally under the node's policy (same ledger as `serve`).
//! - `publish-data`: make a data release (statistics, synthetic data) locally, same ledger.
//! - `ledger`: spent and remaining budget, and every release.
//! - `releases`: what the node has released (learners and data releases), a table or JSON.
//! - `check`: validate a CSV against the public schema and look for traps (nothing is released).
//! - `schema init`: draft a commented public schema from a CSV file.
//! - `split`: deal one CSV's rows over organisations (for trying dpagg by hand).
//! - `health`: ask a running node whether it is serving (for container health checks).
//! - `certs`: a development CA and identity folders (TLS certificates and signing keys).
//!
//! Logging, settings and the exit path are `dpagg_shared::cli`: errors are one line on stderr
//! with a non-zero exit status; output goes through [`Out`], so a reader that goes away
//! (`dpagg-node ledger | head -1`) ends the command cleanly.
#![forbid(unsafe_code)]

mod data_commands;
mod release_commands;

use anyhow::{Context, Result, bail};
use clap::{ArgMatches, Subcommand};
use dpagg_node::config::{DEFAULT_LISTEN, NodeConfig, Settings};
use dpagg_node::lock::ServeLock;
use dpagg_node::node::Node;
use dpagg_node::split::split_csv;
use dpagg_node::transport::Security;
use dpagg_shared::cli::{self, Out, exit::is_stdout_closed};
use dpagg_shared::identity::IdentityDir;
use dpagg_shared::privacy::data_release::{DataKind, DataSpec};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismKind};
use dpagg_shared::util::num::{Num, Short, fixed};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The subcommands of `dpagg-node`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the organisation's private learners over gRPC.
    Serve(Settings),
    /// Release a learner locally (charged to the same ledger as `serve`).
    Publish {
        #[command(flatten)]
        config: Settings,
        /// Mechanism: objective-perturbation, output-perturbation, dp-sgd, dp-sgd-bst,
        /// gibbs-posterior, gibbs-posterior-unproven, langevin.
        #[arg(long, default_value = "objective-perturbation", value_parser = parse_mechanism)]
        mechanism: MechanismKind,
        /// ε of the release.
        #[arg(long, allow_negative_numbers = true)]
        epsilon: f64,
        /// δ of the release (0: pure ε-DP).
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        delta: f64,
        /// Regulariser λ: `auto` (a function of n, d, ε and the mechanism only; recorded in the
        /// release) or a number.
        #[arg(long, default_value = "auto", allow_negative_numbers = true)]
        lambda: Lambda,
        /// Mechanism option name=value (repeat), e.g. --option steps=500 for dp-sgd.
        #[arg(long = "option", value_parser = dpagg_shared::privacy::mechanism::kind::parse_option)]
        option: Vec<(String, f64)>,
    },
    /// Make a data release locally — statistics or synthetic data (charged to the same ledger as
    /// `serve`, which then serves it).
    PublishData {
        #[command(flatten)]
        config: Settings,
        /// Kind: laplace-statistics, moments-laplace, moments-gaussian, histogram,
        /// smooth-median, sample-and-aggregate, mvn-synthetic, mvn-synthetic-gaussian.
        #[arg(long, value_parser = parse_data_kind)]
        kind: DataKind,
        /// ε of the release (0 for mvn-synthetic, whose ε is computed).
        #[arg(long, allow_negative_numbers = true)]
        epsilon: f64,
        /// δ of the release (0 for the ε-DP kinds).
        #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
        delta: f64,
        /// Option name=value (repeat), e.g. --option bins=20 or --option rows=500.
        #[arg(long = "option", value_parser = dpagg_shared::privacy::mechanism::kind::parse_option)]
        option: Vec<(String, f64)>,
    },
    /// Print spent and remaining budget and the releases.
    Ledger(Settings),
    /// List what this node has released — learners and data releases, their specs,
    /// guarantees and charges — as a table or JSON; `--show ID` prints one release.
    Releases {
        #[command(flatten)]
        config: Settings,
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// One release, by id, in full (JSON).
        #[arg(long, value_name = "RELEASE_ID")]
        show: Option<String>,
        /// Let the spec of a failed or stopped training (its reservation id, as `releases`
        /// lists it) be asked for again, and charged again; its first charge stays.
        #[arg(long, value_name = "RESERVATION_ID", conflicts_with_all = ["show", "json"])]
        allow_retry: Option<String>,
    },
    /// Check a CSV file against a public schema and look for traps — a centre in raw units, a
    /// feature constant after the map, many values clipped or missing (locally; nothing is
    /// released).
    Check {
        /// The organisation's data (CSV with a header row).
        #[arg(long, env = "DPAGG_DATA")]
        data: PathBuf,
        /// The public schema (TOML).
        #[arg(long, env = "DPAGG_SCHEMA")]
        schema: PathBuf,
        /// Exit non-zero on any warning (bounds still observed, a trap of the map).
        #[arg(long)]
        strict: bool,
    },
    /// Draft a public schema from a CSV file (`schema init`).
    #[command(subcommand)]
    Schema(data_commands::SchemaCommand),
    /// Deal the rows of one CSV over organisations (to try dpagg by hand with one dataset).
    Split {
        /// The CSV file to deal (header row first).
        #[arg(long)]
        data: PathBuf,
        /// The organisations, comma-separated: one file NAME.csv each.
        #[arg(long, value_delimiter = ',', required = true)]
        into: Vec<String>,
        /// Folder for the parts (created if needed).
        #[arg(long, default_value = ".")]
        out: PathBuf,
        /// Seed of the shuffle (a simulation aid; no release depends on it).
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Exit 0 if the node at ADDR reports SERVING on the gRPC health service.
    Health {
        /// The node's address.
        #[arg(long, default_value = DEFAULT_LISTEN, env = "DPAGG_LISTEN")]
        addr: String,
        /// Seconds to wait for an answer.
        #[arg(long, default_value_t = 5)]
        timeout: u64,
        /// Identity folder to connect with (mutual TLS; the node's own folder will do).
        #[arg(long, env = "DPAGG_IDENTITY", conflicts_with = "insecure")]
        identity: Option<PathBuf>,
        /// Connect in plain text (to a node serving --insecure).
        #[arg(long, env = "DPAGG_INSECURE")]
        insecure: bool,
    },
    /// Certificates for a federation: a development CA and identity folders.
    #[command(subcommand)]
    Certs(Certs),
}

/// `dpagg-node certs …`.
#[derive(Debug, Subcommand)]
enum Certs {
    /// Create a CA in OUT/ca and an identity folder OUT/ORG for each organisation.
    Init {
        /// Folder to create (refused if OUT/ca exists: keys are never overwritten).
        #[arg(long)]
        out: PathBuf,
        /// Organisations (comma-separated or repeated), e.g. hospital-a,hospital-b,aggregator.
        #[arg(long = "org", value_delimiter = ',', required = true)]
        orgs: Vec<String>,
        /// Extra host names or IP addresses the nodes are dialled by (comma-separated).
        #[arg(long = "host", value_delimiter = ',')]
        hosts: Vec<String>,
        /// Days the organisations' certificates are valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
    /// Issue an identity folder OUT/ORG with an existing CA.
    Issue {
        /// The CA folder (ca.pem and ca.key), e.g. federation/ca.
        #[arg(long)]
        ca: PathBuf,
        /// Folder under which ORG/ and public-keys/ORG.pub are written.
        #[arg(long)]
        out: PathBuf,
        /// The organisation.
        #[arg(long = "org")]
        org: String,
        /// Extra host names or IP addresses (comma-separated).
        #[arg(long = "host", value_delimiter = ',')]
        hosts: Vec<String>,
        /// Days the certificate is valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
        /// Start of validity (RFC 3339, e.g. 2020-01-01T00:00:00Z) [default: an hour ago].
        #[arg(long, value_parser = parse_time)]
        not_before: Option<time::OffsetDateTime>,
    },
}

fn parse_time(s: &str) -> Result<time::OffsetDateTime, String> {
    humantime::parse_rfc3339(s)
        .map(time::OffsetDateTime::from)
        .map_err(|e| format!("{e} (e.g. 2020-01-01T00:00:00Z)"))
}

fn certs(command: Certs, out: &mut Out) -> Result<()> {
    use dpagg_shared::identity::certs::{Validity, init, issue};
    let dirs = match command {
        Certs::Init {
            out: folder,
            orgs,
            hosts,
            days,
        } => init(&folder, &orgs, &hosts, Validity::days_from_now(days))?,
        Certs::Issue {
            ca,
            out: folder,
            org,
            hosts,
            days,
            not_before,
        } => {
            let validity = not_before.map_or_else(
                || Validity::days_from_now(days),
                |start| Validity::from(start, days),
            );
            vec![issue(&ca, &org, &folder, &hosts, validity)?]
        }
    };
    for d in dirs {
        writeln!(
            out,
            "{}: ca.pem cert.pem key.pem signing.key signing.pub",
            d.display()
        )?;
    }
    Ok(())
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
    tracing::info!("shutting down: draining in-flight requests");
}

/// One machine-readable line for scripts and tests that start the node on port 0. Nobody
/// reading it (a closed pipe) is no reason to stop serving.
fn announce(out: &mut Out, addr: SocketAddr) -> Result<()> {
    match writeln!(out, "dpagg-node listening on {addr}") {
        Err(e) if is_stdout_closed(&e) => {
            tracing::warn!("stdout is closed; serving without announcing the address there");
            Ok(())
        }
        result => result.context("cannot print the listening address"),
    }
}

fn announce_metrics(out: &mut Out, addr: SocketAddr) -> Result<()> {
    match writeln!(out, "dpagg-node metrics on http://{addr}/metrics") {
        Err(e) if is_stdout_closed(&e) => Ok(()),
        result => result.context("cannot print the metrics address"),
    }
}

fn serve(config: NodeConfig, out: &mut Out) -> Result<()> {
    let security = Security::load(
        config.transport()?,
        &config.organisation_id,
        config.access.clone(),
    )?;
    let (_lock, node) = fresh_state(&config.state_dir, || {
        let lock = ServeLock::acquire(&config.state_dir, &config.organisation_id)?;
        Ok((lock, Node::load(&config)?))
    })?;
    let node = Arc::new(node);
    runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let addr = listener.local_addr().context("listener address")?;
        tracing::info!(%addr, organisation = %node.organisation_id, "serving");
        announce(out, addr)?;
        let metrics_stop = Arc::new(tokio::sync::Notify::new());
        if let Some(at) = config.metrics_listen {
            let metrics = tokio::net::TcpListener::bind(at)
                .await
                .with_context(|| format!("cannot listen for metrics on {at}"))?;
            let bound = metrics.local_addr().context("metrics address")?;
            tracing::info!(addr = %bound, "metrics on http://{bound}/metrics");
            announce_metrics(out, bound)?;
            let stop = metrics_stop.clone();
            tokio::spawn(dpagg_node::metrics_server::serve_metrics(
                metrics,
                node.clone(),
                async move { stop.notified().await },
            ));
        }
        // Drain in-flight requests after a signal, but do not wait forever on idle clients.
        let signalled = Arc::new(tokio::sync::Notify::new());
        let notify = signalled.clone();
        let training = node.clone();
        let signal = async move {
            shutdown_signal().await;
            // Training in progress would hold the node past its grace period: stop it.
            training.cancel_training();
            notify.notify_one();
        };
        let grace = async {
            signalled.notified().await;
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
        };
        tokio::select! {
            r = dpagg_node::transport::serve(listener, node, security, signal) => r?,
            () = grace => tracing::warn!("clients still connected 10 s after the signal; exiting"),
        }
        Ok(())
    })
}

/// Runs `load` (which creates the state folder); when it fails and the folder did not exist
/// before, removes it again, so a configuration error leaves nothing behind.
fn fresh_state<T>(state_dir: &std::path::Path, load: impl FnOnce() -> Result<T>) -> Result<T> {
    let fresh = !state_dir.exists();
    let loaded = load();
    if loaded.is_err() && fresh {
        let _ = std::fs::remove_dir_all(state_dir);
    }
    loaded
}

fn parse_mechanism(s: &str) -> Result<MechanismKind, String> {
    MechanismKind::from_name(s).ok_or_else(|| {
        format!(
            "unknown mechanism `{s}` (available: {})",
            MechanismKind::names()
        )
    })
}

fn publish(config: NodeConfig, spec: LearnerSpec, out: &mut Out) -> Result<()> {
    let node = fresh_state(&config.state_dir, || Ok(Node::load(&config)?))?;
    let (release, new) = node.publish(&spec)?;
    let what = format!("release {}", release.release_id);
    let metadata = release.metadata();
    write_outcome(
        out,
        &node,
        &what,
        &metadata.mechanism,
        metadata.guarantee,
        new,
    )
}

/// "published <what> (<name>, ε, δ, relation)" or "already published: …", then the budget.
fn write_outcome(
    out: &mut Out,
    node: &Node,
    what: &str,
    name: &str,
    g: PrivacyGuarantee,
    new: bool,
) -> Result<()> {
    let b = node.budget()?;
    writeln!(
        out,
        "{} {what} ({name}, ε = {}, δ = {}, {})",
        if new {
            "published"
        } else {
            "already published:"
        },
        Num(g.epsilon),
        Num(g.delta),
        g.relation
    )?;
    if g.relation == dpagg_shared::privacy::guarantee::NeighbourRelation::AddRemoveOne {
        // The ledger states everything under replace-one (a replaced row is one removed and
        // one added), so an add/remove-one release counts twice as much ε (group privacy).
        writeln!(
            out,
            "charged under replace-one, the ledger's relation, as ε = {}, δ = {} (group privacy: a replaced row is one removed and one added)",
            Short(2.0 * g.epsilon),
            Short((1.0 + g.epsilon.exp()) * g.delta)
        )?;
    }
    writeln!(
        out,
        "budget: spent ε = {}, δ = {:e}; remaining ε = {}, δ = {:e}",
        fixed(b.spent.epsilon, 6),
        b.spent.delta,
        fixed(b.epsilon_remaining(), 6),
        b.delta_remaining()
    )?;
    Ok(())
}

fn parse_data_kind(s: &str) -> Result<DataKind, String> {
    DataKind::parse(s).ok_or_else(|| {
        let names: Vec<&str> = DataKind::ALL.iter().map(|(n, _)| *n).collect();
        format!("unknown data kind `{s}` (available: {})", names.join(", "))
    })
}

fn publish_data(config: NodeConfig, spec: &DataSpec, out: &mut Out) -> Result<()> {
    let node = fresh_state(&config.state_dir, || Ok(Node::load(&config)?))?;
    let (stored, new) = node.publish_data(spec, |payload, planned, id, created| {
        dpagg_node::service::data_body(&node, spec, planned, payload, id, created)
    })?;
    let what = format!("data release {}", stored.release_id);
    write_outcome(out, &node, &what, &stored.kind, stored.guarantee, new)
}

/// The ledger as it is, even when the policy's totals are below the spend (then `serve` and
/// `publish` refuse to start, and this says why).
fn health(addr: String, timeout: u64, identity: Option<PathBuf>, out: &mut Out) -> Result<()> {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    let tls = identity
        .map(|dir| IdentityDir::load(&dir)?.client())
        .transpose()?;
    // `--addr` is host:port; a URL's scheme must match how the node is asked.
    let addr = match (addr.split_once("://"), tls.is_some()) {
        (None, _) => addr,
        (Some(("https", rest)), true) | (Some(("http", rest)), false) => rest.to_owned(),
        (Some((scheme, _)), true) => bail!(
            "--addr {addr}: {scheme}:// with --identity; give host:port (mutual TLS is https)"
        ),
        (Some((scheme, _)), false) => {
            bail!("--addr {addr}: {scheme}:// with --insecure; give host:port (plain text is http)")
        }
    };
    runtime()?.block_on(async move {
        let wait = std::time::Duration::from_secs(timeout);
        let channel = match tls {
            Some(tls) => {
                let url = format!("https://{addr}");
                match tls
                    .connect(&url, |e| e.connect_timeout(wait).timeout(wait))
                    .await
                {
                    Ok((channel, _)) => channel,
                    Err(dpagg_shared::identity::ConnectError::Transport(e)) => {
                        match dpagg_shared::identity::handshake_problem(&e) {
                            Some(problem) => bail!("{url}: {problem}"),
                            None => {
                                return Err(anyhow::Error::new(e)
                                    .context(format!("cannot reach a node at {url}")));
                            }
                        }
                    }
                    Err(e) => return Err(anyhow::Error::new(e).context(url)),
                }
            }
            None => tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
                .with_context(|| format!("invalid address {addr}"))?
                .connect_timeout(wait)
                .timeout(wait)
                .connect()
                .await
                .with_context(|| format!("cannot reach a node at {addr}"))?,
        };
        let status = HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: "dpagg.v1.OrganisationNode".into(),
            })
            .await
            .with_context(|| format!("health check of {addr} failed"))?
            .into_inner()
            .status();
        if status != ServingStatus::Serving {
            bail!("node at {addr} is not serving ({status:?})");
        }
        writeln!(out, "{addr}: SERVING")?;
        Ok(())
    })
}

/// Runs `command`; `matches` are its subcommand's, which say where each setting came from.
fn run(command: Command, matches: &ArgMatches, out: &mut Out) -> Result<()> {
    match command {
        Command::Serve(settings) => serve(settings.resolve(matches)?, out),
        Command::Publish {
            config,
            mechanism,
            epsilon,
            delta,
            lambda,
            option,
        } => {
            let spec = LearnerSpec {
                kind: mechanism,
                epsilon,
                delta,
                l2: lambda,
                options: option.into_iter().collect(),
            };
            publish(config.resolve(matches)?, spec, out)
        }
        Command::PublishData {
            config,
            kind,
            epsilon,
            delta,
            option,
        } => {
            let spec = DataSpec {
                kind,
                epsilon,
                delta,
                options: option.into_iter().collect(),
            };
            publish_data(config.resolve(matches)?, &spec, out)
        }
        Command::Ledger(settings) => release_commands::ledger(settings.resolve(matches)?, out),
        Command::Releases {
            config,
            allow_retry: Some(id),
            ..
        } => release_commands::allow_retry(config.resolve(matches)?, &id, out),
        Command::Releases {
            config, json, show, ..
        } => release_commands::releases(config.resolve(matches)?, json, show.as_deref(), out),
        Command::Check {
            data,
            schema,
            strict,
        } => data_commands::check(&data, &schema, strict, out),
        Command::Schema(command) => data_commands::schema(command, out),
        Command::Split {
            data,
            into,
            out: folder,
            seed,
        } => {
            for (path, rows) in split_csv(&data, &into, seed, &folder)? {
                writeln!(out, "{}: {rows} rows", path.display())?;
            }
            Ok(())
        }
        Command::Health {
            addr,
            timeout,
            identity,
            insecure,
        } => {
            if identity.is_none() && !insecure {
                bail!(
                    "give the identity folder to connect with (--identity DIR or \
                     $DPAGG_IDENTITY), or --insecure for a plain-text node"
                );
            }
            health(addr, timeout, identity, out)
        }
        Command::Certs(command) => certs(command, out),
    }
}

fn main() -> ExitCode {
    // A server narrates its life at info; one-shot commands stay quiet so an error is one line.
    let level = |command: &Command| match command {
        Command::Serve(_) => "info",
        _ => "warn",
    };
    cli::run_tool(dpagg_shared::tool_about!(), level, run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// clap checks its definitions only in debug builds; this checks them in any build.
    #[test]
    fn the_command_line_is_well_formed() {
        cli::Tool::<Command>::command().debug_assert();
    }
}
