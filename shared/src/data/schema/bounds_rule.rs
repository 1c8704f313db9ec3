//! The default ball map: a feature's centre and scale from its declared bounds only (issue 21).
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
//! Invariant 2 holds by construction: the rule is a function of the schema alone; nothing here
//! sees a row.

use super::FeatureSpec;

/// Standardised width of a feature's bounds under the default rule.
pub const SPREAD: f64 = 6.0;

/// (center, scale) of `f` by the rule above: from `lo`, `hi` and the declared transform.
pub fn center_scale(f: &FeatureSpec) -> (f64, f64) {
    let (a, b) = (f.transform(f.lo), f.transform(f.hi));
    (a / 2.0 + b / 2.0, (b - a) / SPREAD)
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
}
