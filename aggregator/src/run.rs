//! `dpagg-aggregator run`: collect the organisations' private learners, validate them, combine
//! them by mirror averaging (seed 001 eq. 15–17) on the aggregator's own data, and compare with
//! what the aggregator learns alone.
//!
//! Privacy: the aggregator sees only released learners and its own records. The aggregate is a
//! function of those, so it keeps each organisation's guarantee with respect to that
//! organisation's data (seed 001 Proposition 4.1). The aggregator's own records are never sent
//! anywhere; the report holds accuracies on its own test split.

use crate::config::{LearnerRequest, RunConfig, TestSet};
use crate::fetch::{Exclusion, NodeOutcome, fetch_all};
use crate::report::{NodeReport, Report};
use crate::validate::{Context as Check, validate};
use anyhow::{Context, Result, bail};
use dpagg_proto::v1 as pb;
use dpagg_shared::Dataset;
use dpagg_shared::aggregate::{MirrorAveraging, uniform_average};
use dpagg_shared::csvload::load_csv;
use dpagg_shared::noise::sim_rng;
use dpagg_shared::partition::proportional_split;
use dpagg_shared::schema::Schema;
use dpagg_shared::solver::fit_logistic;
use std::collections::HashMap;
use std::path::Path;

/// Arguments of `run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    settings: crate::config::Settings,
}

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
    let data = load(&config.data, &schema)?;
    let (train, test) = match &config.test {
        TestSet::File(path) => (data, load(path, &schema)?),
        TestSet::Fraction(f) => {
            let mut rng = sim_rng(config.seed, &[1]);
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

/// An accepted learner.
struct Accepted {
    index: usize,
    weights: Vec<f64>,
}

/// Validates every fetched learner and drops duplicates (same organisation or release twice).
fn screen(outcomes: &mut [NodeOutcome], check: &Check<'_>) -> Vec<Accepted> {
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut accepted = Vec::new();
    for (index, o) in outcomes.iter_mut().enumerate() {
        let Ok(f) = &o.result else { continue };
        if let Err(v) = validate(&f.learner, &f.described_fingerprint, check) {
            o.result = Err(Exclusion::Invalid(v));
            continue;
        }
        let release = f
            .learner
            .metadata
            .as_ref()
            .map(|m| m.release_id.clone())
            .unwrap_or_default();
        let keys = [
            format!("organisation `{}`", f.organisation_id),
            format!("release {release}"),
        ];
        if let Some(dup) = keys.iter().find(|k| seen.contains_key(*k)) {
            o.result = Err(Exclusion::Duplicate(dup.clone()));
            continue;
        }
        let weights = f.learner.weights.clone();
        for k in keys {
            seen.insert(k, o.endpoint.clone());
        }
        accepted.push(Accepted { index, weights });
    }
    accepted
}

/// Runs the whole protocol and returns the report (nothing is written).
pub async fn execute(config: &RunConfig) -> Result<Report> {
    let own = own_data(config)?;
    let local = fit_logistic(&own.train, config.lambda)
        .context("cannot fit the local-only baseline on the aggregator's data")?;
    let mut outcomes = fetch_all(&config.nodes, &config.request, config.network).await;
    let fingerprint = own.schema.fingerprint();
    let check = Check {
        dim: own.schema.dim(),
        fingerprint: &fingerprint,
        accept: config.accept,
        request: &config.request,
    };
    let accepted = screen(&mut outcomes, &check);
    if accepted.len() < config.accept.min_learners {
        let reasons: Vec<String> = outcomes
            .iter()
            .filter_map(|o| {
                o.result
                    .as_ref()
                    .err()
                    .map(|e| format!("{}: {e}", o.endpoint))
            })
            .collect();
        bail!(
            "only {} of {} node(s) gave a valid learner, {} needed ({})",
            accepted.len(),
            outcomes.len(),
            config.accept.min_learners,
            reasons.join("; ")
        );
    }
    let mirror = MirrorAveraging::new(config.beta)?;
    mirror.warn_if_uncovered();
    let experts: Vec<Vec<f64>> = accepted.iter().map(|a| a.weights.clone()).collect();
    let aggregate = mirror.aggregate(&experts, &own.train, &mut sim_rng(config.seed, &[2]))?;
    let mut with_own_experts = experts.clone();
    with_own_experts.push(local.theta.clone());
    let with_own = mirror.aggregate(
        &with_own_experts,
        &own.train,
        &mut sim_rng(config.seed, &[3]),
    )?;
    let best = &experts[aggregate.best_single()];

    let mut nodes: Vec<NodeReport> = outcomes
        .iter()
        .map(|o| NodeReport::from_outcome(o, &own.test))
        .collect();
    for (k, a) in accepted.iter().enumerate() {
        nodes[a.index].weight = Some(aggregate.lambda[k]);
        nodes[a.index].weight_with_own = Some(with_own.lambda[k]);
    }
    Ok(Report {
        generated_at: dpagg_node::store::rfc3339(dpagg_node::store::now_ms()),
        request: describe_request(&config.request),
        schema_fingerprint: fingerprint,
        beta: config.beta,
        lambda: config.lambda,
        seed: config.seed,
        train_rows: own.train.len(),
        test_rows: own.test.len(),
        included: accepted.len(),
        excluded: outcomes.len() - accepted.len(),
        local_baseline_accuracy: own.test.accuracy(&local.theta),
        mirror_averaged_accuracy: own.test.accuracy(&aggregate.theta),
        with_own_learner_accuracy: own.test.accuracy(&with_own.theta),
        own_learner_weight: with_own.lambda.last().copied().unwrap_or(0.0),
        uniform_average_accuracy: own.test.accuracy(&uniform_average(&experts)),
        best_single_accuracy: own.test.accuracy(best),
        nodes,
    })
}

fn describe_request(r: &LearnerRequest) -> String {
    match r {
        LearnerRequest::Latest => "latest release of each node".into(),
        LearnerRequest::Spec {
            mechanism,
            epsilon,
            delta,
            lambda,
            options,
            publish,
        } => format!(
            "{mechanism} ε = {epsilon} δ = {delta} λ = {lambda}{}{}",
            options
                .iter()
                .map(|(k, v)| format!(" {k} = {v}"))
                .collect::<String>(),
            if *publish {
                " (published on request)"
            } else {
                ""
            }
        ),
    }
}

/// `run`: execute, print the table, write report.json and report.html.
pub fn run(args: Args) -> Result<()> {
    let config = args.settings.resolve()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let report = runtime.block_on(execute(&config))?;
    print!("{}", report.table());
    report.write(&config.out)?;
    println!(
        "wrote {} and {}",
        config.out.join("report.json").display(),
        config.out.join("report.html").display()
    );
    Ok(())
}

/// Accuracy of a learner's weights on `test`, if they fit it.
pub fn learner_accuracy(learner: &pb::PrivateLearner, test: &Dataset) -> Option<f64> {
    (learner.weights.len() == test.dim() && learner.weights.iter().all(|w| w.is_finite()))
        .then(|| test.accuracy(&learner.weights))
}
