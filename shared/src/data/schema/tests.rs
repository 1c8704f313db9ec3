//! Tests of the schema: parsing, validation, fingerprint and the paper map.
use super::*;
use crate::data::normalise::l2_norm;

const GOOD: &str = r#"
name = "toy"
description = "a toy schema"
[normalisation]
mode = "paper"
[label]
column = "y"
positive = "yes"
negative = "no"
[[features]]
name = "a"
lo = 0.0
hi = 10.0
description = "first"
[[features]]
name = "b"
lo = -5
hi = 5
"#;

fn toy() -> Schema {
    Schema::from_toml_str(GOOD, "toy.schema.toml").expect("valid")
}

/// A small deterministic generator (SplitMix64) so the randomised tests need no dependency.
struct SplitMix(u64);
impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn err(text: &str) -> SchemaError {
    Schema::from_toml_str(text, "bad.schema.toml").expect_err("must be rejected")
}

#[test]
fn parses_and_defaults() {
    let s = toy();
    assert_eq!(s.name, "toy");
    assert!(s.intercept, "intercept defaults to true");
    assert_eq!(s.dim(), 3);
    assert_eq!(s.features[1].lo, -5.0);
    assert_eq!(s.features[0].description.as_deref(), Some("first"));
    assert_eq!(s.features[1].description, None);
    let no_icpt = Schema::from_toml_str(
        &GOOD.replace("name = \"toy\"", "name = \"toy\"\nintercept = false"),
        "x",
    )
    .expect("valid");
    assert!(!no_icpt.intercept);
    assert_eq!(no_icpt.dim(), 2);
}

#[test]
fn load_reads_file_and_names_missing_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("node.schema.toml");
    std::fs::write(&p, GOOD).expect("write");
    assert_eq!(Schema::load(&p).expect("loads"), toy());
    let missing = dir.path().join("absent.schema.toml");
    let e = Schema::load(&missing).expect_err("missing");
    assert!(matches!(e, SchemaError::Io { .. }));
    let msg = e.to_string();
    assert!(msg.starts_with(&missing.display().to_string()), "{msg}");
    assert!(!msg.contains('\n'));
}

#[test]
fn rejects_lo_not_below_hi() {
    let e = err(&GOOD.replace("lo = 0.0\nhi = 10.0", "lo = 5.0\nhi = 3.0"));
    assert!(matches!(e, SchemaError::EmptyRange { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "bad.schema.toml: feature `a`: lo (5) must be < hi (3)"
    );
    let e = err(&GOOD.replace("lo = 0.0\nhi = 10.0", "lo = 2.0\nhi = 2.0"));
    assert!(matches!(e, SchemaError::EmptyRange { .. }), "{e:?}");
}

#[test]
fn rejects_non_finite_bounds() {
    for (lo, hi) in [("nan", "1.0"), ("0.0", "inf"), ("-1e308", "1e308")] {
        let e = err(&GOOD.replace("lo = 0.0\nhi = 10.0", &format!("lo = {lo}\nhi = {hi}")));
        assert!(matches!(e, SchemaError::NonFiniteBound { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.starts_with("bad.schema.toml: feature `a`:"), "{msg}");
    }
}

#[test]
fn rejects_duplicate_feature() {
    let e = err(&GOOD.replace("name = \"b\"", "name = \"a\""));
    assert!(matches!(e, SchemaError::DuplicateFeature { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "bad.schema.toml: feature `a`: declared more than once"
    );
}

#[test]
fn rejects_label_declared_as_feature() {
    let e = err(&GOOD.replace("name = \"b\"", "name = \"y\""));
    assert!(matches!(e, SchemaError::LabelIsFeature { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("bad.schema.toml: label.column `y`"),
        "{e}"
    );
}

#[test]
fn rejects_unknown_keys_with_position() {
    let e = err(&GOOD.replace("hi = 10.0", "hi = 10.0\nhigh = 11.0"));
    assert!(matches!(e, SchemaError::Syntax { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.starts_with("bad.schema.toml:"), "{msg}");
    assert!(msg.contains("high"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    // Top-level and label tables reject unknown keys too.
    let e = err(&format!("colour = \"red\"\n{GOOD}"));
    assert!(matches!(e, SchemaError::Syntax { .. }), "{e:?}");
    assert!(e.to_string().contains("colour"), "{e}");
    let e = err(&GOOD.replace(
        "negative = \"no\"",
        "negative = \"no\"\nneutral = \"maybe\"",
    ));
    assert!(e.to_string().contains("neutral"), "{e}");
}

#[test]
fn rejects_no_features() {
    let text = format!(
        "features = []\n{}",
        GOOD.split("[[features]]").next().expect("prefix")
    );
    let e = err(&text);
    assert!(matches!(e, SchemaError::NoFeatures { .. }), "{e:?}");
    assert!(
        e.to_string().starts_with("bad.schema.toml: features:"),
        "{e}"
    );
    // Omitting the key altogether is a syntax error naming the missing field.
    let e = err(GOOD.split("[[features]]").next().expect("prefix"));
    assert!(matches!(e, SchemaError::Syntax { .. }), "{e:?}");
    assert!(e.to_string().contains("features"), "{e}");
}

#[test]
fn rejects_equal_label_values() {
    let e = err(&GOOD.replace("negative = \"no\"", "negative = \"yes\""));
    assert!(matches!(e, SchemaError::SameLabelValues { .. }), "{e:?}");
    assert!(e.to_string().starts_with("bad.schema.toml: label:"), "{e}");
}

#[test]
fn rejects_empty_names() {
    let e = err(&GOOD.replace("name = \"b\"", "name = \" \""));
    assert!(matches!(e, SchemaError::EmptyName { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "bad.schema.toml: feature #2 name: must not be empty"
    );
    let e = err(&GOOD.replace("positive = \"yes\"", "positive = \"\""));
    assert!(e.to_string().contains("label.positive"), "{e}");
}

#[test]
fn malformed_toml_names_file_and_line() {
    let e = err("name = \"toy\"\n[label\ncolumn = \"y\"\n");
    assert!(
        matches!(e, SchemaError::Syntax { line: Some(2), .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(msg.starts_with("bad.schema.toml:2:"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    // A wrong type is reported the same way.
    let e = err(&GOOD.replace("hi = 10.0", "hi = \"ten\""));
    assert!(matches!(e, SchemaError::Syntax { .. }), "{e:?}");
    assert!(e.to_string().starts_with("bad.schema.toml:"), "{e}");
}

#[test]
fn fingerprint_is_stable_and_sensitive() {
    let a = toy();
    let fp = a.fingerprint();
    assert_eq!(fp.len(), 64);
    assert!(
        fp.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    );
    assert_eq!(fp, toy().fingerprint());
    assert_eq!(fp, a.clone().fingerprint());
    // Formatting and comments do not matter.
    let reformatted = format!("# a comment\n{}", GOOD.replace("lo = -5", "lo   =   -5.0"));
    assert_eq!(
        Schema::from_toml_str(&reformatted, "x")
            .expect("valid")
            .fingerprint(),
        fp
    );
    // A bound does.
    let mut b = a.clone();
    b.features[0].hi = 10.5;
    assert_ne!(b.fingerprint(), fp);
    let mut c = a.clone();
    c.intercept = false;
    assert_ne!(c.fingerprint(), fp);
    let mut d = a;
    d.features.swap(0, 1);
    assert_ne!(d.fingerprint(), fp);
}

#[test]
fn known_row_maps_to_known_values() {
    let s = toy(); // a ∈ [0, 10], b ∈ [−5, 5], intercept: dim 3
    let mut out = [0.0; 3];
    let r3 = 3f64.sqrt();
    assert_eq!(s.normalise_row(&[5.0, 5.0], &mut out).clipped, 0);
    let want = [0.0, 1.0 / r3, 1.0 / r3];
    for (o, w) in out.iter().zip(want) {
        assert!((o - w).abs() < 1e-15, "{out:?}");
    }
    assert_eq!(s.normalise_row(&[2.5, -5.0], &mut out).clipped, 0);
    let want = [-0.5 / r3, -1.0 / r3, 1.0 / r3];
    for (o, w) in out.iter().zip(want) {
        assert!((o - w).abs() < 1e-15, "{out:?}");
    }
    // Out of bounds on both sides: clipped and counted.
    assert_eq!(s.normalise_row(&[-3.0, 99.0], &mut out).clipped, 2);
    let want = [-1.0 / r3, 1.0 / r3, 1.0 / r3];
    for (o, w) in out.iter().zip(want) {
        assert!((o - w).abs() < 1e-15, "{out:?}");
    }
    assert!(l2_norm(&out) <= 1.0);
    // Without intercept: dim 2.
    let mut s2 = s.clone();
    s2.intercept = false;
    let mut out2 = [0.0; 2];
    assert_eq!(s2.normalise_row(&[10.0, 0.0], &mut out2).clipped, 0);
    let r2 = 2f64.sqrt();
    assert!(
        (out2[0] - 1.0 / r2).abs() < 1e-15 && out2[1].abs() < 1e-15,
        "{out2:?}"
    );
    // Non-finite inputs never break the bound.
    assert_eq!(
        s2.normalise_row(&[f64::INFINITY, f64::NEG_INFINITY], &mut out2)
            .clipped,
        2
    );
    assert!((out2[0] - 1.0 / r2).abs() < 1e-15 && (out2[1] + 1.0 / r2).abs() < 1e-15);
    assert_eq!(s2.normalise_row(&[f64::NAN, 0.0], &mut out2).missing, 1);
    assert!(out2.iter().all(|v| v.is_finite()));
}

/// Schema with `p` features on assorted (public) bounds.
fn wide(p: usize, intercept: bool, rng: &mut SplitMix) -> Schema {
    let features = (0..p)
        .map(|j| {
            let lo = (rng.unit() - 0.5) * 10f64.powi((j % 7) as i32 - 3);
            let width = 10f64.powi((j % 9) as i32 - 4) * (0.1 + rng.unit());
            FeatureSpec::bounded(format!("f{j}"), lo, lo + width)
        })
        .collect();
    let s = Schema {
        name: "wide".into(),
        description: None,
        intercept,
        label: LabelSpec {
            column: "y".into(),
            positive: "1".into(),
            negative: "0".into(),
        },
        features,
        normalisation: Some(crate::data::normalise::Normalisation {
            mode: crate::data::normalise::MapMode::Paper,
            row_scale: None,
            intercept_value: None,
        }),
        csv: None,
        subspace: None,
        agreed_map: None,
    };
    s.validate("wide").expect("valid");
    s
}

#[test]
fn norm_at_most_one_for_adversarial_rows() {
    let mut rng = SplitMix(0x5EED_0001);
    let mut worst = 0.0f64;
    let mut total_clipped = 0usize;
    let mut total_values = 0usize;
    for case in 0..400 {
        let p = 1 + case % 60;
        let intercept = case % 2 == 0;
        let s = wide(p, intercept, &mut rng);
        let mut out = vec![0.0; s.dim()];
        for _ in 0..50 {
            let raw: Vec<f64> = s
                .features
                .iter()
                .map(|f| match rng.next_u64() % 6 {
                    // Far outside the bounds, either side, up to ±1e12.
                    0 => (rng.unit() * 2.0 - 1.0) * 1e12,
                    1 => f.hi + rng.unit() * 1e12,
                    2 => f.lo - rng.unit() * 1e12,
                    // Exactly on a bound: the extreme case for the norm.
                    3 => f.hi,
                    4 => f.lo,
                    _ => f.lo + rng.unit() * (f.hi - f.lo),
                })
                .collect();
            let expect_clipped = s
                .features
                .iter()
                .zip(&raw)
                .filter(|(f, v)| **v < f.lo || **v > f.hi)
                .count();
            let clipped = s.normalise_row(&raw, &mut out).clipped;
            assert_eq!(clipped, expect_clipped);
            total_clipped += clipped;
            total_values += raw.len();
            assert!(out.iter().all(|v| v.is_finite()));
            let n = l2_norm(&out);
            assert!(
                n <= 1.0,
                "norm {n} > 1 for p = {p}, intercept = {intercept}"
            );
            worst = worst.max(n);
            // The same check through the Dataset API the privacy proofs refer to.
            let d = crate::Dataset::new(out.clone(), vec![1.0], s.dim());
            assert!(d.max_row_norm() <= 1.0);
        }
    }
    assert!(total_clipped > 0 && total_clipped < total_values);
    assert!(
        worst > 0.999_999,
        "rows on the bounds should reach norm ≈ 1, got {worst}"
    );
}

#[test]
fn corner_rows_stay_inside_the_ball_for_every_dimension() {
    // All features on a bound gives norm exactly 1 in real arithmetic: the rounding guard
    // must keep the computed norm ≤ 1 for every dimension.
    let mut rng = SplitMix(42);
    for p in 1..=300 {
        for intercept in [false, true] {
            let s = wide(p, intercept, &mut rng);
            let mut out = vec![0.0; s.dim()];
            for pattern in 0..4 {
                let raw: Vec<f64> = s
                    .features
                    .iter()
                    .enumerate()
                    .map(|(j, f)| {
                        // All high, all low, alternating, and blocks of three.
                        let high = match pattern {
                            0 => true,
                            1 => false,
                            2 => j & 1 == 0,
                            _ => (j / 3) & 1 == 1,
                        };
                        if high { f.hi } else { f.lo }
                    })
                    .collect();
                s.normalise_row(&raw, &mut out);
                let n = l2_norm(&out);
                assert!(n <= 1.0 && n > 1.0 - 1e-12, "p = {p}: norm {n}");
            }
        }
    }
}

#[test]
fn raw_of_center_is_what_the_map_sends_to_zero() {
    let mut f = FeatureSpec::bounded("insulin", 0.0, 900.0);
    assert_eq!(f.raw_of_center(), 450.0, "no centre: middle of the bounds");
    f.center = Some(4.5);
    f.transform = Some(Transform::Log1p);
    f.unit = Some(1.0);
    let raw = f.raw_of_center();
    assert!((raw - 4.5f64.exp_m1()).abs() < 1e-9, "{raw}");
    assert!((f.transform(raw) - 4.5).abs() < 1e-12);
    f.transform = Some(Transform::Identity);
    assert_eq!(f.raw_of_center(), 4.5);
    f.center = Some(-3.0);
    assert_eq!(f.raw_of_center(), 0.0, "clipped to [lo, hi]");
}

const COUNTS: &str = r#"
name = "counts"
[label]
column = "y"
positive = "yes"
negative = "no"
[[features]]
name = "visits"
lo = 0.0
hi = 99.0
transform = "log1p"
typical = 0.0
[[features]]
name = "age"
lo = 18.0
hi = 100.0
"#;

#[test]
fn typical_moves_the_centre_and_is_fingerprinted_only_when_present() {
    let s = Schema::from_toml_str(COUNTS, "counts.toml").expect("valid");
    let f = &s.features[0];
    assert_eq!(f.center, Some(0.0));
    assert!((f.scale.expect("filled") - 100f64.ln() / 3.0).abs() < 1e-15);
    assert_eq!(s.standardise(0, 0.0), 0.0, "the typical value is z = 0");
    assert!((s.standardise(0, 99.0) - 3.0).abs() < 1e-12);
    assert_eq!(f.raw_of_center(), 0.0, "a missing value stands at typical");
    let mut bare = FeatureSpec::bounded("v", 0.0, 10.0);
    bare.typical = Some(2.0);
    assert_eq!(
        bare.raw_of_center(),
        2.0,
        "typical before the rule fills center"
    );
    // Part of the fingerprint; absent, the schema is the one it was before the key existed.
    let other = Schema::from_toml_str(&COUNTS.replace("typical = 0.0", "typical = 1.0"), "x")
        .expect("valid");
    assert_ne!(other.fingerprint(), s.fingerprint());
    let without =
        Schema::from_toml_str(&COUNTS.replace("typical = 0.0\n", ""), "x").expect("valid");
    let json = serde_json::to_string(&without).expect("serialises");
    assert!(!json.contains("typical"), "{json}");
    assert_ne!(without.features[0].center, Some(0.0));
    // A model's map read back (every default written in) validates again.
    let back: Schema =
        serde_json::from_str(&serde_json::to_string(&s).expect("json")).expect("parses");
    assert_eq!(back.validated("model.json").expect("valid"), s);
    // The paper map drops it.
    let paper = s.paper_map();
    assert!(paper.features.iter().all(|f| f.typical.is_none()));
    assert_eq!(paper.fingerprint(), without.paper_map().fingerprint());
}

#[test]
fn a_bad_typical_is_a_one_line_error_naming_the_key() {
    let cases = [
        (
            "typical = 0.0",
            "typical = 120.0",
            "feature `visits` typical: must be within [lo, hi]",
        ),
        (
            "typical = 0.0",
            "typical = -1.0",
            "feature `visits` typical: must be within [lo, hi]",
        ),
        (
            "typical = 0.0",
            "typical = nan",
            "feature `visits` typical: must be finite",
        ),
        (
            "typical = 0.0",
            "typical = inf",
            "feature `visits` typical: must be finite",
        ),
        (
            "typical = 0.0",
            "typical = 0.0\ncenter = 1.0\nscale = 1.0",
            "feature `visits` typical: declare typical, or center and scale, not both",
        ),
        (
            "transform = \"log1p\"\ntypical = 0.0",
            "typical = 0.0\n[normalisation]\nmode = \"paper\"",
            "feature `visits` typical: only used in ball mode",
        ),
    ];
    for (from, to, want) in cases {
        assert!(COUNTS.contains(from), "{from}");
        let e = err(&COUNTS.replacen(from, to, 1));
        let msg = e.to_string();
        assert!(matches!(e, SchemaError::Normalisation { .. }), "{msg}");
        assert!(msg.starts_with("bad.schema.toml: "), "{msg}");
        assert!(msg.contains(want), "{msg} does not contain {want}");
        assert!(!msg.contains('\n'), "{msg}");
    }
}
