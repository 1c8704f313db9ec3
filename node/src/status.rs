//! Typed gRPC statuses of the node's failures, without data-derived numbers: mechanism and
//! store failures whose messages could carry them (a row norm, a gradient norm) are logged
//! locally and sent as `INTERNAL` (or, once charged, `FAILED_PRECONDITION`, the code every later
//! ask of that spec gets); refusals computed from public quantities say why.

use crate::store::PublishError;
use dpagg_shared::privacy::accounting::admission::Refusal;
use dpagg_shared::privacy::data_release::DataReleaseError;
use dpagg_shared::privacy::mechanism::{GibbsError, MechanismError};
use tonic::Status;

/// `INTERNAL` with `context`; the error itself is logged on the node only.
pub(crate) fn internal(context: &str, e: &dyn std::fmt::Display) -> Status {
    tracing::error!(error = %e, "{context}");
    Status::internal(format!("{context}; see the node's log"))
}

/// A failure's kind, without its (possibly data-derived) message.
fn kind_of(e: &MechanismError) -> &'static str {
    match e {
        MechanismError::Stopped(_) => "stopped",
        _ => "training failed; the charge stands",
    }
}

/// Maps a publish failure to a typed status without data-derived numbers.
pub fn publish_status(e: &PublishError) -> Status {
    match e {
        PublishError::Refused(Refusal::Exhausted { .. }) => {
            Status::resource_exhausted(e.to_string())
        }
        PublishError::Refused(Refusal::OverCap { .. }) => {
            Status::failed_precondition(e.to_string())
        }
        PublishError::Unproven(_) => Status::failed_precondition(e.to_string()),
        PublishError::Traps(_) => Status::failed_precondition(
            "this node's operator has not accepted the traps `dpagg-node check --strict` finds \
             in its schema under this request's map (nothing was charged)",
        ),
        PublishError::Map(_) => Status::invalid_argument(e.to_string()),
        PublishError::Mechanism(
            MechanismError::InvalidParameter { .. }
            | MechanismError::UnknownOption { .. }
            | MechanismError::ReproductionOnly { .. }
            | MechanismError::Accounting(_),
        ) => Status::invalid_argument(e.to_string()),
        // The step counts and snapping bounds these name follow from n and d (and ε, λ), which
        // every release publishes.
        PublishError::Mechanism(
            MechanismError::TooManyIterations { .. }
            | MechanismError::Snapping(_)
            | MechanismError::Gibbs(
                GibbsError::TooManySteps { .. } | GibbsError::DimensionTooSmall { .. },
            ),
        ) => Status::failed_precondition(e.to_string()),
        PublishError::Mechanism(MechanismError::Stopped(_)) => {
            Status::unavailable(format!("{e}; nothing was released and nothing was charged"))
        }
        PublishError::InProgress => Status::unavailable(e.to_string()),
        PublishError::TooSlow { .. } => Status::failed_precondition(e.to_string()),
        // Not UNAVAILABLE: a client must not take it for a passing fault and ask again.
        PublishError::FailedCharged(MechanismError::Stopped(_))
        | PublishError::FailedBefore { .. } => Status::failed_precondition(e.to_string()),
        // The same code as every later ask of the spec (`FailedBefore`): the operator decides.
        PublishError::FailedCharged(inner) => {
            tracing::error!(error = %e, "training failed after its charge");
            Status::failed_precondition(format!(
                "the node could not train this learner ({}); asking again charges nothing until \
                 the node's operator allows a retry; see the node's log",
                kind_of(inner)
            ))
        }
        PublishError::Mechanism(_) => internal("the node could not train this learner", e),
        // From the spec and public quantities only (n, d, the schema's bounds).
        PublishError::Data(DataReleaseError::InvalidSpec(_)) => {
            Status::invalid_argument(e.to_string())
        }
        PublishError::Data(DataReleaseError::Calibration { .. }) => {
            Status::failed_precondition(e.to_string())
        }
        PublishError::Data(DataReleaseError::Failed { .. }) => {
            internal("the node could not make this data release", e)
        }
        // The reason may carry numbers from the data: logged, and only its public summary sent
        // (e.g. that a propose-test-release test did not pass, which its ε covers).
        PublishError::DataFailedCharged(inner) => {
            tracing::warn!(error = %e, "a data release failed after its charge");
            let public = match inner {
                DataReleaseError::Failed { public, .. } => public,
                _ => "the release failed",
            };
            Status::failed_precondition(format!(
                "{}: {public}; nothing was released, and the charge stands",
                match inner {
                    DataReleaseError::Failed { kind, .. }
                    | DataReleaseError::Calibration { kind, .. } => kind.name(),
                    DataReleaseError::InvalidSpec(_) => "data release",
                }
            ))
        }
        PublishError::Store(_) => internal("the node's store failed; nothing was released", e),
    }
}
