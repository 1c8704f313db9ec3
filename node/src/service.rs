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
//! Status codes and latencies are recorded by [`crate::timing`], a layer around the server.

use crate::access::{Caller, Gate, Rpc};
use crate::node::{Node, budget_policy};
use crate::status::internal;
pub use crate::status::publish_status;
use crate::store::{PageKey, StoredData, data_key};
use dpagg_proto::convert::{self, WireError};
use dpagg_proto::data as wire_data;
use dpagg_proto::signature::SigningKey;
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_server::OrganisationNode;
use dpagg_shared::privacy::data_release::DataSpec;
use dpagg_shared::privacy::mechanism::{LearnerSpec, MechanismKind};
use dpagg_shared::privacy::release::PublishedLearner;
use dpagg_shared::util::text::{MAX_TEXT, clean};
use prost::Message;
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

    /// The caller of `request`, if the access policy lets it call `rpc`.
    fn admit<T>(&self, request: &Request<T>, rpc: Rpc) -> Result<Caller, Status> {
        let caller = Caller::of(request)?;
        self.gate.admit(&caller, rpc)?;
        Ok(caller)
    }

    /// A stored release as served: converted and signed.
    fn served(&self, release: &PublishedLearner) -> Result<pb::PrivateLearner, Status> {
        let mut learner = pb::PrivateLearner::from(release);
        if let Some(key) = &self.signer {
            learner.signature = Some(
                key.sign(&self.node.organisation_id, &learner)
                    .map_err(|e| internal("cannot sign the release", &e))?,
            );
        }
        Ok(learner)
    }

    /// A stored data release as served: its body as stored, signed.
    fn served_data(&self, stored: &StoredData) -> pb::DataRelease {
        pb::DataRelease {
            signature: self
                .signer
                .as_ref()
                .map(|key| wire_data::sign(key, &self.node.organisation_id, &stored.body)),
            body: stored.body.clone(),
        }
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

/// A body without its payload (what `ListData` returns).
fn summary(stored: &StoredData) -> Result<pb::DataReleaseBody, Status> {
    let mut body = pb::DataReleaseBody::decode(stored.body.as_slice()).map_err(|e| {
        internal(
            &format!("stored data release {} is corrupt", stored.release_id),
            &e,
        )
    })?;
    body.payload = None;
    Ok(body)
}

impl NodeService {
    async fn describe_inner(
        &self,
        request: Request<pb::DescribeRequest>,
    ) -> Result<Response<pb::DescribeResponse>, Status> {
        let caller = self.admit(&request, Rpc::Describe)?;
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
            &caller,
            Rpc::Describe,
            "",
            response.as_ref().map(|_| &[][..]),
        );
        Ok(Response::new(response?))
    }

    async fn list_learners_inner(
        &self,
        request: Request<pb::ListLearnersRequest>,
    ) -> Result<Response<pb::ListLearnersResponse>, Status> {
        let caller = self.admit(&request, Rpc::ListLearners)?;
        let r = request.into_inner();
        let asked = format!("page_token={:?}", clean(&r.page_token, MAX_TEXT));
        let size = page_size(r.page_size)?;
        let after = page_after(&r.page_token)?;
        let page = self
            .blocking(move |node| {
                node.store
                    .page(after, size)
                    .map_err(|e| internal("cannot read releases", &e))
            })
            .await;
        let ids: Result<Vec<String>, &Status> = page
            .as_ref()
            .map(|(l, _)| l.iter().map(|r| r.release_id.clone()).collect());
        self.gate.audit_read(
            &caller,
            Rpc::ListLearners,
            &asked,
            ids.as_deref().map_err(|e| *e),
        );
        let (learners, next) = page?;
        Ok(Response::new(pb::ListLearnersResponse {
            learners: learners
                .iter()
                .map(|r| self.served(r))
                .collect::<Result<_, _>>()?,
            next_page_token: next.map(|k| k.token()).unwrap_or_default(),
        }))
    }

    async fn get_learner_inner(
        &self,
        request: Request<pb::GetLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        use pb::get_learner_request::Selector;
        let caller = self.admit(&request, Rpc::GetLearner)?;
        let selector = request
            .into_inner()
            .selector
            .ok_or_else(|| Status::invalid_argument("give `release_id`, `spec` or `latest`"))?;
        let asked = match &selector {
            Selector::ReleaseId(id) => format!("release_id={:?}", clean(id, MAX_TEXT)),
            Selector::Spec(spec) => LearnerSpec::try_from(spec.clone()).map_or_else(
                |_| "spec=(invalid)".to_owned(),
                |s| format!("spec={}", s.describe()),
            ),
            Selector::Latest(latest) => format!("latest={latest}"),
        };
        let found = self
            .blocking(move |node| {
                let read = |e| internal("cannot read releases", &e);
                match selector {
                    Selector::ReleaseId(id) => node.store.get(&id).map_err(read),
                    Selector::Spec(spec) => {
                        let spec = spec_from(Some(spec), node)?;
                        let fingerprint = node
                            .fingerprint_for(&spec)
                            .map_err(|e| Status::invalid_argument(e.to_string()))?;
                        node.store.for_spec(&spec, &fingerprint).map_err(read)
                    }
                    Selector::Latest(false) => Err(Status::invalid_argument(
                        "`latest = false` selects no release: give `release_id`, `spec` or `latest = true`",
                    )),
                    Selector::Latest(true) => node.store.latest().map_err(read),
                }
            })
            .await
            .and_then(|found| {
            found.ok_or_else(|| {
                Status::not_found(
                    "no such release: publish it first (`dpagg-node publish`, or ask with \
                     publish = true if this node allows remote publishing), or ask for the \
                     latest release (latest = true)",
                )
            })
        });
        self.gate.audit_read(
            &caller,
            Rpc::GetLearner,
            &asked,
            found.as_ref().map(|r| std::slice::from_ref(&r.release_id)),
        );
        Ok(Response::new(self.served(&found?)?))
    }

    async fn publish_learner_inner(
        &self,
        request: Request<pb::PublishLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        let caller = Caller::of(&request)?;
        if !self.node.policy.allow_remote_publish {
            let refused = Status::permission_denied(
                "this node does not accept remote publishing (policy.allow_remote_publish = false)",
            );
            self.gate.audit_publish(&caller, Err(&refused));
            return Err(refused);
        }
        self.gate.admit(&caller, Rpc::PublishLearner)?;
        let published = async {
            let spec = spec_from(request.into_inner().spec, &self.node)?;
            self.blocking(move |node| node.publish(&spec).map_err(|e| publish_status(&e)))
                .await
        }
        .await;
        self.gate.audit_publish(
            &caller,
            published
                .as_ref()
                .map(|(r, new)| (r.release_id.as_str(), *new)),
        );
        let (release, _) = published?;
        Ok(Response::new(self.served(&release)?))
    }

    async fn publish_data_inner(
        &self,
        request: Request<pb::PublishDataRequest>,
    ) -> Result<Response<pb::DataRelease>, Status> {
        let caller = Caller::of(&request)?;
        if !self.node.policy.allow_remote_publish {
            let refused = Status::permission_denied(
                "this node does not accept remote publishing (policy.allow_remote_publish = false)",
            );
            self.gate
                .audit_write(&caller, Rpc::PublishData, Err(&refused));
            return Err(refused);
        }
        self.gate.admit(&caller, Rpc::PublishData)?;
        let published = async {
            let spec = data_spec_from(request.into_inner().spec, &self.node)?;
            self.blocking(move |node| node.publish_data(&spec).map_err(|e| publish_status(&e)))
                .await
        }
        .await;
        self.gate.audit_write(
            &caller,
            Rpc::PublishData,
            published
                .as_ref()
                .map(|(r, new)| (r.release_id.as_str(), *new)),
        );
        let (stored, _) = published?;
        Ok(Response::new(self.served_data(&stored)))
    }

    async fn get_data_inner(
        &self,
        request: Request<pb::GetDataRequest>,
    ) -> Result<Response<pb::DataRelease>, Status> {
        use pb::get_data_request::Selector;
        let caller = self.admit(&request, Rpc::GetData)?;
        let selector = request
            .into_inner()
            .selector
            .ok_or_else(|| Status::invalid_argument("give `release_id` or `spec`"))?;
        let asked = match &selector {
            Selector::ReleaseId(id) => format!("release_id={:?}", clean(id, MAX_TEXT)),
            Selector::Spec(spec) => DataSpec::try_from(spec.clone()).map_or_else(
                |_| "spec=(invalid)".to_owned(),
                |s| format!("spec={}", s.key()),
            ),
        };
        let found = self
            .blocking(move |node| {
                let read = |e| internal("cannot read data releases", &e);
                match selector {
                    Selector::ReleaseId(id) => node.store.get_data(&id).map_err(read),
                    Selector::Spec(spec) => {
                        let spec = data_spec_from(Some(spec), node)?;
                        node.store
                            .data_for_key(&data_key(&spec, &node.fingerprint))
                            .map_err(read)
                    }
                }
            })
            .await
            .and_then(|found| {
                found.ok_or_else(|| {
                    Status::not_found(
                        "no such data release: publish it first (`dpagg-node publish-data`, or \
                         PublishData if this node allows remote publishing)",
                    )
                })
            });
        self.gate.audit_read(
            &caller,
            Rpc::GetData,
            &asked,
            found.as_ref().map(|r| std::slice::from_ref(&r.release_id)),
        );
        Ok(Response::new(self.served_data(&found?)))
    }

    async fn list_data_inner(
        &self,
        request: Request<pb::ListDataRequest>,
    ) -> Result<Response<pb::ListDataResponse>, Status> {
        let caller = self.admit(&request, Rpc::ListData)?;
        let r = request.into_inner();
        let asked = format!("page_token={:?}", clean(&r.page_token, MAX_TEXT));
        let size = page_size(r.page_size)?;
        let after = page_after(&r.page_token)?;
        let page = self
            .blocking(move |node| {
                node.store
                    .data_page(after, size)
                    .map_err(|e| internal("cannot read data releases", &e))
            })
            .await;
        let ids: Result<Vec<String>, &Status> = page
            .as_ref()
            .map(|(l, _)| l.iter().map(|r| r.release_id.clone()).collect());
        self.gate.audit_read(
            &caller,
            Rpc::ListData,
            &asked,
            ids.as_deref().map_err(|e| *e),
        );
        let (releases, next) = page?;
        Ok(Response::new(pb::ListDataResponse {
            releases: releases.iter().map(summary).collect::<Result<_, _>>()?,
            next_page_token: next.map(|k| k.token()).unwrap_or_default(),
        }))
    }
}

#[tonic::async_trait]
impl OrganisationNode for NodeService {
    async fn describe(
        &self,
        request: Request<pb::DescribeRequest>,
    ) -> Result<Response<pb::DescribeResponse>, Status> {
        self.describe_inner(request).await
    }

    async fn list_learners(
        &self,
        request: Request<pb::ListLearnersRequest>,
    ) -> Result<Response<pb::ListLearnersResponse>, Status> {
        self.list_learners_inner(request).await
    }

    async fn get_learner(
        &self,
        request: Request<pb::GetLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        self.get_learner_inner(request).await
    }

    async fn publish_learner(
        &self,
        request: Request<pb::PublishLearnerRequest>,
    ) -> Result<Response<pb::PrivateLearner>, Status> {
        self.publish_learner_inner(request).await
    }

    async fn publish_data(
        &self,
        request: Request<pb::PublishDataRequest>,
    ) -> Result<Response<pb::DataRelease>, Status> {
        self.publish_data_inner(request).await
    }

    async fn get_data(
        &self,
        request: Request<pb::GetDataRequest>,
    ) -> Result<Response<pb::DataRelease>, Status> {
        self.get_data_inner(request).await
    }

    async fn list_data(
        &self,
        request: Request<pb::ListDataRequest>,
    ) -> Result<Response<pb::ListDataResponse>, Status> {
        self.list_data_inner(request).await
    }
}
