//! Tests of Miura et al.'s (2022) bounds: the paper's Tables 1 and 2 cell by cell, independent
//! high-precision values of each term, edge cases, monotonicity and the curves.

use super::*;

/// Miura et al. 2022, Table 1 as printed (α = 4, d = 6, σ = 0.01, m = n): rows 秘匿 n 条件 and 公開 n 条件,
/// columns n = 10⁴, 10⁵, 10⁶, 10⁷.
const PAPER_TABLE_1: [[&str; 4]; 2] = [
    ["3535.17", "62.5859", "5.80644", "0.576462"],
    ["6806.72", "3263.22", "3205.81", "3200.58"],
];

/// Miura et al. 2022, Table 2 as printed (n private, d = 6, σ = 0.01, m = n): blocks n = 10⁶ and
/// 10⁷, rows α = 2, 4, 7, 10, columns δ = 10⁻², 10⁻³, 10⁻⁴, 10⁻⁵.
const PAPER_TABLE_2: [[[&str; 4]; 4]; 2] = [
    [
        ["7.49906", "9.80164", "12.1042", "14.4068"],
        ["7.34149", "8.10902", "8.8766", "9.64408"],
        ["10.9782", "11.3620", "11.7458", "12.1295"],
        ["15.1698", "15.4257", "15.6815", "15.9374"],
    ],
    [
        ["4.893309", "7.195894", "9.498479", "11.801064"],
        ["2.111518", "2.879047", "3.646575", "4.414104"],
        ["1.776821", "2.160585", "2.54435", "2.928114"],
        ["1.954226", "2.210069", "2.465912", "2.721754"],
    ],
];

/// Whether `value` rounds to the printed cell at the cell's own number of decimals (the value is
/// within half a unit of its last printed digit). Returns the rounded text for the message.
fn rounds_to(value: f64, printed: &str) -> (bool, String) {
    let decimals = printed.split_once('.').map_or(0, |(_, f)| f.len());
    let ours = format!("{value:.decimals$}");
    let printed_value: f64 = printed.parse().expect("a number");
    let half_unit = 0.5 * 10f64.powi(-(decimals as i32));
    let close = (value - printed_value).abs() <= half_unit;
    (ours == printed && close, ours)
}

#[test]
fn table_1_reproduces_every_printed_cell() {
    let table = table_1().expect("Table 1's settings are valid");
    let mut wrong = Vec::new();
    for (row, (ours, paper)) in [table.private_n, table.public_n]
        .iter()
        .zip(&PAPER_TABLE_1)
        .enumerate()
    {
        for (col, (&value, &printed)) in ours.iter().zip(paper).enumerate() {
            let (ok, text) = rounds_to(value, printed);
            if !ok {
                wrong.push(format!(
                    "row {row} col {col}: {value} ({text}) vs {printed}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "Table 1 cells differ: {wrong:#?}");
}

#[test]
fn table_2_reproduces_every_printed_cell() {
    let table = table_2().expect("Table 2's settings are valid");
    let mut wrong = Vec::new();
    let mut cells = 0;
    for (b, (block, paper_block)) in table.iter().zip(&PAPER_TABLE_2).enumerate() {
        for (r, (row, paper_row)) in block.iter().zip(paper_block).enumerate() {
            for (c, (&value, &printed)) in row.iter().zip(paper_row).enumerate() {
                cells += 1;
                let (ok, text) = rounds_to(value, printed);
                if !ok {
                    wrong.push(format!("n {b} α {r} δ {c}: {value} ({text}) vs {printed}"));
                }
            }
        }
    }
    assert_eq!(cells, 32);
    assert!(wrong.is_empty(), "Table 2 cells differ: {wrong:#?}");
}

#[test]
fn the_table_check_itself_catches_a_wrong_cell() {
    // The comparison rejects a value one unit off in the last printed digit, and a value that
    // would only match after a different rounding.
    assert!(rounds_to(3535.17, "3535.17").0);
    assert!(!rounds_to(3535.18, "3535.17").0);
    assert!(!rounds_to(3535.1751, "3535.17").0);
    assert!(rounds_to(8.876_550_55, "8.8766").0);
    assert!(!rounds_to(8.876_549, "8.8766").0);
    assert!(rounds_to(2.544_349_675_63, "2.54435").0);
    // Table 2 is Table 1 shifted by log(1/δ)/(α − 1): the cell α = 4, n = 10⁶, δ = 10⁻² minus
    // ln(100)/3 is Table 1's private-n cell at n = 10⁶.
    let t1 = table_1().expect("valid").private_n[2];
    let t2 = table_2().expect("valid")[0][1][0];
    assert!((t2 - 100f64.ln() / 3.0 - t1).abs() < 1e-12);
}

/// Relative agreement with a reference computed with mpmath at 60 digits.
fn assert_close(ours: f64, reference: f64, rel: f64, what: &str) {
    let err = (ours - reference).abs() / reference.abs();
    assert!(
        err <= rel,
        "{what}: {ours} vs {reference} (relative {err:e})"
    );
}

#[test]
fn each_bound_matches_a_high_precision_evaluation() {
    // (n, d, σ, α, ε_α1, ε_α2, Theorem 3.2's ε_α), per row: the formulas of Theorems 3.1 and 3.2
    // evaluated term by term in 60-digit arithmetic (mpmath), with no log1p tricks.
    let cases: [(u64, usize, f64, f64, f64, f64, f64); 6] = [
        (
            10_000,
            6,
            0.01,
            4.0,
            0.03126901030877307,
            0.3535171915335697,
            0.6806715933341497,
        ),
        (
            50,
            2,
            0.5,
            1.5,
            0.0254623496115454,
            0.0756833407255551,
            1.05385390804214,
        ),
        (
            1000,
            3,
            0.2,
            7.5,
            0.005102063628168876,
            0.010294642427230046,
            0.07991732755491986,
        ),
        (
            1_000_000_000_000,
            6,
            0.01,
            4.0,
            5.76000595395456e-18,
            5.7600060460800005e-18,
            3.2000000057616e-9,
        ),
        (
            1_000_000_000_000,
            6,
            0.01,
            64.0,
            9.216008642697326e-17,
            9.21601055846411e-17,
            2.4380953303296097e-9,
        ),
        (
            20,
            1,
            1.0,
            1.01,
            0.00862832390242909,
            0.01417559781928568,
            19.444364523451227,
        ),
    ];
    for (n, d, sigma, alpha, add, remove, public) in cases {
        let t = theorem_3_1(n, d, sigma, alpha).expect("in range");
        let what = format!("n={n} d={d} σ={sigma} α={alpha}");
        assert_close(t.epsilon_add, add, 1e-10, &format!("ε_α1 {what}"));
        assert_close(t.epsilon_remove, remove, 1e-10, &format!("ε_α2 {what}"));
        assert_eq!(t.epsilon(), t.epsilon_add.max(t.epsilon_remove));
        let p = theorem_3_2(n, d, sigma, alpha).expect("in range");
        assert_close(p, public, 1e-10, &format!("Theorem 3.2 {what}"));
    }
}

#[test]
fn log1p_gap_is_accurate_on_both_sides_of_the_series_switch() {
    // α·log(1 + x) − log(1 + αx), 60-digit references.
    for (alpha, x, reference) in [
        (4.0, -1e-7, 6.000002000000629e-14),
        (1.5, 1e-3, 3.7437588940789624e-7),
        (64.0, 1e-4, 2.007305729270725e-5),
        (2.0, -0.004, 1.612890218662234e-5),
        (1024.0, 9e-6, 4.216672726421113e-5),
        (3.0, 0.2, 0.07696104113612834),
    ] {
        assert_close(
            log1p_gap(alpha, x),
            reference,
            1e-12,
            &format!("gap α={alpha} x={x}"),
        );
    }
    // Continuity across |αx| = 0.01.
    for (alpha, x) in [
        (2.0, 0.005),
        (2.0, -0.005),
        (100.0, 1e-4),
        (1.1, 0.01 / 1.1),
    ] {
        let below = log1p_gap(alpha, x * (1.0 - 1e-9));
        let above = log1p_gap(alpha, x * (1.0 + 1e-9));
        assert_close(below, above, 1e-7, &format!("switch α={alpha} x={x}"));
    }
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let ok = |r: Result<f64, MvnRdpError>| r.expect("valid");
    assert!(ok(theorem_3_2(100, 2, 0.5, 2.0)) > 0.0);
    assert_eq!(
        theorem_3_1(100, 0, 0.5, 2.0),
        Err(MvnRdpError::NoDimensions)
    );
    for n in [0, 1, 2] {
        assert_eq!(
            theorem_3_1(n, 2, 0.5, 2.0),
            Err(MvnRdpError::TooFewRecords { n, dim: 2 })
        );
        assert_eq!(
            theorem_3_2(n, 2, 0.5, 2.0),
            Err(MvnRdpError::TooFewRecords { n, dim: 2 })
        );
    }
    // n = d + 1 is the smallest n with a possibly non-singular covariance; there the theorems'
    // range of orders is empty (it is unless n exceeds about τ = 4d/σ).
    for alpha in [1.0001, 2.0] {
        match theorem_3_1(3, 2, 1.0, alpha) {
            Err(MvnRdpError::OrderOutOfRange { limit, .. }) => assert!(limit < 1.0),
            other => panic!("{other:?}"),
        }
    }
    assert!(theorem_3_1(9, 2, 1.0, 1.0001).is_ok());
    for sigma in [0.0, -0.1, 1.0 + 1e-12, 2.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            theorem_3_1(100, 2, sigma, 2.0),
            Err(MvnRdpError::InvalidSigma(_))
        ));
        assert!(matches!(
            MvnRdp::new(100, 2, sigma, 10, NRegime::Public),
            Err(MvnRdpError::InvalidSigma(_))
        ));
    }
    for alpha in [1.0, 0.5, -2.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            theorem_3_1(100, 2, 0.5, alpha),
            Err(MvnRdpError::InvalidOrder(_))
        ));
        assert!(matches!(
            theorem_3_2(100, 2, 0.5, alpha),
            Err(MvnRdpError::InvalidOrder(_))
        ));
        assert!(matches!(
            rdp_to_dp(1.0, alpha, 1e-5),
            Err(MvnRdpError::InvalidOrder(_))
        ));
    }
    for delta in [0.0, 1.0, -1e-5, 2.0, f64::NAN] {
        assert!(matches!(
            rdp_to_dp(1.0, 2.0, delta),
            Err(MvnRdpError::InvalidDelta(_))
        ));
        let r = MvnRdp::new(100, 2, 0.5, 10, NRegime::Private).expect("valid");
        assert!(matches!(
            r.dp_epsilon(2.0, delta),
            Err(MvnRdpError::InvalidDelta(_))
        ));
    }
    for rho in [-1.0, f64::NAN] {
        assert!(rdp_to_dp(rho, 2.0, 1e-5).is_err());
    }
    assert_eq!(
        MvnRdp::new(100, 2, 0.5, 0, NRegime::Private),
        Err(MvnRdpError::NoSamples)
    );
    // Errors print as one line.
    let e = theorem_3_1(10_000, 6, 0.01, 5.0).expect_err("beyond the limit");
    assert!(!e.to_string().contains('\n'), "{e}");
    assert!(e.to_string().contains("Theorem 3.1"), "{e}");
}

#[test]
fn orders_at_or_beyond_the_theorems_limits_are_refused() {
    // Table 1's n = 10⁴: Theorem 3.1 holds for α < 10⁸/(2400·10001 − 10⁴) ≈ 4.1646.
    let limit = theorem_3_1_order_limit(10_000, 6, 0.01).expect("valid");
    let expected = 1e8 / (2400.0 * 10_001.0 - 10_000.0);
    assert!((limit - expected).abs() < 1e-12 * expected);
    assert!(theorem_3_1(10_000, 6, 0.01, 4.0).is_ok());
    assert!(theorem_3_1(10_000, 6, 0.01, limit * (1.0 - 1e-9)).is_ok());
    for alpha in [limit, limit * (1.0 + 1e-12), 5.0, 1e4] {
        match theorem_3_1(10_000, 6, 0.01, alpha) {
            Err(MvnRdpError::OrderOutOfRange {
                theorem, limit: l, ..
            }) => {
                assert_eq!(theorem, "Theorem 3.1");
                assert_eq!(l, limit);
            }
            other => panic!("α = {alpha}: {other:?}"),
        }
    }
    // With a small τ the other bound, α < n + 1, is the binding one.
    let small = theorem_3_1_order_limit(10, 1, 1.0).expect("valid");
    assert_eq!(small, (100.0f64 / (4.0 * 11.0 - 10.0)).min(11.0));
    let n1 = theorem_3_1_order_limit(1_000_000_000, 1, 1.0).expect("valid");
    assert_eq!(n1, 1e18 / (4.0 * (1e9 + 1.0) - 1e9));
    // Theorem 3.2: α < n²/(τ(n − 1)).
    let limit = theorem_3_2_order_limit(10_000, 6, 0.01).expect("valid");
    assert!((limit - 1e8 / (2400.0 * 9999.0)).abs() < 1e-12 * limit);
    assert!(theorem_3_2(10_000, 6, 0.01, limit * (1.0 - 1e-9)).is_ok());
    assert!(matches!(
        theorem_3_2(10_000, 6, 0.01, limit),
        Err(MvnRdpError::OrderOutOfRange {
            theorem: "Theorem 3.2",
            ..
        })
    ));
    // Just below the limit the bound is finite, non-negative, and huge: it diverges there.
    let near = theorem_3_1(10_000, 6, 0.01, limit_3_1(10_000, 6, 0.01) * (1.0 - 1e-9))
        .expect("in range")
        .epsilon();
    assert!(near.is_finite() && near > 1e3, "{near}");
}

#[test]
fn bounds_are_finite_non_negative_and_monotone() {
    let eps = |n: u64, d: usize, sigma: f64, alpha: f64, regime: NRegime| {
        MvnRdp::new(n, d, sigma, 1, regime)
            .and_then(|r| r.epsilon(alpha))
            .ok()
    };
    for regime in [NRegime::Private, NRegime::Public] {
        for (d, sigma) in [(1, 1.0), (2, 0.3), (6, 0.01), (20, 0.05)] {
            for alpha in [1.01, 1.5, 2.0, 4.0, 10.0, 64.0, 1024.0] {
                // Decreasing in n (over n where the theorem applies), never NaN or negative.
                let mut previous: Option<f64> = None;
                let mut seen = 0;
                for k in 0..=60 {
                    let n = (10f64.powf(1.0 + f64::from(k) * 0.2)) as u64;
                    let Some(e) = eps(n, d, sigma, alpha, regime) else {
                        assert!(previous.is_none(), "the range of α only grows with n");
                        continue;
                    };
                    seen += 1;
                    assert!(
                        e.is_finite() && e >= 0.0,
                        "{regime} n={n} d={d} α={alpha}: {e}"
                    );
                    if let Some(p) = previous {
                        assert!(e <= p * (1.0 + 1e-12), "{regime} not decreasing at n={n}");
                    }
                    previous = Some(e);
                }
                assert!(seen > 0);
                // Increasing in d and decreasing in σ (τ = 4d/σ grows), at a large n.
                let n = 1_000_000;
                if let (Some(a), Some(b)) = (
                    eps(n, d, sigma, alpha, regime),
                    eps(n, d + 1, sigma, alpha, regime),
                ) {
                    assert!(a < b, "{regime} not increasing in d");
                }
                if let (Some(a), Some(b)) = (
                    eps(n, d, sigma, alpha, regime),
                    eps(n, d, sigma / 2.0, alpha, regime),
                ) {
                    assert!(a < b, "{regime} not decreasing in σ");
                }
            }
        }
    }
    // n = 10¹⁵: still accurate and positive (the d-terms come from the series).
    let t = theorem_3_1(1_000_000_000_000_000, 6, 0.01, 4.0).expect("valid");
    assert!(t.epsilon_add > 0.0 && t.epsilon_remove > 0.0);
    // Leading order of ε_α2 for large n: (ατ/2 + αd/4 + ατ(τ/2 − 1)/2)/n² (L₁, the d-terms and
    // the L₂ term) = (4800 + 6 + 5 755 200)/n² at α = 4, d = 6, τ = 2400.
    assert!((t.epsilon() * 1e30 - 5_760_006.0).abs() < 1.0, "{t:?}");
}

#[test]
fn composition_and_conversion() {
    let one = MvnRdp::new(100_000, 6, 0.01, 1, NRegime::Private).expect("valid");
    let many = MvnRdp::new(100_000, 6, 0.01, 1234, NRegime::Private).expect("valid");
    // Proposition 2.4: m rows cost m times one row.
    let (a, b) = (
        one.epsilon(3.0).expect("valid"),
        many.epsilon(3.0).expect("valid"),
    );
    assert!((b - 1234.0 * a).abs() <= 1e-12 * b);
    assert_eq!(
        one.row_epsilon(3.0),
        theorem_3_1(100_000, 6, 0.01, 3.0).map(|t| t.epsilon())
    );
    // Proposition 2.5 by hand, and ε decreasing in δ.
    assert_eq!(rdp_to_dp(1.0, 2.0, (-1.0f64).exp()).expect("valid"), 2.0);
    assert!((rdp_to_dp(0.5, 4.0, 1e-5).expect("valid") - (0.5 + 1e5f64.ln() / 3.0)).abs() < 1e-15);
    assert_eq!(rdp_to_dp(f64::INFINITY, 2.0, 1e-5), Ok(f64::INFINITY));
    let d = |delta| many.dp_epsilon(3.0, delta).expect("valid");
    assert!(d(1e-3) < d(1e-5) && d(1e-5) < d(1e-9));
    assert_eq!(
        d(1e-5),
        rdp_to_dp(many.epsilon(3.0).expect("valid"), 3.0, 1e-5).expect("valid")
    );
    // Relations.
    assert_eq!(many.relation(), NeighbourRelation::AddRemoveOne);
    assert_eq!(NRegime::from_public_n(true), NRegime::Public);
    assert_eq!(
        NRegime::from_public_n(true).relation(),
        NeighbourRelation::ReplaceOne
    );
}

#[test]
fn curves_hold_the_bound_below_the_limit_and_infinity_beyond() {
    for regime in [NRegime::Private, NRegime::Public] {
        let release = MvnRdp::new(10_000, 6, 0.01, 10_000, regime).expect("valid");
        let curve = release.default_curve().expect("valid");
        assert_eq!(curve.orders(), default_orders().as_slice());
        let limit = release.order_limit();
        let mut finite = 0;
        for (&alpha, &value) in curve.orders().iter().zip(curve.values()) {
            if alpha < limit {
                assert_eq!(Ok(value), release.epsilon(alpha), "{regime} α = {alpha}");
                finite += 1;
            } else {
                assert_eq!(value, f64::INFINITY, "{regime} α = {alpha}");
            }
        }
        assert!(finite > 0 && finite < curve.orders().len());
        // The ledger composes it like any other curve of the relation.
        let twice = curve.compose(&curve).expect("same orders");
        assert_eq!(twice, curve.self_compose(2));
        let bound = curve.epsilon(1e-5).expect("valid");
        assert!(bound.epsilon.is_finite() && bound.order < limit);
    }
    // Orders outside the accountant's range are refused, not silently dropped.
    let r = MvnRdp::new(10_000, 6, 0.01, 1, NRegime::Private).expect("valid");
    assert!(matches!(r.curve(&[1.0]), Err(MvnRdpError::InvalidOrder(_))));
    assert!(matches!(
        r.curve(&[]),
        Err(MvnRdpError::Accounting(AccountingError::NoOrders))
    ));
    assert!(matches!(
        r.curve(&[2e5]),
        Err(MvnRdpError::Accounting(AccountingError::InvalidOrder(_)))
    ));
}

#[test]
fn a_dataset_of_n_rows_also_answers_for_its_n_minus_1_row_neighbours() {
    let private = MvnRdp::new(10_000, 6, 0.01, 10_000, NRegime::Private).expect("valid");
    let paper = private.epsilon(4.0).expect("valid");
    let all = private.dataset_epsilon(4.0).expect("valid");
    let below = 10_000.0 * theorem_3_1(9_999, 6, 0.01, 4.0).expect("valid").epsilon();
    assert_eq!(all, paper.max(below));
    // Table 1's first cell becomes 3538.97 when the removal of a member is covered.
    assert_eq!(format!("{all:.2}"), "3538.97");
    assert!(all > paper);
    let curve = private.dataset_curve(&default_orders()).expect("valid");
    let paper_curve = private.default_curve().expect("valid");
    for (a, b) in curve.values().iter().zip(paper_curve.values()) {
        assert!(a >= b);
    }
    // Under n public the size never changes: nothing more to cover.
    let public = MvnRdp::new(10_000, 6, 0.01, 10_000, NRegime::Public).expect("valid");
    assert_eq!(public.dataset_epsilon(4.0), public.epsilon(4.0));
    // With n = d + 1 a removal leaves a singular covariance: not covered.
    let tight = MvnRdp::new(7, 6, 0.01, 1, NRegime::Private).expect("valid");
    assert_eq!(
        tight.dataset_epsilon(1.001),
        Err(MvnRdpError::RemovalOutsideDomain { n: 7, dim: 6 })
    );
}
