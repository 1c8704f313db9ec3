//! Values per combiner in the file formats: [`PerCombiner`] (what the simulation's results
//! hold) and [`Accuracies`] (what `report.json` holds), each listing the combiners by the
//! column or key their files declare, so neither has a field per combiner.

use super::Candidate;
use serde::ser::{Serialize, SerializeMap, Serializer};

/// One value per combiner, in registry order, for the combiners a file format lists: what
/// reports and simulations hold instead of a field per combiner.
#[derive(Debug, Clone, PartialEq)]
pub struct PerCombiner<T>(pub Vec<(Candidate, T)>);

impl<T> PerCombiner<T> {
    /// The value of `c`, if it has one.
    pub fn find(&self, c: Candidate) -> Option<&T> {
        self.0.iter().find(|(k, _)| *k == c).map(|(_, v)| v)
    }

    /// The value of `c`.
    ///
    /// # Panics
    /// If `c` has none (e.g. asking a simulation for a combiner that is not simulated).
    pub fn get(&self, c: Candidate) -> &T {
        self.find(c)
            .unwrap_or_else(|| panic!("no value for the combiner {}", c.name()))
    }

    /// Every (combiner, value), in registry order.
    pub fn iter(&self) -> impl Iterator<Item = &(Candidate, T)> {
        self.0.iter()
    }
}

/// Test accuracies of combiners, serialised as one `"<key>": accuracy` entry per combiner with
/// the key its file declares ([`Candidate::report_key`]), in registry order; after
/// `mirror-averaging+own`'s, the own learner's mixing weight in that aggregate
/// (`own_learner_mixing_weight`). A new combiner with a key is a new entry, not a new field.
#[derive(Debug, Clone, PartialEq)]
pub struct Accuracies {
    /// Each reported combiner's accuracy on the own test rows.
    pub values: PerCombiner<f64>,
    /// The own learner's mixing weight in `mirror-averaging+own` (when that combiner is listed).
    pub own_learner_mixing_weight: f64,
}

/// The key of the own learner's mixing weight, written after [`Candidate::MirrorWithOwn`]'s
/// accuracy.
const OWN_WEIGHT_KEY: &str = "own_learner_mixing_weight";

impl Accuracies {
    /// The accuracies of those of `candidates` that have a `report.json` key.
    pub fn measure(
        candidates: impl Iterator<Item = Candidate>,
        accuracy: impl Fn(Candidate) -> f64,
        own_learner_mixing_weight: f64,
    ) -> Self {
        Self {
            values: PerCombiner(
                candidates
                    .filter(|c| c.report_key().is_some())
                    .map(|c| (c, accuracy(c)))
                    .collect(),
            ),
            own_learner_mixing_weight,
        }
    }
}

impl Serialize for Accuracies {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        for (c, v) in self.values.iter() {
            map.serialize_entry(c.report_key().unwrap_or(c.name()), v)?;
            if *c == Candidate::MirrorWithOwn {
                map.serialize_entry(OWN_WEIGHT_KEY, &self.own_learner_mixing_weight)?;
            }
        }
        map.end()
    }
}
