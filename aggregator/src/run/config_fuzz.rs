//! Property tests of `dpagg-aggregator run`'s configuration file (here, since the aggregator is a
//! binary crate): whatever the file holds, resolving it ends in a [`RunConfig`] or a one-line
//! [`ConfigError`] that starts with the file's path, never a panic.
//!
//! What each property proves ([`CASES`] = 512 cases each):
//! - [`arbitrary_text_resolves_or_fails_on_one_line`]: random text (any Unicode, and text made of
//!   TOML's own characters) as the file, read with `read_toml` and resolved with
//!   `Settings::resolve` as `run --config` does.
//! - [`near_valid_files_resolve_or_fail_on_one_line`]: files with every key of `Settings` (TLS
//!   or plain text, with the node scheme to match most of the time), each usually well typed
//!   and plausible, otherwise any TOML value (huge and negative integers, NaN,
//!   ±inf, long or control-laden strings, arrays, tables), keys left out, unknown keys and random
//!   character edits; a configuration that resolves asks for a finite ε > 0 and δ in [0, 1),
//!   speaks the scheme its security says to every node, and has β > 0, a timeout, a concurrency
//!   and a learner minimum of at least 1.

use super::config::{LearnerRequest, RunConfig, Security, Settings};
use clap::FromArgMatches;
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

/// Resolves `text` as the configuration file of `run` (the tests set no DPAGG_AGG_* variable).
fn resolve(text: &str) -> (String, Result<RunConfig, ConfigError>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("aggregator.toml");
    std::fs::write(&path, text).expect("write");
    let p = path.to_str().expect("utf8").to_owned();
    let command = <Settings as clap::Args>::augment_args(clap::Command::new("run"));
    let matches = command
        .try_get_matches_from(["run", "--config", &p])
        .expect("parses");
    let settings = Settings::from_arg_matches(&matches).expect("settings");
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
            let scheme = match c.security {
                Security::Tls { .. } => "https://",
                Security::Insecure { .. } => "http://",
            };
            assert!(!c.nodes.is_empty() && c.nodes.iter().all(|n| n.starts_with(scheme)));
            if let LearnerRequest::Spec { spec, .. } = &c.request {
                assert!(spec.epsilon.is_finite() && spec.epsilon > 0.0, "{spec:?}");
                assert!((0.0..1.0).contains(&spec.delta), "{spec:?}");
            }
            assert!(c.beta.is_finite() && c.beta > 0.0);
            assert!(c.accept.min_learners >= 1 && c.network.concurrency >= 1);
            assert!(!c.network.timeout.is_zero());
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

/// `key = value`: usually `plausible`, one time in 60 any value, now and then left out (with
/// about 28 keys, about half the files have every value well typed).
fn key(
    name: &'static str,
    plausible: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    prop_oneof![
        58 => plausible.prop_map(move |v| format!("{name} = {v}\n")),
        1 => any_value().prop_map(move |v| format!("{name} = {v}\n")),
        1 => Just(String::new()),
    ]
    .boxed()
}

/// A key that is usually left out (it has a default, or conflicts with another).
fn rare(
    name: &'static str,
    plausible: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    prop_oneof![
        4 => Just(String::new()),
        1 => key(name, plausible),
    ]
    .boxed()
}

fn number(range: std::ops::Range<f64>) -> BoxedStrategy<String> {
    prop_oneof![
        20 => range.prop_map(|v| format!("{v:?}")),
        1 => prop_oneof![Just("nan"), Just("inf"), Just("-0.0")].prop_map(str::to_owned),
    ]
    .boxed()
}

/// An integer in `0..end`, or now and then −1 (which the unsigned settings refuse).
fn integer(end: i64) -> impl Strategy<Value = String> {
    prop_oneof![30 => 0..end, 1 => Just(-1)].prop_map(|v| v.to_string())
}

fn boolean() -> impl Strategy<Value = String> {
    any::<bool>().prop_map(|b| b.to_string())
}

fn near_valid_file() -> impl Strategy<Value = String> {
    // TLS or plain text, each usually with the matching node scheme and keys.
    let security = any::<bool>().prop_flat_map(|tls| {
        let (good, bad) = if tls {
            ("https://node-a:50051", "http://127.0.0.1:50051")
        } else {
            ("http://127.0.0.1:50051", "https://node-a:50051")
        };
        let nodes = vec(
            prop_oneof![
                12 => Just(good.to_owned()),
                1 => Just(bad.to_owned()),
                1 => "[a-z:/.0-9]{0,20}",
            ],
            0..4usize,
        )
        .prop_map(|v| {
            let v: Vec<String> = v.iter().map(|s| toml_string(s)).collect();
            format!("[{}]", v.join(", "))
        });
        let keys = if tls {
            (
                key("identity", Just("\"fed/aggregator\"".to_owned())),
                rare("insecure", Just("false".to_owned())),
            )
                .boxed()
        } else {
            (
                rare("identity", Just("\"fed/aggregator\"".to_owned())),
                key(
                    "insecure",
                    prop_oneof![12 => Just("true".to_owned()), 1 => boolean()],
                ),
            )
                .boxed()
        };
        (key("nodes", nodes), keys).prop_map(|(n, (i, s))| format!("{n}{i}{s}"))
    });
    let options = (
        proptest::sample::subsequence(vec!["steps", "clip_norm", "output_fraction", "x"], 0..3),
        vec(number(-1.0..1e3), 3),
    )
        .prop_map(|(names, values)| {
            let entries: Vec<String> = names
                .iter()
                .zip(values)
                .map(|(k, x)| format!("{k} = {x}"))
                .collect();
            format!("{{ {} }}", entries.join(", "))
        });
    let paths = (
        key("data", Just("\"own.csv\"".to_owned())),
        key("schema", Just("\"s.toml\"".to_owned())),
        security,
        rare("out", Just("\"report\"".to_owned())),
        rare("signing_keys", Just("\"fed/public-keys\"".to_owned())),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e].concat());
    let request = (
        rare("latest", boolean()),
        key(
            "mechanism",
            prop_oneof![
                Just("\"objective-perturbation\"".to_owned()),
                Just("\"dp-sgd\"".to_owned()),
                string()
            ],
        ),
        key("epsilon", number(-1.0..10.0)),
        key("delta", number(-1e-3..1.5)),
        key(
            "lambda",
            prop_oneof![5 => Just("\"auto\"".to_owned()), 5 => number(-1.0..1.0), 1 => string()],
        ),
        rare("publish", boolean()),
        rare("options", options),
    )
        .prop_map(|(a, b, c, d, e, f, g)| [a, b, c, d, e, f, g].concat());
    let accept = (
        key("max_epsilon", number(-1.0..10.0)),
        key("max_delta", number(-1e-3..1.5)),
        rare("schema_must_match", boolean()),
        rare("allow_seeded", boolean()),
        rare("allow_unproven", boolean()),
        rare("require_noise_as_sampled", boolean()),
        key("min_learners", integer(5)),
    )
        .prop_map(|(a, b, c, d, e, f, g)| [a, b, c, d, e, f, g].concat());
    let network = (
        key("timeout_ms", integer(100_000)),
        key("retries", integer(10)),
        key("backoff_ms", integer(10_000)),
        key("concurrency", integer(100)),
        key("beta", number(-1.0..10.0)),
        key("seed", integer(1_000)),
        rare("test_fraction", number(-0.5..1.5)),
        rare("test_file", Just("\"test.csv\"".to_owned())),
    )
        .prop_map(|(a, b, c, d, e, f, g, h)| [a, b, c, d, e, f, g, h].concat());
    (
        paths,
        request,
        accept,
        network,
        proptest::option::weighted(0.03, Just("nodez = []\n")),
    )
        .prop_map(|(a, b, c, d, extra)| format!("{a}{b}{c}{d}{}", extra.unwrap_or_default()))
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
