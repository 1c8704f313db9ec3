//! `dpagg-node`: one organisation's node.
//!
//! - `serve`: the gRPC service (health and reflection included) until SIGTERM or Ctrl-C.
//! - `publish`: release a learner locally under the node's policy (same ledger as `serve`).
//! - `ledger`: spent and remaining budget, and every release.
//! - `check`: validate a CSV against the public schema (nothing is released).
//! - `health`: ask a running node whether it is serving (for container health checks).
//!
//! Errors are printed as one line on stderr with a non-zero exit status.
#![forbid(unsafe_code)]

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use dpagg_node::config::Overrides;
use dpagg_node::node::Node;
use dpagg_node::store::{Spec, Store, rfc3339};
use dpagg_shared::csvload::load_csv;
use dpagg_shared::schema::Schema;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// An organisation's dpagg node.
#[derive(Debug, Parser)]
#[command(name = "dpagg-node", version, about)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human, env = "DPAGG_LOG_FORMAT")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Human,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the organisation's private learners over gRPC.
    Serve(Overrides),
    /// Release a learner locally (charged to the same ledger as `serve`).
    Publish {
        #[command(flatten)]
        config: Overrides,
        /// Mechanism: objective-perturbation, output-perturbation, dp-sgd, dp-sgd-bst,
        /// gibbs-posterior, gibbs-posterior-unproven.
        #[arg(long, default_value = "objective-perturbation")]
        mechanism: String,
        /// ε of the release.
        #[arg(long)]
        epsilon: f64,
        /// δ of the release (0: pure ε-DP).
        #[arg(long, default_value_t = 0.0)]
        delta: f64,
        /// Regulariser λ.
        #[arg(long, default_value_t = 0.01)]
        lambda: f64,
        /// Mechanism option name=value (repeat), e.g. --option steps=500 for dp-sgd.
        #[arg(long = "option", value_parser = dpagg_shared::mechanism::kind::parse_option)]
        option: Vec<(String, f64)>,
    },
    /// Print spent and remaining budget and the releases.
    Ledger(Overrides),
    /// Check a CSV file against a public schema (locally; nothing is released).
    Check {
        /// The organisation's data (CSV with a header row).
        #[arg(long, env = "DPAGG_DATA")]
        data: PathBuf,
        /// The public schema (TOML).
        #[arg(long, env = "DPAGG_SCHEMA")]
        schema: PathBuf,
    },
    /// Exit 0 if the node at ADDR reports SERVING on the gRPC health service.
    Health {
        /// The node's address, e.g. 127.0.0.1:50051.
        #[arg(long, default_value = "127.0.0.1:50051", env = "DPAGG_LISTEN")]
        addr: String,
        /// Seconds to wait for an answer.
        #[arg(long, default_value_t = 5)]
        timeout: u64,
    },
}

fn check(data: PathBuf, schema: PathBuf) -> Result<()> {
    let schema = Schema::load(&schema)?;
    let (dataset, report) = load_csv(&data, &schema)?;
    let positive = dataset.labels().iter().filter(|&&l| l > 0.0).count();
    println!(
        "{}: {} rows ({} `{}`, {} `{}`), {} columns after normalisation",
        data.display(),
        report.rows,
        positive,
        schema.label.positive,
        dataset.len() - positive,
        schema.label.negative,
        schema.dim()
    );
    println!(
        "schema `{}` fingerprint {}",
        schema.name,
        schema.fingerprint()
    );
    println!(
        "max row norm {:.6} (the privacy proofs need ≤ 1)",
        dataset.max_row_norm()
    );
    if report.total_clipped() == 0 {
        println!("no value outside the schema bounds");
    }
    for (feature, count) in report.clipped.iter().filter(|(_, c)| *c > 0) {
        println!("clipped {count} value(s) of `{feature}` to its schema bounds");
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

fn serve(overrides: Overrides) -> Result<()> {
    let config = overrides.resolve()?;
    let node = Arc::new(Node::load(&config)?);
    runtime()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .with_context(|| format!("cannot listen on {}", config.listen))?;
        let addr = listener.local_addr().context("listener address")?;
        tracing::info!(%addr, organisation = %node.organisation_id, "serving");
        // One machine-readable line for scripts and tests that start the node on port 0.
        println!("dpagg-node listening on {addr}");
        // Drain in-flight requests after a signal, but do not wait forever on idle clients.
        let signalled = Arc::new(tokio::sync::Notify::new());
        let notify = signalled.clone();
        let signal = async move {
            shutdown_signal().await;
            notify.notify_one();
        };
        let grace = async {
            signalled.notified().await;
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
        };
        tokio::select! {
            r = dpagg_node::transport::serve(listener, node, signal) => r?,
            () = grace => tracing::warn!("clients still connected 10 s after the signal; exiting"),
        }
        Ok(())
    })
}

fn publish(overrides: Overrides, spec: Spec) -> Result<()> {
    let config = overrides.resolve()?;
    let node = Node::load(&config)?;
    let (release, new) = node.publish(&spec)?;
    let b = node.budget()?;
    let g = release.metadata.guarantee;
    println!(
        "{} release {} ({}, ε = {}, δ = {}, {})",
        if new {
            "published"
        } else {
            "already published:"
        },
        release.release_id,
        release.metadata.mechanism,
        g.epsilon,
        g.delta,
        g.relation
    );
    println!(
        "budget: spent ε = {:.6}, δ = {:e}; remaining ε = {:.6}, δ = {:e}",
        b.spent.epsilon,
        b.spent.delta,
        b.epsilon_remaining(),
        b.delta_remaining()
    );
    Ok(())
}

fn ledger(overrides: Overrides) -> Result<()> {
    let config = overrides.resolve()?;
    if !config.state_dir.join("node.sqlite").exists() {
        bail!(
            "{}: no ledger here yet (nothing has been published)",
            config.state_dir.display()
        );
    }
    let store = Store::open(&config.state_dir)?;
    let s = store.spent()?;
    let p = config.policy;
    println!("organisation {}", config.organisation_id);
    println!(
        "ε: total {} spent {:.6} remaining {:.6} (cap {} per release)",
        p.epsilon_total,
        s.epsilon,
        (p.epsilon_total - s.epsilon).max(0.0),
        p.cap()
    );
    println!(
        "δ: total {:e} spent {:e} remaining {:e}",
        p.delta_total,
        s.delta,
        (p.delta_total - s.delta).max(0.0)
    );
    println!("(totals under replace-one; add/remove-one spend counts as (2ε, (1 + e^ε)δ))");
    for r in [s.replace_one, s.add_remove_one] {
        if r.charges > 0 {
            println!(
                "  {:<15} ε = {:.6} ({}; Σε = {:.6}), δ = {:e}, {} release(s)",
                r.relation.to_string(),
                r.epsilon,
                r.accounting,
                r.basic_epsilon,
                r.delta,
                r.charges
            );
        }
    }
    println!("{} release(s):", s.charges);
    for r in store.releases()? {
        let g = r.metadata.guarantee;
        println!(
            "  {}  {}  {:<26} ε = {:<6} δ = {:<8} λ = {:<6} {}{}",
            r.release_id,
            rfc3339(r.created_unix_ms),
            r.metadata.mechanism,
            g.epsilon,
            g.delta,
            r.spec.lambda,
            g.relation,
            if r.metadata.seeded { "  SEEDED" } else { "" }
        );
    }
    Ok(())
}

fn health(addr: String, timeout: u64) -> Result<()> {
    use tonic_health::pb::health_check_response::ServingStatus;
    use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};
    runtime()?.block_on(async move {
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .with_context(|| format!("invalid address {addr}"))?
            .connect_timeout(std::time::Duration::from_secs(timeout))
            .timeout(std::time::Duration::from_secs(timeout));
        let channel = endpoint
            .connect()
            .await
            .with_context(|| format!("cannot reach a node at {addr}"))?;
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
        println!("{addr}: SERVING");
        Ok(())
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server narrates its life at info; one-shot commands stay quiet so an error is one line.
    let default_level = if matches!(cli.command, Command::Serve(_)) {
        "info"
    } else {
        "warn"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("DPAGG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    match cli.log_format {
        LogFormat::Human => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
    let result = match cli.command {
        Command::Serve(o) => serve(o),
        Command::Publish {
            config,
            mechanism,
            epsilon,
            delta,
            lambda,
            option,
        } => publish(
            config,
            Spec {
                mechanism,
                epsilon,
                delta,
                lambda,
                options: option.into_iter().collect(),
            },
        ),
        Command::Ledger(o) => ledger(o),
        Command::Check { data, schema } => check(data, schema),
        Command::Health { addr, timeout } => health(addr, timeout),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}
