//! `dpagg-aggregator demo`: the whole system on one machine in a few seconds.
//!
//! Two scenarios. **clinic** (the default; [`dpagg_shared::data::clinic`]): a small aggregating
//! organisation of 100 rows and K = 9 hospitals of 2,000 rows each on synthetic logistic data in
//! d = 20, test set 5,000 — where joining pays. **diabetes**: the bundled Diabetes data split as
//! in Minami et al. 2015, §5.2: a class-stratified test set of 84 + 84 rows, and the remaining 600
//! rows over K + 1 organisations — where it does not pay (`experiment utility` at ε = 1: the final
//! model keeps the local one in about half the trials and ends 0.55 points below it on average;
//! docs/experiments/utility.md). `--rows-per-org` gives unequal sizes (the
//! aggregator's first). Organisations 1…K each get a real node — a `dpagg-node serve` process
//! (SQLite ledger, gRPC with health and reflection) on 127.0.0.1 with a port it picks itself
//! ([`super::node_process`]) — and each node's operator publishes one learner at the requested ε
//! with `dpagg-node publish` (charged to its ledger). The aggregator (organisation 0) then runs
//! exactly what `dpagg-aggregator run` runs, over real gRPC; the nodes are stopped when it ends
//! (or on Ctrl-C). The node binary is the one next to this executable (`--node-binary`).
//! Every connection is mutual TLS (a development CA made for the run by
//! `dpagg_shared::identity::certs`),
//! every release is signed and checked, and the report is signed by the aggregator; the public
//! signing keys are copied to `OUT/public-keys` so that `dpagg-aggregator verify
//! OUT/report.json --signing-keys OUT/public-keys` works afterwards. `--insecure` runs it in
//! plain text instead. Everything but the report and the public keys lives in a temporary
//! folder removed at the end.

use super::node_process::{self, Fleet, until_interrupted};
use anyhow::{Context, Result, bail};
use dpagg_aggregator_run::config::{
    Acceptance, LearnerRequest, Network, RunConfig, Security, TestSet,
};
use dpagg_aggregator_run::report::Report;
use dpagg_shared::cli::{LearnerArgs, Out};
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::clinic::{
    CLINIC_DIM, CLINIC_HOSPITAL_ROWS, CLINIC_OWN_ROWS, CLINIC_TEST_ROWS, clinic_rows,
};
use dpagg_shared::identity::certs::{PUBLIC_KEYS_DIR, Validity};
use dpagg_shared::privacy::guarantee::PrivacyGuarantee;
use dpagg_shared::privacy::mechanism::LearnerSpec;
use dpagg_shared::util::files::atomic_write;
use dpagg_shared::util::num::Num;
use dpagg_shared::util::seed::derived_rng;
use rand::seq::SliceRandom;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The data: `clinic` (a small aggregator among large hospitals, synthetic) or `diabetes`
    /// (the paper's bundled data, 10 organisations of 60).
    #[arg(long, value_enum, default_value_t = Scenario::Clinic)]
    scenario: Scenario,
    /// Number of node organisations K (the aggregator is one more).
    #[arg(long, default_value_t = 9)]
    nodes: usize,
    /// Rows of each organisation, comma-separated, the aggregator's first (K + 1 numbers)
    /// [default: clinic 100,2000,…; diabetes an equal share of 600].
    #[arg(long, value_delimiter = ',')]
    rows_per_org: Vec<usize>,
    /// ε of every node's release.
    #[arg(long, default_value_t = 1.0)]
    epsilon: f64,
    /// The mechanism every node publishes, its δ, λ (the aggregator's local model chooses its
    /// own λ by cross-validation) and options.
    #[command(flatten)]
    learner: LearnerArgs,
    /// Let nodes publish, and the aggregator accept, releases whose guarantee is not proven
    /// (gibbs-posterior-unproven).
    #[arg(long)]
    allow_unproven: bool,
    /// Mirror-averaging temperature β.
    #[arg(long, default_value_t = 3.0)]
    beta: f64,
    /// Seed of the data split and of the aggregator's own randomness (node noise is always
    /// drawn from the secure RNG).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Folder for report.json and report.html.
    #[arg(long, default_value = "results/demo")]
    out: PathBuf,
    /// Plain text instead of mutual TLS, unsigned releases and report (to compare).
    #[arg(long)]
    insecure: bool,
    /// The `dpagg-node` binary the nodes run [default: next to this executable].
    #[arg(long, env = super::node_process::NODE_BINARY_ENV)]
    node_binary: Option<PathBuf>,
}

/// The demo's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scenario {
    /// A small aggregator among large hospitals (synthetic, d = 20).
    Clinic,
    /// The bundled Diabetes data, as in Minami et al. 2015, §5.2.
    Diabetes,
}

/// The organisations' sizes: `--rows-per-org` if given (K + 1 numbers), else `default` each
/// after the aggregator's `first`.
fn sizes(args: &Args, first: usize, default: usize) -> Result<Vec<usize>> {
    if args.rows_per_org.is_empty() {
        let mut out = vec![first];
        out.extend(std::iter::repeat_n(default, args.nodes));
        return Ok(out);
    }
    if args.rows_per_org.len() != args.nodes + 1 {
        bail!(
            "--rows-per-org: give {} sizes (the aggregator's, then one per node), not {}",
            args.nodes + 1,
            args.rows_per_org.len()
        );
    }
    if let Some(small) = args.rows_per_org.iter().find(|&&n| n < 20) {
        bail!("--rows-per-org: {small} rows are too few for an organisation (at least 20)");
    }
    Ok(args.rows_per_org.clone())
}

/// The clinic's files in `dir`: test rows and one file per organisation (columns f01…f20,
/// `outcome` = yes/no), written with the shortest text that reads back as the same numbers.
fn clinic_data(dir: &Path, sizes: &[usize], seed: u64) -> Result<(PathBuf, Vec<PathBuf>)> {
    let mut rng = derived_rng(seed, &[0xc1]);
    let write = |name: &str, rows: usize, rng: &mut rand::rngs::ChaCha20Rng| -> Result<PathBuf> {
        let data = clinic_rows(rows, rng);
        let path = dir.join(name);
        let header: Vec<String> = (1..=CLINIC_DIM).map(|j| format!("f{j:02}")).collect();
        let mut out = format!("{},outcome\n", header.join(","));
        for i in 0..data.len() {
            let cells: Vec<String> = data.row(i).iter().map(|v| v.to_string()).collect();
            let label = if data.label(i) > 0.0 { "yes" } else { "no" };
            out.push_str(&format!("{},{label}\n", cells.join(",")));
        }
        atomic_write(&path, out.as_bytes())
            .with_context(|| format!("{}: cannot write", path.display()))?;
        Ok(path)
    };
    let test = write("test.csv", CLINIC_TEST_ROWS, &mut rng)?;
    let files = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| write(&format!("org-{i}.csv"), n, &mut rng))
        .collect::<Result<Vec<_>>>()?;
    Ok((test, files))
}

/// The clinic's public schema: 20 features already in the unit ball, mapped as they are
/// (ball mode, centre 0, scale 1, row scale 1, no intercept).
fn clinic_schema() -> String {
    let mut s = String::from(
        "name = \"clinic\"\nintercept = false\n\n[normalisation]\nmode = \"ball\"\nrow_scale = 1.0\n\n[label]\ncolumn = \"outcome\"\npositive = \"yes\"\nnegative = \"no\"\n",
    );
    for j in 1..=CLINIC_DIM {
        s.push_str(&format!(
            "\n[[features]]\nname = \"f{j:02}\"\nlo = -1.0\nhi = 1.0\ncenter = 0.0\nscale = 1.0\nsource = \"synthetic: x ~ N(0, I/20) in the unit ball\"\n"
        ));
    }
    s
}

/// Splits the bundled Diabetes CSV into a test file and one file per organisation (`sizes`
/// rows each) in `dir`.
fn split_data(dir: &Path, sizes: &[usize], seed: u64) -> Result<(PathBuf, Vec<PathBuf>)> {
    let bundled = Bundled::Diabetes;
    let text = bundled.csv_text();
    let mut lines = text.lines();
    let header = lines.next().context("the bundled data has no header")?;
    let rows: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    let (data, _) = bundled.load();
    if data.len() != rows.len() {
        bail!("the bundled data's rows and lines disagree");
    }
    let split = bundled.paper_split();
    let available = rows.len() - split.test_size();
    let wanted: usize = sizes.iter().sum();
    if wanted > available || sizes.iter().any(|&n| n < 20) {
        bail!(
            "the Diabetes data has {available} training rows: {} organisations of {:?} rows do not fit (at least 20 each)",
            sizes.len(),
            sizes
        );
    }
    let mut rng = derived_rng(seed, &[0xdea]);
    let mut pos: Vec<usize> = (0..rows.len()).filter(|&i| data.label(i) > 0.0).collect();
    let mut neg: Vec<usize> = (0..rows.len()).filter(|&i| data.label(i) < 0.0).collect();
    pos.shuffle(&mut rng);
    neg.shuffle(&mut rng);
    let test: Vec<usize> = pos[..split.test_positive]
        .iter()
        .chain(&neg[..split.test_negative])
        .copied()
        .collect();
    let mut train: Vec<usize> = pos[split.test_positive..]
        .iter()
        .chain(&neg[split.test_negative..])
        .copied()
        .collect();
    train.shuffle(&mut rng);
    let write = |name: &str, idx: &[usize]| -> Result<PathBuf> {
        let path = dir.join(name);
        let mut out = String::with_capacity(64 * (idx.len() + 1));
        out.push_str(header);
        out.push('\n');
        for &i in idx {
            out.push_str(rows[i]);
            out.push('\n');
        }
        atomic_write(&path, out.as_bytes())
            .with_context(|| format!("{}: cannot write", path.display()))?;
        Ok(path)
    };
    let test_file = write("test.csv", &test)?;
    let mut start = 0;
    let files = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let idx = &train[start..start + n];
            start += n;
            write(&format!("org-{i}.csv"), idx)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((test_file, files))
}

/// The settings of node `id` (`org-i`), as `dpagg-node` flags: its data, the schema, its own
/// state folder, its identity folder (or plain text) and the demo's policy; nobody may publish
/// remotely (each node's operator publishes, as in production).
fn node_settings(
    dir: &Path,
    id: &str,
    data: &Path,
    schema: &Path,
    allow_unproven: bool,
    insecure: bool,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--organisation-id".into(),
        id.into(),
        "--data".into(),
        data.into(),
        "--schema".into(),
        schema.into(),
        "--state-dir".into(),
        dir.join(format!("{id}-state")).into(),
    ];
    if insecure {
        args.push("--insecure".into());
    } else {
        args.push("--identity".into());
        args.push(dir.join("federation").join(id).into());
    }
    let allow_unproven = if allow_unproven { "true" } else { "false" };
    for (flag, value) in [
        ("--epsilon-total", "10"),
        ("--delta-total", "1e-4"),
        ("--max-epsilon-per-release", "2"),
        ("--allow-remote-publish", "false"),
        ("--allow-unproven", allow_unproven),
        ("--max-training-seconds", "120"),
    ] {
        args.push(flag.into());
        args.push(value.into());
    }
    args
}

/// `dpagg-node publish` flags for `spec`, every number written so that it reads back exactly.
fn publish_flags(mechanism: &str, spec: &LearnerSpec) -> Vec<String> {
    let mut flags = vec![
        "--mechanism".to_owned(),
        mechanism.to_owned(),
        "--epsilon".to_owned(),
        Num(spec.epsilon).to_string(),
        "--delta".to_owned(),
        Num(spec.delta).to_string(),
        "--lambda".to_owned(),
        spec.l2.to_string(),
    ];
    for (name, value) in &spec.options {
        flags.push("--option".to_owned());
        flags.push(format!("{name}={}", Num(*value)));
    }
    flags
}

/// How long the demo's development certificates live, in days.
const DEMO_CERT_DAYS: u32 = 90;

/// The development federation of the demo: a CA and the identity folders of `org-1…org-K` and
/// `aggregator` under `dir/federation`.
fn federation(dir: &Path, nodes: usize) -> Result<()> {
    let mut orgs: Vec<String> = (1..=nodes).map(|i| format!("org-{i}")).collect();
    orgs.push(AGGREGATOR.into());
    dpagg_shared::identity::certs::init(
        &dir.join("federation"),
        &orgs,
        &[],
        // Longer than the 30 days within which a node warns that its certificate expires: the
        // demo's folder is thrown away when it ends, and a first run prints no warning.
        Validity::days_from_now(DEMO_CERT_DAYS),
    )?;
    Ok(())
}

/// The aggregator's organisation id in the demo.
const AGGREGATOR: &str = "aggregator";

/// Copies the public signing keys next to the report, for `verify`.
fn copy_public_keys(dir: &Path, out: &Path) -> Result<()> {
    let from = dir.join("federation").join(PUBLIC_KEYS_DIR);
    let to = out.join(PUBLIC_KEYS_DIR);
    std::fs::create_dir_all(&to).with_context(|| format!("{}: cannot create", to.display()))?;
    for entry in std::fs::read_dir(&from).with_context(|| format!("{}", from.display()))? {
        let path = entry?.path();
        if let Some(name) = path.file_name() {
            let bytes =
                std::fs::read(&path).with_context(|| format!("{}: cannot read", path.display()))?;
            atomic_write(&to.join(name), &bytes)
                .with_context(|| format!("{}: cannot copy", path.display()))?;
        }
    }
    Ok(())
}

/// `demo`: K nodes, one aggregator, one report.
pub fn run(args: Args, stdout: &mut Out) -> Result<()> {
    let started = Instant::now();
    if args.nodes == 0 {
        bail!("--nodes must be at least 1");
    }
    dpagg_shared::util::files::check_writable_dir(&args.out).with_context(|| {
        format!(
            "{}: the report cannot be written there (--out)",
            args.out.display()
        )
    })?;
    let binary = node_process::node_binary(args.node_binary.clone())?;
    let work = tempfile::tempdir().context("cannot create a temporary folder")?;
    let (test_file, files, schema) = write_data(&args, work.path())?;
    let spec = args.learner.spec(args.epsilon);
    let accepted = requested_guarantee(&spec)?;
    if !args.insecure {
        federation(work.path(), files.len() - 1)?;
    }
    let nodes: Vec<_> = files[1..]
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let id = format!("org-{}", i + 1);
            let (unproven, insecure) = (args.allow_unproven, args.insecure);
            node_settings(work.path(), &id, f, &schema, unproven, insecure)
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let publish = publish_flags(spec.kind.name(), &spec);
    runtime.block_on(until_interrupted(publish_all(&binary, &nodes, &publish)))?;
    // A reader that went away (`| head -1`) does not stop the run: the report is still
    // written, and the closed pipe is reported after it.
    let mut printed = writeln!(
        stdout,
        "{} nodes published {} at ε = {} (each charged to its own ledger)",
        nodes.len(),
        spec.kind.name(),
        args.epsilon
    );
    let mut config =
        aggregator_config(&args, &spec, &accepted, files[0].clone(), schema, test_file);
    let federation = work.path().join("federation");
    if !args.insecure {
        config.security = Security::Tls {
            identity: federation.join(AGGREGATOR),
            signing_keys: federation.join(PUBLIC_KEYS_DIR),
        };
    }
    let (fleet, urls) =
        runtime.block_on(until_interrupted(serve(&binary, &nodes, args.insecure)))?;
    printed = printed.and_then(|()| writeln!(stdout, "serving on {}", urls.join(" ")));
    config.nodes = urls;
    let report = runtime.block_on(until_interrupted(dpagg_aggregator_run::protocol::execute(
        &config,
    )));
    drop(fleet);
    let mut report: Report = report?;
    if !args.insecure {
        dpagg_aggregator_run::sign(&mut report, &federation.join(AGGREGATOR))?;
        copy_public_keys(work.path(), &args.out)?;
    }
    printed = printed.and_then(|()| write!(stdout, "{}", report.table()));
    report.write(&args.out)?;
    printed?;
    wrote(stdout, &args.out, started)
}

/// The last line: where the report went and how long the demo took.
fn wrote(stdout: &mut Out, out: &Path, started: Instant) -> Result<()> {
    writeln!(
        stdout,
        "wrote {}, {} and {} in {:.1} s",
        out.join("report.json").display(),
        out.join("model.json").display(),
        out.join("report.html").display(),
        started.elapsed().as_secs_f64()
    )?;
    Ok(())
}

/// The scenario's files in `dir`: the test rows, one CSV per organisation (the aggregator's
/// first) and the public schema.
fn write_data(args: &Args, dir: &Path) -> Result<(PathBuf, Vec<PathBuf>, PathBuf)> {
    let (test_file, files, schema_text) = match args.scenario {
        Scenario::Clinic => {
            let sizes = sizes(args, CLINIC_OWN_ROWS, CLINIC_HOSPITAL_ROWS)?;
            let (t, f) = clinic_data(dir, &sizes, args.seed)?;
            (t, f, clinic_schema())
        }
        Scenario::Diabetes => {
            let share = (Bundled::Diabetes.load().0.len()
                - Bundled::Diabetes.paper_split().test_size())
                / (args.nodes + 1);
            let sizes = sizes(args, share, share)?;
            let (t, f) = split_data(dir, &sizes, args.seed)?;
            (t, f, Bundled::Diabetes.schema_text().to_owned())
        }
    };
    let schema = dir.join("schema.toml");
    atomic_write(&schema, schema_text.as_bytes())
        .with_context(|| format!("{}: cannot write", schema.display()))?;
    Ok((test_file, files, schema))
}

/// Each node's operator publishes with `dpagg-node publish` (a few at a time); the first
/// failure, in the nodes' order, is the error.
async fn publish_all(binary: &Path, nodes: &[Vec<OsString>], publish: &[String]) -> Result<()> {
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(PUBLISHING_AT_ONCE));
    let mut running = Vec::with_capacity(nodes.len());
    for settings in nodes {
        let mut command = node_process::command(binary);
        command.arg("publish").args(settings).args(publish);
        let permits = permits.clone();
        running.push(tokio::spawn(async move {
            let _permit = permits.acquire_owned().await?;
            node_process::run_to_end(command).await
        }));
    }
    for (i, task) in running.into_iter().enumerate() {
        task.await
            .context("a publishing task failed")?
            .with_context(|| format!("node org-{} cannot publish", i + 1))?;
    }
    Ok(())
}

/// `dpagg-node publish` processes running at once.
const PUBLISHING_AT_ONCE: usize = 8;

/// Starts `dpagg-node serve` for every node on 127.0.0.1 (a port each node picks) and returns
/// the running fleet with the URLs to dial.
async fn serve(
    binary: &Path,
    nodes: &[Vec<OsString>],
    insecure: bool,
) -> Result<(Fleet, Vec<String>)> {
    let mut fleet = Fleet::with_capacity(nodes.len());
    for settings in nodes {
        let mut command = node_process::command(binary);
        command
            .arg("serve")
            .args(settings)
            .args(["--listen", "127.0.0.1:0"]);
        fleet.spawn(command)?;
    }
    let urls = fleet.urls(!insecure).await?;
    Ok((fleet, urls))
}

/// The guarantee of what the nodes are asked to publish, read under replace-one: exactly what
/// the aggregator accepts.
fn requested_guarantee(spec: &LearnerSpec) -> Result<PrivacyGuarantee> {
    Ok(spec.build()?.guarantee().as_replace_one())
}

/// The aggregator's settings for the demo: its own `data`, the nodes' `schema`, the `test` file,
/// and no nodes yet (their URLs are added once [`serve`] has started them).
fn aggregator_config(
    args: &Args,
    spec: &LearnerSpec,
    accepted: &PrivacyGuarantee,
    data: PathBuf,
    schema: PathBuf,
    test: PathBuf,
) -> RunConfig {
    RunConfig {
        data,
        schema,
        nodes: Vec::new(),
        out: args.out.clone(),
        metrics_textfile: None,
        security: Security::Insecure { signing_keys: None },
        request: LearnerRequest::Spec {
            spec: spec.clone(),
            publish: false,
        },
        accept: Acceptance {
            max_epsilon: accepted.epsilon,
            max_delta: accepted.delta,
            schema_must_match: true,
            allow_seeded: false,
            allow_unproven: args.allow_unproven,
            require_noise_as_sampled: false,
            min_learners: 1,
        },
        network: Network {
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(10),
            retries: 2,
            backoff: Duration::from_millis(100),
            concurrency: 32,
        },
        beta: args.beta,
        seed: args.seed,
        test: TestSet::File(test),
        map: None,
        synthetic: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};

    /// The nodes train exactly what the aggregator asks for: every number reads back to the
    /// same bits.
    #[test]
    fn publish_flags_read_back_to_the_spec() {
        let spec = LearnerSpec {
            kind: MechanismKind::DpSgd,
            epsilon: 0.1 + 0.2,
            delta: 1e-7,
            l2: Lambda::Fixed(1.0 / 3.0),
            options: [("steps".to_owned(), 500.0)].into_iter().collect(),
            map: None,
        };
        let flags = publish_flags("dp-sgd", &spec);
        let value = |flag: &str| {
            let at = flags.iter().position(|f| f == flag).expect(flag);
            flags[at + 1].clone()
        };
        assert_eq!(value("--mechanism"), "dp-sgd");
        assert_eq!(value("--epsilon").parse::<f64>().ok(), Some(spec.epsilon));
        assert_eq!(value("--delta").parse::<f64>().ok(), Some(spec.delta));
        assert_eq!(value("--lambda").parse::<Lambda>().ok(), Some(spec.l2));
        assert_eq!(value("--option"), "steps=500");
        let auto = LearnerSpec {
            l2: Lambda::Auto,
            ..spec
        };
        assert_eq!(publish_flags("dp-sgd", &auto)[7], "auto");
    }
}
