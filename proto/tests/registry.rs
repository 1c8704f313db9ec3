//! The proto file's documentation of `LearnerSpec.mechanism` and of `DataSpec`'s kinds checked
//! against the registries (`dpagg_shared::privacy::mechanism::kind`,
//! `dpagg_shared::privacy::data_release`): every mechanism nodes offer and every data kind has
//! its bullet, every bullet names a registered one, and every option is listed in its bullet
//! with the registered default.

use dpagg_shared::privacy::data_release::DataKind;
use dpagg_shared::privacy::mechanism::MechanismKind;
use dpagg_shared::privacy::registry::OptionSpec;

/// The contract, as committed.
const PROTO: &str = include_str!("../dpagg/v1/node.proto");

/// The bullets of the comment above `string mechanism = 1;` in `message LearnerSpec`.
fn mechanism_bullets() -> Vec<(String, String)> {
    let message = &PROTO[PROTO.find("message LearnerSpec {").expect("LearnerSpec")..];
    bullets(&message[..message.find("string mechanism = 1;").expect("field")])
}

/// The bullets of the comment above `message DataSpec`.
fn data_bullets() -> Vec<(String, String)> {
    let end = PROTO.find("message DataSpec {").expect("DataSpec");
    let start = PROTO[..end]
        .rfind("}\n")
        .expect("the message before DataSpec");
    bullets(&PROTO[start..end])
}

/// The bullets (`- "name": …`, continuation lines joined) of a comment.
fn bullets(comment: &str) -> Vec<(String, String)> {
    let mut bullets: Vec<(String, String)> = Vec::new();
    for line in comment.lines().map(str::trim) {
        let Some(text) = line.strip_prefix("//") else {
            continue;
        };
        let text = text.trim();
        if let Some(rest) = text.strip_prefix("- \"") {
            let (name, body) = rest.split_once('"').expect("closing quote");
            bullets.push((name.to_owned(), body.to_owned()));
        } else if let Some((_, body)) = bullets.last_mut() {
            body.push(' ');
            body.push_str(text);
        }
    }
    bullets
}

/// The number given in parentheses after `option (` in `body`.
fn documented_default(body: &str, option: &str) -> Option<f64> {
    let at = body.find(&format!("{option} ("))? + option.len() + 2;
    let end = body[at..].find([')', ';', ',', ':'])?;
    body[at..at + end].trim().parse().ok()
}

/// Checks `bullets` against a registry: every bullet names a registered kind
/// (`is_registered`), every kind in `registered` (name, options) has a bullet, and its bullet
/// lists each option with the registered default, the option's name written as `quote` writes it.
fn check_bullets<'a>(
    what: &str,
    bullets: &[(String, String)],
    is_registered: impl Fn(&str) -> bool,
    registered: impl IntoIterator<Item = (&'a str, &'a [OptionSpec])>,
    quote: impl Fn(&str) -> String,
) {
    assert!(!bullets.is_empty(), "no {what} bullets found");
    for (name, _) in bullets {
        assert!(
            is_registered(name),
            "node.proto documents {what} `{name}`, which is not registered"
        );
    }
    for (kind, options) in registered {
        let Some((_, body)) = bullets.iter().find(|(n, _)| n == kind) else {
            panic!("node.proto does not document {what} `{kind}`");
        };
        for o in options {
            let written = quote(o.name);
            assert_eq!(
                documented_default(body, &written),
                Some(o.default),
                "node.proto: option `{}` of {what} `{kind}` must be listed as {written} ({})",
                o.name,
                o.default
            );
        }
    }
}

#[test]
fn the_proto_comment_lists_the_registry() {
    check_bullets(
        "mechanism",
        &mechanism_bullets(),
        |name| MechanismKind::from_name(name).is_some(),
        MechanismKind::all()
            .filter(|k| k.offered_by_nodes())
            .map(|k| (k.name(), k.options())),
        str::to_owned,
    );
}

#[test]
fn the_proto_comment_lists_the_data_kinds() {
    check_bullets(
        "data kind",
        &data_bullets(),
        |name| DataKind::parse(name).is_some(),
        DataKind::all().map(|k| (k.name(), k.options())),
        |name| format!("`{name}`"),
    );
}
