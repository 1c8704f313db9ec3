//! The end of a command-line tool: its results on stdout, its error on stderr, its exit status.
//!
//! Results go through [`Out`], which returns errors instead of panicking as `println!` does. A
//! write that fails because the reader went away (`dpagg-node ledger | head -1`) is marked
//! [`StdoutClosed`], and [`exit_code`] treats it as a clean exit (status 0, nothing on stderr):
//! the reader took what it wanted. Only writes through [`Out`] are marked, so a broken pipe
//! anywhere else (a socket, a child process) is still an error — `dpagg-node health` must never
//! succeed because a connection broke. Any other error is printed as one line, `error: …`, its
//! causes joined by `: `, and the status is 1.

use super::log::LogFormat;
use std::error::Error;
use std::io::{self, Write};
use std::process::ExitCode;

/// The cause of a failed write to stdout whose reader went away.
///
/// It carries a source of its own because `io::Error::source` skips to its inner error's
/// source, and so does `anyhow`'s boxed error: the marker is found by walking `source()` from
/// any wrapper.
#[derive(Debug, thiserror::Error)]
#[error("stdout is closed")]
pub struct StdoutClosed {
    #[source]
    cause: ReaderGone,
}

/// The source of [`StdoutClosed`].
#[derive(Debug, thiserror::Error)]
#[error("the reader went away")]
struct ReaderGone;

/// The tool's standard output: writes return `io::Result` (use `write!`/`writeln!` and `?`).
///
/// A broken pipe comes back as an [`io::Error`] of kind [`io::ErrorKind::BrokenPipe`] whose
/// inner error is [`StdoutClosed`]; [`exit_code`] recognises it anywhere in an error's chain.
#[derive(Debug)]
pub struct Out {
    stdout: io::Stdout,
}

impl Out {
    /// The process's stdout (line-buffered, as `println!` is).
    pub fn stdout() -> Self {
        Self {
            stdout: io::stdout(),
        }
    }
}

impl Default for Out {
    fn default() -> Self {
        Self::stdout()
    }
}

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stdout.write(buf).map_err(mark)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.stdout.lock().write_all(buf).map_err(mark)
    }

    fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> io::Result<()> {
        self.stdout.lock().write_fmt(args).map_err(mark)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.stdout.flush().map_err(mark)
    }
}

fn mark(e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        io::Error::new(
            io::ErrorKind::BrokenPipe,
            StdoutClosed { cause: ReaderGone },
        )
    } else {
        e
    }
}

/// `error` and its causes, outermost first.
fn chain<'a>(error: &'a (dyn Error + 'static)) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(error), |&e| e.source())
}

/// Whether `error` or one of its causes is a write through [`Out`] to a closed stdout.
pub fn is_stdout_closed(error: &(dyn Error + 'static)) -> bool {
    chain(error).any(|e| {
        e.is::<StdoutClosed>()
            || e.is::<ReaderGone>()
            || e.downcast_ref::<io::Error>()
                .and_then(io::Error::get_ref)
                .is_some_and(|inner| inner.is::<StdoutClosed>())
    })
}

/// `error` and its causes on one line, joined by `: `, with every run of whitespace (newlines
/// included) made one space. A cause whose text the line already holds (an error that prints
/// its source) is not repeated.
pub fn one_line(error: &(dyn Error + 'static)) -> String {
    let mut line = String::new();
    for e in chain(error) {
        let text = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if text.is_empty() || line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// The exit status of a tool whose work ended with `result`; prints the error, if any, as one
/// line `error: …` on stderr. A closed stdout ([`is_stdout_closed`]) counts as success.
///
/// `anyhow::Error` converts into the boxed error with its chain intact.
pub fn exit_code<E>(result: Result<(), E>) -> ExitCode
where
    E: Into<Box<dyn Error + Send + Sync + 'static>>,
{
    exit_code_as(result, LogFormat::Human)
}

/// [`exit_code`] in a log format: with [`LogFormat::Json`] the error is one JSON object on
/// stderr, in the shape of the log events (`timestamp`, `level` = `ERROR`, `fields.message`,
/// `target`), so a log collector reads the fatal error like every other line.
pub fn exit_code_as<E>(result: Result<(), E>, format: LogFormat) -> ExitCode
where
    E: Into<Box<dyn Error + Send + Sync + 'static>>,
{
    let Err(error) = result else {
        return ExitCode::SUCCESS;
    };
    let error: Box<dyn Error + Send + Sync + 'static> = error.into();
    if is_stdout_closed(&*error) {
        return ExitCode::SUCCESS;
    }
    let message = one_line(&*error);
    let line = match format {
        LogFormat::Human => format!("error: {message}"),
        LogFormat::Json => json_error(&message),
    };
    // Nothing is left to report a failure of stderr to.
    let _ = writeln!(io::stderr(), "{line}");
    ExitCode::FAILURE
}

/// A fatal error as one JSON log event.
fn json_error(message: &str) -> String {
    serde_json::json!({
        "timestamp": crate::util::time::rfc3339(crate::util::time::now_ms()),
        "level": "ERROR",
        "fields": { "message": format!("error: {message}") },
        "target": "dpagg",
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{context}")]
    struct Context {
        context: String,
        #[source]
        source: Box<dyn Error + Send + Sync>,
    }

    fn wrap(context: &str, source: impl Into<Box<dyn Error + Send + Sync>>) -> Context {
        Context {
            context: context.into(),
            source: source.into(),
        }
    }

    #[test]
    fn a_json_fatal_error_is_one_log_event() {
        let line = json_error("x.toml: bad \"quote\"\nand newline");
        assert!(!line.contains('\n'), "{line}");
        let v: serde_json::Value = serde_json::from_str(&line).expect("json");
        assert_eq!(v["level"], "ERROR");
        assert_eq!(
            v["fields"]["message"],
            "error: x.toml: bad \"quote\"\nand newline"
        );
        assert!(
            v["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
    }

    #[test]
    fn one_line_joins_the_chain_and_drops_newlines_and_repeats() {
        let io = io::Error::new(io::ErrorKind::NotFound, "no such\nfile");
        let e = wrap("x.toml: cannot read: no such file", io);
        assert_eq!(one_line(&e), "x.toml: cannot read: no such file");
        let e = wrap("loading", wrap("x.csv: line 3", "bad\n  value"));
        assert_eq!(one_line(&e), "loading: x.csv: line 3: bad value");
    }

    /// What `anyhow` makes of an error boxed into `Box<dyn Error>`: the same Display and
    /// source, but not downcastable to the inner type.
    #[derive(Debug)]
    struct Opaque(Box<dyn Error + Send + Sync>);

    impl std::fmt::Display for Opaque {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.0.fmt(f)
        }
    }

    impl Error for Opaque {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.0.source()
        }
    }

    #[test]
    fn only_a_marked_broken_pipe_counts_as_a_closed_stdout() {
        let opaque = Opaque(Box::new(mark(io::ErrorKind::BrokenPipe.into())));
        assert!(is_stdout_closed(&opaque));
        let opaque = Opaque(Box::new(io::Error::from(io::ErrorKind::BrokenPipe)));
        assert!(!is_stdout_closed(&opaque));
        let marked = mark(io::Error::from(io::ErrorKind::BrokenPipe));
        assert!(is_stdout_closed(&marked));
        assert!(is_stdout_closed(&wrap("printing the table", marked)));
        let socket = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(!is_stdout_closed(&wrap("health check", socket)));
        let other = mark(io::Error::from(io::ErrorKind::StorageFull));
        assert!(!is_stdout_closed(&other));
    }
}
