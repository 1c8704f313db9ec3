//! How far the other organisations' learners agree on a direction: the gate of the final
//! model's selection.
//!
//! Each released learner θ_m gives a direction u_m = θ_m/‖θ_m‖₂ (a learner with θ = 0 has none
//! and counts as u_m = 0). With r̄ the mean pairwise cosine ⟨u_m, u_m'⟩ over m ≠ m', the
//! **agreement** of M learners is the Spearman–Brown reliability of their average,
//!
//! ```text
//! α = M·r̄ / (1 + (M − 1)·r̄),   r̄ = (M²‖ū‖² − Σ‖u_m‖²) / (M(M − 1)),   ū = (1/M) Σ u_m,
//! ```
//!
//! clamped to [0, 1] (Cronbach's standardised α with the learners as items). If every u_m is a
//! common direction v plus independent noise, r̄ estimates the squared cosine s² of each with v
//! and α = s²/(s² + (1 − s²)/M) the squared cosine of their average with v: how precisely the
//! learners, together, pin down what they have in common. Pure noise gives α ≈ 0, identical
//! learners α = 1. Fewer than two learners give no evidence of agreement: α = 0.
//!
//! It reads only the released parameters — no rows, no privacy cost (post-processing). It says
//! nothing about whether the common direction is *better* than the own model; that is the
//! cross-validation's question. What it decides is how much evidence that cross-validation
//! must show: learners that do not agree can only help by luck on a few own rows, so below
//! [`super::select::SelectionConfig::min_agreement`] a candidate must clear
//! [`super::select::SelectionConfig::z_disagree`] standard errors.

use crate::data::dataset::dot;
use crate::learn::classifier::LinearClassifier;

/// The agreement α ∈ [0, 1] of `experts` (see the module docs).
pub fn agreement(experts: &[LinearClassifier]) -> f64 {
    let m = experts.len();
    if m < 2 {
        return 0.0;
    }
    let mut sum = vec![0.0; experts[0].coefficients().len()];
    let mut self_terms = 0.0;
    for e in experts {
        let theta = e.coefficients();
        let norm = dot(theta, theta).sqrt();
        if norm > 0.0 && norm.is_finite() {
            for (s, t) in sum.iter_mut().zip(theta) {
                *s += t / norm;
            }
            self_terms += 1.0;
        }
    }
    let m = m as f64;
    let mean_cosine = (dot(&sum, &sum) - self_terms) / (m * (m - 1.0));
    let alpha = m * mean_cosine / (1.0 + (m - 1.0) * mean_cosine);
    if alpha.is_finite() {
        alpha.clamp(0.0, 1.0)
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experts(rows: &[&[f64]]) -> Vec<LinearClassifier> {
        rows.iter()
            .map(|r| LinearClassifier::new(r.to_vec()))
            .collect()
    }

    #[test]
    fn identical_directions_agree_fully_and_norms_do_not_matter() {
        let e = experts(&[&[1.0, 2.0], &[2.0, 4.0], &[0.5, 1.0]]);
        assert!((agreement(&e) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn orthogonal_or_opposite_directions_do_not_agree() {
        let basis = experts(&[&[1.0, 0.0, 0.0], &[0.0, 1.0, 0.0], &[0.0, 0.0, 1.0]]);
        assert_eq!(agreement(&basis), 0.0);
        assert_eq!(agreement(&experts(&[&[1.0, 1.0], &[-1.0, -1.0]])), 0.0);
    }

    #[test]
    fn closed_form_for_two_directions() {
        // r̄ = cos 60° = 1/2, M = 2: α = 2·(1/2)/(1 + 1/2) = 2/3.
        let e = experts(&[&[1.0, 0.0], &[0.5, 3f64.sqrt() / 2.0]]);
        assert!((agreement(&e) - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn spearman_brown_grows_with_the_number_of_learners() {
        // M learners at pairwise cosine 1/2 (a shared unit axis plus private orthogonal axes of
        // equal weight): α = M/(M + 1).
        for m in [2usize, 5, 20] {
            let e: Vec<LinearClassifier> = (0..m)
                .map(|k| {
                    let mut t = vec![0.0; m + 1];
                    t[0] = 1.0;
                    t[k + 1] = 1.0;
                    LinearClassifier::new(t)
                })
                .collect();
            let expected = m as f64 / (m as f64 + 1.0);
            assert!((agreement(&e) - expected).abs() < 1e-12, "M = {m}");
        }
    }

    #[test]
    fn too_few_or_degenerate_learners_give_no_agreement() {
        assert_eq!(agreement(&[]), 0.0);
        assert_eq!(agreement(&experts(&[&[1.0, 2.0]])), 0.0);
        assert_eq!(agreement(&experts(&[&[0.0, 0.0], &[0.0, 0.0]])), 0.0);
        // A learner without a direction lowers the agreement of the others.
        let with_zero = experts(&[&[1.0, 0.0], &[1.0, 0.0], &[0.0, 0.0]]);
        let without = experts(&[&[1.0, 0.0], &[1.0, 0.0]]);
        assert!(agreement(&with_zero) < agreement(&without));
    }
}
