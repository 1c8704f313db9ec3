//! [`DataSpec`]: what data release to make — a kind, its (ε, δ) and options — with its checks
//! from public quantities and its bit-exact identity.

use super::{DataKind, DataReleaseError};
use std::collections::BTreeMap;

/// What data release to make: a kind, its (ε, δ) and options (absent options take the kind's
/// defaults). Its identity is bit-exact, as a learner spec's.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSpec {
    /// The kind.
    pub kind: DataKind,
    /// ε (0 for a kind that computes its ε, [`super::DataMechanism::computes_epsilon`]).
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// Options by name.
    pub options: BTreeMap<String, f64>,
}

impl DataSpec {
    /// A spec with default options.
    pub fn new(kind: DataKind, epsilon: f64, delta: f64) -> Self {
        Self {
            kind,
            epsilon,
            delta,
            options: BTreeMap::new(),
        }
    }

    /// The value of option `name` (given, else the default).
    pub fn option(&self, name: &str) -> f64 {
        self.options.get(name).copied().unwrap_or_else(|| {
            self.kind
                .options()
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(f64::NAN, |(_, v)| *v)
        })
    }

    /// Every option the kind takes with its value (given, else the default), in the kind's
    /// order: what a release records as its parameters.
    pub fn parameters(&self) -> BTreeMap<String, f64> {
        self.kind
            .options()
            .iter()
            .map(|(name, _)| ((*name).to_owned(), self.option(name)))
            .collect()
    }

    /// The spec's identity, bit-exact (for the node's store).
    pub fn key(&self) -> String {
        let mut key = format!(
            "{}:{:016x}:{:016x}",
            self.kind.name(),
            self.epsilon.to_bits(),
            self.delta.to_bits()
        );
        for (name, value) in &self.options {
            key.push_str(&format!(":{name}={:016x}", value.to_bits()));
        }
        key
    }

    /// Checks ranges and option names (public quantities only).
    pub fn check(&self) -> Result<(), DataReleaseError> {
        let invalid = |what: String| Err(DataReleaseError::InvalidSpec(what));
        for name in self.options.keys() {
            if !self.kind.options().iter().any(|(n, _)| n == name) {
                let takes: Vec<&str> = self.kind.options().iter().map(|(n, _)| *n).collect();
                return invalid(format!(
                    "`{}` takes no option `{name}` (it takes: {})",
                    self.kind,
                    if takes.is_empty() {
                        "none".to_owned()
                    } else {
                        takes.join(", ")
                    }
                ));
            }
        }
        for (name, value) in &self.options {
            if !value.is_finite() {
                return invalid(format!("option `{name}` = {value} is not a finite number"));
            }
        }
        let mechanism = self.kind.mechanism();
        if mechanism.computes_epsilon() {
            if self.epsilon != 0.0 {
                return invalid(format!(
                    "`{}` computes its ε from n, d, sigma, rows and δ: send epsilon = 0, not {}",
                    self.kind, self.epsilon
                ));
            }
        } else if !(self.epsilon.is_finite() && self.epsilon > 0.0) {
            return invalid(format!(
                "epsilon = {} must be a finite number > 0",
                self.epsilon
            ));
        }
        if mechanism.pure() {
            if self.delta != 0.0 {
                return invalid(format!(
                    "`{}` is ε-DP: delta must be 0, not {}",
                    self.kind, self.delta
                ));
            }
        } else if !(self.delta > 0.0 && self.delta < 1.0) {
            return invalid(format!(
                "`{}` needs 0 < delta < 1, not {}",
                self.kind, self.delta
            ));
        }
        Ok(())
    }

    /// Option `name` as a whole number in [lo, hi].
    pub fn count(&self, name: &str, lo: usize, hi: usize) -> Result<usize, DataReleaseError> {
        let v = self.option(name);
        if v.fract() != 0.0 || v < lo as f64 || v > hi as f64 {
            return Err(DataReleaseError::InvalidSpec(format!(
                "option `{name}` = {v} must be a whole number in [{lo}, {hi}]"
            )));
        }
        Ok(v as usize)
    }
}
