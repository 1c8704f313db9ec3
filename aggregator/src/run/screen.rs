//! Which fetched learners are aggregated: each must carry a valid signature of the organisation
//! it came from and pass validation ([`crate::run::validate`]); then releases are bound to their
//! organisation: a release id, or a release's content, signed by two organisations is a
//! conflict, and every copy is excluded (a member that re-signs another's learner under the
//! same id must not push the genuine one out as a "duplicate"); the same organisation reached
//! at two endpoints counts once.

use crate::run::fetch::{Exclusion, NodeOutcome};
use crate::run::trust::{SignatureView, Trust};
use crate::run::validate::{Context as Check, explain_mismatch, validate};
use dpagg_shared::privacy::release::PublishedLearner;
use std::collections::{BTreeSet, HashMap};

/// An accepted learner: the index of its node's outcome, the release, its signature and the
/// bytes the node served.
pub(crate) struct Accepted {
    pub(crate) index: usize,
    pub(crate) learner: PublishedLearner,
    pub(crate) signature: Option<SignatureView>,
    pub(crate) served: String,
    pub(crate) certificate_identity: Option<String>,
}

/// What identifies a release's content: the classifier and its metadata, not who signed it.
fn content_of(learner: &PublishedLearner) -> String {
    serde_json::to_string(&learner.release).unwrap_or_else(|_| learner.release_id.clone())
}

/// Checks signatures, validates every fetched learner, excludes conflicts (a release id or
/// content under two organisations: every copy) and duplicates (an organisation twice: the
/// first kept).
pub(crate) fn screen(
    outcomes: &mut [NodeOutcome],
    check: &Check<'_>,
    trust: &Trust,
) -> Vec<Accepted> {
    let mut candidates: Vec<(String, Accepted)> = Vec::new();
    for (index, o) in outcomes.iter_mut().enumerate() {
        if let Some(a) = checked(index, o, check, trust) {
            let org = o
                .result
                .as_ref()
                .map(|f| f.organisation_id.clone())
                .unwrap_or_default();
            candidates.push((org, a));
        }
    }
    let mut by_id: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut by_content: HashMap<String, BTreeSet<String>> = HashMap::new();
    for (org, a) in &candidates {
        by_id
            .entry(a.learner.release_id.clone())
            .or_default()
            .insert(org.clone());
        by_content
            .entry(content_of(&a.learner))
            .or_default()
            .insert(org.clone());
    }
    let mut seen: HashMap<String, ()> = HashMap::new();
    let mut accepted = Vec::new();
    for (org, a) in candidates {
        let id = a.learner.release_id.clone();
        let conflict = [
            (&by_id[&id], format!("release id {id}")),
            (
                &by_content[&content_of(&a.learner)],
                "the same release content".to_owned(),
            ),
        ]
        .into_iter()
        .find(|(orgs, _)| orgs.len() > 1)
        .map(|(orgs, what)| {
            let names: Vec<&str> = orgs.iter().map(String::as_str).collect();
            format!(
                "{what} is signed by {} organisations ({}): every copy is excluded",
                orgs.len(),
                names.join(", ")
            )
        });
        let outcome = &mut outcomes[a.index];
        if let Some(why) = conflict {
            outcome.result = Err(Exclusion::Conflict(why));
            continue;
        }
        let key = format!("organisation `{org}`");
        if seen.contains_key(&key) {
            outcome.result = Err(Exclusion::Duplicate(key));
            continue;
        }
        seen.insert(key, ());
        accepted.push(a);
    }
    accepted
}

/// One outcome's signature and validation; on failure its exclusion is recorded.
fn checked(
    index: usize,
    o: &mut NodeOutcome,
    check: &Check<'_>,
    trust: &Trust,
) -> Option<Accepted> {
    use prost::Message;
    let f = o.result.as_ref().ok()?;
    let signature = match trust.check(&f.organisation_id, &f.learner) {
        Ok(s) => s,
        Err(e) => {
            o.result = Err(e);
            return None;
        }
    };
    let served = dpagg_proto::signature::hex(&f.learner.encode_to_vec());
    let certificate_identity = f.certificate_identity.clone();
    match validate(&f.learner, &f.described_fingerprint, check) {
        Ok(learner) => Some(Accepted {
            index,
            learner,
            signature,
            served,
            certificate_identity,
        }),
        Err(mut v) => {
            explain_mismatch(&mut v, &f.described_schema, check);
            o.result = Err(Exclusion::Invalid(v));
            None
        }
    }
}
