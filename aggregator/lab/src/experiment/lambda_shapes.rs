//! The synthetic data of `experiment lambda` ([`super::lambda_rule`]): three shapes of labelled
//! rows in the geometry a ball-mode schema gives (`data/README.md`): features centred, rows
//! projected onto the unit ball, and an intercept column of constant 0.2.
//!
//! A row of dimension d has k = d − 1 features z (unit variance each) scaled by 1/√k, so that
//! E‖z/√k‖² = 1, then the intercept 0.2, then projection onto the unit ball (most rows land on or
//! near the sphere, as hospital rows mapped by a ball schema do). Its label is +1 with
//! probability σ(a·⟨u, z⟩/sd(⟨u, z⟩) + b), u a unit direction drawn once per cell and b =
//! [`OFFSET`] (a mild class imbalance):
//!
//! | shape | features z | signal a | Bayes accuracy (about) |
//! |---|---|---|---|
//! | `isotropic` | N(0, I) | 2.5 | 0.81 |
//! | `correlated` | AR(1), corr(z_j, z_{j+1}) = 0.8 | 2.5 | 0.81 |
//! | `weak` | N(0, I) | 0.8 | 0.65 |
//!
//! The shapes are public and fixed: nothing here is fitted to a dataset.

use dpagg_shared::data::dataset::{Dataset, dot};
use rand::{Rng, RngExt};
use rand_distr::StandardNormal;

/// Intercept column of a ball-mode schema.
pub(super) const INTERCEPT: f64 = 0.2;
/// Logit offset b (class balance about 54 : 46, 56 : 44 for `weak`).
pub(super) const OFFSET: f64 = 0.25;
/// Lag-one correlation of the `correlated` shape's features.
pub(super) const AR_CORRELATION: f64 = 0.8;

/// One of the three shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    Isotropic,
    Correlated,
    Weak,
}

impl Shape {
    /// Every shape, in table order.
    pub(super) const ALL: [Shape; 3] = [Shape::Isotropic, Shape::Correlated, Shape::Weak];

    /// Its name in the CSVs.
    pub(super) fn name(self) -> &'static str {
        match self {
            Shape::Isotropic => "isotropic",
            Shape::Correlated => "correlated",
            Shape::Weak => "weak",
        }
    }

    /// The signal a: the standard deviation of the logit's linear part.
    fn signal(self) -> f64 {
        match self {
            Shape::Isotropic | Shape::Correlated => 2.5,
            Shape::Weak => 0.8,
        }
    }

    fn correlation(self) -> f64 {
        match self {
            Shape::Correlated => AR_CORRELATION,
            Shape::Isotropic | Shape::Weak => 0.0,
        }
    }
}

/// A shape at dimension d (intercept included) with its direction u, drawn once per cell.
pub(super) struct Law {
    shape: Shape,
    dim: usize,
    direction: Vec<f64>,
    /// sd(⟨u, z⟩) under the shape's feature covariance.
    direction_sd: f64,
}

impl Law {
    /// The law of `shape` at dimension `dim` ≥ 2, its direction drawn from `rng`.
    pub(super) fn new<R: Rng + ?Sized>(shape: Shape, dim: usize, rng: &mut R) -> Self {
        assert!(dim >= 2, "a row needs a feature and the intercept");
        let k = dim - 1;
        let mut u: Vec<f64> = (0..k).map(|_| rng.sample(StandardNormal)).collect();
        let norm = dot(&u, &u).sqrt();
        u.iter_mut().for_each(|v| *v /= norm);
        let rho = shape.correlation();
        // uᵀΣu with Σ_ij = ρ^|i−j|.
        let mut var = 0.0;
        for (i, ui) in u.iter().enumerate() {
            for (j, uj) in u.iter().enumerate() {
                var += ui * uj * rho.powi(i.abs_diff(j) as i32);
            }
        }
        Law {
            shape,
            dim,
            direction: u,
            direction_sd: var.sqrt(),
        }
    }

    /// `n` rows of the law.
    pub(super) fn draw<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Dataset {
        let k = self.dim - 1;
        let rho = self.shape.correlation();
        let innovation = (1.0 - rho * rho).sqrt();
        let scale = (k as f64).sqrt().recip();
        let mut x = Vec::with_capacity(n * self.dim);
        let mut y = Vec::with_capacity(n);
        let mut z = vec![0.0; k];
        for _ in 0..n {
            for j in 0..k {
                let e: f64 = rng.sample(StandardNormal);
                z[j] = if j == 0 {
                    e
                } else {
                    rho * z[j - 1] + innovation * e
                };
            }
            let logit = self.shape.signal() * dot(&self.direction, &z) / self.direction_sd + OFFSET;
            let positive = rng.random::<f64>() < sigmoid(logit);
            y.push(if positive { 1.0 } else { -1.0 });
            let start = x.len();
            x.extend(z.iter().map(|v| v * scale));
            x.push(INTERCEPT);
            project_onto_ball(&mut x[start..]);
        }
        Dataset::new(x, y, self.dim)
    }
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Scales `row` onto the unit ball when outside it, a few ulps inside so that rounding of the
/// norm (which the mechanisms check) cannot leave it above 1.
fn project_onto_ball(row: &mut [f64]) {
    let mut norm = dot(row, row).sqrt();
    while norm > 1.0 {
        let s = (1.0 - 4.0 * row.len() as f64 * f64::EPSILON) / norm;
        row.iter_mut().for_each(|v| *v *= s);
        norm = dot(row, row).sqrt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dpagg_shared::util::seed::derived_rng;

    #[test]
    fn rows_are_in_the_unit_ball_with_the_intercept_and_signed_labels() {
        let mut rng = derived_rng(3, &[]);
        for shape in Shape::ALL {
            let law = Law::new(shape, 10, &mut rng);
            let data = law.draw(500, &mut rng);
            assert_eq!((data.len(), data.dim()), (500, 10));
            assert!(data.max_row_norm() <= 1.0 + 1e-12);
            assert!(data.labels().iter().all(|&y| y == 1.0 || y == -1.0));
            // The intercept keeps its sign and size up to the projection.
            assert!((0..500).all(|i| data.row(i)[9] > 0.0 && data.row(i)[9] <= INTERCEPT));
        }
    }

    /// The Bayes rule's accuracy matches the table of the module documentation, and the weak
    /// shape is weaker: the shapes are what their names say.
    #[test]
    fn the_bayes_accuracy_of_each_shape_is_as_documented() {
        let mut rng = derived_rng(4, &[]);
        for (shape, expected) in [
            (Shape::Isotropic, 0.81),
            (Shape::Correlated, 0.81),
            (Shape::Weak, 0.65),
        ] {
            let law = Law::new(shape, 6, &mut rng);
            let data = law.draw(40_000, &mut rng);
            // The Bayes direction in row coordinates: u/sd scaled back by √k, and the offset on
            // the intercept column; projection onto the ball does not change a margin's sign.
            let k = 5.0_f64;
            let mut theta: Vec<f64> = law
                .direction
                .iter()
                .map(|u| shape.signal() * u * k.sqrt() / law.direction_sd)
                .collect();
            theta.push(OFFSET / INTERCEPT);
            let acc = data.accuracy(&theta);
            assert!((acc - expected).abs() < 0.01, "{shape:?}: {acc}");
        }
    }
}
