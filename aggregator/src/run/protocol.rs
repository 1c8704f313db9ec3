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

use crate::run::config::{LearnerRequest, RunConfig, Security, TestSet};
use crate::run::fetch::{Client, NodeOutcome, fetch_all, max_reply_bytes};
use crate::run::report::{Accuracies, FinalView, NodeReport, Report, split_warnings};
use crate::run::screen::{Accepted, screen};
use crate::run::synthetic::train_on_synthetic;
use crate::run::trust::Trust;
use crate::run::validate::Context as Check;
use anyhow::{Context, Result, bail};
use dpagg_shared::aggregate::MirrorAveraging;
use dpagg_shared::aggregate::select::{Candidate, FinalModel, SelectionConfig, choose_final};
use dpagg_shared::data::csv::load_csv;
use dpagg_shared::data::partition::proportional_split;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::noise::derived_rng;
use dpagg_shared::util::time::{now_ms, rfc3339};
use dpagg_shared::{Dataset, LinearClassifier};
use std::path::Path;

/// The aggregator's own data, split.
struct OwnData {
    schema: Schema,
    train: Dataset,
    test: Dataset,
}

fn load(path: &Path, schema: &Schema) -> Result<Dataset> {
    let (data, report) = load_csv(path, schema)?;
    // Counts only, and only in the local log (invariant 2).
    tracing::info!(file = %path.display(), rows = report.rows, clipped = report.total_clipped(), "loaded own data");
    Ok(data)
}

fn own_data(config: &RunConfig) -> Result<OwnData> {
    let schema = Schema::load(&config.schema)?;
    // Invariant 2: bounds read off the data (`schema init`) are refused here as by the nodes.
    schema.require_public_bounds(&config.schema.display().to_string())?;
    let data = load(&config.data, &schema)?;
    let (train, test) = match &config.test {
        TestSet::File(path) => (data, load(path, &schema)?),
        TestSet::Fraction(f) => {
            let mut rng = derived_rng(config.seed, &[1]);
            let (test, train) = proportional_split(&data, *f, &mut rng).with_context(|| {
                format!("{}: cannot split off a test set", config.data.display())
            })?;
            (train, test)
        }
    };
    if train.is_empty() || test.is_empty() {
        bail!(
            "{}: too few rows for a training and a test set ({} and {})",
            config.data.display(),
            train.len(),
            test.len()
        );
    }
    Ok(OwnData {
        schema,
        train,
        test,
    })
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
                reason = %crate::run::fetch::clean(&e.to_string(), crate::run::fetch::MAX_TEXT),
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
    let own = own_data(config)?;
    let client = client(&config.security, own.schema.dim())?;
    let mut outcomes = fetch_all(&config.nodes, &config.request, config.network, &client).await;
    let fingerprint = own.schema.fingerprint();
    let check = Check {
        dim: own.schema.dim(),
        fingerprint: &fingerprint,
        accept: config.accept,
        request: &config.request,
    };
    let accepted = screen(&mut outcomes, &check, &Trust::new(&config.security));
    log_exclusions(&outcomes);
    enough_learners(&outcomes, accepted.len(), config.accept.min_learners)?;
    MirrorAveraging::new(config.beta)?.warn_if_uncovered();
    let experts: Vec<LinearClassifier> = accepted
        .iter()
        .map(|a| a.learner.classifier().clone())
        .collect();
    let selection = SelectionConfig {
        beta: config.beta,
        seed: config.seed,
        ..SelectionConfig::default()
    };
    let fin = choose_final(&experts, &own.train, &selection)
        .context("cannot build the final model on the aggregator's own training rows")?;
    let warnings = split_warnings(&own.train, &own.test);
    warnings.iter().for_each(|w| tracing::info!("{w}"));

    let nodes = node_reports(&outcomes, &accepted, &fin, &own.test);
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
                &own.schema,
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
        request: describe_request(&config.request),
        schema_fingerprint: fingerprint,
        beta: config.beta,
        l2: fin.local_lambda,
        seed: config.seed,
        train_rows: own.train.len(),
        test_rows: own.test.len(),
        included: accepted.len(),
        excluded: outcomes.len() - accepted.len(),
        candidate_accuracies: Accuracies::measure(Candidate::all(), accuracy, own_weight),
        final_model: FinalView::new(&fin, &own.test),
        comparator_accuracies: Accuracies::measure(Candidate::comparators(), accuracy, own_weight),
        summary: Vec::new(),
        warnings,
        nodes,
        synthetic,
        signed_by: None,
        signature: None,
        schema: Some(own.schema),
    }
    .with_summary())
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
