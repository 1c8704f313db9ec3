//! One organisation's node: its public schema, its private data, its policy and its store.
//!
//! [`Node::publish`] is the only path by which anything derived from the data leaves: it builds
//! the mechanism from the spec (so the guarantee is known before training), draws noise from
//! [`NoiseSource::secure`] (invariant 4), and lets [`Store::publish`] check the policy, train and
//! record the charge durably before returning (invariant 3). Training stops at the policy's
//! `max_training_seconds` and at shutdown ([`Node::cancel_training`]); a stopped training
//! releases and charges nothing.

use crate::config::{BelowSpent, CapOverTotal, NodeConfig, Policy};
use crate::metrics::Metrics;
use crate::store::{PublishError, Spent, Store, StoreError, StoredData, data_key};
use dpagg_shared::Dataset;
use dpagg_shared::data::agreed_map::AgreedMap;
use dpagg_shared::data::csv::rows::alike_of;
use dpagg_shared::data::csv::{DataError, RawRows, load_csv_with_raw};
use dpagg_shared::data::diagnose::{Finding, agreed_map_findings, findings};
use dpagg_shared::data::normalise::MapMode;
use dpagg_shared::data::schema::{Schema, SchemaError};
use dpagg_shared::privacy::accounting::admission::BudgetPolicy;
use dpagg_shared::privacy::accounting::ledger::Charge;
use dpagg_shared::privacy::data_release::{self, DataInput, DataKind, DataSpec, PublishedData};
use dpagg_shared::privacy::mechanism::{LearnerSpec, MechanismKind};
use dpagg_shared::privacy::noise::NoiseSource;
use dpagg_shared::privacy::release::PublishedLearner;
use dpagg_shared::util::files::readable_by_others;
use dpagg_shared::util::stop::Stop;
use prost::Message;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Why a node cannot start.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The schema file is unreadable or invalid.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The data file does not match the schema.
    #[error(transparent)]
    Data(#[from] DataError),
    /// The state database cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The policy's budget is below what the ledger has already spent.
    #[error(transparent)]
    BelowSpent(#[from] BelowSpent),
    /// The per-release cap is above the total.
    #[error(transparent)]
    CapOverTotal(#[from] CapOverTotal),
    /// The state folder's files can be read by other users.
    #[error("{0}")]
    StateReadable(String),
    /// `dpagg-node check --strict` finds traps and the policy does not accept them (`serve`).
    #[error(
        "{schema}: `dpagg-node check --strict` fails on this node's data: {}; the node serves no learner over them (fix the schema, or start with --accept-traps / policy.accept_traps = true, which every release records)",
        .findings.join("; ")
    )]
    Traps {
        /// The schema file.
        schema: String,
        /// The findings, as `check` prints them.
        findings: Vec<String>,
    },
}

/// Refuses a state folder whose ledger or lock other users can read (created by an older
/// version under a permissive umask): the fix is in the message.
fn check_private_state(state_dir: &std::path::Path) -> Result<(), NodeError> {
    let files = [
        "node.sqlite",
        "node.sqlite-wal",
        "node.sqlite-shm",
        "serve.lock",
    ];
    let exposed: Vec<String> = files
        .iter()
        .map(|f| state_dir.join(f))
        .filter(|p| p.exists() && readable_by_others(p).unwrap_or(false))
        .map(|p| p.display().to_string())
        .collect();
    if exposed.is_empty() {
        return Ok(());
    }
    Err(NodeError::StateReadable(format!(
        "{}: readable by other users; run `chmod 700 {} && chmod 600 {}` before starting the node",
        exposed.join(", "),
        state_dir.display(),
        exposed.join(" ")
    )))
}

/// The release parameter that says its node's operator accepted the traps `check --strict`
/// finds (`policy.accept_traps`): 1 when set, absent otherwise.
pub const TRAPS_ACCEPTED: &str = "traps_accepted";

/// Budget as the node reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetView {
    /// The policy.
    pub policy: Policy,
    /// The composition of every charge (totals under replace-one).
    pub spent: Spent,
}

impl BudgetView {
    /// ε left under replace-one (never negative).
    pub fn epsilon_remaining(&self) -> f64 {
        budget_policy(&self.policy).epsilon_remaining(&self.spent)
    }

    /// δ left under replace-one (never negative).
    pub fn delta_remaining(&self) -> f64 {
        budget_policy(&self.policy).delta_remaining(&self.spent)
    }
}

/// The part of the node's policy the ledger's admission rule reads.
pub fn budget_policy(policy: &Policy) -> BudgetPolicy {
    BudgetPolicy {
        epsilon_total: policy.epsilon_total,
        delta_total: policy.delta_total,
        max_epsilon_per_release: policy.cap(),
    }
}

/// A loaded node.
#[derive(Debug)]
pub struct Node {
    /// Organisation identifier.
    pub organisation_id: String,
    /// The public schema.
    pub schema: Schema,
    /// Its TOML text, as served by Describe.
    pub schema_toml: String,
    /// Its fingerprint.
    pub fingerprint: String,
    /// The policy.
    pub policy: Policy,
    /// Releases and ledger.
    pub store: Arc<Store>,
    data: Arc<Dataset>,
    /// The same rows' raw values clipped to the schema's bounds, for data releases.
    raw: Arc<RawRows>,
    /// Raised at shutdown: training in progress stops (releasing and charging nothing).
    cancel: Arc<AtomicBool>,
    /// Requests, releases, trainings and the budget, for `metrics_listen`.
    pub metrics: Arc<Metrics>,
    /// What `dpagg-node check --strict` finds in the schema on this node's data (shown to the
    /// operator only; [`Node::traps_for`]).
    traps: Vec<Finding>,
}

impl Node {
    /// Loads schema, data and state.
    pub fn load(config: &NodeConfig) -> Result<Self, NodeError> {
        check_private_state(&config.state_dir)?;
        // The folder's owner first: no data is read under another organisation's name.
        let store = Store::open(&config.state_dir)?;
        store.claim(&config.organisation_id)?;
        let schema_toml =
            std::fs::read_to_string(&config.schema).map_err(|source| SchemaError::Io {
                origin: config.schema.display().to_string(),
                source,
            })?;
        let origin = config.schema.display().to_string();
        let schema = Schema::from_toml_str(&schema_toml, &origin)?;
        // Invariant 2: bounds read off the data (`schema init`) never reach a release.
        schema.require_public_bounds(&origin)?;
        let (data, raw, report) = load_csv_with_raw(&config.data, &schema)?;
        tracing::info!(
            rows = report.rows,
            clipped = report.total_clipped(),
            "loaded the organisation's data"
        );
        let traps = findings(&schema, &report);
        let spent = store.spent()?;
        if let Some(below) = config
            .policy
            .below_spent(spent.epsilon, spent.delta)
            .first()
            .copied()
        {
            return Err(below.into());
        }
        if let Some(e) = config.policy.cap_over_total(spent.epsilon) {
            return Err(e.into());
        }
        Ok(Self {
            organisation_id: config.organisation_id.clone(),
            fingerprint: schema.fingerprint(),
            schema,
            schema_toml,
            policy: config.policy,
            store: Arc::new(store),
            data: Arc::new(data),
            raw: Arc::new(raw),
            cancel: Arc::new(AtomicBool::new(false)),
            metrics: Arc::new(Metrics::new()),
            traps,
        })
    }

    /// Refuses to serve over the traps `check --strict` finds under the schema's own map,
    /// unless the policy accepts them: `serve` calls this before it listens, so a client asking
    /// without an agreed map is never refused for them.
    pub fn require_no_traps(&self, schema_path: &std::path::Path) -> Result<(), NodeError> {
        if self.traps.is_empty() || self.policy.accept_traps {
            return Ok(());
        }
        Err(NodeError::Traps {
            schema: schema_path.display().to_string(),
            findings: self.traps.iter().map(ToString::to_string).collect(),
        })
    }

    /// The traps that hold for a release for `spec` trained on `rows`: those `check --strict`
    /// finds, or — under an agreed map, which replaces the schema's centres and scales — those
    /// that do not depend on them and rows alike measured on the mapped rows.
    fn traps_for(&self, spec: &LearnerSpec, rows: &Dataset) -> Vec<String> {
        let traps = match &spec.map {
            None => self.traps.clone(),
            Some(_) => {
                let columns = rows.dim() - usize::from(self.schema.intercept);
                agreed_map_findings(&self.traps, alike_of(rows, columns))
            }
        };
        traps.iter().map(ToString::to_string).collect()
    }

    /// Stops every training in progress (at shutdown, so that the node ends within its grace
    /// period); later publishes are refused as stopped.
    pub fn cancel_training(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Mechanism names this node accepts under its policy (unproven ones only if allowed; never
    /// the kinds kept for reproductions, [`MechanismKind::offered_by_nodes`]).
    pub fn mechanisms(&self) -> Vec<String> {
        MechanismKind::all()
            .filter(|k| k.offered_by_nodes() && (self.policy.allow_unproven || k.is_proven()))
            .map(|k| k.name().to_owned())
            .collect()
    }

    /// Data kinds this node offers: every one whose guarantee is proven for the sampler as run,
    /// and the unproven ones only if the policy allows them (the policy decides what each may
    /// cost).
    pub fn data_kinds(&self) -> Vec<String> {
        DataKind::all()
            .filter(|k| self.policy.allow_unproven || k.is_proven())
            .map(|k| k.name().to_owned())
            .collect()
    }

    /// Makes a data release for `spec` (statistics or synthetic data), or returns the one made
    /// before for the same spec. As [`Node::publish`]: calibrated from public quantities (n, d,
    /// the schema's bounds), charged durably before any record is read, noise from the secure
    /// generator; the [`PublishedData`] is serialised once ([`dpagg_proto::data`]) and stored,
    /// and every request is served those bytes.
    pub fn publish_data(&self, spec: &DataSpec) -> Result<(StoredData, bool), PublishError> {
        let published = self.make_data(spec);
        self.metrics
            .publish("data", published.as_ref().map(|(_, new)| *new));
        published
    }

    fn make_data(&self, spec: &DataSpec) -> Result<(StoredData, bool), PublishError> {
        // Refused before any plan or charge: the decision reads only the spec and the policy.
        if !spec.kind.is_proven() && !self.policy.allow_unproven {
            return Err(PublishError::Unproven(spec.kind.name().to_owned()));
        }
        let planned = data_release::plan(
            spec,
            &self.schema.features,
            self.data.len() as u64,
            self.data.dim(),
        )
        .map_err(PublishError::Data)?;
        let charge = Charge {
            guarantee: planned.guarantee(),
            rdp: planned.rdp(),
        };
        let mut noise = NoiseSource::secure().map_err(|e| StoreError::Entropy(e.to_string()))?;
        let (stored, new) = self.store.publish_data(
            &data_key(spec, &self.fingerprint),
            spec.kind.name(),
            &budget_policy(&self.policy),
            charge,
            Duration::from_secs_f64(self.policy.max_training_seconds + 60.0),
            |release_id| {
                let _training = self.metrics.training();
                let input = DataInput {
                    features: &self.schema.features,
                    raw: &self.raw.values,
                    positive: &self.raw.positive,
                    dataset: &self.data,
                };
                let payload = planned.run(&input, &mut noise)?;
                let published = PublishedData {
                    release_id: release_id.to_owned(),
                    created_unix_ms: dpagg_shared::util::time::now_ms(),
                    organisation_id: self.organisation_id.clone(),
                    schema_fingerprint: self.fingerprint.clone(),
                    spec: spec.clone(),
                    guarantee: planned.guarantee(),
                    seeded: false,
                    n: planned.n(),
                    features: self
                        .schema
                        .features
                        .iter()
                        .map(|f| f.name.clone())
                        .collect(),
                    parameters: spec.parameters(),
                    payload,
                };
                let body = dpagg_proto::v1::DataReleaseBody::from(&published);
                Ok((body.encode_to_vec(), published.created_unix_ms))
            },
        )?;
        if new {
            let g = stored.guarantee;
            tracing::info!(release_id = %stored.release_id, kind = %stored.kind, epsilon = g.epsilon, delta = g.delta, "published and charged a data release");
        }
        Ok((stored, new))
    }

    /// Spent and remaining budget.
    pub fn budget(&self) -> Result<BudgetView, StoreError> {
        Ok(BudgetView {
            policy: self.policy,
            spent: self.store.spent()?,
        })
    }

    /// The schema fingerprint a release for `spec` carries and the rows it trains on: the
    /// schema's own, or — when the spec carries an agreed map — the node's records mapped by
    /// the schema with the map applied (a fixed, public, per-record map: the mechanism's proof
    /// holds as it is, `docs/proofs/agreed-map.md`).
    fn rows_for(
        &self,
        spec: &LearnerSpec,
    ) -> Result<(String, std::borrow::Cow<'_, Dataset>), PublishError> {
        let Some(map) = &spec.map else {
            return Ok((
                self.fingerprint.clone(),
                std::borrow::Cow::Borrowed(&*self.data),
            ));
        };
        let mapped = map.apply(&self.schema)?;
        let rows = AgreedMap::rows(&mapped, &self.raw.records(), &self.raw.positive);
        Ok((mapped.fingerprint(), std::borrow::Cow::Owned(rows)))
    }

    /// The fingerprint a release for `spec` carries (and is stored under): the schema's, or
    /// the schema's with the spec's agreed map applied.
    pub fn fingerprint_for(&self, spec: &LearnerSpec) -> Result<String, PublishError> {
        match &spec.map {
            None => Ok(self.fingerprint.clone()),
            Some(map) => Ok(map.apply(&self.schema)?.fingerprint()),
        }
    }

    /// Releases a learner for `spec`, or returns the one released before for the same spec.
    pub fn publish(&self, spec: &LearnerSpec) -> Result<(PublishedLearner, bool), PublishError> {
        let published = self.publish_learner(spec);
        self.metrics
            .publish("learner", published.as_ref().map(|(_, new)| *new));
        published
    }

    fn publish_learner(
        &self,
        spec: &LearnerSpec,
    ) -> Result<(PublishedLearner, bool), PublishError> {
        spec.check_ranges()?;
        // λ = auto is calibrated for ball-mode schemas; with the paper map it means 0.01. The
        // stored spec (the release's identity) keeps `auto`; the release records the λ used.
        let mut trained = spec.clone();
        if self.schema.mode() == MapMode::Paper {
            trained.l2 = spec.l2.for_paper_map(&self.schema.name);
        }
        let mechanism = trained.build()?;
        if !mechanism.is_proven() && !self.policy.allow_unproven {
            return Err(PublishError::Unproven(mechanism.name().to_owned()));
        }
        // An agreed map is checked against the public schema before anything is charged; the
        // release is keyed and fingerprinted by the schema with the map applied.
        let (fingerprint, data) = self.rows_for(spec)?;
        // Traps are refused before anything is charged, unless the operator accepts them.
        let traps = self.traps_for(spec, &data);
        if !traps.is_empty() && !self.policy.accept_traps {
            return Err(PublishError::Traps(traps));
        }
        let accepted = self.policy.accept_traps;
        // A release that cannot run at this size, or cannot finish in time, is refused before
        // it is charged; one published before is returned whatever the limit is now.
        if self.store.for_spec(spec, &fingerprint)?.is_none() {
            mechanism.check_size(data.len(), data.dim())?;
            if let Some(predicted) = mechanism.predicted_seconds(data.len(), data.dim())
                && predicted > self.policy.max_training_seconds
            {
                return Err(PublishError::TooSlow {
                    predicted,
                    limit: self.policy.max_training_seconds,
                });
            }
        }
        let mut noise = NoiseSource::secure().map_err(|e| StoreError::Entropy(e.to_string()))?;
        let charge = Charge {
            guarantee: mechanism.guarantee(),
            rdp: mechanism.rdp(),
        };
        let (release, new) = self.store.publish(
            spec,
            &fingerprint,
            &budget_policy(&self.policy),
            charge,
            // A reservation older than the training limit (and a margin) belongs to a dead
            // process: its charge stays, and the spec may be trained again.
            Duration::from_secs_f64(self.policy.max_training_seconds + 60.0),
            || {
                let _training = self.metrics.training();
                // No request can raise this: options such as a Gibbs chain's max_steps are the
                // client's, the deadline is the node's.
                let limit = Duration::from_secs_f64(self.policy.max_training_seconds);
                let stop = Stop::on_flag(self.cancel.clone()).with_deadline(Instant::now() + limit);
                let mut release = mechanism.release_until(&data, &mut noise, &stop)?;
                if accepted {
                    // The operator's decision, recorded whether or not traps were found here
                    // (so the record reads nothing off the data).
                    release
                        .metadata
                        .parameters
                        .insert(TRAPS_ACCEPTED.to_owned(), 1.0);
                }
                Ok(release)
            },
        )?;
        if new {
            tracing::info!(release_id = %release.release_id, mechanism = %release.metadata().mechanism, epsilon = spec.epsilon, delta = spec.delta, "published and charged a learner");
        }
        Ok((release, new))
    }
}
