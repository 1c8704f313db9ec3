//! # dpagg-node — one organisation's node
//!
//! Holds the organisation's records and publishes only differentially private learners, each
//! charged to a durable privacy ledger before it can be served ([`store`]). [`node`] ties schema,
//! data, policy and store together; [`service`] is the `dpagg.v1.OrganisationNode` gRPC service;
//! [`transport`] serves it with health and reflection; [`config`] resolves file, flags and env;
//! [`lock`] keeps one serving node per state folder; [`split`] deals a CSV over organisations
//! for trying dpagg by hand. [`tls`] is mutual TLS and organisation identities, [`access`] the
//! per-RPC allow-lists, rate limit and audit log, [`certs`] the development CA.
#![forbid(unsafe_code)]

pub mod access;
pub mod certs;
pub mod config;
pub mod lock;
pub mod metrics;
pub mod metrics_server;
pub mod node;
pub mod service;
pub mod split;
mod status;
pub mod store;
pub mod tls;
pub mod tls_server;
pub mod transport;
