//! A node's guarantee does not depend on the agreed map (docs/proofs/agreed-map.md): for hostile
//! maps — one that sends every row to the same point, one aimed at a single record — every
//! mapped row stays in the unit ball, every mechanism releases under them, and the guarantee it
//! states is the one it states under an honest map, decided before any row is read; a map whose
//! constants could overflow a row is refused before anything is read.

use dpagg_shared::data::agreed_map::{AgreedMap, Components, Summaries, derive};
use dpagg_shared::data::normalise::Subspace;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::mechanism::{Lambda, LearnerSpec, MechanismKind};
use dpagg_shared::privacy::noise::NoiseSource;

const P: usize = 6;

fn schema() -> Schema {
    let mut text = String::from(
        "name = \"hostile\"\n[label]\ncolumn = \"y\"\npositive = \"1\"\nnegative = \"0\"\n",
    );
    for j in 0..P {
        text.push_str(&format!(
            "[[features]]\nname = \"f{j}\"\nlo = 0\nhi = 100\n"
        ));
    }
    Schema::from_toml_str(&text, "hostile.toml").expect("valid")
}

/// 200 records with a missing value here and there, and their labels.
fn records() -> (Vec<Vec<f64>>, Vec<bool>) {
    let rows = (0..200)
        .map(|i| {
            (0..P)
                .map(|j| {
                    if (i + j) % 37 == 0 {
                        f64::NAN
                    } else {
                        ((i * 7 + j * 13) % 101) as f64 * if j == 0 { 1.0 } else { 0.5 }
                    }
                })
                .collect()
        })
        .collect();
    let labels = (0..200).map(|i| (i * 7) % 101 > 50).collect();
    (rows, labels)
}

fn honest(schema: &Schema) -> AgreedMap {
    let (rows, labels) = records();
    derive(
        schema,
        &Summaries::of_records(schema, &rows, &labels),
        Components::Subspace(3),
        "test rows",
    )
    .expect("derives")
}

/// The maps a hostile aggregator could send.
fn hostile(schema: &Schema) -> Vec<(&'static str, AgreedMap)> {
    let base = honest(schema);
    let (rows, _) = records();
    let target = &rows[17];
    let mut one_point = base.clone();
    one_point.subspace = Some(Subspace {
        directions: vec![vec![0.0; P]; 3],
    });
    let mut aimed = base.clone();
    aimed.subspace = None;
    aimed.row_scale = 1e6;
    for (f, &v) in aimed.features.iter_mut().zip(target) {
        f.center = if v.is_nan() { 0.0 } else { v };
        f.scale = 1e-9;
    }
    vec![
        ("every row one point", one_point),
        ("aimed at record 17", aimed),
    ]
}

/// A map whose row scale and directions would send a row past any finite norm.
fn enormous(schema: &Schema) -> AgreedMap {
    let mut huge = honest(schema);
    huge.row_scale = 1e300;
    huge.subspace = Some(Subspace {
        directions: vec![vec![1e300; P], vec![-1e300; P], vec![1e-300; P]],
    });
    huge
}

#[test]
fn hostile_maps_keep_every_row_in_the_ball_and_the_guarantee_unchanged() {
    let schema = schema();
    let (rows, labels) = records();
    let specs = [
        (MechanismKind::ObjectivePerturbation, 1.0, 0.0),
        (MechanismKind::OutputPerturbation, 1.0, 0.0),
        (MechanismKind::Langevin, 1.0, 1e-5),
    ];
    let mapped = |map: &AgreedMap| {
        let s = map
            .apply(&schema)
            .expect("a valid (if hostile) map applies");
        AgreedMap::rows(&s, &rows, &labels)
    };
    let honest_rows = mapped(&honest(&schema));
    for (name, map) in hostile(&schema) {
        let data = mapped(&map);
        assert!(
            data.max_row_norm() <= 1.0,
            "{name}: {}",
            data.max_row_norm()
        );
        assert!(data.features().iter().all(|v| v.is_finite()), "{name}");
        for &(kind, epsilon, delta) in &specs {
            let spec = LearnerSpec {
                map: Some(Box::new(map.clone())),
                ..LearnerSpec::new(kind, epsilon, delta, Lambda::Auto)
            };
            let mechanism = spec.build().expect("builds");
            // The guarantee is stated before any row is read: the same under every map.
            let before = mechanism.guarantee();
            let honest_release = mechanism
                .release(&honest_rows, &mut NoiseSource::seeded(1))
                .expect("releases");
            let release = mechanism
                .release(&data, &mut NoiseSource::seeded(1))
                .unwrap_or_else(|e| panic!("{name} {}: {e}", kind.name()));
            assert_eq!(release.metadata.guarantee, before, "{name} {}", kind.name());
            assert_eq!(honest_release.metadata.guarantee, before);
            assert!(release.metadata.assumptions.max_row_norm <= 1.0, "{name}");
        }
    }
    // The one-point map: every row is the same point, so the learner cannot tell rows apart.
    let one = mapped(&hostile(&schema)[0].1);
    assert!((1..one.len()).all(|i| one.row(i) == one.row(0)));
}

#[test]
fn a_map_with_a_non_finite_constant_or_for_another_schema_is_refused() {
    let schema = schema();
    let mut nan = honest(&schema);
    nan.row_scale = f64::NAN;
    assert!(nan.apply(&schema).is_err());
    let mut inf = honest(&schema);
    if let Some(s) = inf.subspace.as_mut() {
        s.directions[0][0] = f64::INFINITY;
    }
    assert!(inf.apply(&schema).is_err());
    let e = enormous(&schema).apply(&schema).expect_err("overflowing");
    assert!(
        e.to_string().contains("normalisation.row_scale: too large"),
        "{e}"
    );
    let mut other = honest(&schema);
    other.schema = "0".repeat(64);
    let e = other.apply(&schema).expect_err("another schema");
    assert!(e.to_string().contains("made for schema"), "{e}");
}
