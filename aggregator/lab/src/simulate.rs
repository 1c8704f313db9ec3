//! `dpagg-aggregator simulate`: command-line front end of [`dpagg_shared::simulation`].

use anyhow::{Context, Result, bail};
use dpagg_shared::cli::{LearnerArgs, Out};
use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::csv::{RawRows, load_csv, load_csv_with_raw};
use dpagg_shared::data::normalise::MapMode;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::data::synthetic::SyntheticSpec;
use dpagg_shared::privacy::private_normalisation::simulate_private_constants;
use dpagg_shared::simulation::{
    DataSource, LocalBaseline, PAPER, SimulationConfig, SimulationSummary, TestSplit,
    run as run_simulation, runs_csv,
};
use dpagg_shared::util::files::{atomic_write, check_writable_dir};
use dpagg_shared::util::stats::Summary;
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;

/// Arguments of `simulate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// `synthetic`, `breast-cancer`, `diabetes` (bundled) or a path to a CSV file (needs --schema).
    #[arg(long)]
    dataset: String,
    /// Public schema (TOML) for a CSV dataset.
    #[arg(long)]
    schema: Option<PathBuf>,
    /// Number of organisations [default: 100 for synthetic, 10 otherwise (Minami et al. 2015, §5)].
    #[arg(long)]
    orgs: Option<usize>,
    /// Rows of each organisation, comma-separated (unequal sizes, e.g. 100,2000,2000); sets the
    /// number of organisations.
    #[arg(long, value_delimiter = ',', conflicts_with = "orgs")]
    rows_per_org: Vec<usize>,
    /// The non-private learners' λ: `tuned` (5-fold cross-validation on each learner's own rows:
    /// what an organisation really has alone) or `fixed` (0.01 or --lambda: the paper's baseline).
    #[arg(long, value_enum, default_value_t = Baseline::Tuned)]
    local: Baseline,
    /// Comma-separated privacy levels [default: 0.1,0.3,…,1.9 for synthetic (Fig. 3), 0.3,0.5,1,1.5,2,2.5,3 otherwise].
    #[arg(long, value_delimiter = ',')]
    epsilon: Vec<f64>,
    /// The private learners' mechanism, δ, λ (with `--local fixed` also the non-private
    /// learners' λ, 0.01 when `auto`) and options.
    #[command(flatten)]
    learner: LearnerArgs,
    /// Mirror-averaging temperature β (Minami et al. 2015, §5 uses 3; eq. 19 needs β ≥ e).
    #[arg(long, default_value_t = 3.0)]
    beta: f64,
    /// Trials with fresh partitions and noise.
    #[arg(long, default_value_t = 20)]
    trials: usize,
    /// Master seed (simulation only: seeded noise gives no privacy).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Test fraction for a CSV dataset (stratified) [default: 0.2]; the bundled datasets use
    /// the paper's test sets and synthetic data its own.
    #[arg(long)]
    test_fraction: Option<f64>,
    /// Output folder for summary.json and runs.csv [default: results/DATASET, the data set's name].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the schema's declared centres and scales (ball map) by the pooled means and
    /// standard deviations that the organisations release privately (`moments-gaussian` at this
    /// ε each, before any learner; simulated once with seeded noise). Every organisation then
    /// spends this ε too, on top of its learners'.
    #[arg(long)]
    private_normalisation: Option<f64>,
    /// δ of those moments.
    #[arg(long, default_value_t = 1e-6, requires = "private_normalisation")]
    normalisation_delta: f64,
}

/// The local baseline of `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Baseline {
    /// λ by cross-validation on the organisation's own rows.
    Tuned,
    /// The paper's fixed λ.
    Fixed,
}

/// The data to simulate on.
struct Source {
    /// Display name.
    name: String,
    /// The rows.
    data: DataSource,
    /// The default number of organisations.
    orgs: usize,
    /// The schema's name and map (`None` for synthetic data, which no schema maps).
    map: Option<(String, MapMode)>,
}

/// The schema with centres and scales from the organisations' pooled private moments; a note
/// of what they cost goes into `note` (printed with the table).
fn private_schema(
    note: &mut String,
    schema: &Schema,
    raw: &RawRows,
    orgs: usize,
    epsilon: f64,
    args: &Args,
) -> Result<Schema> {
    let orgs = if args.rows_per_org.is_empty() {
        args.orgs.unwrap_or(orgs)
    } else {
        args.rows_per_org.len()
    };
    let (schema, constants) = simulate_private_constants(
        schema,
        raw,
        orgs,
        epsilon,
        args.normalisation_delta,
        args.seed,
    )
    .context("cannot make the private normalisation")?;
    writeln!(
        note,
        "normalisation: centres and scales pooled from {orgs} organisations' private moments \
         (Gaussian mechanism, ε = {epsilon}, δ = {} each): every organisation spends this on top \
         of its learners' ε",
        args.normalisation_delta
    )?;
    for (f, (centre, scale)) in schema.features.iter().zip(&constants) {
        writeln!(
            note,
            "  {:<28} center {centre:>12.5}  scale {scale:>12.5}",
            f.name
        )?;
    }
    Ok(schema)
}

/// `--test-fraction` is in (0, 1) and given only with a CSV dataset.
fn check_test_fraction(args: &Args) -> Result<()> {
    let Some(f) = args.test_fraction else {
        return Ok(());
    };
    if !(f > 0.0 && f < 1.0) {
        bail!("--test-fraction: {f} is not in (0, 1)");
    }
    if args.schema.is_none() {
        bail!(
            "--test-fraction applies to a CSV dataset; {} has a fixed test set (the paper's)",
            args.dataset
        );
    }
    Ok(())
}

/// Resolves the data source from the arguments.
fn source(args: &Args, note: &mut String) -> Result<Source> {
    check_test_fraction(args)?;
    if args.dataset == "synthetic" {
        if args.schema.is_some() {
            bail!("--schema applies to CSV datasets, not to synthetic data");
        }
        if args.private_normalisation.is_some() {
            bail!(
                "--private-normalisation applies to datasets with a schema; synthetic data is drawn in the unit ball and has no centres or scales to release"
            );
        }
        return Ok(Source {
            name: "synthetic".into(),
            data: DataSource::Synthetic(SyntheticSpec::default()),
            orgs: 100,
            map: None,
        });
    }
    if let Some(b) = Bundled::from_name(&args.dataset) {
        if args.schema.is_some() {
            bail!(
                "--schema applies to CSV datasets; {} has its own bundled schema",
                b.name()
            );
        }
        let split = b.paper_split();
        let (data, _report) = match args.private_normalisation {
            None => b.load(),
            Some(epsilon) => {
                let schema =
                    private_schema(note, &b.schema(), &b.load_raw(), split.orgs, epsilon, args)?;
                b.load_with(&schema)
            }
        };
        let test = TestSplit::Counts {
            positive: split.test_positive,
            negative: split.test_negative,
        };
        return Ok(Source {
            name: b.name().into(),
            data: DataSource::Fixed { data, test },
            orgs: split.orgs,
            map: Some((b.name().to_owned(), b.schema().mode())),
        });
    }
    csv_source(args, note)
}

/// A CSV dataset with its `--schema`.
fn csv_source(args: &Args, note: &mut String) -> Result<Source> {
    let path = PathBuf::from(&args.dataset);
    let Some(schema_path) = &args.schema else {
        bail!(
            "--dataset {}: not a bundled dataset (synthetic, breast-cancer, diabetes), so a CSV file that needs --schema FILE",
            args.dataset
        );
    };
    let mut schema = Schema::load(schema_path)?;
    if let Some(epsilon) = args.private_normalisation {
        let (_, raw, _) = load_csv_with_raw(&path, &schema)?;
        schema = private_schema(note, &schema, &raw, args.orgs.unwrap_or(10), epsilon, args)?;
    }
    let (data, report) = load_csv(&path, &schema)?;
    if report.total_clipped() > 0 {
        tracing::warn!(
            clipped = report.total_clipped(),
            "values outside the schema bounds were clipped (see the per-feature counts above)"
        );
    }
    let name = path.file_stem().map_or_else(
        || args.dataset.clone(),
        |s| s.to_string_lossy().into_owned(),
    );
    Ok(Source {
        name,
        data: DataSource::Fixed {
            data,
            test: TestSplit::Fraction(args.test_fraction.unwrap_or(0.2)),
        },
        orgs: 10,
        map: Some((schema.name.clone(), schema.mode())),
    })
}

/// The ε levels: `--epsilon`, or the paper's grid for the dataset (§5.1: 0.1 … 1.9 on synthetic
/// data; 0.3 … 3 on the real datasets).
fn epsilons(args: &Args, name: &str) -> Vec<f64> {
    if !args.epsilon.is_empty() {
        args.epsilon.clone()
    } else if name == "synthetic" {
        (0..10)
            .map(|i| 0.1 + 0.2 * i as f64)
            .map(|e| (e * 10.0).round() / 10.0)
            .collect()
    } else {
        vec![0.3, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
    }
}

/// Runs `simulate`.
pub fn run(args: Args, stdout: &mut Out) -> Result<()> {
    let mut note = String::new();
    let Source {
        name,
        data: source,
        orgs: default_orgs,
        map,
    } = source(&args, &mut note)?;
    let lambda = match map {
        Some((schema, MapMode::Paper)) => args.learner.lambda.for_paper_map(&schema),
        _ => args.learner.lambda,
    };
    let epsilons = epsilons(&args, &name);
    let config = SimulationConfig {
        dataset: name.clone(),
        source,
        orgs: if args.rows_per_org.is_empty() {
            args.orgs.unwrap_or(default_orgs)
        } else {
            args.rows_per_org.len()
        },
        mechanism: args.learner.mechanism,
        epsilons,
        delta: args.learner.delta,
        lambda,
        local_lambda: None,
        local_baseline: match args.local {
            Baseline::Tuned => LocalBaseline::Tuned,
            Baseline::Fixed => LocalBaseline::Fixed,
        },
        rows_per_org: (!args.rows_per_org.is_empty()).then(|| args.rows_per_org.clone()),
        beta: args.beta,
        trials: args.trials,
        seed: args.seed,
        options: args.learner.options(),
        combiners: Default::default(),
    };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&name));
    // Checked now, created only when there is something to write.
    check_writable_dir(&out)
        .with_context(|| format!("cannot write to output folder {}", out.display()))?;
    let bar = ProgressBar::new((config.epsilons.len() * config.trials) as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} (ε, trial) {elapsed_precise} eta {eta}",
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .progress_chars("=> "),
    );
    bar.set_prefix(format!("simulate {name}"));
    let (summary, runs) = run_simulation(&config, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let printed = write!(stdout, "{note}").and_then(|()| print_table(stdout, &summary));
    let json = serde_json::to_vec_pretty(&summary).context("cannot serialise the summary")?;
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create output folder {}", out.display()))?;
    let summary_path = out.join("summary.json");
    atomic_write(&summary_path, &json)
        .with_context(|| format!("cannot write {}", summary_path.display()))?;
    let runs_path = out.join("runs.csv");
    let csv = runs_csv(&runs).context("cannot serialise runs")?;
    atomic_write(&runs_path, &csv)
        .with_context(|| format!("cannot write {}", runs_path.display()))?;
    printed?;
    writeln!(
        stdout,
        "\nwrote {} and {}",
        summary_path.display(),
        runs_path.display()
    )?;
    Ok(())
}

fn cell(s: &Summary) -> String {
    format!("{:.3} ± {:.3}", s.mean, s.sd)
}

fn print_table(stdout: &mut Out, s: &SimulationSummary) -> std::io::Result<()> {
    let lambda = match (s.lambda_auto, s.local_baseline) {
        (true, LocalBaseline::Tuned) => "auto; non-private learners tuned".to_owned(),
        (true, LocalBaseline::Fixed) => format!("auto; non-private learners {}", s.lambda),
        (false, _) => s.lambda.to_string(),
    };
    let rows = s.sizes.as_ref().map_or_else(
        || format!("{} rows", s.rows_per_org),
        |sizes| format!("{sizes:?} rows"),
    );
    writeln!(
        stdout,
        "{} — {} organisations × {rows}, {} trials, {} (λ = {lambda}, β = {}, seed {})",
        s.dataset, s.orgs, s.trials, s.mechanism, s.beta, s.seed
    )?;
    writeln!(
        stdout,
        "local and centralised: {}",
        match s.local_baseline {
            LocalBaseline::Tuned =>
                "non-private, λ tuned by 5-fold cross-validation on their own rows",
            LocalBaseline::Fixed => "non-private at the fixed λ above (the paper's baseline)",
        }
    )?;
    writeln!(
        stdout,
        "centralised (all training data, non-private): {:.3}\n",
        s.centralised_accuracy
    )?;
    writeln!(
        stdout,
        "{:>6} {:>8} {:>8} | {:>15} {:>15} {:>15} {:>15} | {:>15}",
        "ε", "δ", "λ", "local", "private learner", "aggregate", "non-private agg", "improved orgs"
    )?;
    for r in &s.rows {
        writeln!(
            stdout,
            "{:>6} {:>8} {:>8} | {:>15} {:>15} {:>15} {:>15} | {:>15}",
            r.epsilon,
            r.delta,
            r.private_lambda
                .map_or_else(|| "?".into(), |l| format!("{l:.4}")),
            cell(&r.local_accuracy),
            cell(&r.private_learner_accuracy),
            cell(r.accuracy(PAPER)),
            cell(&r.nonprivate_aggregate_accuracy),
            format!(
                "{:.1} ± {:.1} / {}",
                r.improved_orgs.mean, r.improved_orgs.sd, s.orgs
            )
        )?;
    }
    Ok(())
}
