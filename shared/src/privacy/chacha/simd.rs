//! The rounds of [`super`] on SIMD registers, through `pulp`'s safe intrinsics.
//!
//! A register holds one row (four words) of [`Lanes::PER`] blocks, one block per 128-bit lane,
//! so a quarter-round on four registers is the column round of all of them; rotating the words
//! of rows b, c and d within each lane turns diagonals into columns (and back). Rows of `S`
//! registers run side by side (`S` independent chains of rounds: 8 with AVX-512 and with AVX2;
//! more chains than the register file holds still ran faster, their spills hidden by the
//! parallel rounds). Each lane does the portable rounds' operations on the
//! same words, so the output is the same.

use super::{BLOCK_WORDS, BLOCKS, ChaCha20Blocks, WORDS};
use core::arch::x86_64::{__m256i, __m512i};
use pulp::cast;
use pulp::x86::{V3, V4};

/// The operations of the rounds on one register of rows.
trait Lanes: Copy {
    /// A register.
    type V: Copy;
    /// Blocks per register.
    const PER: usize;
    /// The register holding `words` (4·PER words: row r of PER consecutive blocks).
    fn load(self, words: &[u32]) -> Self::V;
    /// `v`'s 4·PER words into `words`.
    fn store(self, v: Self::V, words: &mut [u32]);
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    fn xor(self, a: Self::V, b: Self::V) -> Self::V;
    fn rol16(self, a: Self::V) -> Self::V;
    fn rol12(self, a: Self::V) -> Self::V;
    fn rol8(self, a: Self::V) -> Self::V;
    fn rol7(self, a: Self::V) -> Self::V;
    /// Word i of each lane ← word i + `n` (mod 4), for n = 1, 2, 3.
    fn left1(self, a: Self::V) -> Self::V;
    fn left2(self, a: Self::V) -> Self::V;
    fn left3(self, a: Self::V) -> Self::V;
    /// All [`BLOCKS`] blocks ([`groups`] with this register file's number of chains).
    fn all(self, core: &ChaCha20Blocks, out: &mut [u32; WORDS]);
}

/// [`super::blocks`] with AVX-512.
pub(super) fn avx512(simd: V4, core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
    simd.vectorize(Run {
        core,
        out,
        lanes: Avx512(simd),
    });
}

/// [`super::blocks`] with AVX2.
pub(super) fn avx2(simd: V3, core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
    simd.vectorize(Run {
        core,
        out,
        lanes: Avx2(simd),
    });
}

/// The blocks, compiled with `L`'s target features.
struct Run<'a, L> {
    core: &'a ChaCha20Blocks,
    out: &'a mut [u32; WORDS],
    lanes: L,
}

impl<L: Lanes> pulp::NullaryFnOnce for Run<'_, L> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        self.lanes.all(self.core, self.out);
    }
}

/// Four rows of `S` registers.
type Rows<V, const S: usize> = [[V; S]; 4];

/// The blocks in groups of `S`·PER: load, ten double rounds, add the input, store.
#[inline(always)]
fn groups<L: Lanes, const S: usize>(lanes: L, core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
    let per_group = S * L::PER;
    for first in (0..BLOCKS).step_by(per_group) {
        let input: Rows<L::V, S> = std::array::from_fn(|r| {
            std::array::from_fn(|s| load_row(lanes, core, first + s * L::PER, r))
        });
        let mut x = input;
        for _ in 0..10 {
            double_round(lanes, &mut x);
        }
        for (r, row) in x.iter().enumerate() {
            for (s, &v) in row.iter().enumerate() {
                let mut words = [0u32; 16];
                lanes.store(lanes.add(v, input[r][s]), &mut words[..4 * L::PER]);
                for (j, lane) in words.chunks_exact(4).take(L::PER).enumerate() {
                    let at = (first + s * L::PER + j) * BLOCK_WORDS + 4 * r;
                    out[at..at + 4].copy_from_slice(lane);
                }
            }
        }
    }
}

/// Row `r` of blocks `first`, …, `first` + PER − 1.
#[inline(always)]
fn load_row<L: Lanes>(lanes: L, core: &ChaCha20Blocks, first: usize, r: usize) -> L::V {
    let mut words = [0u32; 16];
    for (j, lane) in words.chunks_exact_mut(4).take(L::PER).enumerate() {
        lane.copy_from_slice(&core.row(first + j, r));
    }
    lanes.load(&words[..4 * L::PER])
}

/// A column round, then a diagonal round, on every chain.
#[inline(always)]
fn double_round<L: Lanes, const S: usize>(lanes: L, x: &mut Rows<L::V, S>) {
    quarter_all(lanes, x);
    turn(
        x,
        |b| lanes.left1(b),
        |c| lanes.left2(c),
        |d| lanes.left3(d),
    );
    quarter_all(lanes, x);
    turn(
        x,
        |b| lanes.left3(b),
        |c| lanes.left2(c),
        |d| lanes.left1(d),
    );
}

/// Rows b, c and d of every chain through `fb`, `fc` and `fd`.
#[inline(always)]
fn turn<V: Copy, const S: usize>(
    x: &mut Rows<V, S>,
    fb: impl Fn(V) -> V,
    fc: impl Fn(V) -> V,
    fd: impl Fn(V) -> V,
) {
    let [_, b, c, d] = x;
    for ((b, c), d) in b.iter_mut().zip(c.iter_mut()).zip(d.iter_mut()) {
        (*b, *c, *d) = (fb(*b), fc(*c), fd(*d));
    }
}

/// The quarter-round (RFC 8439 §2.1) on the columns of every chain, step by step across chains.
#[inline(always)]
fn quarter_all<L: Lanes, const S: usize>(l: L, x: &mut Rows<L::V, S>) {
    let [a, b, c, d] = x;
    for s in 0..S {
        a[s] = l.add(a[s], b[s]);
        d[s] = l.rol16(l.xor(d[s], a[s]));
    }
    for s in 0..S {
        c[s] = l.add(c[s], d[s]);
        b[s] = l.rol12(l.xor(b[s], c[s]));
    }
    for s in 0..S {
        a[s] = l.add(a[s], b[s]);
        d[s] = l.rol8(l.xor(d[s], a[s]));
    }
    for s in 0..S {
        c[s] = l.add(c[s], d[s]);
        b[s] = l.rol7(l.xor(b[s], c[s]));
    }
}

/// Four blocks per 512-bit register, native rotations.
#[derive(Clone, Copy)]
struct Avx512(V4);

impl Lanes for Avx512 {
    type V = __m512i;
    const PER: usize = 4;

    #[inline(always)]
    fn load(self, words: &[u32]) -> __m512i {
        let mut w = [0u32; 16];
        w.copy_from_slice(words);
        cast(w)
    }
    #[inline(always)]
    fn store(self, v: __m512i, words: &mut [u32]) {
        words.copy_from_slice(&cast::<_, [u32; 16]>(v));
    }
    #[inline(always)]
    fn add(self, a: __m512i, b: __m512i) -> __m512i {
        self.0.avx512f._mm512_add_epi32(a, b)
    }
    #[inline(always)]
    fn xor(self, a: __m512i, b: __m512i) -> __m512i {
        self.0.avx512f._mm512_xor_si512(a, b)
    }
    #[inline(always)]
    fn rol16(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_rol_epi32::<16>(a)
    }
    #[inline(always)]
    fn rol12(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_rol_epi32::<12>(a)
    }
    #[inline(always)]
    fn rol8(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_rol_epi32::<8>(a)
    }
    #[inline(always)]
    fn rol7(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_rol_epi32::<7>(a)
    }
    #[inline(always)]
    fn left1(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_shuffle_epi32::<0b00_11_10_01>(a)
    }
    #[inline(always)]
    fn left2(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_shuffle_epi32::<0b01_00_11_10>(a)
    }
    #[inline(always)]
    fn left3(self, a: __m512i) -> __m512i {
        self.0.avx512f._mm512_shuffle_epi32::<0b10_01_00_11>(a)
    }
    #[inline(always)]
    fn all(self, core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
        groups::<Self, 8>(self, core, out);
    }
}

/// Two blocks per 256-bit register; rotations by 16 and 8 as byte shuffles, by 12 and 7 as
/// two shifts.
#[derive(Clone, Copy)]
struct Avx2(V3);

/// Byte shuffles rotating each 32-bit word left by 16 and by 8.
const ROL16: [u8; 32] = lane_bytes([2, 3, 0, 1]);
const ROL8: [u8; 32] = lane_bytes([3, 0, 1, 2]);

/// The shuffle taking byte `from[i]` of each word to byte i, in all eight words.
const fn lane_bytes(from: [u8; 4]) -> [u8; 32] {
    let mut m = [0u8; 32];
    let mut i = 0;
    while i < 32 {
        // Indices are within each 128-bit half.
        m[i] = (i as u8 % 16) / 4 * 4 + from[i % 4];
        i += 1;
    }
    m
}

impl Lanes for Avx2 {
    type V = __m256i;
    const PER: usize = 2;

    #[inline(always)]
    fn load(self, words: &[u32]) -> __m256i {
        let mut w = [0u32; 8];
        w.copy_from_slice(words);
        cast(w)
    }
    #[inline(always)]
    fn store(self, v: __m256i, words: &mut [u32]) {
        words.copy_from_slice(&cast::<_, [u32; 8]>(v));
    }
    #[inline(always)]
    fn add(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_add_epi32(a, b)
    }
    #[inline(always)]
    fn xor(self, a: __m256i, b: __m256i) -> __m256i {
        self.0.avx2._mm256_xor_si256(a, b)
    }
    #[inline(always)]
    fn rol16(self, a: __m256i) -> __m256i {
        self.0.avx2._mm256_shuffle_epi8(a, cast(ROL16))
    }
    #[inline(always)]
    fn rol12(self, a: __m256i) -> __m256i {
        let s = self.0.avx2;
        s._mm256_or_si256(s._mm256_slli_epi32::<12>(a), s._mm256_srli_epi32::<20>(a))
    }
    #[inline(always)]
    fn rol8(self, a: __m256i) -> __m256i {
        self.0.avx2._mm256_shuffle_epi8(a, cast(ROL8))
    }
    #[inline(always)]
    fn rol7(self, a: __m256i) -> __m256i {
        let s = self.0.avx2;
        s._mm256_or_si256(s._mm256_slli_epi32::<7>(a), s._mm256_srli_epi32::<25>(a))
    }
    #[inline(always)]
    fn left1(self, a: __m256i) -> __m256i {
        self.0.avx2._mm256_shuffle_epi32::<0b00_11_10_01>(a)
    }
    #[inline(always)]
    fn left2(self, a: __m256i) -> __m256i {
        self.0.avx2._mm256_shuffle_epi32::<0b01_00_11_10>(a)
    }
    #[inline(always)]
    fn left3(self, a: __m256i) -> __m256i {
        self.0.avx2._mm256_shuffle_epi32::<0b10_01_00_11>(a)
    }
    #[inline(always)]
    fn all(self, core: &ChaCha20Blocks, out: &mut [u32; WORDS]) {
        groups::<Self, 8>(self, core, out);
    }
}
