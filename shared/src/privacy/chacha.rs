//! The ChaCha20 keystream behind [`super::noise::NoiseSource`], 32 blocks at a time.
//!
//! This is the block function of Bernstein's ChaCha (RFC 8439 §2.3: 20 rounds, ten double
//! rounds of column then diagonal quarter-rounds, the input added back), with the state layout of
//! `rand`'s `ChaCha20Rng`: the constants, the 256-bit key, a 64-bit block counter in words 12–13
//! and a 64-bit stream number (0) in words 14–15. [`ChaCha20Blocks`] is a
//! `rand_core::block::Generator`; wrapped in `rand_core`'s `BlockRng`, as `ChaCha20Rng` wraps its
//! own core, every `next_u32`, `next_u64` and `fill_bytes` hands out the same consecutive words
//! of the same keystream, so every seeded draw keeps its bits (the tests compare the two
//! generators word for word, across counter carries and mixed calls).
//!
//! **Why not `ChaCha20Rng` itself.** Its generator computes four blocks per call with AVX2 even
//! on AVX-512 CPUs, one dependency chain of rounds per two blocks; privacy noise (Gaussian draws
//! for DP-SGD, BST and the Langevin chains, geometric gaps for Poisson batches) spent a fifth of
//! `experiment paper` in it. Here eight independent chains of rounds run side by side, four
//! blocks to a 512-bit register with AVX-512's native rotations (`vprold`), or two blocks to a
//! 256-bit register with AVX2, through `pulp`'s safe intrinsics (no `unsafe`; detected at run
//! time); other CPUs run the portable rounds (`bench` compares them). Whichever path the CPU
//! dispatches to passes a known-answer self-test every time a secure source is created
//! ([`self_test`]).
//!
//! **Security.** The output is ChaCha20's keystream under a key from the operating system
//! ([`super::noise::NoiseSource::secure`]), word for word what the reference generator gives for
//! that key (tests), so the generator stays a CSPRNG (invariant 4). The rounds are additions,
//! rotations and exclusive-ors on fixed positions: no table lookups or data-dependent branches.
//! The key words of the state and the buffered keystream are zeroized when the generator is
//! dropped (copies the rounds leave in registers and stack frames are not).

use rand::rand_core::block::Generator;
use zeroize::Zeroize;

pub mod self_test;

/// Blocks computed per call.
const BLOCKS: usize = 32;
/// 32-bit words per block.
const BLOCK_WORDS: usize = 16;
/// Words handed to `BlockRng` per call.
pub(crate) const WORDS: usize = BLOCKS * BLOCK_WORDS;
/// "expand 32-byte k".
const CONSTANTS: [u32; 4] = [0x6170_7865, 0x3320_646e, 0x7962_2d32, 0x6b20_6574];

/// ChaCha20 keyed by a 256-bit key, stream 0, from block `counter` on.
#[derive(Clone)]
pub(crate) struct ChaCha20Blocks {
    state: [u32; 16],
}

impl std::fmt::Debug for ChaCha20Blocks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.write_str("ChaCha20Blocks { .. }")
    }
}

impl ChaCha20Blocks {
    /// The keystream of `key` (little-endian words, as `ChaCha20Rng::from_seed`) from block 0.
    pub(crate) fn new(key: [u8; 32]) -> Self {
        let mut state = [0u32; 16];
        state[..4].copy_from_slice(&CONSTANTS);
        for (w, bytes) in state[4..12].iter_mut().zip(key.chunks_exact(4)) {
            *w = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        }
        Self { state }
    }

    /// The 64-bit block counter of the next block.
    #[inline(always)]
    fn counter(&self) -> u64 {
        u64::from(self.state[12]) | (u64::from(self.state[13]) << 32)
    }

    pub(crate) fn set_counter(&mut self, counter: u64) {
        self.state[12] = counter as u32;
        self.state[13] = (counter >> 32) as u32;
    }

    /// The input of block `counter() + k`.
    fn input(&self, k: usize) -> [u32; 16] {
        let mut s = self.state;
        s[12..].copy_from_slice(&self.row(k, 3));
        s
    }

    /// Row `r` (words 4r, …, 4r + 3) of the input of block `counter() + k`.
    #[inline(always)]
    fn row(&self, k: usize, r: usize) -> [u32; 4] {
        let s = &self.state;
        if r < 3 {
            return [s[4 * r], s[4 * r + 1], s[4 * r + 2], s[4 * r + 3]];
        }
        let c = self.counter().wrapping_add(k as u64);
        [c as u32, (c >> 32) as u32, s[14], s[15]]
    }
}

impl Generator for ChaCha20Blocks {
    type Output = [u32; WORDS];

    fn generate(&mut self, out: &mut [u32; WORDS]) {
        blocks(self, out);
        self.set_counter(self.counter().wrapping_add(BLOCKS as u64));
    }

    /// The keystream words not yet handed out are zeroized with the buffer.
    fn drop(&mut self, out: &mut [u32; WORDS]) {
        out.zeroize();
    }
}

impl Drop for ChaCha20Blocks {
    fn drop(&mut self) {
        self.state.zeroize();
    }
}

/// [`BLOCKS`] blocks from the counter of `core` on, by the widest rounds the CPU has.
fn blocks(core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(simd) = pulp::x86::V4::try_new() {
            return simd::avx512(simd, core, out);
        }
        if let Some(simd) = pulp::x86::V3::try_new() {
            return simd::avx2(simd, core, out);
        }
    }
    portable(core, out);
}

/// One quarter-round on words a, b, c, d of `s` (RFC 8439 §2.1).
#[inline(always)]
fn quarter(s: &mut [u32; 16], a: usize, b: usize, c: usize, d: usize) {
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(16);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(12);
    s[a] = s[a].wrapping_add(s[b]);
    s[d] = (s[d] ^ s[a]).rotate_left(8);
    s[c] = s[c].wrapping_add(s[d]);
    s[b] = (s[b] ^ s[c]).rotate_left(7);
}

/// The block function one block at a time (RFC 8439 §2.3): the rounds every CPU can run.
fn portable(core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
    for (k, block) in out.chunks_exact_mut(BLOCK_WORDS).enumerate() {
        let input = core.input(k);
        let mut s = input;
        for _ in 0..10 {
            quarter(&mut s, 0, 4, 8, 12);
            quarter(&mut s, 1, 5, 9, 13);
            quarter(&mut s, 2, 6, 10, 14);
            quarter(&mut s, 3, 7, 11, 15);
            quarter(&mut s, 0, 5, 10, 15);
            quarter(&mut s, 1, 6, 11, 12);
            quarter(&mut s, 2, 7, 8, 13);
            quarter(&mut s, 3, 4, 9, 14);
        }
        for ((o, w), i) in block.iter_mut().zip(s).zip(input) {
            *o = w.wrapping_add(i);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd;

#[cfg(test)]
mod tests;
