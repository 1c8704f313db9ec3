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
    /// ε (0 for a kind that computes its ε, [`super::Registration::computes_epsilon`]).
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
                .find(|o| o.name == name)
                .map_or(f64::NAN, |o| o.default)
        })
    }

    /// Every option the kind takes with its value (given, else the default), in the kind's
    /// order: what a release records as its parameters.
    pub fn parameters(&self) -> BTreeMap<String, f64> {
        self.kind
            .options()
            .iter()
            .map(|o| (o.name.to_owned(), self.option(o.name)))
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

    /// Checks ranges and option names (public quantities only): every given option against the
    /// range its kind declares ([`super::OptionSpec::check`]).
    pub fn check(&self) -> Result<(), DataReleaseError> {
        let invalid = |what: String| Err(DataReleaseError::InvalidSpec(what));
        let specs = self.kind.options();
        for (name, value) in &self.options {
            let Some(spec) = specs.iter().find(|o| o.name == name) else {
                let takes: Vec<&str> = specs.iter().map(|o| o.name).collect();
                return invalid(format!(
                    "`{}` takes no option `{name}` (it takes: {})",
                    self.kind,
                    if takes.is_empty() {
                        "none".to_owned()
                    } else {
                        takes.join(", ")
                    }
                ));
            };
            spec.check(*value)
                .map_err(|e| DataReleaseError::InvalidSpec(format!("`{}`: {e}", self.kind)))?;
        }
        let kind = self.kind.registration();
        if kind.computes_epsilon {
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
        if kind.pure {
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
