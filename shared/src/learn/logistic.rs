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
use crate::learn::fastmath;
use crate::learn::gram;
use crate::learn::margins::margins_into;
use crate::learn::row_sums::add_weighted_rows;
use crate::learn::simd::{Kernel, vectorised};
use nalgebra::{DMatrix, DMatrixView};
use rayon::prelude::*;

/// Rows per parallel chunk. Fixed (not derived from the thread count) for determinism.
pub const CHUNK_ROWS: usize = 4096;

/// softplus(z) = log(1 + eᶻ) without overflow or cancellation.
#[inline]
pub fn softplus(z: f64) -> f64 {
    fastmath::softplus(z)
}

/// The logistic function 1/(1 + e⁻ᶻ), stable for large |z|.
#[inline]
pub fn sigmoid(z: f64) -> f64 {
    // logistic_terms(m).slope is σ(−m).
    fastmath::logistic_terms(-z).slope
}

/// Logistic loss ℓ(z, y) = log(1 + exp(−y z)) of a real-valued score z for label y = ±1 (eq. 23).
#[inline]
pub fn logistic_loss(z: f64, y: f64) -> f64 {
    softplus(-y * z)
}

/// ⟨a, b⟩ with four accumulators (floating-point sums do not vectorise on their own).
#[inline(always)]
pub(crate) fn dot4(a: &[f64], b: &[f64]) -> f64 {
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
    /// ℓ''(mᵢ) of the chunk's rows, computed with the loss and slope (what [`curvatures`] gives).
    curvature: Vec<f64>,
}

/// The rows of one chunk and the point they are evaluated at.
struct Chunk<'a> {
    x: &'a [f64],
    y: &'a [f64],
    theta: &'a [f64],
}

impl<'a> Chunk<'a> {
    fn new(data: &'a Dataset, rows: std::ops::Range<usize>, theta: &'a [f64]) -> Self {
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

/// wᵢ = ℓ''(mᵢ) for the rows of one chunk: the weights of its Hessian Xᵀ diag(w) X.
#[inline(always)]
fn curvatures(chunk: &Chunk<'_>) -> Vec<f64> {
    let mut w = vec![0.0; chunk.y.len()];
    margins_into(chunk.x, chunk.y, chunk.theta, &mut w);
    for wi in w.iter_mut() {
        *wi = fastmath::logistic_terms(*wi).curvature;
    }
    w
}

/// The chunk's weights: `known` (from the pass that evaluated F at the same θ) or [`curvatures`].
#[inline(always)]
fn weights<'w>(chunk: &Chunk<'_>, known: Option<&'w [f64]>) -> std::borrow::Cow<'w, [f64]> {
    known.map_or_else(|| curvatures(chunk).into(), Into::into)
}

/// diag(w)X for one chunk, w from [`weights`]: the right factor of its Hessian.
struct CurvatureScaled<'a>(Chunk<'a>, Option<&'a [f64]>);

impl Kernel for CurvatureScaled<'_> {
    type Output = Vec<f64>;

    #[inline(always)]
    fn run(self) -> Vec<f64> {
        let w = weights(&self.0, self.1);
        // Written once, not zeroed first (the zeroing was a whole extra pass).
        let mut scaled = Vec::with_capacity(self.0.x.len());
        for (xi, wi) in self.0.x.chunks_exact(self.0.theta.len()).zip(w.iter()) {
            scaled.extend(xi.iter().map(|v| v * wi));
        }
        scaled
    }
}

/// Σᵢ wᵢxᵢxᵢᵀ over one chunk as one matrix product Xᵀ diag(w) X (column-major p × p, both
/// triangles): by [`gram::gram`] where nalgebra's `gemm` would call dgemm (the same bits),
/// by nalgebra's own loop for the smallest products.
fn chunk_hessian(chunk: Chunk<'_>, known: Option<&[f64]>) -> DMatrix<f64> {
    let (x, p, k) = (chunk.x, chunk.theta.len(), chunk.y.len());
    if p > gram::USES_DGEMM_ABOVE && k > gram::USES_DGEMM_ABOVE {
        return DMatrix::from_vec(p, p, vectorised(Gram(chunk, known)));
    }
    let scaled = vectorised(CurvatureScaled(chunk, known));
    // Xᵀ as a p × k column-major view of the row-major chunk, and diag(w)X as k × p.
    let xt = DMatrixView::from_slice(x, p, k);
    let wx = DMatrixView::from_slice_with_strides(&scaled, k, p, p, 1);
    let mut h = DMatrix::<f64>::zeros(p, p);
    h.gemm(1.0, &xt, &wx, 0.0);
    h
}

/// Xᵀ diag(w) X of one chunk by [`gram::gram`], w from [`weights`], as a [`Kernel`].
struct Gram<'a>(Chunk<'a>, Option<&'a [f64]>);

impl Kernel for Gram<'_> {
    type Output = Vec<f64>;

    /// Outside the dispatcher (nothing calls it so): the narrow registers' tile shapes.
    #[inline(always)]
    fn run(self) -> Vec<f64> {
        self.run_with(1)
    }

    #[inline(always)]
    fn run_with(self, f64_lanes: usize) -> Vec<f64> {
        let p = self.0.theta.len();
        gram::gram(self.0.x, &weights(&self.0, self.1), p, f64_lanes)
    }
}

/// [`chunk_hessian`] in single precision (f32 products, f32 sums over the chunk's rows), for a
/// sampled Hessian, whose sampling error (~1e-2) dwarfs f32 rounding (~1e-6 over a chunk).
fn chunk_hessian_f32(chunk: Chunk<'_>, known: Option<&[f64]>) -> DMatrix<f64> {
    let (x, p, k) = (chunk.x, chunk.theta.len(), chunk.y.len());
    let scaled = vectorised(CurvatureScaled(chunk, known));
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let s32: Vec<f32> = scaled.iter().map(|&v| v as f32).collect();
    let xt = DMatrixView::from_slice(&x32, p, k);
    let wx = DMatrixView::from_slice_with_strides(&s32, k, p, p, 1);
    let mut h = DMatrix::<f32>::zeros(p, p);
    h.gemm(1.0, &xt, &wx, 0.0);
    h.map(f64::from)
}

/// Which rows the Hessian is formed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurvatureRows {
    /// Every row: the exact ∇²F.
    All,
    /// The rows of every `stride`-th chunk of [`CHUNK_ROWS`] rows (chunks 0, stride, 2·stride, …),
    /// a deterministic sub-sample: (1/|S|) Σ_{i∈S} ℓ''ᵢxᵢxᵢᵀ + μI estimates ∇²F.
    EveryNthChunk(usize),
}

impl CurvatureRows {
    /// The chunks of an n-row data set this selects.
    fn chunks(self, n: usize) -> impl Iterator<Item = usize> {
        let stride = match self {
            CurvatureRows::All => 1,
            CurvatureRows::EveryNthChunk(s) => s.max(1),
        };
        (0..n.div_ceil(CHUNK_ROWS)).step_by(stride)
    }
}

fn chunk_range(c: usize, n: usize) -> std::ops::Range<usize> {
    c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(n)
}

/// The Hessian (row-major p × p) of F at `theta` over the rows `rows` selects: (1/|S|) Σ_{i∈S}
/// ℓ''ᵢxᵢxᵢᵀ + μI, chunk results summed in chunk order (bit-identical for any thread count), with
/// the number of rows |S| it used. With [`CurvatureRows::All`] this is exactly ∇²F.
///
/// # Panics
/// If `theta` does not have the data's dimension.
pub fn hessian(data: &Dataset, theta: &[f64], mu: f64, rows: CurvatureRows) -> (Vec<f64>, usize) {
    hessian_at(data, theta, mu, rows, None)
}

/// [`hessian`], taking the rows' curvatures from `sums` when given: the [`data_sums`] of `data`
/// at this same `theta` computed them with the loss (the same bits, one pass of margins and
/// exponentials fewer per Newton step).
pub(crate) fn hessian_at(
    data: &Dataset,
    theta: &[f64],
    mu: f64,
    rows: CurvatureRows,
    sums: Option<&DataSums>,
) -> (Vec<f64>, usize) {
    let p = data.dim();
    assert_eq!(theta.len(), p, "θ has the wrong dimension");
    let n = data.len();
    let selected: Vec<usize> = rows.chunks(n).collect();
    let parts: Vec<DMatrix<f64>> = selected
        .par_iter()
        .map(|&c| {
            let chunk = Chunk::new(data, chunk_range(c, n), theta);
            let known = sums
                .filter(|s| s.rows == n)
                .map(|s| s.curvature[c].as_slice());
            if rows == CurvatureRows::All {
                chunk_hessian(chunk, known)
            } else {
                chunk_hessian_f32(chunk, known)
            }
        })
        .collect();
    let mut total = vec![0.0; p * p];
    for h in &parts {
        add_into(&mut total, h.as_slice());
    }
    let used: usize = selected.iter().map(|&c| chunk_range(c, n).len()).sum();
    let inv = if used == 0 { 0.0 } else { 1.0 / used as f64 };
    // Symmetrise (the matrix product need not round both triangles alike) and add μI.
    let mut out = vec![0.0; p * p];
    for j in 0..p {
        for l in 0..p {
            out[j * p + l] = 0.5 * (total[j * p + l] + total[l * p + j]) * inv;
        }
        out[j * p + j] += mu;
    }
    (out, used)
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
    /// n, the rows summed over.
    pub rows: usize,
    /// ℓ''(mᵢ) of every row, per chunk of [`CHUNK_ROWS`], for [`hessian_at`] at the same θ.
    pub(crate) curvature: std::sync::Arc<Vec<Vec<f64>>>,
}

/// Σᵢ ℓ and Σᵢ ∇ℓ at `theta`, one pass over `data` in parallel chunks.
///
/// # Panics
/// If `theta` does not have the data's dimension — a programming error.
pub fn data_sums(data: &Dataset, theta: &[f64]) -> DataSums {
    let p = data.dim();
    assert_eq!(theta.len(), p, "θ has the wrong dimension");
    let n = data.len();
    let chunks: Vec<ChunkSums> = (0..n.div_ceil(CHUNK_ROWS))
        .into_par_iter()
        .map(|c| vectorised(GradientSums(Chunk::new(data, chunk_range(c, n), theta))))
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
        rows: n,
        curvature: std::sync::Arc::new(chunks.into_iter().map(|c| c.curvature).collect()),
    }
}

impl DataSums {
    /// F and ∇F at `theta` (the point these sums were taken at) for `penalty`; no Hessian.
    ///
    /// # Panics
    /// If the linear term does not have θ's dimension — a programming error.
    pub fn evaluation(self, theta: &[f64], penalty: Penalty<'_>) -> Evaluation {
        let n = self.rows;
        let inv_n = if n == 0 { 0.0 } else { 1.0 / n as f64 };
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
            value += inv_n * dot(b, theta);
            for (g, bj) in gradient.iter_mut().zip(b) {
                *g += bj * inv_n;
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

fn add_into(acc: &mut [f64], x: &[f64]) {
    for (a, b) in acc.iter_mut().zip(x) {
        *a += b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn patterned(n: usize, p: usize, (a, m): (usize, usize), scale: f64, every: usize) -> Dataset {
        let x = (0..n * p)
            .map(|i| ((i * a % m) as f64 / m as f64 - 0.5) * scale)
            .collect();
        let y = (0..n)
            .map(|i| if i % every == 0 { 1.0 } else { -1.0 })
            .collect();
        Dataset::new(x, y, p)
    }

    /// Σ ℓ''(mᵢ)xᵢxᵢᵀ/|rows| + μI over `rows`, one row at a time.
    fn serial_hessian(data: &Dataset, theta: &[f64], mu: f64, rows: &[usize]) -> Vec<f64> {
        let p = data.dim();
        let mut h = vec![0.0; p * p];
        for &i in rows {
            let m = data.label(i) * dot(data.row(i), theta);
            let w = fastmath::logistic_terms(m).curvature;
            for j in 0..p {
                for l in 0..p {
                    h[j * p + l] += w * data.row(i)[j] * data.row(i)[l] / rows.len() as f64;
                }
            }
        }
        for j in 0..p {
            h[j * p + j] += mu;
        }
        h
    }

    #[test]
    fn exact_and_sampled_hessians_match_serial_sums() {
        let n = CHUNK_ROWS * 4 + 300;
        let data = patterned(n, 3, (53, 97), 0.5, 4);
        let theta = [0.7, -1.2, 0.4];
        let all: Vec<usize> = (0..n).collect();
        // Stride 3 selects chunks 0 and 3.
        let sample: Vec<usize> = (0..CHUNK_ROWS)
            .chain(3 * CHUNK_ROWS..4 * CHUNK_ROWS)
            .collect();
        for (rows, which, tol) in [
            (CurvatureRows::All, &all, 1e-12),
            (CurvatureRows::EveryNthChunk(3), &sample, 1e-5),
        ] {
            let (h, used) = hessian(&data, &theta, 0.05, rows);
            assert_eq!(used, which.len());
            let want = serial_hessian(&data, &theta, 0.05, which);
            for (a, b) in h.iter().zip(&want) {
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1e-3),
                    "{rows:?}: {a} vs {b}"
                );
            }
        }
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

    #[test]
    fn hessian_from_the_evaluations_curvatures_has_the_same_bits() {
        let p = 7;
        let n = 2 * CHUNK_ROWS + 300;
        let x: Vec<f64> = (0..n * p)
            .map(|i| ((i * 7919 + 5) % 1013) as f64 / 1013.0 - 0.5)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| if (i * 37) % 5 < 2 { 1.0 } else { -1.0 })
            .collect();
        let data = Dataset::new(x, y, p);
        let theta: Vec<f64> = (0..p).map(|j| 0.4 - 0.15 * j as f64).collect();
        let sums = data_sums(&data, &theta);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for rows in [CurvatureRows::All, CurvatureRows::EveryNthChunk(2)] {
            let (want, _) = hessian(&data, &theta, 0.01, rows);
            let (got, _) = hessian_at(&data, &theta, 0.01, rows, Some(&sums));
            assert_eq!(bits(&got), bits(&want), "{rows:?}");
        }
    }
}
