use crate::data::csv::read_csv;
use crate::data::schema::Schema;

const SCHEMA: &str = r#"
name = "t"
[label]
column = "y"
positive = "yes"
negative = "no"
[[features]]
name = "age"
lo = 0.0
hi = 100.0
[[features]]
name = "smoking"
kind = "categorical"
categories = ["never", "former", "current"]
"#;

fn schema(text: &str) -> Result<Schema, String> {
    Schema::from_toml_str(text, "s.toml").map_err(|e| e.to_string())
}

#[test]
fn a_categorical_feature_becomes_one_indicator_per_category_and_reads_back_the_same() {
    let s = schema(SCHEMA).expect("valid");
    let names: Vec<&str> = s.features.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["age", "smoking=never", "smoking=former", "smoking=current"]
    );
    assert_eq!(s.dim(), 5, "four columns and the intercept");
    assert_eq!(s.declared_features(), 2);
    assert_eq!(s.categories_of("smoking"), ["never", "former", "current"]);
    // The default row scale counts the categorical feature once: 2/√2.
    let row_scale = s
        .normalisation
        .as_ref()
        .and_then(|n| n.row_scale)
        .expect("filled");
    assert!((row_scale - 2.0 / 2f64.sqrt()).abs() < 1e-15);
    // The expanded form (what model.json and the fingerprint hold) reads back unchanged.
    let again =
        Schema::from_toml_str(&toml::to_string(&s).expect("serialises"), "again").expect("reads");
    assert_eq!(again, s);
    assert_eq!(again.fingerprint(), s.fingerprint());
}

#[test]
fn a_listed_cell_is_one_hot_and_an_unlisted_or_missing_one_sits_at_the_centre() {
    let text = format!("{SCHEMA}[csv]\nmissing = [\"NA\"]\n");
    let s = schema(&text).expect("valid");
    let csv = "age,smoking,y\n50,former,yes\n40,NA,no\n50,Nevr,no\n50,Nevr,yes\n50, never ,no\n";
    let (data, report) = read_csv(csv.as_bytes(), "f.csv", &s).expect("loads");
    // Which of the three indicators is set (each row is projected onto the ball).
    let hot = |i: usize| {
        data.row(i)[1..4]
            .iter()
            .map(|&v| v > 0.0)
            .collect::<Vec<_>>()
    };
    assert_eq!(hot(0), [false, true, false]);
    assert!(data.row(0)[1..4].iter().all(|&v| v >= 0.0));
    assert_eq!(hot(1), [false; 3], "missing: the centre");
    assert_eq!(hot(2), [false; 3], "unlisted: the centre");
    assert_eq!(hot(4), [true, false, false], "cells are trimmed");
    assert_eq!(report.unlisted.len(), 1);
    let u = &report.unlisted[0];
    assert_eq!((u.column.as_str(), u.count, u.first.0), ("smoking", 2, 4));
    assert_eq!(u.first.1, "Nevr");
    assert_eq!(report.missing[1], ("smoking=never".to_owned(), 3));
    assert!(report.constant.is_empty(), "{:?}", report.constant);
    assert!(data.max_row_norm() <= 1.0);
}

#[test]
fn wrong_categorical_declarations_are_named() {
    let cases = [
        (
            SCHEMA.replace("kind = \"categorical\"\n", ""),
            "feature `smoking` categories: only with kind",
        ),
        (
            SCHEMA.replace("\"former\", \"current\"", "\"never\""),
            "\"never\" is listed twice",
        ),
        (
            SCHEMA.replace("\"former\", \"current\"", ""),
            "between 2 and",
        ),
        (
            SCHEMA.replace("categories = [", "lo = 0.0\ncategories = ["),
            "feature `smoking` lo: not used",
        ),
        (
            SCHEMA.replace("lo = 0.0\n", ""),
            "feature `age` lo: missing",
        ),
        (SCHEMA.replace("\"former\"", "\" former\""), "outer spaces"),
        (
            format!("{SCHEMA}[normalisation]\nmode = \"paper\"\n"),
            "categorical features need the ball map",
        ),
        (
            SCHEMA.replace("name = \"smoking\"", "name = \"y\""),
            "label.column `y`",
        ),
        (
            format!("{SCHEMA}[[features]]\nname = \"smoking=never\"\nlo = 0.0\nhi = 1.0\n"),
            "declared more than once",
        ),
    ];
    for (text, expected) in cases {
        let err = schema(&text).expect_err(expected);
        assert!(err.contains(expected), "{err} (expected {expected})");
        assert!(err.starts_with("s.toml: "), "{err}");
    }
}

#[test]
fn observed_categories_are_refused_like_observed_bounds() {
    let text = SCHEMA.replace("\"current\"]", "\"current\"]\nbounds = \"observed\"");
    let s = schema(&text).expect("valid");
    let err = s
        .require_public_bounds("s.toml")
        .expect_err("observed")
        .to_string();
    assert!(err.contains("feature `smoking=never` and 2 more"), "{err}");
}
