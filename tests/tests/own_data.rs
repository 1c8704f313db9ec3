//! Own data end to end: a CSV as a hospital exports it, `schema init`, observed bounds refused
//! until replaced, `check` and its traps (`--strict`), `experiment utility --dataset`, and
//! `predict` with its one-line errors. (`tests/own_data_steps.sh` runs docs/own-data.md, and
//! `tests/aggregator.rs` checks that `predict` reproduces a run's test accuracy.)

use dpagg_tests::{assert_one_line_error, assert_success, run};
use std::fs;
use std::path::Path;

/// An Excel-style export: BOM, `;`, CRLF, decimal commas, blank and `NA` cells, an id column.
fn export(rows: usize) -> String {
    let mut s = String::from("\u{feff}id;age;insulin;outcome\r\n");
    for i in 0..rows {
        let age = 20 + (i * 7) % 60;
        let insulin = match i % 9 {
            0 => "NA".to_owned(),
            1 => String::new(),
            _ => format!("{},{}", 15 + (i * 37) % 800, i % 10),
        };
        let sick = (age > 45) ^ (i % 5 == 0);
        let outcome = if sick { "yes" } else { "no" };
        s.push_str(&format!("P{i};{age};{insulin};{outcome}\r\n"));
    }
    s
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn node(dir: &Path, args: &[&str]) -> std::process::Output {
    run("dpagg-node", args, dir)
}

/// The draft's bounds are marked observed: check warns, --strict and every release refuse,
/// and once they are replaced the same commands pass.
#[test]
fn schema_init_then_public_bounds_then_check_and_publish() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    fs::write(d.join("visits.csv"), export(120)).expect("write");
    let init = node(
        d,
        &[
            "schema",
            "init",
            "--data",
            "visits.csv",
            "--label",
            "outcome",
        ],
    );
    assert_success(&init);
    let said = stdout(&init);
    assert!(
        said.starts_with(
            "wrote visits.schema.toml: 2 numeric and 0 categorical feature(s) from 120 rows"
        ),
        "{said}"
    );
    assert!(
        said.contains(
            "left out `id` (neither numbers nor a few categories): 120 cell(s) are text, first on line 2"
        ),
        "{said}"
    );
    let schema = fs::read_to_string(d.join("visits.schema.toml")).expect("schema");
    assert!(schema.contains("separator = \";\"") && schema.contains("missing = [\"\", \"NA\"]"));
    let observed = schema
        .lines()
        .filter(|l| l.starts_with("bounds = \"observed\""))
        .count();
    assert_eq!(observed, 2, "{schema}");
    // A second init does not overwrite it.
    let again = node(
        d,
        &[
            "schema",
            "init",
            "--data",
            "visits.csv",
            "--label",
            "outcome",
        ],
    );
    assert_one_line_error(&again, &["visits.schema.toml: exists", "--force"]);

    let check = |strict: bool| {
        let mut args = vec![
            "check",
            "--data",
            "visits.csv",
            "--schema",
            "visits.schema.toml",
        ];
        if strict {
            args.push("--strict");
        }
        node(d, &args)
    };
    let loose = check(false);
    assert_success(&loose);
    assert!(
        stdout(&loose).contains("warning: 2 feature(s) still have bounds observed in the data"),
        "{}",
        stdout(&loose)
    );
    assert_one_line_error(
        &check(true),
        &["visits.schema.toml: 1 warning(s) (--strict)"],
    );
    let publish = [
        "publish",
        "--insecure",
        "--organisation-id",
        "h",
        "--data",
        "visits.csv",
        "--schema",
        "visits.schema.toml",
        "--state-dir",
        "state",
        "--epsilon-total",
        "5",
        "--delta-total",
        "1e-5",
        "--epsilon",
        "1",
    ];
    assert_one_line_error(
        &node(d, &publish),
        &["visits.schema.toml: feature `age` and 1 more: bounds observed in the data"],
    );

    // Public bounds: the same file then checks clean and publishes.
    let public = schema
        .replace("bounds = \"observed\"", "")
        .replace("lo = 20.0\nhi = 80.0", "lo = 18.0\nhi = 100.0");
    fs::write(d.join("visits.schema.toml"), public).expect("write");
    let strict = check(true);
    assert_success(&strict);
    let text = stdout(&strict);
    assert!(text.contains("no trap found"), "{text}");
    assert!(
        text.contains("120 rows (") && text.contains("missing value(s) of `insulin`"),
        "{text}"
    );
    assert_success(&node(d, &publish));
}

/// A log1p feature whose centre was written in raw units is a warning with the fix, and
/// `--strict` fails on it.
#[test]
fn a_raw_unit_centre_is_warned_about_and_fails_strict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    fs::write(d.join("visits.csv"), export(200)).expect("write");
    let schema = "name = \"v\"\n[csv]\nmissing = [\"\", \"NA\"]\n[label]\ncolumn = \"outcome\"\npositive = \"yes\"\nnegative = \"no\"\n\
                  [[features]]\nname = \"age\"\nlo = 18.0\nhi = 100.0\n\
                  [[features]]\nname = \"insulin\"\nlo = 0.0\nhi = 1000.0\ntransform = \"log1p\"\ncenter = 200.0\nscale = 1.0\n";
    fs::write(d.join("v.toml"), schema).expect("write");
    let loose = node(d, &["check", "--data", "visits.csv", "--schema", "v.toml"]);
    assert_success(&loose);
    let text = stdout(&loose);
    assert!(
        text.contains(
            "warning: feature `insulin`: center 200 is outside its transformed bounds [0, 6.908755]"
        ),
        "{text}"
    );
    assert!(text.contains("a raw centre of 200 is 5.303305"), "{text}");
    assert!(
        text.contains(
            "warning: feature `insulin`: 77 % of its values standardise more than 5 scales"
        ),
        "{text}"
    );
    let strict = node(
        d,
        &[
            "check",
            "--data",
            "visits.csv",
            "--schema",
            "v.toml",
            "--strict",
        ],
    );
    assert_one_line_error(&strict, &["v.toml: 2 warning(s) (--strict)"]);
    // The loader says so too, where a node would load the file (stderr, warn level).
    let fixed = schema.replace("center = 200.0\nscale = 1.0\n", "");
    fs::write(d.join("v.toml"), fixed).expect("write");
    let ok = node(
        d,
        &[
            "check",
            "--data",
            "visits.csv",
            "--schema",
            "v.toml",
            "--strict",
        ],
    );
    assert_success(&ok);
}

/// Errors in a CRLF export name the line an editor shows; an undeclared `NA` says how to
/// declare it; a comma-declared schema on a `;` file names the separator it saw.
#[test]
fn export_errors_name_the_right_line_and_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let schema = "name = \"v\"\n[label]\ncolumn = \"outcome\"\npositive = \"yes\"\nnegative = \"no\"\n\
                  [[features]]\nname = \"age\"\nlo = 18.0\nhi = 100.0\n";
    fs::write(d.join("v.toml"), schema).expect("write");
    fs::write(
        d.join("a.csv"),
        "age;outcome\r\n30;yes\r\n40;no\r\nNA;no\r\n",
    )
    .expect("write");
    let out = node(d, &["check", "--data", "a.csv", "--schema", "v.toml"]);
    assert_one_line_error(
        &out,
        &[
            "a.csv:4: column `age`: not a number: \"NA\"",
            "e.g. [csv] missing = [\"NA\"]",
        ],
    );
    let comma = schema.replace("[label]", "[csv]\nseparator = \",\"\n[label]");
    fs::write(d.join("c.toml"), comma).expect("write");
    let out = node(d, &["check", "--data", "a.csv", "--schema", "c.toml"]);
    assert_one_line_error(
        &out,
        &[
            "a.csv:1: column `age`: schema feature missing from the header (header read with separator ','",
            "it seems to use ';'",
        ],
    );
    fs::write(d.join("l.csv"), b"age,outcome\n30,yes\n4\xb0,no\n").expect("write");
    let out = node(d, &["check", "--data", "l.csv", "--schema", "v.toml"]);
    assert_one_line_error(
        &out,
        &[
            "l.csv:3: not UTF-8 text (byte 0xb0)",
            "save the file as UTF-8",
        ],
    );
}

/// `experiment utility --dataset` answers the question on any CSV and writes its splits.
#[test]
fn experiment_utility_on_a_csv_answers_and_writes_its_splits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    fs::write(d.join("visits.csv"), export(400)).expect("write");
    let schema = "name = \"v\"\n[csv]\nmissing = [\"\", \"NA\"]\n[label]\ncolumn = \"outcome\"\npositive = \"yes\"\nnegative = \"no\"\n\
                  [[features]]\nname = \"age\"\nlo = 18.0\nhi = 100.0\n\
                  [[features]]\nname = \"insulin\"\nlo = 0.0\nhi = 1000.0\ntransform = \"log1p\"\nunit = 10.0\n";
    fs::write(d.join("v.toml"), schema).expect("write");
    let args = [
        "experiment",
        "utility",
        "--dataset",
        "visits.csv",
        "--schema",
        "v.toml",
        "--trials",
        "3",
        "--epsilons",
        "1",
        "--rows-per-org",
        "40,100,100,80",
        "--out",
        "out",
    ];
    let out = run("dpagg-aggregator", &args, d);
    assert_success(&out);
    let text = stdout(&out);
    assert!(text.contains("| visits | 1 |"), "{text}");
    assert!(text.contains("Joining"), "{text}");
    let splits = fs::read_to_string(d.join("out/utility_splits.csv")).expect("splits");
    let own: Vec<&str> = splits.lines().filter(|l| l.starts_with("0,own,")).collect();
    assert_eq!(own.len(), 1, "{splits}");
    assert_eq!(own[0].trim_start_matches("0,own,").split(' ').count(), 40);
    assert_eq!(splits.lines().filter(|l| l.starts_with("2,")).count(), 5);
    let bad = run(
        "dpagg-aggregator",
        &[
            "experiment",
            "utility",
            "--dataset",
            "visits.csv",
            "--schema",
            "v.toml",
            "--test-fraction",
            "1.5",
            "--out",
            "o",
        ],
        d,
    );
    assert_one_line_error(&bad, &["--test-fraction: 1.5 is not in (0, 1)"]);
}

/// `predict` refuses a model it cannot trust or rows it cannot map, in one line.
#[test]
fn predict_refuses_bad_models_and_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    fs::write(d.join("rows.csv"), "age,outcome\n30,yes\n").expect("write");
    fs::write(d.join("junk.json"), "{\"weights\": [1]}").expect("write");
    let out = run(
        "dpagg-aggregator",
        &["predict", "--model", "junk.json", "--data", "rows.csv"],
        d,
    );
    assert_one_line_error(&out, &["junk.json: not a dpagg model.json"]);
    let out = run(
        "dpagg-aggregator",
        &["predict", "--model", "none.json", "--data", "rows.csv"],
        d,
    );
    assert_one_line_error(&out, &["none.json: cannot read"]);
}

/// `schema init --bounds` reads a data dictionary (name, lo, hi, transform, unit): the 57
/// columns it covers get their public bounds and transforms, and the one it does not stays
/// observed (refused until replaced).
#[test]
fn a_data_dictionary_fills_the_public_bounds_of_57_features() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let names: Vec<String> = (0..58).map(|j| format!("f{j}")).collect();
    let mut data = format!("{},y\n", names.join(","));
    for i in 0..80 {
        let row: Vec<String> = (0..58).map(|j| ((i * (j + 3)) % 17).to_string()).collect();
        data.push_str(&format!("{},{}\n", row.join(","), i % 2));
    }
    fs::write(d.join("wide.csv"), data).expect("write");
    let mut dict = String::from("name;lo;hi;transform;unit\n");
    for name in &names[..57] {
        let transform = if name.ends_with('0') { "log1p;1" } else { ";" };
        dict.push_str(&format!("{name};0;20;{transform}\n"));
    }
    dict.push_str("not_in_the_file;0;1;;\n");
    fs::write(d.join("dictionary.csv"), dict).expect("write");
    let init = node(
        d,
        &[
            "schema",
            "init",
            "--data",
            "wide.csv",
            "--label",
            "y",
            "--bounds",
            "dictionary.csv",
        ],
    );
    assert_success(&init);
    let said = stdout(&init);
    assert!(
        said.contains(
            "public bounds from dictionary.csv for 57 of 58 feature(s); the other 1 stay observed"
        ),
        "{said}"
    );
    assert!(
        said.contains("in the dictionary but not a numeric column of wide.csv: not_in_the_file"),
        "{said}"
    );
    let schema = fs::read_to_string(d.join("wide.schema.toml")).expect("schema");
    assert_eq!(
        schema.matches("\nbounds = \"observed\"").count(),
        1,
        "{schema}"
    );
    assert_eq!(
        schema
            .matches("# public, from the data dictionary dictionary.csv")
            .count(),
        57
    );
    assert_eq!(
        schema
            .matches("\ntransform = \"log1p\"\nunit = 1.0\n")
            .count(),
        6
    );
    let check = node(
        d,
        &[
            "check",
            "--data",
            "wide.csv",
            "--schema",
            "wide.schema.toml",
        ],
    );
    assert_success(&check);
    assert!(
        stdout(&check).contains("1 feature(s) still have bounds observed in the data (`bounds = \"observed\"`, from `schema init`): f57"),
        "{}",
        stdout(&check)
    );
}
