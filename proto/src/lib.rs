//! # dpagg-proto — the gRPC contract of dpagg
//!
//! Code generated from `proto/dpagg/v1/node.proto` (package `dpagg.v1`) by `tonic-prost-build`,
//! compiled once here for the whole workspace. The `.proto` file documents every field; it is the
//! contract clients in other languages read.
//!
//! [`convert`] is the one place where protobuf messages become the domain types of
//! `dpagg-shared` and back: the node, the aggregator and the tests go through it.
//! [`map`] converts the agreed map a learner spec carries.
//! [`signature`] is the canonical encoding of a release and its Ed25519 signature; [`data`] the
//! conversions and signed envelope of data releases (statistics, synthetic data).
#![forbid(unsafe_code)]

pub mod convert;
pub mod data;
pub mod map;
pub mod signature;

/// Package `dpagg.v1`: the `OrganisationNode` service, its client, server and messages.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod v1 {
    tonic::include_proto!("dpagg.v1");

    /// Encoded `FileDescriptorSet` of the package, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/dpagg_v1_descriptor.bin"));
}
