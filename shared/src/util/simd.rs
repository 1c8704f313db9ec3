//! Runtime SIMD dispatch for the pass loops, with no `unsafe` in this crate.
//!
//! The crates are built for the portable x86-64 baseline (2-wide SSE2). [`vectorised`] runs a
//! [`Kernel`] through `pulp`'s dispatcher, which calls it from a function compiled with AVX-512
//! (x86-64-v4) or AVX2 + FMA (v3) enabled when the CPU has them (detected once at run time). A
//! kernel's `run` is `#[inline(always)]` and so is every helper it calls
//! ([`super::fastmath`], `dot_by_lanes`), so the whole loop body is compiled inside that function
//! and LLVM's auto-vectoriser uses 4- or 8-wide registers. (A closure was not enough: LLVM kept
//! it out of line, compiled for the baseline.) Rust never contracts `a * b + c` into a fused
//! multiply-add and LLVM does not reorder floating-point sums, so every element-wise result and
//! every reduction is bit-identical to the baseline build — only the register width changes.

/// A loop to compile for the widest SIMD the CPU offers. Implementations mark `run`
/// `#[inline(always)]`, or the loop stays compiled for the baseline.
pub(crate) trait Kernel {
    /// What the loop returns.
    type Output;
    /// The loop.
    fn run(self) -> Self::Output;

    /// The loop, compiled where one SIMD register holds `f64_lanes` f64 values (a constant in
    /// each compiled copy): a kernel whose best shape depends on the register file (how many
    /// accumulators fit without spilling) overrides this; results must not depend on it.
    #[inline(always)]
    fn run_with(self, f64_lanes: usize) -> Self::Output
    where
        Self: Sized,
    {
        let _ = f64_lanes;
        self.run()
    }
}

struct Dispatch<K>(K);

impl<K: Kernel> pulp::WithSimd for Dispatch<K> {
    type Output = K::Output;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> K::Output {
        self.0.run_with(S::F64_LANES)
    }
}

/// Runs `kernel` compiled for AVX-512 or AVX2 when the CPU has them, for the baseline otherwise.
pub(crate) fn vectorised<K: Kernel>(kernel: K) -> K::Output {
    pulp::Arch::new().dispatch(Dispatch(kernel))
}
