//! Tests of the timing layer over tonic's own generated server: a handler's error (sent
//! trailers-only) and a success (status in the trailers) are counted under the codes the client
//! reads; paths outside the contract are not counted; a body dropped early is `CANCELLED`.

use super::*;
use dpagg_proto::v1 as pb;
use dpagg_proto::v1::organisation_node_server::{OrganisationNode, OrganisationNodeServer};
use http_body_util::{BodyExt, Full};
use prost::Message;
use prost::bytes::Bytes;
use tonic::{Request, Response};
use tower_layer::Layer;
use tower_service::Service;

/// Answers `GetLearner` for `release_id = "r-1"`, refuses `"secret"`, and nothing else.
struct Fake;

type Answer<T> = Result<Response<T>, Status>;

#[tonic::async_trait]
impl OrganisationNode for Fake {
    async fn describe(&self, _: Request<pb::DescribeRequest>) -> Answer<pb::DescribeResponse> {
        Err(Status::unimplemented("fake"))
    }
    async fn list_learners(
        &self,
        _: Request<pb::ListLearnersRequest>,
    ) -> Answer<pb::ListLearnersResponse> {
        Err(Status::unimplemented("fake"))
    }
    async fn get_learner(&self, r: Request<pb::GetLearnerRequest>) -> Answer<pb::PrivateLearner> {
        use pb::get_learner_request::Selector;
        match r.into_inner().selector {
            Some(Selector::ReleaseId(id)) if id == "r-1" => {
                Ok(Response::new(pb::PrivateLearner::default()))
            }
            Some(Selector::ReleaseId(id)) if id == "secret" => {
                Err(Status::permission_denied("anonymous may not"))
            }
            _ => Err(Status::invalid_argument("give `release_id`")),
        }
    }
    async fn publish_learner(
        &self,
        _: Request<pb::PublishLearnerRequest>,
    ) -> Answer<pb::PrivateLearner> {
        Ok(Response::new(pb::PrivateLearner::default()))
    }
    async fn publish_data(&self, _: Request<pb::PublishDataRequest>) -> Answer<pb::DataRelease> {
        Err(Status::unimplemented("fake"))
    }
    async fn get_data(&self, _: Request<pb::GetDataRequest>) -> Answer<pb::DataRelease> {
        Err(Status::unimplemented("fake"))
    }
    async fn list_data(&self, _: Request<pb::ListDataRequest>) -> Answer<pb::ListDataResponse> {
        Err(Status::unimplemented("fake"))
    }
}

type Req = http::Request<Full<Bytes>>;

/// A unary gRPC request of `message` to `path`, framed as on the wire.
fn grpc(path: &str, message: &impl Message) -> Req {
    let body = message.encode_to_vec();
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
    framed.extend_from_slice(&body);
    http::Request::builder()
        .method("POST")
        .uri(format!("http://node{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(Full::new(Bytes::from(framed)))
        .expect("a request")
}

fn get(id: &str) -> pb::GetLearnerRequest {
    pb::GetLearnerRequest {
        selector: Some(pb::get_learner_request::Selector::ReleaseId(id.into())),
    }
}

fn served(metrics: &Arc<Metrics>) -> Timed<OrganisationNodeServer<Fake>> {
    TimingLayer::new(metrics.clone()).layer(OrganisationNodeServer::new(Fake))
}

/// Sends `request` and reads the whole answer; the code the client reads.
async fn call(metrics: &Arc<Metrics>, request: Req) -> Code {
    let mut service = served(metrics);
    std::future::poll_fn(|cx| Service::<Req>::poll_ready(&mut service, cx))
        .await
        .expect("ready");
    let response = service.call(request).await.expect("an answer");
    if let Some(code) = code_in(response.headers()) {
        return code;
    }
    let body = response.into_body().collect().await.expect("a body");
    body.trailers().and_then(code_in).expect("a status")
}

#[tokio::test]
async fn errors_and_successes_are_counted_under_the_code_the_client_reads() {
    let metrics = Arc::new(Metrics::new());
    let path = "/dpagg.v1.OrganisationNode/GetLearner";
    assert_eq!(call(&metrics, grpc(path, &get("r-1"))).await, Code::Ok);
    assert_eq!(call(&metrics, grpc(path, &get("r-1"))).await, Code::Ok);
    let refused = call(&metrics, grpc(path, &get("secret"))).await;
    assert_eq!(refused, Code::PermissionDenied);
    let invalid = call(&metrics, grpc(path, &pb::GetLearnerRequest::default())).await;
    assert_eq!(invalid, Code::InvalidArgument);
    let mut garbage = grpc(path, &get("r-1"));
    *garbage.body_mut() = Full::new(Bytes::from_static(&[0, 0, 0, 0, 3, 0xff, 0xff, 0xff]));
    let undecodable = call(&metrics, garbage).await;
    assert_ne!(
        undecodable,
        Code::Ok,
        "tonic refuses a message it cannot decode"
    );
    let rpc = Rpc::GetLearner;
    assert_eq!(metrics.calls(rpc, Code::Ok), 2);
    assert_eq!(metrics.calls(rpc, Code::PermissionDenied), 1);
    assert_eq!(metrics.calls(rpc, Code::InvalidArgument), 1);
    assert_eq!(metrics.calls(rpc, undecodable), 1);
    assert_eq!(metrics.timed(rpc), 5, "every read is timed");
    let publish = "/dpagg.v1.OrganisationNode/PublishLearner";
    let asked = pb::PublishLearnerRequest::default();
    assert_eq!(call(&metrics, grpc(publish, &asked)).await, Code::Ok);
    assert_eq!(metrics.calls(Rpc::PublishLearner, Code::Ok), 1);
    assert_eq!(
        metrics.timed(Rpc::PublishLearner),
        0,
        "a publish is not timed"
    );
}

#[tokio::test]
async fn paths_outside_the_contract_are_not_counted() {
    let metrics = Arc::new(Metrics::new());
    let unknown = grpc("/dpagg.v1.OrganisationNode/Nope", &get("r-1"));
    assert_eq!(call(&metrics, unknown).await, Code::Unimplemented);
    for rpc in Rpc::ALL {
        assert_eq!(metrics.calls(rpc, Code::Unimplemented), 0, "{rpc:?}");
        assert_eq!(metrics.timed(rpc), 0, "{rpc:?}");
    }
}

#[tokio::test]
async fn a_body_dropped_before_its_trailers_is_cancelled() {
    let metrics = Arc::new(Metrics::new());
    let mut service = served(&metrics);
    std::future::poll_fn(|cx| Service::<Req>::poll_ready(&mut service, cx))
        .await
        .expect("ready");
    let request = grpc("/dpagg.v1.OrganisationNode/GetLearner", &get("r-1"));
    let response = service.call(request).await.expect("an answer");
    assert_eq!(
        code_in(response.headers()),
        None,
        "a success sends trailers"
    );
    assert_eq!(metrics.calls(Rpc::GetLearner, Code::Ok), 0, "not yet known");
    drop(response);
    assert_eq!(metrics.calls(Rpc::GetLearner, Code::Cancelled), 1);
    assert_eq!(metrics.calls(Rpc::GetLearner, Code::Ok), 0);
}
