//! Invariant 2, end to end: no normalisation constant, clipping bound or λ is computed from the
//! private data. A row's normalised image depends on that row only, and every public parameter a
//! release records (λ = auto, μ, ε′, noise scales, sensitivities) depends on the number of rows
//! only, not on their values: replacing, perturbing and permuting the other rows changes
//! neither. Only n may matter, and it does.

use dpagg_shared::data::bundled::Bundled;
use dpagg_shared::data::csv::read_csv;
use dpagg_shared::data::schema::Schema;
use dpagg_shared::privacy::mechanism::{Lambda, MechanismKind};
use dpagg_shared::privacy::noise::NoiseSource;
use dpagg_shared::privacy::release::Parameters;
use dpagg_shared::util::seed::derived_rng;
use dpagg_shared::{Dataset, Mechanism};
use rand::RngExt;
use rand::seq::SliceRandom;

/// The header and the data lines of a bundled CSV.
fn lines(b: Bundled) -> (String, Vec<String>) {
    let mut it = b.csv_text().lines().map(str::to_owned);
    let header = it.next().expect("header");
    (header, it.collect())
}

fn load(header: &str, rows: &[String], schema: &Schema) -> Dataset {
    let text = format!("{header}\n{}\n", rows.join("\n"));
    read_csv(text.as_bytes(), "rows.csv", schema)
        .expect("valid")
        .0
}

/// Each line with its feature values replaced by draws far inside and outside the declared
/// bounds (and exactly the `missing` sentinel now and then); the label is kept.
fn scrambled(lines: &[String], schema: &Schema, seed: u64) -> Vec<String> {
    let mut rng = derived_rng(seed, &[]);
    lines
        .iter()
        .map(|l| {
            let label = l.rsplit(',').next().expect("label");
            let values: Vec<String> = schema
                .features
                .iter()
                .map(|f| {
                    let v = match rng.random_range(0..4) {
                        0 => f
                            .missing
                            .as_ref()
                            .and_then(|m| m.first_number())
                            .unwrap_or(f.lo),
                        1 => f.hi + rng.random_range(0.0..1e6),
                        2 => f.lo - rng.random_range(0.0..1e3),
                        _ => rng.random_range(f.lo..f.hi),
                    };
                    format!("{v}")
                })
                .collect();
            format!("{},{label}", values.join(","))
        })
        .collect()
}

#[test]
fn a_rows_image_depends_on_that_row_only() {
    for b in Bundled::ALL {
        for schema in [b.schema(), b.schema().paper_map()] {
            let (header, original) = lines(b);
            let base = load(&header, &original, &schema);
            for (k, i) in [0usize, 1, 17, original.len() - 1].into_iter().enumerate() {
                // Every other row replaced by arbitrary values, then the rows shuffled.
                let mut other = scrambled(&original, &schema, k as u64);
                other[i] = original[i].clone();
                let mut order: Vec<usize> = (0..other.len()).collect();
                order.shuffle(&mut derived_rng(100 + k as u64, &[]));
                let shuffled: Vec<String> = order.iter().map(|&j| other[j].clone()).collect();
                let d = load(&header, &shuffled, &schema);
                let at = order.iter().position(|&j| j == i).expect("present");
                assert_eq!(
                    d.row(at),
                    base.row(i),
                    "{}: row {i} changed with the other rows",
                    b.name()
                );
                // The same rows in isolation map to the same image too.
                let alone = load(&header, std::slice::from_ref(&original[i]), &schema);
                assert_eq!(alone.row(0), base.row(i));
            }
        }
    }
}

/// Every private learner with λ = auto, at an ε where it runs.
fn learners() -> Vec<(Box<dyn Mechanism>, &'static str)> {
    let auto = |kind: MechanismKind, eps: f64, delta: f64| {
        kind.build(eps, delta, Lambda::Auto).expect("valid")
    };
    vec![
        (auto(MechanismKind::ObjectivePerturbation, 1.0, 0.0), "op"),
        (
            auto(MechanismKind::ObjectivePerturbation, 0.5, 1e-5),
            "op-gauss",
        ),
        (
            auto(MechanismKind::ObjectivePerturbationCms2011, 2.0, 0.0),
            "alg2",
        ),
        (auto(MechanismKind::OutputPerturbation, 1.0, 0.0), "outp"),
        (
            auto(MechanismKind::OutputPerturbationCms2011, 1.0, 0.0),
            "alg1",
        ),
        (auto(MechanismKind::DpSgd, 1.0, 1e-5), "dp-sgd"),
        (auto(MechanismKind::Langevin, 1.0, 1e-5), "langevin"),
    ]
}

/// What a release records besides the coefficients: every parameter it ran with.
fn parameters(m: &dyn Mechanism, data: &Dataset) -> Parameters {
    m.release(data, &mut NoiseSource::seeded(1))
        .expect("release")
        .metadata
        .parameters
}

#[test]
fn lambda_auto_and_every_recorded_parameter_depend_on_n_only() {
    let b = Bundled::Diabetes;
    let schema = b.schema();
    let (header, original) = lines(b);
    let base = load(&header, &original[..300], &schema);
    let mut other = scrambled(&original[300..600], &schema, 7);
    other.shuffle(&mut derived_rng(8, &[]));
    let different = load(&header, &other, &schema);
    assert_ne!(base.features(), different.features());
    let smaller = load(&header, &original[..60], &schema);
    for (m, name) in learners() {
        let p = parameters(m.as_ref(), &base);
        assert_eq!(p, parameters(m.as_ref(), &different), "{name}");
        assert_eq!(p["lambda_auto"], 1.0, "{name}");
        // n itself is public and does move λ = auto.
        let q = parameters(m.as_ref(), &smaller);
        assert!(q["lambda"] > p["lambda"], "{name}: λ grows as n shrinks");
    }
}
