//! What the aggregator keeps of the text a node sends: the limits and the one cleaning function
//! every later stage applies before a string reaches a report, a log or a terminal.
//!
//! [`clean`] and [`MAX_TEXT`] are the shared crate's ([`dpagg_shared::util::text`]), the same
//! ones the node's audit log uses; the release id and mechanism name, shown in the report and
//! compared again when a signed report is verified, have limits of their own.

pub use dpagg_shared::util::text::{MAX_TEXT, clean};

/// Longest release id shown (nodes make 32 hex characters).
pub const MAX_RELEASE_ID: usize = 64;

/// Longest mechanism name shown.
pub const MAX_MECHANISM: usize = 80;
