//! Helpers shared by dpagg's integration tests: locating (and building) the workspace binaries
//! and running them.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Path of a workspace binary, built once per test process with the same target directory.
///
/// Integration tests live in their own crate, so Cargo does not build the other packages'
/// binaries for them; this runs `cargo build` for both binaries on first use.
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        // target/<profile>/deps/<test-exe> → target/<profile>
        let exe = std::env::current_exe().expect("test executable path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target profile folder")
            .to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "dpagg-aggregator", "-p", "dpagg-node"]);
        if dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "building the binaries failed");
        dir
    });
    dir.join(name)
}

/// Runs a workspace binary with `args` in `cwd`.
pub fn run(name: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new(binary(name))
        .args(args)
        .current_dir(cwd)
        .env_remove("DPAGG_LOG")
        .output()
        .expect("spawn binary")
}

/// The repository root (for the bundled data files).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Asserts a failed run: non-zero exit and exactly one line on stderr containing every `needle`.
pub fn assert_one_line_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got: {stderr}");
    for n in needles {
        assert!(
            lines[0].contains(n),
            "`{}` does not mention `{n}`",
            lines[0]
        );
    }
}
