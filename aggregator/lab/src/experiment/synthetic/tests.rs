//! Tests of `synthetic`.

use super::*;

#[test]
fn the_cube_schema_leaves_sphere_points_alone_and_projects_the_rest() {
    let schema = cube_schema(3).expect("schema");
    assert_eq!(schema.dim(), 3);
    let mut out = [0.0; 3];
    schema.normalise_row(&[0.6, -0.8, 0.0], &mut out);
    assert_eq!(out, [0.6, -0.8, 0.0]);
    schema.normalise_row(&[1.0, 1.0, 1.0], &mut out);
    let norm = out.iter().map(|v| v * v).sum::<f64>().sqrt();
    assert!(norm <= 1.0 && norm > 0.999, "{norm}");
}

#[test]
fn real_rows_are_taken_by_the_same_numbers() {
    // Breast Cancer: no `missing` sentinels, so every raw row normalises to its row.
    let sc = Scenario::of("breast-cancer", 1).expect("scenario");
    let rows = sc.rows(1, 0).expect("rows");
    let (data, _) = Bundled::BreastCancer.load();
    let Source::Real(b, _, _) = &sc.source else {
        panic!("real source");
    };
    // utility's own split of the normalised rows, on the same seed path.
    let split = Source::Real(*b, data, None)
        .split(1, &[SPLIT, sc.index, 0])
        .expect("split");
    assert_eq!(rows.own.features(), split.own.features());
    assert_eq!(rows.test.features(), split.test.features());
    assert_eq!(rows.nodes.len(), split.nodes.len());
    for (n, d) in rows.nodes.iter().zip(&split.nodes) {
        assert_eq!(n.data.features(), d.features());
        assert_eq!(n.raw.values.len(), d.len());
        let labels: Vec<bool> = d.labels().iter().map(|&l| l > 0.0).collect();
        assert_eq!(n.raw.positive, labels);
        // Each raw row normalises to its normalised row.
        let mut out = vec![0.0; sc.schema.dim()];
        for (i, raw) in n.raw.values.iter().enumerate() {
            sc.schema.normalise_row(raw, &mut out);
            assert_eq!(out.as_slice(), d.row(i));
        }
    }
}
