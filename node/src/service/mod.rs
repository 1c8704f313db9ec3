//! The `dpagg.v1.OrganisationNode` gRPC service over a [`Node`].
//!
//! Every RPC first identifies the caller and checks it against the access policy
//! ([`crate::access`]); every release is served signed by the organisation's key when the node
//! has one (always, with TLS), deterministically, so the same release is the same bytes on every
//! request.
//!
//! Blocking work (SQLite, training) runs on Tokio's blocking pool. Errors become typed statuses;
//! a status never carries a number computed from the data: mechanism and store failures whose
//! messages could (a row norm, a gradient norm) are logged locally and sent as `INTERNAL`.
//!
//! The concerns every RPC shares are each written once. Metrics (status code and latency per
//! RPC) are a tower layer around the whole server, [`crate::timing`], which reads the code the
//! client reads. Admission is [`NodeService::call`], the one entry every handler goes through:
//! it identifies the caller, refuses publishing when `policy.allow_remote_publish` is off, asks
//! the [`Gate`], and hands the admitted [`Caller`] to the handler. It stays in the service rather
//! than in a layer because the audit line needs that caller, and a layer would pass it through
//! untyped request extensions — and a service served without the layer would admit everyone.
//! The audit line stays with the handlers too, written by one helper per kind of RPC
//! ([`Gate::audit_read`], [`Gate::audit_write`]), because what it records — the selector asked
//! for, the release ids answered — is known only inside the handler. Learners and data
//! releases share one path ([`served::Served`]): listing, getting and publishing are each
//! written once.

mod served;

use crate::access::{Caller, Gate, Rpc};
use crate::node::{Node, budget_policy};
use crate::status::internal;
pub use crate::status::publish_status;
use crate::store::PageKey;
use dpagg_proto::convert::{self, WireError};
use dpagg_proto::signature::SigningKey;
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_server::OrganisationNode;
use dpagg_shared::privacy::data_release::DataSpec;
use dpagg_shared::privacy::mechanism::{LearnerSpec, MechanismKind};
use served::{DataReleases, Learners, Served};
use std::future::Future;
use std::sync::Arc;
use tonic::{Request, Response, Status};

/// Releases per `ListLearners` answer when the client does not say.
pub const DEFAULT_PAGE: usize = 100;
/// Most releases per `ListLearners` answer (a release of a small schema is about 1 KB).
pub const MAX_PAGE: usize = 1000;

/// The service implementation.
#[derive(Debug, Clone)]
pub struct NodeService {
    node: Arc<Node>,
    gate: Arc<Gate>,
    signer: Option<Arc<SigningKey>>,
}

impl NodeService {
    /// Serves `node` to the callers `gate` admits, signing releases with `signer`.
    pub fn new(node: Arc<Node>, gate: Gate, signer: Option<Arc<SigningKey>>) -> Self {
        Self {
            node,
            gate: Arc::new(gate),
            signer,
        }
    }

    /// Runs `rpc` for the caller of `request` if it is admitted: `work` gets the caller and the
    /// request's message. Every RPC goes through here.
    async fn call<T, R, F, W>(
        &self,
        rpc: Rpc,
        request: Request<T>,
        work: W,
    ) -> Result<Response<R>, Status>
    where
        W: FnOnce(Caller, T) -> F,
        F: Future<Output = Result<R, Status>>,
    {
        let caller = self.admit(&request, rpc)?;
        work(caller, request.into_inner()).await.map(Response::new)
    }

    /// The caller of `request`, if the access policy lets it call `rpc`. A write on a node that
    /// accepts no remote publishing is refused (and audited) before the allow-lists are asked.
    fn admit<T>(&self, request: &Request<T>, rpc: Rpc) -> Result<Caller, Status> {
        let caller = Caller::of(request)?;
        if rpc.writes() && !self.node.policy.allow_remote_publish {
            let refused = Status::permission_denied(
                "this node does not accept remote publishing (policy.allow_remote_publish = false)",
            );
            self.gate.audit_write(&caller, rpc, Err(&refused));
            return Err(refused);
        }
        self.gate.admit(&caller, rpc)?;
        Ok(caller)
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

    /// What the node offers and what is left of its budget, audited.
    async fn describe_for(&self, caller: &Caller) -> Result<pb::DescribeResponse, Status> {
        let response = self
            .blocking(|node| {
                let b = node
                    .budget()
                    .map_err(|e| internal("cannot read the ledger", &e))?;
                Ok(pb::DescribeResponse {
                    organisation_id: node.organisation_id.clone(),
                    schema_toml: node.schema_toml.clone(),
                    schema_fingerprint: node.fingerprint.clone(),
                    mechanism_proofs: node
                        .mechanisms()
                        .iter()
                        .filter_map(|m| MechanismKind::from_name(m))
                        .map(|k| (k.name().to_owned(), k.proof().name().to_owned()))
                        .collect(),
                    mechanisms: node.mechanisms(),
                    budget: Some(convert::budget(
                        &budget_policy(&b.policy),
                        &b.spent,
                        b.policy.allow_unproven,
                    )),
                    remote_publish_allowed: node.policy.allow_remote_publish,
                    data_kinds: node.data_kinds(),
                })
            })
            .await;
        self.gate.audit_read(
            caller,
            Rpc::Describe,
            "",
            response.as_ref().map(|_| &[][..]),
        );
        response
    }
}

/// The domain spec of a request's `spec` field; an unknown mechanism lists what this node offers.
fn spec_from(spec: Option<pb::LearnerSpec>, node: &Node) -> Result<LearnerSpec, Status> {
    let s = spec.ok_or_else(|| Status::invalid_argument("`spec` is required"))?;
    LearnerSpec::try_from(s).map_err(|e| match e {
        WireError::UnknownMechanism(_) => {
            Status::invalid_argument(format!("{e} (available: {})", node.mechanisms().join(", ")))
        }
        _ => Status::invalid_argument(e.to_string()),
    })
}

/// The domain spec of a data request's `spec` field.
fn data_spec_from(spec: Option<pb::DataSpec>, node: &Node) -> Result<DataSpec, Status> {
    let s = spec.ok_or_else(|| Status::invalid_argument("`spec` is required"))?;
    DataSpec::try_from(s).map_err(|e| {
        Status::invalid_argument(format!("{e} (available: {})", node.data_kinds().join(", ")))
    })
}

/// A page size of a list request (0: the default).
fn page_size(n: u32) -> Result<usize, Status> {
    match n {
        0 => Ok(DEFAULT_PAGE),
        n if n as usize > MAX_PAGE => Err(Status::invalid_argument(format!(
            "`page_size` = {n}: at most {MAX_PAGE}"
        ))),
        n => Ok(n as usize),
    }
}

/// The page key of a list request's token.
fn page_after(token: &str) -> Result<Option<PageKey>, Status> {
    match token {
        "" => Ok(None),
        token => PageKey::parse(token)
            .map(Some)
            .ok_or_else(|| Status::invalid_argument("`page_token` is not a token this node gave")),
    }
}

#[tonic::async_trait]
impl OrganisationNode for NodeService {
    async fn describe(
        &self,
        request: Request<pb::DescribeRequest>,
    ) -> Result<Response<pb::DescribeResponse>, Status> {
        self.call(Rpc::Describe, request, |caller, _| async move {
            self.describe_for(&caller).await
        })
        .await
    }

    async fn list_learners(
        &self,
        request: Request<pb::ListLearnersRequest>,
    ) -> Result<Response<pb::ListLearnersResponse>, Status> {
        self.call(Learners::LIST, request, |caller, r| async move {
            let (learners, next_page_token) = self
                .list::<Learners>(&caller, r.page_size, &r.page_token)
                .await?;
            Ok(pb::ListLearnersResponse {
                learners,
                next_page_token,
            })
        })
        .await
    }

    async fn get_learner(
        &self,
        request: Request<pb::GetLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        self.call(Learners::GET, request, |caller, r| async move {
            self.get::<Learners>(&caller, r.selector).await
        })
        .await
    }

    async fn publish_learner(
        &self,
        request: Request<pb::PublishLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        self.call(Learners::PUBLISH, request, |caller, r| async move {
            self.publish::<Learners>(&caller, r.spec).await
        })
        .await
    }

    async fn publish_data(
        &self,
        request: Request<pb::PublishDataRequest>,
    ) -> Result<Response<pb::DataRelease>, Status> {
        self.call(DataReleases::PUBLISH, request, |caller, r| async move {
            self.publish::<DataReleases>(&caller, r.spec).await
        })
        .await
    }

    async fn get_data(
        &self,
        request: Request<pb::GetDataRequest>,
    ) -> Result<Response<pb::DataRelease>, Status> {
        self.call(DataReleases::GET, request, |caller, r| async move {
            self.get::<DataReleases>(&caller, r.selector).await
        })
        .await
    }

    async fn list_data(
        &self,
        request: Request<pb::ListDataRequest>,
    ) -> Result<Response<pb::ListDataResponse>, Status> {
        self.call(DataReleases::LIST, request, |caller, r| async move {
            let (releases, next_page_token) = self
                .list::<DataReleases>(&caller, r.page_size, &r.page_token)
                .await?;
            Ok(pb::ListDataResponse {
                releases,
                next_page_token,
            })
        })
        .await
    }
}
