//! Mirror averaging (Minami et al. 2015, eq. 15–17) in blocks, in parallel, bit-identical for any
//! thread count, with [`reference_weights`], the direct serial transcription it is tested and timed
//! against.

use super::comparators::{argmin, combine};
use super::loss_table::LossTable;
use super::{AggregateError, check_order, validate};
use crate::data::dataset::{Dataset, dot};
use crate::learn::classifier::LinearClassifier;
use crate::util::fastmath;
use crate::util::simd::{Kernel, vectorised};
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
/// β_φ for the logistic loss (Minami et al. 2015, eq. 19): the smallest temperature the theory
/// covers.
pub const BETA_LOGISTIC: f64 = std::f64::consts::E;

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
                "beta < e: the oracle inequality of Minami et al. 2015, eq. 20 does not cover this temperature for the logistic loss"
            );
        }
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The mixing weights λ (eq. 16), visiting `data` in a random order drawn from `rng`.
    pub fn mixing_weights_shuffled<E: AsRef<[f64]>, R: Rng + ?Sized>(
        &self,
        experts: &[E],
        data: &Dataset,
        rng: &mut R,
    ) -> Result<Vec<f64>, AggregateError> {
        let mut order: Vec<usize> = (0..data.len()).collect();
        order.shuffle(rng);
        self.mixing_weights(experts, data, &order)
    }

    /// The mixing weights λ (eq. 15–16), visiting the rows of `data` in `order`.
    pub fn mixing_weights<E: AsRef<[f64]>>(
        &self,
        experts: &[E],
        data: &Dataset,
        order: &[usize],
    ) -> Result<Vec<f64>, AggregateError> {
        self.mixing_weights_and_risks(experts, data, order)
            .map(|(mixing_weights, _)| mixing_weights)
    }

    /// λ together with each expert's total loss S_n,m = Σᵢ ℓ(⟨θ_m, xᵢ⟩, yᵢ) on `data`, which the
    /// sweep computes anyway (the best single expert is the one with the smallest).
    pub fn mixing_weights_and_risks<E: AsRef<[f64]>>(
        &self,
        experts: &[E],
        data: &Dataset,
        order: &[usize],
    ) -> Result<(Vec<f64>, Vec<f64>), AggregateError> {
        validate(experts, data)?;
        check_order(order, data.len())?;
        let m = experts.len();
        let expert_matrix = expert_matrix(experts, data.dim());
        Ok(self.sweep(m, order, |block, buf| {
            buf.par_chunks_mut(SUB_ROWS * m)
                .zip(block.par_chunks(SUB_ROWS))
                .for_each(|(out, rows)| block_losses(&expert_matrix, data, rows, out));
        }))
    }

    /// [`Self::aggregate`] reading the losses from `table` instead of computing them: the same
    /// visiting order from `rng` and the same bits. `experts` must be the first `experts.len()`
    /// learners the table was computed for, in that order (it holds their losses, not them).
    pub fn aggregate_from_table<E: AsRef<[f64]>, R: Rng + ?Sized>(
        &self,
        experts: &[E],
        table: &LossTable,
        rng: &mut R,
    ) -> Result<Aggregate, AggregateError> {
        let m = experts.len();
        table.check(m)?;
        let mut order: Vec<usize> = (0..table.rows()).collect();
        order.shuffle(rng);
        let (mixing_weights, risks) = self.sweep(m, &order, |block, buf| {
            for (out, &t) in buf.chunks_mut(m).zip(block) {
                out.copy_from_slice(table.row(t, m));
            }
        });
        Ok(Aggregate {
            classifier: combine(experts, &mixing_weights),
            mixing_weights,
            risks,
        })
    }

    /// Eq. 15–16 over the rows in `order`, block by block: `fill(block, buf)` writes the losses
    /// of the block's rows (row t of the block in `buf[t·m..(t + 1)·m]`); returns λ and each
    /// expert's total loss.
    fn sweep(
        &self,
        m: usize,
        order: &[usize],
        fill: impl Fn(&[usize], &mut [f64]),
    ) -> (Vec<f64>, Vec<f64>) {
        let mut cumulative = vec![0.0; m];
        let mut lambda_sum = vec![0.0; m];
        let mut buf = vec![0.0; BLOCK_ROWS.min(order.len()) * m];
        let mut mins = Vec::with_capacity(BLOCK_ROWS);
        for block in order.chunks(BLOCK_ROWS) {
            let buf = &mut buf[..block.len() * m];
            // Losses ℓ(⟨θ_m, x_t⟩, y_t), row t of the block in buf[t*m..(t+1)*m].
            fill(block, buf);
            // Eq. 15 numerators need S_t = S_{t−1} + ℓ_t: sequential over t.
            cumulate(buf, &mut cumulative, &mut mins);
            let beta = self.beta;
            let partials: Vec<Vec<f64>> = buf
                .par_chunks(SUB_ROWS * m)
                .zip(mins.par_chunks(SUB_ROWS))
                .map(|(rows, mins)| softmax_sums(rows, mins, m, beta))
                .collect();
            for part in &partials {
                for (acc, v) in lambda_sum.iter_mut().zip(part) {
                    *acc += v;
                }
            }
        }
        let n = order.len() as f64;
        (lambda_sum.into_iter().map(|v| v / n).collect(), cumulative)
    }

    /// The mixing weights λ (eq. 15–16) from losses computed elsewhere: `losses` holds, row by
    /// row in visiting order, the loss of each of the `m` experts on that row. This is the
    /// entry for experts whose loss on a row is not ⟨θ, x⟩'s — e.g. a cross-fitted model,
    /// scored on each row by a fit that did not see it.
    pub fn mixing_weights_from_losses(
        &self,
        losses: &[f64],
        m: usize,
    ) -> Result<Vec<f64>, AggregateError> {
        if m == 0 {
            return Err(AggregateError::NoExperts);
        }
        if losses.is_empty() || !losses.len().is_multiple_of(m) {
            return Err(AggregateError::EmptyData);
        }
        let mut cumulative = vec![0.0; m];
        let mut sums = losses.to_vec();
        let mut mins = Vec::with_capacity(losses.len() / m);
        cumulate(&mut sums, &mut cumulative, &mut mins);
        let n = (losses.len() / m) as f64;
        Ok(softmax_sums(&sums, &mins, m, self.beta)
            .into_iter()
            .map(|v| v / n)
            .collect())
    }

    /// Eq. 17: the aggregated linear model Σ_m λ_m θ_m, with the weights λ and each expert's
    /// total loss on `data` (visited in a random order drawn from `rng`).
    pub fn aggregate<E: AsRef<[f64]>, R: Rng + ?Sized>(
        &self,
        experts: &[E],
        data: &Dataset,
        rng: &mut R,
    ) -> Result<Aggregate, AggregateError> {
        let mut order: Vec<usize> = (0..data.len()).collect();
        order.shuffle(rng);
        let (mixing_weights, risks) = self.mixing_weights_and_risks(experts, data, &order)?;
        Ok(Aggregate {
            classifier: combine(experts, &mixing_weights),
            mixing_weights,
            risks,
        })
    }
}

/// The result of [`MirrorAveraging::aggregate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// θ_agg = Σ λ_m θ_m (eq. 17).
    pub classifier: LinearClassifier,
    /// The mixing weights λ_m (eq. 16), one per expert, summing to 1.
    pub mixing_weights: Vec<f64>,
    /// Each expert's total logistic loss on the aggregator's data.
    pub risks: Vec<f64>,
}

impl Aggregate {
    /// Index of the expert with the smallest loss on the aggregator's data (first on ties).
    pub fn best_single(&self) -> usize {
        argmin(&self.risks)
    }
}

/// Each expert's total loss S_n,m = Σᵢ ℓ(⟨θ_m, xᵢ⟩, yᵢ) on `data`, rows in their order, by the
/// sweep's vectorised block losses (the best single expert's criterion, at the sweep's speed).
pub(super) fn total_losses<E: AsRef<[f64]>>(experts: &[E], data: &Dataset) -> Vec<f64> {
    let m = experts.len();
    let expert_matrix = expert_matrix(experts, data.dim());
    let rows: Vec<usize> = (0..data.len()).collect();
    let mut totals = vec![0.0; m];
    let mut buf = vec![0.0; BLOCK_ROWS.min(rows.len()) * m];
    for block in rows.chunks(BLOCK_ROWS) {
        let buf = &mut buf[..block.len() * m];
        buf.par_chunks_mut(SUB_ROWS * m)
            .zip(block.par_chunks(SUB_ROWS))
            .for_each(|(out, rows)| block_losses(&expert_matrix, data, rows, out));
        for row in buf.chunks(m) {
            for (s, l) in totals.iter_mut().zip(row) {
                *s += *l;
            }
        }
    }
    totals
}

/// The experts as the rows of an M × p matrix.
pub(super) fn expert_matrix<E: AsRef<[f64]>>(experts: &[E], p: usize) -> DMatrix<f64> {
    let flat: Vec<f64> = experts
        .iter()
        .flat_map(|e| e.as_ref().iter().copied())
        .collect();
    DMatrix::from_row_slice(experts.len(), p, &flat)
}

/// Scores via one matrix product (M × p times p × rows) written straight into `out` — whose
/// row-major rows × M layout is the column-major M × rows result — then logistic losses in place.
pub(super) fn block_losses(
    experts: &DMatrix<f64>,
    data: &Dataset,
    rows: &[usize],
    out: &mut [f64],
) {
    let p = data.dim();
    let m = experts.nrows();
    let mut xs = Vec::with_capacity(rows.len() * p);
    for &r in rows {
        xs.extend_from_slice(data.row(r));
    }
    let x_t = DMatrixView::from_slice(&xs, p, rows.len());
    let mut scores = DMatrixViewMut::from_slice(out, m, rows.len());
    scores.gemm(1.0, experts, &x_t, 0.0);
    vectorised(Losses { data, rows, m, out });
}

/// ℓ(z, y) = softplus(−y z) in place over the scores of `rows` (row t of `out`: all M scores).
struct Losses<'a> {
    data: &'a Dataset,
    rows: &'a [usize],
    m: usize,
    out: &'a mut [f64],
}

impl Kernel for Losses<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        for (o, t) in self.out.chunks_mut(self.m).zip(self.rows) {
            let y = self.data.label(*t);
            for oi in o.iter_mut() {
                *oi *= -y;
            }
        }
        // softplus over all rows at once: one partial vector per block instead of one per row
        // (M = 99 experts left 3 of every row's 99 losses to scalar code).
        for oi in self.out.iter_mut() {
            *oi = fastmath::softplus(*oi);
        }
    }
}

/// Turns `rows` (row t: the M losses ℓ_t) into running totals S_t = S_{t−1} + ℓ_t, carrying
/// `cumulative` (S before the first row) across calls, and writes each row's minimum over the
/// experts into `mins` — in the same pass, while the row is in registers (min is exact, so
/// the lane split does not change it).
fn cumulate(rows: &mut [f64], cumulative: &mut [f64], mins: &mut Vec<f64>) {
    vectorised(Cumulate {
        rows,
        cumulative,
        mins,
    })
}

struct Cumulate<'a> {
    rows: &'a mut [f64],
    cumulative: &'a mut [f64],
    mins: &'a mut Vec<f64>,
}

impl Kernel for Cumulate<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        const LANES: usize = 8;
        let m = self.cumulative.len();
        self.mins.clear();
        for row in self.rows.chunks_mut(m) {
            let mut lanes = [f64::INFINITY; LANES];
            let mut s_chunks = self.cumulative.chunks_exact_mut(LANES);
            let mut l_chunks = row.chunks_exact_mut(LANES);
            for (s, l) in (&mut s_chunks).zip(&mut l_chunks) {
                for k in 0..LANES {
                    s[k] += l[k];
                    l[k] = s[k];
                    lanes[k] = if l[k] < lanes[k] { l[k] } else { lanes[k] };
                }
            }
            let mut min = f64::INFINITY;
            for (s, l) in s_chunks
                .into_remainder()
                .iter_mut()
                .zip(l_chunks.into_remainder())
            {
                *s += *l;
                *l = *s;
                min = min.min(*l);
            }
            self.mins.push(lanes.iter().copied().fold(min, f64::min));
        }
    }
}

/// Experts tested at once for being within the cutoff of the best.
const LIVE_LANES: usize = 8;
/// Rows whose normalisers are summed side by side in [`softmax_sums`].
const SOFTMAX_ROWS: usize = 4;

/// Σ_t λ^(t) over the rows of `cumulative` (each row: S_t for all experts; `mins[t]` its
/// minimum).
pub(super) fn softmax_sums(cumulative: &[f64], mins: &[f64], m: usize, beta: f64) -> Vec<f64> {
    vectorised(SoftmaxSums {
        cumulative,
        mins,
        m,
        beta,
    })
}

struct SoftmaxSums<'a> {
    cumulative: &'a [f64],
    mins: &'a [f64],
    m: usize,
    beta: f64,
}

impl Kernel for SoftmaxSums<'_> {
    type Output = Vec<f64>;

    /// Row t's weights are e^{−(S_t,j − min_t)/β} for the experts within the cutoff of the best
    /// and nothing for the others; its normaliser z_t sums them in expert order and λ^(t) adds
    /// w/z_t to each expert's total, rows in order. Here the weights of the experts beyond the
    /// cutoff are exact zeros instead (z + 0 = z and acc + 0·(1/z) = acc, bit for bit), whole
    /// lanes of [`LIVE_LANES`] experts beyond it for every row of a group are skipped, and the
    /// normalisers of [`SOFTMAX_ROWS`] rows are summed side by side — independent sums, each
    /// in its row's order, so the bits are those of one row at a time.
    #[inline(always)]
    fn run(self) -> Vec<f64> {
        let SoftmaxSums {
            cumulative,
            mins,
            m,
            beta,
        } = self;
        let mut acc = vec![0.0; m];
        let lanes = m.div_ceil(LIVE_LANES);
        let mut weights = vec![0.0; SOFTMAX_ROWS * m];
        let mut live = vec![false; SOFTMAX_ROWS * lanes];
        let mut union: Vec<usize> = Vec::with_capacity(lanes);
        let cutoff = NEGLIGIBLE_EXPONENT * beta;
        let inv_beta = 1.0 / beta;
        for (s, mins) in cumulative
            .chunks(SOFTMAX_ROWS * m)
            .zip(mins.chunks(SOFTMAX_ROWS))
        {
            for ((row, &min), (w, row_live)) in s
                .chunks(m)
                .zip(mins)
                .zip(weights.chunks_mut(m).zip(live.chunks_mut(lanes)))
            {
                for ((chunk, w), live) in row
                    .chunks(LIVE_LANES)
                    .zip(w.chunks_mut(LIVE_LANES))
                    .zip(row_live.iter_mut())
                {
                    *live = chunk
                        .iter()
                        .fold(false, |any, &v| any | (v - min <= cutoff));
                    if *live {
                        for (w, &v) in w.iter_mut().zip(chunk) {
                            let e = fastmath::exp_nonpositive((min - v) * inv_beta);
                            *w = if v - min <= cutoff { e } else { 0.0 };
                        }
                    }
                }
            }
            let rows = mins.len();
            union.clear();
            union.extend((0..lanes).filter(|&c| (0..rows).any(|r| live[r * lanes + c])));
            // A lane some row of the group needs is zeros in the rows it is beyond the cutoff for.
            for r in 0..rows {
                for &c in &union {
                    if !live[r * lanes + c] {
                        let lane = c * LIVE_LANES..((c + 1) * LIVE_LANES).min(m);
                        weights[r * m..][lane].fill(0.0);
                    }
                }
            }
            let mut z = [0.0; SOFTMAX_ROWS];
            for &c in &union {
                let lane = c * LIVE_LANES..((c + 1) * LIVE_LANES).min(m);
                for j in lane {
                    for (r, z) in z.iter_mut().enumerate().take(rows) {
                        *z += weights[r * m + j];
                    }
                }
            }
            for (w, z) in weights.chunks(m).zip(&z[..rows]) {
                let inv = 1.0 / z;
                for &c in &union {
                    let lane = c * LIVE_LANES..((c + 1) * LIVE_LANES).min(m);
                    for (a, w) in acc[lane.clone()].iter_mut().zip(&w[lane]) {
                        *a += w * inv;
                    }
                }
            }
        }
        acc
    }
}

/// Direct serial transcription of eq. 15–16: one log-sum-exp per row, libm's `exp`/`log1p`, no
/// blocking or skipping. It is the independent reference [`MirrorAveraging::mixing_weights`] is tested
/// against and the baseline `dpagg-aggregator bench` times it against; O(n·M) and single-threaded.
pub fn reference_weights<E: AsRef<[f64]>>(
    experts: &[E],
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
            s[k] += loss(dot(data.row(t), e.as_ref()), data.label(t));
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
