//! Miura et al.'s (2022) Tables 1–2 recomputed from the theorems of [`super`] (d = 6, σ = 0.01, the
//! Adult setting of §3.2); `tests.rs` checks every cell against the printed values.

use super::{MvnRdp, MvnRdpError, NRegime};

/// d of Miura et al.'s (2022) Tables 1–2: the six numerical attributes of the Adult dataset (§3.2).
pub const TABLE_DIM: usize = 6;
/// σ of Miura et al.'s (2022) Tables 1–2: half the smallest eigenvalue 0.02 observed on Adult
/// (§3.2).
pub const TABLE_SIGMA: f64 = 0.01;
/// The order α of Miura et al.'s (2022) Table 1.
pub const TABLE_1_ORDER: f64 = 4.0;
/// The columns n of Miura et al.'s (2022) Table 1 (m = n rows are released).
pub const TABLE_1_N: [u64; 4] = [10_000, 100_000, 1_000_000, 10_000_000];
/// The two blocks n of Miura et al.'s (2022) Table 2 (m = n rows, n private).
pub const TABLE_2_N: [u64; 2] = [1_000_000, 10_000_000];
/// The rows α of each block of Miura et al.'s (2022) Table 2.
pub const TABLE_2_ORDERS: [f64; 4] = [2.0, 4.0, 7.0, 10.0];
/// The columns δ of Miura et al.'s (2022) Table 2.
pub const TABLE_2_DELTAS: [f64; 4] = [1e-2, 1e-3, 1e-4, 1e-5];

/// Miura et al. 2022, Table 1: the RDP ε at α = 4 of releasing m = n rows (d = 6, σ = 0.01), one
/// entry per n of [`TABLE_1_N`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Table1 {
    /// Row 秘匿 n 条件: n·ε_α of Theorem 3.1 (add/remove-one).
    pub private_n: [f64; 4],
    /// Row 公開 n 条件: n·ε_α of Theorem 3.2 (replace-one).
    pub public_n: [f64; 4],
}

/// Computes Miura et al. 2022, Table 1 ([`Table1`]): [`MvnRdp::epsilon`] at α = [`TABLE_1_ORDER`]
/// with d = [`TABLE_DIM`], σ = [`TABLE_SIGMA`], m = n for each n of [`TABLE_1_N`].
pub fn table_1() -> Result<Table1, MvnRdpError> {
    let mut table = Table1 {
        private_n: [0.0; 4],
        public_n: [0.0; 4],
    };
    for (i, &n) in TABLE_1_N.iter().enumerate() {
        for (regime, cell) in [
            (NRegime::Private, &mut table.private_n[i]),
            (NRegime::Public, &mut table.public_n[i]),
        ] {
            *cell = MvnRdp::new(n, TABLE_DIM, TABLE_SIGMA, n, regime)?.epsilon(TABLE_1_ORDER)?;
        }
    }
    Ok(table)
}

/// Computes Miura et al. 2022, Table 2: the ε of (ε, δ)-DP (Proposition 2.5) of releasing m = n
/// rows under n private (Theorem 3.1), d = [`TABLE_DIM`], σ = [`TABLE_SIGMA`]; indexed
/// `[block][row][column]` by n ∈ [`TABLE_2_N`], α ∈ [`TABLE_2_ORDERS`], δ ∈ [`TABLE_2_DELTAS`].
pub fn table_2() -> Result<[[[f64; 4]; 4]; 2], MvnRdpError> {
    let mut table = [[[0.0; 4]; 4]; 2];
    for (block, &n) in table.iter_mut().zip(&TABLE_2_N) {
        let release = MvnRdp::new(n, TABLE_DIM, TABLE_SIGMA, n, NRegime::Private)?;
        for (row, &alpha) in block.iter_mut().zip(&TABLE_2_ORDERS) {
            for (cell, &delta) in row.iter_mut().zip(&TABLE_2_DELTAS) {
                *cell = release.dp_epsilon(alpha, delta)?;
            }
        }
    }
    Ok(table)
}
