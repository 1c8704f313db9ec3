//! Generates the dpagg.v1 gRPC code from `dpagg/v1/node.proto` with protox (a pure-Rust protobuf
//! compiler, so no system `protoc` is needed) and keeps the encoded descriptor set for reflection.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=dpagg/v1/node.proto");
    let fds = protox::compile(["dpagg/v1/node.proto"], ["."])?;
    let out = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out.join("dpagg_v1_descriptor.bin"),
        prost::Message::encode_to_vec(&fds),
    )?;
    // Ordered maps: the same message always encodes to the same bytes (a HashMap's iteration order
    // differs between calls, so `parameters` and `options` would come back reordered).
    tonic_prost_build::configure()
        .btree_map(".")
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}
