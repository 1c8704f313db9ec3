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

/// The levels a `$DPAGG_LOG` directive may name.
const LEVELS: [&str; 6] = ["trace", "debug", "info", "warn", "error", "off"];

/// Checks `$DPAGG_LOG`: each comma-separated directive is a level (`debug`) or
/// `target=level` (`dpagg_node=trace`). `EnvFilter` itself takes a bare unknown word such as
/// `verbose` for a target name and logs nothing of it, silently; that is refused here.
pub fn check_log_env() -> Result<(), String> {
    match std::env::var("DPAGG_LOG") {
        Ok(value) => check_log_directives(&value),
        Err(_) => Ok(()),
    }
}

/// [`check_log_env`] of a given value.
pub fn check_log_directives(value: &str) -> Result<(), String> {
    let bad = |why: &str| {
        format!(
            "$DPAGG_LOG = {value:?}: {why} (levels: {}; or target=level, e.g. dpagg_node=debug)",
            LEVELS.join(", ")
        )
    };
    for directive in value.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let level = directive.rsplit_once('=').map_or(directive, |(_, l)| l);
        if !LEVELS.iter().any(|l| l.eq_ignore_ascii_case(level)) {
            return Err(bad(&format!("`{level}` is not a log level")));
        }
    }
    tracing_subscriber::EnvFilter::builder()
        .parse(value)
        .map(|_| ())
        .map_err(|e| bad(&e.to_string()))
}

/// Installs the global subscriber: events on stderr in `format`, filtered by `$DPAGG_LOG`
/// (an `EnvFilter` directive such as `debug` or `dpagg_node=trace`, checked by
/// [`check_log_env`] first) or else `default_level`.
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
        // A JSON line names its target, so audit lines (`dpagg::audit`) can be picked out of a
        // shared log stream.
        LogFormat::Json => builder.json().with_target(true).try_init(),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_and_target_levels_pass_and_unknown_words_do_not() {
        for (value, ok) in [
            ("debug", true),
            ("dpagg_node=trace,warn", true),
            ("INFO", true),
            ("", true),
            ("verbose", false),
            ("dpagg_node=loud", false),
        ] {
            assert_eq!(check_log_directives(value).is_ok(), ok, "{value}");
        }
        let e = check_log_directives("verbose").expect_err("refused");
        assert!(
            e.starts_with("$DPAGG_LOG = \"verbose\": `verbose` is not a log level"),
            "{e}"
        );
    }
}
