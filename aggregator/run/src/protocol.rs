//! `dpagg-aggregator run`: collect the organisations' private learners, validate them, combine
//! them by mirror averaging (Minami et al. 2015, eq. 15–17) on the aggregator's own data, and
//! compare with what the aggregator learns alone: a logistic regression tuned by cross-validation
//! on its own training rows. The final model is chosen among the candidates by cross-validation on
//! those rows too (`dpagg_shared::aggregate::select`), so it is the local model whenever the
//! others' learners do not help.
//!
//! Privacy: the aggregator sees only released learners and its own records. The aggregate is a
//! function of those, so it keeps each organisation's guarantee with respect to that
//! organisation's data (Minami et al. 2015, Proposition 4.1). The aggregator's own records are
//! never sent anywhere; the report holds accuracies on its own test split.

use crate::agreed::{OwnViews, Records};
use crate::config::{LearnerRequest, OwnSource, RunConfig, Security, TestSet};
use crate::fetch::{Client, NodeOutcome, fetch_all, max_reply_bytes};
use crate::model::FinalView;
use crate::report::majority::{self, MajorityView};
use crate::report::{Accuracies, MapView, NodeReport, Report, split_warnings};
use crate::screen::{Accepted, screen};
use crate::synthetic::train_on_synthetic;
use crate::trust::Trust;
use crate::validate::Context as Check;
use anyhow::{Context, Result, bail};
use dpagg_shared::aggregate::MirrorAveraging;
use dpagg_shared::aggregate::select::{
    Candidate, FinalModel, SelectionConfig, choose_final_scored,
};
use dpagg_shared::data::agreed_map::AgreedMap;
use dpagg_shared::data::csv::load_csv_with_raw;
use dpagg_shared::data::partition::proportional_split;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::mechanism::LearnerSpec;
use dpagg_shared::util::seed::derived_rng;
use dpagg_shared::util::time::{now_ms, rfc3339};
use dpagg_shared::{Dataset, LinearClassifier};
use std::path::Path;

/// The aggregator's own data, split.
struct OwnData {
    schema: Schema,
    train: Records,
    test: Records,
}

/// The records of `path` (raw values, NaN where missing) and their labels.
fn load(path: &Path, schema: &Schema) -> Result<Records> {
    let (_, raw, report) = load_csv_with_raw(path, schema)?;
    // Counts only, and only in the local log (invariant 2).
    tracing::info!(file = %path.display(), rows = report.rows, clipped = report.total_clipped(), "loaded own data");
    Ok(Records {
        rows: raw.records(),
        positive: raw.positive,
    })
}

/// A stratified `fraction` of `data` as the test set, the rest as the training set: the rows
/// [`proportional_split`] deals, drawn on the indices with the labels (it reads only those and
/// the random stream).
fn split(data: &Records, fraction: f64, seed: u64) -> Result<(Records, Records)> {
    let labels = data.positive.iter().map(|&p| if p { 1.0 } else { -1.0 });
    let index = Dataset::new(
        (0..data.rows.len()).map(|i| i as f64).collect(),
        labels.collect(),
        1,
    );
    let (test, train) = proportional_split(&index, fraction, &mut derived_rng(seed, &[1]))?;
    let rows = |d: &Dataset| {
        (0..d.len())
            .map(|i| d.row(i)[0] as usize)
            .collect::<Vec<_>>()
    };
    Ok((data.subset(&rows(&train)), data.subset(&rows(&test))))
}

fn own_data(config: &OwnSource) -> Result<OwnData> {
    let schema = Schema::load(&config.schema)?;
    // Invariant 2: bounds read off the data (`schema init`) are refused here as by the nodes.
    schema.require_public_bounds(&config.schema.display().to_string())?;
    let data = load(&config.data, &schema)?;
    let (train, test) = match &config.test {
        TestSet::File(path) => (data, load(path, &schema)?),
        TestSet::Fraction(f) => split(&data, *f, config.seed)
            .with_context(|| format!("{}: cannot split off a test set", config.data.display()))?,
    };
    if train.rows.is_empty() || test.rows.is_empty() {
        bail!(
            "{}: too few rows for a training and a test set ({} and {})",
            config.data.display(),
            train.rows.len(),
            test.rows.len()
        );
    }
    Ok(OwnData {
        schema,
        train,
        test,
    })
}

/// The public schema and the own training records, as a run splits them.
pub(crate) fn own_data_records(config: &OwnSource) -> Result<(Schema, Records)> {
    let own = own_data(config)?;
    Ok((own.schema, own.train))
}

/// The own rows under the run's maps (the agreed map of `config.map`, if any).
pub(crate) fn own_views(config: &RunConfig) -> Result<(Schema, OwnViews, Records)> {
    let own = own_data(&config.own_source())?;
    if config.map.is_some() && config.synthetic.is_some() {
        bail!(
            "map and train_on = \"synthetic\" cannot be combined: synthetic rows are in the schema's own units"
        );
    }
    let map = match &config.map {
        None => None,
        Some(path) => Some(AgreedMap::load(path)?),
    };
    let views = OwnViews::new(&own.schema, map, &own.train, &own.test, config.seed)?;
    Ok((own.schema, views, own.train))
}

/// How the aggregator reaches nodes: mutual TLS with its identity folder, or plain text; replies
/// are decoded up to a size fixed by the schema's dimension `dim`.
pub fn client(security: &Security, dim: usize) -> Result<Client> {
    let tls = match security {
        Security::Tls { identity, .. } => Some(
            dpagg_shared::identity::IdentityDir::load(identity)?
                .client()
                .context("cannot set up TLS")?,
        ),
        Security::Insecure { .. } => {
            tracing::warn!(
                "talking PLAIN TEXT to the nodes (--insecure): nobody's identity is checked"
            );
            None
        }
    };
    Ok(Client {
        tls,
        max_reply: max_reply_bytes(dim),
    })
}

/// Logs every excluded node with its reason (the audit trail of a run; the report has them too).
fn log_exclusions(outcomes: &[NodeOutcome]) {
    for o in outcomes {
        if let Err(e) = &o.result {
            tracing::warn!(
                target: "dpagg::audit",
                endpoint = %o.endpoint,
                organisation = o.organisation_id.as_deref().unwrap_or("?"),
                code = e.code(),
                reason = %crate::wire::clean(&e.to_string(), crate::wire::MAX_TEXT),
                "node excluded"
            );
        }
    }
}

/// Fails, naming every exclusion, when fewer than `min` valid learners remain.
fn enough_learners(outcomes: &[NodeOutcome], accepted: usize, min: usize) -> Result<()> {
    if accepted >= min {
        return Ok(());
    }
    let reasons: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            o.result
                .as_ref()
                .err()
                .map(|e| format!("{}: {e}", o.endpoint))
        })
        .collect();
    let why = if reasons.is_empty() {
        "every node gave a valid learner: add nodes or lower min_learners".to_owned()
    } else {
        reasons.join("; ")
    };
    bail!(
        "only {accepted} of {} node(s) gave a valid learner, {min} needed ({why})",
        outcomes.len(),
    );
}

/// Every node's line of the report: what it served, and for the accepted ones their release,
/// signature and mixing weights.
fn node_reports(
    outcomes: &[NodeOutcome],
    accepted: &[Accepted],
    fin: &FinalModel,
    test: &Dataset,
) -> Vec<NodeReport> {
    let mut nodes: Vec<NodeReport> = outcomes.iter().map(NodeReport::from_outcome).collect();
    for (k, a) in accepted.iter().enumerate() {
        let node = &mut nodes[a.index];
        node.describe_release(&a.learner, test);
        node.signature = a.signature.clone();
        node.release_protobuf = Some(a.served.clone());
        node.certificate_identity = a.certificate_identity.clone();
        node.mixing_weight = Some(fin.mixing_weights[k]);
        node.mixing_weight_with_own = Some(fin.mixing_weights_with_own[k]);
    }
    nodes
}

/// Runs the whole protocol and returns the report (nothing is written).
pub async fn execute(config: &RunConfig) -> Result<Report> {
    let (public, own, _) = own_views(config)?;
    let client = client(&config.security, own.learners.dim())?;
    let request = with_map(&config.request, own.map.as_ref());
    let mut outcomes = fetch_all(&config.nodes, &request, config.network, &client).await;
    let fingerprint = own.learners.fingerprint();
    let public_fingerprint = public.fingerprint();
    let check = Check {
        dim: own.learners.dim(),
        fingerprint: &fingerprint,
        public_fingerprint: &public_fingerprint,
        public_schema: Some(&public),
        accept: config.accept,
        request: &request,
    };
    let accepted = screen(&mut outcomes, &check, &Trust::new(&config.security));
    log_exclusions(&outcomes);
    enough_learners(&outcomes, accepted.len(), config.accept.min_learners)?;
    MirrorAveraging::new(config.beta)?.warn_if_uncovered();
    let fin = final_model(config, &own, &accepted)?;
    let warnings = split_warnings(&own.train, &own.test);
    warnings.iter().for_each(|w| tracing::info!("{w}"));

    let mut nodes = node_reports(&outcomes, &accepted, &fin, &own.test_learners);
    let majority = majority_view(&public, &own, &fin, &mut nodes);
    let accuracy = |c: Candidate| fin.model(c).accuracy(&own.test);
    let own_weight = fin.mixing_weights_with_own.last().copied().unwrap_or(0.0);
    let synthetic = match &config.synthetic {
        None => None,
        Some(request) => Some(
            train_on_synthetic(
                &config.nodes,
                request,
                config.network,
                &client,
                &Trust::new(&config.security),
                &config.accept,
                &own.learners,
                &own.train,
                &own.test,
                config.seed,
            )
            .await
            .context("cannot train on the pooled synthetic rows")?,
        ),
    };
    Ok(Report {
        generated_at: rfc3339(now_ms()),
        request: describe_request(&request),
        schema_fingerprint: public_fingerprint,
        beta: config.beta,
        l2: fin.local_lambda,
        seed: config.seed,
        train_rows: own.train.len(),
        test_rows: own.test.len(),
        included: accepted.len(),
        excluded: outcomes.len() - accepted.len(),
        accepted_proofs: config.accept.accepted_proofs(),
        candidate_accuracies: Accuracies::measure(Candidate::all(), accuracy, own_weight),
        final_model: FinalView::new(&fin, &own.test),
        comparator_accuracies: Accuracies::measure(Candidate::comparators(), accuracy, own_weight),
        summary: Vec::new(),
        warnings,
        nodes,
        synthetic,
        agreed_map: own.map.as_ref().map(|m| MapView::new(m, &own)),
        majority,
        signed_by: None,
        signature: None,
        schema: Some(own.own.clone()),
        learner_schema: own.own_columns.map(|_| own.learners.clone()),
    }
    .with_summary())
}

/// The final model on the own training rows, from the accepted learners.
fn final_model(config: &RunConfig, own: &OwnViews, accepted: &[Accepted]) -> Result<FinalModel> {
    let experts: Vec<LinearClassifier> = accepted
        .iter()
        .map(|a| own.expert(a.learner.classifier()))
        .collect();
    let selection = SelectionConfig {
        beta: config.beta,
        seed: config.seed,
        own_columns: own.own_columns,
        ..SelectionConfig::default()
    };
    choose_final_scored(&experts, &own.train, &selection, own.scored.as_deref())
        .context("cannot build the final model on the aggregator's own training rows")
}

/// Flags the included learners (and mirror averaging) no better than always answering the more
/// common label of the own test rows, and says why that is likely ([`MajorityView`]).
fn majority_view(
    public: &Schema,
    own: &OwnViews,
    fin: &FinalModel,
    nodes: &mut [NodeReport],
) -> Option<MajorityView> {
    let test = &own.test_learners;
    let positive = test.labels().iter().filter(|&&y| y > 0.0).count() as f64;
    let positive = positive / test.len().max(1) as f64;
    let majority = if positive >= 0.5 {
        (public.label.positive.as_str(), positive)
    } else {
        (public.label.negative.as_str(), 1.0 - positive)
    };
    let mut learners = Vec::new();
    for n in nodes.iter_mut().filter(|n| n.status == "included") {
        if let Some(a) = n.accuracy {
            n.no_better_than_majority = Some(a <= majority.1);
            learners.push((n.organisation_id.clone().unwrap_or_default(), a));
        }
    }
    let features = own.learners.dim() - usize::from(own.learners.intercept);
    let alike = majority::alike(&own.train_learners, features);
    let mirror = fin.model(Candidate::MirrorAveraging).accuracy(&own.test);
    MajorityView::new(majority, &learners, mirror, alike, own.learners.dim())
}

/// The request with the agreed map in its spec (a latest request is left as it is: the
/// learners' fingerprints must still be those of the map).
fn with_map(request: &LearnerRequest, map: Option<&AgreedMap>) -> LearnerRequest {
    match (request, map) {
        (LearnerRequest::Spec { spec, publish }, Some(m)) => LearnerRequest::Spec {
            spec: LearnerSpec {
                map: Some(Box::new(m.clone())),
                ..spec.clone()
            },
            publish: *publish,
        },
        _ => request.clone(),
    }
}

fn describe_request(r: &LearnerRequest) -> String {
    match r {
        LearnerRequest::Latest => "latest release of each node".into(),
        LearnerRequest::Spec { spec, publish } => format!(
            "{}{}",
            spec.describe(),
            if *publish {
                " (published on request)"
            } else {
                ""
            }
        ),
    }
}
