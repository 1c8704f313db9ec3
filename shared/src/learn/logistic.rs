//! L2-regularised logistic regression: loss, gradient and Hessian, computed stably.
//!
//! The objective every learner in dpagg minimises is (Minami et al. 2015, eq. 23–24 with the
//! regulariser written as (λ/2)||θ||², the convention of Chaudhuri, Monteleoni and Sarwate 2011):
//!
//! ```text
//! F(θ) = (1/n) Σᵢ log(1 + exp(−yᵢ⟨θ, xᵢ⟩)) + (μ/2)||θ||² + (1/n) bᵀθ
//! ```
//!
//! where μ = λ for the plain learner and μ = λ + Δ for objective perturbation, and b is the
//! perturbation vector (zero for the plain learner). [`evaluate`] streams once over the data and
//! returns F, ∇F and (optionally) ∇²F; it splits rows into fixed-size chunks evaluated in parallel
//! and sums the chunk results in chunk order, so results are bit-identical for any thread count.

use crate::data::dataset::{Dataset, dot};
use crate::learn::margins::margins_into;
use crate::learn::row_sums::add_weighted_rows;
use crate::util::fastmath;
use crate::util::simd::{Kernel, vectorised};
use rayon::prelude::*;

pub use crate::learn::hessian::{CurvatureRows, hessian};

/// Rows per parallel chunk. Fixed (not derived from the thread count) for determinism.
pub const CHUNK_ROWS: usize = 4096;

/// softplus(z) = log(1 + eᶻ) without overflow or cancellation.
#[inline]
pub fn softplus(z: f64) -> f64 {
    fastmath::softplus(z)
}

/// Logistic loss ℓ(z, y) = log(1 + exp(−y z)) of a real-valued score z for label y = ±1 (eq. 23).
#[inline]
pub fn logistic_loss(z: f64, y: f64) -> f64 {
    softplus(-y * z)
}

/// ⟨a, b⟩ with four accumulators (floating-point sums do not vectorise on their own).
#[inline(always)]
pub(crate) fn dot_by_lanes(a: &[f64], b: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (ca, cb) = (a.chunks_exact(4), b.chunks_exact(4));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..4 {
            acc[k] += x[k] * y[k];
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// The smooth terms added to the data loss: (μ/2)||θ||² + (1/n) bᵀθ.
#[derive(Debug, Clone, Copy)]
pub struct Penalty<'a> {
    /// Total quadratic coefficient μ (regulariser λ plus any objective-perturbation Δ).
    pub mu: f64,
    /// Optional linear perturbation b (divided by n in the objective).
    pub linear: Option<&'a [f64]>,
}

impl Penalty<'_> {
    /// Plain L2 regularisation (λ/2)||θ||².
    pub fn ridge(lambda: f64) -> Penalty<'static> {
        Penalty {
            mu: lambda,
            linear: None,
        }
    }
}

/// Objective value, gradient and, when requested, the Hessian (row-major p×p) at one θ.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// F(θ).
    pub value: f64,
    /// ∇F(θ).
    pub gradient: Vec<f64>,
    /// ∇²F(θ), row-major, present when requested.
    pub hessian: Option<Vec<f64>>,
    /// The data's sums F and ∇F were computed from.
    pub sums: DataSums,
}

struct ChunkSums {
    loss: f64,
    grad: Vec<f64>,
    /// ℓ''(mᵢ) of the chunk's rows, computed with the loss and slope (what [`crate::learn::hessian`]'s `curvatures` gives).
    curvature: Vec<f64>,
}

/// The rows of one chunk and the point they are evaluated at.
pub(crate) struct Chunk<'a> {
    pub(crate) x: &'a [f64],
    pub(crate) y: &'a [f64],
    pub(crate) theta: &'a [f64],
}

/// The rows of chunk `c` of an n-row data set.
pub(crate) fn chunk_range(c: usize, n: usize) -> std::ops::Range<usize> {
    c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(n)
}

impl<'a> Chunk<'a> {
    pub(crate) fn new(data: &'a Dataset, rows: std::ops::Range<usize>, theta: &'a [f64]) -> Self {
        let p = theta.len();
        Chunk {
            x: &data.features()[rows.start * p..rows.end * p],
            y: &data.labels()[rows],
            theta,
        }
    }
}

/// Rows per block of a gradient pass: small enough (≤ 256 kB at d = 100) that a block is still
/// in the core's cache when the gradient loop reads it again after the margins loop, so a pass
/// reads the data from memory once.
const BLOCK_ROWS: usize = 256;

/// Sums over one chunk of the loss and its gradient, per block of rows in three stages: margins;
/// element-wise loss and slope (branch-free, so the loop vectorises); the gradient as Σ cᵢxᵢ.
/// Rows are visited in order in every stage, so the sums do not depend on the block size.
struct GradientSums<'a>(Chunk<'a>);

impl Kernel for GradientSums<'_> {
    type Output = ChunkSums;

    #[inline(always)]
    fn run(self) -> ChunkSums {
        let Chunk { x, y, theta } = self.0;
        let p = theta.len();
        let mut losses = vec![0.0; y.len()];
        let mut curvature = vec![0.0; y.len()];
        let mut coef = [0.0; BLOCK_ROWS];
        let mut grad = vec![0.0; p];
        for (((xb, yb), lb), wb) in x
            .chunks(BLOCK_ROWS * p)
            .zip(y.chunks(BLOCK_ROWS))
            .zip(losses.chunks_mut(BLOCK_ROWS))
            .zip(curvature.chunks_mut(BLOCK_ROWS))
        {
            let coef = &mut coef[..yb.len()];
            margins_into(xb, yb, theta, coef);
            for (((c, l), w), yi) in coef.iter_mut().zip(lb.iter_mut()).zip(wb).zip(yb) {
                let t = fastmath::logistic_terms(*c);
                *l = t.loss;
                *w = t.curvature;
                // d/dz softplus(−y z) = −y σ(−m).
                *c = -yi * t.slope;
            }
            add_weighted_rows(xb, coef, &mut grad);
        }
        // Summed in row order after the loops, so the loops have no serial dependency.
        let mut loss = 0.0;
        for l in &losses {
            loss += l;
        }
        ChunkSums {
            loss,
            grad,
            curvature,
        }
    }
}

/// The data's part of F and ∇F at one θ: Σᵢ ℓ and Σᵢ ∇ℓ over every row, summed in chunk order,
/// before the 1/n and the penalty. [`DataSums::evaluation`] turns it into F and ∇F for any
/// penalty, so a fit along a regularisation path can start at the previous minimiser without a
/// pass over the data (the same bits as [`evaluate`] there: same sums, same arithmetic).
#[derive(Debug, Clone, PartialEq)]
pub struct DataSums {
    /// Σᵢ ℓ(θ; xᵢ, yᵢ).
    pub loss: f64,
    /// Σᵢ ∇ℓ(θ; xᵢ, yᵢ).
    pub gradient: Vec<f64>,
    /// The rows summed over: n, or a sub-sample's |S| ([`data_sums_over`]).
    pub rows: usize,
    /// n, the rows of the data set (the linear term is divided by n whatever was summed over).
    pub(crate) data_rows: usize,
    /// The chunks summed over: every `stride`-th (1: every row).
    pub(crate) stride: usize,
    /// ℓ''(mᵢ) of every row summed over, per chunk of [`CHUNK_ROWS`], for
    /// [`crate::learn::hessian::hessian_at`] at the same θ.
    pub(crate) curvature: std::sync::Arc<Vec<Vec<f64>>>,
}

/// Σᵢ ℓ and Σᵢ ∇ℓ at `theta`, one pass over `data` in parallel chunks.
///
/// # Panics
/// If `theta` does not have the data's dimension — a programming error.
pub fn data_sums(data: &Dataset, theta: &[f64]) -> DataSums {
    data_sums_over(data, theta, CurvatureRows::All)
}

/// [`data_sums`] over the chunks `rows` selects (a sub-sample's objective, the warm start of
/// [`crate::learn::solver`]), summed in chunk order.
pub(crate) fn data_sums_over(data: &Dataset, theta: &[f64], rows: CurvatureRows) -> DataSums {
    let p = data.dim();
    assert_eq!(theta.len(), p, "θ has the wrong dimension");
    let n = data.len();
    let selected: Vec<usize> = rows.chunks(n).collect();
    let chunks: Vec<ChunkSums> = selected
        .par_iter()
        .map(|&c| vectorised(GradientSums(Chunk::new(data, chunk_range(c, n), theta))))
        .collect();
    let mut loss = 0.0;
    let mut gradient = vec![0.0; p];
    for c in &chunks {
        loss += c.loss;
        add_into(&mut gradient, &c.grad);
    }
    DataSums {
        loss,
        gradient,
        rows: rows.count(n),
        data_rows: n,
        stride: rows.stride(),
        curvature: std::sync::Arc::new(chunks.into_iter().map(|c| c.curvature).collect()),
    }
}

impl DataSums {
    /// F and ∇F at `theta` (the point these sums were taken at) for `penalty`; no Hessian. Sums
    /// over a sub-sample S give its objective (1/|S|) Σ_S ℓ + (μ/2)‖θ‖² + (1/n) bᵀθ.
    ///
    /// # Panics
    /// If the linear term does not have θ's dimension — a programming error.
    pub fn evaluation(self, theta: &[f64], penalty: Penalty<'_>) -> Evaluation {
        let n = self.rows;
        let inv_n = if n == 0 { 0.0 } else { 1.0 / n as f64 };
        let inv_data = if self.data_rows == n {
            inv_n
        } else {
            1.0 / self.data_rows as f64
        };
        let mu = penalty.mu;
        let mut value = self.loss * inv_n + 0.5 * mu * dot(theta, theta);
        let mut gradient: Vec<f64> = self
            .gradient
            .iter()
            .zip(theta)
            .map(|(g, t)| g * inv_n + mu * t)
            .collect();
        if let Some(b) = penalty.linear {
            assert_eq!(b.len(), theta.len(), "linear term has the wrong dimension");
            value += inv_data * dot(b, theta);
            for (g, bj) in gradient.iter_mut().zip(b) {
                *g += bj * inv_data;
            }
        }
        Evaluation {
            value,
            gradient,
            hessian: None,
            sums: self,
        }
    }
}

/// Evaluates F, ∇F and optionally the exact ∇²F ([`hessian`] over all rows) at `theta`.
///
/// # Panics
/// If `theta` (or the linear term) does not have the data's dimension — a programming error.
pub fn evaluate(data: &Dataset, theta: &[f64], penalty: Penalty<'_>, hessian: bool) -> Evaluation {
    let mut out = data_sums(data, theta).evaluation(theta, penalty);
    out.hessian = hessian.then(|| self::hessian(data, theta, penalty.mu, CurvatureRows::All).0);
    out
}

pub(crate) fn add_into(acc: &mut [f64], x: &[f64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::util::fastmath::sigmoid;

    #[test]
    fn softplus_and_sigmoid_are_stable() {
        assert_eq!(softplus(1000.0), 1000.0);
        assert_eq!(softplus(-1000.0), 0.0);
        assert!((softplus(0.0) - 2f64.ln()).abs() < 1e-15);
        assert!((softplus(-40.0) - (-40f64).exp()).abs() < 1e-30);
        assert_eq!(sigmoid(1000.0), 1.0);
        assert_eq!(sigmoid(-1000.0), 0.0);
        assert!((sigmoid(2.0) + sigmoid(-2.0) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn gradient_and_hessian_match_finite_differences() {
        let data = Dataset::new(
            vec![
                0.3, -0.2, 0.5, 0.1, 0.4, 0.4, -0.6, 0.2, 0.1, 0.0, -0.3, 0.5,
            ],
            vec![1.0, -1.0, 1.0, -1.0],
            3,
        );
        let b = [0.7, -1.1, 0.2];
        let pen = Penalty {
            mu: 0.05,
            linear: Some(&b),
        };
        let theta = [0.4, -0.9, 1.3];
        let e = evaluate(&data, &theta, pen, true);
        let h = e.hessian.expect("hessian requested");
        let eps = 1e-6;
        for j in 0..3 {
            let mut tp = theta;
            let mut tm = theta;
            tp[j] += eps;
            tm[j] -= eps;
            let ep = evaluate(&data, &tp, pen, false);
            let em = evaluate(&data, &tm, pen, false);
            let fd = (ep.value - em.value) / (2.0 * eps);
            assert!(
                (fd - e.gradient[j]).abs() < 1e-8,
                "grad {j}: {fd} vs {}",
                e.gradient[j]
            );
            for k in 0..3 {
                let fdh = (ep.gradient[k] - em.gradient[k]) / (2.0 * eps);
                assert!((fdh - h[j * 3 + k]).abs() < 1e-7, "hess {j}{k}");
            }
        }
    }

    /// n × p features ((i·a mod m)/m − ½)·scale (entry i, row-major) and label +1 on every
    /// `every`-th row, −1 elsewhere: deterministic rows spanning several chunks.
    pub(crate) fn patterned(
        n: usize,
        p: usize,
        (a, m): (usize, usize),
        scale: f64,
        every: usize,
    ) -> Dataset {
        let x = (0..n * p)
            .map(|i| ((i * a % m) as f64 / m as f64 - 0.5) * scale)
            .collect();
        let y = (0..n)
            .map(|i| if i % every == 0 { 1.0 } else { -1.0 })
            .collect();
        Dataset::new(x, y, p)
    }

    #[test]
    fn chunked_evaluation_equals_serial_sum() {
        // More rows than one chunk, so the parallel split is exercised.
        let n = CHUNK_ROWS * 2 + 17;
        let data = patterned(n, 2, (37, 101), 0.7, 3);
        let theta = [0.8, -0.3];
        let e = evaluate(&data, &theta, Penalty::ridge(0.0), false);
        let serial: f64 = (0..n)
            .map(|i| logistic_loss(dot(data.row(i), &theta), data.label(i)))
            .sum::<f64>()
            / n as f64;
        assert!((e.value - serial).abs() < 1e-12);
    }
}
