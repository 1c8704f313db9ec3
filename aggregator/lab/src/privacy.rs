//! `dpagg-aggregator privacy`: the privacy calculators behind the mechanisms, for planning a
//! release before any data is touched.
//!
//! - `gibbs-beta`: the inverse temperature β of a Gibbs-posterior sample (Minami et al. 2016,
//!   Corollary 8, eq. 13, and the exact bound of Theorem 7 that the mechanism also respects).
//! - `dp-sgd`: ε of DP-SGD (Poisson-subsampled Gaussian, add/remove-one) from its RDP curve.
//! - `calibrate`: the smallest noise multiplier σ meeting a target (ε, δ).
//! - `mvn-rdp`: the Rényi DP of m synthetic rows drawn from the normal distribution fitted to the
//!   data (Miura et al. 2022, Theorem 3.1 with n private, Theorem 3.2 with `--public-n`;
//!   Proposition 2.4 over the rows, Proposition 2.5 to (ε, δ)), and `--tables`: Miura et al.'s
//!   (2022) Tables 1 and 2.
//! - `langevin`: the proven Langevin chain (noisy gradient descent, shifted-Rényi analysis): its
//!   step size, noise, step count and ε(α) curve calibrated from (n, d, λ, ε, δ) as the
//!   `langevin` mechanism does, or the curve of given `--step-size --noise --steps`.
//!
//! Results are written through [`Out`].

use anyhow::{Context, Result};
use dpagg_shared::cli::Out;
use dpagg_shared::privacy::accounting::{calibrate_sigma, dp_sgd_epsilon};
use dpagg_shared::privacy::mechanism::Lambda;
use dpagg_shared::privacy::mechanism::gibbs_posterior::{
    gibbs_beta, gibbs_beta_bound, theorem7_beta_bound,
};
use dpagg_shared::privacy::mechanism::langevin::{
    ChainSchedule, DEFAULT_STEP_SCALE, DEFAULT_TOLERANCE, Langevin,
};
use dpagg_shared::privacy::synthetic::mvn_rdp::{
    self, MvnRdp, NRegime, TABLE_1_N, TABLE_1_ORDER, TABLE_2_DELTAS, TABLE_2_N, TABLE_2_ORDERS,
    TABLE_DIM, TABLE_SIGMA,
};
use std::io::Write;

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
    /// RDP ε of m synthetic rows drawn from N(mean, covariance) of n rows in [−1, 1]^d (Miura et
    /// al. 2022, Theorem 3.1, n private; Theorem 3.2 with --public-n), or Miura et al.'s (2022)
    /// Tables 1–2 (--tables).
    MvnRdp(MvnRdpArgs),
    /// The proven Langevin chain (`langevin` mechanism): η, σ, K, c and ρ calibrated to (ε, δ)
    /// from n, d and λ, or the ε(α) curve of a chain given by --step-size --noise --steps.
    Langevin(LangevinArgs),
}

/// Arguments of `privacy langevin`.
#[derive(Debug, clap::Args)]
struct LangevinArgs {
    /// Number of records n (public under replace-one).
    #[arg(long)]
    n: usize,
    /// Dimension d of θ (intercept included); used by `--lambda auto`.
    #[arg(long, default_value_t = 1)]
    dim: usize,
    /// Regulariser λ > 0, or `auto` (calibrated form only: `langevin`'s rule, 60√d/(n ε^{3/2})).
    #[arg(long, allow_negative_numbers = true)]
    lambda: Lambda,
    /// Target ε (calibrated form).
    #[arg(
        long,
        required_unless_present = "step_size",
        allow_negative_numbers = true
    )]
    epsilon: Option<f64>,
    /// δ: the target (calibrated form) or where ε is evaluated (raw form).
    #[arg(long, allow_negative_numbers = true)]
    delta: f64,
    /// η = step_scale/β, β = 1/4 + λ (calibrated form).
    #[arg(long, default_value_t = DEFAULT_STEP_SCALE, conflicts_with = "step_size")]
    step_scale: f64,
    /// K: the smallest with c^K ≤ tolerance, capped at 10⁶ (calibrated form).
    #[arg(long, default_value_t = DEFAULT_TOLERANCE, conflicts_with = "step_size")]
    tolerance: f64,
    /// Raw form: step size η ∈ (0, 2/(β + λ)].
    #[arg(long, requires_all = ["noise", "steps"], conflicts_with = "epsilon")]
    step_size: Option<f64>,
    /// Raw form: noise standard deviation σ per coordinate and step.
    #[arg(long, requires = "step_size")]
    noise: Option<f64>,
    /// Raw form: number of steps K.
    #[arg(long, requires = "step_size")]
    steps: Option<u64>,
}

/// The RDP orders `privacy langevin` prints ε(α) at.
const LANGEVIN_ORDERS: [f64; 6] = [1.5, 2.0, 4.0, 8.0, 16.0, 64.0];

/// Arguments of `privacy mvn-rdp`.
#[derive(Debug, clap::Args)]
struct MvnRdpArgs {
    /// Number of records n the mean and covariance are computed from.
    #[arg(long, required_unless_present = "tables")]
    n: Option<u64>,
    /// Dimension d of a record (every feature scaled to [−1, 1]).
    #[arg(long, required_unless_present = "tables")]
    dim: Option<usize>,
    /// Public lower bound σ ∈ (0, 1] on the smallest eigenvalue of the covariance.
    #[arg(long, required_unless_present = "tables")]
    sigma: Option<f64>,
    /// RDP order α > 1.
    #[arg(long, required_unless_present = "tables")]
    alpha: Option<f64>,
    /// Number of synthetic rows m released.
    #[arg(long, required_unless_present = "tables")]
    samples: Option<u64>,
    /// n is public: replace-one neighbours and Theorem 3.2 (default: n private, add/remove-one,
    /// Theorem 3.1).
    #[arg(long)]
    public_n: bool,
    /// Also print the (ε, δ)-DP guarantee at this δ (Proposition 2.5).
    #[arg(long)]
    delta: Option<f64>,
    /// Print Miura et al.'s (2022) Tables 1 and 2, recomputed, as the paper lays them out.
    #[arg(
        long,
        conflicts_with_all = ["n", "dim", "sigma", "alpha", "samples", "public_n", "delta"]
    )]
    tables: bool,
}

/// `privacy`.
pub fn run(args: Args, out: &mut Out) -> Result<()> {
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
            writeln!(
                out,
                "beta <= {eq13} (Minami et al. 2016, Corollary 8, eq. 13)"
            )?;
            writeln!(out, "beta <= {theorem7} (Theorem 7, exact tail bound)")?;
            writeln!(
                out,
                "beta = {used} used by gibbs-posterior (the smaller, at most 1){}",
                if eq13 > theorem7 {
                    ": eq. 13 alone is not sufficient at this ε"
                } else {
                    ""
                }
            )?;
        }
        Calculator::DpSgd {
            q,
            sigma,
            steps,
            delta,
        } => {
            let b = dp_sgd_epsilon(q, sigma, steps, delta)?;
            writeln!(
                out,
                "epsilon = {} (add/remove-one, δ = {delta}, RDP order {})",
                b.epsilon, b.order
            )?;
        }
        Calculator::Calibrate {
            q,
            steps,
            epsilon,
            delta,
        } => {
            let sigma = calibrate_sigma(q, steps, epsilon, delta)?;
            let got = dp_sgd_epsilon(q, sigma, steps, delta)?;
            writeln!(
                out,
                "sigma = {sigma} (gives ε = {} at δ = {delta}, add/remove-one)",
                got.epsilon
            )?;
        }
        Calculator::MvnRdp(args) if args.tables => tables(out)?,
        Calculator::MvnRdp(args) => mvn_rdp(&args, out)?,
        Calculator::Langevin(args) => langevin(&args, out)?,
    }
    Ok(())
}

/// `privacy langevin`: the calibrated chain of the `langevin` mechanism, or a given one.
fn langevin(args: &LangevinArgs, out: &mut Out) -> Result<()> {
    let schedule = match (args.epsilon, args.step_size, args.noise, args.steps) {
        (Some(epsilon), None, _, _) => {
            let m = Langevin::new(
                epsilon,
                args.delta,
                args.lambda,
                args.step_scale,
                args.tolerance,
            )?;
            let s = m.schedule(args.n, args.dim)?;
            writeln!(
                out,
                "target: ε = {epsilon}, δ = {} (replace-one) → curve ε(α) = α·ρ₀ with ρ₀ = {}",
                args.delta,
                m.rho()
            )?;
            s
        }
        (None, Some(step_size), Some(noise), Some(steps)) => {
            let Lambda::Fixed(lambda) = args.lambda else {
                anyhow::bail!("--lambda auto needs --epsilon; give a number with --step-size");
            };
            ChainSchedule::raw(args.n, lambda, step_size, noise, steps)?
        }
        _ => anyhow::bail!("give --epsilon, or all of --step-size --noise --steps"),
    };
    print_chain(&schedule, args.delta, out)
}

/// Prints a chain's parameters, its ε(α) at a few orders and its (ε, δ).
fn print_chain(s: &ChainSchedule, delta: f64, out: &mut Out) -> Result<()> {
    let beta = ChainSchedule::smoothness(s.lambda);
    writeln!(out, "lambda = {} (β = 1/4 + λ = {beta})", s.lambda)?;
    writeln!(
        out,
        "eta = {} (step size; ≤ 2/(β + λ) = {})",
        s.step_size,
        ChainSchedule::max_step_size(s.lambda)
    )?;
    writeln!(
        out,
        "sigma = {} (noise standard deviation per coordinate and step)",
        s.noise_std
    )?;
    writeln!(out, "steps = {} (c^K = {:e})", s.steps, s.bias_factor())?;
    writeln!(out, "c = {} (contraction 1 − ηλ)", s.contraction)?;
    writeln!(out, "s = {} (shift 2η/n, replace-one)", s.shift)?;
    writeln!(
        out,
        "rho = {} (after K steps; any K: {})",
        s.rho(),
        s.rho_limit()
    )?;
    let curve = s.curve()?;
    for alpha in LANGEVIN_ORDERS {
        writeln!(out, "epsilon({alpha}) = {}", alpha * s.rho())?;
    }
    let eps = curve.epsilon(delta)?;
    writeln!(
        out,
        "epsilon = {} at δ = {delta} (replace-one, RDP order {})",
        eps.epsilon, eps.order
    )?;
    Ok(())
}

/// `privacy mvn-rdp`: Miura et al.'s (2022) guarantee of m synthetic rows.
fn mvn_rdp(args: &MvnRdpArgs, out: &mut Out) -> Result<()> {
    let missing = |name: &str| format!("--{name} is required without --tables");
    let n = args.n.with_context(|| missing("n"))?;
    let dim = args.dim.with_context(|| missing("dim"))?;
    let sigma = args.sigma.with_context(|| missing("sigma"))?;
    let alpha = args.alpha.with_context(|| missing("alpha"))?;
    let samples = args.samples.with_context(|| missing("samples"))?;
    let regime = NRegime::from_public_n(args.public_n);
    let release = MvnRdp::new(n, dim, sigma, samples, regime)?;
    let epsilon = release.epsilon(alpha)?;
    writeln!(
        out,
        "rdp epsilon = {epsilon} (order α = {alpha}, m = {samples} rows from n = {n} records, \
         d = {dim}, σ = {sigma}; {regime})"
    )?;
    let per_row = match regime {
        NRegime::Private => {
            let t = mvn_rdp::theorem_3_1(n, dim, sigma, alpha)?;
            format!(
                "{} = max(ε_α1 = {}, ε_α2 = {})",
                t.epsilon(),
                t.epsilon_add,
                t.epsilon_remove
            )
        }
        NRegime::Public => release.row_epsilon(alpha)?.to_string(),
    };
    writeln!(
        out,
        "per row: ε_α = {per_row} (Miura et al. 2022, {}, composed over the m rows by Proposition 2.4); \
         the theorem applies for α < {}",
        regime.theorem(),
        release.order_limit()
    )?;
    if regime == NRegime::Private {
        match release.dataset_epsilon(alpha) {
            Ok(all) => writeln!(
                out,
                "against every neighbour of an n-record dataset (also n − 1 records: Theorem 3.1 \
                 at n − 1): rdp epsilon = {all}"
            )?,
            Err(e) => writeln!(
                out,
                "against every neighbour of an n-record dataset (also n − 1 records): no bound \
                 ({e})"
            )?,
        }
    }
    if let Some(delta) = args.delta {
        let dp = release.dp_epsilon(alpha, delta)?;
        writeln!(
            out,
            "epsilon = {dp} (δ = {delta}, {}; Proposition 2.5: ε + log(1/δ)/(α − 1) at α = {alpha})",
            regime.relation()
        )?;
    }
    Ok(())
}

/// `x` to `digits` significant digits, as Miura et al. 2022 prints most of its cells.
fn significant(x: f64, digits: i32) -> String {
    let magnitude = if x == 0.0 {
        0
    } else {
        x.abs().log10().floor() as i32
    };
    let decimals = (digits - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// "10^k" for a power of ten.
fn power_of_ten(x: f64) -> String {
    format!("10^{}", x.log10().round() as i32)
}

/// `privacy mvn-rdp --tables`: Miura et al.'s (2022) Tables 1 and 2 recomputed, laid out and
/// rounded as the paper prints them (six significant digits; six decimals in Table 2's n = 10⁷
/// block).
fn tables(out: &mut Out) -> Result<()> {
    let t1 = mvn_rdp::table_1()?;
    writeln!(
        out,
        "Table 1 (Miura et al. 2022): RDP ε of releasing m = n rows, α = {TABLE_1_ORDER}, d = {TABLE_DIM}, \
         σ = {TABLE_SIGMA}"
    )?;
    write!(out, "{:<14}", "n")?;
    for &n in &TABLE_1_N {
        write!(out, "{:>12}", power_of_ten(n as f64))?;
    }
    writeln!(out)?;
    for (label, row) in [("private n ε", t1.private_n), ("public n ε", t1.public_n)] {
        write!(out, "{label:<14}")?;
        for value in row {
            write!(out, "{:>12}", significant(value, 6))?;
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "(private n: Theorem 3.1, add/remove-one; public n: Theorem 3.2, replace-one)"
    )?;
    writeln!(out)?;
    let t2 = mvn_rdp::table_2()?;
    writeln!(
        out,
        "Table 2 (Miura et al. 2022): ε of (ε, δ)-DP by Proposition 2.5, private n (Theorem 3.1), m = n, \
         d = {TABLE_DIM}, σ = {TABLE_SIGMA}"
    )?;
    for (block, &n) in t2.iter().zip(&TABLE_2_N) {
        writeln!(out, "n = {}", power_of_ten(n as f64))?;
        write!(out, "{:<10}", "δ")?;
        for &delta in &TABLE_2_DELTAS {
            write!(out, "{:>12}", power_of_ten(delta))?;
        }
        writeln!(out)?;
        for (row, &alpha) in block.iter().zip(&TABLE_2_ORDERS) {
            write!(out, "{:<10}", format!("α = {alpha}"))?;
            for &value in row {
                let cell = if n == TABLE_2_N[1] {
                    format!("{value:.6}")
                } else {
                    significant(value, 6)
                };
                write!(out, "{cell:>12}")?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
