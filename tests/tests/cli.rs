//! The binaries end to end: outputs of `simulate`, and one-line errors for bad input.

use dpagg_tests::{assert_one_line_error, assert_success, repo_root, run};
use std::fs;
use std::path::Path;
use std::process::Output;

const SCHEMA: &str = r#"
name = "toy"
intercept = true
[label]
column = "y"
positive = "yes"
negative = "no"
[[features]]
name = "a"
lo = 0.0
hi = 10.0
[[features]]
name = "b"
lo = -5.0
hi = 5.0
"#;

fn toy_csv(rows: usize) -> String {
    let mut s = String::from("a,b,y\n");
    for i in 0..rows {
        let a = (i * 7 % 11) as f64;
        let b = ((i * 3 % 9) as f64) - 4.0;
        let label = if a + b > 4.0 { "yes" } else { "no" };
        s.push_str(&format!("{a},{b},{label}\n"));
    }
    s
}

/// `summary.json` of a run written to `dir/out`.
fn summary(dir: &Path, out: &str) -> serde_json::Value {
    serde_json::from_slice(&fs::read(dir.join(out).join("summary.json")).expect("summary"))
        .expect("json")
}

/// `simulate` on synthetic data (10 organisations, ε = 0.5 and 2, 2 trials, seed 3) into `out`.
fn simulate_synthetic(dir: &Path, out: &str) -> Output {
    run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "synthetic",
            "--orgs",
            "10",
            "--epsilon",
            "0.5,2",
            "--trials",
            "2",
            "--seed",
            "3",
            "--out",
            out,
        ],
        dir,
    )
}

/// The summary names its settings, and each row its quantities.
fn assert_summary_fields(summary: &serde_json::Value) {
    for key in [
        "dataset",
        "orgs",
        "trials",
        "mechanism",
        "seed",
        "centralised_accuracy",
        "rows",
    ] {
        assert!(summary.get(key).is_some(), "summary lacks {key}");
    }
    let rows = summary["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for key in [
        "epsilon",
        "delta",
        "local_accuracy",
        "private_learner_accuracy",
        "aggregate_accuracy",
        "nonprivate_aggregate_accuracy",
        "improved_orgs",
    ] {
        assert!(rows[0].get(key).is_some(), "row lacks {key}");
    }
    assert!(
        rows[1]["aggregate_accuracy"]["mean"]
            .as_f64()
            .expect("mean")
            > 0.5
    );
}

#[test]
fn simulate_writes_summary_and_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = simulate_synthetic(dir.path(), "res");
    assert_success(&out);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("centralised") && table.contains("improved orgs"),
        "{table}"
    );
    assert_summary_fields(&summary(dir.path(), "res"));
    let runs = fs::read_to_string(dir.path().join("res/runs.csv")).expect("runs");
    assert_eq!(runs.lines().count(), 1 + 2 * 2 * 10);
    // Same seed, same bytes.
    let again = simulate_synthetic(dir.path(), "res2");
    assert!(again.status.success());
    assert_eq!(
        runs,
        fs::read_to_string(dir.path().join("res2/runs.csv")).expect("runs")
    );
}

/// `dpagg-aggregator simulate … | head -1` (and the lab's other printing commands): a reader
/// that goes away is a clean exit, never a panic, and the output files are still written.
#[test]
fn lab_commands_with_a_closed_stdout_are_a_clean_exit() {
    use dpagg_tests::{ClosePipe, assert_clean_exit_on_closed_stdout, run_closing_stdout};
    let dir = tempfile::tempdir().expect("tempdir");
    for close in [ClosePipe::AfterFirstLine, ClosePipe::Immediately] {
        let _ = fs::remove_dir_all(dir.path().join("res"));
        let args = [
            "simulate",
            "--dataset",
            "diabetes",
            "--epsilon",
            "1",
            "--trials",
            "2",
            "--out",
            "res",
        ];
        let (_, out) = run_closing_stdout("dpagg-aggregator", &args, dir.path(), close);
        assert_clean_exit_on_closed_stdout(&out);
        assert!(dir.path().join("res/runs.csv").is_file(), "{close:?}");
        let (_, out) =
            run_closing_stdout("dpagg-aggregator", &["bench", "--quick"], dir.path(), close);
        assert_clean_exit_on_closed_stdout(&out);
    }
}

/// `--private-normalisation` prints the pooled constants and their ε, changes the run, and
/// refuses data without a schema.
#[test]
fn simulate_with_private_normalisation_prints_its_constants_and_cost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let args = |out: &str, extra: &[&str]| -> Output {
        let mut a = vec![
            "simulate",
            "--dataset",
            "diabetes",
            "--epsilon",
            "1",
            "--trials",
            "2",
            "--out",
            out,
        ];
        a.extend_from_slice(extra);
        run("dpagg-aggregator", &a, dir.path())
    };
    let private = args("private", &["--private-normalisation", "5"]);
    assert_success(&private);
    let text = String::from_utf8_lossy(&private.stdout);
    assert!(
        text.contains("pooled from 10 organisations' private moments")
            && text.contains("ε = 5, δ = 0.000001 each"),
        "{text}"
    );
    assert_eq!(
        text.matches(" center ").count(),
        8,
        "one line per feature: {text}"
    );
    let declared = args("declared", &[]);
    assert_success(&declared);
    let runs =
        |name: &str| fs::read_to_string(dir.path().join(name).join("runs.csv")).expect("runs");
    assert_ne!(
        runs("private"),
        runs("declared"),
        "the constants change the run"
    );
    for (dataset, epsilon, says) in [
        ("diabetes", "0", "epsilon"),
        ("synthetic", "1", "no centres"),
    ] {
        let out = run(
            "dpagg-aggregator",
            &[
                "simulate",
                "--dataset",
                dataset,
                "--private-normalisation",
                epsilon,
                "--out",
                "bad",
            ],
            dir.path(),
        );
        assert_one_line_error(&out, &[says]);
    }
}

/// The default local baseline is tuned by cross-validation; `--local fixed` is the paper's;
/// `--rows-per-org` gives organisations of unequal sizes.
#[test]
fn simulate_tunes_the_local_baseline_and_takes_unequal_sizes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = |extra: &[&str], out: &str| {
        let mut args = vec![
            "simulate",
            "--dataset",
            "synthetic",
            "--epsilon",
            "1",
            "--trials",
            "2",
            "--out",
            out,
        ];
        args.extend_from_slice(extra);
        run("dpagg-aggregator", &args, dir.path())
    };
    let out = sim(&["--rows-per-org", "20,200,200"], "sized");
    assert_success(&out);
    let s = summary(dir.path(), "sized");
    assert_eq!(s["orgs"], 3);
    assert_eq!(s["sizes"], serde_json::json!([20, 200, 200]));
    assert_eq!(s["local_baseline"], "tuned");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("λ tuned by 5-fold cross-validation"),
        "{table}"
    );
    let fixed = sim(&["--orgs", "3", "--local", "fixed"], "fixed");
    assert_success(&fixed);
    assert_eq!(summary(dir.path(), "fixed")["local_baseline"], "fixed");
    let bad = sim(&["--rows-per-org", "5000,5000"], "bad");
    assert_one_line_error(&bad, &["need 10000 rows"]);
}

#[test]
fn simulate_on_a_csv_with_its_schema_and_on_bundled_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("toy.csv"), toy_csv(200)).expect("write");
    fs::write(dir.path().join("toy.schema.toml"), SCHEMA).expect("write");
    let out = run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "toy.csv",
            "--schema",
            "toy.schema.toml",
            "--orgs",
            "4",
            "--epsilon",
            "1",
            "--trials",
            "2",
            "--out",
            "r",
        ],
        dir.path(),
    );
    assert_success(&out);
    assert!(dir.path().join("r/summary.json").exists());
    // Bundled data works from any folder: it is compiled in.
    let out = run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "diabetes",
            "--epsilon",
            "2.5",
            "--trials",
            "1",
            "--out",
            "d",
        ],
        dir.path(),
    );
    assert_success(&out);
    let summary = summary(dir.path(), "d");
    assert_eq!(summary["orgs"], 10);
    assert_eq!(summary["rows_per_org"], 60);
}

/// `simulate --trials 1 --out o <extra…>` in `dir`.
fn sim(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["simulate", "--trials", "1", "--out", "o"];
    args.extend_from_slice(extra);
    run("dpagg-aggregator", &args, dir)
}

#[test]
fn bad_files_give_one_line_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    fs::write(p.join("toy.schema.toml"), SCHEMA).expect("write");
    fs::write(p.join("bad.schema.toml"), "name = \"x\"\n[label\n").expect("write");
    fs::write(
        p.join("swapped.schema.toml"),
        SCHEMA.replace("hi = 10.0", "hi = -1.0"),
    )
    .expect("write");
    fs::write(p.join("nonnum.csv"), "a,b,y\n1,2,yes\n3,abc,no\n").expect("write");
    fs::write(p.join("nolabel.csv"), "a,b\n1,2\n").expect("write");
    fs::write(p.join("badlabel.csv"), "a,b,y\n1,2,maybe\n").expect("write");
    fs::write(p.join("empty.csv"), "").expect("write");
    fs::write(p.join("toy.csv"), toy_csv(50)).expect("write");
    let cases: [(&str, Option<&str>, &[&str]); 9] = [
        ("missing.csv", Some("toy.schema.toml"), &["missing.csv"]),
        ("toy.csv", None, &["toy.csv", "--schema"]),
        ("toy.csv", Some("nope.toml"), &["nope.toml"]),
        ("toy.csv", Some("bad.schema.toml"), &["bad.schema.toml"]),
        (
            "toy.csv",
            Some("swapped.schema.toml"),
            &["swapped.schema.toml", "a"],
        ),
        (
            "nonnum.csv",
            Some("toy.schema.toml"),
            &["nonnum.csv", "3", "b"],
        ),
        (
            "nolabel.csv",
            Some("toy.schema.toml"),
            &["nolabel.csv", "y"],
        ),
        (
            "badlabel.csv",
            Some("toy.schema.toml"),
            &["badlabel.csv", "maybe"],
        ),
        ("empty.csv", Some("toy.schema.toml"), &["empty.csv"]),
    ];
    for (data, schema, needles) in cases {
        let mut args = vec!["--dataset", data];
        if let Some(schema) = schema {
            args.extend(["--schema", schema]);
        }
        assert_one_line_error(&sim(p, &args), needles);
    }
    assert_one_line_error(
        &sim(
            p,
            &[
                "--dataset",
                "toy.csv",
                "--schema",
                "toy.schema.toml",
                "--orgs",
                "200",
                // The toy schema uses the paper map, where λ = auto warns (and means 0.01).
                "--lambda",
                "0.01",
            ],
        ),
        &["200"],
    );
}

#[test]
fn bad_options_give_one_line_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path();
    let cases: [(&[&str], &[&str]); 6] = [
        (&["--epsilon", "0"], &["epsilon"]),
        (&["--epsilon", "1", "--delta", "1.5"], &["delta"]),
        (&["--epsilon", "1", "--lambda=-1"], &["lambda"]),
        (&["--epsilon", "1", "--beta", "0"], &["beta"]),
        (&["--epsilon", "1", "--orgs", "1"], &["orgs"]),
        (
            &[
                "--epsilon",
                "1",
                "--mechanism",
                "output-perturbation",
                "--delta",
                "0.1",
            ],
            &["delta", "output-perturbation"],
        ),
    ];
    for (options, needles) in cases {
        let mut args = vec!["--dataset", "synthetic"];
        args.extend_from_slice(options);
        assert_one_line_error(&sim(p, &args), needles);
    }
    // clap's own usage errors are not one line, but they must fail with a non-zero status.
    assert!(
        !sim(p, &["--dataset", "synthetic", "--mechanism", "magic"])
            .status
            .success()
    );
}

#[test]
fn simulate_with_output_perturbation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "breast-cancer",
            "--mechanism",
            "output-perturbation",
            "--epsilon",
            "1",
            "--trials",
            "2",
            "--out",
            "o",
        ],
        dir.path(),
    );
    assert_success(&out);
    assert_eq!(summary(dir.path(), "o")["mechanism"], "output-perturbation");
}

#[test]
fn output_folder_that_cannot_be_created_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::write(dir.path().join("file"), "x").expect("write");
    let out = run(
        "dpagg-aggregator",
        &[
            "simulate",
            "--dataset",
            "synthetic",
            "--orgs",
            "4",
            "--epsilon",
            "1",
            "--trials",
            "1",
            "--out",
            "file/sub",
        ],
        dir.path(),
    );
    assert_one_line_error(&out, &["file/sub"]);
}

#[test]
fn node_check_reports_and_rejects() {
    let root = repo_root();
    let ok = run(
        "dpagg-node",
        &[
            "check",
            "--data",
            "data/diabetes.csv",
            "--schema",
            "data/diabetes.schema.toml",
        ],
        &root,
    );
    assert_success(&ok);
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        text.contains("768 rows") && text.contains("fingerprint"),
        "{text}"
    );
    let bad = run(
        "dpagg-node",
        &[
            "check",
            "--data",
            "data/diabetes.csv",
            "--schema",
            "data/breast_cancer.schema.toml",
        ],
        &root,
    );
    assert_one_line_error(&bad, &["diabetes.csv"]);
}

/// 400 rows of 12 counts, each 0 on about three rows in four, otherwise mostly 1 to 4 with a
/// rare 10 to 39 (so the drafted bounds are [0, 40]), and an outcome that follows their sum.
fn zero_heavy_csv() -> String {
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let header: Vec<String> = (1..=12).map(|j| format!("c{j}")).collect();
    let mut s = format!("{},outcome\n", header.join(","));
    for _ in 0..400 {
        let counts: Vec<u64> = (0..12)
            .map(|_| match (next() % 4, next() % 16) {
                (0, 0) => 10 + next() % 30,
                (0, _) => 1 + next() % 4,
                _ => 0,
            })
            .collect();
        let sick = counts.iter().sum::<u64>() + next() % 6 > 8;
        for c in &counts {
            s.push_str(&format!("{c},"));
        }
        s.push_str(if sick { "yes\n" } else { "no\n" });
    }
    s
}

/// `schema init` on zero-heavy counts, with the observed bounds taken as public (their lines
/// deleted): every row maps near one point, `check --strict` fails on "rows alike"; with the
/// commented proposals accepted (uncommented) it passes.
#[test]
fn check_strict_fails_on_alike_rows_until_the_proposals_are_accepted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    fs::write(d.join("counts.csv"), zero_heavy_csv()).expect("write");
    let init = run(
        "dpagg-node",
        &[
            "schema",
            "init",
            "--data",
            "counts.csv",
            "--label",
            "outcome",
        ],
        d,
    );
    assert_success(&init);
    let said = String::from_utf8_lossy(&init.stdout).into_owned();
    assert!(said.contains("proposed for the data's shape"), "{said}");
    assert!(
        said.contains("  c12: transform = \"log1p\", typical = 0.0 ("),
        "{said}"
    );
    let draft = fs::read_to_string(d.join("counts.schema.toml")).expect("schema");
    assert_eq!(draft.matches("\n# typical = 0.0\n").count(), 12, "{draft}");
    // The user makes the bounds public: here, takes the drafted ones and deletes the lines.
    let public: String = draft
        .lines()
        .filter(|l| !l.starts_with("bounds = \"observed\""))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(d.join("counts.schema.toml"), &public).expect("write");
    let check = || {
        run(
            "dpagg-node",
            &[
                "check",
                "--data",
                "counts.csv",
                "--schema",
                "counts.schema.toml",
                "--strict",
            ],
            d,
        )
    };
    let alike = |out: &Output| -> f64 {
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("rows alike: "))
            .unwrap_or_else(|| panic!("no rows alike line: {text}"));
        line["rows alike: ".len()..]
            .split(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    let strict = check();
    assert_one_line_error(&strict, &["counts.schema.toml: 1 warning(s) (--strict)"]);
    let text = String::from_utf8_lossy(&strict.stdout).into_owned();
    assert!(text.contains("warning: rows alike: 0.9"), "{text}");
    assert!(
        text.contains("accept the transforms and typical values"),
        "{text}"
    );
    assert!(alike(&strict) > 0.9, "{text}");
    // Accepted, the zeros map to z = 0 and the rows differ.
    let accepted = public
        .replace("\n# transform = ", "\ntransform = ")
        .replace("\n# typical = ", "\ntypical = ");
    fs::write(d.join("counts.schema.toml"), accepted).expect("write");
    let ok = check();
    assert_success(&ok);
    let text = String::from_utf8_lossy(&ok.stdout).into_owned();
    assert!(text.contains("no trap found"), "{text}");
    assert!(alike(&ok) < 0.5, "{text}");
}

#[test]
fn simulate_with_every_other_mechanism() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (mechanism, options) in [
        ("dp-sgd", vec!["--option", "steps=50"]),
        ("dp-sgd-bst", vec![]),
        ("gibbs-posterior-unproven", vec!["--option", "steps=200"]),
    ] {
        let mut args = vec!["--epsilon", "0.5,1", "--trials", "1", "--out", mechanism];
        args.extend(options);
        let out = simulate_diabetes(dir.path(), mechanism, &args);
        assert!(
            out.status.success(),
            "{mechanism}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary = summary(dir.path(), mechanism);
        assert_eq!(summary["mechanism"], mechanism);
        assert_eq!(summary["rows"].as_array().expect("rows").len(), 2);
    }
    // The proven Gibbs sampler refuses, naming Proposition 13's step count.
    assert_one_line_error(
        &simulate_diabetes(
            dir.path(),
            "gibbs-posterior",
            &["--epsilon", "1", "--trials", "1"],
        ),
        &["Proposition 13", "cap"],
    );
    assert_one_line_error(
        &simulate_diabetes(dir.path(), "dp-sgd", &["--option", "stepz=3"]),
        &["stepz", "clip_norm"],
    );
}

/// `simulate --dataset diabetes --mechanism <mechanism> --delta 1e-5 <extra…>` in `dir`.
fn simulate_diabetes(dir: &Path, mechanism: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "simulate",
        "--dataset",
        "diabetes",
        "--mechanism",
        mechanism,
        "--delta",
        "1e-5",
    ];
    args.extend_from_slice(extra);
    run("dpagg-aggregator", &args, dir)
}

#[test]
fn privacy_calculators() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stdout = |args: &[&str]| {
        let out = run("dpagg-aggregator", args, dir.path());
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // eq. 13: (ε / 2)·sqrt(nλ / (1 + 2 log(1/δ))) with n = 60, λ = 0.01, ε = 1, δ = 1e-5.
    let beta = 0.5 * (0.6f64 / (1.0 + 2.0 * 1e5f64.ln())).sqrt();
    let text = stdout(&[
        "privacy",
        "gibbs-beta",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--n",
        "60",
        "--lambda",
        "0.01",
    ]);
    let first: f64 = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("beta <= "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("a number");
    assert!((first - beta).abs() < 1e-12, "{text}");
    // calibrate then dp-sgd round-trips to the target.
    let text = stdout(&[
        "privacy",
        "calibrate",
        "--q",
        "0.01",
        "--steps",
        "1000",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
    ]);
    let sigma = text
        .strip_prefix("sigma = ")
        .and_then(|l| l.split_whitespace().next())
        .expect("sigma")
        .to_owned();
    let text = stdout(&[
        "privacy", "dp-sgd", "--q", "0.01", "--sigma", &sigma, "--steps", "1000", "--delta", "1e-5",
    ]);
    let eps: f64 = text
        .strip_prefix("epsilon = ")
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("epsilon");
    assert!(eps <= 1.0 && eps > 0.999, "{text}");
    assert_one_line_error(
        &run(
            "dpagg-aggregator",
            &[
                "privacy", "dp-sgd", "--q", "2", "--sigma", "1", "--steps", "10", "--delta", "1e-5",
            ],
            dir.path(),
        ),
        &["sampling rate"],
    );
}

#[test]
fn privacy_langevin_calculator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stdout = |args: &[&str]| {
        let out = run("dpagg-aggregator", args, dir.path());
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let common = ["privacy", "langevin", "--n", "600", "--lambda", "0.01"];
    let calibrated = stdout(
        &[
            &common[..],
            &["--dim", "9", "--epsilon", "1", "--delta", "1e-5"],
        ]
        .concat(),
    );
    let eps = number_after(&calibrated, "epsilon = ");
    assert!(eps <= 1.0 && eps > 0.999, "{calibrated}");
    // η = 1/β, c = 1 − ηλ, s = 2η/n, as the proof prescribes.
    let eta = number_after(&calibrated, "eta = ");
    assert!((eta - 1.0 / 0.26).abs() < 1e-12, "{calibrated}");
    assert!((number_after(&calibrated, "c = ") - (1.0 - eta * 0.01)).abs() < 1e-12);
    assert!((number_after(&calibrated, "s = ") - 2.0 * eta / 600.0).abs() < 1e-15);
    // The raw form of the same chain gives the same curve and ε.
    let sigma = number_after(&calibrated, "sigma = ").to_string();
    let steps = number_after(&calibrated, "steps = ").to_string();
    let raw = stdout(
        &[
            &common[..],
            &[
                "--step-size",
                &eta.to_string(),
                "--noise",
                &sigma,
                "--steps",
                &steps,
                "--delta",
                "1e-5",
            ],
        ]
        .concat(),
    );
    assert_eq!(number_after(&raw, "epsilon = "), eps, "{raw}");
    assert_eq!(
        number_after(&raw, "epsilon(2) = "),
        number_after(&calibrated, "epsilon(2) = ")
    );
    // Without amplification (tiny λ, one step) the curve is one Gaussian mechanism, α s²/(2σ²).
    let one = stdout(&[
        "privacy",
        "langevin",
        "--n",
        "2",
        "--lambda",
        "1e-12",
        "--step-size",
        "1",
        "--noise",
        "2",
        "--steps",
        "1",
        "--delta",
        "1e-5",
    ]);
    assert!(
        (number_after(&one, "epsilon(2) = ") - 2.0 * 1.0 / 8.0).abs() < 1e-9,
        "{one}"
    );
    for (args, words) in [
        (
            vec!["--epsilon", "1", "--delta", "0"],
            vec!["delta", "no pure"],
        ),
        (
            vec!["--epsilon", "1", "--delta", "1e-5", "--lambda", "-1"],
            vec!["lambda"],
        ),
        (
            vec![
                "--step-size",
                "99",
                "--noise",
                "1",
                "--steps",
                "3",
                "--delta",
                "1e-5",
            ],
            vec!["step_size"],
        ),
    ] {
        let mut all = vec!["privacy", "langevin", "--n", "10"];
        if !args.contains(&"--lambda") {
            all.extend(["--lambda", "0.1"]);
        }
        all.extend(args);
        assert_one_line_error(&run("dpagg-aggregator", &all, dir.path()), &words);
    }
}

/// Whether `value` is within half a unit of the last digit of `printed` (as the paper rounds).
fn rounds_to_printed(value: f64, printed: &str) -> bool {
    let decimals = printed.split_once('.').map_or(0, |(_, f)| f.len());
    let paper: f64 = printed.parse().expect("a number");
    (value - paper).abs() <= 0.5 * 10f64.powi(-(decimals as i32))
}

/// The number after the first line prefix `prefix` in `text`.
fn number_after(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no `{prefix}` in:\n{text}"))
}

#[test]
fn privacy_mvn_rdp_reproduces_seed_003() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stdout = |args: &[&str]| {
        let out = run("dpagg-aggregator", args, dir.path());
        assert_success(&out);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // --tables: every cell of Tables 1 and 2, rows identified by their label, values as the
    // paper prints them (Table 1's rows; Table 2's α rows of the n = 10⁶ then 10⁷ blocks).
    let text = stdout(&["privacy", "mvn-rdp", "--tables"]);
    let paper: [(&str, [&str; 4]); 10] = [
        ("private n ε", ["3535.17", "62.5859", "5.80644", "0.576462"]),
        ("public n ε", ["6806.72", "3263.22", "3205.81", "3200.58"]),
        ("α = 2", ["7.49906", "9.80164", "12.1042", "14.4068"]),
        ("α = 4", ["7.34149", "8.10902", "8.8766", "9.64408"]),
        ("α = 7", ["10.9782", "11.3620", "11.7458", "12.1295"]),
        ("α = 10", ["15.1698", "15.4257", "15.6815", "15.9374"]),
        ("α = 2", ["4.893309", "7.195894", "9.498479", "11.801064"]),
        ("α = 4", ["2.111518", "2.879047", "3.646575", "4.414104"]),
        ("α = 7", ["1.776821", "2.160585", "2.54435", "2.928114"]),
        ("α = 10", ["1.954226", "2.210069", "2.465912", "2.721754"]),
    ];
    let mut lines = text.lines();
    for (label, cells) in paper {
        let line = lines
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row `{label}` in order in:\n{text}"));
        let values: Vec<f64> = line[label.len()..]
            .split_whitespace()
            .map(|v| v.parse().expect("a number"))
            .collect();
        assert_eq!(values.len(), 4, "{line}");
        for (value, printed) in values.iter().zip(cells) {
            assert!(
                rounds_to_printed(*value, printed),
                "`{label}`: {value} vs the paper's {printed}\n{text}"
            );
        }
    }
    // One release: the abstract's (2.72, 10⁻⁵)-DP at n = 10⁷ (α = 10, m = n).
    let text = stdout(&[
        "privacy",
        "mvn-rdp",
        "--n",
        "10000000",
        "--dim",
        "6",
        "--sigma",
        "0.01",
        "--alpha",
        "10",
        "--samples",
        "10000000",
        "--delta",
        "1e-5",
    ]);
    assert!(
        rounds_to_printed(number_after(&text, "epsilon = "), "2.721754"),
        "{text}"
    );
    let rdp = number_after(&text, "rdp epsilon = ");
    assert!(
        (rdp - (2.721754 - 1e5f64.ln() / 9.0)).abs() < 1e-5,
        "{text}"
    );
    assert!(
        text.contains("Theorem 3.1") && text.contains("add/remove-one"),
        "{text}"
    );
    // --public-n: Theorem 3.2, replace-one (Table 1's public-n cell at n = 10⁴).
    let text = stdout(&[
        "privacy",
        "mvn-rdp",
        "--n",
        "10000",
        "--dim",
        "6",
        "--sigma",
        "0.01",
        "--alpha",
        "4",
        "--samples",
        "10000",
        "--public-n",
    ]);
    assert!(
        rounds_to_printed(number_after(&text, "rdp epsilon = "), "6806.72"),
        "{text}"
    );
    assert!(
        text.contains("Theorem 3.2") && text.contains("replace-one"),
        "{text}"
    );
    // Beyond the theorem's range of orders: a one-line error naming the limit.
    assert_one_line_error(
        &run(
            "dpagg-aggregator",
            &[
                "privacy",
                "mvn-rdp",
                "--n",
                "10000",
                "--dim",
                "6",
                "--sigma",
                "0.01",
                "--alpha",
                "5",
                "--samples",
                "10",
            ],
            dir.path(),
        ),
        &["Theorem 3.1", "α < 4.16"],
    );
    assert_one_line_error(
        &run(
            "dpagg-aggregator",
            &[
                "privacy",
                "mvn-rdp",
                "--n",
                "10000",
                "--dim",
                "6",
                "--sigma",
                "1.5",
                "--alpha",
                "2",
                "--samples",
                "10",
            ],
            dir.path(),
        ),
        &["σ = 1.5"],
    );
}
