//! (ε, δ)-DP stochastic gradient descent with Poisson subsampling and per-example clipping.
//!
//! Implements Abadi, Chu, Goodfellow, McMahan, Mironov, Talwar & Zhang, "Deep Learning with
//! Differential Privacy", CCS 2016, **Algorithm 1** (DP-SGD), for L2-regularised logistic
//! regression (Minami et al. 2015, eq. 23–24, regulariser (λ/2)||θ||²), with the noise multiplier
//! calibrated by the RDP accountant of [`crate::privacy::accounting`] (Mironov, Talwar & Zhang
//! 2019, conversion of Canonne, Kamath & Steinke 2020 Proposition 12), with **exact discrete
//! noise**: the proof covers the noise as sampled (`docs/proofs/dp-sgd-lattice.md`). Starting
//! from θ₀ = 0, for t = 1, …, T:
//!
//! 1. Poisson subsampling: every record joins the batch B_t independently with probability q —
//!    exactly the double q ([`BernoulliF64`]: a comparison of uniform bits with q's bits).
//! 2. Per-example gradients gᵢ = ∇ℓ(θ; dᵢ) = −yᵢ σ(−yᵢ⟨θ, xᵢ⟩) xᵢ, clipped to
//!    ḡᵢ = gᵢ · min(1, C/||gᵢ||₂).
//! 3. The noisy sum on a lattice ([`LatticeSum`]): each ḡᵢ rounded to the public grid γ ≈
//!    2^{−20}C/√d, its norm bound K ≈ C/γ enforced in integers, the integers summed, and
//!    independent discrete Gaussians N_ℤ(0, σ²K²) added — Abadi et al.'s Σḡᵢ + N(0, σ²C² I) with
//!    noise of standard deviation σγK ≈ σC that the proof covers exactly. Then
//!    g̃ = γ(S + Z)/B, with B = q·n (the expected batch size, Abadi et al.'s "lot size" L) unless
//!    [`DpSgdConfig::batch_divisor`] fixes it.
//! 4. θ ← θ − η_t (g̃ + λθ): λθ is the gradient of the regulariser (data-independent), η_t comes
//!    from [`StepSize`]. The release is θ_T.
//!
//! **Guarantee:** (ε, δ)-DP under the **add/remove-one** neighbour relation, the relation the
//! subsampled-Gaussian analysis is stated in: σ is the smallest noise multiplier (within a relative
//! 1e-4, rounded up) for which T compositions of the Poisson-subsampled Gaussian mechanism with
//! sampling rate q are (ε, δ)-DP **over the integer RDP orders** — the orders at which the
//! analysis holds for the discrete noise as sampled, in both directions of add/remove-one
//! ([`accounting::calibrate_sigma_lattice`]; the proof page). σ, q, T and C are fixed before any
//! data is seen ([`DpSgd::new`]), so the guarantee and the RDP curve ([`Mechanism::rdp`]) are
//! known in advance.
//!
//! **The dataset size n.** Dividing by q·n makes the release depend on n. Like Opacus and TF
//! Privacy, we treat n as public: every release publishes it anyway ([`ReleaseMetadata::n`](crate::privacy::release::ReleaseMetadata::n)), and
//! the guarantee is then the add/remove-one guarantee of the noisy gradient sums, the division by a
//! public number being post-processing. Under replace-one neighbours n *is* public; and a caller
//! who wants no dependence on n can fix [`DpSgdConfig::batch_divisor`]. Nothing else is derived
//! from the data: q and T are given directly (not as a batch size or a number of epochs, which
//! would need n).
//!
//! **Assumptions:** logistic loss; every row has ||x||₂ ≤ 1 (checked, as for every mechanism here;
//! then ||gᵢ|| ≤ 1, so the default C = 1 clips nothing). The privacy proof itself needs only the
//! lattice's enforced bound: each record moves the integer batch sum by at most K in ℓ₂,
//! whatever the floating-point clipping computed.

use super::lambda::{AutoRule, Lambda};
use super::kind::{DocRow, OptionSpec, OptionType, Registration};
use super::{Mechanism, MechanismError, Sample};
use crate::data::dataset::{Dataset, dot};
use crate::util::fastmath::sigmoid;
use crate::privacy::accounting::{self, RdpCurve};
use crate::privacy::discrete::{BernoulliF64, DiscreteError, LatticeSum};
use crate::privacy::guarantee::{NeighbourRelation, PrivacyGuarantee};
use crate::privacy::noise::NoiseSource;
use crate::util::stop::Stop;
use std::collections::BTreeMap;

/// Identifier used in release metadata and on the command line.
pub const NAME: &str = "dp-sgd";

/// Largest number of steps T accepted (bounds the running time of a release).
pub const MAX_STEPS: u64 = 10_000_000;

/// The registry's entry ([`super::kind`]): a cosine-decayed step size, no batch divisor.
pub const REGISTERED: &[Registration] = &[Registration {
    name: NAME,
    summary: "(ε, δ)-DP DP-SGD with Poisson sampling and exact discrete Gaussian noise on a \
              lattice, σ calibrated by an RDP accountant (Abadi et al. 2016); add/remove-one; \
              delta > 0",
    options: &[
        OptionSpec {
            name: "clip_norm",
            default: 1.0,
            range: OptionType::POSITIVE,
            help: "C: per-example gradients are clipped to this norm (1 = the logistic gradient bound)",
        },
        OptionSpec {
            name: "sampling_rate",
            default: 0.1,
            range: OptionType::open_closed(0.0, 1.0),
            help: "q: Poisson sampling probability of each record per step",
        },
        OptionSpec {
            name: "steps",
            default: 200.0,
            range: OptionType::Count,
            help: "T: number of noisy steps",
        },
        OptionSpec {
            name: "learning_rate",
            default: 1.0,
            range: OptionType::POSITIVE,
            help: "η of the cosine-decayed step size η_t",
        },
    ],
    proof: crate::privacy::guarantee::ProofCoverage::NoiseAsSampled,
    node_replacement: None,
    auto_lambda: AutoRule::SqrtOverN { constant: 0.056 },
    neighbours: NeighbourRelation::AddRemoveOne,
    doc: Some(DocRow {
        what: "Poisson sampling at rate q (exact), per-example clipping to C, each clipped gradient rounded to a public lattice and summed in integers, exact discrete Gaussian noise ≈ σC, T steps, cosine step size; σ calibrated by the RDP accountant over its integer orders ([proof](proofs/dp-sgd-lattice.md))",
        guarantee: "(ε, δ)-DP, with its RDP curve",
        options_note: "",
    }),
    build: |r| {
        Ok(Box::new(DpSgd::new(
            r.epsilon,
            r.delta,
            r.lambda,
            DpSgdConfig {
                clip_norm: r.real("clip_norm"),
                sampling_rate: r.real("sampling_rate"),
                steps: r.count("steps")?,
                step_size: StepSize::Cosine(r.real("learning_rate")),
                batch_divisor: None,
            },
        )?))
    },
}];

/// Step-size schedule η_t, t = 1, …, T.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepSize {
    /// η_t = η.
    Constant(f64),
    /// η_t = η/√t.
    InverseSqrt(f64),
    /// Cosine decay η_t = η · (1 + cos(π(t − 1)/T))/2: η at t = 1, decreasing to near 0 at t = T.
    Cosine(f64),
}

impl StepSize {
    /// η_t for step `t` (1-based) of `steps`.
    pub fn at(&self, t: u64, steps: u64) -> f64 {
        match *self {
            Self::Constant(eta) => eta,
            Self::InverseSqrt(eta) => eta / (t as f64).sqrt(),
            Self::Cosine(eta) => {
                let phase = (t.saturating_sub(1)) as f64 / steps.max(1) as f64;
                eta * 0.5 * (1.0 + (std::f64::consts::PI * phase).cos())
            }
        }
    }

    /// The base rate η.
    pub fn base(&self) -> f64 {
        match *self {
            Self::Constant(eta) | Self::InverseSqrt(eta) | Self::Cosine(eta) => eta,
        }
    }

    /// Name of the schedule in release metadata.
    fn parameter_name(&self) -> &'static str {
        match self {
            Self::Constant(_) => "step_size_constant",
            Self::InverseSqrt(_) => "step_size_inverse_sqrt",
            Self::Cosine(_) => "step_size_cosine",
        }
    }
}

/// Public hyper-parameters of DP-SGD. None may be derived from the private data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSgdConfig {
    /// C: per-example gradients are clipped to this ℓ₂ norm. Default 1 (the gradient bound of the
    /// logistic loss on the unit ball, so nothing is clipped).
    pub clip_norm: f64,
    /// q ∈ (0, 1]: probability that a record joins a batch. Default 0.01.
    pub sampling_rate: f64,
    /// T: number of steps, 1 ≤ T ≤ [`MAX_STEPS`]. Default 1000 (10 expected passes at q = 0.01).
    pub steps: u64,
    /// η_t. Default [`StepSize::Cosine`] with η = 1.
    pub step_size: StepSize,
    /// B: what the noisy sum is divided by. `None` (default): the expected batch size q·n, with n
    /// the (published) number of rows. `Some(b)` fixes it independently of the data.
    pub batch_divisor: Option<f64>,
}

impl Default for DpSgdConfig {
    fn default() -> Self {
        Self {
            clip_norm: 1.0,
            sampling_rate: 0.01,
            steps: 1000,
            step_size: StepSize::Cosine(1.0),
            batch_divisor: None,
        }
    }
}

impl DpSgdConfig {
    fn validate(&self) -> Result<(), MechanismError> {
        let positive = |name, value: f64| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(MechanismError::InvalidParameter {
                    name,
                    value,
                    requirement: "must be a finite number > 0",
                })
            }
        };
        positive("clip_norm", self.clip_norm)?;
        positive("step_size", self.step_size.base())?;
        if let Some(b) = self.batch_divisor {
            positive("batch_divisor", b)?;
        }
        let q = self.sampling_rate;
        if !(q > 0.0 && q <= 1.0) {
            return Err(MechanismError::InvalidParameter {
                name: "sampling_rate",
                value: q,
                requirement: "must be in (0, 1]",
            });
        }
        if self.steps == 0 || self.steps > MAX_STEPS {
            return Err(MechanismError::InvalidParameter {
                name: "steps",
                value: self.steps as f64,
                requirement: "must be between 1 and 10^7",
            });
        }
        Ok(())
    }
}

/// DP-SGD for L2-regularised logistic regression, calibrated to a target (ε, δ).
#[derive(Debug, Clone, PartialEq)]
pub struct DpSgd {
    epsilon: f64,
    delta: f64,
    lambda: Lambda,
    config: DpSgdConfig,
    sigma: f64,
    curve: RdpCurve,
    accounted: accounting::EpsilonBound,
}

impl DpSgd {
    /// A mechanism for ε > 0, δ ∈ (0, 1), regulariser λ ≥ 0 (or `auto`: 0.056√d/n, see
    /// [`super::lambda`]) and `config`; calibrates the noise multiplier σ with the RDP accountant.
    pub fn new(
        epsilon: f64,
        delta: f64,
        lambda: impl Into<Lambda>,
        config: DpSgdConfig,
    ) -> Result<Self, MechanismError> {
        super::check_epsilon(epsilon)?;
        super::check_delta(delta)?;
        let lambda = lambda.into();
        if let Lambda::Fixed(lambda) = lambda
            && !(lambda.is_finite() && lambda >= 0.0)
        {
            return Err(MechanismError::InvalidParameter {
                name: "lambda",
                value: lambda,
                requirement: "must be a finite number ≥ 0",
            });
        }
        config.validate()?;
        let sigma =
            accounting::calibrate_sigma_lattice(config.sampling_rate, config.steps, epsilon, delta)?;
        let curve = accounting::dp_sgd_lattice_curve(config.sampling_rate, sigma, config.steps)?;
        let accounted = curve.epsilon(delta)?;
        Ok(Self {
            epsilon,
            delta,
            lambda,
            config,
            sigma,
            curve,
            accounted,
        })
    }

    /// The calibrated noise multiplier σ (noise standard deviation in units of C).
    pub fn noise_multiplier(&self) -> f64 {
        self.sigma
    }

    /// σC: the nominal standard deviation of the noise added to each coordinate of the batch
    /// sum (the lattice's is σγK, within a factor 1 + 2^{−19} of it: [`LatticeSum::noise_std`]).
    pub fn noise_std(&self) -> f64 {
        self.sigma * self.config.clip_norm
    }

    /// The lattice of the noisy sums for rows of dimension `dim`.
    pub fn lattice(&self, dim: usize) -> Result<LatticeSum, DiscreteError> {
        LatticeSum::new(self.sigma, self.config.clip_norm, dim)
    }

    /// The configuration.
    pub fn config(&self) -> &DpSgdConfig {
        &self.config
    }

    /// The ε the accountant gives for the calibrated σ (≤ the target ε), with its RDP order.
    pub fn accounted_epsilon(&self) -> accounting::EpsilonBound {
        self.accounted
    }
}

/// Draws a Poisson batch: each of `n` rows independently with the exact probability `include`
/// was built with (one comparison of uniform bits per row).
pub(crate) fn poisson_batch(n: usize, include: &BernoulliF64, rng: &mut NoiseSource) -> Vec<usize> {
    let mut batch = Vec::new();
    poisson_batch_into(n, include, rng, &mut batch);
    batch
}

/// [`poisson_batch`] into `batch` (cleared first), so that a run's steps share one buffer.
fn poisson_batch_into(
    n: usize,
    include: &BernoulliF64,
    rng: &mut NoiseSource,
    batch: &mut Vec<usize>,
) {
    batch.clear();
    batch.extend((0..n).filter(|_| include.sample(rng)));
}

/// The inclusion law of the Poisson batches (q was checked to be in (0, 1]).
fn inclusion(q: f64) -> Result<BernoulliF64, MechanismError> {
    BernoulliF64::new(q).ok_or(MechanismError::InvalidParameter {
        name: "sampling_rate",
        value: q,
        requirement: "must be in (0, 1]",
    })
}

/// `rows` fixed public rows of dimension `dim` inside the unit ball, for timing a mechanism's
/// inner loop before any data is touched.
pub(crate) fn public_rows(rows: usize, dim: usize) -> Dataset {
    let x: Vec<f64> = (0..rows * dim)
        .map(|i| ((i % 7) as f64 - 3.0) / (7.0 * (dim as f64).sqrt()))
        .collect();
    let y: Vec<f64> = (0..rows)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    Dataset::new(x, y, dim)
}

/// The fastest of three timings of one step (a Poisson batch of `n` rows at rate q, and the
/// noisy clipped sum of a batch of its expected size) on public rows of dimension `dim`: a
/// lower estimate of a step on the real rows. Its randomness is timing only, never released.
fn step_seconds(m: &DpSgd, n: usize, dim: usize) -> Option<f64> {
    let c = &m.config;
    let batch = (c.sampling_rate * n as f64).ceil().max(1.0) as usize;
    // At most 4,096 rows are timed; a larger batch is extrapolated (the work is linear in it).
    let rows = batch.min(4096);
    let data = public_rows(rows, dim);
    let all: Vec<usize> = (0..rows).collect();
    let theta = vec![0.01; dim];
    let include = BernoulliF64::new(c.sampling_rate)?;
    let lattice = m.lattice(dim).ok()?;
    let mut rng = NoiseSource::secure().ok()?;
    let mut best = f64::INFINITY;
    for _ in 0..3 {
        let start = std::time::Instant::now();
        let mut reps = 0u32;
        while reps == 0 || start.elapsed() < std::time::Duration::from_millis(3) {
            std::hint::black_box(poisson_batch(n, &include, &mut rng));
            std::hint::black_box(noisy_clipped_sum(
                &data,
                &all,
                &theta,
                (c.clip_norm, &lattice),
                &mut rng,
            ));
            reps += 1;
        }
        best = best.min(start.elapsed().as_secs_f64() / f64::from(reps));
    }
    Some(best * batch as f64 / rows as f64)
}

/// Adds ∇ℓ(θ; (x, y)) clipped to ℓ₂ norm `clip` into `acc`.
pub(crate) fn add_clipped_gradient(theta: &[f64], x: &[f64], y: f64, clip: f64, acc: &mut [f64]) {
    // ∇ softplus(−y⟨θ, x⟩) = −y σ(−y⟨θ, x⟩) x.
    let coef = -y * sigmoid(-y * dot(theta, x));
    let norm = coef.abs() * dot(x, x).sqrt();
    let scale = if norm > clip { clip / norm } else { 1.0 };
    let mut k = coef * scale;
    // Rounding can leave the norm of the scaled vector an ulp above C; the sensitivity bound needs
    // ≤ C for the vector actually added, so measure that one.
    while x.iter().map(|v| (k * v) * (k * v)).sum::<f64>().sqrt() > clip {
        k *= 1.0 - f64::EPSILON;
    }
    for (a, v) in acc.iter_mut().zip(x) {
        *a += k * v;
    }
}

/// The noisy batch sum of one step on the lattice: γ·(Σ_{i∈batch} c_i + Z), c_i the rounded
/// clip_C(∇ℓ(θ; dᵢ)) ([`LatticeSum`]); `noise` is (C, lattice).
pub(crate) fn noisy_clipped_sum(
    data: &Dataset,
    batch: &[usize],
    theta: &[f64],
    noise: (f64, &LatticeSum),
    rng: &mut NoiseSource,
) -> Vec<f64> {
    let mut scratch = StepScratch::new(data.dim());
    let mut sum = vec![0.0; data.dim()];
    noisy_clipped_sum_into(data, batch, theta, noise, rng, &mut scratch, &mut sum);
    sum
}

/// The integer sum and one clipped gradient, reused by every step of a run.
struct StepScratch {
    cells: Vec<i64>,
    gradient: Vec<f64>,
}

impl StepScratch {
    fn new(dim: usize) -> Self {
        Self {
            cells: vec![0; dim],
            gradient: vec![0.0; dim],
        }
    }
}

/// [`noisy_clipped_sum`] into `sum`, with the run's buffers.
fn noisy_clipped_sum_into(
    data: &Dataset,
    batch: &[usize],
    theta: &[f64],
    (clip, lattice): (f64, &LatticeSum),
    rng: &mut NoiseSource,
    scratch: &mut StepScratch,
    sum: &mut [f64],
) {
    scratch.cells.fill(0);
    for &i in batch {
        scratch.gradient.fill(0.0);
        add_clipped_gradient(theta, data.row(i), data.label(i), clip, &mut scratch.gradient);
        lattice.add(&mut scratch.cells, &scratch.gradient);
    }
    lattice.release(&scratch.cells, rng, sum);
}

impl Mechanism for DpSgd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn reference(&self) -> &'static str {
        "Abadi et al. 2016 (CCS) Algorithm 1 (DP-SGD, Poisson sampling); RDP of the sampled \
         Gaussian: Mironov, Talwar & Zhang 2019; RDP to (ε, δ): Canonne, Kamath & Steinke \
         2020 Prop. 12"
    }

    fn guarantee(&self) -> PrivacyGuarantee {
        PrivacyGuarantee::add_remove_one(self.epsilon, self.delta)
    }

    fn rdp(&self) -> Option<RdpCurve> {
        Some(self.curve.clone())
    }

    fn proof(&self) -> crate::privacy::guarantee::ProofCoverage {
        crate::privacy::guarantee::ProofCoverage::NoiseAsSampled
    }

    fn check_size(&self, n: usize, dim: usize) -> Result<(), MechanismError> {
        if self.lattice(dim)?.holds_sums_of(n) {
            Ok(())
        } else {
            Err(MechanismError::InvalidParameter {
                name: "rows",
                value: n as f64,
                requirement: "too many for exact integer batch sums at this dimension",
            })
        }
    }

    fn predicted_seconds(&self, n: usize, dim: usize) -> Option<f64> {
        Some(self.config.steps as f64 * step_seconds(self, n, dim)?)
    }

    fn sample(
        &self,
        data: &Dataset,
        noise: &mut NoiseSource,
        stop: &Stop,
    ) -> Result<Sample, MechanismError> {
        let c = &self.config;
        let n = data.len();
        let divisor = c.batch_divisor.unwrap_or(c.sampling_rate * n as f64);
        let include = inclusion(c.sampling_rate)?;
        let lattice = self.lattice(data.dim())?;
        let lambda = self
            .lambda
            .resolve(REGISTERED[0].auto_lambda, n, data.dim(), self.epsilon);
        let mut theta = vec![0.0; data.dim()];
        let (mut batch, mut sum) = (Vec::new(), vec![0.0; data.dim()]);
        let mut scratch = StepScratch::new(data.dim());
        for t in 1..=c.steps {
            stop.check()?;
            poisson_batch_into(n, &include, noise, &mut batch);
            let step_noise = (c.clip_norm, &lattice);
            noisy_clipped_sum_into(data, &batch, &theta, step_noise, noise, &mut scratch, &mut sum);
            let eta = c.step_size.at(t, c.steps);
            for (th, s) in theta.iter_mut().zip(&sum) {
                *th -= eta * (s / divisor + lambda * *th);
            }
        }
        let mut parameters = BTreeMap::from([
            ("noise_multiplier".to_owned(), self.sigma),
            ("noise_std".to_owned(), lattice.noise_std()),
            ("lattice_grid".to_owned(), lattice.grid()),
            ("lattice_cell_bound".to_owned(), lattice.cell_bound() as f64),
            ("clip_norm".to_owned(), c.clip_norm),
            ("sampling_rate".to_owned(), c.sampling_rate),
            ("steps".to_owned(), c.steps as f64),
            ("batch_divisor".to_owned(), divisor),
            (c.step_size.parameter_name().to_owned(), c.step_size.base()),
            ("accounted_epsilon".to_owned(), self.accounted.epsilon),
            ("rdp_order".to_owned(), self.accounted.order),
        ]);
        parameters.extend(self.lambda.parameters(lambda));
        Ok(Sample {
            coefficients: theta,
            parameters,
        })
    }
}

#[cfg(test)]
mod tests;
