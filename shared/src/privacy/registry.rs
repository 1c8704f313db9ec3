//! What the registries of mechanisms ([`super::mechanism`]) and data kinds
//! ([`super::data_release`]) share: typed options ([`OptionSpec`]: name, default, range,
//! meaning) and the generated tables of `docs/mechanisms.md`.
//!
//! Both registries are lists of files, each declaring const metadata about itself; the options a
//! user gives (`--option name=value`, the wire's maps) are checked against the declared
//! [`OptionType`] with a one-line error naming the option ([`OptionSpec::check`]). The tables of
//! `docs/mechanisms.md` are generated from the same metadata ([`options_cell`] for their options
//! column) and kept between marker comments ([`generated_block`], [`replace_generated`]), so a
//! test fails when the page and the registry differ.

use crate::util::num::Num;
use std::fmt;

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptionType {
    /// A real number in an interval: `low` < v (or ≤ with `low_closed`) and v < `high` (or ≤
    /// with `high_closed`).
    Real {
        /// Lower end.
        low: f64,
        /// Whether `low` itself is allowed.
        low_closed: bool,
        /// Upper end (may be +∞).
        high: f64,
        /// Whether `high` itself is allowed.
        high_closed: bool,
    },
    /// A whole number ≥ 1.
    Count,
    /// A whole number in [`low`, `high`].
    Whole {
        /// Smallest value.
        low: u64,
        /// Largest value.
        high: u64,
    },
}

impl OptionType {
    /// A real in (0, ∞).
    pub const POSITIVE: OptionType = OptionType::open_closed(0.0, f64::INFINITY);

    /// A real in [0, ∞): 0 usually stands for a value derived from public quantities.
    pub const NON_NEGATIVE: OptionType = OptionType::Real {
        low: 0.0,
        low_closed: true,
        high: f64::INFINITY,
        high_closed: false,
    };

    /// A real in (`low`, `high`].
    pub const fn open_closed(low: f64, high: f64) -> Self {
        Self::Real {
            low,
            low_closed: false,
            high,
            high_closed: high.is_finite(),
        }
    }

    /// A real in (`low`, `high`).
    pub const fn open(low: f64, high: f64) -> Self {
        Self::Real {
            low,
            low_closed: false,
            high,
            high_closed: false,
        }
    }

    /// Whether `v` is in range.
    pub fn contains(self, v: f64) -> bool {
        match self {
            Self::Real {
                low,
                low_closed,
                high,
                high_closed,
            } => (v > low || (low_closed && v == low)) && (v < high || (high_closed && v == high)),
            Self::Count => Self::Whole {
                low: 1,
                high: u64::MAX,
            }
            .contains(v),
            Self::Whole { low, high } => {
                v.is_finite() && v.fract() == 0.0 && v >= low as f64 && v <= high as f64
            }
        }
    }

    /// Values just outside the range, for tests that a declared range is the one enforced: NaN,
    /// a value below the lower end and one above a finite upper end (and a fraction for whole
    /// numbers).
    #[cfg(test)]
    pub(crate) fn just_outside(self) -> Vec<f64> {
        match self {
            Self::Count => vec![0.0, 1.5, f64::NAN],
            Self::Whole { low, high } => {
                vec![
                    low as f64 - 1.0,
                    high as f64 + 1.0,
                    low as f64 + 0.5,
                    f64::NAN,
                ]
            }
            Self::Real {
                low,
                low_closed,
                high,
                high_closed,
            } => {
                let mut v = vec![f64::NAN, if low_closed { low - 1e-9 } else { low }];
                if high.is_finite() {
                    v.push(if high_closed { high + 1e-9 } else { high });
                }
                v
            }
        }
    }

    /// What a value must be, after "must be" (`in (0, 1]`, `a whole number ≥ 1`).
    pub fn requirement(self) -> String {
        match self {
            Self::Real { .. } => format!("in {self}"),
            Self::Count | Self::Whole { .. } => self.to_string(),
        }
    }
}

impl fmt::Display for OptionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Real {
                low,
                low_closed,
                high,
                high_closed,
            } => {
                let (open, close) = (
                    if low_closed { '[' } else { '(' },
                    if high_closed { ']' } else { ')' },
                );
                let num = |v: f64| {
                    if v.is_infinite() {
                        "∞".to_owned()
                    } else {
                        Num(v).to_string()
                    }
                };
                write!(f, "{open}{}, {}{close}", num(low), num(high))
            }
            Self::Count => f.write_str("a whole number ≥ 1"),
            Self::Whole { low, high } => write!(f, "a whole number in [{low}, {high}]"),
        }
    }
}

/// One option a mechanism or data kind takes: name, default, range and meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptionSpec {
    /// Its name.
    pub name: &'static str,
    /// The value used when it is not given.
    pub default: f64,
    /// The values it takes (others are refused before anything is computed).
    pub range: OptionType,
    /// What it means.
    pub help: &'static str,
}

impl OptionSpec {
    /// Checks a given value against the range, with a one-line error naming the option.
    pub fn check(&self, value: f64) -> Result<(), String> {
        if self.range.contains(value) {
            Ok(())
        } else {
            Err(format!(
                "option `{}` = {} must be {}",
                self.name,
                Num(value),
                self.range.requirement()
            ))
        }
    }
}

/// A registered mechanism's or data kind's row in a table of `docs/mechanisms.md`, beside
/// what the table takes from the registration itself (name, options, neighbour relation).
#[derive(Debug, Clone, Copy)]
pub struct DocRow {
    /// What it does or releases: paper, algorithm, noise, and where its proof is.
    pub what: &'static str,
    /// Its guarantee, in words (`ε-DP or (ε, δ)-DP`).
    pub guarantee: &'static str,
    /// Said after the options with their defaults (a cap, how an option is read); may be empty.
    pub options_note: &'static str,
}

/// The options column of a generated table: each option with its default (`` `steps` (200) ``),
/// or `—` for none, then `note` when there is one.
pub fn options_cell(options: &[OptionSpec], note: &str) -> String {
    let list: Vec<String> = options
        .iter()
        .map(|o| {
            let default = if o.default.fract() == 0.0 && o.default.abs() >= 1e6 {
                format!("{:e}", o.default)
            } else {
                Num(o.default).to_string()
            };
            format!("`{}` ({default})", o.name)
        })
        .collect();
    let list = if list.is_empty() {
        "—".to_owned()
    } else {
        list.join(", ")
    };
    if note.is_empty() {
        list
    } else {
        format!("{list} {note}")
    }
}

/// A Markdown table: the header, its rule, and one line per row of cells.
pub fn markdown_table(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut out = line(&header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in rows {
        out.push_str(&line(&row));
    }
    out
}

/// The comment that opens a generated block of a Markdown page (`name`: which block).
fn start_marker(name: &str) -> String {
    format!("<!-- generated: {name} -->\n")
}

/// The comment that closes every generated block.
const END_MARKER: &str = "<!-- end generated -->";

/// The text between the markers of block `name` in `page` (`None` when the markers are absent).
pub fn generated_block<'a>(page: &'a str, name: &str) -> Option<&'a str> {
    let start = page.find(&start_marker(name))? + start_marker(name).len();
    let len = page[start..].find(END_MARKER)?;
    Some(&page[start..start + len])
}

/// `page` with block `name` replaced by `block` (`None` when the markers are absent).
pub fn replace_generated(page: &str, name: &str, block: &str) -> Option<String> {
    let old = generated_block(page, name)?;
    let start = old.as_ptr() as usize - page.as_ptr() as usize;
    Some(format!(
        "{}{block}{}",
        &page[..start],
        &page[start + old.len()..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_print_and_check_with_the_option_named() {
        let bins = OptionSpec {
            name: "bins",
            default: 10.0,
            range: OptionType::Whole { low: 1, high: 1000 },
            help: "",
        };
        assert!(bins.check(10.0).is_ok());
        for bad in [0.0, 1000.5, 1001.0, f64::NAN] {
            let e = bins.check(bad).expect_err("outside");
            assert!(e.starts_with("option `bins` = "), "{e}");
            assert!(e.ends_with("must be a whole number in [1, 1000]"), "{e}");
        }
        let sigma = OptionSpec {
            name: "sigma",
            default: 0.01,
            range: OptionType::open_closed(0.0, 1.0),
            help: "",
        };
        assert_eq!(
            sigma.check(2.0).expect_err("outside"),
            "option `sigma` = 2 must be in (0, 1]"
        );
        assert!(OptionType::NON_NEGATIVE.contains(0.0));
        assert!(!OptionType::NON_NEGATIVE.contains(f64::INFINITY));
        assert!(!OptionType::Count.contains(0.0) && OptionType::Count.contains(3.0));
        assert_eq!(
            options_cell(&[sigma, bins], ""),
            "`sigma` (0.01), `bins` (10)"
        );
        assert_eq!(options_cell(&[], "(n ≥ 2)"), "— (n ≥ 2)");
        let steps = OptionSpec {
            default: 1e9,
            ..bins
        };
        assert_eq!(options_cell(&[steps], ""), "`bins` (1e9)");
    }

    #[test]
    fn generated_blocks_are_found_and_replaced() {
        let page = "a\n<!-- generated: t -->\nold\n<!-- end generated -->\nb\n";
        assert_eq!(generated_block(page, "t"), Some("old\n"));
        assert_eq!(generated_block(page, "u"), None);
        assert_eq!(
            replace_generated(page, "t", "new\n").as_deref(),
            Some("a\n<!-- generated: t -->\nnew\n<!-- end generated -->\nb\n")
        );
    }
}
