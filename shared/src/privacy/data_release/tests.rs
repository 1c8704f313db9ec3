//! Tests of the data-release template: names, option checks and bit-exact keys.

use super::*;

#[test]
fn names_round_trip_and_options_are_checked() {
    for kind in DataKind::all() {
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

/// Every declared option range is the one checked: the default passes, and a value just outside
/// each end is refused by the spec's check, with a one-line error naming the option.
#[test]
fn declared_option_ranges_are_checked_with_the_option_named() {
    for kind in DataKind::all() {
        let (epsilon, delta) = match kind.registration() {
            r if r.computes_epsilon => (0.0, 1e-6),
            r if r.pure => (1.0, 0.0),
            _ => (1.0, 1e-6),
        };
        for o in kind.options() {
            let with = |v: f64| {
                let mut spec = DataSpec::new(kind, epsilon, delta);
                spec.options.insert(o.name.to_owned(), v);
                spec.check()
            };
            assert!(with(o.default).is_ok(), "{kind} {}", o.name);
            for v in o.range.just_outside() {
                let e = with(v).expect_err("outside its range");
                let text = e.to_string();
                assert!(text.contains(&format!("option `{}`", o.name)), "{text}");
                assert!(!text.contains('\n') && e.is_data_independent(), "{text}");
            }
        }
    }
}

/// Every kind but the test-only example has its row in docs/mechanisms.md.
#[test]
fn every_kind_but_the_example_is_documented() {
    for kind in DataKind::all() {
        let example = kind.name() == super::example::NAME;
        assert_eq!(kind.registration().doc.is_none(), example, "{kind}");
    }
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
