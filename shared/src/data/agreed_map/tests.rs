use super::*;
use crate::data::schema::FeatureSpec;

/// A bounds-only schema of `p` features on [0, 50] (counts) with an intercept.
fn counts_schema(p: usize) -> Schema {
    let mut text = String::from(
        "name = \"counts\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n",
    );
    for j in 0..p {
        text.push_str(&format!("[[features]]\nname = \"c{j}\"\nlo = 0\nhi = 50\n"));
    }
    Schema::from_toml_str(&text, "counts.toml").expect("valid")
}

/// Zero-heavy counts: feature 0 carries the label, the others are noise.
fn counts(n: usize, p: usize) -> (Vec<Vec<f64>>, Vec<bool>) {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut rows = Vec::new();
    let mut labels = Vec::new();
    for _ in 0..n {
        let positive = uniform() < 0.4;
        let row = (0..p)
            .map(|j| {
                let rate = if j == 0 && positive { 0.7 } else { 0.15 };
                let mut k = 0.0;
                while uniform() < rate && k < 50.0 {
                    k += 1.0;
                }
                k
            })
            .collect();
        rows.push(row);
        labels.push(positive);
    }
    (rows, labels)
}

fn mapped_rows(schema: &Schema, rows: &[Vec<f64>]) -> Vec<Vec<f64>> {
    rows.iter()
        .map(|r| {
            let mut out = vec![0.0; schema.dim()];
            schema.normalise_row(r, &mut out);
            out
        })
        .collect()
}

/// ‖mean row‖² / mean ‖row‖² over the non-intercept columns: 1 when every row is the same.
fn alike(rows: &[Vec<f64>], k: usize) -> f64 {
    let n = rows.len() as f64;
    let mean: Vec<f64> = (0..k)
        .map(|j| rows.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let m2 = rows
        .iter()
        .map(|r| r[..k].iter().map(|v| v * v).sum::<f64>())
        .sum::<f64>()
        / n;
    mean.iter().map(|v| v * v).sum::<f64>() / m2
}

#[test]
fn standardising_from_summaries_stops_the_default_map_crushing_zero_heavy_rows() {
    let schema = counts_schema(12);
    let (rows, labels) = counts(400, 12);
    let default = mapped_rows(&schema, &rows);
    assert!(alike(&default, 12) > 0.9, "{}", alike(&default, 12));
    let summaries = Summaries::of_rows(&rows, &labels);
    let map = derive(&schema, &summaries, Components::All, "test rows").expect("derives");
    let mapped = map.apply(&schema).expect("applies");
    assert_eq!(mapped.dim(), 13);
    let rows_mapped = mapped_rows(&mapped, &rows);
    assert!(
        alike(&rows_mapped, 12) < 0.05,
        "{}",
        alike(&rows_mapped, 12)
    );
    assert!((map.row_scale - 2.0 / 12f64.sqrt()).abs() < 1e-12);
    // The centre is the mean of T(v), the scale its spread.
    let mean0 = rows.iter().map(|r| r[1]).sum::<f64>() / 400.0;
    assert!((map.features[1].center - mean0).abs() < 1e-9);
    assert!(
        mapped
            .agreed_map
            .as_ref()
            .is_some_and(|m| m.base == schema.fingerprint())
    );
}

#[test]
fn the_first_direction_is_the_one_that_carries_the_label() {
    let schema = counts_schema(12);
    let (rows, labels) = counts(2000, 12);
    let map = derive(
        &schema,
        &Summaries::of_rows(&rows, &labels),
        Components::Subspace(3),
        "test rows",
    )
    .expect("derives");
    let s = map.subspace.as_ref().expect("a subspace");
    assert_eq!(s.components(), 3);
    // Orthonormal directions.
    for (i, a) in s.directions.iter().enumerate() {
        for (j, b) in s.directions.iter().enumerate() {
            let d: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let want = if i == j { 1.0 } else { 0.0 };
            assert!((d - want).abs() < 1e-9, "{i} {j}: {d}");
        }
    }
    // Feature 0 alone carries the label: the first direction is nearly e0, positively.
    assert!(s.directions[0][0] > 0.95, "{:?}", s.directions[0]);
    let mapped = map.apply(&schema).expect("applies");
    assert_eq!(mapped.dim(), 4);
    assert_eq!(
        mapped.columns(),
        ["component 1", "component 2", "component 3", "(intercept)"]
    );
    for r in mapped_rows(&mapped, &rows) {
        assert!(r.iter().map(|v| v * v).sum::<f64>().sqrt() <= 1.0);
    }
}

#[test]
fn a_map_for_another_schema_or_with_bad_constants_is_refused() {
    let schema = counts_schema(3);
    let (rows, labels) = counts(100, 3);
    let map = derive(
        &schema,
        &Summaries::of_rows(&rows, &labels),
        Components::All,
        "t",
    )
    .expect("derives");
    let other = counts_schema(4);
    let e = map.apply(&other).expect_err("other schema");
    assert!(e.to_string().contains("the map was made for schema"), "{e}");
    let mut renamed = map.clone();
    renamed.features[1].name = "zz".into();
    let e = renamed.apply(&schema).expect_err("renamed");
    assert!(
        e.to_string()
            .contains("`zz` stands where the schema has `c1`"),
        "{e}"
    );
    let mut bad = map.clone();
    bad.features[2].scale = f64::NAN;
    let e = bad.apply(&schema).expect_err("nan scale");
    assert!(e.to_string().contains("feature `c2` scale"), "{e}");
    let mut wide = map.clone();
    wide.subspace = Some(Subspace {
        directions: vec![vec![1.0, 0.0]],
    });
    let e = wide.apply(&schema).expect_err("short direction");
    assert!(e.to_string().contains("subspace.directions[0]"), "{e}");
    assert!(matches!(
        derive(
            &schema,
            &Summaries::of_rows(&rows, &labels),
            Components::Subspace(4),
            "t"
        ),
        Err(MapError::Components { k: 4, p: 3 })
    ));
}

#[test]
fn a_map_round_trips_through_its_file_and_changes_the_fingerprint() {
    let schema = counts_schema(5);
    let (rows, labels) = counts(300, 5);
    let map = derive(
        &schema,
        &Summaries::of_rows(&rows, &labels),
        Components::Subspace(2),
        "the aggregator's 300 own rows, in the clear",
    )
    .expect("derives");
    let text = map.to_toml();
    assert!(text.starts_with("# An agreed map"));
    let back = AgreedMap::from_toml_str(&text, "map.toml").expect("parses");
    assert_eq!(back, map);
    let a = map.apply(&schema).expect("applies");
    assert_ne!(a.fingerprint(), schema.fingerprint());
    let mut moved = map.clone();
    moved.features[0].center += 1e-9;
    assert_ne!(
        moved.apply(&schema).expect("applies").fingerprint(),
        a.fingerprint()
    );
    let e = AgreedMap::from_toml_str("format = 1\n", "m.toml").expect_err("not a map");
    assert!(e.to_string().starts_with("m.toml: line 1: "), "{e}");
}

#[test]
fn a_constant_feature_keeps_the_bounds_rule_scale() {
    let schema = counts_schema(2);
    let rows: Vec<Vec<f64>> = (0..50).map(|i| vec![0.0, (i % 5) as f64]).collect();
    let labels: Vec<bool> = (0..50).map(|i| i % 2 == 0).collect();
    let map = derive(
        &schema,
        &Summaries::of_rows(&rows, &labels),
        Components::All,
        "t",
    )
    .expect("derives");
    assert_eq!(map.features[0].center, 0.0);
    assert_eq!(map.features[0].scale, 50.0 / 6.0);
    let f = FeatureSpec::bounded("x", 0.0, 1.0);
    assert_eq!(f.transform(0.5), 0.5);
}

#[test]
fn one_class_only_gives_principal_directions() {
    let schema = counts_schema(5);
    let (rows, _) = counts(200, 5);
    let labels = vec![true; rows.len()];
    let map = derive(
        &schema,
        &Summaries::of_rows(&rows, &labels),
        Components::Subspace(2),
        "one class",
    )
    .expect("derives");
    let s = map.subspace.expect("a subspace");
    assert_eq!(s.components(), 2);
    assert!(s.directions.iter().flatten().all(|v| v.is_finite()));
    let d: f64 = s.directions[0]
        .iter()
        .zip(&s.directions[1])
        .map(|(a, b)| a * b)
        .sum();
    assert!(d.abs() < 1e-9, "orthogonal: {d}");
}
