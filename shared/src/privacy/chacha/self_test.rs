//! A known-answer self-test of the ChaCha20 rounds this CPU dispatches to, run whenever a
//! secure noise source is created ([`crate::privacy::noise::NoiseSource::secure`]), which fails
//! closed: no privacy noise is drawn from rounds that did not just reproduce the reference.
//!
//! Why at run time. The tests compare every path with the portable rounds, but only the paths
//! the test machine has: an AVX-512 path is never executed on a machine without AVX-512, and a
//! miscompiled or mis-dispatched path on the node's CPU would hand out a keystream nobody
//! checked. The self-test runs the dispatched path itself on two inputs:
//!
//! 1. the all-zero key at counter 0 — RFC 8439 Appendix A.1, test vector #1, whose first block is
//!    [`RFC8439_A1_BLOCK0`] (the state layout here, a 64-bit counter and a 64-bit stream number,
//!    coincides with RFC 8439's when counter and nonce are zero);
//! 2. a fixed non-zero key from a counter just below 2^32, so that the batch crosses the carry
//!    into the counter's high word, compared word for word with the portable rounds, which are
//!    themselves checked against (1).

use super::{BLOCK_WORDS, ChaCha20Blocks, WORDS, blocks, portable};

/// The first block of ChaCha20's keystream under the all-zero key, nonce and counter (RFC 8439
/// Appendix A.1, test vector #1), as little-endian words.
pub(crate) const RFC8439_A1_BLOCK0: [u32; 16] = [
    0xade0_b876,
    0x903d_f1a0,
    0xe56a_5d40,
    0x28bd_8653,
    0xb819_d2bd,
    0x1aed_8da0,
    0xccef_36a8,
    0xc70d_778b,
    0x7c59_41da,
    0x8d48_5751,
    0x3fe0_2477,
    0x374a_d8b8,
    0xf4b8_436a,
    0x1ca1_1815,
    0x69b6_87c3,
    0x8665_eeb2,
];

/// The rounds [`blocks`] runs on this CPU: `avx512`, `avx2` or `portable`.
pub fn dispatched_path() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if pulp::x86::V4::try_new().is_some() {
            return "avx512";
        }
        if pulp::x86::V3::try_new().is_some() {
            return "avx2";
        }
    }
    "portable"
}

/// The self-test of the dispatched rounds (module docs): what differs, if anything.
pub(crate) fn self_test() -> Result<(), String> {
    check(blocks)
}

/// The self-test of the rounds `path` (module docs).
pub(crate) fn check(path: impl Fn(&ChaCha20Blocks, &mut [u32; WORDS])) -> Result<(), String> {
    let mut out = Box::new([0u32; WORDS]);
    let zero = ChaCha20Blocks::new([0; 32]);
    portable(&zero, &mut out);
    if out[..BLOCK_WORDS] != RFC8439_A1_BLOCK0 {
        return Err("the portable rounds do not give RFC 8439's test vector".into());
    }
    path(&zero, &mut out);
    if out[..BLOCK_WORDS] != RFC8439_A1_BLOCK0 {
        return Err("the first block of the all-zero key is not RFC 8439's test vector".into());
    }
    let mut core = ChaCha20Blocks::new(std::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a));
    core.set_counter((1 << 32) - 3);
    let mut reference = Box::new([0u32; WORDS]);
    portable(&core, &mut reference);
    path(&core, &mut out);
    match out.iter().zip(reference.iter()).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(i) => Err(format!(
            "word {i} of a batch across the counter carry differs from the portable rounds"
        )),
    }
}
