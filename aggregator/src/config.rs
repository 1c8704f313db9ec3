//! Configuration of `dpagg-aggregator run`: a flat TOML file whose every key is also a flag and an
//! environment variable (flags and environment win over the file).
//!
//! ```toml
//! data = "own.csv"                      # the aggregator's own records (relative to this file)
//! schema = "diabetes.schema.toml"       # the public schema every organisation uses
//! nodes = ["http://10.0.0.2:50051", "http://10.0.0.3:50051"]
//! out = "report"                        # report.json and report.html go here
//!
//! latest = false                        # true: take each node's newest release, whatever its spec
//! mechanism = "objective-perturbation"  # otherwise: the spec to ask for
//! epsilon = 1.0
//! delta = 0.0
//! lambda = 0.01                         # λ of the requested learners and of the local baseline
//! publish = false                       # ask a node to publish the spec if it has no such release
//! options = { steps = 500 }             # mechanism options (e.g. for dp-sgd)
//!
//! max_epsilon = 2.0                     # acceptance policy
//! max_delta = 1e-5
//! schema_must_match = true
//! allow_seeded = false                  # seeded releases have no privacy: refuse them
//! allow_unproven = false                # releases whose guarantee is not proven (e.g. a cheap sampler)
//! min_learners = 1                      # fail if fewer valid learners remain
//!
//! timeout_ms = 5000                     # per node and attempt
//! retries = 2                           # further attempts after an unreachable/timeout failure
//! backoff_ms = 200                      # doubled after each attempt
//! concurrency = 32                      # nodes contacted at once
//!
//! beta = 3.0                            # mirror-averaging temperature (seed 001 eq. 15; ≥ e)
//! seed = 1                              # the aggregator's own randomness: test split, visiting order
//! test_fraction = 0.2                   # stratified test split of `data` …
//! # test_file = "test.csv"              # … or a separate test file (then all of `data` trains)
//! ```

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Settings as given in a file, on the command line or in the environment (all optional).
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Configuration file (TOML; every key below may appear in it).
    #[arg(long, env = "DPAGG_AGG_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// The aggregator's own data (CSV with a header row).
    #[arg(long, env = "DPAGG_AGG_DATA")]
    pub data: Option<PathBuf>,
    /// The public schema (TOML) shared by every organisation.
    #[arg(long, env = "DPAGG_AGG_SCHEMA")]
    pub schema: Option<PathBuf>,
    /// Node endpoint, e.g. http://127.0.0.1:50051 (repeat, or separate with commas).
    #[arg(long = "node", env = "DPAGG_AGG_NODES", value_delimiter = ',')]
    #[serde(default)]
    pub nodes: Vec<String>,
    /// Folder for report.json and report.html [default: report].
    #[arg(long, env = "DPAGG_AGG_OUT")]
    pub out: Option<PathBuf>,
    /// Take each node's newest release whatever its spec.
    #[arg(long, env = "DPAGG_AGG_LATEST", num_args = 0..=1, default_missing_value = "true")]
    pub latest: Option<bool>,
    /// Mechanism of the requested release [default: objective-perturbation].
    #[arg(long, env = "DPAGG_AGG_MECHANISM")]
    pub mechanism: Option<String>,
    /// ε of the requested release [default: 1].
    #[arg(long, env = "DPAGG_AGG_EPSILON")]
    pub epsilon: Option<f64>,
    /// δ of the requested release [default: 0].
    #[arg(long, env = "DPAGG_AGG_DELTA")]
    pub delta: Option<f64>,
    /// λ of the requested release and of the local baseline [default: 0.01].
    #[arg(long, env = "DPAGG_AGG_LAMBDA")]
    pub lambda: Option<f64>,
    /// Mechanism options of the requested release (file: an `options` table).
    #[arg(skip)]
    #[serde(default)]
    pub options: BTreeMap<String, f64>,
    /// Mechanism option name=value of the requested release (repeat; wins over the file).
    #[arg(long = "option", value_parser = dpagg_shared::mechanism::kind::parse_option)]
    #[serde(skip)]
    pub option: Vec<(String, f64)>,
    /// Ask nodes without a matching release to publish one (their policy decides).
    #[arg(long, env = "DPAGG_AGG_PUBLISH", num_args = 0..=1, default_missing_value = "true")]
    pub publish: Option<bool>,
    /// Largest ε accepted [default: 2].
    #[arg(long, env = "DPAGG_AGG_MAX_EPSILON")]
    pub max_epsilon: Option<f64>,
    /// Largest δ accepted [default: 1e-5].
    #[arg(long, env = "DPAGG_AGG_MAX_DELTA")]
    pub max_delta: Option<f64>,
    /// Refuse learners trained under another schema [default: true].
    #[arg(long, env = "DPAGG_AGG_SCHEMA_MUST_MATCH", num_args = 0..=1, default_missing_value = "true")]
    pub schema_must_match: Option<bool>,
    /// Accept releases made with seeded noise (tests only: they give no privacy) [default: false].
    #[arg(long, env = "DPAGG_AGG_ALLOW_SEEDED", num_args = 0..=1, default_missing_value = "true")]
    pub allow_seeded: Option<bool>,
    /// Accept releases whose guarantee is not proven [default: false].
    #[arg(long, env = "DPAGG_AGG_ALLOW_UNPROVEN", num_args = 0..=1, default_missing_value = "true")]
    pub allow_unproven: Option<bool>,
    /// Fail unless at least this many nodes give a valid learner [default: 1].
    #[arg(long, env = "DPAGG_AGG_MIN_LEARNERS")]
    pub min_learners: Option<usize>,
    /// Timeout of one attempt at one node, in milliseconds [default: 5000].
    #[arg(long, env = "DPAGG_AGG_TIMEOUT_MS")]
    pub timeout_ms: Option<u64>,
    /// Further attempts after a node is unreachable or times out [default: 2].
    #[arg(long, env = "DPAGG_AGG_RETRIES")]
    pub retries: Option<u32>,
    /// Wait before the first retry, doubled each time, in milliseconds [default: 200].
    #[arg(long, env = "DPAGG_AGG_BACKOFF_MS")]
    pub backoff_ms: Option<u64>,
    /// Nodes contacted at once [default: 32].
    #[arg(long, env = "DPAGG_AGG_CONCURRENCY")]
    pub concurrency: Option<usize>,
    /// Mirror-averaging temperature β [default: 3; seed 001 eq. 19 needs β ≥ e].
    #[arg(long, env = "DPAGG_AGG_BETA")]
    pub beta: Option<f64>,
    /// Seed of the aggregator's own randomness (test split, visiting order) [default: 1].
    #[arg(long, env = "DPAGG_AGG_SEED")]
    pub seed: Option<u64>,
    /// Stratified test fraction of the own data [default: 0.2].
    #[arg(long, env = "DPAGG_AGG_TEST_FRACTION", conflicts_with = "test_file")]
    pub test_fraction: Option<f64>,
    /// A separate test file (same schema); then all own data trains.
    #[arg(long, env = "DPAGG_AGG_TEST_FILE")]
    pub test_file: Option<PathBuf>,
}

/// Which release to ask each node for.
#[derive(Debug, Clone, PartialEq)]
pub enum LearnerRequest {
    /// The node's newest release.
    Latest,
    /// The newest release for exactly this spec (published on request if `publish`).
    Spec {
        /// Mechanism name.
        mechanism: String,
        /// ε.
        epsilon: f64,
        /// δ.
        delta: f64,
        /// λ.
        lambda: f64,
        /// Mechanism options.
        options: BTreeMap<String, f64>,
        /// Ask the node to publish it when it has none.
        publish: bool,
    },
}

/// What a learner must satisfy to be aggregated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Acceptance {
    /// Largest ε accepted.
    pub max_epsilon: f64,
    /// Largest δ accepted.
    pub max_delta: f64,
    /// Refuse learners trained under another schema.
    pub schema_must_match: bool,
    /// Accept seeded releases.
    pub allow_seeded: bool,
    /// Accept releases whose guarantee is not proven.
    pub allow_unproven: bool,
    /// Fewest valid learners for a run to succeed.
    pub min_learners: usize,
}

/// How nodes are contacted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Network {
    /// Per attempt and node.
    pub timeout: Duration,
    /// Further attempts after an unreachable/timeout failure.
    pub retries: u32,
    /// First wait between attempts (doubled each time).
    pub backoff: Duration,
    /// Nodes contacted at once.
    pub concurrency: usize,
}

/// Where the test set comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum TestSet {
    /// A stratified fraction of the own data.
    Fraction(f64),
    /// A separate file.
    File(PathBuf),
}

/// The resolved configuration of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// Own data.
    pub data: PathBuf,
    /// Public schema.
    pub schema: PathBuf,
    /// Node endpoints (URLs).
    pub nodes: Vec<String>,
    /// Output folder.
    pub out: PathBuf,
    /// The release to ask for.
    pub request: LearnerRequest,
    /// λ of the local baseline.
    pub lambda: f64,
    /// Acceptance policy.
    pub accept: Acceptance,
    /// Network behaviour.
    pub network: Network,
    /// β.
    pub beta: f64,
    /// Seed of the aggregator's own randomness.
    pub seed: u64,
    /// Test set.
    pub test: TestSet,
}

/// A configuration problem, as one line naming the file (or "command line") and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{path}: cannot read the configuration: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("{origin}: {message}")]
    Syntax {
        /// The file.
        origin: String,
        /// The parser's message, on one line.
        message: String,
    },
    /// A required key is missing.
    #[error("{origin}: missing `{key}` (set it in the file or with --{flag})")]
    Missing {
        /// Where settings came from.
        origin: String,
        /// The key.
        key: &'static str,
        /// Its flag.
        flag: &'static str,
    },
    /// A key has an invalid value.
    #[error("{origin}: `{key}` = {value}: must be {requirement}")]
    Invalid {
        /// Where settings came from.
        origin: String,
        /// The key.
        key: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        requirement: &'static str,
    },
}

impl Settings {
    /// Reads the file named by `--config` (if any) and lets flags and environment win over it.
    pub fn resolve(self) -> Result<RunConfig, ConfigError> {
        let (file, origin) = match &self.config {
            Some(path) => (read_file(path)?, path.display().to_string()),
            None => (Settings::default(), "command line".to_owned()),
        };
        self.or(file).finish(&origin)
    }

    /// Field by field: `self` where set, otherwise `file`.
    fn or(self, file: Settings) -> Settings {
        macro_rules! pick {
            ($($f:ident),*) => { Settings {
                config: self.config,
                nodes: if self.nodes.is_empty() { file.nodes } else { self.nodes },
                options: file.options.into_iter().chain(self.option.iter().cloned()).collect(),
                option: Vec::new(),
                $($f: self.$f.or(file.$f)),*
            } };
        }
        pick!(
            data,
            schema,
            out,
            latest,
            mechanism,
            epsilon,
            delta,
            lambda,
            publish,
            max_epsilon,
            max_delta,
            schema_must_match,
            allow_seeded,
            allow_unproven,
            min_learners,
            timeout_ms,
            retries,
            backoff_ms,
            concurrency,
            beta,
            seed,
            test_fraction,
            test_file
        )
    }

    fn finish(self, origin: &str) -> Result<RunConfig, ConfigError> {
        let missing = |key, flag| ConfigError::Missing {
            origin: origin.to_owned(),
            key,
            flag,
        };
        let invalid = |key, value: String, requirement| ConfigError::Invalid {
            origin: origin.to_owned(),
            key,
            value,
            requirement,
        };
        let positive = |key, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(v)
            } else {
                Err(invalid(key, v.to_string(), "a finite number > 0"))
            }
        };
        let probability = |key, v: f64| {
            if (0.0..1.0).contains(&v) {
                Ok(v)
            } else {
                Err(invalid(key, v.to_string(), "in [0, 1)"))
            }
        };
        let data = self.data.ok_or_else(|| missing("data", "data"))?;
        let schema = self.schema.ok_or_else(|| missing("schema", "schema"))?;
        if self.nodes.is_empty() {
            return Err(missing("nodes", "node"));
        }
        for n in &self.nodes {
            if !(n.starts_with("http://") || n.starts_with("https://")) {
                return Err(invalid(
                    "nodes",
                    format!("{n:?}"),
                    "URLs such as http://host:port",
                ));
            }
        }
        let lambda = positive("lambda", self.lambda.unwrap_or(0.01))?;
        if self.latest.unwrap_or(false) && !self.options.is_empty() {
            return Err(invalid(
                "options",
                "set together with latest".into(),
                "given only with a spec",
            ));
        }
        let request = if self.latest.unwrap_or(false) {
            LearnerRequest::Latest
        } else {
            LearnerRequest::Spec {
                mechanism: self
                    .mechanism
                    .unwrap_or_else(|| "objective-perturbation".into()),
                epsilon: positive("epsilon", self.epsilon.unwrap_or(1.0))?,
                delta: probability("delta", self.delta.unwrap_or(0.0))?,
                lambda,
                options: self.options,
                publish: self.publish.unwrap_or(false),
            }
        };
        let max_epsilon = self.max_epsilon.unwrap_or(2.0);
        if !(max_epsilon.is_finite() && max_epsilon >= 0.0) {
            return Err(invalid(
                "max_epsilon",
                max_epsilon.to_string(),
                "a finite number >= 0",
            ));
        }
        let accept = Acceptance {
            max_epsilon,
            max_delta: probability("max_delta", self.max_delta.unwrap_or(1e-5))?,
            schema_must_match: self.schema_must_match.unwrap_or(true),
            allow_seeded: self.allow_seeded.unwrap_or(false),
            allow_unproven: self.allow_unproven.unwrap_or(false),
            min_learners: self.min_learners.unwrap_or(1),
        };
        if accept.min_learners == 0 {
            return Err(invalid("min_learners", "0".into(), "at least 1"));
        }
        let concurrency = self.concurrency.unwrap_or(32);
        if concurrency == 0 {
            return Err(invalid("concurrency", "0".into(), "at least 1"));
        }
        let timeout_ms = self.timeout_ms.unwrap_or(5000);
        if timeout_ms == 0 {
            return Err(invalid("timeout_ms", "0".into(), "at least 1"));
        }
        let network = Network {
            timeout: Duration::from_millis(timeout_ms),
            retries: self.retries.unwrap_or(2),
            backoff: Duration::from_millis(self.backoff_ms.unwrap_or(200)),
            concurrency,
        };
        let test = match (self.test_file, self.test_fraction) {
            (Some(file), None) => TestSet::File(file),
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "test_file",
                    "set together with test_fraction".into(),
                    "given alone",
                ));
            }
            (None, fraction) => {
                let f = fraction.unwrap_or(0.2);
                if !(f > 0.0 && f < 1.0) {
                    return Err(invalid("test_fraction", f.to_string(), "in (0, 1)"));
                }
                TestSet::Fraction(f)
            }
        };
        Ok(RunConfig {
            data,
            schema,
            nodes: self.nodes,
            out: self.out.unwrap_or_else(|| PathBuf::from("report")),
            request,
            lambda,
            accept,
            network,
            beta: positive("beta", self.beta.unwrap_or(3.0))?,
            seed: self.seed.unwrap_or(1),
            test,
        })
    }
}

/// Reads a settings file; relative paths in it are taken relative to the file's folder.
fn read_file(path: &Path) -> Result<Settings, ConfigError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: origin.clone(),
        source,
    })?;
    let mut s: Settings = toml::from_str(&text).map_err(|e| ConfigError::Syntax {
        origin: origin.clone(),
        message: e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    for p in [&mut s.data, &mut s.schema, &mut s.out, &mut s.test_file]
        .into_iter()
        .flatten()
    {
        if p.is_relative() {
            *p = base.join(&*p);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("aggregator.toml");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn file_is_resolved_relative_to_itself_and_flags_win() {
        let (dir, path) = write(
            "data = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"http://a:1\"]\nepsilon = 0.5\ntest_file = \"t.csv\"\noptions = { steps = 10.0, clip_norm = 2.0 }\n",
        );
        let flags = Settings {
            config: Some(path),
            epsilon: Some(2.0),
            option: vec![("steps".into(), 20.0)],
            ..Settings::default()
        };
        let c = flags.resolve().expect("valid");
        assert_eq!(c.data, dir.path().join("own.csv"));
        assert_eq!(c.test, TestSet::File(dir.path().join("t.csv")));
        assert_eq!(c.nodes, vec!["http://a:1".to_owned()]);
        match c.request {
            LearnerRequest::Spec {
                epsilon, options, ..
            } => {
                assert_eq!(epsilon, 2.0);
                let expected: BTreeMap<String, f64> =
                    [("clip_norm".to_owned(), 2.0), ("steps".to_owned(), 20.0)].into();
                assert_eq!(options, expected);
            }
            LearnerRequest::Latest => panic!("expected a spec"),
        }
        assert_eq!(c.accept.max_delta, 1e-5);
        assert!(!c.accept.allow_seeded);
    }

    #[test]
    fn errors_name_the_file_and_key() {
        let (_dir, path) = write("data = \"own.csv\"\nschema = \"s.toml\"\nnodez = []\n");
        let e = Settings {
            config: Some(path.clone()),
            ..Settings::default()
        }
        .resolve()
        .expect_err("unknown key");
        let msg = e.to_string();
        assert!(msg.starts_with(&path.display().to_string()) && msg.contains("nodez"));
        assert!(!msg.contains('\n'));

        let (_dir, path) =
            write("data = \"own.csv\"\nschema = \"s.toml\"\nnodes = [\"127.0.0.1:1\"]\n");
        let e = Settings {
            config: Some(path),
            ..Settings::default()
        }
        .resolve()
        .expect_err("not a URL");
        assert!(e.to_string().contains("`nodes`"), "{e}");

        let e = Settings {
            data: Some("x.csv".into()),
            schema: Some("s.toml".into()),
            ..Settings::default()
        }
        .resolve()
        .expect_err("no nodes");
        assert!(e.to_string().contains("--node"), "{e}");
    }
}
