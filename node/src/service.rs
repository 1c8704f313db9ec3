//! The `dpagg.v1.OrganisationNode` gRPC service over a [`Node`].
//!
//! Blocking work (SQLite, training) runs on Tokio's blocking pool. Errors become typed statuses;
//! a status never carries a number computed from the data: mechanism and store failures whose
//! messages could (a row norm, a gradient norm) are logged locally and sent as `INTERNAL`.

use crate::node::Node;
use crate::store::{PublishError, Spec, StoredRelease};
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_server::OrganisationNode;
use dpagg_shared::accounting::ledger::RelationSpend;
use dpagg_shared::mechanism::{GibbsError, MechanismError, MechanismKind, NeighbourRelation};
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// The service implementation.
#[derive(Debug, Clone)]
pub struct NodeService {
    node: Arc<Node>,
}

impl NodeService {
    /// Serves `node`.
    pub fn new(node: Arc<Node>) -> Self {
        Self { node }
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Node) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let node = self.node.clone();
        tokio::task::spawn_blocking(move || f(&node))
            .await
            .map_err(|e| Status::internal(format!("worker failed: {e}")))?
    }
}

fn internal(context: &str, e: &dyn std::fmt::Display) -> Status {
    tracing::error!(error = %e, "{context}");
    Status::internal(format!("{context}; see the node's log"))
}

/// Maps a publish failure to a typed status without data-derived numbers.
pub fn publish_status(e: &PublishError) -> Status {
    match e {
        PublishError::Exhausted { .. } => Status::resource_exhausted(e.to_string()),
        PublishError::OverCap { .. } => Status::failed_precondition(e.to_string()),
        PublishError::Unproven(_) => Status::failed_precondition(e.to_string()),
        PublishError::UnknownMechanism(_) => {
            Status::invalid_argument(format!("{e} (available: {})", MechanismKind::names()))
        }
        PublishError::Mechanism(
            MechanismError::InvalidParameter { .. }
            | MechanismError::UnknownOption { .. }
            | MechanismError::Accounting(_),
        ) => Status::invalid_argument(e.to_string()),
        // The step counts these name follow from n and d, which every release publishes.
        PublishError::Mechanism(
            MechanismError::TooManyIterations { .. }
            | MechanismError::Gibbs(
                GibbsError::TooManySteps { .. } | GibbsError::DimensionTooSmall { .. },
            ),
        ) => Status::failed_precondition(e.to_string()),
        PublishError::Mechanism(_) => internal("the node could not train this learner", e),
        PublishError::Store(_) => internal("the node's store failed; nothing was released", e),
    }
}

fn spec_from(spec: Option<pb::LearnerSpec>) -> Result<Spec, Status> {
    let s = spec.ok_or_else(|| Status::invalid_argument("`spec` is required"))?;
    Ok(Spec {
        mechanism: s.mechanism,
        epsilon: s.epsilon,
        delta: s.delta,
        lambda: s.lambda,
        options: s.options.into_iter().collect(),
    })
}

fn relation_spend(r: &RelationSpend) -> pb::RelationSpend {
    pb::RelationSpend {
        epsilon: r.epsilon,
        delta: r.delta,
        basic_epsilon: r.basic_epsilon,
        accounting: r.accounting.to_string(),
        releases: r.charges as u32,
    }
}

/// The wire form of a stored release.
pub fn to_proto(r: &StoredRelease) -> pb::PrivateLearner {
    let m = &r.metadata;
    let relation = match m.guarantee.relation {
        NeighbourRelation::ReplaceOne => pb::NeighbourRelation::ReplaceOne,
        NeighbourRelation::AddRemoveOne => pb::NeighbourRelation::AddRemoveOne,
    };
    pb::PrivateLearner {
        weights: r.theta.clone(),
        metadata: Some(pb::ReleaseMetadata {
            release_id: r.release_id.clone(),
            created_unix_ms: r.created_unix_ms,
            created_at: crate::store::rfc3339(r.created_unix_ms),
            mechanism: m.mechanism.clone(),
            reference: m.reference.clone(),
            parameters: m.parameters.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            epsilon: m.guarantee.epsilon,
            delta: m.guarantee.delta,
            neighbour_relation: relation as i32,
            max_row_norm: m.assumptions.max_row_norm,
            loss_gradient_bound: m.assumptions.loss_gradient_bound,
            loss_hessian_bound: m.assumptions.loss_hessian_bound,
            schema_fingerprint: r.schema_fingerprint.clone(),
            seeded: m.seeded,
            n: m.n as u64,
            dim: m.dim as u32,
            spec: Some(pb::LearnerSpec {
                mechanism: r.spec.mechanism.clone(),
                epsilon: r.spec.epsilon,
                delta: r.spec.delta,
                lambda: r.spec.lambda,
                options: r
                    .spec
                    .options
                    .iter()
                    .map(|(k, v)| (k.clone(), *v))
                    .collect(),
            }),
        }),
    }
}

#[tonic::async_trait]
impl OrganisationNode for NodeService {
    async fn describe(
        &self,
        _: Request<pb::DescribeRequest>,
    ) -> Result<Response<pb::DescribeResponse>, Status> {
        let response = self
            .blocking(|node| {
                let b = node
                    .budget()
                    .map_err(|e| internal("cannot read the ledger", &e))?;
                Ok(pb::DescribeResponse {
                    organisation_id: node.organisation_id.clone(),
                    schema_toml: node.schema_toml.clone(),
                    schema_fingerprint: node.fingerprint.clone(),
                    mechanisms: node.mechanisms(),
                    budget: Some(pb::Budget {
                        epsilon_total: b.policy.epsilon_total,
                        delta_total: b.policy.delta_total,
                        epsilon_spent: b.spent.epsilon,
                        delta_spent: b.spent.delta,
                        epsilon_remaining: b.epsilon_remaining(),
                        delta_remaining: b.delta_remaining(),
                        max_epsilon_per_release: b.policy.cap(),
                        replace_one: Some(relation_spend(&b.spent.replace_one)),
                        add_remove_one: Some(relation_spend(&b.spent.add_remove_one)),
                        unproven_allowed: b.policy.allow_unproven,
                    }),
                    remote_publish_allowed: node.policy.allow_remote_publish,
                })
            })
            .await?;
        Ok(Response::new(response))
    }

    async fn list_learners(
        &self,
        _: Request<pb::ListLearnersRequest>,
    ) -> Result<Response<pb::ListLearnersResponse>, Status> {
        let learners = self
            .blocking(|node| {
                node.store
                    .releases()
                    .map_err(|e| internal("cannot read releases", &e))
            })
            .await?;
        Ok(Response::new(pb::ListLearnersResponse {
            learners: learners.iter().map(to_proto).collect(),
        }))
    }

    async fn get_learner(
        &self,
        request: Request<pb::GetLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        use pb::get_learner_request::Selector;
        let selector = request
            .into_inner()
            .selector
            .ok_or_else(|| Status::invalid_argument("give `release_id`, `spec` or `latest`"))?;
        let found = self
            .blocking(move |node| {
                let read = |e| internal("cannot read releases", &e);
                match selector {
                    Selector::ReleaseId(id) => node.store.get(&id).map_err(read),
                    Selector::Spec(spec) => node
                        .store
                        .for_spec(&spec_from(Some(spec))?, &node.fingerprint)
                        .map_err(read),
                    Selector::Latest(_) => node
                        .store
                        .releases()
                        .map(|mut v| (!v.is_empty()).then(|| v.swap_remove(0)))
                        .map_err(read),
                }
            })
            .await?;
        found
            .map(|r| Response::new(to_proto(&r)))
            .ok_or_else(|| Status::not_found("no such release"))
    }

    async fn publish_learner(
        &self,
        request: Request<pb::PublishLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        if !self.node.policy.allow_remote_publish {
            return Err(Status::permission_denied(
                "this node does not accept remote publishing (policy.allow_remote_publish = false)",
            ));
        }
        let spec = spec_from(request.into_inner().spec)?;
        let (release, _) = self
            .blocking(move |node| node.publish(&spec).map_err(|e| publish_status(&e)))
            .await?;
        Ok(Response::new(to_proto(&release)))
    }
}
