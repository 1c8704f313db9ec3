//! Aggregating learners on the aggregator's own data: mirror averaging and its comparators.
//!
//! **Mirror averaging** (seed 001 §3.2, eq. 15–17; Juditsky, Rigollet & Tsybakov 2008). Given M
//! linear experts θ₁…θ_M and the aggregator's data d₁…d_n visited in a random order, with
//! cumulative logistic losses S_t,m = Σ_{i≤t} ℓ(⟨θ_m, x_i⟩, y_i):
//!
//! ```text
//! λ_m^(t) = exp(−S_t,m/β) / Σ_l exp(−S_t,l/β)        (eq. 15, computed by log-sum-exp)
//! λ_m     = (1/n) Σ_{t=1..n} λ_m^(t)                   (eq. 16)
//! θ_agg   = Σ_m λ_m θ_m,  f_agg(x) = sgn⟨θ_agg, x⟩      (eq. 17)
//! ```
//!
//! The oracle inequality (eq. 20) needs β ≥ β_φ, and β_φ = e for the logistic loss (eq. 19), so the
//! default is β = 3 (§5) and a smaller β is accepted with a warning.
//!
//! Privacy: the aggregate is a function of released learners and the aggregator's own data only, so
//! it inherits their guarantee with respect to the other organisations' data (Proposition 4.1).
//!
//! **Numerics.** Rows are processed in blocks of [`BLOCK_ROWS`]: scores for a block come from one
//! matrix product, losses are computed in parallel, cumulative sums sequentially, and the per-row
//! softmaxes in parallel with partial sums over fixed sub-blocks added in order — the result is
//! bit-identical for any number of threads. In each softmax, experts whose exponent is below
//! −[`NEGLIGIBLE_EXPONENT`] relative to the best contribute less than e⁻⁵⁰ ≈ 2·10⁻²² each and are
//! skipped; this changes λ by at most M·2·10⁻²² in ℓ₁ (far below f64 resolution of Σλ = 1).

use crate::dataset::{Dataset, dot};
use crate::fastmath;
use crate::logistic::logistic_loss;
use nalgebra::{DMatrix, DMatrixView, DMatrixViewMut};
use rand::Rng;
use rand::seq::SliceRandom;
use rayon::prelude::*;

/// Rows per block of the mirror-averaging sweep.
pub const BLOCK_ROWS: usize = 256;
/// Rows per parallel sub-block (fixed, for determinism).
pub const SUB_ROWS: usize = 64;
/// Softmax terms with exponent below −this (relative to the maximum) are treated as zero.
pub const NEGLIGIBLE_EXPONENT: f64 = 50.0;
/// β_φ for the logistic loss (seed 001 eq. 19): the smallest temperature the theory covers.
pub const BETA_LOGISTIC: f64 = std::f64::consts::E;

/// Why an aggregation is impossible.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AggregateError {
    /// β must be a finite positive number.
    #[error(
        "invalid beta = {0}: must be a finite number > 0 (seed 001 eq. 19 needs beta >= e ≈ 2.718 for the logistic loss)"
    )]
    InvalidBeta(f64),
    /// No experts were given.
    #[error("no learners to aggregate")]
    NoExperts,
    /// The aggregator has no data to weight the experts with.
    #[error("the aggregator's data is empty")]
    EmptyData,
    /// An expert's dimension differs from the data's.
    #[error("learner {index} has dimension {found}, the data has {expected}")]
    DimensionMismatch {
        /// Expert index.
        index: usize,
        /// Its dimension.
        found: usize,
        /// The data's dimension.
        expected: usize,
    },
    /// An expert has a NaN or infinite weight.
    #[error("learner {0} has a non-finite weight")]
    NonFinite(usize),
    /// The visiting order is not a permutation of the rows.
    #[error("the visiting order must be a permutation of the {0} data rows")]
    BadOrder(usize),
}

/// Mirror averaging with temperature β.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MirrorAveraging {
    beta: f64,
}

impl MirrorAveraging {
    /// Mirror averaging with temperature β > 0. A β below e is accepted (it is a valid
    /// aggregation) but not covered by eq. 20: entry points warn once via [`Self::warn_if_uncovered`].
    pub fn new(beta: f64) -> Result<Self, AggregateError> {
        if !(beta.is_finite() && beta > 0.0) {
            return Err(AggregateError::InvalidBeta(beta));
        }
        Ok(Self { beta })
    }

    /// True when β ≥ β_φ = e, so the oracle inequality (eq. 20) holds for the logistic loss.
    pub fn covered_by_oracle_inequality(&self) -> bool {
        self.beta >= BETA_LOGISTIC
    }

    /// Logs a warning (tracing) when β < e. Call once per run, not per aggregation.
    pub fn warn_if_uncovered(&self) {
        if !self.covered_by_oracle_inequality() {
            tracing::warn!(
                beta = self.beta,
                "beta < e: the oracle inequality of seed 001 eq. 20 does not cover this temperature for the logistic loss"
            );
        }
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The mixing weights λ (eq. 16), visiting `data` in a random order drawn from `rng`.
    pub fn weights_shuffled<R: Rng + ?Sized>(
        &self,
        experts: &[Vec<f64>],
        data: &Dataset,
        rng: &mut R,
    ) -> Result<Vec<f64>, AggregateError> {
        let mut order: Vec<usize> = (0..data.len()).collect();
        order.shuffle(rng);
        self.weights(experts, data, &order)
    }

    /// The mixing weights λ (eq. 15–16), visiting the rows of `data` in `order`.
    pub fn weights(
        &self,
        experts: &[Vec<f64>],
        data: &Dataset,
        order: &[usize],
    ) -> Result<Vec<f64>, AggregateError> {
        self.weights_and_risks(experts, data, order)
            .map(|(lambda, _)| lambda)
    }

    /// λ together with each expert's total loss S_n,m = Σᵢ ℓ(⟨θ_m, xᵢ⟩, yᵢ) on `data`, which the
    /// sweep computes anyway (the best single expert is the one with the smallest).
    pub fn weights_and_risks(
        &self,
        experts: &[Vec<f64>],
        data: &Dataset,
        order: &[usize],
    ) -> Result<(Vec<f64>, Vec<f64>), AggregateError> {
        validate(experts, data)?;
        check_order(order, data.len())?;
        let m = experts.len();
        let p = data.dim();
        let expert_matrix = DMatrix::from_row_slice(m, p, &experts.concat());
        let mut cumulative = vec![0.0; m];
        let mut lambda_sum = vec![0.0; m];
        let mut buf = vec![0.0; BLOCK_ROWS.min(order.len()) * m];
        for block in order.chunks(BLOCK_ROWS) {
            let buf = &mut buf[..block.len() * m];
            // Losses ℓ(⟨θ_m, x_t⟩, y_t), row t of the block in buf[t*m..(t+1)*m].
            buf.par_chunks_mut(SUB_ROWS * m)
                .zip(block.par_chunks(SUB_ROWS))
                .for_each(|(out, rows)| block_losses(&expert_matrix, data, rows, out));
            // Eq. 15 numerators need S_t = S_{t−1} + ℓ_t: sequential over t.
            for row in buf.chunks_mut(m) {
                for (s, l) in cumulative.iter_mut().zip(row.iter_mut()) {
                    *s += *l;
                    *l = *s;
                }
            }
            let beta = self.beta;
            let partials: Vec<Vec<f64>> = buf
                .par_chunks(SUB_ROWS * m)
                .map(|rows| softmax_sums(rows, m, beta))
                .collect();
            for part in &partials {
                for (acc, v) in lambda_sum.iter_mut().zip(part) {
                    *acc += v;
                }
            }
        }
        let n = order.len() as f64;
        Ok((lambda_sum.into_iter().map(|v| v / n).collect(), cumulative))
    }

    /// Eq. 17: the aggregated linear model Σ_m λ_m θ_m, with the weights λ and each expert's
    /// total loss on `data` (visited in a random order drawn from `rng`).
    pub fn aggregate<R: Rng + ?Sized>(
        &self,
        experts: &[Vec<f64>],
        data: &Dataset,
        rng: &mut R,
    ) -> Result<Aggregate, AggregateError> {
        let mut order: Vec<usize> = (0..data.len()).collect();
        order.shuffle(rng);
        let (lambda, risks) = self.weights_and_risks(experts, data, &order)?;
        Ok(Aggregate {
            theta: combine(experts, &lambda),
            lambda,
            risks,
        })
    }
}

/// The result of [`MirrorAveraging::aggregate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// θ_agg = Σ λ_m θ_m (eq. 17).
    pub theta: Vec<f64>,
    /// The weights λ (eq. 16).
    pub lambda: Vec<f64>,
    /// Each expert's total logistic loss on the aggregator's data.
    pub risks: Vec<f64>,
}

impl Aggregate {
    /// Index of the expert with the smallest loss on the aggregator's data (first on ties).
    pub fn best_single(&self) -> usize {
        argmin(&self.risks)
    }
}

fn argmin(values: &[f64]) -> usize {
    values
        .iter()
        .enumerate()
        .fold(0, |best, (i, r)| if *r < values[best] { i } else { best })
}

/// Scores via one matrix product (M × p times p × rows) written straight into `out` — whose
/// row-major rows × M layout is the column-major M × rows result — then logistic losses in place.
fn block_losses(experts: &DMatrix<f64>, data: &Dataset, rows: &[usize], out: &mut [f64]) {
    let p = data.dim();
    let m = experts.nrows();
    let mut xs = Vec::with_capacity(rows.len() * p);
    for &r in rows {
        xs.extend_from_slice(data.row(r));
    }
    let x_t = DMatrixView::from_slice(&xs, p, rows.len());
    let mut scores = DMatrixViewMut::from_slice(out, m, rows.len());
    scores.gemm(1.0, experts, &x_t, 0.0);
    for (o, t) in out.chunks_mut(m).zip(rows) {
        let y = data.label(*t);
        for oi in o.iter_mut() {
            *oi = fastmath::softplus(-y * *oi);
        }
    }
}

/// Σ_t λ^(t) over the rows of `cumulative` (each row: S_t for all experts).
fn softmax_sums(cumulative: &[f64], m: usize, beta: f64) -> Vec<f64> {
    let mut acc = vec![0.0; m];
    // Experts within the cutoff of the best, with their (then normalised) weight. After the first
    // rows most experts fall outside it, so only a few exponentials are computed per row.
    let mut live: Vec<(usize, f64)> = Vec::with_capacity(m);
    let cutoff = NEGLIGIBLE_EXPONENT * beta;
    let inv_beta = 1.0 / beta;
    for s in cumulative.chunks(m) {
        let min = row_min(s);
        live.clear();
        live.extend(
            s.iter()
                .enumerate()
                .filter(|&(_, &v)| v - min <= cutoff)
                .map(|(i, &v)| (i, v)),
        );
        let mut z = 0.0;
        for (_, v) in live.iter_mut() {
            *v = fastmath::exp_nonpositive((min - *v) * inv_beta);
            z += *v;
        }
        let inv = 1.0 / z;
        for &(i, w) in &live {
            acc[i] += w * inv;
        }
    }
    acc
}

/// Minimum of a non-empty row, over four lanes so the loop vectorises (min is exact, so the lane
/// split does not change the result).
fn row_min(s: &[f64]) -> f64 {
    let mut lanes = [f64::INFINITY; 4];
    let chunks = s.chunks_exact(4);
    let tail = chunks
        .remainder()
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    for c in chunks {
        for k in 0..4 {
            lanes[k] = if c[k] < lanes[k] { c[k] } else { lanes[k] };
        }
    }
    lanes.iter().copied().fold(tail, f64::min)
}

fn validate(experts: &[Vec<f64>], data: &Dataset) -> Result<(), AggregateError> {
    if experts.is_empty() {
        return Err(AggregateError::NoExperts);
    }
    if data.is_empty() {
        return Err(AggregateError::EmptyData);
    }
    for (index, e) in experts.iter().enumerate() {
        if e.len() != data.dim() {
            return Err(AggregateError::DimensionMismatch {
                index,
                found: e.len(),
                expected: data.dim(),
            });
        }
        if e.iter().any(|v| !v.is_finite()) {
            return Err(AggregateError::NonFinite(index));
        }
    }
    Ok(())
}

fn check_order(order: &[usize], n: usize) -> Result<(), AggregateError> {
    let mut seen = vec![false; n];
    if order.len() != n {
        return Err(AggregateError::BadOrder(n));
    }
    for &i in order {
        if i >= n || std::mem::replace(&mut seen[i], true) {
            return Err(AggregateError::BadOrder(n));
        }
    }
    Ok(())
}

/// Direct serial transcription of eq. 15–16: one log-sum-exp per row, libm's `exp`/`log1p`, no
/// blocking or skipping. It is the independent reference [`MirrorAveraging::weights`] is tested
/// against and the baseline `dpagg-aggregator bench` times it against; O(n·M) and single-threaded.
pub fn reference_weights(
    experts: &[Vec<f64>],
    data: &Dataset,
    order: &[usize],
    beta: f64,
) -> Vec<f64> {
    let loss = |z: f64, y: f64| {
        let m = -y * z;
        if m > 0.0 {
            m + (-m).exp().ln_1p()
        } else {
            m.exp().ln_1p()
        }
    };
    let m = experts.len();
    let (mut s, mut acc) = (vec![0.0; m], vec![0.0; m]);
    for &t in order {
        for (k, e) in experts.iter().enumerate() {
            s[k] += loss(dot(data.row(t), e), data.label(t));
        }
        let mx = s
            .iter()
            .map(|v| -v / beta)
            .fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + s.iter().map(|v| (-v / beta - mx).exp()).sum::<f64>().ln();
        for (a, v) in acc.iter_mut().zip(&s) {
            *a += (-v / beta - lse).exp();
        }
    }
    acc.iter().map(|v| v / order.len() as f64).collect()
}

/// Σ_m w_m θ_m.
pub fn combine(experts: &[Vec<f64>], weights: &[f64]) -> Vec<f64> {
    let p = experts.first().map_or(0, Vec::len);
    let mut out = vec![0.0; p];
    for (e, &w) in experts.iter().zip(weights) {
        for (o, v) in out.iter_mut().zip(e) {
            *o += w * v;
        }
    }
    out
}

/// The uniform average (1/M) Σ θ_m.
pub fn uniform_average(experts: &[Vec<f64>]) -> Vec<f64> {
    let w = vec![1.0 / experts.len() as f64; experts.len()];
    combine(experts, &w)
}

/// Index of the expert with the smallest empirical logistic risk on `data` (first on ties).
pub fn best_single(experts: &[Vec<f64>], data: &Dataset) -> Result<usize, AggregateError> {
    validate(experts, data)?;
    let risk = |e: &Vec<f64>| {
        (0..data.len())
            .map(|i| logistic_loss(dot(data.row(i), e), data.label(i)))
            .sum::<f64>()
    };
    let risks: Vec<f64> = experts.iter().map(risk).collect();
    Ok(argmin(&risks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::noise::sim_rng;
    use crate::synthetic::{SyntheticSpec, generate};

    #[test]
    fn blocked_parallel_weights_match_the_reference() {
        let d = generate(
            &SyntheticSpec {
                train: 2500,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(1, &[]),
        );
        let mut rng = sim_rng(2, &[]);
        let experts: Vec<Vec<f64>> = (0..37)
            .map(|k| {
                d.normal
                    .iter()
                    .map(|w| {
                        w * (k as f64 / 10.0) + rand::RngExt::random_range(&mut rng, -0.5..0.5)
                    })
                    .collect()
            })
            .collect();
        let order: Vec<usize> = (0..d.train.len()).rev().collect();
        let ma = MirrorAveraging::new(3.0).expect("valid");
        let fast = ma.weights(&experts, &d.train, &order).expect("ok");
        let slow = reference_weights(&experts, &d.train, &order, 3.0);
        assert!((fast.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
    }

    #[test]
    fn concentrates_on_a_perfect_expert_among_noise() {
        let d = generate(&SyntheticSpec::default(), &mut sim_rng(3, &[]));
        let mut rng = sim_rng(4, &[]);
        let mut experts: Vec<Vec<f64>> = (0..50)
            .map(|_| {
                (0..10)
                    .map(|_| rand::RngExt::random_range(&mut rng, -3.0..3.0))
                    .collect()
            })
            .collect();
        // A scaled true normal: near-zero loss on every point.
        experts.insert(17, d.normal.iter().map(|w| w * 200.0).collect());
        let agg = MirrorAveraging::new(3.0)
            .expect("valid")
            .aggregate(&experts, &d.train, &mut rng)
            .expect("ok");
        assert!(
            agg.lambda[17] > 0.99,
            "λ of the perfect expert = {}",
            agg.lambda[17]
        );
        assert!(d.test.accuracy(&agg.theta) > 0.99);
        assert_eq!(agg.best_single(), 17);
        assert_eq!(best_single(&experts, &d.train).expect("ok"), 17);
        let direct: f64 = (0..d.train.len())
            .map(|i| logistic_loss(dot(d.train.row(i), &experts[3]), d.train.label(i)))
            .sum();
        assert!((agg.risks[3] - direct).abs() < 1e-9 * direct);
    }

    #[test]
    fn equal_experts_get_equal_weights() {
        let d = generate(
            &SyntheticSpec {
                train: 300,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(5, &[]),
        );
        let e: Vec<f64> = (0..10).map(|i| i as f64 * 0.1 - 0.3).collect();
        let experts = vec![e.clone(); 4];
        let lambda = MirrorAveraging::new(3.0)
            .expect("valid")
            .weights_shuffled(&experts, &d.train, &mut sim_rng(6, &[]))
            .expect("ok");
        for l in &lambda {
            assert!((l - 0.25).abs() < 1e-15);
        }
    }

    #[test]
    fn result_is_independent_of_thread_count() {
        let d = generate(
            &SyntheticSpec {
                train: 3000,
                ..SyntheticSpec::default()
            },
            &mut sim_rng(7, &[]),
        );
        let mut rng = sim_rng(8, &[]);
        let experts: Vec<Vec<f64>> = (0..20)
            .map(|_| {
                (0..10)
                    .map(|_| rand::RngExt::random_range(&mut rng, -2.0..2.0))
                    .collect()
            })
            .collect();
        let order: Vec<usize> = (0..d.train.len()).collect();
        let ma = MirrorAveraging::new(3.0).expect("valid");
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .expect("pool")
            .install(|| ma.weights(&experts, &d.train, &order))
            .expect("ok");
        let three = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .expect("pool")
            .install(|| ma.weights(&experts, &d.train, &order))
            .expect("ok");
        assert_eq!(one, three);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let d = Dataset::new(vec![0.5, 0.5], vec![1.0], 2);
        let ma = MirrorAveraging::new(3.0).expect("valid");
        assert!(
            !MirrorAveraging::new(2.0)
                .expect("valid")
                .covered_by_oracle_inequality()
        );
        assert!(
            MirrorAveraging::new(3.0)
                .expect("valid")
                .covered_by_oracle_inequality()
        );
        assert_eq!(
            MirrorAveraging::new(0.0).expect_err("must fail"),
            AggregateError::InvalidBeta(0.0)
        );
        assert!(
            MirrorAveraging::new(f64::NAN)
                .expect_err("must fail")
                .to_string()
                .contains("beta")
        );
        assert_eq!(
            ma.weights(&[], &d, &[0]).expect_err("must fail"),
            AggregateError::NoExperts
        );
        assert_eq!(
            ma.weights(&[vec![1.0]], &d, &[0]).expect_err("must fail"),
            AggregateError::DimensionMismatch {
                index: 0,
                found: 1,
                expected: 2
            }
        );
        assert_eq!(
            ma.weights(&[vec![1.0, f64::NAN]], &d, &[0])
                .expect_err("must fail"),
            AggregateError::NonFinite(0)
        );
        assert_eq!(
            ma.weights(&[vec![1.0, 1.0]], &d, &[1])
                .expect_err("must fail"),
            AggregateError::BadOrder(1)
        );
    }

    #[test]
    fn comparators() {
        let experts = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![-1.0, 0.0]];
        assert_eq!(uniform_average(&experts), vec![0.0, 1.0 / 3.0]);
        let d = Dataset::new(vec![0.9, 0.1, -0.8, 0.0], vec![1.0, -1.0], 2);
        assert_eq!(best_single(&experts, &d).expect("ok"), 0);
    }
}
