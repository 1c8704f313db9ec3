//! The two kinds of release the node serves, learners and data releases, behind one trait
//! ([`Served`]), so that listing, getting and publishing are each written once
//! ([`NodeService::list`], [`NodeService::get`], [`NodeService::publish`]) and every kind gets
//! the same page checks, the same audit line and the same signing.

use super::{NodeService, data_spec_from, spec_from};
use crate::access::{Caller, Rpc};
use crate::node::Node;
use crate::status::{internal, publish_status};
use crate::store::{PageKey, PublishError, StoreError, StoredData, data_key};
use dpagg_proto::v1 as pb;
use dpagg_shared::privacy::data_release::DataSpec;
use dpagg_shared::privacy::mechanism::LearnerSpec;
use dpagg_shared::privacy::release::PublishedLearner;
use dpagg_shared::util::text::{MAX_TEXT, clean};
use prost::Message;
use tonic::Status;

/// A kind of release as the service stores, finds, publishes and serves it.
pub(super) trait Served: 'static {
    /// A release as stored.
    type Stored: Send + 'static;
    /// A release as `Get` and `Publish` answer it.
    type Wire;
    /// A release as `List` answers it.
    type Listed;
    /// What a `Get` request selects by.
    type Selector: Send + 'static;
    /// What a `Publish` request asks for, on the wire.
    type WireSpec;
    /// What a `Publish` request asks for.
    type Spec: Send + 'static;

    /// The RPCs that list, get and publish this kind: the handlers admit their calls as these,
    /// and the audit lines name them, so each is written once.
    const LIST: Rpc;
    /// See [`Self::LIST`].
    const GET: Rpc;
    /// See [`Self::LIST`].
    const PUBLISH: Rpc;
    /// What a failed read of the store says.
    const READ_FAILED: &'static str;
    /// What a `Get` without a selector says.
    const NO_SELECTOR: &'static str;
    /// What a `Get` that found nothing says.
    const NOT_FOUND: &'static str;

    /// The release's id.
    fn release_id(stored: &Self::Stored) -> &String;
    /// One page of releases, newest first, and the key of the next.
    fn page(
        node: &Node,
        after: Option<PageKey>,
        size: usize,
    ) -> Result<(Vec<Self::Stored>, Option<PageKey>), StoreError>;
    /// What `selector` asks for, for the audit line.
    fn asked(selector: &Self::Selector) -> String;
    /// The release `selector` selects, if there is one.
    fn find(node: &Node, selector: Self::Selector) -> Result<Option<Self::Stored>, Status>;
    /// The domain spec of a publish request.
    fn spec(spec: Option<Self::WireSpec>, node: &Node) -> Result<Self::Spec, Status>;
    /// Publishes `spec` (or finds it published): the release and whether it is new.
    fn publish(node: &Node, spec: &Self::Spec) -> Result<(Self::Stored, bool), PublishError>;
    /// The release as served, signed.
    fn serve(service: &NodeService, stored: &Self::Stored) -> Result<Self::Wire, Status>;
    /// The release as a list shows it.
    fn listed(service: &NodeService, stored: &Self::Stored) -> Result<Self::Listed, Status>;
}

/// Private learners.
pub(super) struct Learners;

impl Served for Learners {
    type Stored = PublishedLearner;
    type Wire = pb::PrivateLearner;
    type Listed = pb::PrivateLearner;
    type Selector = pb::get_learner_request::Selector;
    type WireSpec = pb::LearnerSpec;
    type Spec = LearnerSpec;

    const LIST: Rpc = Rpc::ListLearners;
    const GET: Rpc = Rpc::GetLearner;
    const PUBLISH: Rpc = Rpc::PublishLearner;
    const READ_FAILED: &'static str = "cannot read releases";
    const NO_SELECTOR: &'static str = "give `release_id`, `spec` or `latest`";
    const NOT_FOUND: &'static str = "no such release: publish it first (`dpagg-node publish`, or ask with \
         publish = true if this node allows remote publishing), or ask for the \
         latest release (latest = true)";

    fn release_id(stored: &PublishedLearner) -> &String {
        &stored.release_id
    }

    fn page(
        node: &Node,
        after: Option<PageKey>,
        size: usize,
    ) -> Result<(Vec<PublishedLearner>, Option<PageKey>), StoreError> {
        node.store.page(after, size)
    }

    fn asked(selector: &Self::Selector) -> String {
        use pb::get_learner_request::Selector;
        match selector {
            Selector::ReleaseId(id) => format!("release_id={:?}", clean(id, MAX_TEXT)),
            Selector::Spec(spec) => LearnerSpec::try_from(spec.clone()).map_or_else(
                |_| "spec=(invalid)".to_owned(),
                |s| format!("spec={}", s.describe()),
            ),
            Selector::Latest(latest) => format!("latest={latest}"),
        }
    }

    fn find(node: &Node, selector: Self::Selector) -> Result<Option<PublishedLearner>, Status> {
        use pb::get_learner_request::Selector;
        let read = |e| internal(Self::READ_FAILED, &e);
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
    }

    fn spec(spec: Option<pb::LearnerSpec>, node: &Node) -> Result<LearnerSpec, Status> {
        spec_from(spec, node)
    }

    fn publish(node: &Node, spec: &LearnerSpec) -> Result<(PublishedLearner, bool), PublishError> {
        node.publish(spec)
    }

    fn serve(
        service: &NodeService,
        stored: &PublishedLearner,
    ) -> Result<pb::PrivateLearner, Status> {
        let mut learner = pb::PrivateLearner::from(stored);
        if let Some(key) = &service.signer {
            learner.signature = Some(
                key.sign(&service.node.organisation_id, &learner)
                    .map_err(|e| internal("cannot sign the release", &e))?,
            );
        }
        Ok(learner)
    }

    fn listed(
        service: &NodeService,
        stored: &PublishedLearner,
    ) -> Result<pb::PrivateLearner, Status> {
        Self::serve(service, stored)
    }
}

/// Data releases.
pub(super) struct DataReleases;

impl Served for DataReleases {
    type Stored = StoredData;
    type Wire = pb::DataRelease;
    type Listed = pb::DataReleaseBody;
    type Selector = pb::get_data_request::Selector;
    type WireSpec = pb::DataSpec;
    type Spec = DataSpec;

    const LIST: Rpc = Rpc::ListData;
    const GET: Rpc = Rpc::GetData;
    const PUBLISH: Rpc = Rpc::PublishData;
    const READ_FAILED: &'static str = "cannot read data releases";
    const NO_SELECTOR: &'static str = "give `release_id` or `spec`";
    const NOT_FOUND: &'static str = "no such data release: publish it first (`dpagg-node publish-data`, or \
         PublishData if this node allows remote publishing)";

    fn release_id(stored: &StoredData) -> &String {
        &stored.release_id
    }

    fn page(
        node: &Node,
        after: Option<PageKey>,
        size: usize,
    ) -> Result<(Vec<StoredData>, Option<PageKey>), StoreError> {
        node.store.data_page(after, size)
    }

    fn asked(selector: &Self::Selector) -> String {
        use pb::get_data_request::Selector;
        match selector {
            Selector::ReleaseId(id) => format!("release_id={:?}", clean(id, MAX_TEXT)),
            Selector::Spec(spec) => DataSpec::try_from(spec.clone()).map_or_else(
                |_| "spec=(invalid)".to_owned(),
                |s| format!("spec={}", s.key()),
            ),
        }
    }

    fn find(node: &Node, selector: Self::Selector) -> Result<Option<StoredData>, Status> {
        use pb::get_data_request::Selector;
        let read = |e| internal(Self::READ_FAILED, &e);
        match selector {
            Selector::ReleaseId(id) => node.store.get_data(&id).map_err(read),
            Selector::Spec(spec) => {
                let spec = data_spec_from(Some(spec), node)?;
                node.store
                    .data_for_key(&data_key(&spec, &node.fingerprint))
                    .map_err(read)
            }
        }
    }

    fn spec(spec: Option<pb::DataSpec>, node: &Node) -> Result<DataSpec, Status> {
        data_spec_from(spec, node)
    }

    fn publish(node: &Node, spec: &DataSpec) -> Result<(StoredData, bool), PublishError> {
        node.publish_data(spec)
    }

    fn serve(service: &NodeService, stored: &StoredData) -> Result<pb::DataRelease, Status> {
        Ok(pb::DataRelease {
            signature: service.signer.as_ref().map(|key| {
                dpagg_proto::data::sign(key, &service.node.organisation_id, &stored.body)
            }),
            body: stored.body.clone(),
        })
    }

    /// The body without its payload.
    fn listed(_: &NodeService, stored: &StoredData) -> Result<pb::DataReleaseBody, Status> {
        let mut body = pb::DataReleaseBody::decode(stored.body.as_slice()).map_err(|e| {
            internal(
                &format!("stored data release {} is corrupt", stored.release_id),
                &e,
            )
        })?;
        body.payload = None;
        Ok(body)
    }
}

impl NodeService {
    /// One page of `S` after `page_token` (`page_size` 0: the default), audited.
    pub(super) async fn list<S: Served>(
        &self,
        caller: &Caller,
        page_size: u32,
        page_token: &str,
    ) -> Result<(Vec<S::Listed>, String), Status> {
        let asked = format!("page_token={:?}", clean(page_token, MAX_TEXT));
        let size = super::page_size(page_size)?;
        let after = super::page_after(page_token)?;
        let page = self
            .blocking(move |node| {
                S::page(node, after, size).map_err(|e| internal(S::READ_FAILED, &e))
            })
            .await;
        let ids: Result<Vec<String>, &Status> = page
            .as_ref()
            .map(|(l, _)| l.iter().map(|r| S::release_id(r).clone()).collect());
        self.gate
            .audit_read(caller, S::LIST, &asked, ids.as_deref().map_err(|e| *e));
        let (releases, next) = page?;
        Ok((
            releases
                .iter()
                .map(|r| S::listed(self, r))
                .collect::<Result<_, _>>()?,
            next.map(|k| k.token()).unwrap_or_default(),
        ))
    }

    /// The release of `S` that `selector` selects, audited and served.
    pub(super) async fn get<S: Served>(
        &self,
        caller: &Caller,
        selector: Option<S::Selector>,
    ) -> Result<S::Wire, Status> {
        let selector = selector.ok_or_else(|| Status::invalid_argument(S::NO_SELECTOR))?;
        let asked = S::asked(&selector);
        let found = self
            .blocking(move |node| S::find(node, selector))
            .await
            .and_then(|found| found.ok_or_else(|| Status::not_found(S::NOT_FOUND)));
        self.gate.audit_read(
            caller,
            S::GET,
            &asked,
            found
                .as_ref()
                .map(|r| std::slice::from_ref(S::release_id(r))),
        );
        S::serve(self, &found?)
    }

    /// Publishes `spec` (or finds it published), audited and served.
    pub(super) async fn publish<S: Served>(
        &self,
        caller: &Caller,
        spec: Option<S::WireSpec>,
    ) -> Result<S::Wire, Status> {
        let published = async {
            let spec = S::spec(spec, &self.node)?;
            self.blocking(move |node| S::publish(node, &spec).map_err(|e| publish_status(&e)))
                .await
        }
        .await;
        self.gate.audit_write(
            caller,
            S::PUBLISH,
            published
                .as_ref()
                .map(|(r, new)| (S::release_id(r).as_str(), *new)),
        );
        let (stored, _) = published?;
        S::serve(self, &stored)
    }
}
