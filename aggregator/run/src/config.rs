//! Configuration of `dpagg-aggregator run`: a flat TOML file whose every key is also a flag and an
//! environment variable (flags and environment win over the file, the file over the defaults;
//! each default is written once, in its argument). Errors name where the bad value came from:
//! the flag, the variable or the file (see [`dpagg_shared::cli::settings`]).
//!
//! ```toml
//! data = "own.csv"                      # the aggregator's own records (relative to this file)
//! schema = "diabetes.schema.toml"       # the public schema every organisation uses
//! nodes = ["https://10.0.0.2:50051", "https://10.0.0.3:50051"]
//! out = "report"                        # report.json and report.html go here
//! # metrics_textfile = "/var/lib/node_exporter/dpagg.prom"   # the run's figures for Prometheus
//!
//! identity = "federation/aggregator"    # ca.pem, cert.pem, key.pem, signing.key (dpagg-node certs)
//! signing_keys = "federation/public-keys"  # <organisation>.pub for every node [default: the
//!                                       # public-keys folder beside the identity folder]
//! insecure = false                      # true: plain text (http:// nodes), signatures optional
//!
//! latest = false                        # true: take each node's newest release, whatever its spec
//! mechanism = "objective-perturbation"  # otherwise: the spec to ask for
//! epsilon = 1.0
//! delta = 0.0
//! lambda = "auto"                       # λ of the requested learners ("auto" or a number); the
//!                                       # local baseline's λ is chosen by cross-validation
//! publish = false                       # ask a node to publish the spec if it has no such release
//! options = { steps = 500 }             # mechanism options (e.g. for dp-sgd)
//!
//! max_epsilon = 2.0                     # acceptance policy
//! max_delta = 1e-5
//! schema_must_match = true
//! allow_seeded = false                  # seeded releases have no privacy: refuse them
//! allow_unproven = false                # releases whose guarantee is not proven (e.g. a cheap sampler)
//! require_noise_as_sampled = false      # true: only releases whose proof covers the noise as sampled
//! min_learners = 1                      # fail if fewer valid learners remain
//!
//! connect_timeout_ms = 3000             # to connect and finish the TLS handshake
//! timeout_ms = 5000                     # per node and attempt
//! retries = 2                           # further attempts after an unreachable/timeout failure
//! backoff_ms = 200                      # doubled after each attempt
//! concurrency = 32                      # nodes contacted at once
//!
//! map = "agreed-map.toml"               # the agreed map (dpagg-aggregator map) the learners'
//!                                       # rows go through [default: none, the schema's map]
//!
//! beta = 3.0                            # mirror-averaging temperature (eq. 15; ≥ e)
//! seed = 1                              # the aggregator's own randomness: test split, order
//! test_fraction = 0.2                   # stratified test split of `data` …
//! # test_file = "test.csv"              # … or a separate test file (then all of `data` trains)
//!
//! train_on = "learners"                 # "synthetic": also pool each node's synthetic rows
//!                                       # (mvn-synthetic-gaussian at the same ε) with own rows
//! synthetic_rows = 1000                 # rows asked from each node
//! synthetic_delta = 1e-6                # their δ when the learners' δ is 0
//! ```

mod resolved;

pub use resolved::{
    Acceptance, LearnerRequest, MapConfig, Network, OwnSource, RunConfig, Security,
    SyntheticRequest, TestSet, spec_for,
};

use clap::ArgMatches;
use dpagg_shared::cli::{ConfigError, FileSettings, Layers, Origin, Setting};
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismKind};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Settings as given in a file, on the command line or in the environment (all optional here;
/// [`Settings::resolve`] says what is required).
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
    /// Folder for report.json and report.html.
    #[arg(long, env = "DPAGG_AGG_OUT", default_value = "report")]
    pub out: Option<PathBuf>,
    /// Also write the run's figures as a Prometheus textfile here (e.g. for node_exporter's
    /// textfile collector).
    #[arg(long, env = "DPAGG_AGG_METRICS_TEXTFILE")]
    pub metrics_textfile: Option<PathBuf>,
    /// Identity folder: ca.pem, cert.pem, key.pem, signing.key (see `dpagg-node certs`).
    #[arg(long, env = "DPAGG_AGG_IDENTITY")]
    pub identity: Option<PathBuf>,
    /// Folder of the organisations' public signing keys, ORGANISATION.pub [default: the
    /// public-keys folder beside the identity folder].
    #[arg(long, env = "DPAGG_AGG_SIGNING_KEYS")]
    pub signing_keys: Option<PathBuf>,
    /// Talk plain text to http:// nodes (development only): no TLS, and unsigned learners are
    /// accepted (signatures are still checked when a key is known).
    #[arg(long, env = "DPAGG_AGG_INSECURE", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub insecure: Option<bool>,
    /// Take each node's newest release whatever its spec.
    #[arg(long, env = "DPAGG_AGG_LATEST", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub latest: Option<bool>,
    /// Mechanism of the requested release.
    #[arg(
        long,
        env = "DPAGG_AGG_MECHANISM",
        default_value = "objective-perturbation"
    )]
    pub mechanism: Option<String>,
    /// ε of the requested release.
    #[arg(
        long,
        env = "DPAGG_AGG_EPSILON",
        default_value = "1",
        allow_negative_numbers = true
    )]
    pub epsilon: Option<f64>,
    /// δ of the requested release.
    #[arg(
        long,
        env = "DPAGG_AGG_DELTA",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub delta: Option<f64>,
    /// λ of the requested release (`auto`: a function of n, d, ε and the mechanism, resolved by
    /// each node). The local baseline's λ is chosen by cross-validation on own rows.
    #[arg(
        long,
        env = "DPAGG_AGG_LAMBDA",
        default_value = "auto",
        allow_negative_numbers = true
    )]
    pub lambda: Option<Lambda>,
    /// Mechanism options of the requested release (file: an `options` table).
    #[arg(skip)]
    #[serde(default)]
    pub options: BTreeMap<String, f64>,
    /// Mechanism option name=value of the requested release (repeat; wins over the file).
    #[arg(long = "option", value_parser = dpagg_shared::privacy::mechanism::kind::parse_option)]
    #[serde(skip)]
    pub option: Vec<(String, f64)>,
    /// Ask nodes without a matching release to publish one (their policy decides).
    #[arg(long, env = "DPAGG_AGG_PUBLISH", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub publish: Option<bool>,
    /// Largest ε accepted (under replace-one).
    #[arg(
        long,
        env = "DPAGG_AGG_MAX_EPSILON",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub max_epsilon: Option<f64>,
    /// Largest δ accepted.
    #[arg(
        long,
        env = "DPAGG_AGG_MAX_DELTA",
        default_value = "1e-5",
        allow_negative_numbers = true
    )]
    pub max_delta: Option<f64>,
    /// Refuse learners trained under another schema.
    #[arg(long, env = "DPAGG_AGG_SCHEMA_MUST_MATCH", num_args = 0..=1, default_missing_value = "true", default_value = "true")]
    pub schema_must_match: Option<bool>,
    /// Accept releases made with seeded noise (tests only: they give no privacy).
    #[arg(long, env = "DPAGG_AGG_ALLOW_SEEDED", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub allow_seeded: Option<bool>,
    /// Accept releases whose guarantee is not proven.
    #[arg(long, env = "DPAGG_AGG_ALLOW_UNPROVEN", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub allow_unproven: Option<bool>,
    /// Accept only releases whose proof covers the noise as sampled (refuse `real-arithmetic`).
    #[arg(long, env = "DPAGG_AGG_REQUIRE_NOISE_AS_SAMPLED", num_args = 0..=1, default_missing_value = "true", default_value = "false")]
    pub require_noise_as_sampled: Option<bool>,
    /// Fail unless at least this many nodes give a valid learner.
    #[arg(
        long,
        env = "DPAGG_AGG_MIN_LEARNERS",
        default_value = "1",
        allow_negative_numbers = true
    )]
    pub min_learners: Option<usize>,
    /// Time to connect to a node and finish the TLS handshake, in milliseconds.
    #[arg(
        long,
        env = "DPAGG_AGG_CONNECT_TIMEOUT_MS",
        default_value = "3000",
        allow_negative_numbers = true
    )]
    pub connect_timeout_ms: Option<u64>,
    /// Timeout of one attempt at one node, in milliseconds.
    #[arg(
        long,
        env = "DPAGG_AGG_TIMEOUT_MS",
        default_value = "5000",
        allow_negative_numbers = true
    )]
    pub timeout_ms: Option<u64>,
    /// Further attempts after a node is unreachable or times out.
    #[arg(
        long,
        env = "DPAGG_AGG_RETRIES",
        default_value = "2",
        allow_negative_numbers = true
    )]
    pub retries: Option<u32>,
    /// Wait before the first retry, doubled each time, in milliseconds.
    #[arg(
        long,
        env = "DPAGG_AGG_BACKOFF_MS",
        default_value = "200",
        allow_negative_numbers = true
    )]
    pub backoff_ms: Option<u64>,
    /// Nodes contacted at once.
    #[arg(
        long,
        env = "DPAGG_AGG_CONCURRENCY",
        default_value = "32",
        allow_negative_numbers = true
    )]
    pub concurrency: Option<usize>,
    /// Mirror-averaging temperature β (Minami et al. 2015, eq. 19 needs β ≥ e).
    #[arg(
        long,
        env = "DPAGG_AGG_BETA",
        default_value = "3",
        allow_negative_numbers = true
    )]
    pub beta: Option<f64>,
    /// Seed of the aggregator's own randomness (test split, visiting order).
    #[arg(
        long,
        env = "DPAGG_AGG_SEED",
        default_value = "1",
        allow_negative_numbers = true
    )]
    pub seed: Option<u64>,
    /// Stratified test fraction of the own data.
    #[arg(
        long,
        env = "DPAGG_AGG_TEST_FRACTION",
        conflicts_with = "test_file",
        default_value = "0.2",
        allow_negative_numbers = true
    )]
    pub test_fraction: Option<f64>,
    /// A separate test file (same schema); then all own data trains.
    #[arg(long, env = "DPAGG_AGG_TEST_FILE")]
    pub test_file: Option<PathBuf>,
    /// The agreed map (`dpagg-aggregator map` writes it) that the learners' rows go through:
    /// asked for in the learner spec, so nodes must have published with the same file.
    #[arg(long, env = "DPAGG_AGG_MAP")]
    pub map: Option<PathBuf>,
    /// `learners` (mirror averaging), or `synthetic`: also ask each node for synthetic rows at
    /// the learners' ε (`mvn-synthetic-gaussian`), pool them with the own training rows, train a
    /// logistic regression and report it beside mirror averaging.
    #[arg(long, env = "DPAGG_AGG_TRAIN_ON", default_value = "learners")]
    pub train_on: Option<String>,
    /// Rows of synthetic data asked from each node (`--train-on synthetic`).
    #[arg(
        long,
        env = "DPAGG_AGG_SYNTHETIC_ROWS",
        default_value = "1000",
        allow_negative_numbers = true
    )]
    pub synthetic_rows: Option<usize>,
    /// δ of the synthetic data when the learners' δ is 0 (the Gaussian mechanism needs δ > 0).
    #[arg(
        long,
        env = "DPAGG_AGG_SYNTHETIC_DELTA",
        default_value = "1e-6",
        allow_negative_numbers = true
    )]
    pub synthetic_delta: Option<f64>,
}

/// The requirement of ε, λ and β.
const POSITIVE: &str = "a finite number > 0";

fn positive(v: &f64) -> bool {
    v.is_finite() && *v > 0.0
}

/// The requirement of λ.
const LAMBDA: &str = "\"auto\" or a finite number > 0";

fn positive_lambda(v: &Lambda) -> bool {
    v.fixed().is_none_or(|l| positive(&l))
}

/// The requirement of δ and the largest δ accepted.
const PROBABILITY: &str = "in [0, 1)";

fn probability(v: &f64) -> bool {
    (0.0..1.0).contains(v)
}

/// The layers the settings are resolved from.
type Given<'m> = Layers<'m, Settings>;

impl FileSettings for Settings {
    fn take_config(&mut self) -> Option<PathBuf> {
        self.config.take()
    }

    fn paths(&mut self) -> Vec<&mut Option<PathBuf>> {
        vec![
            &mut self.data,
            &mut self.schema,
            &mut self.out,
            &mut self.metrics_textfile,
            &mut self.test_file,
            &mut self.map,
            &mut self.identity,
            &mut self.signing_keys,
        ]
    }
}

impl Settings {
    /// The settings `dpagg-aggregator map` reads (the own rows, their split and the map file),
    /// resolved like [`Settings::resolve`]'s; the others are not required.
    pub fn resolve_map(self, matches: &ArgMatches) -> Result<MapConfig, ConfigError> {
        let mut l = Layers::read(self, matches)?;
        let own = OwnSource {
            data: l.require("data", |s| s.data.take())?.value,
            schema: l.require("schema", |s| s.schema.take())?.value,
            test: test_set(&mut l)?,
            seed: l.require("seed", |s| s.seed.take())?.value,
        };
        let map = l.require("map", |s| s.map.take())?.value;
        Ok(MapConfig { own, map })
    }

    /// Resolves these settings — as clap parsed them from `matches`, the matches of `run` —
    /// over the file named by `--config` (if any) and the defaults.
    pub fn resolve(self, matches: &ArgMatches) -> Result<RunConfig, ConfigError> {
        let mut l = Layers::read(self, matches)?;
        let data = l.require("data", |s| s.data.take())?.value;
        let schema = l.require("schema", |s| s.schema.take())?.value;
        let security = security(&mut l)?;
        let nodes = nodes(&mut l, &security)?;
        let lambda = l.require("lambda", |s| s.lambda.take())?;
        let lambda = lambda.check(LAMBDA, positive_lambda)?;
        let request = request(&mut l, lambda)?;
        let synthetic = synthetic(&mut l, &request)?;
        Ok(RunConfig {
            data,
            schema,
            nodes,
            out: l.require("out", |s| s.out.take())?.value,
            metrics_textfile: l
                .get("metrics_textfile", |s| s.metrics_textfile.take())
                .map(|s| s.value),
            security,
            request,
            accept: acceptance(&mut l)?,
            network: network(&mut l)?,
            beta: l
                .require("beta", |s| s.beta.take())?
                .check(POSITIVE, positive)?,
            seed: l.require("seed", |s| s.seed.take())?.value,
            test: test_set(&mut l)?,
            map: l.get("map", |s| s.map.take()).map(|s| s.value),
            synthetic,
        })
    }
}

/// TLS with an identity folder (the default), or plain text when asked for explicitly.
fn security(l: &mut Given<'_>) -> Result<Security, ConfigError> {
    let insecure = l.require("insecure", |s| s.insecure.take())?;
    let identity = l.get("identity", |s| s.identity.take());
    let keys = l.get("signing_keys", |s| s.signing_keys.take());
    match (identity, insecure.value) {
        (Some(_), true) => Err(insecure.invalid(
            "true",
            "false when `identity` is set (TLS and --insecure exclude each other)",
        )),
        (None, true) => Ok(Security::Insecure {
            signing_keys: keys.map(|k| k.value),
        }),
        (Some(identity), false) => {
            let signing_keys = keys.map_or_else(
                || {
                    let parent = identity.value.parent().unwrap_or(Path::new("."));
                    parent.join(dpagg_shared::identity::certs::PUBLIC_KEYS_DIR)
                },
                |k| k.value,
            );
            Ok(Security::Tls {
                identity: identity.value,
                signing_keys,
            })
        }
        (None, false) => {
            let mut e = l.missing("identity");
            if let dpagg_shared::cli::ConfigErrorKind::Missing { hint } = &mut e.kind {
                hint.push_str(
                    "; `dpagg-node certs init` makes identity folders; \
                     --insecure talks plain text to http:// nodes",
                );
            }
            Err(e)
        }
    }
}

/// The node endpoints: at least one, each an https:// URL (http:// with `insecure`).
fn nodes(l: &mut Given<'_>, security: &Security) -> Result<Vec<String>, ConfigError> {
    let nodes = l.require("nodes", |s| {
        Some(std::mem::take(&mut s.nodes)).filter(|n| !n.is_empty())
    })?;
    let (scheme, requirement) = match security {
        Security::Tls { .. } => (
            "https://",
            "https:// URLs such as https://host:port (TLS is on; plain text only with --insecure)",
        ),
        Security::Insecure { .. } => (
            "http://",
            "http:// URLs such as http://host:port (--insecure talks plain text: an https:// \
             node would be spoken to without TLS)",
        ),
    };
    if let Some(bad) = nodes.value.iter().find(|n| !n.starts_with(scheme)) {
        return Err(nodes.invalid(format!("{bad:?}"), requirement));
    }
    Ok(nodes.value)
}

/// The mechanism options: the file's `options` table, then `--option` pairs (which win).
fn options(l: &mut Given<'_>) -> Setting<BTreeMap<String, f64>> {
    let flags = l.get("option", |s| {
        Some(std::mem::take(&mut s.option)).filter(|o| !o.is_empty())
    });
    let file = l.get("options", |s| {
        Some(std::mem::take(&mut s.options)).filter(|o| !o.is_empty())
    });
    let origin = flags
        .as_ref()
        .map(|f| f.origin.clone())
        .or_else(|| file.as_ref().map(|f| f.origin.clone()))
        .unwrap_or(Origin::Default);
    let value = file
        .into_iter()
        .flat_map(|f| f.value)
        .chain(flags.into_iter().flat_map(|f| f.value))
        .collect();
    Setting {
        key: "options",
        value,
        origin,
    }
}

/// The release to ask each node for.
fn request(l: &mut Given<'_>, lambda: Lambda) -> Result<LearnerRequest, ConfigError> {
    let latest = l.require("latest", |s| s.latest.take())?.value;
    let options = options(l);
    if latest {
        if !options.value.is_empty() {
            return Err(options.invalid("set together with latest", "given only with a spec"));
        }
        return Ok(LearnerRequest::Latest);
    }
    let mechanism = l.require("mechanism", |s| s.mechanism.take())?;
    let kind = MechanismKind::from_name(&mechanism.value).ok_or_else(|| {
        mechanism.invalid(format!("{:?}", mechanism.value), "a mechanism dpagg knows")
    })?;
    let spec = LearnerSpec {
        kind,
        epsilon: l
            .require("epsilon", |s| s.epsilon.take())?
            .check(POSITIVE, positive)?,
        delta: l
            .require("delta", |s| s.delta.take())?
            .check(PROBABILITY, probability)?,
        l2: lambda,
        options: options.value,
        map: None,
    };
    Ok(LearnerRequest::Spec {
        spec,
        publish: l.require("publish", |s| s.publish.take())?.value,
    })
}

/// `train_on`: `None` for learners only, else the synthetic data at the learners' ε.
fn synthetic(
    l: &mut Given<'_>,
    request: &LearnerRequest,
) -> Result<Option<SyntheticRequest>, ConfigError> {
    let train_on = l.require("train_on", |s| s.train_on.take())?;
    let rows = l
        .require("synthetic_rows", |s| s.synthetic_rows.take())?
        .check("a whole number in [1, 100000]", |r| {
            (1..=100_000).contains(r)
        })?;
    let delta = l
        .require("synthetic_delta", |s| s.synthetic_delta.take())?
        .check("in (0, 1)", |d| *d > 0.0 && *d < 1.0)?;
    match (train_on.value.as_str(), request) {
        ("learners", _) => Ok(None),
        ("synthetic", LearnerRequest::Spec { spec, publish }) => Ok(Some(SyntheticRequest {
            spec: spec_for(
                spec.epsilon,
                if spec.delta > 0.0 { spec.delta } else { delta },
                rows,
            ),
            publish: *publish,
        })),
        ("synthetic", LearnerRequest::Latest) => Err(train_on.invalid(
            "synthetic",
            "`learners` with latest (synthetic data is asked for at the spec's ε)",
        )),
        (other, _) => Err(train_on.invalid(format!("{other:?}"), "`learners` or `synthetic`")),
    }
}

/// What a learner must satisfy.
fn acceptance(l: &mut Given<'_>) -> Result<Acceptance, ConfigError> {
    Ok(Acceptance {
        max_epsilon: l
            .require("max_epsilon", |s| s.max_epsilon.take())?
            .check("a finite number >= 0", |v| v.is_finite() && *v >= 0.0)?,
        max_delta: l
            .require("max_delta", |s| s.max_delta.take())?
            .check(PROBABILITY, probability)?,
        schema_must_match: l
            .require("schema_must_match", |s| s.schema_must_match.take())?
            .value,
        allow_seeded: l.require("allow_seeded", |s| s.allow_seeded.take())?.value,
        allow_unproven: l
            .require("allow_unproven", |s| s.allow_unproven.take())?
            .value,
        require_noise_as_sampled: l
            .require("require_noise_as_sampled", |s| {
                s.require_noise_as_sampled.take()
            })?
            .value,
        min_learners: l
            .require("min_learners", |s| s.min_learners.take())?
            .check("at least 1", |n| *n >= 1)?,
    })
}

/// How nodes are contacted.
fn network(l: &mut Given<'_>) -> Result<Network, ConfigError> {
    let timeout_ms = l
        .require("timeout_ms", |s| s.timeout_ms.take())?
        .check("at least 1", |t| *t >= 1)?;
    let backoff_ms = l.require("backoff_ms", |s| s.backoff_ms.take())?.value;
    let connect_timeout_ms = l
        .require("connect_timeout_ms", |s| s.connect_timeout_ms.take())?
        .check("at least 1", |t| *t >= 1)?;
    Ok(Network {
        connect_timeout: Duration::from_millis(connect_timeout_ms),
        timeout: Duration::from_millis(timeout_ms),
        retries: l.require("retries", |s| s.retries.take())?.value,
        backoff: Duration::from_millis(backoff_ms),
        concurrency: l
            .require("concurrency", |s| s.concurrency.take())?
            .check("at least 1", |c| *c >= 1)?,
    })
}

/// A separate test file, or else a fraction of the own data (not both).
fn test_set(l: &mut Given<'_>) -> Result<TestSet, ConfigError> {
    let fraction = l.require("test_fraction", |s| s.test_fraction.take())?;
    match l.get("test_file", |s| s.test_file.take()) {
        Some(file) if fraction.is_default() => Ok(TestSet::File(file.value)),
        Some(file) => Err(file.invalid("set together with test_fraction", "given alone")),
        None => Ok(TestSet::Fraction(
            fraction.check("in (0, 1)", |f| *f > 0.0 && *f < 1.0)?,
        )),
    }
}

#[cfg(test)]
mod tests;
