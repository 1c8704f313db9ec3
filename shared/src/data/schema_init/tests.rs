//! Tests of `schema init`: what it writes, that its bounds are marked observed and refused,
//! and that the draft loads the file it came from.
use super::*;
use crate::data::csv::read_csv;
use crate::data::schema::Schema;

fn draft_of(text: &str, label: &str) -> Draft {
    draft(text.as_bytes(), "visits.csv", label, None, "visits").expect("drafts")
}

#[test]
fn a_draft_names_every_column_and_loads_its_file() {
    let text = "id;age;insulin;note;outcome\r\n\
                a1;34;80,5;x;no\r\n\
                a2;61;NA;y;yes\r\n\
                a3;;120;z;no\r\n";
    let d = draft_of(text, "outcome");
    assert_eq!(d.separator, Separator::Semicolon);
    assert_eq!(d.rows, 3);
    let names: Vec<&str> = d.features.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["age", "insulin"]);
    let skipped: Vec<&str> = d.skipped.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(skipped, ["id", "note"]);
    assert_eq!(
        d.skipped[0].1,
        Strays {
            count: 3,
            first_line: 2,
            values: vec!["a1".into(), "a2".into(), "a3".into()]
        }
    );
    assert_eq!(d.markers, ["", "NA"]);
    assert_eq!(d.classes, [("yes".into(), 1), ("no".into(), 2)]);
    assert_eq!((d.features[1].min, d.features[1].max), (80.5, 120.0));
    // The draft is a valid schema, every bound marked observed, and refused for releases.
    let schema = Schema::from_toml_str(&d.toml, "visits.schema.toml").expect(&d.toml);
    assert_eq!(schema.observed_features(), ["age", "insulin"]);
    let e = schema
        .require_public_bounds("visits.schema.toml")
        .expect_err("observed bounds are refused");
    let msg = e.to_string();
    assert!(
        msg.starts_with("visits.schema.toml: feature `age` and 1 more: bounds observed"),
        "{msg}"
    );
    // It loads the very file it was drafted from (separator, decimal comma, markers).
    let (data, report) = read_csv(text.as_bytes(), "visits.csv", &schema).expect("loads");
    assert_eq!(data.len(), 3);
    assert_eq!(
        report.missing,
        vec![("age".into(), 1), ("insulin".into(), 1)]
    );
    assert_eq!(report.total_clipped(), 0);
    // Neither the exact extremes nor the class counts are written into the shared file.
    assert!(
        !d.toml.contains("80.5") && !d.toml.contains("61"),
        "{}",
        d.toml
    );
    // Once the bounds are public and the lines deleted, nothing is refused.
    let public = d.toml.replace("bounds = \"observed\"", "");
    let schema = Schema::from_toml_str(&public, "x").expect("valid");
    assert!(schema.require_public_bounds("x").is_ok());
}

#[test]
fn the_label_must_have_two_values_and_positive_is_chosen_sensibly() {
    let d = draft_of("x,y\n1,0\n2,1\n3,1\n", "y");
    assert_eq!(d.classes[0].0, "1", "1/0: 1 is positive");
    let d = draft_of("x,y\n1,B\n2,M\n3,B\n", "y");
    assert_eq!(d.classes[0].0, "M", "otherwise the rarer value");
    let d = draft(&b"x,y\n1,B\n2,M\n3,B\n"[..], "f.csv", "y", Some("B"), "n").expect("drafts");
    assert_eq!(d.classes[0].0, "B", "--positive wins");
    let e = draft(&b"x,y\n1,a\n2,b\n3,c\n"[..], "f.csv", "y", None, "n").expect_err("three");
    assert!(
        e.to_string()
            .contains("has 3 distinct value(s) (\"a\" (1 row(s), first on line 2), \"b\""),
        "{e}"
    );
    let e = draft(&b"x,y\n1,a\n2,b\n"[..], "f.csv", "z", None, "n").expect_err("no column");
    assert_eq!(
        e.to_string(),
        "f.csv:1: no column `z` in the header (columns: x, y)"
    );
    let e = draft(&b"x,y\n1,a\n2,b\n"[..], "f.csv", "y", Some("c"), "n").expect_err("bad");
    assert!(
        e.to_string()
            .starts_with("--positive \"c\": not a value of column `y`"),
        "{e}"
    );
    let e = draft(&b"x,y\na,a\nb,b\n"[..], "f.csv", "y", None, "n").expect_err("no numbers");
    assert!(
        e.to_string().contains("no numeric column besides `y`"),
        "{e}"
    );
}

#[test]
fn bounds_round_outward() {
    assert_eq!(round_out(21.0, 81.0), (20.0, 90.0));
    assert_eq!(round_out(0.0, 1.0), (0.0, 1.0));
    assert_eq!(round_out(0.053, 0.163), (0.0, 0.2));
    assert_eq!(round_out(-3.5, 2.25), (-4.0, 3.0));
    assert_eq!(round_out(5.0, 5.0), (5.0, 6.0));
    assert_eq!(round_out(0.0, 0.0), (0.0, 1.0));
    let (lo, hi) = round_out(143.5, 2501.0);
    assert!(lo <= 143.5 && hi >= 2501.0 && lo >= 0.0, "{lo} {hi}");
}

/// 200 rows: a count that is 0 on 70 % of them, a skewed lab value, a symmetric age, a 0/1
/// flag and a signed column.
fn shapes() -> String {
    let mut s = String::from("count,lab,age,flag,delta,y\n");
    for i in 0..200 {
        let count = if i % 10 < 7 { 0 } else { i % 7 + 1 };
        let lab = 5.0 * 1.03f64.powi(i % 100);
        let age = 30 + (i * 7) % 40;
        let flag = i32::from(i % 4 == 0);
        let delta = i % 11 - 5;
        let y = if (i * 13) % 3 == 0 { "yes" } else { "no" };
        s.push_str(&format!("{count},{lab:.2},{age},{flag},{delta},{y}\n"));
    }
    s
}

/// The text of feature `name`'s table in a draft.
fn section<'a>(toml: &'a str, name: &str) -> &'a str {
    toml.split("[[features]]")
        .find(|t| t.contains(&format!("name = \"{name}\"")))
        .expect("a feature table")
}

#[test]
fn mostly_zero_and_skewed_columns_get_commented_proposals() {
    let d = draft_of(&shapes(), "y");
    let proposal = |name: &str| {
        d.features
            .iter()
            .find(|f| f.name == name)
            .expect("a feature")
            .proposal
    };
    assert_eq!(
        proposal("count"),
        Some(Proposal::MostlyZero {
            zeros: 0.7,
            indicator: false
        })
    );
    assert!(matches!(proposal("lab"), Some(Proposal::Skewed { tail }) if tail > 3.0));
    assert_eq!(
        proposal("flag"),
        Some(Proposal::MostlyZero {
            zeros: 0.75,
            indicator: true
        })
    );
    assert_eq!(proposal("age"), None, "symmetric");
    assert_eq!(proposal("delta"), None, "negative values");
    // Commented under their features, with the rule that fired and no statistic.
    let count = section(&d.toml, "count");
    assert!(
        count.contains(
            "# proposed by schema init (a decision about the data's shape: mostly zero, at least \
             50 % of the values are 0);\n# uncomment to accept:\n# transform = \"log1p\"\n# typical = 0.0\n"
        ),
        "{count}"
    );
    assert!(!count.contains("70"), "{count}");
    let lab = section(&d.toml, "lab");
    assert!(
        lab.contains("skewed, the 95th percentile over 3 times the median);\n# uncomment to accept:\n# transform = \"log1p\"\n")
            && !lab.contains("typical"),
        "{lab}"
    );
    let flag = section(&d.toml, "flag");
    assert!(
        flag.contains("# typical = 0.0") && !flag.contains("log1p"),
        "{flag}"
    );
    for name in ["age", "delta"] {
        assert!(!section(&d.toml, name).contains("proposed"), "{}", d.toml);
    }
    // Never an active key: the draft maps every feature from its bounds alone.
    let schema = Schema::from_toml_str(&d.toml, "d.toml").expect("valid");
    assert!(
        schema.features.iter().all(|f| f.typical.is_none()
            && f.transform == Some(crate::data::normalise::Transform::Identity))
    );
    // Accepted (uncommented), the keys are valid and do what they say.
    let accepted = d
        .toml
        .replace("\n# transform = ", "\ntransform = ")
        .replace("\n# typical = ", "\ntypical = ");
    let schema = Schema::from_toml_str(&accepted, "d.toml").expect(&accepted);
    let count = &schema.features[0];
    assert_eq!((count.typical, count.center), (Some(0.0), Some(0.0)));
    assert_eq!(schema.standardise(0, 0.0), 0.0);
    assert_eq!(
        schema.features[1].transform,
        Some(crate::data::normalise::Transform::Log1p)
    );
    assert_eq!(schema.features[1].typical, None);
}

#[test]
fn short_signed_or_constant_columns_get_no_proposal() {
    let zeros = [0.0; MIN_VALUES];
    assert_eq!(Proposal::of(&zeros), None, "constant");
    let mut mostly = zeros;
    mostly[0] = 3.0;
    assert!(matches!(
        Proposal::of(&mostly),
        Some(Proposal::MostlyZero {
            indicator: true,
            ..
        })
    ));
    assert_eq!(Proposal::of(&mostly[..MIN_VALUES - 1]), None, "too few");
    mostly[1] = -1.0;
    assert_eq!(Proposal::of(&mostly), None, "a negative value");
    // Half zeros is mostly zero; the rest need not be skewed.
    let half: Vec<f64> = (0..40)
        .map(|i| if i % 2 == 0 { 0.0 } else { f64::from(i) })
        .collect();
    assert!(matches!(
        Proposal::of(&half),
        Some(Proposal::MostlyZero { zeros, indicator: false }) if zeros == 0.5
    ));
    // An exponential-like tail is skewed; a uniform one from 0 is not.
    let exp: Vec<f64> = (1..=100)
        .map(|i| -(1.0 - f64::from(i) / 101.0).ln())
        .collect();
    assert!(matches!(Proposal::of(&exp), Some(Proposal::Skewed { .. })));
    let uniform: Vec<f64> = (1..=100).map(f64::from).collect();
    assert_eq!(Proposal::of(&uniform), None);
}

/// 60 rows of `dose,y`, `dose` a number but on the lines in `words`.
fn with_strays(words: &[(usize, &str)]) -> String {
    let mut text = String::from("dose,y\n");
    for i in 0..60 {
        let cell = words
            .iter()
            .find(|(at, _)| *at == i)
            .map_or_else(|| (i % 7).to_string(), |(_, w)| (*w).to_owned());
        text.push_str(&format!("{cell},{}\n", i % 2));
    }
    text
}

#[test]
fn a_stray_word_is_named_by_line_and_count_and_proposed_as_a_marker() {
    // Two stray words on lines 12 and 41 (rows 10 and 39): the column stays a feature, and the
    // draft proposes, commented, the words as its missing markers.
    let d = draft_of(&with_strays(&[(10, "high"), (39, "high")]), "y");
    assert_eq!(d.features.len(), 1, "{:?}", d.skipped);
    let strays = &d.features[0].strays;
    assert_eq!((strays.count, strays.first_line), (2, 12));
    assert_eq!(strays.values, ["high"]);
    assert!(
        d.toml
            .contains("# 2 cell(s) of this column are not numbers (first on line 12)"),
        "{}",
        d.toml
    );
    assert!(d.toml.contains("\n# missing = [\"high\"]\n"), "{}", d.toml);
    // Until the proposal is accepted, loading names the line; once it is, the file loads.
    let public = d.toml.replace("bounds = \"observed\"", "");
    let schema = Schema::from_toml_str(&public, "s.toml").expect("valid");
    let e = read_csv(
        with_strays(&[(10, "high"), (39, "high")]).as_bytes(),
        "d.csv",
        &schema,
    )
    .expect_err("a word is not a number");
    assert!(e.to_string().starts_with("d.csv:12:"), "{e}");
    let accepted = public.replace("# missing = [", "missing = [");
    let schema = Schema::from_toml_str(&accepted, "s.toml").expect("valid");
    let (_, report) = read_csv(
        with_strays(&[(10, "high"), (39, "high")]).as_bytes(),
        "d.csv",
        &schema,
    )
    .expect("loads");
    assert_eq!(report.missing[0].1, 2);
    // A column of words is left out, still named with its first line.
    let words: Vec<(usize, &str)> = (0..60).map(|i| (i, "w")).collect();
    let mut text = with_strays(&words).replace("dose,y", "dose,n,y");
    text = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l.to_owned()
            } else {
                let (a, b) = l.split_once(',').expect("two cells");
                format!("{a},{i},{b}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let d = draft_of(&text, "y");
    assert_eq!(d.skipped.len(), 1);
    assert_eq!((d.skipped[0].1.count, d.skipped[0].1.first_line), (60, 2));
}

#[test]
fn blank_labels_are_named_by_line_and_a_near_label_is_suggested() {
    let e = draft(
        "x,y\n1,0\n2,\n3,1\n4,\n".as_bytes(),
        "v.csv",
        "y",
        None,
        "v",
    )
    .expect_err("three values");
    let msg = e.to_string();
    assert!(
        msg.contains("\"\" (blank, 2 row(s), first on line 3)"),
        "{msg}"
    );
    let e = draft("x,type\n1,0\n".as_bytes(), "v.csv", "Type", None, "v").expect_err("no Type");
    assert_eq!(
        e.to_string(),
        "v.csv:1: no column `Type` in the header (did you mean `type`? columns: x, type)"
    );
    let e = draft("".as_bytes(), "v.csv", "y", None, "v").expect_err("empty");
    assert!(!e.to_string().contains("columns: )"), "{e}");
}

#[test]
fn a_text_column_with_few_values_is_proposed_as_categorical_observed_and_refused() {
    let mut text = String::from("id,age,smoking,ward,outcome\n");
    for i in 0..30 {
        let smoking = ["never", "former", "current"][i % 3];
        let ward = if i % 2 == 0 { "A" } else { "NA" };
        let outcome = if i % 4 == 0 { "yes" } else { "no" };
        text.push_str(&format!("p{i},{},{smoking},{ward},{outcome}\n", 30 + i));
    }
    let d = draft_of(&text, "outcome");
    let names: Vec<&str> = d.categorical.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["smoking"],
        "one category (ward) is not a categorical feature"
    );
    assert_eq!(
        d.categorical[0].categories,
        [
            ("current".into(), 10),
            ("former".into(), 10),
            ("never".into(), 10)
        ]
    );
    let skipped: Vec<&str> = d.skipped.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(skipped, ["id", "ward"], "an identifier is not a category");
    let schema = Schema::from_toml_str(&d.toml, "visits.schema.toml").expect(&d.toml);
    assert!(
        schema.observed_features().contains(&"smoking=never"),
        "{:?}",
        schema.observed_features()
    );
    let (data, _) = read_csv(text.as_bytes(), "visits.csv", &schema).expect("loads");
    assert_eq!(data.dim(), 5, "age, three indicators, the intercept");
}

#[test]
fn a_dictionary_lists_public_categories_even_for_a_coded_column() {
    let dict = Dictionary::read(
        "name,lo,hi,categories\nage,18,100,\nsmoking,,,never|former|current\nward,,,1|2|3\n"
            .as_bytes(),
        "dict.csv",
    )
    .expect("reads");
    let text = "age,smoking,ward,outcome\n40,never,1,yes\n50,former,2,no\n60,current,3,no\n";
    let d = draft_with(text.as_bytes(), "v.csv", "outcome", None, "v", Some(&dict)).expect("ok");
    let names: Vec<&str> = d.categorical.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["smoking", "ward"]);
    let schema = Schema::from_toml_str(&d.toml, "v.schema.toml").expect(&d.toml);
    assert!(schema.observed_features().is_empty(), "{}", d.toml);
    assert_eq!(
        schema.categories_of("smoking"),
        ["never", "former", "current"]
    );
    let bad = Dictionary::read(
        "name,lo,hi,categories\nward,1,3,a|b\n".as_bytes(),
        "dict.csv",
    );
    let e = bad.expect_err("bounds and categories").to_string();
    assert!(e.starts_with("dict.csv:2: "), "{e}");
}
