//! Which fetched learners are aggregated: each must carry a valid signature of the organisation
//! it came from and pass validation ([`crate::validate`]); the same organisation reached
//! at two endpoints counts once; and learners of different organisations whose weights agree
//! to within a public tolerance are **near-copies**, one expert counted once (a member that
//! re-signs another's learner, under its id or a new one, exactly or nudged by one part in
//! 10^15, gains no second weight, and cannot make the original be excluded either), each copy
//! named in the report.

use crate::fetch::{Exclusion, NodeOutcome};
use crate::trust::{SignatureView, Trust};
use crate::validate::{Context as Check, explain_mismatch, validate};
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

/// Relative tolerance within which two learners are near-copies: every weight within
/// `NEAR_COPY · max(1, largest |weight| of either)`. Public, and far below any two private
/// learners' noise: two organisations' independent releases never agree this closely.
pub(crate) const NEAR_COPY: f64 = 1e-6;

/// Whether two learners' weights agree to within [`NEAR_COPY`].
fn near(a: &[f64], b: &[f64]) -> bool {
    let largest = a.iter().chain(b).fold(1.0_f64, |m, w| m.max(w.abs()));
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= NEAR_COPY * largest)
}

/// Checks signatures, validates every fetched learner, excludes duplicates (an organisation
/// twice: the first kept) and counts near-copies once ([`near_copies`]).
pub(crate) fn screen(
    outcomes: &mut [NodeOutcome],
    check: &Check<'_>,
    trust: &Trust,
) -> Vec<Accepted> {
    let mut seen = BTreeSet::new();
    let mut kept: Vec<(String, Accepted)> = Vec::new();
    for (index, o) in outcomes.iter_mut().enumerate() {
        let Some(a) = checked(index, o, check, trust) else {
            continue;
        };
        let org = o
            .result
            .as_ref()
            .map(|f| f.organisation_id.clone())
            .unwrap_or_default();
        if !seen.insert(org.clone()) {
            let key = format!("organisation `{org}`");
            o.result = Err(Exclusion::Duplicate(key));
            continue;
        }
        kept.push((org, a));
    }
    let copies = near_copies(&kept);
    kept.into_iter()
        .filter_map(|(org, a)| match copies.get(&org) {
            None => Some(a),
            Some(of) => {
                outcomes[a.index].result = Err(Exclusion::NearCopy(format!(
                    "its weights agree with `{of}`'s to within {NEAR_COPY:e} (relative): one \
                     learner released by two organisations (one copied the other) counts once, \
                     as `{of}`'s"
                )));
                None
            }
        })
        .collect()
}

/// The near-copies among the accepted learners: organisation → the organisation whose learner
/// it copies. In each group of learners that agree to within [`NEAR_COPY`] (whatever their
/// release ids and signatures) the smallest organisation id is kept, so the outcome does not
/// depend on the order of the endpoints: a member that re-signs another's learner, exactly or
/// with its weights nudged, gains no second weight and cannot make the original be excluded.
fn near_copies(kept: &[(String, Accepted)]) -> HashMap<String, String> {
    let mut order: Vec<&(String, Accepted)> = kept.iter().collect();
    order.sort_by(|a, b| a.0.cmp(&b.0));
    let mut representatives: Vec<&(String, Accepted)> = Vec::new();
    let mut copies = HashMap::new();
    for item in order {
        let weights = item.1.learner.classifier().coefficients();
        match representatives
            .iter()
            .find(|r| near(r.1.learner.classifier().coefficients(), weights))
        {
            Some(r) => {
                copies.insert(item.0.clone(), r.0.clone());
            }
            None => representatives.push(item),
        }
    }
    copies
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
