//! `dpagg-aggregator privacy`: the privacy calculators behind the mechanisms, for planning a
//! release before any data is touched.
//!
//! - `gibbs-beta`: the inverse temperature β of a Gibbs-posterior sample (seed 004 Corollary 8,
//!   eq. 13, and the exact bound of Theorem 7 that the mechanism also respects).
//! - `dp-sgd`: ε of DP-SGD (Poisson-subsampled Gaussian, add/remove-one) from its RDP curve.
//! - `calibrate`: the smallest noise multiplier σ meeting a target (ε, δ).

use anyhow::Result;
use dpagg_shared::privacy::accounting::{calibrate_sigma, dp_sgd_epsilon};
use dpagg_shared::privacy::mechanism::gibbs_posterior::{
    gibbs_beta, gibbs_beta_bound, theorem7_beta_bound,
};

/// Arguments of `privacy`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Calculator,
}

#[derive(Debug, clap::Subcommand)]
enum Calculator {
    /// β bound of a Gibbs posterior with logistic loss and prior N(0, (nλ)⁻¹ I) (‖x‖ ≤ 1, L = 1).
    GibbsBeta {
        /// ε.
        #[arg(long)]
        epsilon: f64,
        /// δ.
        #[arg(long)]
        delta: f64,
        /// Number of records n.
        #[arg(long)]
        n: usize,
        /// Regulariser λ.
        #[arg(long)]
        lambda: f64,
    },
    /// ε of DP-SGD with sampling rate q, noise multiplier σ and T steps, at δ.
    DpSgd {
        /// Poisson sampling rate q ∈ (0, 1].
        #[arg(long)]
        q: f64,
        /// Noise multiplier σ (noise standard deviation over the clipping norm).
        #[arg(long)]
        sigma: f64,
        /// Number of steps T.
        #[arg(long)]
        steps: u64,
        /// δ.
        #[arg(long)]
        delta: f64,
    },
    /// The smallest σ for which DP-SGD with q and T steps is (ε, δ)-DP.
    Calibrate {
        /// Poisson sampling rate q ∈ (0, 1].
        #[arg(long)]
        q: f64,
        /// Number of steps T.
        #[arg(long)]
        steps: u64,
        /// Target ε.
        #[arg(long)]
        epsilon: f64,
        /// δ.
        #[arg(long)]
        delta: f64,
    },
}

/// `privacy`.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Calculator::GibbsBeta {
            epsilon,
            delta,
            n,
            lambda,
        } => {
            let eq13 = gibbs_beta_bound(epsilon, delta, n, lambda)?;
            let theorem7 = theorem7_beta_bound(epsilon, delta, n, lambda)?;
            let used = gibbs_beta(epsilon, delta, n, lambda)?;
            println!("beta <= {eq13} (seed 004 Corollary 8, eq. 13)");
            println!("beta <= {theorem7} (Theorem 7, exact tail bound)");
            println!(
                "beta = {used} used by gibbs-posterior (the smaller, at most 1){}",
                if eq13 > theorem7 {
                    ": eq. 13 alone is not sufficient at this ε"
                } else {
                    ""
                }
            );
        }
        Calculator::DpSgd {
            q,
            sigma,
            steps,
            delta,
        } => {
            let b = dp_sgd_epsilon(q, sigma, steps, delta)?;
            println!(
                "epsilon = {} (add/remove-one, δ = {delta}, RDP order {})",
                b.epsilon, b.order
            );
        }
        Calculator::Calibrate {
            q,
            steps,
            epsilon,
            delta,
        } => {
            let sigma = calibrate_sigma(q, steps, epsilon, delta)?;
            let got = dp_sgd_epsilon(q, sigma, steps, delta)?;
            println!(
                "sigma = {sigma} (gives ε = {} at δ = {delta}, add/remove-one)",
                got.epsilon
            );
        }
    }
    Ok(())
}
