//! Tests of the data-release template: names, option checks and bit-exact keys.

use super::*;

#[test]
fn names_round_trip_and_options_are_checked() {
    for kind in DataKind::ALL {
        assert_eq!(DataKind::parse(kind.name()), Some(kind));
    }
    let names = DataKind::names();
    let unique: std::collections::BTreeSet<_> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "every wire name once");
    let mut spec = DataSpec::new(DataKind::HISTOGRAM, 1.0, 0.0);
    assert!(spec.check().is_ok());
    assert_eq!(spec.option("bins"), 10.0);
    spec.options.insert("rows".into(), 5.0);
    let e = spec.check().expect_err("an unknown option");
    assert!(e.to_string().contains("takes no option `rows`"), "{e}");
    assert!(e.is_data_independent());
    let spec = DataSpec::new(DataKind::MOMENTS_GAUSSIAN, 1.0, 0.0);
    assert!(spec.check().is_err(), "Gaussian needs δ > 0");
    let spec = DataSpec::new(DataKind::MVN_SYNTHETIC, 1.0, 1e-6);
    assert!(spec.check().is_err(), "the plain MVN's ε is computed");
}

#[test]
fn keys_are_bit_exact_and_name_every_option() {
    let a = DataSpec::new(DataKind::HISTOGRAM, 0.1, 0.0);
    let mut b = a.clone();
    b.epsilon = 0.1 + f64::EPSILON;
    assert_ne!(a.key(), b.key());
    let mut c = a.clone();
    c.options.insert("bins".into(), 10.0);
    assert_ne!(a.key(), c.key(), "an explicit default is a different spec");
}
