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

use crate::dataset::{Dataset, dot};
use rayon::prelude::*;

/// Rows per parallel chunk. Fixed (not derived from the thread count) for determinism.
pub const CHUNK_ROWS: usize = 4096;

/// softplus(z) = log(1 + eᶻ) without overflow or cancellation.
#[inline]
pub fn softplus(z: f64) -> f64 {
    if z > 0.0 {
        z + (-z).exp().ln_1p()
    } else {
        z.exp().ln_1p()
    }
}

/// The logistic function 1/(1 + e⁻ᶻ), stable for large |z|.
#[inline]
pub fn sigmoid(z: f64) -> f64 {
    if z >= 0.0 {
        1.0 / (1.0 + (-z).exp())
    } else {
        let e = z.exp();
        e / (1.0 + e)
    }
}

/// Logistic loss ℓ(z, y) = log(1 + exp(−y z)) of a real-valued score z for label y = ±1 (eq. 23).
#[inline]
pub fn logistic_loss(z: f64, y: f64) -> f64 {
    softplus(-y * z)
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

fn chunk_sums(
    data: &Dataset,
    rows: std::ops::Range<usize>,
    theta: &[f64],
    hessian: bool,
) -> ChunkSums {
    let p = theta.len();
    let mut loss = 0.0;
    let mut grad = vec![0.0; p];
    let mut hess = hessian.then(|| vec![0.0; p * p]);
    for i in rows {
        let x = data.row(i);
        let y = data.label(i);
        let m = y * dot(x, theta);
        loss += softplus(-m);
        // d/dz softplus(−y z) = −y σ(−m); d²/dz² = σ(m) σ(−m).
        let s = sigmoid(-m);
        let g = -y * s;
        for (gj, xj) in grad.iter_mut().zip(x) {
            *gj += g * xj;
        }
        if let Some(h) = hess.as_mut() {
            let w = s * (1.0 - s);
            for (j, xj) in x.iter().enumerate() {
                let a = w * xj;
                for (hjk, xk) in h[j * p..(j + 1) * p].iter_mut().zip(x) {
                    *hjk += a * xk;
                }
            }
        }
    }
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
    let hessian = total.hess.map(|mut h| {
        h.iter_mut().for_each(|v| *v *= inv_n);
        for j in 0..p {
            h[j * p + j] += mu;
        }
        h
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
