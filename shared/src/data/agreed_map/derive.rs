//! An agreed map's constants from [`Summaries`]: every step is post-processing of the
//! summaries, so the map costs exactly what they cost (nothing more) and is fixed before any
//! node reads a row.
//!
//! 1. **Centres and scales.** Pooling the two classes, μ_j = Σ_k n_k m_kj / N and the total
//!    covariance Σ = Σ_k (n_k/N)(S_k + (m_k − μ)(m_k − μ)ᵀ); the centre of feature j is μ_j
//!    (clamped to [T(lo), T(hi)]) and its scale σ_j = √Σ_jj. A feature nearly constant on the
//!    summarised rows (σ_j below [`CONSTANT_FRACTION`] of its transformed width) keeps the scale
//!    of the bounds rule, (T(hi) − T(lo))/6, so it cannot blow up on another organisation's rows.
//!    z_j = (T(v_j) − μ_j)/σ_j is what a data scientist would call standardisation — the step the
//!    bounds rule cannot take for a zero-heavy or skewed feature, whose typical value it puts
//!    near the edge of the scale.
//! 2. **Subspace** (optional, k components). With C = D⁻¹ΣD⁻¹ the correlation of z and
//!    s = D⁻¹(m₊ − m₋) the standardised difference of the class means, the directions are an
//!    orthonormal basis of the Krylov space span{s, Cs, …, C^{k−1}s}: the space spanned by the
//!    weights of k-component partial least squares of the label on z (Helland 1988, "On the
//!    structure of partial least squares regression"; PLS1's weight vectors span exactly this
//!    Krylov space), computed from the covariances alone. When s vanishes or the Krylov space
//!    has fewer than k dimensions, the remaining directions are the leading eigenvectors of C
//!    (principal components) orthogonal to those found. A learner on u = P z has k weights
//!    instead of p, so its noise grows with k, not p.
//! 3. **Row scale** κ/√V, with κ = 2 the default map's constant and V = Σ_i P_iᵀ C P_i the
//!    summarised rows' mean squared norm of u (p, the number of features, without a subspace):
//!    a typical row has norm about 2 before it is projected onto the unit ball, as under the
//!    default map ([`crate::data::schema::bounds_rule`]).

use super::summaries::Summaries;
use super::{AgreedMap, FORMAT, FeatureMap, MapError};
use crate::data::normalise::{DEFAULT_INTERCEPT_VALUE, DEFAULT_ROW_SCALE_KAPPA, Subspace};
use crate::data::schema::Schema;
use crate::data::schema::bounds_rule::SPREAD;
use nalgebra::{DMatrix, DVector, SymmetricEigen};

/// Below this fraction of its transformed width, a feature's spread counts as none.
pub const CONSTANT_FRACTION: f64 = 1e-3;

/// How many directions the map keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Components {
    /// Every feature: centres and scales only.
    All,
    /// A k-dimensional subspace (k ≤ the number of features).
    Subspace(usize),
}

/// The subspace's components unless the aggregator chooses: min(p, this). Measured on the
/// lab's wide scenarios at ε = 1 (EXPERIMENTS.md, "Wide tables"): among k = 2, 4 and 8, 4 keeps
/// mirror averaging within 1.1 points of the best k on each (best on Breast Cancer and on digits
/// with 40 own rows; 2 is 0.7 point better on digits, 8 is 1.1 better on the EHR table). The
/// rows a node holds and its ε, which decide how much noise a component costs, are not known
/// when the map is made, so no rule here reads them.
pub const DEFAULT_COMPONENTS: usize = 4;

impl Components {
    /// The default for p features: a subspace of min(p, [`DEFAULT_COMPONENTS`]) components.
    pub fn auto(p: usize) -> Components {
        Components::Subspace(p.clamp(1, DEFAULT_COMPONENTS))
    }
}

/// Centres, scales and the standardised covariance C and class difference s.
struct Standardised {
    centre: Vec<f64>,
    scale: Vec<f64>,
    correlation: DMatrix<f64>,
    difference: DVector<f64>,
}

fn standardise(
    schema: &Schema,
    s: &Summaries,
    labelled: &Summaries,
) -> Result<Standardised, MapError> {
    let p = schema.features.len();
    if let Some(bad) = [s, labelled].into_iter().find(|x| x.features() != p) {
        return Err(MapError::Summaries(format!(
            "{} features summarised, the schema has {p}",
            bad.features()
        )));
    }
    let n = s.rows();
    if n < 2.0 {
        return Err(MapError::Summaries(format!(
            "{n} row(s) summarised: too few for centres and scales"
        )));
    }
    let weight = |k: usize| s.classes[k].count.max(0.0) / n;
    let mean: Vec<f64> = (0..p)
        .map(|j| (0..2).map(|k| weight(k) * s.classes[k].mean[j]).sum())
        .collect();
    let mut sigma = DMatrix::<f64>::zeros(p, p);
    for (k, c) in s.classes.iter().enumerate() {
        let w = weight(k);
        for i in 0..p {
            for j in 0..p {
                let between = (c.mean[i] - mean[i]) * (c.mean[j] - mean[j]);
                sigma[(i, j)] += w * (c.covariance[i * p + j] + between);
            }
        }
    }
    let mut centre = Vec::with_capacity(p);
    let mut scale = Vec::with_capacity(p);
    for (j, f) in schema.features.iter().enumerate() {
        let (a, b) = (f.transform(f.lo), f.transform(f.hi));
        let sd = sigma[(j, j)].max(0.0).sqrt();
        centre.push(mean[j].clamp(a, b));
        scale.push(if sd.is_finite() && sd > CONSTANT_FRACTION * (b - a) {
            sd
        } else {
            (b - a) / SPREAD
        });
    }
    let correlation = DMatrix::from_fn(p, p, |i, j| sigma[(i, j)] / (scale[i] * scale[j]));
    // Without both classes there is no class difference: the directions are then principal
    // components only.
    let [neg, pos] = &labelled.classes;
    let both = neg.count > 0.0 && pos.count > 0.0;
    let difference = DVector::from_fn(p, |j, _| {
        if both {
            (pos.mean[j] - neg.mean[j]) / scale[j]
        } else {
            0.0
        }
    });
    Ok(Standardised {
        centre,
        scale,
        correlation,
        difference,
    })
}

/// Removes from `v` its components along `basis` (twice: classical Gram–Schmidt with one
/// reorthogonalisation) and returns its remaining norm.
fn orthogonalise(v: &mut DVector<f64>, basis: &[DVector<f64>]) -> f64 {
    for _ in 0..2 {
        for b in basis {
            let c = b.dot(v);
            v.axpy(-c, b, 1.0);
        }
    }
    v.norm()
}

/// Up to `k` orthonormal directions: the Krylov basis of (C, s), then principal components.
fn directions(c: &DMatrix<f64>, s: &DVector<f64>, k: usize) -> Vec<DVector<f64>> {
    let scale = c.norm().max(1.0);
    let mut basis: Vec<DVector<f64>> = Vec::with_capacity(k);
    let mut next = s.clone();
    while basis.len() < k {
        let before = next.norm();
        let after = orthogonalise(&mut next, &basis);
        let vanished = after.is_nan() || after <= 1e-9 * before.max(1e-300);
        if vanished || after < 1e-12 * scale {
            break;
        }
        next /= after;
        basis.push(next.clone());
        next = c * &next;
    }
    if basis.len() < k {
        let eigen = SymmetricEigen::new(c.clone());
        let mut order: Vec<usize> = (0..eigen.eigenvalues.len()).collect();
        order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));
        for i in order {
            if basis.len() == k {
                break;
            }
            let mut v = eigen.eigenvectors.column(i).into_owned();
            let after = orthogonalise(&mut v, &basis);
            if after > 1e-6 {
                basis.push(v / after);
            }
        }
    }
    // Deterministic signs: the first direction along s, every other with its largest entry
    // positive.
    for (i, b) in basis.iter_mut().enumerate() {
        let flip = if i == 0 && s.norm() > 0.0 {
            b.dot(s) < 0.0
        } else {
            b.iter()
                .fold(0.0f64, |m, &v| if v.abs() > m.abs() { v } else { m })
                < 0.0
        };
        if flip {
            *b = -b.clone();
        }
    }
    basis
}

/// The agreed map of `schema` from `summaries` (module docs), its provenance `source` in
/// words.
pub fn derive(
    schema: &Schema,
    summaries: &Summaries,
    components: Components,
    source: &str,
) -> Result<AgreedMap, MapError> {
    derive_split(schema, summaries, summaries, components, source)
}

/// [`derive()`] with the label's direction s from `labelled` and everything else (centres,
/// scales, the correlation C, which read no label) from `spread`: the aggregator's own rows
/// give the subspace's direction from a part of them (the *map rows*) so that the final model
/// can be chosen on the others without the optimism of rows whose labels chose the subspace
/// ([`crate::aggregate::select::choose_final_scored`]).
pub fn derive_split(
    schema: &Schema,
    spread: &Summaries,
    labelled: &Summaries,
    components: Components,
    source: &str,
) -> Result<AgreedMap, MapError> {
    let base = schema.fingerprint();
    if schema.mode() != crate::data::normalise::MapMode::Ball {
        return Err(MapError::NotBall(schema.name.clone()));
    }
    let st = standardise(schema, spread, labelled)?;
    let p = schema.features.len();
    let (subspace, spread) = match components {
        Components::All => (None, p as f64),
        Components::Subspace(k) => {
            if k == 0 || k > p {
                return Err(MapError::Components { k, p });
            }
            let dirs = directions(&st.correlation, &st.difference, k);
            let spread: f64 = dirs.iter().map(|d| d.dot(&(&st.correlation * d))).sum();
            let directions = dirs.iter().map(|d| d.iter().copied().collect()).collect();
            (Some(Subspace { directions }), spread)
        }
    };
    let row_scale = DEFAULT_ROW_SCALE_KAPPA / spread.max(f64::MIN_POSITIVE).sqrt();
    let intercept_value = schema
        .normalisation
        .as_ref()
        .and_then(|n| n.intercept_value)
        .unwrap_or(DEFAULT_INTERCEPT_VALUE);
    let features = schema
        .features
        .iter()
        .zip(st.centre.iter().zip(&st.scale))
        .map(|(f, (&center, &scale))| FeatureMap {
            name: f.name.clone(),
            transform: f.transform.unwrap_or_default(),
            unit: f.unit,
            center,
            scale,
        })
        .collect();
    let map = AgreedMap {
        format: FORMAT.to_owned(),
        schema: base,
        source: source.to_owned(),
        row_scale,
        intercept_value,
        features,
        subspace,
    };
    map.apply(schema)?;
    Ok(map)
}
