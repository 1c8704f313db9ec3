//! Property-test support for the tools' configuration files (cargo feature `config-fuzz`, used
//! by the tests of `dpagg-node` and `dpagg-aggregator` only): the TOML strategies both fuzz
//! tests draw their files from, and the one-line error check both apply.
//!
//! A tool's test writes `near_valid_file()` from [`key`]s of its own settings, each usually a
//! plausible value and now and then [`any_value`] (huge and negative integers, NaN, ±inf, long
//! or control-laden strings, arrays, tables) or left out, mixes in [`edited`] copies and
//! [`arbitrary_text`], and checks that resolving ends in a configuration or in a
//! [`check_one_line_error`]-clean error — never a panic.

use super::ConfigError;
use proptest::collection::vec;
use proptest::prelude::*;

/// Cases per property: each writes one file and resolves it in well under a millisecond.
pub const CASES: u32 = 512;

/// The proptest configuration of the configuration-file properties ([`CASES`] cases).
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    }
}

/// Random text as a whole file: any Unicode, or text made of TOML's own characters.
pub fn arbitrary_text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,400}", "[a-z_\\[\\]=\" .0-9\n]{0,400}"]
}

/// Fails unless `e` is one line that starts with the file's `path`.
pub fn check_one_line_error(e: &ConfigError, path: &str) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "multi-line error: {text:?}");
    assert!(
        text.starts_with(path),
        "error does not name {path}: {text:?}"
    );
}

/// Any TOML value, as text.
pub fn any_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|v| v.to_string()),
        Just("18446744073709551616".to_owned()),
        Just("-1".to_owned()),
        prop_oneof![
            Just("nan"),
            Just("inf"),
            Just("-inf"),
            Just("-0.0"),
            Just("1e308"),
            Just("5e-324")
        ]
        .prop_map(str::to_owned),
        any::<f64>()
            .prop_filter("finite", |v| v.is_finite())
            .prop_map(|v| format!("{v:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        string(),
        vec(string(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
        Just("{ a = 1 }".to_owned()),
        Just("1979-05-27T07:32:00Z".to_owned()),
    ]
}

/// A TOML basic string of odd content.
pub fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9.:_-]{0,12}",
        ".{0,16}",
        (any::<char>(), 0usize..5_000).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
    .prop_map(|s| toml_string(&s))
}

/// `s` as a TOML basic string, quotes, backslashes and control characters escaped.
pub fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `name = value`: `plausible` `weight` times in `weight + 2`, otherwise [`any_value`] or left
/// out. A file of k keys has every value well typed with probability about
/// (weight/(weight + 2))^k: choose the weight so that about half the files do.
pub fn key(
    name: &'static str,
    weight: u32,
    plausible: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    prop_oneof![
        weight => plausible.prop_map(move |v| format!("{name} = {v}\n")),
        1 => any_value().prop_map(move |v| format!("{name} = {v}\n")),
        1 => Just(String::new()),
    ]
    .boxed()
}

/// A finite number in `range`, written as TOML.
pub fn number(range: std::ops::Range<f64>) -> BoxedStrategy<String> {
    range.prop_map(|v| format!("{v:?}")).boxed()
}

/// [`number`], or one time in 21 NaN, inf or −0.0.
pub fn number_or_odd(range: std::ops::Range<f64>) -> BoxedStrategy<String> {
    prop_oneof![
        20 => number(range),
        1 => prop_oneof![Just("nan"), Just("inf"), Just("-0.0")].prop_map(str::to_owned),
    ]
    .boxed()
}

/// An integer in `0..end`, or now and then −1 (which unsigned settings refuse).
pub fn integer(end: i64) -> impl Strategy<Value = String> {
    prop_oneof![30 => 0..end, 1 => Just(-1)].prop_map(|v| v.to_string())
}

/// `true` or `false`.
pub fn boolean() -> impl Strategy<Value = String> {
    any::<bool>().prop_map(|b| b.to_string())
}

/// `text` with a few random characters overwritten, inserted or removed.
pub fn edited(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
    (
        text,
        vec((any::<prop::sample::Index>(), any::<char>(), 0u8..3), 1..6),
    )
        .prop_map(|(text, edits)| {
            let mut chars: Vec<char> = text.chars().collect();
            for (at, c, op) in edits {
                match op {
                    0 if !chars.is_empty() => {
                        let i = at.index(chars.len());
                        chars[i] = c;
                    }
                    1 if !chars.is_empty() => {
                        chars.remove(at.index(chars.len()));
                    }
                    _ => chars.insert(at.index(chars.len() + 1), c),
                }
            }
            chars.into_iter().collect()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn toml_strings_escape_what_toml_needs_escaped() {
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000A\"");
        let parsed: toml::Value =
            toml::from_str(&format!("k = {}", toml_string("x\u{1}\"\\"))).expect("valid TOML");
        assert_eq!(parsed["k"].as_str(), Some("x\u{1}\"\\"));
    }

    #[test]
    fn a_key_is_plausible_mostly_and_sometimes_odd_or_missing() {
        let mut runner = TestRunner::deterministic();
        let strategy = key("epsilon", 8, Just("1.0".to_owned()));
        let drawn: Vec<String> = (0..500)
            .map(|_| strategy.new_tree(&mut runner).expect("tree").current())
            .collect();
        let plausible = drawn.iter().filter(|l| *l == "epsilon = 1.0\n").count();
        let missing = drawn.iter().filter(|l| l.is_empty()).count();
        assert!((350..480).contains(&plausible), "{plausible}");
        assert!(missing > 5 && plausible + missing < 500, "{missing}");
    }
}
