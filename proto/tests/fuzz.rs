//! Property tests of the `dpagg.v1` wire contract against hostile peers: whatever bytes or
//! message a peer sends, decoding, conversion to the domain types and signature checks end in a
//! value or a typed error, never a panic, and never allocate more than the input justifies.
//!
//! What each property proves ([`CASES`] = 512 cases each):
//! - [`arbitrary_bytes_decode_as_every_message_or_fail`]: up to 4 KiB of random bytes, and
//!   random mutations (overwrites, insertions, truncation) of valid encodings, decoded as every
//!   request and response message of `dpagg.v1`: `Message::decode` gives a message or a
//!   `DecodeError`; a decoded message re-encodes to bytes that decode to the same encoding;
//!   every learner spec and learner inside goes through `dpagg_proto::convert` and the
//!   signature checks below.
//! - [`structured_specs_convert_or_give_typed_errors`]: `LearnerSpec`s with any f64 (NaN, ±∞,
//!   subnormals, ±0), mechanism names valid, long (up to 64 Ki characters) or full of control
//!   characters and odd Unicode, and option maps of up to 2,000 entries: `TryFrom` gives a spec
//!   or a one-line, bounded `WireError`; a converted spec round-trips through the wire, and
//!   `check_ranges`, `build` and `describe` (what a node does next) end without panicking.
//! - [`structured_learners_convert_sign_and_verify`]: `PrivateLearner`s with any weights, any
//!   metadata numbers (n, dim, created time, relation), long strings, big parameter maps and
//!   random signatures: `TryFrom` gives a learner or a typed error; a converted learner goes back
//!   to the wire; `canonical_release` fails exactly when metadata is missing; `verify` by a key
//!   that did not sign it fails with a typed error; signed by the trusted key it verifies,
//!   also after a trip through the wire (NaN payloads included), and any flipped signature byte
//!   makes it fail.
//! - [`key_parsers_refuse_garbage`]: `VerifyingKey::from_hex`, `unhex` and
//!   `SigningKey::from_pkcs8` on arbitrary text and bytes give typed, one-line errors.

use dpagg_proto::convert::{self, WireError};
use dpagg_proto::signature::{
    self, ALGORITHM, SignatureError, SigningKey, VerifyingKey, canonical_release,
};
use dpagg_proto::v1 as pb;
use dpagg_shared::privacy::mechanism::{LearnerSpec, MechanismKind};
use dpagg_shared::privacy::release::PublishedLearner;
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use prost::Message;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Cases per property: enough to reach every branch of the conversions many times over, small
/// enough for the file to stay within a few seconds in release mode.
const CASES: u32 = 512;

/// The longest `WireError` text a peer may cause (its text is quoted to 64 characters, each
/// escaped to at most 10 bytes).
const ERROR_LIMIT: usize = 1024;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        ..ProptestConfig::default()
    }
}

/// The organisation's key pair, made once (the aggregator trusts the public half).
static KEY: LazyLock<(SigningKey, VerifyingKey)> = LazyLock::new(|| {
    let (key, _) = SigningKey::generate().expect("key");
    let public = VerifyingKey::from_hex(&signature::hex(key.public_key()), "test").expect("hex");
    (key, public)
});

/// Any f64, with the values that matter to validation (0, 1, the special values and the
/// ranges nodes accept) drawn often.
fn float() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => any::<f64>(),
        1 => prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            Just(f64::NAN),
            Just(-f64::NAN),
            Just(f64::from_bits(0x7ff0_0000_0000_0001)), // a signalling NaN
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(f64::MIN_POSITIVE),
            Just(f64::from_bits(1)), // the smallest subnormal
            Just(f64::MAX),
            Just(f64::MIN),
            Just(f64::EPSILON),
            Just(1e18),
        ],
        2 => 0.0..10.0f64,
        1 => 0.0..1.0f64,
    ]
}

/// Text a peer may send: short Unicode (control characters included), odd code points, up to
/// 64 Ki characters of one, or terminal escapes.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => ".{0,24}",
        2 => "[\\x00-\\x1f\\x7f\u{80}-\u{9f}\u{200b}-\u{200f}\u{202a}-\u{202e}\u{fffd}\u{feff}]{0,16}",
        1 => (any::<char>(), 0usize..65_536).prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
        1 => Just("\u{1b}[31m\u{1b}]0;title\u{7}".to_owned()),
    ]
}

/// A mechanism name: known, nearly known, or anything.
fn mechanism() -> impl Strategy<Value = String> {
    let known: Vec<String> = MechanismKind::all().map(|k| k.name().to_owned()).collect();
    prop_oneof![
        3 => proptest::sample::select(known.clone()),
        1 => proptest::sample::select(known).prop_map(|n| format!("{n} ")),
        1 => text(),
    ]
}

/// An option or parameter map: real option names, arbitrary names, up to 2,000 entries.
fn options() -> impl Strategy<Value = BTreeMap<String, f64>> {
    let names: Vec<String> = MechanismKind::all()
        .flat_map(|k| k.options().iter().map(|o| o.name.to_owned()))
        .chain(["proven".to_owned(), "lambda".to_owned(), String::new()])
        .collect();
    let key = prop_oneof![3 => proptest::sample::select(names), 1 => ".{0,12}"];
    prop_oneof![
        4 => btree_map(key, float(), 0..4),
        1 => btree_map(".{0,16}", float(), 0..2_000),
    ]
}

fn spec() -> impl Strategy<Value = pb::LearnerSpec> {
    (
        mechanism(),
        float(),
        float(),
        float(),
        options(),
        any::<bool>(),
    )
        .prop_map(
            |(mechanism, epsilon, delta, lambda, options, lambda_auto)| pb::LearnerSpec {
                mechanism,
                epsilon,
                delta,
                lambda,
                options,
                lambda_auto,
                map: None,
            },
        )
}

fn metadata() -> impl Strategy<Value = pb::ReleaseMetadata> {
    let numbers = (
        prop_oneof![any::<i64>(), 0i64..2_000_000_000_000_000],
        prop_oneof![any::<u64>(), 0u64..10_000],
        prop_oneof![any::<u32>(), 0u32..64],
        prop_oneof![any::<i32>(), -1i32..4],
        (float(), float(), float(), float(), float()),
    );
    let texts = (text(), text(), text(), text(), text());
    let rest = (
        options(),
        any::<bool>(),
        proptest::option::of(spec()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(prop_oneof![
            Just("noise-as-sampled".to_owned()),
            Just("real-arithmetic".to_owned()),
            Just("none".to_owned()),
            text()
        ]),
    );
    (numbers, texts, rest).prop_map(
        |(
            (
                created_unix_ms,
                n,
                dim,
                neighbour_relation,
                (epsilon, delta, norm, gradient, hessian),
            ),
            (release_id, created_at, mechanism, reference, schema_fingerprint),
            (parameters, seeded, spec, proven, proof),
        )| pb::ReleaseMetadata {
            release_id,
            created_unix_ms,
            created_at,
            mechanism,
            reference,
            parameters,
            epsilon,
            delta,
            neighbour_relation,
            max_row_norm: norm,
            loss_gradient_bound: gradient,
            loss_hessian_bound: hessian,
            schema_fingerprint,
            seeded,
            n,
            dim,
            spec,
            proven,
            proof,
        },
    )
}

/// A signature as a peer might send it: any algorithm, organisation, key id and bytes, often
/// naming the trusted key and organisation so that the checks reach the Ed25519 verification.
fn random_signature() -> impl Strategy<Value = pb::ReleaseSignature> {
    (
        prop_oneof![2 => Just(ALGORITHM.to_owned()), 1 => text()],
        prop_oneof![2 => Just("org-1".to_owned()), 1 => text()],
        prop_oneof![2 => Just(KEY.1.key_id()), 1 => text()],
        prop_oneof![vec(any::<u8>(), 64..=64), vec(any::<u8>(), 0..200)],
    )
        .prop_map(
            |(algorithm, organisation_id, key_id, signature)| pb::ReleaseSignature {
                algorithm,
                organisation_id,
                key_id,
                signature,
            },
        )
}

fn learner() -> impl Strategy<Value = pb::PrivateLearner> {
    (
        prop_oneof![4 => vec(float(), 0..64), 1 => vec(float(), 0..4_096)],
        prop_oneof![1 => Just(None), 6 => metadata().prop_map(Some)],
        proptest::option::of(random_signature()),
    )
        .prop_map(|(weights, metadata, signature)| pb::PrivateLearner {
            weights,
            metadata,
            signature,
        })
}

/// `bytes` with a few random edits: overwritten bytes, inserted bytes, and a truncation.
fn mutated(valid: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (
        valid,
        vec(
            (any::<prop::sample::Index>(), any::<u8>(), any::<bool>()),
            0..8,
        ),
        proptest::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(mut bytes, edits, cut)| {
            for (at, byte, insert) in edits {
                if bytes.is_empty() || insert {
                    let i = at.index(bytes.len() + 1);
                    bytes.insert(i, byte);
                } else {
                    let i = at.index(bytes.len());
                    bytes[i] = byte;
                }
            }
            if let Some(cut) = cut {
                bytes.truncate(cut.index(bytes.len() + 1));
            }
            bytes
        })
}

/// Asserts an error's text is one bounded line.
fn one_bounded_line(e: &impl std::fmt::Display) {
    let text = e.to_string();
    assert!(!text.contains('\n'), "multi-line error: {text:?}");
    assert!(
        text.len() <= ERROR_LIMIT,
        "error of {} bytes: {:?}…",
        text.len(),
        text.chars().take(100).collect::<String>()
    );
}

/// What a node or aggregator does with a spec from a peer: convert it, and if that works send
/// it back, check its ranges, build the mechanism and describe it.
fn exercise_spec(wire: pb::LearnerSpec) {
    match LearnerSpec::try_from(wire) {
        Err(e) => {
            one_bounded_line(&e);
            assert!(matches!(
                e,
                WireError::UnknownMechanism(_) | WireError::Invalid { .. }
            ));
        }
        Ok(spec) => {
            // Back on the wire and read again, a spec is the same bits (λ = −0 with
            // `lambda_auto` is read as auto and sent back as +0, so compare from the first trip).
            let back = pb::LearnerSpec::from(&spec);
            let again = LearnerSpec::try_from(back.clone()).expect("what we send we read");
            assert_eq!(
                pb::LearnerSpec::from(&again).encode_to_vec(),
                back.encode_to_vec(),
                "a spec round-trips bit for bit"
            );
            if let Err(e) = spec.check_ranges() {
                assert!(!e.to_string().contains('\n'), "{e}");
            }
            if let Err(e) = spec.build() {
                assert!(!e.to_string().contains('\n'), "{e}");
            }
            let _ = spec.describe();
        }
    }
}

/// What an aggregator does with a learner from a peer: check its signature, convert it, and
/// (for the round trip) send the domain value back to the wire.
fn exercise_learner(wire: &pb::PrivateLearner) {
    let (_, public) = &*KEY;
    match canonical_release("org-1", wire) {
        Ok(bytes) => assert!(wire.metadata.is_some() && bytes.len() >= 8 * wire.weights.len()),
        Err(e) => assert_eq!(
            (e, wire.metadata.is_some()),
            (SignatureError::NoMetadata, false)
        ),
    }
    match public.verify("org-1", wire) {
        // Only a signature the key made verifies: the strategies never make one here (2⁻²⁵⁶).
        Ok(()) => panic!("a random signature verified"),
        Err(e) => one_bounded_line_or_quoted(&e),
    }
    if let Some(spec) = wire.metadata.as_ref().and_then(|m| m.spec.clone()) {
        exercise_spec(spec);
    }
    let _ = convert::relation_name(wire.metadata.as_ref().map_or(0, |m| m.neighbour_relation));
    match PublishedLearner::try_from(wire.clone()) {
        Err(e) => {
            one_bounded_line(&e);
            let _ = e.code();
        }
        Ok(p) => {
            let again = pb::PrivateLearner::from(&p);
            let m = again.metadata.as_ref().expect("metadata");
            assert_eq!(again.weights.len(), wire.weights.len());
            assert_eq!(m.n, wire.metadata.as_ref().expect("metadata").n);
            let twice = PublishedLearner::try_from(again).expect("what we encode we decode");
            assert_eq!(twice.release_id, p.release_id);
        }
    }
}

/// Signature errors quote what the peer sent (algorithm, organisation, key id) with `{:?}`,
/// which escapes newlines; they must still be one line.
fn one_bounded_line_or_quoted(e: &SignatureError) {
    assert!(!e.to_string().contains('\n'), "{e}");
}

/// Decodes `bytes` as `M`; a decoded message re-encodes stably and is passed to `then`.
fn decode<M: Message + Default>(bytes: &[u8], then: impl FnOnce(M)) {
    if let Ok(m) = M::decode(bytes) {
        let once = m.encode_to_vec();
        assert!(once.len() <= bytes.len() * 2 + 16, "encoding grew");
        let again = M::decode(once.as_slice()).expect("what prost encodes it decodes");
        assert_eq!(again.encode_to_vec(), once, "re-encoding is stable");
        then(m);
    }
    // A length prefix never makes the decoder reserve more than the input holds.
    let _ = M::decode_length_delimited(bytes);
}

/// Every message of `dpagg.v1`, from the same bytes.
fn decode_everything(bytes: &[u8]) {
    decode::<pb::DescribeRequest>(bytes, |_| {});
    decode::<pb::DescribeResponse>(bytes, |m| {
        if let Some(b) = m.budget {
            let _ = b.replace_one.map(|r| r.releases);
        }
    });
    decode::<pb::ListLearnersRequest>(bytes, |_| {});
    decode::<pb::ListLearnersResponse>(bytes, |m| m.learners.iter().for_each(exercise_learner));
    decode::<pb::GetLearnerRequest>(bytes, |m| {
        if let Some(pb::get_learner_request::Selector::Spec(s)) = m.selector {
            exercise_spec(s);
        }
    });
    decode::<pb::PublishLearnerRequest>(bytes, |m| {
        if let Some(s) = m.spec {
            exercise_spec(s);
        }
    });
    decode::<pb::PrivateLearner>(bytes, |m| exercise_learner(&m));
    decode::<pb::LearnerSpec>(bytes, exercise_spec);
    decode::<pb::ReleaseMetadata>(bytes, |m| {
        let _ = convert::relation(m.neighbour_relation, "metadata.neighbour_relation");
    });
    decode::<pb::ReleaseSignature>(bytes, |_| {});
    decode::<pb::Budget>(bytes, |_| {});
    decode::<pb::RelationSpend>(bytes, |_| {});
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes_decode_as_every_message_or_fail(
        bytes in prop_oneof![
            vec(any::<u8>(), 0..4_096),
            mutated(learner().prop_map(|l| l.encode_to_vec())),
            mutated(learner().prop_map(|l| pb::ListLearnersResponse { learners: vec![l], next_page_token: String::new() }.encode_to_vec())),
            mutated(spec().prop_map(|s| pb::PublishLearnerRequest { spec: Some(s) }.encode_to_vec())),
        ]
    ) {
        decode_everything(&bytes);
    }

    #[test]
    fn structured_specs_convert_or_give_typed_errors(wire in spec()) {
        exercise_spec(wire);
    }

    #[test]
    fn structured_learners_convert_sign_and_verify(
        wire in learner(),
        flip in (any::<prop::sample::Index>(), 1u8..=255),
    ) {
        exercise_learner(&wire);
        let (key, public) = &*KEY;
        let mut signed = wire.clone();
        match key.sign("org-1", &wire) {
            Err(e) => prop_assert_eq!((e, wire.metadata.is_some()), (SignatureError::NoMetadata, false)),
            Ok(sig) => {
                signed.signature = Some(sig);
                prop_assert_eq!(public.verify("org-1", &signed), Ok(()));
                let through = pb::PrivateLearner::decode(signed.encode_to_vec().as_slice())
                    .expect("decodes");
                prop_assert_eq!(public.verify("org-1", &through), Ok(()), "bits survive the wire");
                prop_assert!(public.verify("org-2", &signed).is_err());
                let mut tampered = signed.clone();
                let bytes = &mut tampered.signature.as_mut().expect("signed").signature;
                let i = flip.0.index(bytes.len());
                bytes[i] ^= flip.1;
                prop_assert_eq!(public.verify("org-1", &tampered), Err(SignatureError::Mismatch));
            }
        }
    }

    #[test]
    fn key_parsers_refuse_garbage(text in prop_oneof![".{0,80}", "[0-9a-fA-F ]{0,70}"], bytes in vec(any::<u8>(), 0..200)) {
        let _ = signature::unhex(&text);
        if let Err(e) = VerifyingKey::from_hex(&text, "keys/org.pub") {
            prop_assert!(e.to_string().starts_with("keys/org.pub: "), "{}", e);
            one_bounded_line(&e);
        }
        let e = SigningKey::from_pkcs8(&bytes, "k.pem").expect_err("random bytes are no key");
        one_bounded_line(&e);
    }
}
