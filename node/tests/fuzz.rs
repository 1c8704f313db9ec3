//! Property tests of the node's configuration file (`dpagg-node serve --config node.toml`):
//! whatever the file holds, resolving it ends in a [`NodeConfig`] or a one-line
//! [`ConfigError`] that starts with the file's path, never a panic.
//!
//! What each property proves ([`CASES`] = 512 cases each):
//! - [`arbitrary_text_resolves_or_fails_on_one_line`]: random text (any Unicode, and text made
//!   of TOML's own characters) as the file, read with `read_toml` and resolved with
//!   `Settings::resolve` as `serve` does.
//! - [`near_valid_files_resolve_or_fail_on_one_line`]: files with every key of `Settings`
//!   (top level, `[access]`, `[policy]`), each usually well typed and plausible, otherwise any
//!   TOML value (huge and negative integers, NaN, ±inf, long or control-laden strings, arrays,
//!   tables), keys left out, unknown keys and random character edits; a configuration that
//!   resolves has a valid organisation id and a policy of finite, non-negative totals.

use clap::FromArgMatches;
use dpagg_node::config::{NodeConfig, Settings};
use dpagg_shared::cli::{ConfigError, read_toml};
use proptest::collection::vec;
use proptest::prelude::*;
use std::path::Path;

/// Cases per property: each writes one file and resolves it in well under a millisecond.
const CASES: u32 = 512;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    }
}

/// Resolves `text` as the node's configuration file, as `dpagg-node serve --config` does (the
/// tests set no DPAGG_* variable).
fn resolve(text: &str) -> (String, Result<NodeConfig, ConfigError>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("node.toml");
    std::fs::write(&path, text).expect("write");
    let p = path.to_str().expect("utf8").to_owned();
    let command = <Settings as clap::Args>::augment_args(clap::Command::new("node"));
    let matches = command
        .try_get_matches_from(["node", "--config", &p])
        .expect("parses");
    let settings = Settings::from_arg_matches(&matches).expect("settings");
    // The file alone, as the first step of resolve reads it.
    if let Err(e) = read_toml::<Settings>(Path::new(&p)) {
        check_error(&e, &p);
    }
    (p, settings.resolve(&matches))
}

fn check_error(e: &ConfigError, path: &str) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "multi-line error: {text:?}");
    assert!(
        text.starts_with(path),
        "error does not name {path}: {text:?}"
    );
}

fn check(text: &str) {
    let (path, result) = resolve(text);
    match result {
        Err(e) => check_error(&e, &path),
        Ok(c) => {
            assert!(!c.organisation_id.is_empty() && c.organisation_id.len() <= 64);
            let p = c.policy;
            assert!(
                p.epsilon_total.is_finite() && p.epsilon_total >= 0.0,
                "{p:?}"
            );
            assert!(p.delta_total.is_finite() && p.delta_total >= 0.0, "{p:?}");
            assert!(p.cap().is_finite(), "{p:?}");
        }
    }
}

/// Any TOML value, as text.
fn any_value() -> impl Strategy<Value = String> {
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
fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9.:_-]{0,12}",
        ".{0,16}",
        (any::<char>(), 0usize..5_000).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
    .prop_map(|s| toml_string(&s))
}

fn toml_string(s: &str) -> String {
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

/// `key = value`: usually `plausible`, one time in 40 any value, now and then left out (with
/// 16 keys, about half the files have every value well typed).
fn key(
    name: &'static str,
    plausible: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    prop_oneof![
        38 => plausible.prop_map(move |v| format!("{name} = {v}\n")),
        1 => any_value().prop_map(move |v| format!("{name} = {v}\n")),
        1 => Just(String::new()),
    ]
    .boxed()
}

fn number(range: std::ops::Range<f64>) -> impl Strategy<Value = String> {
    range.prop_map(|v| format!("{v:?}"))
}

fn boolean() -> impl Strategy<Value = String> {
    any::<bool>().prop_map(|b| b.to_string())
}

fn identities() -> impl Strategy<Value = String> {
    vec(
        prop_oneof![
            Just("\"*\"".to_owned()),
            "org-[a-z0-9]{1,6}".prop_map(|s| toml_string(&s))
        ],
        0..4,
    )
    .prop_map(|v| format!("[{}]", v.join(", ")))
}

fn near_valid_file() -> impl Strategy<Value = String> {
    let top = (
        key(
            "organisation_id",
            prop_oneof![
                6 => "[a-z][a-z0-9._-]{0,10}",
                1 => "[a-z]{65}",
                1 => ".{0,8}"
            ]
            .prop_map(|s| toml_string(&s)),
        ),
        key(
            "listen",
            prop_oneof![
                4 => Just("\"127.0.0.1:0\"".to_owned()),
                4 => Just("\"[::1]:50051\"".to_owned()),
                1 => Just("\"localhost:1\"".to_owned()),
                1 => "[0-9.:]{0,16}".prop_map(|s| toml_string(&s)),
            ],
        ),
        key("data", Just("\"a.csv\"".to_owned())),
        key("schema", Just("\"s.toml\"".to_owned())),
        key("state_dir", Just("\"state\"".to_owned())),
        prop_oneof![
            1 => key("identity", Just("\"federation/a\"".to_owned())),
            1 => key("insecure", boolean()),
            1 => (key("identity", Just("\"federation/a\"".to_owned())), key("insecure", boolean()))
                .prop_map(|(a, b)| a + &b),
        ],
    )
        .prop_map(|(a, b, c, d, e, f)| [a, b, c, d, e, f].concat());
    let access = (
        key("read", identities()),
        key("write", identities()),
        key(
            "publish_per_minute",
            (0u32..100).prop_map(|v| v.to_string()),
        ),
        key("reflection", boolean()),
    )
        .prop_map(|(a, b, c, d)| format!("[access]\n{a}{b}{c}{d}"));
    let policy = (
        key("epsilon_total", number(-1.0..20.0)),
        key("delta_total", number(-1e-5..1e-3)),
        key("max_epsilon_per_release", number(-1.0..5.0)),
        key("allow_remote_publish", boolean()),
        key("allow_unproven", boolean()),
    )
        .prop_map(|(a, b, c, d, e)| format!("[policy]\n{a}{b}{c}{d}{e}"));
    (
        top,
        proptest::option::weighted(0.8, access),
        proptest::option::weighted(0.9, policy),
        proptest::option::weighted(0.05, Just("colour = 1\n")),
    )
        .prop_map(|(top, access, policy, extra)| {
            format!(
                "{top}{}{}{}",
                extra.unwrap_or_default(),
                access.unwrap_or_default(),
                policy.unwrap_or_default()
            )
        })
}

/// `text` with a few random characters overwritten, inserted or removed.
fn edited(text: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
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

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_resolves_or_fails_on_one_line(
        text in prop_oneof![".{0,400}", "[a-z_\\[\\]=\" .0-9\n]{0,400}"]
    ) {
        check(&text);
    }

    #[test]
    fn near_valid_files_resolve_or_fail_on_one_line(
        text in prop_oneof![4 => near_valid_file(), 1 => edited(near_valid_file())]
    ) {
        check(&text);
    }
}
