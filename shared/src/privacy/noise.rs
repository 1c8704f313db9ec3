//! Where privacy noise comes from (invariant 4: release paths draw from a CSPRNG).
//!
//! A [`NoiseSource`] is either [`NoiseSource::secure`] — ChaCha20 keyed from the operating
//! system's entropy (`getrandom` via `rand::rngs::SysRng`), a cryptographically secure generator —
//! or [`NoiseSource::seeded`] — ChaCha20 keyed from a 64-bit seed, for tests and simulations only.
//! Both draw `rand`'s `ChaCha20Rng` keystream word for word, computed by [`super::chacha`]
//! (faster blocks, the same words: a seeded run keeps its bits).
//! Every release records [`NoiseSource::is_seeded`] in its metadata so that a seeded release can
//! never pass as a real one. Simulations derive independent per-task seeds with
//! [`crate::util::seed::derive_seed`], which makes them deterministic whatever the number of
//! threads.

use super::chacha::ChaCha20Blocks;
use rand::rand_core::block::BlockRng;
use rand::rngs::{ChaCha20Rng, SysRng};
use rand::{SeedableRng, TryCryptoRng, TryRng};
use std::convert::Infallible;

/// A ChaCha20 generator that remembers whether it was seeded by the caller.
#[derive(Debug)]
pub struct NoiseSource {
    /// Buffered as `ChaCha20Rng` buffers its own blocks, so every call hands out the same words.
    rng: BlockRng<ChaCha20Blocks>,
    seed: Option<u64>,
}

/// Why no secure noise source could be created.
#[derive(Debug, thiserror::Error)]
pub enum EntropyError {
    /// The operating system refused to provide entropy.
    #[error("cannot obtain entropy from the operating system for privacy noise: {0}")]
    Os(String),
    /// The ChaCha20 rounds this CPU dispatches to failed their known-answer self-test
    /// ([`super::chacha::self_test`]): no noise is drawn from them.
    #[error("the {path} ChaCha20 rounds failed their self-test ({why}): no privacy noise is drawn")]
    SelfTest {
        /// `avx512`, `avx2` or `portable`.
        path: &'static str,
        /// What differed.
        why: String,
    },
}

impl NoiseSource {
    /// A cryptographically secure source keyed from OS entropy. Use on every release path.
    /// Fails closed when the dispatched ChaCha20 rounds fail their known-answer self-test.
    pub fn secure() -> Result<Self, EntropyError> {
        use super::chacha::self_test;
        self_test::self_test().map_err(|why| EntropyError::SelfTest {
            path: self_test::dispatched_path(),
            why,
        })?;
        let mut key = [0u8; 32];
        SysRng
            .try_fill_bytes(&mut key)
            .map_err(|e| EntropyError::Os(e.to_string()))?;
        let rng = BlockRng::new(ChaCha20Blocks::new(key));
        zeroize::Zeroize::zeroize(&mut key);
        Ok(Self { rng, seed: None })
    }

    /// A reproducible source for tests and simulations. Releases drawn from it say so.
    pub fn seeded(seed: u64) -> Self {
        // The key `ChaCha20Rng::seed_from_u64` expands the seed to, so the stream is its stream.
        let key = ChaCha20Rng::seed_from_u64(seed).get_seed();
        Self {
            rng: BlockRng::new(ChaCha20Blocks::new(key)),
            seed: Some(seed),
        }
    }

    /// True when the noise is reproducible from a seed (and so gives no privacy).
    pub fn is_seeded(&self) -> bool {
        self.seed.is_some()
    }

    /// The seed, when seeded.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }
}

impl TryRng for NoiseSource {
    type Error = Infallible;
    // As `ChaCha20Rng` hands out its buffered words.
    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok(self.rng.next_word())
    }
    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.rng.next_u64_from_u32())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.rng.fill_bytes(dst);
        Ok(())
    }
}

impl TryCryptoRng for NoiseSource {}

/// Samples b ∈ ℝᵈⁱᵐ with density ∝ exp(−||b||₂/scale): ||b|| ~ Gamma(dim, scale) (shape dim,
/// scale `scale`) and b/||b|| uniform on the sphere. This is the noise of CMS 2011 Algorithms 1 and 2
/// (there written exp(−β||b||) with β = 1/scale).
///
/// # Panics
/// If `dim == 0` or `scale` is not finite and positive (callers validate their parameters).
pub fn sample_gamma_ball(dim: usize, scale: f64, rng: &mut NoiseSource) -> Vec<f64> {
    use rand::RngExt;
    let gamma = rand_distr::Gamma::new(dim as f64, scale)
        .expect("shape dim ≥ 1 and a finite scale > 0 are valid");
    let norm: f64 = rng.sample(gamma);
    uniform_direction(dim, rng)
        .into_iter()
        .map(|u| u * norm)
        .collect()
}

/// Samples a direction uniformly on the unit sphere in ℝᵖ (normalised standard Gaussian).
pub(crate) fn uniform_direction(dim: usize, rng: &mut NoiseSource) -> Vec<f64> {
    use rand::RngExt;
    use rand_distr::StandardNormal;
    loop {
        let v: Vec<f64> = (0..dim).map(|_| rng.sample(StandardNormal)).collect();
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm > 0.0 {
            return v.into_iter().map(|x| x / norm).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn seeded_is_reproducible_and_marked() {
        let mut a = NoiseSource::seeded(7);
        let mut b = NoiseSource::seeded(7);
        assert!(a.is_seeded());
        assert_eq!(a.random::<u64>(), b.random::<u64>());
    }

    #[test]
    fn seeded_draws_chacha20rngs_stream() {
        use rand::Rng;
        use rand_distr::StandardNormal;
        for seed in [0, 1, 2024] {
            let mut ours = NoiseSource::seeded(seed);
            let mut reference = ChaCha20Rng::seed_from_u64(seed);
            for i in 0..2000 {
                let (a, b): (f64, f64) = if i % 2 == 0 {
                    (
                        ours.sample(StandardNormal),
                        reference.sample(StandardNormal),
                    )
                } else {
                    (ours.random(), reference.random())
                };
                assert_eq!(a.to_bits(), b.to_bits(), "seed {seed}, draw {i}");
            }
            let (mut x, mut y) = ([0u8; 13], [0u8; 13]);
            ours.fill_bytes(&mut x);
            reference.fill_bytes(&mut y);
            assert_eq!(x, y);
        }
    }

    #[test]
    fn secure_is_not_seeded_and_differs() {
        let mut a = NoiseSource::secure().expect("entropy");
        let mut b = NoiseSource::secure().expect("entropy");
        assert!(!a.is_seeded());
        assert_ne!(a.random::<u64>(), b.random::<u64>());
    }
}
