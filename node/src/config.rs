//! Node configuration: one [`Settings`] struct read from a TOML file, flags and environment
//! variables (see `dpagg-node serve --help`), resolved into a [`NodeConfig`].
//!
//! ```toml
//! organisation_id = "hospital-a"
//! listen = "127.0.0.1:50051"
//! metrics_listen = "127.0.0.1:9464"   # Prometheus GET /metrics (plain HTTP; off unless set)
//! data = "hospital-a.csv"             # relative paths are relative to this file
//! schema = "diabetes.schema.toml"
//! state_dir = "state"
//! identity = "federation/hospital-a"  # ca.pem, cert.pem, key.pem, signing.key (dpagg-node certs)
//! insecure = false                    # true: plain text, no identities, unsigned (logs a warning)
//!
//! [access]                            # identities are certificate names (dpagg://org/<id>)
//! read = ["*"]                        # Describe, ListLearners, GetLearner; "*": any federation member
//! write = []                         # PublishLearner (also needs policy.allow_remote_publish); default nobody
//! publish_per_minute = 10             # per client
//! reflection = false                  # gRPC server reflection
//!
//! [policy]
//! epsilon_total = 10.0                # replace-one; see dpagg_shared::privacy::accounting::ledger
//! delta_total = 1e-5
//! max_epsilon_per_release = 2.0
//! allow_remote_publish = false        # PublishLearner from clients
//! allow_unproven = false              # releases whose guarantee is not proven (refused)
//! accept_traps = false                # learners over a schema `check --strict` fails (refused)
//! max_training_seconds = 120          # training of one release stops after this (no charge)
//!
//! [limits]                            # connections and timeouts of both listeners: crate::limits
//! ```
//!
//! Every key is also a flag (`--epsilon-total`) and an environment variable
//! (`DPAGG_EPSILON_TOTAL`); flags and environment win over the file, the file over the
//! defaults, and each default is written once, in its argument. Errors name where the bad value
//! came from (the file, the flag or the variable; see [`dpagg_shared::cli::settings`]).

use crate::access::{ANY, AccessPolicy};
use crate::limits::{LimitSettings, Limits};
use clap::ArgMatches;
use dpagg_shared::cli::{ConfigError, FileSettings, Layers, Setting};
use dpagg_shared::identity::check_organisation_id;
use dpagg_shared::privacy::accounting::admission::BUDGET_SLACK;
use dpagg_shared::util::num::Num;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Where a node listens unless told otherwise (also where `dpagg-node health` asks).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:50051";

/// Every setting of a node as a file, flags or the environment give it (all optional here;
/// [`Settings::resolve`] says what is required).
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// Configuration file (TOML); relative paths in it are relative to it.
    #[arg(long, env = "DPAGG_CONFIG")]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Organisation identifier.
    #[arg(long, env = "DPAGG_ORGANISATION_ID")]
    pub organisation_id: Option<String>,
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, env = "DPAGG_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: Option<String>,
    /// Address of the Prometheus metrics endpoint, plain HTTP `GET /metrics` (off unless set).
    #[arg(long, env = "DPAGG_METRICS_LISTEN")]
    pub metrics_listen: Option<String>,
    /// The organisation's data (CSV with a header row).
    #[arg(long, env = "DPAGG_DATA")]
    pub data: Option<PathBuf>,
    /// The public schema (TOML).
    #[arg(long, env = "DPAGG_SCHEMA")]
    pub schema: Option<PathBuf>,
    /// Folder for the node's database (releases and privacy ledger).
    #[arg(long, env = "DPAGG_STATE_DIR")]
    pub state_dir: Option<PathBuf>,
    /// Identity folder: ca.pem, cert.pem, key.pem and signing.key (see `dpagg-node certs`).
    #[arg(long, env = "DPAGG_IDENTITY")]
    pub identity: Option<PathBuf>,
    /// Serve plain text: no TLS, no client identities, unsigned releases (development only; a
    /// warning is logged at every start).
    #[arg(long, env = "DPAGG_INSECURE", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub insecure: Option<bool>,
    /// Who may call what: flags of their own, `[access]` in the file.
    #[command(flatten)]
    #[serde(default)]
    pub access: AccessSettings,
    /// The privacy policy: flags of their own, `[policy]` in the file.
    #[command(flatten)]
    #[serde(default)]
    pub policy: PolicySettings,
    /// Connection limits and timeouts: flags of their own, `[limits]` in the file.
    #[command(flatten)]
    #[serde(default)]
    pub limits: LimitSettings,
}

/// The `[access]` settings.
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Access")]
pub struct AccessSettings {
    /// Identities allowed to read (Describe, ListLearners, GetLearner); `*`: any [default: *].
    #[arg(long = "read-allow", env = "DPAGG_READ_ALLOW", value_delimiter = ',')]
    pub read: Option<Vec<String>>,
    /// Identities allowed to call PublishLearner; `*`: any [default: nobody].
    #[arg(long = "write-allow", env = "DPAGG_WRITE_ALLOW", value_delimiter = ',')]
    pub write: Option<Vec<String>>,
    /// PublishLearner requests per client and minute.
    #[arg(
        long,
        env = "DPAGG_PUBLISH_PER_MINUTE",
        default_value = "10",
        allow_negative_numbers = true
    )]
    pub publish_per_minute: Option<u32>,
    /// Serve gRPC server reflection (off unless enabled).
    #[arg(long, env = "DPAGG_REFLECTION", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub reflection: Option<bool>,
}

/// How a node talks to its clients.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Mutual TLS with the identity folder at this path.
    Tls(PathBuf),
    /// Plain text (`--insecure`).
    Insecure,
}

/// The `[policy]` settings.
#[derive(Debug, Default, Clone, Deserialize, clap::Args)]
#[serde(deny_unknown_fields)]
#[command(next_help_heading = "Privacy policy")]
pub struct PolicySettings {
    /// Total ε the node will ever spend (under replace-one).
    #[arg(long, env = "DPAGG_EPSILON_TOTAL", allow_negative_numbers = true)]
    pub epsilon_total: Option<f64>,
    /// Total δ the node will ever spend.
    #[arg(
        long,
        env = "DPAGG_DELTA_TOTAL",
        allow_negative_numbers = true,
        default_value = "0"
    )]
    pub delta_total: Option<f64>,
    /// Largest ε of one release [default: the total].
    #[arg(
        long,
        env = "DPAGG_MAX_EPSILON_PER_RELEASE",
        allow_negative_numbers = true
    )]
    pub max_epsilon_per_release: Option<f64>,
    /// Accept PublishLearner from clients.
    #[arg(long, env = "DPAGG_ALLOW_REMOTE_PUBLISH", default_value = "false")]
    pub allow_remote_publish: Option<bool>,
    /// Publish releases whose guarantee is not proven for the algorithm as run.
    #[arg(long, env = "DPAGG_ALLOW_UNPROVEN", default_value = "false")]
    pub allow_unproven: Option<bool>,
    /// Publish learners although the schema fails `dpagg-node check --strict` on this node's
    /// data (its traps); every such release records it (parameter `traps_accepted` = 1).
    #[arg(long, env = "DPAGG_ACCEPT_TRAPS", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub accept_traps: Option<bool>,
    /// Longest training of one release, in seconds; no request can raise it (longer training
    /// stops, releasing and charging nothing).
    #[arg(
        long,
        env = "DPAGG_MAX_TRAINING_SECONDS",
        default_value = "120",
        allow_negative_numbers = true
    )]
    pub max_training_seconds: Option<f64>,
}

/// The node's privacy policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Total ε the node will ever spend.
    pub epsilon_total: f64,
    /// Total δ the node will ever spend.
    pub delta_total: f64,
    /// Largest ε of one release [default: epsilon_total].
    pub max_epsilon_per_release: Option<f64>,
    /// Whether clients may ask the node to publish.
    pub allow_remote_publish: bool,
    /// Whether the node publishes releases whose guarantee is not proven for the algorithm as
    /// run (e.g. `gibbs-posterior-unproven`, the `mvn-synthetic` data kind). Off by default.
    pub allow_unproven: bool,
    /// Whether the node publishes learners although `check --strict` finds traps in its schema
    /// and data (each such release records it). Off by default.
    pub accept_traps: bool,
    /// The server-side cap on one release's training time, in seconds.
    pub max_training_seconds: f64,
}

/// A budget total set below what the ledger has already spent.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "`{key}` = {} is below the {what} already spent ({}): the ledger cannot be \
     un-spent; set it to at least {1} (equal to stop publishing)",
    Num(*.total), Num(*.spent)
)]
pub struct BelowSpent {
    /// The setting.
    pub key: &'static str,
    /// "ε" or "δ".
    pub what: &'static str,
    /// The total the policy sets.
    pub total: f64,
    /// What the ledger has spent (under replace-one).
    pub spent: f64,
}

/// A per-release cap above the total while the node can still publish: no release can use
/// it, so it is a typo or a misunderstanding, refused at start.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error(
    "`policy.max_epsilon_per_release` = {} is above `policy.epsilon_total` = {}: no release can spend more than the whole budget; lower the cap (or raise the total)",
    Num(*.cap), Num(*.total)
)]
pub struct CapOverTotal {
    /// The cap.
    pub cap: f64,
    /// The total.
    pub total: f64,
}

impl Policy {
    /// The cap refused by [`CapOverTotal`], when the node can still publish (`spent` below the
    /// total; a node stopped by setting its total to what it spent keeps any cap).
    pub fn cap_over_total(&self, spent: f64) -> Option<CapOverTotal> {
        let cap = self.max_epsilon_per_release?;
        (cap > self.epsilon_total * (1.0 + BUDGET_SLACK)
            && spent < self.epsilon_total * (1.0 - BUDGET_SLACK))
            .then_some(CapOverTotal {
                cap,
                total: self.epsilon_total,
            })
    }

    /// The per-release cap (defaults to the total).
    pub fn cap(&self) -> f64 {
        self.max_epsilon_per_release.unwrap_or(self.epsilon_total)
    }

    /// The totals that are below what the ledger has spent (`epsilon`, `delta` under
    /// replace-one). A node in that state must not start: lowering a total cannot un-spend.
    pub fn below_spent(&self, epsilon: f64, delta: f64) -> Vec<BelowSpent> {
        [
            ("policy.epsilon_total", "ε", self.epsilon_total, epsilon),
            ("policy.delta_total", "δ", self.delta_total, delta),
        ]
        .into_iter()
        .filter(|&(_, _, total, spent)| spent > total * (1.0 + BUDGET_SLACK))
        .map(|(key, what, total, spent)| BelowSpent {
            key,
            what,
            total,
            spent,
        })
        .collect()
    }
}

/// The resolved configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeConfig {
    /// Organisation identifier (non-empty).
    pub organisation_id: String,
    /// Listen address.
    pub listen: SocketAddr,
    /// The metrics endpoint's address, when it is on.
    pub metrics_listen: Option<SocketAddr>,
    /// Data file.
    pub data: PathBuf,
    /// Schema file.
    pub schema: PathBuf,
    /// State folder.
    pub state_dir: PathBuf,
    /// TLS or plain text; `None` when neither an identity nor `insecure` is given (only
    /// `serve` needs one: see [`NodeConfig::transport`]).
    pub transport: Option<Transport>,
    /// Allow-lists, rate limit, reflection.
    pub access: AccessPolicy,
    /// Privacy policy.
    pub policy: Policy,
    /// Connection limits and timeouts.
    pub limits: Limits,
}

impl FileSettings for Settings {
    fn take_config(&mut self) -> Option<PathBuf> {
        self.config.take()
    }

    fn paths(&mut self) -> Vec<&mut Option<PathBuf>> {
        vec![
            &mut self.data,
            &mut self.schema,
            &mut self.state_dir,
            &mut self.identity,
        ]
    }
}

impl Settings {
    /// Resolves these settings — as clap parsed them from `matches`, the matches of the
    /// (sub)command they are flattened into — over the file they name and the defaults.
    pub fn resolve(self, matches: &ArgMatches) -> Result<NodeConfig, ConfigError> {
        let mut l = Layers::read(self, matches)?;
        let id = l.require("organisation_id", |s| s.organisation_id.take())?;
        if check_organisation_id(&id.value).is_err() {
            return Err(id.invalid(
                format!("{:?}", id.value),
                "1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            ));
        }
        let listen = l.require("listen", |s| s.listen.take())?;
        let address = listen
            .value
            .parse()
            .map_err(|_| listen.invalid(&listen.value, "an address like 127.0.0.1:50051"))?;
        let metrics_listen = l
            .get("metrics_listen", |s| s.metrics_listen.take())
            .map(|m| {
                m.value
                    .parse()
                    .map_err(|_| m.invalid(&m.value, "an address like 127.0.0.1:9464"))
            })
            .transpose()?;
        Ok(NodeConfig {
            organisation_id: id.value,
            listen: address,
            metrics_listen,
            data: l.require("data", |s| s.data.take())?.value,
            schema: l.require("schema", |s| s.schema.take())?.value,
            state_dir: l.require("state_dir", |s| s.state_dir.take())?.value,
            transport: resolve_transport(&mut l)?,
            access: resolve_access(&mut l)?,
            policy: resolve_policy(&mut l)?,
            limits: crate::limits::resolve(&mut l)?,
        })
    }
}

fn resolve_transport(l: &mut Layers<'_, Settings>) -> Result<Option<Transport>, ConfigError> {
    let insecure = l.require("insecure", |s| s.insecure.take())?;
    match (l.get("identity", |s| s.identity.take()), insecure.value) {
        (Some(_), true) => Err(insecure.invalid(
            "true",
            "false when `identity` is set (TLS and --insecure exclude each other)",
        )),
        (Some(dir), false) => Ok(Some(Transport::Tls(dir.value))),
        (None, true) => Ok(Some(Transport::Insecure)),
        (None, false) => Ok(None),
    }
}

/// `serve` without an identity folder and without `--insecure`.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error(
    "missing `identity`: give the organisation's identity folder with --identity DIR, \
     $DPAGG_IDENTITY or `identity` in the config file (`dpagg-node certs init` makes one), \
     or serve plain text with --insecure"
)]
pub struct NoTransport;

impl NodeConfig {
    /// How to serve: TLS with the identity folder, or plain text when asked for explicitly.
    pub fn transport(&self) -> Result<&Transport, NoTransport> {
        self.transport.as_ref().ok_or(NoTransport)
    }
}

fn resolve_access(l: &mut Layers<'_, Settings>) -> Result<AccessPolicy, ConfigError> {
    let defaults = AccessPolicy::default();
    let mut list = |key: &'static str,
                    field: fn(&mut Settings) -> Option<Vec<String>>,
                    default: &[String]| match l.get(key, field) {
        None => Ok(default.to_vec()),
        Some(s) => {
            if let Some(bad) = s
                .value
                .iter()
                .find(|v| v.as_str() != ANY && check_organisation_id(v).is_err())
            {
                return Err(s.invalid(
                    format!("{bad:?}"),
                    "organisation ids (as in their certificates) or \"*\"",
                ));
            }
            Ok(s.value)
        }
    };
    let read = list("access.read", |s| s.access.read.take(), &defaults.read)?;
    let write = list("access.write", |s| s.access.write.take(), &defaults.write)?;
    Ok(AccessPolicy {
        read,
        write,
        publish_per_minute: l
            .get("access.publish_per_minute", |s| {
                s.access.publish_per_minute.take()
            })
            .map_or(defaults.publish_per_minute, |s| s.value),
        reflection: l
            .get("access.reflection", |s| s.access.reflection.take())
            .is_some_and(|s| s.value),
    })
}

fn resolve_policy(l: &mut Layers<'_, Settings>) -> Result<Policy, ConfigError> {
    let finite_positive =
        |s: Setting<f64>| s.check("a finite number > 0", |v| v.is_finite() && *v > 0.0);
    let finite = |s: Setting<f64>| s.check("a finite number >= 0", |v| v.is_finite() && *v >= 0.0);
    Ok(Policy {
        epsilon_total: finite(
            l.require("policy.epsilon_total", |s| s.policy.epsilon_total.take())?,
        )?,
        delta_total: l
            .require("policy.delta_total", |s| s.policy.delta_total.take())?
            .check("in [0, 1)", |v| (0.0..1.0).contains(v))?,
        max_epsilon_per_release: l
            .get("policy.max_epsilon_per_release", |s| {
                s.policy.max_epsilon_per_release.take()
            })
            .map(finite_positive)
            .transpose()?,
        allow_remote_publish: l
            .require("policy.allow_remote_publish", |s| {
                s.policy.allow_remote_publish.take()
            })?
            .value,
        allow_unproven: l
            .require("policy.allow_unproven", |s| s.policy.allow_unproven.take())?
            .value,
        accept_traps: l
            .require("policy.accept_traps", |s| s.policy.accept_traps.take())?
            .value,
        max_training_seconds: l
            .require("policy.max_training_seconds", |s| {
                s.policy.max_training_seconds.take()
            })?
            .check("a finite number > 0", |v| v.is_finite() && *v > 0.0)?,
    })
}

#[cfg(test)]
mod tests;
