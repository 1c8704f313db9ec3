//! Logging of the command-line tools: `tracing` events on stderr, human-readable or JSON.

use std::io::IsTerminal;

/// Log format on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line per event, for people (coloured on a terminal).
    Human,
    /// One JSON object per event, for log collectors.
    Json,
}

/// The logging flags every tool has (`--log-format`, `$DPAGG_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct LogArgs {
    /// Log format on stderr (the level comes from $DPAGG_LOG, e.g. `debug`).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human, env = "DPAGG_LOG_FORMAT")]
    pub log_format: LogFormat,
}

/// Installs the global subscriber: events on stderr in `format`, filtered by `$DPAGG_LOG`
/// (an `EnvFilter` directive such as `debug` or `dpagg_node=trace`) or else `default_level`.
///
/// Colour codes are written only when stderr is a terminal (and `$NO_COLOR` is unset), so log
/// files and collectors get plain text. A second call does nothing.
pub fn init_tracing(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DPAGG_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(ansi);
    // Err only if a subscriber is already installed, which is then kept.
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
