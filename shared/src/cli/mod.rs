//! Plumbing shared by the command-line tools `dpagg-node` and `dpagg-aggregator` (cargo feature
//! `cli`; the library without it depends on neither clap nor tracing-subscriber).
//!
//! - [`log`]: `--log-format human|json` and [`init_tracing`] (filter from `DPAGG_LOG`, ANSI
//!   colour only when stderr is a terminal).
//! - [`mod@parse`]: parses the command line keeping clap's [`clap::ArgMatches`], which say where
//!   each value came from; usage errors become one line that blames an environment variable when
//!   the bad value came from one.
//! - [`settings`]: [`ConfigError`] (one line: origin, key, what is wrong) and [`Layers`], which
//!   resolves a [`FileSettings`] struct given by flags, environment and a TOML file, remembering
//!   the [`Origin`] of every value.
//! - [`learner`]: [`LearnerArgs`], the learner-spec flags (`--mechanism`, `--delta`,
//!   `--lambda`, `--option`) every command that trains flattens, with the mechanism help
//!   generated from the registry.
//! - `config_fuzz` (feature `config-fuzz`, tests only): the TOML strategies of the tools'
//!   configuration-file property tests.
//! - [`exit`]: the end of every tool — [`Out`] writes stdout and turns a reader that went away
//!   (`| head -1`) into a clean exit; [`exit_code`] prints any other error as one `error: …`
//!   line on stderr and returns a failure status.
//!
//! [`Tool`] is every tool's command line (logging flags and subcommands) and [`run_tool`]
//! strings the rest together: a tool's `main` is one call.

#[cfg(feature = "config-fuzz")]
pub mod config_fuzz;
pub mod exit;
pub mod learner;
pub mod log;
pub mod parse;
pub mod settings;

pub use exit::{Out, exit_code};
pub use learner::LearnerArgs;
pub use log::{LogArgs, LogFormat, init_tracing};
pub use parse::parse;
pub use settings::{
    ConfigError, ConfigErrorKind, FileSettings, Layers, Origin, Setting, read_toml,
};

use clap::{ArgMatches, CommandFactory};
use std::io::Write;
use std::process::ExitCode;

/// A command-line tool: the logging flags every tool has, and its subcommands `C`.
#[derive(Debug, clap::Parser)]
pub struct Tool<C: clap::Subcommand> {
    /// `--log-format`.
    #[command(flatten)]
    pub log: LogArgs,
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: C,
}

/// What a tool says about itself in `--help` and `--version`; [`crate::tool_about!`] takes it
/// from the calling crate's `Cargo.toml`.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The binary's name.
    pub name: &'static str,
    /// Its version.
    pub version: &'static str,
    /// One line on what it is.
    pub about: &'static str,
}

/// The [`About`] of the crate that invokes it: package name, version and
/// description.
#[macro_export]
macro_rules! tool_about {
    () => {
        $crate::cli::About {
            name: env!("CARGO_PKG_NAME"),
            version: env!("CARGO_PKG_VERSION"),
            about: env!("CARGO_PKG_DESCRIPTION"),
        }
    };
}

/// The whole life of a command-line tool with subcommands `C`: parse the command line
/// ([`parse()`]), install logging with the default level `level` gives for the chosen
/// subcommand, run `body` with the subcommand, its matches and stdout, flush stdout, and turn
/// the result into the exit status ([`exit_code`]).
pub fn run_tool<C, E>(
    about: About,
    level: impl FnOnce(&C) -> &'static str,
    body: impl FnOnce(C, &ArgMatches, &mut Out) -> Result<(), E>,
) -> ExitCode
where
    C: clap::Subcommand,
    E: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    let command = Tool::<C>::command()
        .name(about.name)
        .version(about.version)
        .about(about.about);
    let (tool, matches) = match parse::<Tool<C>>(command) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    let format = tool.log.log_format;
    if let Err(e) = log::check_log_env() {
        return exit::exit_code_as(Err(e), format);
    }
    init_tracing(format, level(&tool.command));
    let matches = matches.subcommand().map_or(&matches, |(_, m)| m);
    let mut out = Out::stdout();
    let result = body(tool.command, matches, &mut out)
        .map_err(Into::into)
        .and_then(|()| out.flush().map_err(Into::into));
    exit::exit_code_as(result, format)
}
