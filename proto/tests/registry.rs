//! The proto file's documentation of `LearnerSpec.mechanism` and of `DataSpec`'s kinds checked
//! against the registries (`dpagg_shared::privacy::mechanism::kind`,
//! `dpagg_shared::privacy::data_release`): every mechanism nodes offer and every data kind has
//! its bullet, every bullet names a registered one, and every option is listed in its bullet
//! with the registered default.

use dpagg_shared::privacy::data_release::DataKind;
use dpagg_shared::privacy::mechanism::MechanismKind;

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

#[test]
fn the_proto_comment_lists_the_registry() {
    let bullets = mechanism_bullets();
    assert!(!bullets.is_empty(), "no bullets found");
    for (name, _) in &bullets {
        assert!(
            MechanismKind::from_name(name).is_some(),
            "node.proto documents `{name}`, which is not registered"
        );
    }
    for kind in MechanismKind::all().filter(|k| k.offered_by_nodes()) {
        let Some((_, body)) = bullets.iter().find(|(n, _)| n == kind.name()) else {
            panic!("node.proto does not document `{}`", kind.name());
        };
        for o in kind.options() {
            assert_eq!(
                documented_default(body, o.name),
                Some(o.default),
                "node.proto: option `{}` of `{}` must be listed as `{} ({})`",
                o.name,
                kind.name(),
                o.name,
                o.default
            );
        }
    }
}

#[test]
fn the_proto_comment_lists_the_data_kinds() {
    let bullets = data_bullets();
    assert!(!bullets.is_empty(), "no bullets found");
    for (name, _) in &bullets {
        assert!(
            DataKind::parse(name).is_some(),
            "node.proto documents data kind `{name}`, which is not registered"
        );
    }
    for kind in DataKind::all() {
        let Some((_, body)) = bullets.iter().find(|(n, _)| n == kind.name()) else {
            panic!("node.proto does not document data kind `{}`", kind.name());
        };
        for o in kind.options() {
            assert_eq!(
                documented_default(body, &format!("`{}`", o.name)),
                Some(o.default),
                "node.proto: option `{}` of data kind `{}` must be listed as `{}` ({})",
                o.name,
                kind.name(),
                o.name,
                o.default
            );
        }
    }
}
