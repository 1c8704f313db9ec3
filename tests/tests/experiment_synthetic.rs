//! `dpagg-aggregator experiment synthetic --quick` end to end: every output written with
//! its columns, scenarios and ε, accuracies in [0, 1], paired differences consistent with them,
//! and the CSVs a function of the seed.

use dpagg_tests::{assert_one_line_error, assert_success, run};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Output;

const SCENARIOS: [&str; 3] = ["diabetes", "breast-cancer", "synthetic"];

const COLUMNS: [&str; 5] = [
    "tuned local",
    "mirror averaging",
    "synthetic pooled (rows = n)",
    "synthetic pooled (rows = fixed)",
    "centralised",
];

/// `dpagg-aggregator experiment synthetic --out <dir> <extra…>`.
fn synthetic(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "experiment",
        "synthetic",
        "--out",
        dir.to_str().expect("utf8 path"),
    ];
    args.extend_from_slice(extra);
    run(
        "dpagg-aggregator",
        &args,
        dir.parent().expect("a parent folder"),
    )
}

fn read(dir: &Path, name: &str) -> String {
    fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The rows of a CSV without quoted commas, as maps from header to field.
fn records(text: &str) -> Vec<Vec<(String, String)>> {
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .expect("a header")
        .split(',')
        .map(str::to_owned)
        .collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), header.len(), "line `{l}`");
            header
                .iter()
                .cloned()
                .zip(fields.iter().map(|f| (*f).to_owned()))
                .collect()
        })
        .collect()
}

fn field<'a>(record: &'a [(String, String)], name: &str) -> &'a str {
    record
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn number(record: &[(String, String)], name: &str) -> f64 {
    let v = field(record, name);
    v.parse()
        .unwrap_or_else(|_| panic!("{name} = {v} is not a number"))
}

#[test]
fn quick_run_writes_every_output_reproducibly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let out = synthetic(&a, &["--quick"]);
    assert_success(&out);
    assert_success(&synthetic(&b, &["--quick"]));

    // Every trial: 3 trials × 3 scenarios at ε = 1, every column an accuracy.
    let runs_text = read(&a, "synthetic_runs.csv");
    let mut header = vec!["scenario", "epsilon", "trial"];
    header.extend(COLUMNS);
    assert_eq!(runs_text.lines().next(), Some(header.join(",").as_str()));
    let runs = records(&runs_text);
    assert_eq!(runs.len(), 3 * SCENARIOS.len());
    let seen: BTreeSet<&str> = runs.iter().map(|r| field(r, "scenario")).collect();
    assert_eq!(seen, SCENARIOS.into_iter().collect());
    for r in &runs {
        assert_eq!(field(r, "epsilon"), "1");
        for c in COLUMNS {
            let acc = number(r, c);
            assert!((0.0..=1.0).contains(&acc), "{c} = {acc} in {r:?}");
        }
    }
    // The synthetic scenario's centralised model separates its data almost perfectly; no
    // private column does better than 1 and tuned local is far above chance there.
    let synthetic_runs: Vec<_> = runs
        .iter()
        .filter(|r| field(r, "scenario") == "synthetic")
        .collect();
    assert!(
        synthetic_runs
            .iter()
            .all(|r| number(r, "centralised") > 0.95)
    );
    assert!(
        synthetic_runs
            .iter()
            .all(|r| number(r, "tuned local") > 0.8)
    );

    // The summary: one line per scenario and column, the mean of the runs.
    let summary_text = read(&a, "synthetic.csv");
    assert!(summary_text.starts_with("scenario,epsilon,model,mean,sd,se,trials\n"));
    let summary = records(&summary_text);
    assert_eq!(summary.len(), SCENARIOS.len() * COLUMNS.len());
    for s in &summary {
        let (scenario, model) = (field(s, "scenario"), field(s, "model"));
        assert!(COLUMNS.contains(&model), "{model}");
        assert_eq!(field(s, "trials"), "3");
        let mean = number(s, "mean");
        assert!((0.0..=1.0).contains(&mean), "{scenario} {model}: {mean}");
        let of_runs = runs
            .iter()
            .filter(|r| field(r, "scenario") == scenario)
            .map(|r| number(r, model))
            .sum::<f64>()
            / 3.0;
        assert!(
            (mean - of_runs).abs() < 1e-3,
            "{scenario} {model}: {mean} vs {of_runs}"
        );
    }

    // Paired differences: synthetic − mirror averaging among them, with ordered intervals.
    let paired_text = read(&a, "synthetic_paired.csv");
    assert!(paired_text.starts_with("scenario,epsilon,difference,mean,low95,high95,trials\n"));
    let paired = records(&paired_text);
    assert_eq!(paired.len(), SCENARIOS.len() * 4);
    for p in &paired {
        let (low, mean, high) = (number(p, "low95"), number(p, "mean"), number(p, "high95"));
        assert!(
            low <= mean && mean <= high && (-1.0..=1.0).contains(&mean),
            "{p:?}"
        );
    }
    let differences: BTreeSet<&str> = paired.iter().map(|p| field(p, "difference")).collect();
    assert!(differences.contains("synthetic(n) - mirror averaging"));

    // The Markdown table is written and printed.
    let md = read(&a, "synthetic.md");
    assert!(md.contains("| scenario | ε | tuned local | mirror avg | synthetic (m = n) |"));
    for s in SCENARIOS {
        assert!(
            md.contains(&format!("| {s} | 1 |")),
            "{s} missing from the table"
        );
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains(&md));

    // A function of the seed.
    for name in [
        "synthetic_runs.csv",
        "synthetic.csv",
        "synthetic_paired.csv",
    ] {
        assert_eq!(
            read(&a, name),
            read(&b, name),
            "{name} differs for one seed"
        );
    }
}

#[test]
fn one_trial_is_refused_on_one_line() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = synthetic(&tmp.path().join("x"), &["--quick", "--trials", "1"]);
    assert_one_line_error(&out, &["--trials must be at least 2"]);
}
