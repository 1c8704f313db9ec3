//! `dpagg-node serve` and `health` (part of the binary): the node's service with graceful
//! shutdown, and the health check containers run against it.

use crate::fresh_state;
use anyhow::{Context, Result, bail};
use dpagg_node::config::NodeConfig;
use dpagg_node::limits::{Limits, raise_file_limit};
use dpagg_node::lock::ServeLock;
use dpagg_node::node::Node;
use dpagg_node::transport::Security;
use dpagg_shared::cli::{Out, exit::is_stdout_closed};
use dpagg_shared::identity::IdentityDir;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

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

/// `limits` within the process's file limit, raised to its hard limit first; lowered caps are
/// logged.
fn fitted_limits(limits: Limits) -> Limits {
    let Some(files) = raise_file_limit() else {
        return limits;
    };
    let (limits, note) = limits.fit_to_files(files);
    if let Some(note) = note {
        tracing::warn!("{note}");
    }
    limits
}

/// `serve`: the gRPC service until SIGTERM or Ctrl-C (draining for at most 10 s), with the
/// metrics endpoint when configured; holds the state folder's [`ServeLock`] for its life.
pub(crate) fn serve(config: NodeConfig, out: &mut Out) -> Result<()> {
    let security = Security::load(
        config.transport()?,
        &config.organisation_id,
        config.access.clone(),
    )?;
    // Before the lock file is made: a state folder others can change is refused untouched.
    dpagg_node::store::Store::check_private(&config.state_dir)?;
    let (_lock, node) = fresh_state(&config.state_dir, || {
        let lock = ServeLock::acquire(&config.state_dir, &config.organisation_id)?;
        Ok((lock, Node::load(&config)?))
    })?;
    node.require_no_traps(&config.schema)?;
    let node = Arc::new(node);
    let limits = fitted_limits(config.limits);
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
            let (stop, node) = (metrics_stop.clone(), node.clone());
            tokio::spawn(async move {
                let stopped = async move { stop.notified().await };
                dpagg_node::metrics_server::serve_metrics(metrics, node, &limits, stopped).await
            });
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
            r = dpagg_node::transport::serve(listener, node, security, &limits, signal) => r?,
            () = grace => tracing::warn!("clients still connected 10 s after the signal; exiting"),
        }
        Ok(())
    })
}

/// `health`: asks the node at `addr` whether it is serving (over mutual TLS with the identity
/// folder, or in plain text), for container health checks.
pub(crate) fn health(
    addr: String,
    timeout: u64,
    identity: Option<PathBuf>,
    out: &mut Out,
) -> Result<()> {
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
