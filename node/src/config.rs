//! Node configuration: a TOML file whose every setting can be overridden by a flag or an
//! environment variable (see `dpagg-node serve --help`).
//!
//! ```toml
//! organisation_id = "hospital-a"
//! listen = "127.0.0.1:50051"
//! data = "hospital-a.csv"             # relative paths are relative to this file
//! schema = "diabetes.schema.toml"
//! state_dir = "state"
//!
//! [policy]
//! epsilon_total = 10.0                # replace-one; see dpagg_shared::accounting::ledger
//! delta_total = 1e-5
//! max_epsilon_per_release = 2.0
//! allow_remote_publish = false        # PublishLearner from clients
//! allow_unproven = false              # releases whose guarantee is not proven (refused)
//! ```

use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The node's privacy policy.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Total ε the node will ever spend.
    pub epsilon_total: f64,
    /// Total δ the node will ever spend.
    #[serde(default)]
    pub delta_total: f64,
    /// Largest ε of one release [default: epsilon_total].
    pub max_epsilon_per_release: Option<f64>,
    /// Whether clients may ask the node to publish.
    #[serde(default)]
    pub allow_remote_publish: bool,
    /// Whether the node publishes releases whose guarantee is not proven for the algorithm as
    /// run (e.g. `gibbs-posterior-unproven`). Off by default.
    #[serde(default)]
    pub allow_unproven: bool,
}

impl Policy {
    /// The per-release cap (defaults to the total).
    pub fn cap(&self) -> f64 {
        self.max_epsilon_per_release.unwrap_or(self.epsilon_total)
    }

    fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let bad =
            |field: &'static str, value: f64, requirement: &'static str| ConfigError::Invalid {
                origin: origin.to_owned(),
                field,
                value: value.to_string(),
                requirement,
            };
        if !(self.epsilon_total.is_finite() && self.epsilon_total >= 0.0) {
            return Err(bad(
                "policy.epsilon_total",
                self.epsilon_total,
                "a finite number >= 0",
            ));
        }
        if !(self.delta_total >= 0.0 && self.delta_total < 1.0) {
            return Err(bad("policy.delta_total", self.delta_total, "in [0, 1)"));
        }
        if !(self.cap().is_finite() && self.cap() > 0.0) {
            return Err(bad(
                "policy.max_epsilon_per_release",
                self.cap(),
                "a finite number > 0",
            ));
        }
        Ok(())
    }
}

/// The settings as written in a file (every field optional: flags may supply it).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// See [`NodeConfig::organisation_id`].
    pub organisation_id: Option<String>,
    /// See [`NodeConfig::listen`].
    pub listen: Option<String>,
    /// See [`NodeConfig::data`].
    pub data: Option<PathBuf>,
    /// See [`NodeConfig::schema`].
    pub schema: Option<PathBuf>,
    /// See [`NodeConfig::state_dir`].
    pub state_dir: Option<PathBuf>,
    /// See [`NodeConfig::policy`].
    pub policy: Option<PolicyFile>,
}

/// `[policy]` as written in a file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// See [`Policy::epsilon_total`].
    pub epsilon_total: Option<f64>,
    /// See [`Policy::delta_total`].
    pub delta_total: Option<f64>,
    /// See [`Policy::max_epsilon_per_release`].
    pub max_epsilon_per_release: Option<f64>,
    /// See [`Policy::allow_remote_publish`].
    pub allow_remote_publish: Option<bool>,
    /// See [`Policy::allow_unproven`].
    pub allow_unproven: Option<bool>,
}

/// Settings given on the command line or in the environment (they win over the file).
#[derive(Debug, Default, Clone, clap::Args)]
pub struct Overrides {
    /// Configuration file (TOML).
    #[arg(long, env = "DPAGG_CONFIG")]
    pub config: Option<PathBuf>,
    /// Organisation identifier.
    #[arg(long, env = "DPAGG_ORGANISATION_ID")]
    pub organisation_id: Option<String>,
    /// Address to listen on [default: 127.0.0.1:50051; port 0 picks a free port].
    #[arg(long, env = "DPAGG_LISTEN")]
    pub listen: Option<String>,
    /// The organisation's data (CSV with a header row).
    #[arg(long, env = "DPAGG_DATA")]
    pub data: Option<PathBuf>,
    /// The public schema (TOML).
    #[arg(long, env = "DPAGG_SCHEMA")]
    pub schema: Option<PathBuf>,
    /// Folder for the node's database (releases and privacy ledger).
    #[arg(long, env = "DPAGG_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Total ε budget.
    #[arg(long, env = "DPAGG_EPSILON_TOTAL")]
    pub epsilon_total: Option<f64>,
    /// Total δ budget.
    #[arg(long, env = "DPAGG_DELTA_TOTAL")]
    pub delta_total: Option<f64>,
    /// Largest ε of one release.
    #[arg(long, env = "DPAGG_MAX_EPSILON_PER_RELEASE")]
    pub max_epsilon_per_release: Option<f64>,
    /// Accept PublishLearner from clients.
    #[arg(long, env = "DPAGG_ALLOW_REMOTE_PUBLISH")]
    pub allow_remote_publish: Option<bool>,
    /// Publish releases whose guarantee is not proven for the algorithm as run.
    #[arg(long, env = "DPAGG_ALLOW_UNPROVEN")]
    pub allow_unproven: Option<bool>,
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    /// Organisation identifier (non-empty).
    pub organisation_id: String,
    /// Listen address.
    pub listen: SocketAddr,
    /// Data file.
    pub data: PathBuf,
    /// Schema file.
    pub schema: PathBuf,
    /// State folder.
    pub state_dir: PathBuf,
    /// Privacy policy.
    pub policy: Policy,
}

/// A configuration problem, as one line naming the file and field.
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
    /// A required setting is missing.
    #[error("{origin}: missing `{field}` (set it in the file, with --{flag} or ${env})")]
    Missing {
        /// Where settings came from.
        origin: String,
        /// The setting.
        field: &'static str,
        /// Its flag.
        flag: &'static str,
        /// Its environment variable.
        env: &'static str,
    },
    /// A setting has an invalid value.
    #[error("{origin}: `{field}` = {value}: must be {requirement}")]
    Invalid {
        /// Where settings came from.
        origin: String,
        /// The setting.
        field: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        requirement: &'static str,
    },
}

impl Overrides {
    /// Reads the file (if any) and applies the overrides.
    pub fn resolve(&self) -> Result<NodeConfig, ConfigError> {
        let (file, base, origin) = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
                    path: path.display().to_string(),
                    source,
                })?;
                let file: FileConfig = toml::from_str(&text).map_err(|e| ConfigError::Syntax {
                    origin: path.display().to_string(),
                    message: e.message().replace('\n', " "),
                })?;
                let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
                (file, base, path.display().to_string())
            }
            None => (
                FileConfig::default(),
                PathBuf::new(),
                "command line".to_owned(),
            ),
        };
        let missing = |field, flag, env| ConfigError::Missing {
            origin: origin.clone(),
            field,
            flag,
            env,
        };
        // Paths from the file are relative to the file; paths from flags to the working directory.
        let path = |flag: &Option<PathBuf>, from_file: Option<PathBuf>| {
            flag.clone().or_else(|| from_file.map(|p| base.join(p)))
        };
        let organisation_id = self
            .organisation_id
            .clone()
            .or(file.organisation_id)
            .ok_or_else(|| {
                missing(
                    "organisation_id",
                    "organisation-id",
                    "DPAGG_ORGANISATION_ID",
                )
            })?;
        if organisation_id.trim().is_empty() {
            return Err(ConfigError::Invalid {
                origin,
                field: "organisation_id",
                value: "\"\"".into(),
                requirement: "non-empty",
            });
        }
        let listen_text = self
            .listen
            .clone()
            .or(file.listen)
            .unwrap_or_else(|| "127.0.0.1:50051".into());
        let listen = listen_text.parse().map_err(|_| ConfigError::Invalid {
            origin: origin.clone(),
            field: "listen",
            value: listen_text.clone(),
            requirement: "an address like 127.0.0.1:50051",
        })?;
        let data =
            path(&self.data, file.data).ok_or_else(|| missing("data", "data", "DPAGG_DATA"))?;
        let schema = path(&self.schema, file.schema)
            .ok_or_else(|| missing("schema", "schema", "DPAGG_SCHEMA"))?;
        let state_dir = path(&self.state_dir, file.state_dir)
            .ok_or_else(|| missing("state_dir", "state-dir", "DPAGG_STATE_DIR"))?;
        let p = file.policy.unwrap_or_default();
        let policy = Policy {
            epsilon_total: self.epsilon_total.or(p.epsilon_total).ok_or_else(|| {
                missing(
                    "policy.epsilon_total",
                    "epsilon-total",
                    "DPAGG_EPSILON_TOTAL",
                )
            })?,
            delta_total: self.delta_total.or(p.delta_total).unwrap_or(0.0),
            max_epsilon_per_release: self.max_epsilon_per_release.or(p.max_epsilon_per_release),
            allow_remote_publish: self
                .allow_remote_publish
                .or(p.allow_remote_publish)
                .unwrap_or(false),
            allow_unproven: self.allow_unproven.or(p.allow_unproven).unwrap_or(false),
        };
        policy.validate(&origin)?;
        Ok(NodeConfig {
            organisation_id,
            listen,
            data,
            schema,
            state_dir,
            policy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, text: &str) -> PathBuf {
        let p = dir.join("node.toml");
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn file_values_flags_and_relative_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = write(
            dir.path(),
            "organisation_id = \"a\"\ndata = \"a.csv\"\nschema = \"s.toml\"\nstate_dir = \"st\"\n[policy]\nepsilon_total = 5.0\n",
        );
        let c = Overrides {
            config: Some(p.clone()),
            ..Overrides::default()
        }
        .resolve()
        .expect("valid");
        assert_eq!(c.data, dir.path().join("a.csv"));
        assert_eq!(c.policy.cap(), 5.0);
        assert!(!c.policy.allow_remote_publish);
        let c = Overrides {
            config: Some(p),
            epsilon_total: Some(2.0),
            data: Some("x.csv".into()),
            ..Overrides::default()
        }
        .resolve()
        .expect("valid");
        assert_eq!(c.policy.epsilon_total, 2.0);
        assert_eq!(c.data, PathBuf::from("x.csv"));
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = Overrides {
            config: Some(dir.path().join("nope.toml")),
            ..Overrides::default()
        }
        .resolve()
        .expect_err("must fail")
        .to_string();
        assert!(missing.contains("nope.toml"), "{missing}");
        let p = write(dir.path(), "organisation_id = \"a\"\nbogus = 1\n");
        let e = Overrides {
            config: Some(p),
            ..Overrides::default()
        }
        .resolve()
        .expect_err("must fail")
        .to_string();
        assert!(e.contains("node.toml") && e.contains("bogus"), "{e}");
        let p = write(
            dir.path(),
            "organisation_id = \"a\"\ndata = \"a.csv\"\nschema = \"s.toml\"\nstate_dir = \"st\"\n",
        );
        let e = Overrides {
            config: Some(p.clone()),
            ..Overrides::default()
        }
        .resolve()
        .expect_err("must fail")
        .to_string();
        assert!(e.contains("epsilon_total"), "{e}");
        let e = Overrides {
            config: Some(p),
            epsilon_total: Some(1.0),
            delta_total: Some(1.5),
            ..Overrides::default()
        }
        .resolve()
        .expect_err("must fail")
        .to_string();
        assert!(e.contains("delta_total"), "{e}");
        assert!(!e.contains('\n'));
    }
}
