//! Tests of the CSV loader: formats, errors with their lines, the maps.
use super::*;

const SCHEMA: &str = r#"
name = "toy"
[normalisation]
mode = "paper"
[label]
column = "outcome"
positive = "pos"
negative = "neg"
[[features]]
name = "glucose"
lo = 0.0
hi = 200.0
[[features]]
name = "age"
lo = 20.0
hi = 90.0
"#;

fn schema() -> Schema {
    Schema::from_toml_str(SCHEMA, "toy.schema.toml").expect("valid schema")
}

fn read(text: &str) -> Result<(Dataset, LoadReport), DataError> {
    read_csv(text.as_bytes(), "data.csv", &schema())
}

/// Asserts the error is one line, starts with `data.csv:{line}` and mentions `needle`.
fn check_msg(e: &DataError, line: u64, needle: &str) {
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.starts_with(&format!("data.csv:{line}:")), "{msg}");
    assert!(msg.contains(needle), "{msg} should contain {needle}");
}

#[test]
fn loads_quoted_reordered_with_extra_columns() {
    let text = "\"age\",\"id\",\"outcome\",\"glucose\"\n55,\"a\",\"pos\",100\n 20 , b , neg , 250\n90,c,pos,-1e3\n";
    let (d, report) = read(text).expect("loads");
    assert_eq!(d.len(), 3);
    assert_eq!(d.dim(), 3);
    assert_eq!(d.labels(), &[1.0, -1.0, 1.0]);
    let r3 = 3f64.sqrt();
    // glucose 100 → 0, age 55 → 0, intercept 1: all divided by sqrt(3).
    let want = [0.0, 0.0, 1.0 / r3];
    assert!(
        d.row(0)
            .iter()
            .zip(want)
            .all(|(a, b)| (a - b).abs() < 1e-15),
        "{:?}",
        d.row(0)
    );
    // glucose 250 clipped to 200 → +1, age 20 → −1.
    let want = [1.0 / r3, -1.0 / r3, 1.0 / r3];
    assert!(
        d.row(1)
            .iter()
            .zip(want)
            .all(|(a, b)| (a - b).abs() < 1e-15),
        "{:?}",
        d.row(1)
    );
    assert_eq!(report.rows, 3);
    assert_eq!(
        report.clipped,
        vec![("glucose".to_owned(), 2), ("age".to_owned(), 0)]
    );
    assert_eq!(report.total_clipped(), 2);
    assert_eq!(report.ignored, vec!["id".to_owned()]);
    assert!(d.max_row_norm() <= 1.0);
}

#[test]
fn accepts_crlf_bom_and_blank_trailing_line() {
    let text = "\u{feff}glucose,age,outcome\r\n100,30,neg\r\n\r\n";
    let (d, report) = read(text).expect("loads");
    assert_eq!(d.len(), 1);
    assert_eq!(report.rows, 1);
}

#[test]
fn load_csv_reads_a_file_and_names_a_missing_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("data.csv");
    std::fs::write(&p, "glucose,age,outcome\n100,30,neg\n").expect("write");
    let (d, _) = load_csv(&p, &schema()).expect("loads");
    assert_eq!(d.len(), 1);
    let missing = dir.path().join("nope.csv");
    let e = load_csv(&missing, &schema()).expect_err("missing");
    assert!(matches!(e, DataError::Io { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}: cannot read", missing.display())),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn empty_file() {
    for text in ["", "\n", "\n\n"] {
        let e = read(text).expect_err("empty");
        assert!(matches!(e, DataError::Empty { .. }), "{text:?}: {e:?}");
        check_msg(&e, 1, "empty file");
    }
}

#[test]
fn header_only() {
    for text in [
        "glucose,age,outcome",
        "glucose,age,outcome\n",
        "glucose,age,outcome\n\n",
    ] {
        let e = read(text).expect_err("no rows");
        assert!(matches!(e, DataError::NoRows { .. }), "{e:?}");
        check_msg(&e, 1, "no data rows");
    }
}

#[test]
fn missing_feature_column() {
    let e = read("glucose,outcome\n1,pos\n").expect_err("missing");
    assert!(
        matches!(
            e,
            DataError::MissingColumn {
                role: "feature",
                ..
            }
        ),
        "{e:?}"
    );
    check_msg(&e, 1, "column `age`");
}

#[test]
fn missing_label_column() {
    let e = read("glucose,age,label\n1,30,pos\n").expect_err("missing");
    assert!(
        matches!(e, DataError::MissingColumn { role: "label", .. }),
        "{e:?}"
    );
    check_msg(&e, 1, "column `outcome`");
}

#[test]
fn duplicate_used_column() {
    let e = read("glucose,age,glucose,outcome\n1,30,2,pos\n").expect_err("ambiguous");
    assert!(matches!(e, DataError::DuplicateColumn { .. }), "{e:?}");
    check_msg(&e, 1, "column `glucose`");
    // A repeated column the schema does not use is harmless.
    read("x,glucose,age,x,outcome\n0,1,30,0,pos\n").expect("loads");
}

#[test]
fn wrong_field_count() {
    let e = read("glucose,age,outcome\n1,30,pos\n2,31\n").expect_err("short");
    assert!(
        matches!(
            e,
            DataError::FieldCount {
                line: 3,
                expected: 3,
                found: 2,
                ..
            }
        ),
        "{e:?}"
    );
    check_msg(&e, 3, "expected 3 fields");
    let e = read("glucose,age,outcome\n1,30,pos,extra\n").expect_err("long");
    assert!(
        matches!(
            e,
            DataError::FieldCount {
                line: 2,
                found: 4,
                ..
            }
        ),
        "{e:?}"
    );
}

#[test]
fn non_numeric_value() {
    let e = read("glucose,age,outcome\n1,30,pos\n1,30,neg\nabc,30,pos\n").expect_err("nan");
    assert!(matches!(e, DataError::NotANumber { line: 4, .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "data.csv:4: column `glucose`: not a number: \"abc\" (if it means \"not measured\", declare it in [csv] missing or the feature's `missing`, e.g. [csv] missing = [\"abc\"])"
    );
    let e = read("glucose,age,outcome\n1,,pos\n").expect_err("empty");
    assert!(matches!(e, DataError::NotANumber { line: 2, .. }), "{e:?}");
    check_msg(&e, 2, "column `age`");
    // Long values are truncated, embedded newlines stay escaped.
    let long = "x".repeat(500);
    let e = read(&format!("glucose,age,outcome\n\"{long}\n\",30,pos\n")).expect_err("long");
    let msg = e.to_string();
    assert!(msg.len() < 200 && !msg.contains('\n'), "{msg}");
}

#[test]
fn line_numbers_count_multiline_quoted_fields() {
    let e =
        read("glucose,age,outcome\n1,30,\"pos\"\n\"1\",\"3\n0\",neg\n7,x,pos\n").expect_err("bad");
    // Record 2 spans lines 3–4 (and its age is not a number either): it is reported first.
    assert!(matches!(e, DataError::NotANumber { line: 3, .. }), "{e:?}");
    let e = read("glucose,age,outcome\n1,30,\"p\nos\"\n7,x,pos\n").expect_err("bad");
    assert!(
        matches!(e, DataError::UnknownLabel { line: 2, .. }),
        "{e:?}"
    );
}

#[test]
fn nan_value() {
    for v in ["NaN", "nan"] {
        let e = read(&format!("glucose,age,outcome\n1,30,pos\n{v},30,pos\n")).expect_err("nan");
        assert!(matches!(e, DataError::NotFinite { line: 3, .. }), "{e:?}");
        check_msg(&e, 3, "column `glucose`");
        assert!(e.to_string().contains("finite"));
    }
}

#[test]
fn infinite_value() {
    for v in ["inf", "-inf", "infinity", "1e400"] {
        let e = read(&format!("glucose,age,outcome\n1,{v},neg\n")).expect_err("inf");
        assert!(
            matches!(e, DataError::NotFinite { line: 2, .. }),
            "{v}: {e:?}"
        );
        check_msg(&e, 2, "column `age`");
    }
}

#[test]
fn a_blank_label_is_named_by_line() {
    let e = read("glucose,age,outcome\n1,30,pos\n1,30,neg\n1,31,\n").expect_err("blank");
    assert_eq!(
        e.to_string(),
        "data.csv:4: column `outcome`: the label is blank; every row a model learns from needs one (delete the row, or score unlabelled rows with `dpagg-aggregator predict`)"
    );
}

#[test]
fn unknown_label_value() {
    let e = read("glucose,age,outcome\n1,30,pos\n1,30,maybe\n").expect_err("label");
    assert!(
        matches!(e, DataError::UnknownLabel { line: 3, .. }),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "data.csv:3: column `outcome`: unknown label \"maybe\" (allowed: \"pos\" for +1, \"neg\" for -1)"
    );
    // Labels are case-sensitive.
    let e = read("glucose,age,outcome\n1,30,POS\n").expect_err("label");
    assert!(
        matches!(e, DataError::UnknownLabel { line: 2, .. }),
        "{e:?}"
    );
}

#[test]
fn invalid_utf8_is_reported_with_line() {
    let mut bytes = b"glucose,age,outcome\n1,30,pos\n1,30,".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
    let e = read_csv(bytes.as_slice(), "data.csv", &schema()).expect_err("utf8");
    assert!(matches!(e, DataError::NotUtf8 { line: 3, .. }), "{e:?}");
    check_msg(&e, 3, "not UTF-8 text (byte 0xff)");
}

#[test]
fn wild_values_still_give_unit_rows() {
    let mut text = String::from("glucose,age,outcome\n");
    let vals = [
        "-1e12", "1e12", "0", "200", "3.5e-300", "-0", "1e308", "-1e308",
    ];
    for (i, a) in vals.iter().enumerate() {
        for b in vals {
            text.push_str(&format!(
                "{a},{b},{}\n",
                if i % 2 == 0 { "pos" } else { "neg" }
            ));
        }
    }
    let (d, report) = read(&text).expect("loads");
    assert_eq!(d.len(), 64);
    assert!(d.max_row_norm() <= 1.0);
    assert!(report.total_clipped() > 0);
}

#[test]
fn crlf_files_report_the_lines_an_editor_shows() {
    for eol in ["\n", "\r\n", "\r"] {
        let text = ["glucose,age,outcome", "1,30,pos", "1,30,neg", "1,x,pos", ""].join(eol);
        let e = read(&text).expect_err("bad age");
        assert!(
            matches!(e, DataError::NotANumber { line: 4, .. }),
            "{eol:?}: {e:?}"
        );
        let text = ["glucose,age,outcome", "1,30,pos", "1,30", ""].join(eol);
        let e = read(&text).expect_err("short");
        assert!(
            matches!(e, DataError::FieldCount { line: 3, .. }),
            "{eol:?}: {e:?}"
        );
    }
    // With a byte-order mark too.
    let e = read("\u{feff}glucose,age,outcome\r\n1,30,pos\r\n1,30,maybe\r\n").expect_err("label");
    assert!(
        matches!(e, DataError::UnknownLabel { line: 3, .. }),
        "{e:?}"
    );
}

#[test]
fn semicolon_tab_and_pipe_files_are_detected() {
    let comma = read("glucose,age,outcome\n100,30,neg\n150,60,pos\n").expect("comma");
    for sep in [";", "\t", "|"] {
        let text = "glucose,age,outcome\n100,30,neg\n150,60,pos\n".replace(',', sep);
        let (d, _) = read(&text).unwrap_or_else(|e| panic!("{sep:?}: {e}"));
        assert_eq!(d, comma.0, "{sep:?}");
    }
    // Excel in a decimal-comma locale: `;` and 1,5.
    let (d, _) = read("glucose;age;outcome\r\n100,5;30;neg\r\n").expect("decimal comma");
    let (e, _) = read("glucose,age,outcome\n100.5,30,neg\n").expect("point");
    assert_eq!(d, e);
}

#[test]
fn a_declared_separator_that_does_not_fit_names_the_one_seen() {
    let text = SCHEMA.replace("[label]", "[csv]\nseparator = \",\"\n[label]");
    let schema = Schema::from_toml_str(&text, "toy.schema.toml").expect("valid");
    let e = read_csv(
        "glucose;age;outcome\n1;2;pos\n".as_bytes(),
        "data.csv",
        &schema,
    )
    .expect_err("declared comma");
    let msg = e.to_string();
    assert!(matches!(e, DataError::MissingColumn { .. }), "{msg}");
    assert!(
        msg.contains("header read with separator ',': 1 column(s), \"glucose;age;outcome\"; it seems to use ';': declare [csv] separator = \";\""),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn declared_missing_markers_map_to_the_centre_and_are_counted() {
    let text = SCHEMA
        .replace("[label]", "[csv]\nmissing = [\"\", \"NA\"]\n[label]")
        .replace("hi = 90.0", "hi = 90.0\nmissing = -1");
    let schema = Schema::from_toml_str(&text, "toy.schema.toml").expect("valid");
    let csv = "glucose,age,outcome\n,NA,pos\n100,-1,neg\n\"\",55,pos\n";
    let (d, report) = read_csv(csv.as_bytes(), "data.csv", &schema).expect("loads");
    // Paper map: a missing value is the middle of [lo, hi], 0 before the √3 scaling.
    let r3 = 3f64.sqrt();
    for i in 0..3 {
        assert!(
            d.row(i)[..2].iter().all(|v| v.abs() < 1e-15),
            "row {i}: {:?}",
            d.row(i)
        );
        assert!((d.row(i)[2] - 1.0 / r3).abs() < 1e-15);
    }
    assert_eq!(
        report.missing,
        vec![("glucose".into(), 2), ("age".into(), 2)]
    );
    assert_eq!(report.total_clipped(), 0);
    // Undeclared, the same cells are errors that say how to declare them.
    let e = read(csv).expect_err("undeclared");
    let msg = e.to_string();
    assert!(
        msg.starts_with("data.csv:2: column `glucose`: not a number: \"\""),
        "{msg}"
    );
    assert!(msg.contains("e.g. [csv] missing = [\"\"]"), "{msg}");
    // Raw rows replace a missing value by the value the map sends to the centre.
    let (_, raw, _) = read_csv_with_raw(csv.as_bytes(), "data.csv", &schema).expect("raw");
    assert_eq!(raw.values[0], vec![100.0, 55.0]);
}

#[test]
fn rows_without_the_label_column_load_for_scoring() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("new.csv");
    std::fs::write(&p, "age,glucose\n30,100\n").expect("write");
    let (d, labels, report) = load_rows(&p, &schema()).expect("loads");
    assert_eq!((d.len(), labels, report.rows), (1, None, 1));
    std::fs::write(&p, "age,glucose,outcome\n30,100,neg\n").expect("write");
    let (_, labels, _) = load_rows(&p, &schema()).expect("loads");
    assert_eq!(labels, Some(vec![-1.0]));
    // Training needs the label.
    let e = load_csv(&p.with_file_name("none.csv"), &schema()).expect_err("no file");
    assert!(matches!(e, DataError::Io { .. }));
    std::fs::write(&p, "age,glucose\n30,100\n").expect("write");
    let e = load_csv(&p, &schema()).expect_err("no label");
    assert!(
        e.to_string()
            .contains("column `outcome`: schema label missing"),
        "{e}"
    );
}

/// Ball map with z = v and row scale 1: a mapped row is its raw values, then the intercept 0.2.
const PLAIN: &str = r#"
name = "plain"
[normalisation]
row_scale = 1.0
[csv]
missing = ["NA"]
[label]
column = "y"
positive = "1"
negative = "0"
[[features]]
name = "a"
lo = -10.0
hi = 10.0
center = 0.0
scale = 1.0
[[features]]
name = "b"
lo = -10.0
hi = 10.0
center = 0.0
scale = 1.0
"#;

#[test]
fn rows_alike_by_hand() {
    let schema = Schema::from_toml_str(PLAIN, "plain.toml").expect("valid");
    let load = |rows: &str| {
        let text = format!("a,b,y\n{rows}");
        read_csv(text.as_bytes(), "d.csv", &schema)
            .expect("loads")
            .1
    };
    // (0.5, 0) and (0, 0.5): mean (0.25, 0.25), ‖mean‖² = 0.125, mean ‖x‖² = 0.25.
    let r = load("0.5,0,1\n0,0.5,0\n");
    assert_eq!(r.alike, 0.5);
    assert_eq!(r.mean_z, vec![("a".into(), 0.25), ("b".into(), 0.25)]);
    // The same point twice: 1 (to rounding).
    let r = load("0.3,0.4,1\n0.3,0.4,0\n");
    assert!((r.alike - 1.0).abs() < 1e-12, "{}", r.alike);
    // Opposite points: 0, the intercept (0.2 on every row) left out.
    let r = load("0.5,0,1\n-0.5,0,0\n");
    assert_eq!(r.alike, 0.0);
    assert_eq!(r.mean_z[0].1, 0.0);
    // A missing value maps to z = 0 in the row but is left out of z̄. Rows (0, 0.5) and
    // (0.3, 0.5): mean (0.15, 0.5), ‖mean‖² = 0.2725, mean ‖x‖² = (0.25 + 0.34)/2 = 0.295.
    let r = load("NA,0.5,1\n0.3,0.5,0\n");
    assert!((r.alike - 0.2725 / 0.295).abs() < 1e-12, "{}", r.alike);
    assert!((r.mean_z[0].1 - 0.3).abs() < 1e-15);
    // Every row at the origin: 0.
    assert_eq!(load("0,0,1\n0,0,0\n").alike, 0.0);
    assert_eq!(rows::alike(&[2.0, 0.0], 4.0, 2), 0.5);
}

#[test]
fn a_header_wider_than_any_table_is_refused_before_any_row() {
    let schema = crate::data::schema::Schema::from_toml_str(
        "name = \"t\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n[[features]]\nname = \"c0\"\nlo = 0\nhi = 1\n",
        "t.toml",
    )
    .expect("schema");
    let header: Vec<String> = (0..=super::MAX_COLUMNS).map(|i| format!("c{i}")).collect();
    let text = format!("{},y\n", header.join(","));
    let e = super::read_csv(text.as_bytes(), "wide.csv", &schema).expect_err("too wide");
    assert!(
        e.to_string()
            .starts_with("wide.csv:1: 100002 columns in the header, more than the 100000"),
        "{e}"
    );
}
