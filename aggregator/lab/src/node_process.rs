//! `dpagg-node` child processes for the lab commands that need real nodes (`demo`,
//! `bench-fetch`): the aggregator runs the node *binary*, it does not link the node crate.
//!
//! - [`node_binary`]: the `dpagg-node` next to this executable (`cargo build --release` builds
//!   both), or the one `--node-binary` / `$DPAGG_NODE_BINARY` names; missing, a one-line error
//!   says how to build it.
//! - [`command`]: a `dpagg-node` command whose environment carries none of this process's
//!   `DPAGG_*` settings (they are the aggregator's, not the node's) except the logging ones,
//!   logging at `warn` unless `$DPAGG_LOG` says otherwise.
//! - [`Fleet`]: serving nodes, each started with `--listen 127.0.0.1:0` (the node binds a free
//!   port itself and prints it on its first line, so no port is guessed and none can be taken
//!   in between; the integration tests start nodes the same way) and killed when the fleet is
//!   dropped — after the run, on an error, and on Ctrl-C or SIGTERM ([`until_interrupted`]), so
//!   no node outlives the command.

use anyhow::{Context, Result, bail};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The environment variable naming the `dpagg-node` binary (as `--node-binary` does).
pub const NODE_BINARY_ENV: &str = "DPAGG_NODE_BINARY";

/// The first line of `dpagg-node serve`, before its address.
const LISTENING: &str = "dpagg-node listening on ";

/// The `dpagg-node` binary: `given`, or the one next to this executable.
pub fn node_binary(given: Option<PathBuf>) -> Result<PathBuf> {
    let path = match given {
        Some(p) => p,
        None => std::env::current_exe()
            .context("cannot locate this executable")?
            .with_file_name(format!("dpagg-node{}", std::env::consts::EXE_SUFFIX)),
    };
    if !path.is_file() {
        bail!(
            "{}: no dpagg-node binary: build it with `cargo build --release` (or name one with \
             --node-binary or ${NODE_BINARY_ENV})",
            path.display()
        );
    }
    Ok(path)
}

/// A `dpagg-node` command: no `DPAGG_*` variable of this process but the logging ones, the log
/// level `warn` unless `$DPAGG_LOG` is set, stdin closed, killed if dropped while running.
pub fn command(binary: &Path) -> Command {
    let mut command = Command::new(binary);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if key.starts_with("DPAGG_") && !matches!(key, "DPAGG_LOG" | "DPAGG_LOG_FORMAT") {
            command.env_remove(key);
        }
    }
    if std::env::var_os("DPAGG_LOG").is_none() {
        command.env("DPAGG_LOG", "warn");
    }
    command.stdin(Stdio::null()).kill_on_drop(true);
    command
}

/// Runs a one-shot `dpagg-node` command (e.g. `publish`) to its end; its one-line error if it
/// fails.
pub async fn run_to_end(mut command: Command) -> Result<()> {
    let out = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .await
        .context("cannot start dpagg-node")?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.lines().rev().find(|l| !l.trim().is_empty());
        let line = line.unwrap_or("no message").trim();
        bail!("{}", line.strip_prefix("error: ").unwrap_or(line));
    }
    Ok(())
}

/// Serving `dpagg-node` processes; every one is killed when the fleet is dropped.
#[derive(Debug, Default)]
pub struct Fleet(Vec<Child>);

impl Fleet {
    /// An empty fleet with room for `n` nodes.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Starts `command` (a `dpagg-node serve` with `--listen 127.0.0.1:0`); its address is
    /// read by [`Fleet::urls`], so many nodes start at once.
    pub fn spawn(&mut self, mut command: Command) -> Result<()> {
        let child = command
            .stdout(Stdio::piped())
            .spawn()
            .context("cannot start dpagg-node")?;
        self.0.push(child);
        Ok(())
    }

    /// The URL of each node started since the last call (`https://127.0.0.1:PORT` with `tls`,
    /// else `http://…`), in the order they were started.
    pub async fn urls(&mut self, tls: bool) -> Result<Vec<String>> {
        let scheme = if tls { "https" } else { "http" };
        let mut out = Vec::new();
        for child in &mut self.0 {
            let Some(stdout) = child.stdout.take() else {
                continue;
            };
            let mut line = String::new();
            BufReader::new(stdout)
                .read_line(&mut line)
                .await
                .context("cannot read from dpagg-node")?;
            let addr = line
                .trim()
                .strip_prefix(LISTENING)
                .with_context(|| format!("dpagg-node did not start (said {:?})", line.trim()))?;
            out.push(format!("{scheme}://{addr}"));
        }
        Ok(out)
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.start_kill();
        }
    }
}

/// `work`, unless Ctrl-C or SIGTERM comes first: then an error, and whatever `work` holds (a
/// [`Fleet`]) is dropped, which stops the nodes.
pub async fn until_interrupted<T>(work: impl Future<Output = Result<T>>) -> Result<T> {
    #[cfg(unix)]
    let term = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        result = work => result,
        _ = tokio::signal::ctrl_c() => bail!("interrupted (Ctrl-C): the nodes were stopped"),
        () = term => bail!("terminated (SIGTERM): the nodes were stopped"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_binary_says_how_to_build_it() {
        let e = node_binary(Some("/nonexistent/dpagg-node".into())).expect_err("missing");
        let e = e.to_string();
        assert!(e.contains("cargo build --release"), "{e}");
        assert!(e.contains(NODE_BINARY_ENV), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[tokio::test]
    async fn dropping_the_fleet_kills_its_processes() {
        let mut fleet = Fleet::default();
        let mut sleeper = Command::new("sleep");
        sleeper.arg("60").kill_on_drop(true);
        fleet.spawn(sleeper).expect("sleep starts");
        let pid = fleet.0[0].id().expect("running");
        drop(fleet);
        // SIGKILL is delivered at once; the process is gone (or a zombie) within moments.
        let gone = (0..100).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z")
        });
        assert!(gone, "process {pid} still runs");
    }
}
