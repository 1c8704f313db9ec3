//! Parsing the command line while keeping clap's [`ArgMatches`]: they alone say whether a
//! value came from a flag, an environment variable or a default
//! ([`ArgMatches::value_source`]), which [`super::Layers`] needs to blame the right source.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{ArgMatches, Command};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::process::ExitCode;

/// Parses the process's arguments with `command` (`C::command()`, perhaps with a name and
/// version set) into `C`, and returns the matches with it.
///
/// `--help` and `--version` are printed on stdout (help for a missing subcommand on stderr,
/// as clap does). A usage error is printed as one line on
/// stderr: `error: …`, clap's tips and usage joined by `; `, and prefixed with the environment
/// variable when the bad value came from one (clap itself names only the flag). `Err` holds the
/// exit status clap chose (0 after help, 2 for usage errors).
pub fn parse<C: clap::FromArgMatches>(command: Command) -> Result<(C, ArgMatches), ExitCode> {
    parse_from(command, std::env::args_os())
}

/// [`parse`] over given arguments (the first is the program name).
pub fn parse_from<C, I, T>(mut command: Command, args: I) -> Result<(C, ArgMatches), ExitCode>
where
    C: clap::FromArgMatches,
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let parsed = command
        .try_get_matches_from_mut(&args)
        .and_then(|m| C::from_arg_matches(&m).map(|c| (c, m)));
    parsed.map_err(|e| {
        let e = e.format(&mut command);
        let code = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        if e.use_stderr() && e.kind() != ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            let line = usage_error_line(&e, &command, &args);
            let _ = writeln!(std::io::stderr(), "{line}");
        } else {
            // Help (asked for, or shown for a missing subcommand) or version, as clap prints
            // them; a reader that went away is no error.
            let _ = e.print();
        }
        code
    })
}

/// A clap usage error as one line, `error: …`.
pub fn usage_error_line(e: &clap::Error, command: &Command, args: &[OsString]) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = String::from("error: ");
    if let Some(var) = blamed_variable(e, command, args) {
        line.push_str(&format!("${var}: "));
    }
    line.push_str(first.strip_prefix("error: ").unwrap_or(first));
    for l in lines {
        line.push_str("; ");
        line.push_str(l);
    }
    line
}

/// The environment variable a rejected value came from: the flag clap names is not on the
/// command line, and one of its variables holds exactly the rejected value.
fn blamed_variable(e: &clap::Error, command: &Command, args: &[OsString]) -> Option<String> {
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue) else {
        return None;
    };
    // "--epsilon-total <EPSILON_TOTAL>" → "--epsilon-total"
    let flag = arg.split_whitespace().next()?;
    let long = flag.strip_prefix("--")?;
    let given = args.iter().skip(1).any(|a| {
        a.to_str()
            .is_some_and(|a| a == flag || a.strip_prefix(flag).is_some_and(|r| r.starts_with('=')))
    });
    if given {
        return None;
    }
    variable_holding(command, long, OsStr::new(value))
}

/// The environment variable of an argument `--long` (in `command` or a subcommand) whose
/// current value is `value`.
fn variable_holding(command: &Command, long: &str, value: &OsStr) -> Option<String> {
    command
        .get_arguments()
        .filter(|a| a.get_long() == Some(long))
        .filter_map(|a| a.get_env())
        .find(|var| std::env::var_os(var).as_deref() == Some(value))
        .map(|var| var.to_string_lossy().into_owned())
        .or_else(|| {
            command
                .get_subcommands()
                .find_map(|c| variable_holding(c, long, value))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    /// A test tool.
    #[derive(Debug, Parser)]
    struct Tool {
        /// A number.
        #[arg(
            long,
            env = "DPAGG_TEST_PARSE_NUMBER_UNSET",
            allow_negative_numbers = true
        )]
        number: Option<f64>,
    }

    fn error_of(args: &[&str]) -> String {
        let mut command = Tool::command();
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let e = command
            .try_get_matches_from_mut(&args)
            .expect_err("a usage error");
        usage_error_line(&e, &command, &args)
    }

    #[test]
    fn usage_errors_are_one_line() {
        let line = error_of(&["tool", "--number", "abc"]);
        assert!(line.starts_with("error: invalid value 'abc'"), "{line}");
        assert!(line.contains("--number"), "{line}");
        assert!(!line.contains('\n') && !line.contains('$'), "{line}");
        let line = error_of(&["tool", "--colour"]);
        assert!(line.contains("unexpected argument '--colour'"), "{line}");
        assert!(line.contains("Usage: tool"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    #[test]
    fn parsing_keeps_the_matches() {
        let (tool, matches) =
            parse_from::<Tool, _, _>(Tool::command(), ["tool", "--number", "-1.5"])
                .map_err(|_| "usage error")
                .expect("parses");
        assert_eq!(tool.number, Some(-1.5));
        assert_eq!(
            matches.value_source("number"),
            Some(clap::parser::ValueSource::CommandLine)
        );
    }
}
