//! `dpagg-aggregator experiment`: the reproduction of Minami et al. 2015, §5 end to end, with a
//! tiny trial count — every file written, CSVs byte-identical for a seed, figures valid SVG and
//! PNG.

use dpagg_tests::{assert_one_line_error, assert_success, run};
use std::fs;
use std::path::Path;
use std::process::Output;

const CSVS: [&str; 10] = [
    "fig3_synthetic.csv",
    "fig4_breast_cancer.csv",
    "fig5_diabetes.csv",
    "fig6_mechanisms.csv",
    "fig7_aggregators.csv",
    "table2_improved.csv",
    "paper_vs_ours.csv",
    "runs_synthetic.csv",
    "runs_breast-cancer.csv",
    "runs_diabetes.csv",
];

const FIGURES: [&str; 5] = [
    "fig3_synthetic",
    "fig4_breast_cancer",
    "fig5_diabetes",
    "fig6_mechanisms",
    "fig7_aggregators",
];

/// `dpagg-aggregator experiment <command> --out <dir> <extra…>`, run in `cwd`.
fn experiment(command: &str, dir: &Path, cwd: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "experiment",
        command,
        "--out",
        dir.to_str().expect("utf8 path"),
    ];
    args.extend_from_slice(extra);
    run("dpagg-aggregator", &args, cwd)
}

fn paper(dir: &Path, seed: &str) {
    let out = experiment(
        "paper",
        dir,
        dir.parent().expect("parent"),
        &["--trials", "1", "--seed", seed],
    );
    assert!(
        out.status.success(),
        "experiment paper failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("synthetic: local-only mean accuracy"),
        "{stdout}"
    );
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `stem.svg` and `stem.png` in `a` are valid, and the PNG is the same in `b`.
fn assert_figure(a: &Path, b: &Path, stem: &str) {
    let svg = String::from_utf8(read(a, &format!("{stem}.svg"))).expect("SVG is UTF-8");
    assert!(
        svg.starts_with("<svg"),
        "{stem}.svg does not start with <svg"
    );
    assert!(
        svg.trim_end().ends_with("</svg>"),
        "{stem}.svg is not closed"
    );
    assert!(
        svg.contains("<text"),
        "{stem}.svg has no text (axis labels, legend)"
    );
    assert!(
        svg.contains("privacy parameter"),
        "{stem}.svg lacks its x label"
    );
    let png = read(a, &format!("{stem}.png"));
    assert!(png.len() > 1000, "{stem}.png is too small");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png signature");
    assert_eq!(&png[12..16], b"IHDR", "{stem}.png header chunk");
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert!(
        width >= 800 && height >= 500,
        "{stem}.png is {width}×{height}"
    );
    assert!(png.ends_with(b"IEND\xaeB`\x82"), "{stem}.png is truncated");
    // Figures are a function of the runs too.
    assert_eq!(png, read(b, &format!("{stem}.png")), "{stem}.png differs");
}

/// Table 2, the paper's numbers and every mechanism are in `dir`'s tables.
fn assert_tables(dir: &Path) {
    let table2 = String::from_utf8(read(dir, "table2_improved.csv")).expect("utf8");
    assert!(table2.starts_with("epsilon,paper,ours_mean"));
    assert!(table2.contains("\n0.1,88.0000,"), "{table2}");
    assert_eq!(table2.lines().count(), 11);
    let cmp = String::from_utf8(read(dir, "paper_vs_ours.csv")).expect("utf8");
    for paper_value in ["0.9990", "0.5590", "0.9730"] {
        assert!(
            cmp.contains(paper_value),
            "paper value {paper_value} missing"
        );
    }
    let mechanisms = String::from_utf8(read(dir, "fig6_mechanisms.csv")).expect("utf8");
    for m in [
        "objective perturbation",
        "output perturbation",
        "DP-SGD",
        "Gibbs posterior",
        "Langevin chain",
    ] {
        assert!(
            mechanisms.contains(m),
            "{m} missing from fig6_mechanisms.csv"
        );
    }
    // BST refuses ε > 1 and the proven Gibbs sampler needs too many steps: both say so.
    assert!(mechanisms.contains("refused:"));
}

#[test]
fn paper_writes_every_figure_and_is_reproducible() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    paper(&a, "7");
    paper(&b, "7");
    paper(&c, "8");
    for name in CSVS {
        let bytes = read(&a, name);
        assert!(bytes.len() > 20, "{name} is too short");
        assert_eq!(
            bytes,
            read(&b, name),
            "{name} differs between runs with one seed"
        );
    }
    assert_ne!(
        read(&a, "runs_synthetic.csv"),
        read(&c, "runs_synthetic.csv"),
        "another seed gives the same runs"
    );
    for stem in FIGURES {
        assert_figure(&a, &b, stem);
    }
    assert_tables(&a);
}

#[test]
fn variants_write_their_table() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("v");
    assert_success(&experiment(
        "variants",
        &dir,
        tmp.path(),
        &["--trials", "1"],
    ));
    let md = String::from_utf8(read(&dir, "variants.md")).expect("utf8");
    assert!(md.contains("| paper setup |") && md.contains("| row-unit normalisation |"));
    let csv = String::from_utf8(read(&dir, "variants.csv")).expect("utf8");
    assert!(csv.starts_with("dataset,variant,epsilon,aggregate_mean"));
}

#[test]
fn learners_write_their_tables_splits_and_figures_reproducibly() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for dir in [&a, &b] {
        let args = ["--trials", "2", "--epsilons", "1,2"];
        assert_success(&experiment("learners", dir, tmp.path(), &args));
    }
    for name in [
        "learners.csv",
        "learners_trials.csv",
        "splits.csv",
        "synthetic.csv",
        "clinic.csv",
    ] {
        assert_eq!(
            read(&a, name),
            read(&b, name),
            "{name} differs for one seed"
        );
    }
    let splits = String::from_utf8(read(&a, "splits.csv")).expect("utf8");
    // Three datasets × two sizes × two trials, and the clinic at one hospital's size × two
    // trials, each line train and test row indices.
    assert_eq!(splits.lines().count(), 1 + 3 * 2 * 2 + 2);
    assert!(splits.starts_with("dataset,size,trial,peer_seed,train,test"));
    let synthetic = String::from_utf8(read(&a, "synthetic.csv")).expect("utf8");
    assert_eq!(synthetic.lines().count(), 1 + 5000 + 1000);
    let clinic = String::from_utf8(read(&a, "clinic.csv")).expect("utf8");
    assert_eq!(clinic.lines().count(), 1 + 18_000 + 5_000);
    let trials = String::from_utf8(read(&a, "learners_trials.csv")).expect("utf8");
    // (3 datasets × 2 sizes + the clinic's one) × 2 trials × 8 learners × 2 ε.
    assert_eq!(trials.lines().count(), 1 + (3 * 2 + 1) * 2 * 8 * 2);
    assert!(!trials.contains("refused"), "{trials}");
    let md = String::from_utf8(read(&a, "learners.md")).expect("utf8");
    for needle in [
        "**diabetes, all (600 training rows)**",
        "**breast-cancer, org (40 training rows)**",
        "**clinic, org (2000 training rows)**",
        "| objective perturbation (default), ε-DP |",
        "| paper setup: Algorithm 2, λ = 0.01, paper map |",
        "| Langevin chain (noisy GD, proven), (ε, δ) |",
    ] {
        assert!(md.contains(needle), "{needle} missing from learners.md");
    }
    for stem in ["learners_org", "learners_all"] {
        assert_figure(&a, &b, stem);
    }
}

#[test]
fn bad_experiment_input_is_a_one_line_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("x");
    let out = experiment("paper", &dir, tmp.path(), &["--trials", "0"]);
    assert_one_line_error(&out, &["trials"]);
    let out = experiment("paper", &dir, tmp.path(), &["--lambda=-1"]);
    assert_one_line_error(&out, &["lambda"]);
    let out = experiment("learners", &dir, tmp.path(), &["--trials", "0"]);
    assert_one_line_error(&out, &["trials"]);
    let out = experiment("learners", &dir, tmp.path(), &["--epsilons", "1,0"]);
    assert_one_line_error(&out, &["epsilon"]);
}

/// `experiment lambda` on a small grid: every cell of every candidate written, the
/// fitted constant printed, the same seed giving the same CSVs, and bad grids refused.
#[test]
fn lambda_fits_a_constant_reproducibly_and_refuses_bad_grids() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let grid = [
        "--mechanism",
        "objective-perturbation",
        "--delta",
        "0",
        "--trials",
        "3",
        "--rows",
        "40,500",
        "--dims",
        "5",
        "--epsilons",
        "1",
        "--constants",
        "2,8,60",
    ];
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for dir in [&a, &b] {
        let out = experiment("lambda", dir, tmp.path(), &grid);
        assert_success(&out);
        assert!(String::from_utf8_lossy(&out.stdout).contains("fitted constant: C = "));
    }
    let cells = String::from_utf8(read(&a, "lambda_cells.csv")).expect("utf8");
    // 3 shapes × 2 n × 1 d × 1 ε cells × 3 candidates, and the header.
    assert_eq!(cells.lines().count(), 1 + 3 * 2 * 3);
    for name in ["lambda_cells.csv", "lambda_summary.csv", "lambda.md"] {
        assert_eq!(read(&a, name), read(&b, name), "{name}");
    }
    let dir = tmp.path().join("x");
    for (bad, needle) in [
        (["--constants", "0,8"], "constants"),
        (["--dims", "1"], "dims"),
        (["--rows", "1"], "rows"),
        (["--trials", "0"], "trials"),
        (["--mechanism", "nope"], "mechanism"),
    ] {
        let out = experiment("lambda", &dir, tmp.path(), &bad);
        assert_one_line_error(&out, &[needle]);
    }
    // An (ε, δ) mechanism at δ = 0 is refused before any work, naming the mechanism.
    let out = experiment("lambda", &dir, tmp.path(), &["--delta", "0"]);
    assert_one_line_error(&out, &["langevin"]);
}
