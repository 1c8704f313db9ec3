//! Property tests of the node's configuration file (`dpagg-node serve --config node.toml`):
//! whatever the file holds, resolving it ends in a [`NodeConfig`] or a one-line
//! [`ConfigError`] that starts with the file's path, never a panic.
//!
//! What each property proves ([`config_fuzz::CASES`] cases each):
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
use dpagg_shared::cli::config_fuzz::{
    self, arbitrary_text, boolean, check_one_line_error, config, edited, number, toml_string,
};
use dpagg_shared::cli::{ConfigError, read_toml};
use proptest::collection::vec;
use proptest::prelude::*;
use std::path::Path;

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
        check_one_line_error(&e, &p);
    }
    (p, settings.resolve(&matches))
}

fn check(text: &str) {
    let (path, result) = resolve(text);
    match result {
        Err(e) => check_one_line_error(&e, &path),
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

/// `key = value`: usually `plausible`, one time in 40 any value, now and then left out (with
/// 16 keys, about half the files have every value well typed).
fn key(
    name: &'static str,
    plausible: impl Strategy<Value = String> + 'static,
) -> BoxedStrategy<String> {
    config_fuzz::key(name, 38, plausible)
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
