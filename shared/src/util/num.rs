//! [`Num`]: a number as people read it in errors, statuses and the ledger.
//!
//! Rust's `{}` prints every digit of an `f64` (`1e308` becomes a 309-digit decimal), which is
//! unreadable in a status line and can push a gRPC status past its metadata limit. `Num` prints
//! the shortest text that reads back as the same `f64`: plain decimals for magnitudes in
//! [10⁻⁴, 10¹⁵), scientific notation outside it.

use std::fmt;

/// Displays an `f64` exactly (it parses back to the same bits) and briefly.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Num(pub f64);

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        let plain = x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&x.abs());
        if plain {
            write!(f, "{x}")
        } else {
            write!(f, "{x:e}")
        }
    }
}

/// `x` rounded to `digits` decimals when that is short, otherwise [`Num`] (for spent budgets,
/// which the ledger shows to 6 decimals).
pub fn fixed(x: f64, digits: usize) -> String {
    if x == 0.0 {
        // −0.0 (e.g. an RDP conversion that rounds to zero) prints as 0, not "-0.000000".
        format!("{:.digits$}", 0.0)
    } else if !x.is_finite() || (1e-4..1e15).contains(&x.abs()) {
        format!("{x:.digits$}")
    } else {
        Num(x).to_string()
    }
}

/// `x` to 4 significant digits, trailing zeros dropped (`1.9999999999999998` → `2`,
/// `6.000000000000001e-6` → `6e-6`): for budgets in messages a person reads, where [`Num`]'s
/// exactness is noise.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Short(pub f64);

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = self.0;
        if x == 0.0 || !x.is_finite() {
            return write!(f, "{}", if x == 0.0 { 0.0 } else { x });
        }
        let rounded: f64 = format!("{x:.3e}").parse().unwrap_or(x);
        if (1e-4..1e15).contains(&rounded.abs()) {
            write!(f, "{rounded}")
        } else {
            write!(f, "{rounded:e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extremes_are_short_and_exact() {
        for (x, text) in [
            (1e308, "1e308"),
            (1e-300, "1e-300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e308"),
            (-2.5e20, "-2.5e20"),
            (0.0, "0"),
            (1.0, "1"),
            (0.01, "0.01"),
            (12345.5, "12345.5"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(Num(x).to_string(), text);
            if x.is_finite() {
                assert_eq!(text.parse::<f64>().expect("parses"), x);
            }
        }
    }

    #[test]
    fn short_rounds_to_four_significant_digits() {
        for (x, text) in [
            (1.9999999999999998, "2"),
            (6.000000000000001e-6, "6e-6"),
            (1.2345678, "1.235"),
            (0.5, "0.5"),
            (-0.0, "0"),
            (12346.0, "12350"),
            (1e-5, "1e-5"),
            (f64::INFINITY, "inf"),
        ] {
            assert_eq!(Short(x).to_string(), text, "{x}");
        }
    }

    #[test]
    fn fixed_keeps_ordinary_numbers_at_their_digits() {
        assert_eq!(fixed(1.0, 6), "1.000000");
        assert_eq!(fixed(0.0, 6), "0.000000");
        assert_eq!(fixed(-0.0, 6), "0.000000");
        assert_eq!(fixed(1e308, 6), "1e308");
        assert_eq!(fixed(1e-300, 6), "1e-300");
    }
}
