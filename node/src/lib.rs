//! # dpagg-node — one organisation's node
//!
//! Holds the organisation's records and publishes only differentially private learners, each
//! charged to a durable privacy ledger before it can be served ([`store`]). [`node`] ties schema,
//! data, policy and store together; [`service`] is the `dpagg.v1.OrganisationNode` gRPC service;
//! [`transport`] serves it with health and reflection; [`config`] resolves file, flags and env;
//! [`lock`] keeps one serving node per state folder; [`split`] deals a CSV over organisations
//! for trying dpagg by hand. [`tls_server`] serves mutual TLS with the identities of
//! `dpagg_shared::identity` (identity folders, organisation ids, the development CA, shared with
//! the aggregator), [`access`] the per-RPC allow-lists, rate limit and audit log; [`limits`],
//! [`connections`] and [`log_limit`] keep hostile clients from holding the listeners or
//! filling the disk with log lines.
#![forbid(unsafe_code)]

pub mod access;
pub mod config;
pub mod connections;
pub mod limits;
pub mod lock;
pub mod log_limit;
pub mod metrics;
pub mod metrics_server;
pub mod node;
pub mod service;
pub mod split;
mod status;
pub mod store;
pub mod timing;
pub mod tls_server;
pub mod transport;
