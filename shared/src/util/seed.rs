//! Seeds derived along a path, and the seeded generator for randomness that is not privacy noise.
//!
//! Simulations, the lab's experiments and the data generators give every task (trial, ε,
//! organisation, purpose) its own seed with [`derive_seed`], which makes them deterministic
//! whatever the number of threads; [`derived_rng`] is a ChaCha20 generator keyed from such a
//! seed. Privacy noise never comes from here: it is drawn from a
//! [`crate::privacy::noise::NoiseSource`] (invariant 4).

use rand::SeedableRng;
use rand::rngs::ChaCha20Rng;

/// Derives a child seed from a parent seed and a path of indices (SplitMix64 finaliser chain).
///
/// Simulations give every task (trial, ε, organisation, purpose) its own seed this way, so the
/// random stream a task sees does not depend on scheduling or thread count.
pub fn derive_seed(parent: u64, path: &[u64]) -> u64 {
    path.iter()
        .fold(splitmix(parent ^ 0x6470_6167_675f_7631), |acc, &p| {
            splitmix(acc ^ splitmix(p.wrapping_add(0x9e37_79b9_7f4a_7c15)))
        })
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A seeded ChaCha20 generator for randomness that is not privacy noise: synthetic data,
/// partitions, test splits and visiting orders, in simulations and in the aggregator's own
/// protocol (whose test split and order are its own choices, not released). Never draw privacy
/// noise from it: release paths use [`crate::privacy::noise::NoiseSource::secure`] (invariant 4).
pub fn derived_rng(seed: u64, path: &[u64]) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(derive_seed(seed, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_seeds_differ_by_path() {
        let s = derive_seed(1, &[0, 1]);
        assert_ne!(s, derive_seed(1, &[1, 0]));
        assert_ne!(s, derive_seed(2, &[0, 1]));
        assert_eq!(s, derive_seed(1, &[0, 1]));
    }
}
