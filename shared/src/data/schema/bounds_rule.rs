//! The default ball map: a feature's centre and scale from its declared bounds only.
//!
//! A schema that declares a feature's `lo` and `hi` (and, optionally, its `transform`) but no
//! `center` and `scale` gets them by one public rule that reads nothing else:
//!
//! - center = (T(lo) + T(hi)) / 2, the middle of the transformed range;
//! - scale = (T(hi) − T(lo)) / [`SPREAD`].
//!
//! So every value within the bounds standardises to z ∈ [−SPREAD/2, SPREAD/2]; the row is then
//! multiplied by the schema's `row_scale` (default 2/√p), the intercept constant is appended and
//! the row is projected onto the unit ball (`super::super::normalise`). This is the rule the
//! bundled Breast Cancer schema uses on its published ranges, applied to the declared bounds.
//!
//! Why SPREAD = 6. It is the Breast Cancer schema's rule, so a bounds-only schema maps like a
//! hand-written one. Declared bounds are plausible ranges rounded outward, so a real file fills
//! only part of them; with SPREAD = 6 a feature filling the middle third of its bounds has
//! |z| ≤ 1 and rows of p such features have norm about 2 before projection: they use the whole
//! unit ball, which is what the private learners' noise is measured against. Measured on
//! bounds-only schemas of Diabetes, Breast Cancer and digits (10 organisations, ε = 1, 20
//! trials; EXPERIMENTS.md, "Your own data"): SPREAD = 3, 4, 6 and 8 give the same accuracies to
//! within 0.2 point; SPREAD = 2 (z within [−1, 1]) loses 1.2 points of mirror averaging on
//! Breast Cancer; against the paper map every SPREAD ≥ 3 gains 0.3 to 1.7 points of mirror
//! averaging and costs the tuned local model at most 0.3 point (the projection is not linear).
//!
//! # A declared typical value
//!
//! The middle of the bounds is a poor centre for a non-negative feature that is mostly zero or
//! skewed (a count, a lab value) with bounds [0, hi]: nearly every value sits at z ≈ −3, every
//! row becomes a long vector in nearly the same direction, and after the projection onto the
//! ball the rows are alike, so the learners see little but their common offset. A feature may
//! then declare `typical`, a public raw value within [lo, hi] (0 for a mostly-zero count), and
//! the rule becomes
//!
//! - center = T(typical);
//! - scale = max(T(hi) − T(typical), T(typical) − T(lo)) / (SPREAD/2);
//!
//! so the typical value standardises to z = 0 and the bounds stay within |z| ≤ SPREAD/2, the
//! farther one on its edge. This is how the default rule does not put the typical value of a
//! non-negative zero-heavy feature at the edge of the scale. Without `typical` the rule above is
//! computed exactly as before, to the bit. `dpagg-node schema init` proposes `typical = 0.0`
//! (with `transform = "log1p"`) for a column that is mostly zero in the file it drafts from, in
//! comments the user accepts by uncommenting them (`super::super::schema_init`).
//!
//! Invariant 2 holds by construction: the rule is a function of the schema alone; nothing here
//! sees a row.

use super::FeatureSpec;

/// Standardised width of a feature's bounds under the default rule.
pub const SPREAD: f64 = 6.0;

/// (center, scale) of `f` by the rule above: from `lo`, `hi`, the declared transform and, when
/// declared, `typical`.
pub fn center_scale(f: &FeatureSpec) -> (f64, f64) {
    let (a, b) = (f.transform(f.lo), f.transform(f.hi));
    match f.typical {
        None => (a / 2.0 + b / 2.0, (b - a) / SPREAD),
        Some(typical) => {
            let c = f.transform(typical);
            (c, (b - c).max(c - a) / (SPREAD / 2.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::normalise::Transform;

    #[test]
    fn identity_bounds_map_to_plus_minus_three() {
        let f = FeatureSpec::bounded("age", 20.0, 90.0);
        let (c, s) = center_scale(&f);
        assert_eq!(c, 55.0);
        assert!((s - 70.0 / 6.0).abs() < 1e-12);
        assert!(((90.0 - c) / s - 3.0).abs() < 1e-12);
        assert!(((20.0 - c) / s + 3.0).abs() < 1e-12);
    }

    #[test]
    fn log1p_is_the_breast_cancer_rule() {
        // data/breast_cancer.schema.toml, mean_radius: unit = 0.2811 on the published range
        // [6.981, 28.11] gives center 3.933417 and scale 0.227234.
        let mut f = FeatureSpec::bounded("mean_radius", 6.981, 28.11);
        f.transform = Some(Transform::Log1p);
        f.unit = Some(0.2811);
        let (c, s) = center_scale(&f);
        assert!((c - 3.933417).abs() < 1e-6, "{c}");
        assert!((s - 0.227234).abs() < 1e-6, "{s}");
    }

    #[test]
    fn without_typical_the_numbers_are_the_old_ones_to_the_bit() {
        // The formula before `typical` existed, written out: every bounds-only map keeps its
        // numbers (and `experiment paper` its outputs).
        let old = |f: &FeatureSpec| {
            let (a, b) = (f.transform(f.lo), f.transform(f.hi));
            (a / 2.0 + b / 2.0, (b - a) / 6.0)
        };
        let mut log = FeatureSpec::bounded("insulin", 0.0, 1000.0);
        log.transform = Some(Transform::Log1p);
        log.unit = Some(10.0);
        for f in [
            FeatureSpec::bounded("age", 18.0, 100.0),
            FeatureSpec::bounded("b", -5.0, 5.0),
            FeatureSpec::bounded("tiny", 0.053, 0.163),
            log,
        ] {
            let (c, s) = center_scale(&f);
            let (oc, os) = old(&f);
            assert_eq!(
                (c.to_bits(), s.to_bits()),
                (oc.to_bits(), os.to_bits()),
                "{}",
                f.name
            );
        }
        let (c, s) = center_scale(&FeatureSpec::bounded("age", 18.0, 100.0));
        assert_eq!((c, s), (59.0, 82.0 / 6.0));
    }

    #[test]
    fn typical_is_the_centre_and_the_farther_bound_is_three_scales_away() {
        // Identity, typical 0 on [0, 30]: center 0, scale 10; 30 is z = 3.
        let mut f = FeatureSpec::bounded("visits", 0.0, 30.0);
        f.typical = Some(0.0);
        assert_eq!(center_scale(&f), (0.0, 10.0));
        // Typical nearer the top: the lower bound is the farther one.
        f.typical = Some(24.0);
        assert_eq!(center_scale(&f), (24.0, 8.0));
        // log1p, unit 1, typical 0 on [0, 99]: center ln 1 = 0, scale ln(100)/3.
        let mut f = FeatureSpec::bounded("count", 0.0, 99.0);
        f.transform = Some(Transform::Log1p);
        f.typical = Some(0.0);
        let (c, s) = center_scale(&f);
        assert_eq!(c, 0.0);
        assert!((s - 100f64.ln() / 3.0).abs() < 1e-15, "{s}");
        // log1p, unit 10, typical 90 on [0, 990]: T(90) = ln 10, T(990) = ln 100, both sides ln 10.
        f.hi = 990.0;
        f.unit = Some(10.0);
        f.typical = Some(90.0);
        let (c, s) = center_scale(&f);
        assert!((c - 10f64.ln()).abs() < 1e-15, "{c}");
        assert!((s - 10f64.ln() / 3.0).abs() < 1e-15, "{s}");
        for v in [0.0, 990.0] {
            assert!(((f.transform(v) - c) / s).abs() <= 3.0 + 1e-12, "{v}");
        }
    }
}
