//! Small statistics used by simulations (mean ± sd), by reports (Wilson intervals of accuracies)
//! and by the noise tests (Kolmogorov–Smirnov).

use serde::{Deserialize, Serialize};

/// Mean and sample standard deviation of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Arithmetic mean (NaN for no values).
    pub mean: f64,
    /// Sample standard deviation with n − 1 in the denominator (0 for one value, NaN for none).
    pub sd: f64,
}

impl Summary {
    /// Summarises `values`.
    pub fn of(values: &[f64]) -> Self {
        let n = values.len() as f64;
        if values.is_empty() {
            return Self {
                mean: f64::NAN,
                sd: f64::NAN,
            };
        }
        let mean = values.iter().sum::<f64>() / n;
        let sd = if values.len() < 2 {
            0.0
        } else {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        };
        Self { mean, sd }
    }
}

/// The 95 % Wilson score interval of a proportion `p` observed on `n` trials (Wilson 1927):
/// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n) with z = 1.96. Unlike p ± z·√(p(1−p)/n) it
/// stays inside [0, 1] and is not empty at p = 0 or 1, which matters for accuracies measured on
/// a few dozen test rows. `n = 0` gives [0, 1].
pub fn wilson_interval(p: f64, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let n = n as f64;
    let z2 = Z * Z;
    let centre = p + z2 / (2.0 * n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let scale = 1.0 + z2 / n;
    (
        ((centre - half) / scale).max(0.0),
        ((centre + half) / scale).min(1.0),
    )
}

/// Result of a one-sample Kolmogorov–Smirnov test.
#[derive(Debug, Clone, Copy)]
pub struct KsResult {
    /// sup |F_n − F|.
    pub statistic: f64,
    /// Asymptotic p-value (Kolmogorov distribution with Stephens' small-sample correction).
    pub p_value: f64,
}

/// One-sample KS test of `sample` against the continuous CDF `cdf`.
pub fn ks_test(sample: &[f64], cdf: impl Fn(f64) -> f64) -> KsResult {
    let mut xs = sample.to_vec();
    xs.sort_by(f64::total_cmp);
    let n = xs.len() as f64;
    let d = xs.iter().enumerate().fold(0.0f64, |d, (i, &x)| {
        let f = cdf(x);
        d.max((i as f64 + 1.0) / n - f).max(f - i as f64 / n)
    });
    let sn = n.sqrt();
    KsResult {
        statistic: d,
        p_value: kolmogorov_q((sn + 0.12 + 0.11 / sn) * d),
    }
}

/// Q_KS(λ) = 2 Σ_{k≥1} (−1)^{k−1} exp(−2k²λ²), the Kolmogorov survival function.
fn kolmogorov_q(lambda: f64) -> f64 {
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    for k in 1..=100 {
        let kf = k as f64;
        let term = (-2.0 * kf * kf * lambda * lambda).exp();
        sum += if k % 2 == 1 { term } else { -term };
        if term < 1e-16 {
            break;
        }
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(s.mean, 2.5);
        assert!((s.sd - (5.0f64 / 3.0).sqrt()).abs() < 1e-15);
        assert_eq!(Summary::of(&[7.0]).sd, 0.0);
        assert!(Summary::of(&[]).mean.is_nan());
    }

    #[test]
    fn ks_accepts_uniform_grid_and_rejects_shifted() {
        let u: Vec<f64> = (0..1000).map(|i| (i as f64 + 0.5) / 1000.0).collect();
        assert!(ks_test(&u, |x| x.clamp(0.0, 1.0)).p_value > 0.99);
        let shifted: Vec<f64> = u.iter().map(|x| x * 0.9).collect();
        assert!(ks_test(&shifted, |x| x.clamp(0.0, 1.0)).p_value < 1e-6);
        // Q(1.36) ≈ 0.05, the textbook 5% critical value.
        assert!((kolmogorov_q(1.358) - 0.05).abs() < 1e-3);
    }

    #[test]
    fn wilson_interval_matches_a_reference() {
        // R: prop.test(x = 8, n = 10, correct = FALSE)$conf.int → 0.4901625 0.9433178.
        let (lo, hi) = wilson_interval(0.8, 10);
        assert!((lo - 0.490_162_5).abs() < 1e-6, "{lo}");
        assert!((hi - 0.943_317_8).abs() < 1e-6, "{hi}");
        let (lo, hi) = wilson_interval(1.0, 63);
        assert!(hi == 1.0 && lo > 0.9 && lo < 0.95, "{lo}");
        assert_eq!(wilson_interval(0.5, 0), (0.0, 1.0));
    }
}
