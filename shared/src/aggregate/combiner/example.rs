//! A test-only combiner that shows what adding a combiner takes: this file and one line in the
//! registry (`combiners!` in [`super`]), nothing else. It predicts with θ = 0 (every row +1):
//! a selectable candidate the selection builds in every fold, scores and reports, and that
//! never beats a useful local model; with its `report_key` it is an entry of `report.json`'s
//! accuracies and a line of the report's summary, and with `simulated` a column of the
//! simulation's `runs.csv` and `summary.json` (shown by the tests of [`crate::simulation`], the
//! layer above) — no struct gains a field.

use super::{Combined, Combiner, Inputs, Registration, Simulated};
use crate::aggregate::select::SelectError;
use crate::learn::classifier::LinearClassifier;
use rand::rngs::ChaCha20Rng;

/// The registry's entry.
pub const REGISTERED: &[Registration] = &[Registration {
    name: "example-zero",
    definition: "tests only: θ = 0",
    label: "example: θ = 0",
    report_key: Some("example_zero_accuracy"),
    simulated: Some(Simulated {
        column: "example_zero_accuracy",
        table_name: "example-zero",
        purpose: 9,
    }),
    combiner: &Zero,
}];

/// θ = 0.
struct Zero;

impl Combiner for Zero {
    fn fit(
        &self,
        inputs: &Inputs<'_>,
        _tuned: Option<f64>,
        _rng: &mut ChaCha20Rng,
    ) -> Result<Combined, SelectError> {
        Ok(LinearClassifier::new(vec![0.0; inputs.data.dim()]).into())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Accuracies, Candidate};
    use crate::aggregate::select::{SelectionConfig, choose_final};
    use crate::data::dataset::Dataset;
    use crate::learn::classifier::LinearClassifier;

    #[test]
    fn a_registered_combiner_is_fitted_scored_and_listed_by_the_selection() {
        let zero = Candidate::all()
            .find(|c| c.name() == "example-zero")
            .expect("registered by its one line");
        // Rows on both sides of θ* = (1, 0), so the local model is good and θ = 0 is not.
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for i in 0..60 {
            let s = if i % 2 == 0 { 1.0 } else { -1.0 };
            x.extend([0.5 * s, 0.01 * f64::from(i % 7)]);
            y.push(s);
        }
        let train = Dataset::new(x, y, 2);
        let experts = [LinearClassifier::new(vec![1.0, 0.0])];
        let f = choose_final(&experts, &train, &SelectionConfig::default()).expect("final");
        assert_eq!(f.model(zero).coefficients(), &[0.0, 0.0]);
        let cv = f.cv.iter().find(|e| e.candidate == zero).expect("scored");
        assert!(cv.gain < 0.0, "{cv:?}");
        assert_ne!(f.chosen, zero);
    }

    #[test]
    fn a_registered_combiner_is_a_key_of_the_reported_accuracies() {
        let zero = Candidate::all().find(|c| c.name() == "example-zero").expect("registered");
        let acc = Accuracies::measure(Candidate::all(), |c| if c == zero { 0.25 } else { 0.5 }, 0.1);
        let json = serde_json::to_string(&acc).expect("json");
        // After the other candidates (registry order) and the own learner's weight.
        assert!(
            json.ends_with(r#""stacking_margins_accuracy":0.5,"example_zero_accuracy":0.25}"#),
            "{json}"
        );
        assert!(json.contains(r#""own_learner_mixing_weight":0.1"#), "{json}");
    }
}
