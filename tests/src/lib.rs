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
        // Cargo runs tests with the package's own variables set (CARGO_MANIFEST_DIR,
        // CARGO_PKG_NAME, …). Build scripts that declare `rerun-if-env-changed` on them (ring's
        // does) would see other values than in the `cargo test` that built this executable and
        // rebuild ring, rustls and tonic here, and again in the next `cargo test`: every test run
        // would pay a minute or more of compilation. Build with cargo's own environment.
        for (key, _) in std::env::vars_os() {
            let Some(key) = key.to_str() else { continue };
            if key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_BIN_")
                || matches!(
                    key,
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_MANIFEST_LINKS"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "OUT_DIR"
                )
            {
                cmd.env_remove(key);
            }
        }
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
    run_with_env(name, args, cwd, &[])
}

/// Runs a workspace binary with `args` in `cwd` and the environment variables `env` set.
pub fn run_with_env(name: &str, args: &[&str], cwd: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(binary(name))
        .args(args)
        .current_dir(cwd)
        .env_remove("DPAGG_LOG")
        .envs(env.iter().copied())
        .output()
        .expect("spawn binary")
}

/// Asserts a successful run, showing its stderr otherwise.
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `dpagg-node publish --config <config> <args…>` in the config's folder.
pub fn publish_with_cli(config: &Path, args: &[&str]) -> Output {
    let mut all = vec!["publish", "--config", config.to_str().expect("utf8")];
    all.extend_from_slice(args);
    run("dpagg-node", &all, config.parent().expect("config folder"))
}

/// The repository root (for the bundled data files).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Whether `line` is a log event at `WARN` or `INFO` (a timestamp, then the level): what a tool
/// logs on the way, not its error.
fn is_log_event(line: &str) -> bool {
    let stamp = line.split_whitespace().next().unwrap_or_default();
    let level = line.split_whitespace().nth(1).unwrap_or_default();
    stamp.len() > 20
        && stamp.as_bytes()[4] == b'-'
        && stamp.ends_with('Z')
        && matches!(level, "WARN" | "INFO")
}

/// Asserts a failed run: non-zero exit and exactly one error line on stderr containing every
/// `needle` (log events on the way — the plain-text warning of `--insecure`, a node excluded —
/// are not the error and are left aside).
pub fn assert_one_line_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "expected failure, got success; stderr: {stderr}"
    );
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter(|l| !is_log_event(l))
        .collect();
    assert_eq!(lines.len(), 1, "expected one line on stderr, got: {stderr}");
    for n in needles {
        assert!(
            lines[0].contains(n),
            "`{}` does not mention `{n}`",
            lines[0]
        );
    }
}

/// A `dpagg-node serve` process on an ephemeral port, killed (SIGKILL) when dropped.
pub struct NodeProcess {
    child: std::process::Child,
    /// The address it listens on.
    pub addr: String,
}

impl NodeProcess {
    /// Starts `dpagg-node serve --config <config>` and waits for its "listening" line.
    pub fn start(config: &Path) -> NodeProcess {
        Self::spawn(config, std::process::Stdio::null(), &[])
    }

    /// As [`NodeProcess::start`], with the node's log (stderr) written to `log`.
    pub fn start_logging_to(config: &Path, log: &Path) -> NodeProcess {
        let file = std::fs::File::create(log).expect("create the log file");
        Self::spawn(config, file.into(), &[])
    }

    /// As [`NodeProcess::start`], with the metrics endpoint on an ephemeral port: returns the
    /// node and the metrics address (from its second stdout line).
    pub fn start_with_metrics(config: &Path) -> (NodeProcess, String) {
        let mut command = Command::new(binary("dpagg-node"));
        command.stderr(std::process::Stdio::null());
        Self::spawn_with_metrics(command, config)
    }

    /// As [`NodeProcess::start_with_metrics`], in a process that may open at most `files`
    /// files (`ulimit -n`, soft and hard), with its log (stderr) written to `log`.
    pub fn start_under_file_limit(config: &Path, log: &Path, files: u64) -> (NodeProcess, String) {
        let file = std::fs::File::create(log).expect("create the log file");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(binary("dpagg-node"))
            .env_remove("DPAGG_LOG")
            .stderr(file);
        Self::spawn_with_metrics(command, config)
    }

    /// Runs `command` followed by `serve --config <config>` on ephemeral ports for gRPC and
    /// metrics, and reads both addresses from its stdout.
    fn spawn_with_metrics(mut command: Command, config: &Path) -> (NodeProcess, String) {
        use std::io::BufRead;
        let mut child = command
            .args(["serve", "--config"])
            .arg(config)
            .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn dpagg-node");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut read = |prefix: &str| {
            let mut line = String::new();
            stdout.read_line(&mut line).expect("read a line");
            line.trim()
                .strip_prefix(prefix)
                .unwrap_or_else(|| panic!("unexpected line: {line:?}"))
                .to_owned()
        };
        let addr = read("dpagg-node listening on ");
        let metrics = read("dpagg-node metrics on http://")
            .trim_end_matches("/metrics")
            .to_owned();
        (NodeProcess { child, addr }, metrics)
    }

    /// As [`NodeProcess::start`], with every log line (debug level, JSON) written to `log`.
    pub fn start_logging(config: &Path, log: &Path) -> NodeProcess {
        let file = std::fs::File::create(log).expect("create the log file");
        Self::spawn(
            config,
            file.into(),
            &[("DPAGG_LOG", "debug"), ("DPAGG_LOG_FORMAT", "json")],
        )
    }

    fn spawn(config: &Path, stderr: std::process::Stdio, env: &[(&str, &str)]) -> NodeProcess {
        use std::io::BufRead;
        let mut child = Command::new(binary("dpagg-node"))
            .args(["serve", "--config"])
            .arg(config)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .envs(env.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn dpagg-node");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the listening line");
        let addr = line
            .trim()
            .strip_prefix("dpagg-node listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
            .to_owned();
        NodeProcess { child, addr }
    }

    /// The gRPC endpoint URL (plain text).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The gRPC endpoint URL of a node serving TLS.
    pub fn https_url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for a clean exit; returns whether it exited successfully.
    pub fn terminate(&mut self) -> bool {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `dpagg-node certs init` of `orgs` (comma-separated) into `dir/name`: the federation's CA
/// and one identity folder per organisation.
pub fn federation(dir: &Path, name: &str, orgs: &str) -> PathBuf {
    let out = dir.join(name);
    assert_success(&run(
        "dpagg-node",
        &[
            "certs",
            "init",
            "--out",
            out.to_str().expect("utf8"),
            "--org",
            orgs,
        ],
        dir,
    ));
    out
}

/// Writes a node configuration (and its data: `rows` rows of the bundled Diabetes data) into
/// `dir`, returning the config path.
pub fn node_config(
    dir: &Path,
    id: &str,
    epsilon_total: f64,
    cap: f64,
    remote: bool,
    rows: usize,
) -> PathBuf {
    let root = repo_root();
    let csv = std::fs::read_to_string(root.join("data/diabetes.csv")).expect("bundled data");
    let text: String = csv
        .lines()
        .take(rows + 1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join(format!("{id}.csv")), text).expect("write data");
    std::fs::copy(
        root.join("data/diabetes.schema.toml"),
        dir.join("diabetes.schema.toml"),
    )
    .expect("copy schema");
    // The write list is empty by default: a remote-publish node lists who may spend.
    let access = if remote {
        "[access]\nwrite = [\"*\"]\n"
    } else {
        ""
    };
    let config = dir.join(format!("{id}.toml"));
    std::fs::write(
        &config,
        format!(
            "insecure = true\norganisation_id = \"{id}\"\ndata = \"{id}.csv\"\nschema = \"diabetes.schema.toml\"\nstate_dir = \"{id}-state\"\n{access}[policy]\nepsilon_total = {epsilon_total}\ndelta_total = 1e-5\nmax_epsilon_per_release = {cap}\nallow_remote_publish = {remote}\n"
        ),
    )
    .expect("write config");
    config
}

/// A node config (remote publish on) whose trainings stop after one second and that may run
/// `gibbs-posterior-unproven`: a spec with `steps = 1e12` then always runs into the limit.
pub fn one_second_node_config(dir: &Path, id: &str) -> PathBuf {
    let config = node_config(dir, id, 10.0, 2.0, true, 60);
    let text = std::fs::read_to_string(&config).expect("config");
    std::fs::write(
        &config,
        format!("{text}max_training_seconds = 1\nallow_unproven = true\n"),
    )
    .expect("write");
    config
}

/// Adds `lines` (e.g. `"publish_per_minute = 100\n"`) to the `[access]` table of the node
/// config at `config`, creating the table before `[policy]` when there is none.
pub fn add_access(config: &Path, lines: &str) {
    let text = std::fs::read_to_string(config).expect("read config");
    let text = if text.contains("[access]\n") {
        text.replacen("[access]\n", &format!("[access]\n{lines}"), 1)
    } else {
        text.replacen("[policy]\n", &format!("[access]\n{lines}[policy]\n"), 1)
    };
    std::fs::write(config, text).expect("write config");
}

/// The node's budget as `Describe` reports it.
pub async fn budget(
    c: &mut dpagg_proto::v1::organisation_node_client::OrganisationNodeClient<
        tonic::transport::Channel,
    >,
) -> dpagg_proto::v1::Budget {
    c.describe(dpagg_proto::v1::DescribeRequest {})
        .await
        .expect("describe")
        .into_inner()
        .budget
        .expect("budget")
}

/// [`node_config`] for a node serving mutual TLS with the identity folder `identity`, with
/// `access` (TOML lines of the `[access]` table) appended.
pub fn tls_node_config(
    dir: &Path,
    id: &str,
    identity: &Path,
    remote: bool,
    access: &str,
) -> PathBuf {
    let config = node_config(dir, id, 5.0, 2.0, remote, 60);
    let text = std::fs::read_to_string(&config).expect("read config");
    let text = text.replacen(
        "insecure = true\n",
        &format!("identity = {:?}\n", identity.to_str().expect("utf8")),
        1,
    );
    // The caller's write list replaces node_config's "any caller".
    let text = if access.contains("write") {
        text.replacen("[access]\nwrite = [\"*\"]\n", "", 1)
    } else {
        text
    };
    std::fs::write(&config, text).expect("write config");
    add_access(&config, &format!("{access}\n"));
    config
}

/// How a test closes the read end of a binary's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClosePipe {
    /// After reading the first line, as `| head -1` does.
    AfterFirstLine,
    /// Before reading anything, so every write meets a closed pipe.
    Immediately,
}

/// Runs a workspace binary with stdout piped, closes the pipe as `close` says, and waits.
///
/// Returns the first line read (empty with [`ClosePipe::Immediately`]) and the output (exit
/// status and stderr; stdout is empty).
pub fn run_closing_stdout(
    name: &str,
    args: &[&str],
    cwd: &Path,
    close: ClosePipe,
) -> (String, Output) {
    use std::io::BufRead;
    let mut child = Command::new(binary(name))
        .args(args)
        .current_dir(cwd)
        .env_remove("DPAGG_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn binary");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    if close == ClosePipe::AfterFirstLine {
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read the first line");
    } else {
        drop(stdout);
    }
    (line, child.wait_with_output().expect("wait"))
}

/// Asserts that a run whose stdout was closed early ended as `| head` expects: exit status 0
/// and no panic.
pub fn assert_clean_exit_on_closed_stdout(out: &Output) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "expected exit 0 after stdout closed, got {:?}; stderr: {stderr}",
        out.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A fake node (any server of the contract): describes itself as `id`, serves one fixed learner,
/// optionally slowly, and refuses to publish.
#[derive(Clone)]
pub struct FakeNode {
    /// The organisation it describes itself as.
    pub id: String,
    /// The learner it serves to every GetLearner.
    pub learner: dpagg_proto::v1::PrivateLearner,
    /// The schema fingerprint it describes.
    pub fingerprint: String,
    /// How long Describe waits.
    pub delay: std::time::Duration,
}

#[tonic::async_trait]
impl dpagg_proto::v1::organisation_node_server::OrganisationNode for FakeNode {
    async fn describe(
        &self,
        _: tonic::Request<dpagg_proto::v1::DescribeRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::DescribeResponse>, tonic::Status> {
        tokio::time::sleep(self.delay).await;
        Ok(tonic::Response::new(dpagg_proto::v1::DescribeResponse {
            organisation_id: self.id.clone(),
            schema_fingerprint: self.fingerprint.clone(),
            ..Default::default()
        }))
    }
    async fn list_learners(
        &self,
        _: tonic::Request<dpagg_proto::v1::ListLearnersRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::ListLearnersResponse>, tonic::Status> {
        Ok(tonic::Response::new(
            dpagg_proto::v1::ListLearnersResponse {
                learners: vec![self.learner.clone()],
                next_page_token: String::new(),
            },
        ))
    }
    async fn get_learner(
        &self,
        _: tonic::Request<dpagg_proto::v1::GetLearnerRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::PrivateLearner>, tonic::Status> {
        Ok(tonic::Response::new(self.learner.clone()))
    }
    async fn publish_learner(
        &self,
        _: tonic::Request<dpagg_proto::v1::PublishLearnerRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::PrivateLearner>, tonic::Status> {
        Err(tonic::Status::permission_denied("fake"))
    }
    async fn publish_data(
        &self,
        _: tonic::Request<dpagg_proto::v1::PublishDataRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::DataRelease>, tonic::Status> {
        Err(tonic::Status::permission_denied("fake"))
    }
    async fn get_data(
        &self,
        _: tonic::Request<dpagg_proto::v1::GetDataRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::DataRelease>, tonic::Status> {
        Err(tonic::Status::not_found("fake"))
    }
    async fn list_data(
        &self,
        _: tonic::Request<dpagg_proto::v1::ListDataRequest>,
    ) -> Result<tonic::Response<dpagg_proto::v1::ListDataResponse>, tonic::Status> {
        Ok(tonic::Response::new(
            dpagg_proto::v1::ListDataResponse::default(),
        ))
    }
}

/// Writes the aggregator's own rows (Diabetes rows 400…599) to `dir/own.csv` and the schema to
/// `dir/agg.schema.toml`.
pub fn write_own_data(dir: &Path) {
    let csv = std::fs::read_to_string(repo_root().join("data/diabetes.csv")).expect("data");
    let mut lines = csv.lines();
    let mut own = format!("{}\n", lines.next().expect("header"));
    for l in lines.skip(400).take(200) {
        own.push_str(l);
        own.push('\n');
    }
    std::fs::write(dir.join("own.csv"), own).expect("write");
    std::fs::copy(
        repo_root().join("data/diabetes.schema.toml"),
        dir.join("agg.schema.toml"),
    )
    .expect("copy");
}
