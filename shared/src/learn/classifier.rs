//! A fitted linear classifier: coefficients θ, predicting sign⟨θ, x⟩ for a row x normalised by
//! the public schema.
//!
//! Every learner dpagg trains, releases, receives or aggregates is one of these: the solver's
//! optimum, a mechanism's release, a node's published learner and mirror averaging's θ_agg
//! (Minami et al. 2015, eq. 17). The coefficients are called θ in the papers and `weights` on the
//! wire (for compatibility); in code they are `coefficients`, to keep "weights" for mixing weights.

use crate::data::dataset::{Dataset, dot};
use serde::{Deserialize, Serialize};

/// Coefficients θ of the classifier sign⟨θ, x⟩ (serialised as a plain array).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LinearClassifier {
    coefficients: Vec<f64>,
}

impl LinearClassifier {
    /// The classifier with coefficients θ.
    pub fn new(coefficients: Vec<f64>) -> Self {
        Self { coefficients }
    }

    /// θ.
    pub fn coefficients(&self) -> &[f64] {
        &self.coefficients
    }

    /// θ, by value.
    pub fn into_coefficients(self) -> Vec<f64> {
        self.coefficients
    }

    /// The dimension of θ.
    pub fn dim(&self) -> usize {
        self.coefficients.len()
    }

    /// True when every coefficient is a finite number.
    pub fn is_finite(&self) -> bool {
        self.coefficients.iter().all(|c| c.is_finite())
    }

    /// The margin ⟨θ, x⟩.
    pub fn margin(&self, x: &[f64]) -> f64 {
        dot(&self.coefficients, x)
    }

    /// The fraction of rows of `data` whose label is sign⟨θ, x⟩ (a margin of 0 predicts +1).
    pub fn accuracy(&self, data: &Dataset) -> f64 {
        data.accuracy(&self.coefficients)
    }
}

impl AsRef<[f64]> for LinearClassifier {
    fn as_ref(&self) -> &[f64] {
        &self.coefficients
    }
}

impl From<Vec<f64>> for LinearClassifier {
    fn from(coefficients: Vec<f64>) -> Self {
        Self::new(coefficients)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicts_the_sign_of_the_margin() {
        let c = LinearClassifier::new(vec![1.0, -2.0]);
        let data = Dataset::new(vec![1.0, 0.0, 0.0, 1.0, 0.5, 0.5], vec![1.0, -1.0, 1.0], 2);
        assert_eq!(c.margin(data.row(1)), -2.0);
        assert!((c.accuracy(&data) - 2.0 / 3.0).abs() < 1e-15);
        assert!(c.is_finite() && c.dim() == 2);
        assert!(!LinearClassifier::new(vec![f64::NAN]).is_finite());
        assert_eq!(
            serde_json::to_string(&c).ok().as_deref(),
            Some("[1.0,-2.0]")
        );
    }
}
