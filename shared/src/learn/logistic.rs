//! L2-regularised logistic regression: loss, gradient and Hessian, computed stably.
//!
//! The objective every learner in dpagg minimises is (seed 001 eq. 23–24 with the regulariser
//! written as (λ/2)||θ||², the convention of Chaudhuri, Monteleoni and Sarwate 2011):
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
}

struct ChunkSums {
    loss: f64,
    grad: Vec<f64>,
    hess: Option<Vec<f64>>,
}

/// Sums over rows `rows` of the loss, its gradient and (optionally) its Hessian, in four stages
/// that each stream through the chunk: margins mᵢ = yᵢ⟨θ, xᵢ⟩; element-wise loss, slope and
/// curvature (branch-free, so the loop vectorises); the gradient as Σ cᵢxᵢ; the Hessian as one
/// matrix product Xᵀ diag(w) X.
fn chunk_sums(
    data: &Dataset,
    rows: std::ops::Range<usize>,
    theta: &[f64],
    hessian: bool,
) -> ChunkSums {
    let p = theta.len();
    let x = &data.features()[rows.start * p..rows.end * p];
    let y = &data.labels()[rows];
    let k = y.len();
    let mut coef: Vec<f64> = x
        .chunks_exact(p)
        .zip(y)
        .map(|(xi, yi)| yi * dot4(xi, theta))
        .collect();
    let mut losses = vec![0.0; k];
    let mut curvature = vec![0.0; k];
    for (((c, l), w), yi) in coef.iter_mut().zip(&mut losses).zip(&mut curvature).zip(y) {
        let t = fastmath::logistic_terms(*c);
        *l = t.loss;
        *w = t.curvature;
        // d/dz softplus(−y z) = −y σ(−m).
        *c = -yi * t.slope;
    }
    let loss = losses.iter().sum();
    let mut grad = vec![0.0; p];
    for (xi, c) in x.chunks_exact(p).zip(&coef) {
        for (g, v) in grad.iter_mut().zip(xi) {
            *g += c * v;
        }
    }
    let hess = hessian.then(|| {
        let scaled: Vec<f64> = x
            .chunks_exact(p)
            .zip(&curvature)
            .flat_map(|(xi, w)| xi.iter().map(move |v| v * w))
            .collect();
        // Xᵀ as a p × k column-major view of the row-major chunk, and diag(w)X as k × p.
        let xt = DMatrixView::from_slice(x, p, k);
        let wx = DMatrixView::from_slice_with_strides(&scaled, k, p, p, 1);
        let mut h = DMatrix::<f64>::zeros(p, p);
        h.gemm(1.0, &xt, &wx, 0.0);
        h.as_slice().to_vec()
    });
    ChunkSums { loss, grad, hess }
}

/// Evaluates F, ∇F and optionally ∇²F at `theta` in one pass over `data`.
///
/// # Panics
/// If `theta` (or the linear term) does not have the data's dimension — a programming error.
pub fn evaluate(data: &Dataset, theta: &[f64], penalty: Penalty<'_>, hessian: bool) -> Evaluation {
    let p = data.dim();
    assert_eq!(theta.len(), p, "θ has the wrong dimension");
    let n = data.len();
    let chunks: Vec<ChunkSums> = (0..n.div_ceil(CHUNK_ROWS))
        .into_par_iter()
        .map(|c| {
            chunk_sums(
                data,
                c * CHUNK_ROWS..((c + 1) * CHUNK_ROWS).min(n),
                theta,
                hessian,
            )
        })
        .collect();
    let mut total = ChunkSums {
        loss: 0.0,
        grad: vec![0.0; p],
        hess: hessian.then(|| vec![0.0; p * p]),
    };
    for c in &chunks {
        total.loss += c.loss;
        add_into(&mut total.grad, &c.grad);
        if let (Some(t), Some(h)) = (total.hess.as_mut(), c.hess.as_ref()) {
            add_into(t, h);
        }
    }
    let inv_n = if n == 0 { 0.0 } else { 1.0 / n as f64 };
    let mu = penalty.mu;
    let mut value = total.loss * inv_n + 0.5 * mu * dot(theta, theta);
    let mut gradient: Vec<f64> = total
        .grad
        .iter()
        .zip(theta)
        .map(|(g, t)| g * inv_n + mu * t)
        .collect();
    if let Some(b) = penalty.linear {
        assert_eq!(b.len(), p, "linear term has the wrong dimension");
        value += inv_n * dot(b, theta);
        for (g, bj) in gradient.iter_mut().zip(b) {
            *g += bj * inv_n;
        }
    }
    let hessian = total.hess.map(|h| {
        // Symmetrise (the matrix product need not round both triangles alike) and add μI.
        let mut out = vec![0.0; p * p];
        for j in 0..p {
            for l in 0..p {
                out[j * p + l] = 0.5 * (h[j * p + l] + h[l * p + j]) * inv_n;
            }
            out[j * p + j] += mu;
        }
        out
    });
    Evaluation {
        value,
        gradient,
        hessian,
    }
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

    #[test]
    fn chunked_evaluation_equals_serial_sum() {
        // More rows than one chunk, so the parallel split is exercised.
        let n = CHUNK_ROWS * 2 + 17;
        let x: Vec<f64> = (0..n * 2)
            .map(|i| ((i * 37 % 101) as f64 / 101.0 - 0.5) * 0.7)
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        let data = Dataset::new(x, y, 2);
        let theta = [0.8, -0.3];
        let e = evaluate(&data, &theta, Penalty::ridge(0.0), false);
        let serial: f64 = (0..n)
            .map(|i| logistic_loss(dot(data.row(i), &theta), data.label(i)))
            .sum::<f64>()
            / n as f64;
        assert!((e.value - serial).abs() < 1e-12);
    }
}
