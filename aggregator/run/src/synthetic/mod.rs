//! `dpagg-aggregator run --train-on synthetic`: besides the learners, ask every node
//! for a synthetic dataset at the same (ε, δ) — Miura et al.'s (2022) normal distribution fitted to
//! its rows, with the mean and second moment perturbed by the Gaussian mechanism first
//! (`mvn-synthetic-gaussian`) — pool the rows with the aggregator's own training rows, and train a
//! logistic regression (λ by cross-validation) on the pool. The report sets its accuracy beside
//! mirror averaging's, each organisation having spent the same ε on either.
//!
//! Each release is checked as a learner is (`screen.rs`, typed `DataViolation`s): signature by
//! the organisation's key (over the body bytes as served, [`dpagg_proto::data`]), identity
//! against the certificate, then the decoded `PublishedData`: schema fingerprint, the acceptance
//! policy's ε and δ, no seeded noise, and its shape. Rows leave the unit cube by
//! the public map of [`dpagg_shared::privacy::synthetic::mvn_release::from_unit_cube`] and are
//! normalised by the aggregator's own schema, as its own rows are.
//!
//! Privacy: the pooled model post-processes the releases, so it keeps each organisation's
//! guarantee with respect to that organisation's records; it uses the aggregator's own rows
//! without noise.

mod screen;

use screen::screen;

use crate::config::{Acceptance, Network, SyntheticRequest};
use crate::fetch::{Client, Exclusion, Failure, connect, describe_checked, from_status, retrying};
use crate::trust::{SignatureView, Trust};
use crate::wire::{MAX_TEXT, clean};
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_client::OrganisationNodeClient;
use dpagg_shared::Dataset;
use dpagg_shared::aggregate::select::tuned_logistic;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::data_release::DataSpec;
use serde::Serialize;
use tonic::Code;

/// Largest data release decoded: 2·10⁶ values (the node's limit) at 9 bytes, and the body.
pub const MAX_DATA_REPLY: usize = 24 << 20;

/// One node's synthetic release, or why it was not used.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticNode {
    /// The endpoint.
    pub endpoint: String,
    /// The organisation, once it described itself.
    pub organisation_id: Option<String>,
    /// `included` or `excluded`.
    pub status: &'static str,
    /// The release.
    pub release_id: Option<String>,
    /// Its guarantee.
    pub epsilon: Option<f64>,
    /// Its δ.
    pub delta: Option<f64>,
    /// Rows it carried.
    pub rows: usize,
    /// Its signature, when signed.
    pub signature: Option<SignatureView>,
    /// The release's body as served, hex (what the signature covers).
    pub release_body: Option<String>,
    /// Why it was not used.
    pub exclusion: Option<String>,
}

/// What `--train-on synthetic` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyntheticView {
    /// The spec asked for.
    pub spec: String,
    /// Own training rows plus the synthetic rows used.
    pub pooled_rows: usize,
    /// Synthetic rows among them.
    pub synthetic_rows: usize,
    /// λ chosen by cross-validation on the pool.
    pub lambda: f64,
    /// Accuracy on the own test rows.
    pub accuracy: f64,
    /// Per node.
    pub nodes: Vec<SyntheticNode>,
}

/// Synthetic rows in raw units with their labels (true = positive).
type RawRows = Vec<(Vec<f64>, bool)>;

/// A release fetched from one node.
struct Got {
    organisation_id: String,
    certified: Option<String>,
    fingerprint: String,
    release: pb::DataRelease,
}

async fn attempt(
    url: &str,
    client: &Client,
    net: Network,
    request: &SyntheticRequest,
    attempts: u32,
    described_as: &std::sync::Mutex<Option<String>>,
) -> Result<Got, Failure> {
    let (channel, certified) = connect(url, client, net, attempts).await?;
    let mut node = OrganisationNodeClient::new(channel).max_decoding_message_size(MAX_DATA_REPLY);
    let described =
        describe_checked(&mut node, certified.as_deref(), attempts, described_as).await?;
    let spec = pb::DataSpec::from(&request.spec);
    let got = node
        .get_data(pb::GetDataRequest {
            selector: Some(pb::get_data_request::Selector::Spec(spec.clone())),
        })
        .await;
    let release = match got {
        Ok(r) => r.into_inner(),
        Err(s) if s.code() == Code::NotFound && request.publish => node
            .publish_data(pb::PublishDataRequest { spec: Some(spec) })
            .await
            .map_err(|s| from_status(&s, attempts))?
            .into_inner(),
        Err(s) => return Err(from_status(&s, attempts)),
    };
    Ok(Got {
        organisation_id: described.organisation_id,
        certified,
        fingerprint: clean(&described.schema_fingerprint, 128),
        release,
    })
}

/// Fetches one node's release (with the learners' network settings).
async fn fetch(
    url: &str,
    request: &SyntheticRequest,
    net: Network,
    client: &Client,
) -> (Option<String>, Result<Got, Exclusion>) {
    let described = std::sync::Mutex::new(None);
    let result = retrying(url, net, |attempts| {
        attempt(url, client, net, request, attempts, &described)
    })
    .await;
    let id = described
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    (id, result)
}

/// Collects every node's synthetic rows, pools them with `train` and fits the pooled model.
#[allow(clippy::too_many_arguments)]
pub async fn train_on_synthetic(
    endpoints: &[String],
    request: &SyntheticRequest,
    net: Network,
    client: &Client,
    trust: &Trust,
    accept: &Acceptance,
    schema: &Schema,
    train: &Dataset,
    test: &Dataset,
    seed: u64,
) -> anyhow::Result<SyntheticView> {
    let fingerprint = schema.fingerprint();
    let mut nodes = Vec::with_capacity(endpoints.len());
    let mut pooled: RawRows = Vec::new();
    for url in endpoints {
        let (described, got) = fetch(url, request, net, client).await;
        let screened = got.map_err(|e| e.to_string()).and_then(|g| {
            screen(&g, request, schema, &fingerprint, accept, trust).map_err(|e| e.to_string())
        });
        match screened {
            Ok((rows, mut line)) => {
                line.endpoint = url.clone();
                pooled.extend(rows);
                nodes.push(line);
            }
            Err(why) => {
                tracing::warn!(endpoint = %url, reason = %why, "synthetic data excluded");
                nodes.push(SyntheticNode {
                    endpoint: url.clone(),
                    organisation_id: described,
                    status: "excluded",
                    release_id: None,
                    epsilon: None,
                    delta: None,
                    rows: 0,
                    signature: None,
                    release_body: None,
                    exclusion: Some(clean(&why, MAX_TEXT)),
                });
            }
        }
    }
    let synthetic_rows = pooled.len();
    if synthetic_rows == 0 {
        let reasons: Vec<String> = nodes
            .iter()
            .map(|n| {
                format!(
                    "{}: {}",
                    n.endpoint,
                    n.exclusion.as_deref().unwrap_or("no rows")
                )
            })
            .collect();
        anyhow::bail!(
            "train_on = \"synthetic\": no node gave synthetic rows ({}); a node publishes the \
             release asked for ({}) with `dpagg-node publish-data --kind mvn-synthetic-gaussian` \
             and that ε, δ and rows option, or set publish = true where nodes allow remote \
             publishing",
            reasons.join("; "),
            describe(&request.spec)
        );
    }
    let data = pool(train, schema, &pooled);
    let (model, lambda) = tuned_logistic(&data, 5, seed)?;
    Ok(SyntheticView {
        spec: describe(&request.spec),
        pooled_rows: data.len(),
        synthetic_rows,
        lambda,
        accuracy: model.accuracy(test),
        nodes,
    })
}

/// The own training rows followed by the synthetic rows, normalised by `schema`.
///
/// A synthetic value is a sample, never a missing one: a value that the release clipped to a
/// bound equal to a feature's `missing` sentinel (Diabetes declares 0 = missing with lo = 0)
/// must be normalised as that bound, not replaced by the centre, so the sentinels are dropped
/// from the schema used for the synthetic rows.
pub fn pool(train: &Dataset, schema: &Schema, synthetic: &[(Vec<f64>, bool)]) -> Dataset {
    let mut schema = schema.clone();
    for f in &mut schema.features {
        f.missing = None;
    }
    let dim = schema.dim();
    let mut x = Vec::with_capacity((train.len() + synthetic.len()) * dim);
    let mut y = Vec::with_capacity(train.len() + synthetic.len());
    for i in 0..train.len() {
        x.extend_from_slice(train.row(i));
        y.push(train.label(i));
    }
    let mut out = vec![0.0; dim];
    for (raw, positive) in synthetic {
        schema.normalise_row(raw, &mut out);
        x.extend_from_slice(&out);
        y.push(if *positive { 1.0 } else { -1.0 });
    }
    Dataset::new(x, y, dim)
}

/// The spec in words.
pub fn describe(spec: &DataSpec) -> String {
    let options: Vec<String> = spec
        .kind
        .options()
        .iter()
        .map(|o| format!("{} = {}", o.name, spec.option(o.name)))
        .collect();
    format!(
        "{} (ε = {}, δ = {}; {})",
        spec.kind,
        spec.epsilon,
        spec.delta,
        options.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::data::bundled::Bundled;

    #[test]
    fn a_synthetic_value_at_the_missing_sentinel_is_the_bound_not_the_centre() {
        let schema = Bundled::Diabetes.schema();
        let glucose = schema
            .features
            .iter()
            .position(|f| f.name == "glucose")
            .expect("diabetes declares glucose");
        assert!(schema.features[glucose].is_missing(0.0));
        let mut row: Vec<f64> = schema.features.iter().map(|f| f.raw_of_center()).collect();
        let empty = Dataset::new(Vec::new(), Vec::new(), schema.dim());
        let at_centre = pool(&empty, &schema, &[(row.clone(), true)]);
        row[glucose] = 0.0;
        let at_zero = pool(&empty, &schema, &[(row.clone(), true)]);
        let mut own = vec![0.0; schema.dim()];
        schema.normalise_row(&row, &mut own);
        assert_eq!(own, at_centre.row(0), "the own map reads 0 as missing");
        assert_ne!(
            at_zero.row(0),
            at_centre.row(0),
            "a synthetic 0 is glucose 0"
        );
        assert!(at_zero.row(0)[glucose] < 0.0);
    }
}
