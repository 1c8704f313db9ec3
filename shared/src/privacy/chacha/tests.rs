//! The keystream against RFC 8439's test vector and against `rand`'s `ChaCha20Rng`, on every
//! path this CPU can run.

use super::*;
use rand::rand_core::block::BlockRng;
use rand::rngs::ChaCha20Rng;
use rand::{Rng, RngExt, SeedableRng};

/// A way of computing the blocks.
type Path = fn(&ChaCha20Blocks, &mut [u32; WORDS]);

/// Every path this CPU has, the portable one first.
fn paths() -> Vec<(&'static str, Path)> {
    let mut p: Vec<(&'static str, Path)> = vec![("portable", portable)];
    #[cfg(target_arch = "x86_64")]
    {
        fn avx512(core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
            let simd = pulp::x86::V4::try_new().expect("checked");
            simd::avx512(simd, core, out);
        }
        fn avx2(core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
            let simd = pulp::x86::V3::try_new().expect("checked");
            simd::avx2(simd, core, out);
        }
        if pulp::x86::V4::try_new().is_some() {
            p.push(("avx512", avx512));
        }
        if pulp::x86::V3::try_new().is_some() {
            p.push(("avx2", avx2));
        }
    }
    p
}

#[test]
fn rfc8439_block_test_vector() {
    // RFC 8439 §2.3.2: key 00 01 … 1f, block counter 1, nonce 00:00:00:09 00:00:00:4a 00:00:00:00.
    // In the 64-bit counter layout: words 12–13 = 1 and 0x09000000, words 14–15 = 0x4a000000, 0.
    let key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let mut core = ChaCha20Blocks::new(key);
    core.set_counter(1 | (0x0900_0000 << 32));
    core.state[14] = 0x4a00_0000;
    let want: [u32; 16] = [
        0xe4e7_f110,
        0x1559_3bd1,
        0x1fdd_0f50,
        0xc471_20a3,
        0xc7f4_d1c7,
        0x0368_c033,
        0x9aaa_2204,
        0x4e6c_d4c3,
        0x4664_82d2,
        0x09aa_9f07,
        0x05d7_c214,
        0xa202_8bd9,
        0xd19c_12b5,
        0xb94e_16de,
        0xe883_d0cb,
        0x4e3c_50a2,
    ];
    for (name, path) in paths() {
        let mut out = [0u32; WORDS];
        path(&core, &mut out);
        assert_eq!(out[..16], want, "{name}");
    }
}

#[test]
fn every_path_gives_the_portable_words() {
    let mut keys = ChaCha20Rng::seed_from_u64(3);
    // Counters where the low word carries into the high one inside a call, and where the 64-bit
    // counter wraps.
    let counters = [0, 5, (1 << 32) - 3, u64::MAX - 6, 0x1234_5678_9abc_def0];
    for &counter in &counters {
        let mut core = ChaCha20Blocks::new(keys.random());
        core.set_counter(counter);
        let mut want = [0u32; WORDS];
        portable(&core, &mut want);
        for (name, path) in paths() {
            let mut out = [0u32; WORDS];
            path(&core, &mut out);
            assert_eq!(out, want, "{name}, counter {counter:#x}");
        }
    }
}

/// One of `ChaCha20Rng`'s ways of handing out words, chosen by `pick`.
fn draw(rng: &mut impl Rng, pick: u32, bytes: usize) -> Vec<u8> {
    match pick % 3 {
        0 => rng.next_u32().to_le_bytes().to_vec(),
        1 => rng.next_u64().to_le_bytes().to_vec(),
        _ => {
            let mut b = vec![0u8; bytes];
            rng.fill_bytes(&mut b);
            b
        }
    }
}

#[test]
fn hands_out_chacha20rngs_words_in_any_mix_of_calls() {
    let mut script = ChaCha20Rng::seed_from_u64(11);
    for seed in [0u64, 1, 42, u64::MAX] {
        let mut reference = ChaCha20Rng::seed_from_u64(seed);
        let mut ours = BlockRng::new(ChaCha20Blocks::new(reference.get_seed()));
        // Thousands of words: many calls of `generate`, words and u64s straddling its buffers.
        for _ in 0..3000 {
            let pick: u32 = script.random();
            let bytes = script.random_range(0..70);
            let want = draw(&mut reference, pick, bytes);
            let got = match pick % 3 {
                0 => ours.next_word().to_le_bytes().to_vec(),
                1 => ours.next_u64_from_u32().to_le_bytes().to_vec(),
                _ => {
                    let mut b = vec![0u8; bytes];
                    ours.fill_bytes(&mut b);
                    b
                }
            };
            assert_eq!(got, want, "seed {seed}");
        }
    }
}

#[test]
fn carries_the_block_counter_as_chacha20rng_does() {
    let mut reference = ChaCha20Rng::seed_from_u64(9);
    let start = (1u64 << 32) - 7;
    reference.set_word_pos(u128::from(start) * 16);
    let mut core = ChaCha20Blocks::new(reference.get_seed());
    core.set_counter(start);
    let mut ours = BlockRng::new(core);
    for i in 0..(3 * WORDS) {
        assert_eq!(ours.next_word(), reference.next_u32(), "word {i}");
    }
}

#[test]
fn debug_does_not_print_the_key() {
    let core = ChaCha20Blocks::new([0xab; 32]);
    assert_eq!(format!("{core:?}"), "ChaCha20Blocks { .. }");
}

/// The self-test that guards every secure source passes on each path this CPU has, fails on a
/// keystream with one word corrupted, and the test says which paths it ran.
#[test]
fn the_self_test_passes_every_path_here_and_fails_on_a_corrupted_keystream() {
    let here = paths();
    for (name, path) in &here {
        assert_eq!(self_test::check(path), Ok(()), "{name}");
    }
    assert_eq!(self_test::self_test(), Ok(()));
    let ran: Vec<&str> = here.iter().map(|(n, _)| *n).collect();
    let missing: Vec<&str> = ["portable", "avx2", "avx512"]
        .into_iter()
        .filter(|p| !ran.contains(p))
        .collect();
    eprintln!(
        "ChaCha20 paths run here: {}; dispatched: {}; not on this CPU (checked at run time only): {}",
        ran.join(", "),
        self_test::dispatched_path(),
        if missing.is_empty() {
            "none".to_owned()
        } else {
            missing.join(", ")
        }
    );
    assert!(ran.contains(&self_test::dispatched_path()));
    for corrupt_word in [0, 5 * BLOCK_WORDS + 3, WORDS - 1] {
        let corrupted = |core: &ChaCha20Blocks, out: &mut [u32; WORDS]| {
            blocks(core, out);
            out[corrupt_word] ^= 1 << 7;
        };
        let e = self_test::check(corrupted).expect_err("a corrupted keystream fails");
        assert!(!e.is_empty(), "{e}");
    }
}
