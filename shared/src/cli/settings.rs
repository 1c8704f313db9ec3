//! Settings given by a TOML file, flags and environment variables, resolved with the origin of
//! every value, and the one error type of their resolution.
//!
//! A tool's settings are one struct deriving both `clap::Args` and `serde::Deserialize`, every
//! field an `Option` ([`FileSettings`]). clap parses it from the command line and the
//! environment (each default is written once, as the argument's `default_value`); serde reads
//! the same struct from the file named by its `config` setting, whose relative paths are taken
//! relative to the file. [`Layers`] then takes each setting from the first of:
//!
//! 1. a flag or an environment variable ([`clap::parser::ValueSource::CommandLine`] /
//!    [`EnvVariable`](clap::parser::ValueSource::EnvVariable) in the matches),
//! 2. the file,
//! 3. the argument's default (the value clap filled in with source `DefaultValue`),
//!
//! and returns it as a [`Setting`] that knows its [`Origin`], so a bad value is reported where
//! it was written: `--epsilon-total: …`, `$DPAGG_EPSILON_TOTAL: …` or `node.toml: …`.

use clap::parser::ValueSource;
use clap::{ArgMatches, Command};
use serde::de::DeserializeOwned;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a setting's value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// The configuration file.
    File(PathBuf),
    /// A command-line flag, with its dashes: `--epsilon-total`.
    Flag(String),
    /// An environment variable: `DPAGG_EPSILON_TOTAL`.
    Env(String),
    /// The setting's default.
    Default,
    /// Flags and environment, with no file: where a missing setting was looked for.
    CommandLine,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::File(path) => write!(f, "{}", path.display()),
            Self::Flag(flag) => f.write_str(flag),
            Self::Env(var) => write!(f, "${var}"),
            Self::Default => f.write_str("default"),
            Self::CommandLine => f.write_str("command line"),
        }
    }
}

/// What is wrong with a setting.
#[derive(Debug)]
pub enum ConfigErrorKind {
    /// It is required and nowhere given.
    Missing {
        /// Where it can be given: "set it in the file, with --data or $DPAGG_DATA".
        hint: String,
    },
    /// Its value does not meet a requirement.
    Invalid {
        /// The value as given.
        value: String,
        /// What it must be: "a finite number >= 0".
        requirement: &'static str,
    },
    /// The configuration file cannot be read.
    Unreadable(std::io::Error),
    /// The configuration file is not TOML of the expected shape.
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's message, on one line.
        message: String,
    },
}

/// A configuration problem: where the value came from, which setting, what is wrong. Its
/// Display is one line, starting with the origin.
#[derive(Debug)]
pub struct ConfigError {
    /// Where the bad value came from (for a missing setting: the file, or the command line).
    pub origin: Origin,
    /// The setting's name as written in the file: `policy.epsilon_total` (`config` for a
    /// problem of the file as a whole).
    pub key: &'static str,
    /// What is wrong.
    pub kind: ConfigErrorKind,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (origin, key) = (&self.origin, self.key);
        match &self.kind {
            ConfigErrorKind::Missing { hint } => write!(f, "{origin}: missing `{key}` ({hint})"),
            ConfigErrorKind::Invalid { value, requirement } => {
                write!(f, "{origin}: `{key}` = {value}: must be {requirement}")
            }
            ConfigErrorKind::Unreadable(e) => {
                write!(f, "{origin}: cannot read the configuration: {e}")
            }
            ConfigErrorKind::Syntax {
                line,
                column,
                message,
            } => write!(f, "{origin}:{line}:{column}: {message}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ConfigErrorKind::Unreadable(e) => Some(e),
            _ => None,
        }
    }
}

/// Reads a settings file (TOML). Errors name the file, and the line and column of a syntax
/// error or an unknown key.
pub fn read_toml<S: DeserializeOwned>(path: &Path) -> Result<S, ConfigError> {
    let error = |kind| ConfigError {
        origin: Origin::File(path.to_owned()),
        key: "config",
        kind,
    };
    let text = std::fs::read_to_string(path).map_err(|e| error(ConfigErrorKind::Unreadable(e)))?;
    toml::from_str(&text).map_err(|e| {
        let start = e.span().map_or(0, |s| s.start).min(text.len());
        let before = text.get(..start).unwrap_or_default();
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .unwrap_or_default()
            .chars()
            .count()
            + 1;
        let message = e.message().split_whitespace().collect::<Vec<_>>().join(" ");
        error(ConfigErrorKind::Syntax {
            line,
            column,
            message,
        })
    })
}

/// A resolved setting: its value, its name and where the value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    /// The setting's name as written in the file.
    pub key: &'static str,
    /// Its value.
    pub value: T,
    /// Where the value came from.
    pub origin: Origin,
}

impl<T> Setting<T> {
    /// The error "this value (shown as `value`) must be `requirement`", blaming its origin.
    pub fn invalid(&self, value: impl fmt::Display, requirement: &'static str) -> ConfigError {
        ConfigError {
            origin: self.origin.clone(),
            key: self.key,
            kind: ConfigErrorKind::Invalid {
                value: value.to_string(),
                requirement,
            },
        }
    }

    /// The value if `ok` holds for it, else the error that it must be `requirement`.
    pub fn check(
        self,
        requirement: &'static str,
        ok: impl FnOnce(&T) -> bool,
    ) -> Result<T, ConfigError>
    where
        T: fmt::Display,
    {
        if ok(&self.value) {
            Ok(self.value)
        } else {
            Err(self.invalid(&self.value, requirement))
        }
    }

    /// Whether nobody set it (the value is the default).
    pub fn is_default(&self) -> bool {
        self.origin == Origin::Default
    }
}

/// A settings struct that may name its configuration file (`--config`), and whose path
/// settings, when written in that file, are relative to the file's folder.
pub trait FileSettings: clap::Args + DeserializeOwned + Default {
    /// Takes out the path of the configuration file, if one is given.
    fn take_config(&mut self) -> Option<PathBuf>;

    /// The settings that are paths.
    fn paths(&mut self) -> Vec<&mut Option<PathBuf>>;
}

/// Reads a settings file; relative paths in it are made relative to the file's folder.
fn read_settings<S: FileSettings>(path: &Path) -> Result<S, ConfigError> {
    let mut settings: S = read_toml(path)?;
    let base = path.parent().unwrap_or(Path::new(""));
    for p in settings.paths().into_iter().flatten() {
        if p.is_relative() {
            *p = base.join(&*p);
        }
    }
    Ok(settings)
}

/// The layers a settings struct `S` is resolved from: what clap parsed (flags, environment and
/// defaults, told apart by the matches) and what the file holds.
#[derive(Debug)]
pub struct Layers<'m, S> {
    given: S,
    file: S,
    file_path: Option<PathBuf>,
    matches: &'m ArgMatches,
    args: Command,
}

impl<'m, S: clap::Args + Default> Layers<'m, S> {
    /// `given` is `S` as clap parsed it from `matches` (the matches of the (sub)command into
    /// which `S` is flattened); `file` is the configuration file and what it holds, if any.
    pub fn new(given: S, file: Option<(PathBuf, S)>, matches: &'m ArgMatches) -> Self {
        let (file_path, file) = match file {
            Some((path, settings)) => (Some(path), settings),
            None => (None, S::default()),
        };
        Self {
            given,
            file,
            file_path,
            matches,
            args: S::augment_args(Command::new("settings")),
        }
    }

    /// The layers of `given`, as clap parsed it from `matches` (the matches of the
    /// (sub)command into which `S` is flattened), and of the file it names, if any.
    pub fn read(mut given: S, matches: &'m ArgMatches) -> Result<Self, ConfigError>
    where
        S: FileSettings,
    {
        let file = match given.take_config() {
            Some(path) => {
                let settings = read_settings(&path)?;
                Some((path, settings))
            }
            None => None,
        };
        Ok(Self::new(given, file, matches))
    }

    /// The setting `key` (`policy.epsilon_total`; its clap id is the part after the last dot),
    /// taken out of each layer by `field`: a flag or the environment, else the file, else the
    /// default. `None` if no layer has it.
    pub fn get<T>(
        &mut self,
        key: &'static str,
        field: impl Fn(&mut S) -> Option<T>,
    ) -> Option<Setting<T>> {
        let id = key.rsplit('.').next().unwrap_or(key);
        let given = field(&mut self.given);
        let from_file = field(&mut self.file);
        let setting = |value, origin| Setting { key, value, origin };
        match (given, self.given_origin(id)) {
            (Some(value), Some(origin)) => Some(setting(value, origin)),
            (default, _) => match (from_file, &self.file_path) {
                (Some(value), Some(path)) => Some(setting(value, Origin::File(path.clone()))),
                _ => default.map(|value| setting(value, Origin::Default)),
            },
        }
    }

    /// [`Layers::get`] for a setting without which nothing can run.
    pub fn require<T>(
        &mut self,
        key: &'static str,
        field: impl Fn(&mut S) -> Option<T>,
    ) -> Result<Setting<T>, ConfigError> {
        self.get(key, field).ok_or_else(|| self.missing(key))
    }

    /// The error "`key` is missing", saying where it can be set.
    pub fn missing(&self, key: &'static str) -> ConfigError {
        let id = key.rsplit('.').next().unwrap_or(key);
        let arg = self.args.get_arguments().find(|a| a.get_id() == id);
        let flag = arg.and_then(|a| a.get_long()).map(|l| format!("--{l}"));
        let env = arg
            .and_then(|a| a.get_env())
            .map(|v| format!("${}", v.to_string_lossy()));
        let hint = match (flag, env) {
            (Some(flag), Some(env)) => format!("set it in the file, with {flag} or {env}"),
            (Some(flag), None) => format!("set it in the file or with {flag}"),
            _ => "set it in the file".to_owned(),
        };
        ConfigError {
            origin: self.file_origin(),
            key,
            kind: ConfigErrorKind::Missing { hint },
        }
    }

    /// The file, or the command line when there is none.
    pub fn file_origin(&self) -> Origin {
        self.file_path
            .clone()
            .map_or(Origin::CommandLine, Origin::File)
    }

    /// The flag or environment variable clap took the argument `id` from (`None` for a default
    /// or an absent value, or when `S` has no such argument).
    fn given_origin(&self, id: &str) -> Option<Origin> {
        let arg = self.args.get_arguments().find(|a| a.get_id() == id)?;
        match self.matches.value_source(id)? {
            ValueSource::CommandLine => Some(Origin::Flag(format!("--{}", arg.get_long()?))),
            ValueSource::EnvVariable => {
                Some(Origin::Env(arg.get_env()?.to_string_lossy().into_owned()))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::FromArgMatches;

    #[derive(Debug, Default, serde::Deserialize, clap::Args)]
    #[serde(deny_unknown_fields)]
    struct Toy {
        #[arg(long, env = "DPAGG_TEST_SETTINGS_NAME_UNSET")]
        name: Option<String>,
        #[arg(long, default_value = "2", allow_negative_numbers = true)]
        rate: Option<f64>,
        #[command(flatten)]
        #[serde(default)]
        inner: Inner,
    }

    #[derive(Debug, Default, serde::Deserialize, clap::Args)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[arg(long, env = "DPAGG_TEST_SETTINGS_LIMIT_UNSET")]
        limit: Option<u32>,
    }

    fn matches(args: &[&str]) -> ArgMatches {
        let command = <Toy as clap::Args>::augment_args(Command::new("toy"));
        command
            .try_get_matches_from(std::iter::once("toy").chain(args.iter().copied()))
            .expect("parses")
    }

    fn toml(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("toy.toml");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn flags_win_over_the_file_which_wins_over_defaults() {
        let (_dir, path) = toml("name = \"file\"\nrate = 3.0\n[inner]\nlimit = 7\n");
        let m = matches(&["--rate", "-1"]);
        let given = Toy::from_arg_matches(&m).expect("toy");
        let file: Toy = read_toml(&path).expect("reads");
        let mut layers = Layers::new(given, Some((path.clone(), file)), &m);
        let rate = layers.require("rate", |s| s.rate.take()).expect("rate");
        assert_eq!(rate.value, -1.0);
        assert_eq!(rate.origin, Origin::Flag("--rate".into()));
        let e = rate.check("> 0", |r| *r > 0.0).expect_err("negative");
        assert_eq!(e.to_string(), "--rate: `rate` = -1: must be > 0");
        let name = layers.require("name", |s| s.name.take()).expect("name");
        assert_eq!(name.origin, Origin::File(path.clone()));
        let limit = layers.get("inner.limit", |s| s.inner.limit.take());
        assert_eq!(limit.map(|l| l.value), Some(7));

        let m = matches(&[]);
        let mut layers = Layers::new(Toy::from_arg_matches(&m).expect("toy"), None, &m);
        let rate = layers.require("rate", |s| s.rate.take()).expect("default");
        assert!(rate.is_default() && rate.value == 2.0);
        let e = layers
            .require("name", |s| s.name.take())
            .expect_err("missing");
        assert_eq!(
            e.to_string(),
            "command line: missing `name` (set it in the file, with --name or $DPAGG_TEST_SETTINGS_NAME_UNSET)"
        );
    }

    #[test]
    fn file_errors_name_the_file_line_and_column() {
        let (_dir, path) = toml("name = \"a\"\n\ncolour = 1\n");
        let e = read_toml::<Toy>(&path).expect_err("unknown key");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("{}:3:1: ", path.display())),
            "{text}"
        );
        assert!(text.contains("colour") && !text.contains('\n'), "{text}");
        let e = read_toml::<Toy>(&path.with_file_name("nope.toml")).expect_err("missing");
        assert!(e.to_string().contains("nope.toml: cannot read"), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }
}
