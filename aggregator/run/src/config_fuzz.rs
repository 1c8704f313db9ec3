//! Property tests of `dpagg-aggregator run`'s configuration file (here, since the aggregator is a
//! binary crate): whatever the file holds, resolving it ends in a [`RunConfig`] or a one-line
//! [`ConfigError`] that starts with the file's path, never a panic.
//!
//! What each property proves ([`config_fuzz::CASES`] cases each):
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
use dpagg_shared::cli::config_fuzz::{
    self, arbitrary_text, boolean, check_one_line_error, config, edited, integer,
    number_or_odd as number, string, toml_string,
};
use dpagg_shared::cli::{ConfigError, read_toml};
use proptest::collection::vec;
use proptest::prelude::*;
use std::path::Path;

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
        check_one_line_error(&e, &p);
    }
    (p, settings.resolve(&matches))
}

fn check(text: &str) {
    let (path, result) = resolve(text);
    match result {
        Err(e) => check_one_line_error(&e, &path),
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

/// `key = value`: usually `plausible`, one time in 60 any value, now and then left out (with
/// about 28 keys, about half the files have every value well typed).
fn key(
    name: &'static str,
    plausible: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    config_fuzz::key(name, 58, plausible)
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

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_resolves_or_fails_on_one_line(
        text in arbitrary_text()
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
