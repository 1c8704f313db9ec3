//! `dpagg-node`: one organisation's node.
//!
//! - `serve`: the gRPC service (health and reflection included) until SIGTERM or Ctrl-C.
//! - `publish`: release a learner locally under the node's policy (same ledger as `serve`).
//! - `publish-data`: make a data release (statistics, synthetic data) locally, same ledger.
//! - `ledger`: spent and remaining budget, and every release; `ledger backup` and `ledger
//!   restore` copy the ledger out and back (never behind its high-water mark).
//! - `releases`: what the node has released (learners and data releases), a table or JSON.
//! - `check`: validate a CSV against the public schema and look for traps (nothing is released).
//! - `schema init`: draft a commented public schema from a CSV file.
//! - `split`: deal one CSV's rows over organisations (for trying dpagg by hand).
//! - `health`: ask a running node whether it is serving (for container health checks).
//! - `certs`: a development CA and identity folders (TLS certificates and signing keys).
//!
//! Each group of subcommands is a module of the binary: `serve_commands.rs` (serve, health),
//! `publish_commands.rs` (publish, publish-data), `release_commands.rs` (ledger, releases),
//! `data_commands.rs` (check, schema init), `cert_commands.rs` (certs); this file holds the
//! command line and its dispatch.
//!
//! Logging, settings and the exit path are `dpagg_shared::cli`: errors are one line on stderr
//! with a non-zero exit status; output goes through [`Out`], so a reader that goes away
//! (`dpagg-node ledger | head -1`) ends the command cleanly.
#![forbid(unsafe_code)]

mod cert_commands;
mod data_commands;
mod publish_commands;
mod release_commands;
mod serve_commands;

use anyhow::{Result, bail};
use cert_commands::{Certs, certs};
use clap::{ArgMatches, Subcommand};
use dpagg_node::config::{DEFAULT_LISTEN, Settings};
use dpagg_node::split::split_csv;
use dpagg_shared::cli::{self, Out};
use dpagg_shared::privacy::data_release::{DataKind, DataSpec};
use publish_commands::{parse_data_kind, publish, publish_data};
use serve_commands::{health, serve};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The subcommands of `dpagg-node`.
#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the organisation's private learners over gRPC.
    Serve(Settings),
    /// Release a learner locally (charged to the same ledger as `serve`).
    Publish {
        #[command(flatten)]
        config: Settings,
        /// ε of the release.
        #[arg(long, allow_negative_numbers = true)]
        epsilon: f64,
        /// The mechanism, δ, λ and options.
        #[command(flatten)]
        learner: cli::LearnerArgs,
        /// The agreed map to apply to the rows before training (`map.toml`, from the
        /// aggregator's `dpagg-aggregator map`); without it, the schema's own map.
        #[arg(long)]
        map: Option<PathBuf>,
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
    /// Print spent and remaining budget and the releases; `ledger backup` and `ledger restore`
    /// copy the ledger out and back.
    #[command(args_conflicts_with_subcommands = true)]
    Ledger {
        #[command(flatten)]
        config: Settings,
        #[command(subcommand)]
        action: Option<Box<LedgerAction>>,
    },
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

/// `dpagg-node ledger backup|restore`.
#[derive(Debug, Subcommand)]
enum LedgerAction {
    /// Write a consistent copy of the ledger (the node's database) to FILE, mode 0600; safe
    /// beside a running node.
    Backup {
        #[command(flatten)]
        config: Settings,
        /// Where to write the copy.
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Install a backup as the node's ledger (stop the node and publishers first); refused when
    /// the backup is behind the ledger's high-water mark — it would give back spent budget.
    Restore {
        #[command(flatten)]
        config: Settings,
        /// The backup (from `dpagg-node ledger backup`).
        file: PathBuf,
    },
}

/// Runs `load` (which creates the state folder); when it fails and the folder did not exist
/// before, removes it again, so a configuration error leaves nothing behind.
pub(crate) fn fresh_state<T>(
    state_dir: &std::path::Path,
    load: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let fresh = !state_dir.exists();
    let loaded = load();
    if loaded.is_err() && fresh {
        let _ = std::fs::remove_dir_all(state_dir);
    }
    loaded
}

/// `ledger`, `ledger backup` and `ledger restore`; `matches` are `ledger`'s.
fn ledger(
    config: Settings,
    action: Option<Box<LedgerAction>>,
    matches: &ArgMatches,
    out: &mut Out,
) -> Result<()> {
    match action.map(|a| *a) {
        None => release_commands::ledger(config.resolve(matches)?, out),
        Some(LedgerAction::Backup { config, out: file }) => {
            let matches = matches.subcommand_matches("backup").unwrap_or(matches);
            release_commands::backup(config.resolve(matches)?, &file, out)
        }
        Some(LedgerAction::Restore { config, file }) => {
            let matches = matches.subcommand_matches("restore").unwrap_or(matches);
            release_commands::restore(config.resolve(matches)?, &file, out)
        }
    }
}

/// Runs `command`; `matches` are its subcommand's, which say where each setting came from.
fn run(command: Command, matches: &ArgMatches, out: &mut Out) -> Result<()> {
    match command {
        Command::Serve(settings) => serve(settings.resolve(matches)?, out),
        Command::Publish {
            config,
            epsilon,
            learner,
            map,
        } => publish(
            config.resolve(matches)?,
            learner.spec(epsilon),
            map.as_deref(),
            out,
        ),
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
        Command::Ledger { config, action } => ledger(config, action, matches, out),
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
    // A server narrates its life at info; one-shot commands stay quiet so an error is one line,
    // but for the audit line every publish writes.
    let level = |command: &Command| match command {
        Command::Serve(_) => "info",
        Command::Publish { .. } | Command::PublishData { .. } => "warn,dpagg::audit=info",
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
