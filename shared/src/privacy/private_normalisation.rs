//! Ball-map centres and scales from the organisations' **private statistics** instead of
//! declared constants: each organisation releases the per-class moments of
//! its rows ([`crate::privacy::statistics::moments`], by the Gaussian mechanism), the releases
//! are pooled, and the pooled mean and standard deviation of each feature become its `center`
//! and `scale` in the ball map ([`crate::data::normalise`]).
//!
//! **What is released, and what it costs.** The moments are of the value the ball map centres
//! and scales: T(v) of the value clipped to the schema's [lo, hi] (T the feature's declared
//! transform, identity or log1p), whose public bounds are [T(lo), T(hi)] ([`transformed`]).
//! Every organisation pays the moments' (ε, δ) once, on top of what its learners cost; the
//! pooling and the map are post-processing of the releases, so nothing else is spent. The
//! bounds, the transform, `row_scale` and the intercept stay the schema's.
//!
//! **Pooling** (post-processing). With noisy class counts ñ_{o,k} (floored at 0), class means
//! m_{o,k} and variances v_{o,k} of organisation o: N = Σ ñ, centre = Σ ñ·m / N, second moment
//! Σ ñ·(v + m²) / N, scale = √(second moment − centre²), floored at
//! [`MIN_SCALE_FRACTION`]·(T(hi) − T(lo)) so that noise cannot make a feature's scale vanish,
//! and the centre clamped to [T(lo), T(hi)]. With no count left (N ≤ 0) the feature keeps the
//! middle of its bounds and a sixth of their width.

use crate::data::csv::RawRows;
use crate::data::schema::{FeatureSpec, Schema};
use crate::privacy::statistics::moments::Moments;

/// Smallest scale, as a fraction of a feature's transformed range.
pub const MIN_SCALE_FRACTION: f64 = 1e-3;

/// The features as the moments see them: bounds [T(lo), T(hi)], and the rows' T(v) of clipped
/// values (what the ball map centres and scales).
pub fn transformed(schema: &Schema, raw: &RawRows) -> (Vec<FeatureSpec>, Vec<Vec<f64>>) {
    let features = schema
        .features
        .iter()
        .map(|f| FeatureSpec::bounded(f.name.clone(), f.transform(f.lo), f.transform(f.hi)))
        .collect();
    let rows = raw
        .values
        .iter()
        .map(|row| {
            schema
                .features
                .iter()
                .zip(row)
                .map(|(f, &v)| f.transform(v.clamp(f.lo, f.hi)))
                .collect()
        })
        .collect();
    (features, rows)
}

/// Per feature, the pooled centre and scale of the organisations' releases (module docs).
/// `features` are the transformed features of [`transformed`].
pub fn pooled_constants(releases: &[Moments], features: &[FeatureSpec]) -> Vec<(f64, f64)> {
    features
        .iter()
        .enumerate()
        .map(|(j, f)| {
            let (mut n, mut first, mut second) = (0.0, 0.0, 0.0);
            for class in releases.iter().flat_map(|m| m.classes.iter()) {
                let (Some(&mean), Some(&var)) = (class.mean.get(j), class.variance.get(j)) else {
                    continue;
                };
                let count = class.count.max(0.0);
                n += count;
                first += count * mean;
                second += count * (var + mean * mean);
            }
            let width = f.hi - f.lo;
            if n <= 0.0 {
                return (f.lo / 2.0 + f.hi / 2.0, width / 6.0);
            }
            let centre = (first / n).clamp(f.lo, f.hi);
            let variance = (second / n - centre * centre).max(0.0);
            (centre, variance.sqrt().max(MIN_SCALE_FRACTION * width))
        })
        .collect()
}

/// `schema` with its ball-map centres and scales replaced by `constants` (one per feature), its
/// `source` saying where they came from. The schema must be in ball mode.
pub fn with_constants(schema: &Schema, constants: &[(f64, f64)], source: &str) -> Schema {
    let mut out = schema.clone();
    for (f, &(centre, scale)) in out.features.iter_mut().zip(constants) {
        f.center = Some(centre);
        f.scale = Some(scale);
        f.source = Some(source.to_owned());
    }
    out
}

/// Why private constants could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PrivateNormalisationError {
    /// The schema is not in ball mode (the paper map has no centres or scales).
    #[error(
        "private normalisation replaces the ball map's centres and scales; schema `{0}` uses the paper map"
    )]
    NotBall(String),
    /// Fewer rows than organisations.
    #[error("{rows} rows cannot be dealt over {orgs} organisations")]
    TooFewRows {
        /// Rows.
        rows: usize,
        /// Organisations.
        orgs: usize,
    },
    /// The moments mechanism refused.
    #[error(transparent)]
    Moments(#[from] crate::privacy::statistics::moments::MomentsError),
}

/// A simulation of the protocol: `raw`'s rows dealt at random over `orgs` organisations, each
/// releasing its moments by the Gaussian mechanism at (ε, δ) (seeded noise: a simulation), the
/// releases pooled into the schema's new constants. Returns the schema and the constants.
pub fn simulate_private_constants(
    schema: &Schema,
    raw: &RawRows,
    orgs: usize,
    epsilon: f64,
    delta: f64,
    seed: u64,
) -> Result<(Schema, Vec<(f64, f64)>), PrivateNormalisationError> {
    use crate::privacy::noise::NoiseSource;
    use crate::privacy::statistics::moments::{MomentNoise, MomentsParams, MomentsPlan};
    use crate::util::seed::{derive_seed, derived_rng};
    use rand::seq::SliceRandom;
    if schema.mode() != crate::data::normalise::MapMode::Ball {
        return Err(PrivateNormalisationError::NotBall(schema.name.clone()));
    }
    let n = raw.values.len();
    if orgs == 0 || n < orgs {
        return Err(PrivateNormalisationError::TooFewRows { rows: n, orgs });
    }
    let (features, rows) = transformed(schema, raw);
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut derived_rng(seed, &[0x6e6f726d]));
    let mut releases = Vec::with_capacity(orgs);
    for o in 0..orgs {
        let mine: Vec<usize> = order.iter().copied().skip(o).step_by(orgs).collect();
        let plan = MomentsPlan::new(
            &features,
            MomentsParams {
                noise: MomentNoise::Gaussian,
                epsilon,
                delta,
                max_rows: mine.len(),
            },
        )?;
        let values: Vec<Vec<f64>> = mine.iter().map(|&i| rows[i].clone()).collect();
        let labels: Vec<bool> = mine.iter().map(|&i| raw.positive[i]).collect();
        let mut noise = NoiseSource::seeded(derive_seed(seed, &[0x6e6f726d, o as u64]));
        releases.push(plan.release(&values, &labels, &mut noise)?);
    }
    let constants = pooled_constants(&releases, &features);
    let source = format!(
        "pooled private moments of {orgs} organisations (Gaussian mechanism, ε = {epsilon}, δ = {delta} each)"
    );
    Ok((with_constants(schema, &constants, &source), constants))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::guarantee::PrivacyGuarantee;
    use crate::privacy::statistics::moments::ClassMoments;

    fn class(count: f64, mean: f64, variance: f64) -> ClassMoments {
        ClassMoments {
            count,
            sum: vec![count * mean],
            mean: vec![mean],
            variance: vec![variance],
            covariance: vec![variance],
        }
    }

    #[test]
    fn pooling_is_the_law_of_total_variance() {
        // Two organisations: classes (10, mean 1, var 1), (30, mean 3, var 4); (−2 counted as 0).
        let releases = vec![
            Moments {
                guarantee: PrivacyGuarantee::replace_one(1.0, 1e-6),
                classes: [class(10.0, 1.0, 1.0), class(30.0, 3.0, 4.0)],
            },
            Moments {
                guarantee: PrivacyGuarantee::replace_one(1.0, 1e-6),
                classes: [class(-2.0, 100.0, 1.0), class(0.0, 0.0, 0.0)],
            },
        ];
        let features = [FeatureSpec::bounded("a", -10.0, 10.0)];
        let c = pooled_constants(&releases, &features);
        // mean = (10 + 90)/40 = 2.5; E[x²] = (10·2 + 30·13)/40 = 10.25; var = 4.
        assert!((c[0].0 - 2.5).abs() < 1e-12, "{c:?}");
        assert!((c[0].1 - 2.0).abs() < 1e-12, "{c:?}");
        // No counts at all: the middle of the bounds and a sixth of their width.
        let empty = pooled_constants(&releases[1..], &features);
        assert_eq!(empty[0], (0.0, 20.0 / 6.0));
    }

    #[test]
    fn transformed_bounds_and_rows_follow_the_declared_transform() {
        let schema = crate::data::bundled::Bundled::Diabetes.schema();
        let raw = RawRows {
            values: vec![schema.features.iter().map(|f| f.hi + 1.0).collect()],
            positive: vec![true],
            missing: Vec::new(),
        };
        let (features, rows) = transformed(&schema, &raw);
        for ((f, t), v) in schema.features.iter().zip(&features).zip(&rows[0]) {
            assert_eq!(*v, t.hi, "{}: clipped to hi, then transformed", f.name);
            assert!(t.lo < t.hi);
        }
    }
}
