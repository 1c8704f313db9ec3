//! Σᵢ cᵢxᵢ over a block of rows, the last stage of every gradient pass, with each coordinate's
//! additions in row order — the bits of adding one row at a time — but without storing and
//! reloading the sums at every row (which made the passes wait on memory for small d).
//! Inlined into the passes' [`crate::util::simd::Kernel`]s, so it is compiled for their SIMD width.

/// Coordinates summed together in one loop over the rows: each coordinate's additions are a
/// serial chain (row order), so a loop over one 8-wide run waits on the adder's latency at every
/// row; 32 coordinates keep four chains in flight (d = 10 took 67 → 52 ns per 50-row block,
/// d = 20 674 → 386 ns per 256 rows on the AVX-512 VM).
const RUN: usize = 32;

/// `out` += Σᵢ cᵢxᵢ over the rows of `x` (row-major, `out.len()` columns): each coordinate's
/// sum is the same additions in the same row order as adding one row at a time, but a run of
/// up to [`RUN`] coordinates stays in registers over all the rows instead of going through
/// memory at every row.
#[inline(always)]
pub(crate) fn add_weighted_rows(x: &[f64], coef: &[f64], out: &mut [f64]) {
    let p = out.len();
    let full = p / RUN * RUN;
    for j in (0..full).step_by(RUN) {
        add_columns::<RUN>(x, coef, p, j, out);
    }
    // The last run's width as a constant, so its sums are registers too.
    macro_rules! last_run {
        ($($w:literal)*) => {
            match p - full {
                $($w => add_columns::<$w>(x, coef, p, full, out),)*
                _ => {}
            }
        };
    }
    last_run!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

/// [`add_weighted_rows`] on the W columns from `j`.
#[inline(always)]
fn add_columns<const W: usize>(x: &[f64], coef: &[f64], p: usize, j: usize, out: &mut [f64]) {
    let mut acc = [0.0; W];
    acc.copy_from_slice(&out[j..j + W]);
    for (xi, c) in x.chunks_exact(p).zip(coef) {
        let v = &xi[j..j + W];
        for k in 0..W {
            acc[k] += c * v[k];
        }
    }
    out[j..j + W].copy_from_slice(&acc);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_has_the_bits_of_one_row_at_a_time() {
        for p in (1..=40).chain([63, 64, 65, 100]) {
            let rows = 37;
            let x: Vec<f64> = (0..rows * p)
                .map(|i| ((i * 7919) % 101) as f64 / 37.0 - 1.3)
                .collect();
            let coef: Vec<f64> = (0..rows)
                .map(|i| ((i * 31) % 17) as f64 / 9.0 - 0.8)
                .collect();
            let start: Vec<f64> = (0..p).map(|j| j as f64 * 0.1 - 0.35).collect();
            let mut want = start.clone();
            for (xi, c) in x.chunks_exact(p).zip(&coef) {
                for (o, v) in want.iter_mut().zip(xi) {
                    *o += c * v;
                }
            }
            let mut got = start;
            add_weighted_rows(&x, &coef, &mut got);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "p = {p}");
        }
    }
}
