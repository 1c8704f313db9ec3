//! The resolved configuration of `dpagg-aggregator run`: what [`super::Settings::resolve`] makes
//! of the layered settings once every value is checked.

use dpagg_shared::privacy::data_release::{DataKind, DataSpec};
use dpagg_shared::privacy::guarantee::ProofCoverage;
use dpagg_shared::privacy::mechanism::LearnerSpec;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which release to ask each node for.
#[derive(Debug, Clone, PartialEq)]
pub enum LearnerRequest {
    /// The node's newest release.
    Latest,
    /// The newest release for exactly this spec (published on request if `publish`).
    Spec {
        /// What to ask for.
        spec: LearnerSpec,
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
    /// Accept only releases whose proof covers the noise as sampled.
    pub require_noise_as_sampled: bool,
    /// Fewest valid learners for a run to succeed.
    pub min_learners: usize,
}

impl Acceptance {
    /// The proof labels this policy accepts, strongest first: `noise-as-sampled` always,
    /// `real-arithmetic` unless `require_noise_as_sampled`, `none` only with `allow_unproven`.
    pub fn accepted_proofs(&self) -> Vec<&'static str> {
        ProofCoverage::ALL
            .into_iter()
            .filter(|p| match p {
                ProofCoverage::NoiseAsSampled => true,
                ProofCoverage::RealArithmetic => !self.require_noise_as_sampled,
                ProofCoverage::None => self.allow_unproven && !self.require_noise_as_sampled,
            })
            .map(ProofCoverage::name)
            .collect()
    }
}

/// How nodes are contacted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Network {
    /// To connect and finish the handshake.
    pub connect_timeout: Duration,
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

/// How the aggregator authenticates nodes and their learners.
#[derive(Debug, Clone, PartialEq)]
pub enum Security {
    /// Mutual TLS with this identity folder; every learner must carry a valid signature by the
    /// key in `signing_keys/<organisation>.pub`.
    Tls {
        /// The aggregator's identity folder.
        identity: PathBuf,
        /// The trusted public signing keys.
        signing_keys: PathBuf,
    },
    /// Plain text; signatures are checked where a key is known, unsigned learners accepted.
    Insecure {
        /// The trusted public signing keys, if any.
        signing_keys: Option<PathBuf>,
    },
}

impl Security {
    /// The folder of trusted public signing keys, if any.
    pub fn signing_keys(&self) -> Option<&Path> {
        match self {
            Self::Tls { signing_keys, .. } => Some(signing_keys),
            Self::Insecure { signing_keys } => signing_keys.as_deref(),
        }
    }
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
    /// Where to write the run's figures as a Prometheus textfile, if anywhere.
    pub metrics_textfile: Option<PathBuf>,
    /// TLS and signatures, or plain text.
    pub security: Security,
    /// The release to ask for.
    pub request: LearnerRequest,
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
    /// The agreed map file the learners' rows go through, if any.
    pub map: Option<PathBuf>,
    /// `--train-on synthetic`: the synthetic data to ask for.
    pub synthetic: Option<SyntheticRequest>,
}

/// The synthetic data asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticRequest {
    /// The spec (`mvn-synthetic-gaussian` at the learners' ε).
    pub spec: DataSpec,
    /// Ask nodes without such a release to make one.
    pub publish: bool,
}

/// Where the aggregator's own rows come from and how they are split (`run` and `map` alike).
#[derive(Debug, Clone, PartialEq)]
pub struct OwnSource {
    /// Own data.
    pub data: PathBuf,
    /// Public schema.
    pub schema: PathBuf,
    /// Test set.
    pub test: TestSet,
    /// Seed of the aggregator's own randomness (the test split, the map rows).
    pub seed: u64,
}

impl RunConfig {
    /// The own rows' source.
    pub fn own_source(&self) -> OwnSource {
        OwnSource {
            data: self.data.clone(),
            schema: self.schema.clone(),
            test: self.test.clone(),
            seed: self.seed,
        }
    }
}

/// The resolved configuration of `dpagg-aggregator map`.
#[derive(Debug, Clone, PartialEq)]
pub struct MapConfig {
    /// The own rows.
    pub own: OwnSource,
    /// The map file to write.
    pub map: PathBuf,
}

/// The synthetic spec of a run: `mvn-synthetic-gaussian` at the learners' ε (their δ when it is
/// positive, else `delta`), `rows` rows.
pub fn spec_for(epsilon: f64, delta: f64, rows: usize) -> DataSpec {
    let mut spec = DataSpec::new(DataKind::MVN_SYNTHETIC_GAUSSIAN, epsilon, delta);
    spec.options.insert("rows".into(), rows as f64);
    spec
}
