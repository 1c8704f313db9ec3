//! The synthetic data of Minami et al. 2015, §5.1.
//!
//! A normal vector w is drawn uniformly on the unit sphere S⁹ ⊂ ℝ¹⁰, defining a separating
//! hyperplane through the origin. Points are drawn uniformly on S⁹ and labelled sign⟨w, x⟩; points
//! within distance 0.03 of the plane (|⟨w, x⟩| < 0.03) are discarded and redrawn. The paper uses
//! 5,000 training points and 1,000 test points with exactly 500 of each label. The points lie on the
//! unit sphere, so ||x||₂ = 1 and no further normalisation (and no intercept) is needed.
//!
//! [`PointLaw::NormalisedCube`] is not the paper's law: it draws u uniformly from [0, 1]^d and
//! returns u/‖u‖, which lies on the sphere but only in the positive orthant. It exists so that the
//! reproduction (`dpagg-aggregator experiment variants`) can test whether a common slip in
//! sampling "uniform on the sphere" explains the paper's weak local baseline; see EXPERIMENTS.md.

use crate::data::dataset::{Dataset, dot};
use rand::{Rng, RngExt};
use rand_distr::StandardNormal;

/// Parameters of the generator (defaults: the paper's values).
#[derive(Debug, Clone, Copy)]
pub struct SyntheticSpec {
    /// Dimension (10).
    pub dim: usize,
    /// Points with |⟨w, x⟩| below this are removed (0.03).
    pub margin: f64,
    /// Training points (5,000).
    pub train: usize,
    /// Test points per label (500).
    pub test_per_label: usize,
    /// How the points are drawn (the paper's: uniform on the sphere).
    pub points: PointLaw,
}

/// The law of the feature vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PointLaw {
    /// Uniform on the unit sphere S^{d−1} (Minami et al. 2015, §5.1).
    #[default]
    Sphere,
    /// u uniform on [0, 1]^d, normalised to u/‖u‖: on the sphere, in the positive orthant only.
    NormalisedCube,
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        Self {
            dim: 10,
            margin: 0.03,
            train: 5000,
            test_per_label: 500,
            points: PointLaw::Sphere,
        }
    }
}

/// Training and test sets and the true normal vector.
#[derive(Debug, Clone)]
pub struct SyntheticData {
    /// Training set (labels unbalanced at random, as drawn).
    pub train: Dataset,
    /// Test set with exactly `test_per_label` points of each label.
    pub test: Dataset,
    /// The hyperplane normal w.
    pub normal: Vec<f64>,
}

fn unit_vector<R: Rng + ?Sized>(dim: usize, rng: &mut R) -> Vec<f64> {
    point(dim, PointLaw::Sphere, rng)
}

fn point<R: Rng + ?Sized>(dim: usize, law: PointLaw, rng: &mut R) -> Vec<f64> {
    loop {
        let v: Vec<f64> = match law {
            PointLaw::Sphere => (0..dim).map(|_| rng.sample(StandardNormal)).collect(),
            PointLaw::NormalisedCube => (0..dim).map(|_| rng.random::<f64>()).collect(),
        };
        let n = dot(&v, &v).sqrt();
        if n > 1e-12 {
            let mut u: Vec<f64> = v.into_iter().map(|x| x / n).collect();
            // Rounding can leave the computed norm an ulp above 1; the privacy proofs need ≤ 1.
            while dot(&u, &u).sqrt() > 1.0 {
                u.iter_mut().for_each(|x| *x *= 1.0 - f64::EPSILON);
            }
            return u;
        }
    }
}

/// Draws one labelled point outside the margin.
fn labelled_point<R: Rng + ?Sized>(
    normal: &[f64],
    margin: f64,
    law: PointLaw,
    rng: &mut R,
) -> (Vec<f64>, f64) {
    loop {
        let x = point(normal.len(), law, rng);
        let s = dot(&x, normal);
        if s.abs() >= margin {
            return (x, if s > 0.0 { 1.0 } else { -1.0 });
        }
    }
}

/// Generates the §5.1 data from `rng`.
pub fn generate<R: Rng + ?Sized>(spec: &SyntheticSpec, rng: &mut R) -> SyntheticData {
    let normal = unit_vector(spec.dim, rng);
    let (mut x, mut y) = (
        Vec::with_capacity(spec.train * spec.dim),
        Vec::with_capacity(spec.train),
    );
    for _ in 0..spec.train {
        let (p, l) = labelled_point(&normal, spec.margin, spec.points, rng);
        x.extend(p);
        y.push(l);
    }
    let train = Dataset::new(x, y, spec.dim);
    // Balanced test set: draw until each label has its quota (rejection keeps the distribution
    // conditional on the label exactly as in the training data).
    let (mut tx, mut ty) = (Vec::new(), Vec::new());
    let (mut pos, mut neg) = (0, 0);
    while pos < spec.test_per_label || neg < spec.test_per_label {
        let (p, l) = labelled_point(&normal, spec.margin, spec.points, rng);
        let slot = if l > 0.0 { &mut pos } else { &mut neg };
        if *slot < spec.test_per_label {
            *slot += 1;
            tx.extend(p);
            ty.push(l);
        }
    }
    SyntheticData {
        train,
        test: Dataset::new(tx, ty, spec.dim),
        normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::seed::derived_rng;

    #[test]
    fn matches_the_papers_description() {
        let d = generate(&SyntheticSpec::default(), &mut derived_rng(1, &[]));
        assert_eq!(d.train.len(), 5000);
        assert_eq!(d.test.len(), 1000);
        assert_eq!(d.test.labels().iter().filter(|&&l| l > 0.0).count(), 500);
        assert!((dot(&d.normal, &d.normal) - 1.0).abs() < 1e-12);
        for data in [&d.train, &d.test] {
            for i in 0..data.len() {
                let x = data.row(i);
                let norm = dot(x, x).sqrt();
                assert!(norm <= 1.0 && norm > 1.0 - 1e-12, "{norm}");
                let s = dot(x, &d.normal);
                assert!(s.abs() >= 0.03);
                assert_eq!(s.signum(), data.label(i));
            }
        }
        // The true normal classifies perfectly.
        assert_eq!(d.test.accuracy(&d.normal), 1.0);
    }

    #[test]
    fn normalised_cube_points_lie_on_the_sphere_in_the_positive_orthant() {
        let spec = SyntheticSpec {
            train: 500,
            test_per_label: 50,
            points: PointLaw::NormalisedCube,
            ..SyntheticSpec::default()
        };
        let d = generate(&spec, &mut derived_rng(3, &[]));
        assert_eq!(d.test.len(), 100);
        for i in 0..d.train.len() {
            let x = d.train.row(i);
            let norm = dot(x, x).sqrt();
            assert!(norm <= 1.0 && norm > 1.0 - 1e-12, "{norm}");
            assert!(x.iter().all(|&v| v >= 0.0));
            assert_eq!(dot(x, &d.normal).signum(), d.train.label(i));
        }
        // The default law is unchanged by the option's existence.
        let a = generate(&SyntheticSpec::default(), &mut derived_rng(5, &[1]));
        assert!((0..a.train.len()).any(|i| a.train.row(i).iter().any(|&v| v < 0.0)));
    }

    #[test]
    fn seeded_generation_is_reproducible() {
        let a = generate(&SyntheticSpec::default(), &mut derived_rng(5, &[1]));
        let b = generate(&SyntheticSpec::default(), &mut derived_rng(5, &[1]));
        assert_eq!(a.train, b.train);
        assert_eq!(a.test, b.test);
    }
}
