//! The `[limits]` of a node: how many connections its two listeners hold and for how long, so
//! that no client — not even one with a valid certificate — can take it offline by opening
//! connections and not using them.
//!
//! ```toml
//! [limits]
//! max_connections = 512               # gRPC connections at once (handshaking or open)
//! max_connections_per_peer = 16       # per organisation (client certificate), after the handshake
//! max_handshakes_per_address = 32     # TLS handshakes in progress per IP address
//! handshake_timeout_seconds = 5       # a client that has not finished its handshake is dropped
//! idle_timeout_seconds = 120          # a connection with no call for this long is closed
//! keepalive_interval_seconds = 60     # HTTP/2 PING to a quiet connection; no answer within
//! keepalive_timeout_seconds = 20      #   the timeout closes it (a vanished peer)
//! max_streams_per_connection = 32     # calls in progress on one connection
//! metrics_max_connections = 32        # connections to the metrics endpoint at once
//! metrics_header_timeout_seconds = 5  # a metrics request whose header is not complete is dropped
//! ```
//!
//! When the counts do not fit in the process's file limit (after raising the soft limit to the
//! hard one), [`Limits::fit_to_files`] lowers them and says so: a node that runs out of file
//! descriptors cannot answer its health check or open its ledger.

use crate::config::Settings;
use dpagg_shared::cli::{ConfigError, Layers, Setting};
use serde::Deserialize;
use std::time::Duration;

/// File descriptors kept free of connections: the ledger, the log, the listeners and the
/// connections being accepted and refused.
pub const RESERVED_FILES: u64 = 64;

/// Longest life of a metrics connection, whatever it does (a scrape takes milliseconds).
pub const METRICS_CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

/// The `[limits]` settings.
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Connection limits")]
pub struct LimitSettings {
    /// gRPC connections held at once, handshaking or open.
    #[arg(long, env = "DPAGG_MAX_CONNECTIONS", default_value = "512")]
    pub max_connections: Option<u32>,
    /// gRPC connections held at once per organisation (client certificate).
    #[arg(long, env = "DPAGG_MAX_CONNECTIONS_PER_PEER", default_value = "16")]
    pub max_connections_per_peer: Option<u32>,
    /// TLS handshakes in progress at once per IP address.
    #[arg(long, env = "DPAGG_MAX_HANDSHAKES_PER_ADDRESS", default_value = "32")]
    pub max_handshakes_per_address: Option<u32>,
    /// Seconds a client has to finish its TLS handshake.
    #[arg(long, env = "DPAGG_HANDSHAKE_TIMEOUT_SECONDS", default_value = "5")]
    pub handshake_timeout_seconds: Option<f64>,
    /// Seconds a gRPC connection may stay without a call in progress before it is closed.
    #[arg(long, env = "DPAGG_IDLE_TIMEOUT_SECONDS", default_value = "120")]
    pub idle_timeout_seconds: Option<f64>,
    /// Seconds between HTTP/2 PINGs to a quiet connection.
    #[arg(long, env = "DPAGG_KEEPALIVE_INTERVAL_SECONDS", default_value = "60")]
    pub keepalive_interval_seconds: Option<f64>,
    /// Seconds a PING may go unanswered before the connection is closed.
    #[arg(long, env = "DPAGG_KEEPALIVE_TIMEOUT_SECONDS", default_value = "20")]
    pub keepalive_timeout_seconds: Option<f64>,
    /// Calls in progress at once on one connection (HTTP/2 streams).
    #[arg(long, env = "DPAGG_MAX_STREAMS_PER_CONNECTION", default_value = "32")]
    pub max_streams_per_connection: Option<u32>,
    /// Connections to the metrics endpoint held at once.
    #[arg(long, env = "DPAGG_METRICS_MAX_CONNECTIONS", default_value = "32")]
    pub metrics_max_connections: Option<u32>,
    /// Seconds a metrics client has to send a request's header (also the longest pause
    /// between requests on one connection).
    #[arg(
        long,
        env = "DPAGG_METRICS_HEADER_TIMEOUT_SECONDS",
        default_value = "5"
    )]
    pub metrics_header_timeout_seconds: Option<f64>,
}

/// The resolved limits of both listeners.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// gRPC connections held at once, handshaking or open.
    pub max_connections: usize,
    /// gRPC connections held at once per organisation.
    pub max_connections_per_peer: usize,
    /// TLS handshakes in progress at once per IP address.
    pub max_handshakes_per_address: usize,
    /// Time to finish the TLS handshake.
    pub handshake_timeout: Duration,
    /// A connection without a call in progress for this long is closed.
    pub idle_timeout: Duration,
    /// HTTP/2 PING interval on a quiet connection.
    pub keepalive_interval: Duration,
    /// Time a PING may go unanswered.
    pub keepalive_timeout: Duration,
    /// Calls in progress at once on one connection.
    pub max_streams_per_connection: u32,
    /// Metrics connections held at once.
    pub metrics_max_connections: usize,
    /// Time to send a metrics request's header.
    pub metrics_header_timeout: Duration,
}

impl Limits {
    /// The longest a call may take, from its first byte to its answer: past the training cap
    /// (`max_training_seconds`) with room for a queue, so that only a client that trickles its
    /// request (and so holds a connection busy) is cut off.
    pub fn call_timeout(max_training_seconds: f64) -> Duration {
        Duration::from_secs_f64(2.0 * max_training_seconds + 60.0)
    }

    /// These limits within a file limit of `files` descriptors: when both listeners' caps and
    /// [`RESERVED_FILES`] do not fit, the caps are lowered in proportion (at least one
    /// connection each), with a sentence saying so.
    pub fn fit_to_files(self, files: u64) -> (Self, Option<String>) {
        let grpc = self.max_connections as u64;
        let metrics = self.metrics_max_connections as u64;
        let room = files.saturating_sub(RESERVED_FILES);
        if grpc + metrics <= room {
            return (self, None);
        }
        let metrics_fit = (metrics * room / (grpc + metrics)).max(1);
        let grpc_fit = room.saturating_sub(metrics_fit).max(1);
        let fitted = Self {
            max_connections: grpc_fit as usize,
            metrics_max_connections: metrics_fit as usize,
            ..self
        };
        let note = format!(
            "the process may open {files} files: serving at most {grpc_fit} gRPC and \
             {metrics_fit} metrics connections instead of limits.max_connections = {grpc} and \
             limits.metrics_max_connections = {metrics}; raise `ulimit -n` (or LimitNOFILE) to \
             at least {} to keep them",
            grpc + metrics + RESERVED_FILES
        );
        (fitted, Some(note))
    }
}

/// Raises the soft limit on open files to the hard limit and returns the limit in force
/// (`None` where it cannot be read).
pub fn raise_file_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}

/// Resolves the `[limits]` settings of `l`.
pub fn resolve(l: &mut Layers<'_, Settings>) -> Result<Limits, ConfigError> {
    let count = |s: Setting<u32>| {
        s.check("a whole number >= 1", |v| *v >= 1)
            .map(|v| v as usize)
    };
    let seconds = |s: Setting<f64>| {
        s.check("a finite number of seconds > 0", |v| {
            v.is_finite() && *v > 0.0 && *v < 1e9
        })
        .map(Duration::from_secs_f64)
    };
    Ok(Limits {
        max_connections: count(l.require("limits.max_connections", |s| {
            s.limits.max_connections.take()
        })?)?,
        max_connections_per_peer: count(l.require("limits.max_connections_per_peer", |s| {
            s.limits.max_connections_per_peer.take()
        })?)?,
        max_handshakes_per_address: count(
            l.require("limits.max_handshakes_per_address", |s| {
                s.limits.max_handshakes_per_address.take()
            })?,
        )?,
        handshake_timeout: seconds(l.require("limits.handshake_timeout_seconds", |s| {
            s.limits.handshake_timeout_seconds.take()
        })?)?,
        idle_timeout: seconds(l.require("limits.idle_timeout_seconds", |s| {
            s.limits.idle_timeout_seconds.take()
        })?)?,
        keepalive_interval: seconds(l.require("limits.keepalive_interval_seconds", |s| {
            s.limits.keepalive_interval_seconds.take()
        })?)?,
        keepalive_timeout: seconds(l.require("limits.keepalive_timeout_seconds", |s| {
            s.limits.keepalive_timeout_seconds.take()
        })?)?,
        max_streams_per_connection: count(l.require("limits.max_streams_per_connection", |s| {
            s.limits.max_streams_per_connection.take()
        })?)? as u32,
        metrics_max_connections: count(l.require("limits.metrics_max_connections", |s| {
            s.limits.metrics_max_connections.take()
        })?)?,
        metrics_header_timeout: seconds(
            l.require("limits.metrics_header_timeout_seconds", |s| {
                s.limits.metrics_header_timeout_seconds.take()
            })?,
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits `args` give (no file, flag or variable: the defaults).
    fn limits_from(args: &[&str]) -> Result<Limits, ConfigError> {
        let command = <Settings as clap::Args>::augment_args(clap::Command::new("node"));
        let matches = command
            .try_get_matches_from(std::iter::once("node").chain(args.iter().copied()))
            .expect("parses");
        let settings =
            <Settings as clap::FromArgMatches>::from_arg_matches(&matches).expect("settings");
        resolve(&mut Layers::read(settings, &matches)?)
    }

    #[test]
    fn limits_are_settings_and_bad_ones_are_named() {
        let l = limits_from(&[
            "--max-connections-per-peer",
            "3",
            "--idle-timeout-seconds",
            "0.5",
        ])
        .expect("valid");
        assert_eq!(l.max_connections_per_peer, 3);
        assert_eq!(l.idle_timeout, Duration::from_millis(500));
        let e = limits_from(&["--max-connections", "0"]).expect_err("zero");
        assert_eq!(e.key, "limits.max_connections");
        let e = limits_from(&["--metrics-header-timeout-seconds", "inf"]).expect_err("inf");
        assert_eq!(e.key, "limits.metrics_header_timeout_seconds");
    }

    #[test]
    fn caps_that_do_not_fit_the_file_limit_are_lowered_and_named() {
        let limits = limits_from(&[]).expect("the defaults");
        let (same, note) = limits.fit_to_files(1 << 20);
        assert_eq!((same, note), (limits, None));
        let (fitted, note) = limits.fit_to_files(512);
        let note = note.expect("a note");
        assert!(
            fitted.max_connections + fitted.metrics_max_connections
                <= (512 - RESERVED_FILES) as usize
        );
        assert!(fitted.metrics_max_connections >= 1 && fitted.max_connections >= 1);
        assert!(note.contains("limits.max_connections = 512"), "{note}");
        assert!(note.contains("at least 608"), "{note}");
        let (tiny, _) = limits.fit_to_files(10);
        assert_eq!((tiny.max_connections, tiny.metrics_max_connections), (1, 1));
    }

    #[test]
    fn calls_may_outlast_the_training_cap() {
        assert!(Limits::call_timeout(120.0) > Duration::from_secs(120));
    }
}
