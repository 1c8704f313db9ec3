//! Why the store failed ([`StoreError`]) and why a publish released nothing ([`PublishError`]),
//! with the rule that tells refusals from public quantities from failures that may depend on
//! the data ([`is_data_independent`]).

use dpagg_shared::privacy::accounting::admission::Refusal;
use dpagg_shared::privacy::data_release::DataReleaseError;
use dpagg_shared::privacy::mechanism::MechanismError;

/// Database failures.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("{path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// The error.
        source: rusqlite::Error,
    },
    /// The state folder cannot be created.
    #[error("{path}: cannot create the state folder: {source}")]
    Io {
        /// The folder.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A stored row cannot be decoded.
    #[error("{path}: corrupt release {release_id}: {reason}")]
    Corrupt {
        /// The database file.
        path: String,
        /// The release.
        release_id: String,
        /// What is wrong.
        reason: String,
    },
    /// The operating system refused entropy for a release id.
    #[error("cannot obtain entropy for a release id: {0}")]
    Entropy(String),
    /// The state folder was claimed by another organisation: its releases were trained on that
    /// organisation's data and must never be served under another name.
    #[error(
        "{path}: this state folder belongs to organisation `{owner}`, not `{ours}`: its releases were trained on `{owner}`'s data; give each organisation's node its own state folder"
    )]
    OtherOrganisation {
        /// The database file.
        path: String,
        /// The organisation recorded in the folder.
        owner: String,
        /// The organisation asking.
        ours: String,
    },
    /// A file of the state folder cannot be read or written.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The database is missing, another ledger, or behind the high-water mark kept beside it:
    /// moved away, replaced, or rolled back to an older copy.
    #[error(
        "{path}: the ledger is behind its high-water mark {mark} ({why}): it was moved away, replaced or rolled back, which would spend the budget again; put the current node.sqlite back, or restore a backup that is not behind the mark with `dpagg-node ledger restore FILE`"
    )]
    BehindMark {
        /// The database file.
        path: String,
        /// The mark file.
        mark: String,
        /// How it is behind.
        why: String,
    },
    /// Someone other than the node's user can change the state folder, a file of it, or a
    /// folder above it.
    #[error(transparent)]
    Private(#[from] dpagg_shared::util::private::PrivateError),
    /// The ledger's charges cannot be composed.
    #[error("{path}: cannot compose the ledger: {reason}")]
    Accounting {
        /// The database file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// Why a publish did not release anything.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The ledger's admission rule refuses the charge (per-release cap or totals).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The mechanism's guarantee is not proven for the algorithm as run, and the policy refuses
    /// such releases.
    #[error(
        "{0} releases state a guarantee that is not proven for the sampler used; this node's policy refuses them (policy.allow_unproven = false)"
    )]
    Unproven(String),
    /// The mechanism refused (invalid parameter, data outside its assumptions, solver failure).
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// The database failed; nothing was released.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The release would take longer than the node's training time limit (predicted from n, d
    /// and the spec, before any charge).
    #[error(
        "this release would take at least {} s here, over this node's max_training_seconds = {}: ask for fewer steps or a smaller sampling rate, or raise the limit (nothing was charged)",
        dpagg_shared::util::num::Short(*predicted),
        dpagg_shared::util::num::Short(*limit)
    )]
    TooSlow {
        /// Predicted seconds (a lower estimate).
        predicted: f64,
        /// The limit.
        limit: f64,
    },
    /// This spec's training failed or stopped before (reservation `release_id`): its one charge
    /// stands and nothing new is charged until the operator allows a retry.
    #[error(
        "this spec's training {reason} before (reservation {release_id}): its charge stands and asking again charges nothing; the node's operator may allow a retry (dpagg-node releases --allow-retry {release_id}), or ask for another spec"
    )]
    FailedBefore {
        /// The failed reservation.
        release_id: String,
        /// `stopped` or `failed`.
        reason: String,
    },
    /// `dpagg-node check --strict` finds traps in the schema on this node's data (under the
    /// spec's agreed map, if any) and the policy does not accept them: refused before any
    /// charge. The findings name local facts (shares of values, features): a remote caller is
    /// told only that the operator has not accepted them (`status.rs`).
    #[error(
        "the schema fails `dpagg-node check --strict` on this node's data: {}; nothing was charged (fix the schema, or publish anyway with --accept-traps / policy.accept_traps = true, which every release records)",
        .0.join("; ")
    )]
    Traps(Vec<String>),
    /// The same spec is being trained right now (by this node or a `publish` beside it).
    #[error("a release for this spec is being trained now; ask again when it is done")]
    InProgress,
    /// Training failed after its charge was reserved: the charge stands, since whether and
    /// when training fails may depend on the data.
    #[error(
        "{0}; nothing was released, and the charge stands (a failed training may depend on the data)"
    )]
    FailedCharged(MechanismError),
    /// A data release refused from public quantities only (refunded).
    #[error(transparent)]
    Data(DataReleaseError),
    /// A data release failed after reading the data: the charge stands.
    #[error("{0}; nothing was released, and the charge stands")]
    DataFailedCharged(DataReleaseError),
    /// The spec's agreed map does not fit this node's schema or holds an invalid constant
    /// (refused before any charge: the decision reads only the map and the public schema).
    #[error("the spec's agreed map: {0} (nothing was charged)")]
    Map(#[from] dpagg_shared::data::agreed_map::MapError),
}

/// Whether a training failure is a function of public quantities only (the spec, n and d, which
/// every release publishes), so that refusing reveals nothing about the records and need not be
/// charged: invalid parameters and options, step counts over a cap, a snapping bound out of
/// range, an empty dataset. Everything else (a row outside the assumed norm, a solver or sampler
/// failure, a stop at the time limit) may depend on the data and stays charged.
pub fn is_data_independent(e: &MechanismError) -> bool {
    use dpagg_shared::privacy::mechanism::GibbsError;
    matches!(
        e,
        MechanismError::InvalidParameter { .. }
            | MechanismError::UnknownOption { .. }
            | MechanismError::ReproductionOnly { .. }
            | MechanismError::Accounting(_)
            | MechanismError::TooManyIterations { .. }
            | MechanismError::Snapping(_)
            | MechanismError::EmptyData
            | MechanismError::Gibbs(
                GibbsError::TooManySteps { .. } | GibbsError::DimensionTooSmall { .. }
            )
    )
}
