//! # dpagg-node — one organisation's node
//!
//! Holds the organisation's records and publishes only differentially private learners, each
//! charged to a durable privacy ledger before it can be served ([`store`]). [`node`] ties schema,
//! data, policy and store together; [`service`] is the `dpagg.v1.OrganisationNode` gRPC service;
//! [`transport`] serves it with health and reflection; [`config`] resolves file, flags and env.
#![forbid(unsafe_code)]

pub mod config;
pub mod node;
pub mod service;
pub mod store;
pub mod transport;
