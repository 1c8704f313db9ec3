//! [`RowMap`]: a schema's map of raw rows into the unit ball ([`super::super::normalise`]) with
//! its constants resolved once, for mapping many rows, and [`RowMap::normalise_rows`] for a block
//! of rows at a time.
//!
//! A block of rows of the common ball map — every feature the identity transform with no numeric
//! missing marker, no subspace — goes through one loop compiled for the widest SIMD the CPU has
//! ([`crate::util::simd`]), with the features' constants in arrays: clipping and missing values
//! as selects, so the divisions by the scales go four or eight at a time. Eight rows go through
//! as one flat pass against the constants repeated eight times, whole vectors whatever the
//! number of features, and are then copied into their rows. Each value gets the
//! same operations as in [`Schema::normalise_row`] (clip, subtract the centre, divide by the
//! scale, multiply by the row scale), each rounded the same way, and the row ends with the same
//! projection and shrink ([`normalise::into_ball`]): the same bits.

use super::Schema;
use crate::data::normalise::{self, BallRow, MapMode, RowReport, Transform};
use crate::util::simd::{Kernel, vectorised};

/// A schema's row map, ready to map many rows ([`Schema::row_map`]).
#[derive(Debug, Clone)]
pub struct RowMap<'a> {
    schema: &'a Schema,
    mode: MapMode,
    ball: BallRow,
    scratch: Vec<f64>,
    plain: Option<PlainBall>,
}

/// What mapping a block of rows did, in counts only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowsReport {
    /// Values clipped to their declared bounds.
    pub clipped: usize,
    /// Missing values.
    pub missing: usize,
    /// Rows projected onto the unit ball.
    pub projected: usize,
}

impl RowsReport {
    fn add(&mut self, row: RowReport) {
        self.clipped += row.clipped;
        self.missing += row.missing;
        self.projected += usize::from(row.projected);
    }
}

/// Rows mapped in one flat pass by [`PlainRows`]: [`GROUP`] rows of p values are 8p values, a
/// whole number of 8-lane vectors whatever p.
const GROUP: usize = 8;

/// The features' constants repeated [`GROUP`] times, to run alongside a group of rows.
fn tiled(values: impl Iterator<Item = f64>) -> Vec<f64> {
    values.collect::<Vec<_>>().repeat(GROUP)
}

/// The constants of a ball map whose features are all identity transforms without numeric
/// missing markers, and which has no subspace, one array per constant, each tiled [`GROUP`]
/// times.
#[derive(Debug, Clone)]
struct PlainBall {
    lo: Vec<f64>,
    hi: Vec<f64>,
    center: Vec<f64>,
    scale: Vec<f64>,
}

impl PlainBall {
    fn of(schema: &Schema) -> Option<Self> {
        let plain = schema.mode() == MapMode::Ball
            && schema.subspace.is_none()
            && schema.features.iter().all(|f| {
                f.transform.unwrap_or_default() == Transform::Identity
                    && f.missing
                        .as_ref()
                        .is_none_or(|m| m.first_number().is_none())
            });
        let f = &schema.features;
        plain.then(|| PlainBall {
            lo: tiled(f.iter().map(|f| f.lo)),
            hi: tiled(f.iter().map(|f| f.hi)),
            center: tiled(f.iter().map(|f| f.center.unwrap_or(0.0))),
            scale: tiled(f.iter().map(|f| f.scale.unwrap_or(1.0))),
        })
    }
}

impl Schema {
    /// The map of [`Schema::normalise_row`] with its constants resolved once, for mapping many
    /// rows: the same arithmetic, bit for bit, without the per-row set-up.
    pub fn row_map(&self) -> RowMap<'_> {
        RowMap {
            schema: self,
            mode: self.mode(),
            ball: self.ball(),
            scratch: Vec::with_capacity(self.features.len()),
            plain: PlainBall::of(self),
        }
    }
}

impl RowMap<'_> {
    /// [`Schema::normalise_row`] of `raw` into `out` (the same checks and result).
    ///
    /// # Panics
    /// If `raw.len()` is not the number of features or `out.len()` is not [`Schema::dim`].
    pub fn normalise(&mut self, raw: &[f64], out: &mut [f64]) -> RowReport {
        let s = self.schema;
        assert_eq!(
            raw.len(),
            s.features.len(),
            "raw row length must equal the number of features"
        );
        assert_eq!(
            out.len(),
            s.dim(),
            "output row length must equal Schema::dim()"
        );
        match self.mode {
            MapMode::Paper => normalise::paper_row(&s.features, s.intercept, raw, out),
            MapMode::Ball => normalise::ball_row(
                &s.features,
                self.ball,
                s.subspace.as_ref(),
                raw,
                out,
                &mut self.scratch,
            ),
        }
    }

    /// [`RowMap::normalise`] of every row of `raw` (row-major, one value per feature) into `out`
    /// (row-major, [`Schema::dim`] each): the same rows, bit for bit, and the reports summed.
    ///
    /// # Panics
    /// If `raw` and `out` do not hold the same whole number of rows.
    pub fn normalise_rows(&mut self, raw: &[f64], out: &mut [f64]) -> RowsReport {
        let (p, dim) = (self.schema.features.len(), self.schema.dim());
        let rows = raw.len().checked_div(p).unwrap_or(0);
        assert!(
            raw.len() == rows * p && out.len() == rows * dim,
            "raw and mapped rows do not match"
        );
        if rows == 0 {
            return RowsReport::default();
        }
        if let Some(plain) = &self.plain {
            return vectorised(PlainRows {
                plain,
                ball: self.ball,
                p,
                dim,
                raw,
                out,
            });
        }
        let mut report = RowsReport::default();
        for (r, o) in raw.chunks_exact(p).zip(out.chunks_exact_mut(dim)) {
            report.add(self.normalise(r, o));
        }
        report
    }
}

/// The ball map of a block of rows through [`PlainBall`]'s arrays, as a SIMD kernel.
struct PlainRows<'a> {
    plain: &'a PlainBall,
    ball: BallRow,
    /// Values per raw row (at least 1) and per mapped row.
    p: usize,
    dim: usize,
    raw: &'a [f64],
    out: &'a mut [f64],
}

impl Kernel for PlainRows<'_> {
    type Output = RowsReport;

    #[inline(always)]
    fn run(self) -> RowsReport {
        let (p, dim) = (self.p, self.dim);
        let mut report = RowsReport::default();
        // Groups of GROUP rows: their GROUP · p values in one flat pass against the tiled
        // constants (whole vectors, no per-row remainder), then copied into their rows.
        let mut flat = vec![0.0; GROUP * p];
        let mut raw_groups = self.raw.chunks_exact(GROUP * p);
        let mut out_groups = self.out.chunks_exact_mut(GROUP * dim);
        for (r, o) in (&mut raw_groups).zip(&mut out_groups) {
            let (clipped, missing) = map_values(self.plain, self.ball.row_scale, r, &mut flat);
            for (z, row) in flat.chunks_exact(p).zip(o.chunks_exact_mut(dim)) {
                row[..p].copy_from_slice(z);
                if let Some(a) = self.ball.intercept {
                    row[p] = a;
                }
            }
            report.clipped += clipped;
            report.missing += missing;
        }
        // The last rows (fewer than GROUP), one at a time against the first p constants.
        let rest = raw_groups.remainder();
        let rest_out = out_groups.into_remainder();
        for (r, row) in rest.chunks_exact(p).zip(rest_out.chunks_exact_mut(dim)) {
            let (clipped, missing) = map_values(self.plain, self.ball.row_scale, r, &mut row[..p]);
            if let Some(a) = self.ball.intercept {
                row[p] = a;
            }
            report.clipped += clipped;
            report.missing += missing;
        }
        // The last steps four rows at a time, their norms side by side.
        let mut quads = self.out.chunks_exact_mut(4 * dim);
        for quad in &mut quads {
            report.projected += normalise::into_ball4(quad, dim);
        }
        for row in quads.into_remainder().chunks_exact_mut(dim) {
            report.projected += usize::from(normalise::into_ball(row));
        }
        report
    }
}

/// Clip, centre, scale and row scale of `raw`'s values into `out` (as many), against the first
/// `raw.len()` of `plain`'s tiled constants: (values clipped, values missing).
#[inline(always)]
fn map_values(plain: &PlainBall, row_scale: f64, raw: &[f64], out: &mut [f64]) -> (usize, usize) {
    let (mut clipped, mut missing) = (0, 0);
    let constants = plain
        .lo
        .iter()
        .zip(&plain.hi)
        .zip(plain.center.iter().zip(&plain.scale));
    for ((zj, &v), ((&lo, &hi), (&center, &scale))) in out.iter_mut().zip(raw).zip(constants) {
        let nan = v.is_nan();
        let (below, above) = (v < lo, v > hi);
        let c = if below {
            lo
        } else if above {
            hi
        } else {
            v
        };
        let value = if nan { 0.0 } else { (c - center) / scale };
        *zj = value * row_scale;
        clipped += usize::from(below | above);
        missing += usize::from(nan);
    }
    (clipped, missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::schema::Schema;

    /// Features a (bounds only) and b (centre and scale declared), then `extra`'s.
    fn schema(extra: &str) -> Schema {
        let text = format!(
            "name = 't'\nintercept = true\nlabel = {{ column = 'y', positive = '1', negative = '0' }}\n\
             features = [{{ name = 'a', lo = -1.0, hi = 3.0 }}, \
             {{ name = 'b', lo = 0.0, hi = 10.0, center = 4.0, scale = 3.0 }}{extra}]\n"
        );
        Schema::from_toml_str(&text, "t").expect("schema")
    }

    /// Maps `raw` as one block and asserts that every row has the bits, and the block the
    /// report, of [`Schema::normalise_row`] one row at a time; the block's report.
    fn block_matches_rows(s: &Schema, raw: &[f64]) -> RowsReport {
        let p = s.features.len();
        let mut block = vec![0.0; raw.len() / p * s.dim()];
        let got = s.row_map().normalise_rows(raw, &mut block);
        let mut want = RowsReport::default();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for (i, (r, got_row)) in raw.chunks(p).zip(block.chunks(s.dim())).enumerate() {
            let mut row = vec![0.0; s.dim()];
            want.add(s.normalise_row(r, &mut row));
            assert_eq!(bits(got_row), bits(&row), "p = {p}, row {i}: {r:?}");
        }
        assert_eq!(got, want, "p = {p}");
        got
    }

    #[test]
    fn a_block_of_rows_has_the_bits_of_one_row_at_a_time() {
        let values = [
            -1e300,
            -2.0,
            -1.0,
            -0.3,
            0.0,
            0.7,
            2.9,
            3.0,
            9.99,
            11.0,
            f64::INFINITY,
            f64::NAN,
        ];
        let raw: Vec<f64> = values
            .iter()
            .flat_map(|&a| values.iter().flat_map(move |&b| [a, b]))
            .collect();
        for extra in [
            "",
            ", { name = 'c', lo = 1.0, hi = 5.0, transform = 'log1p' }",
        ] {
            let s = schema(extra);
            let p = s.features.len();
            let raw: Vec<f64> = raw
                .chunks(2)
                .flat_map(|r| [r[0], r[1], 2.0][..p].to_vec())
                .collect();
            assert_eq!(s.row_map().plain.is_some(), extra.is_empty());
            let got = block_matches_rows(&s, &raw);
            assert!(got.clipped > 0 && got.missing > 0 && got.projected > 0);
        }
    }

    #[test]
    fn grouped_rows_of_any_width_have_the_bits_of_one_row_at_a_time() {
        let values = [
            -5.0,
            -1.0,
            -0.25,
            0.0,
            0.5,
            1.0,
            1.75,
            2.0,
            9.0,
            f64::NAN,
            f64::INFINITY,
        ];
        for p in [1, 3, 5, 8, 20] {
            let features: Vec<String> = (0..p)
                .map(|j| format!("{{ name = 'f{j}', lo = -1.0, hi = {}.0 }}", j + 1))
                .collect();
            let text = format!(
                "name = 't'\nintercept = true\nlabel = {{ column = 'y', positive = '1', negative = '0' }}\n\
                 features = [{}]\n",
                features.join(", ")
            );
            let s = Schema::from_toml_str(&text, "t").expect("schema");
            // Whole groups of GROUP rows and a remainder of 5.
            let n = 3 * GROUP + 5;
            let raw: Vec<f64> = (0..n * p)
                .map(|i| values[(i * 7 + i / 3) % values.len()])
                .collect();
            assert!(s.row_map().plain.is_some());
            block_matches_rows(&s, &raw);
            assert_eq!(block_matches_rows(&s, &[]), RowsReport::default());
        }
    }
}
