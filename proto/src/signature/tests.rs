//! Tests of the canonical encoding and of signing and verifying releases.

use super::*;

fn learner() -> pb::PrivateLearner {
    pb::PrivateLearner {
        weights: vec![0.5, -1.25, 3.0],
        metadata: Some(pb::ReleaseMetadata {
            release_id: "0123456789abcdef0123456789abcdef".into(),
            created_unix_ms: 1_700_000_000_000,
            mechanism: "objective-perturbation".into(),
            epsilon: 1.0,
            n: 100,
            dim: 3,
            parameters: [("lambda".to_owned(), 0.01), ("b".to_owned(), 2.0)].into(),
            spec: Some(pb::LearnerSpec {
                mechanism: "objective-perturbation".into(),
                epsilon: 1.0,
                lambda_auto: true,
                ..Default::default()
            }),
            proven: Some(true),
            ..Default::default()
        }),
        signature: None,
    }
}

fn signed(key: &SigningKey, org: &str) -> pb::PrivateLearner {
    let mut l = learner();
    l.signature = Some(key.sign(org, &l).expect("sign"));
    l
}

#[test]
fn a_signed_release_verifies_and_signing_is_deterministic() {
    let (key, der) = SigningKey::generate().expect("key");
    let public = VerifyingKey::from_hex(&hex(key.public_key()), "test").expect("hex");
    let l = signed(&key, "org-1");
    public.verify("org-1", &l).expect("verifies");
    let again = SigningKey::from_pkcs8(&der, "der").expect("reload");
    assert_eq!(
        signed(&again, "org-1"),
        l,
        "same key, same release: same bytes"
    );
    assert_eq!(public.key_id().len(), 32);
}

#[test]
fn every_change_breaks_the_signature() {
    let (key, _) = SigningKey::generate().expect("key");
    let public = VerifyingKey::from_hex(&hex(key.public_key()), "test").expect("hex");
    let l = signed(&key, "org-1");
    type Edit = fn(&mut pb::PrivateLearner);
    let edits: [Edit; 7] = [
        |l| l.weights[1] = -1.250_000_000_000_000_2,
        |l| l.weights.push(0.0),
        |l| l.metadata.as_mut().expect("m").epsilon = 0.5,
        |l| l.metadata.as_mut().expect("m").seeded = true,
        |l| {
            l.metadata
                .as_mut()
                .expect("m")
                .parameters
                .insert("lambda".into(), 0.02);
        },
        |l| l.metadata.as_mut().expect("m").proven = None,
        |l| {
            l.metadata
                .as_mut()
                .expect("m")
                .spec
                .as_mut()
                .expect("s")
                .options
                .insert("steps".into(), 1.0);
        },
    ];
    for (i, edit) in edits.iter().enumerate() {
        let mut t = l.clone();
        edit(&mut t);
        assert_eq!(
            public.verify("org-1", &t),
            Err(SignatureError::Mismatch),
            "edit {i}"
        );
    }
}

#[test]
fn wrong_organisation_key_or_missing_signature_are_named() {
    let (key, _) = SigningKey::generate().expect("key");
    let (other, _) = SigningKey::generate().expect("key");
    let public = VerifyingKey::from_hex(&hex(key.public_key()), "test").expect("hex");
    let l = signed(&key, "org-1");
    assert!(matches!(
        public.verify("org-2", &l),
        Err(SignatureError::Organisation { .. })
    ));
    assert!(matches!(
        public.verify("org-1", &signed(&other, "org-1")),
        Err(SignatureError::KeyId { .. })
    ));
    // A forged key id does not help: the signature itself fails.
    let mut forged = signed(&other, "org-1");
    forged.signature.as_mut().expect("sig").key_id = public.key_id();
    assert_eq!(
        public.verify("org-1", &forged),
        Err(SignatureError::Mismatch)
    );
    assert_eq!(
        public.verify("org-1", &learner()),
        Err(SignatureError::Unsigned)
    );
}

#[test]
fn the_encoding_is_the_documented_layout() {
    let mut l = learner();
    l.weights = vec![1.0];
    let m = l.metadata.as_mut().expect("m");
    m.parameters.clear();
    m.spec = None;
    m.proven = None;
    let bytes = canonical_release("o", &l).expect("encode");
    let mut want = Vec::new();
    want.extend_from_slice(&(DOMAIN.len() as u64).to_be_bytes());
    want.extend_from_slice(DOMAIN.as_bytes());
    want.extend_from_slice(&1u64.to_be_bytes());
    want.push(b'o');
    want.extend_from_slice(&1u64.to_be_bytes());
    want.extend_from_slice(&1.0f64.to_bits().to_be_bytes());
    assert_eq!(&bytes[..want.len()], &want[..]);
    // Ends with: spec absent (0), proven absent (0).
    assert_eq!(&bytes[bytes.len() - 2..], &[0, 0]);
}

#[test]
fn a_negative_zero_signs_as_it_arrives() {
    // Found by proto/tests/fuzz.rs: a release with −0 in a singular double or a map value
    // was signed over −0, but the wire carries it as +0 (absent), so the aggregator
    // computed another message and excluded the release as tampered.
    use prost::Message;
    let (key, _) = SigningKey::generate().expect("key");
    let public = VerifyingKey::from_hex(&hex(key.public_key()), "test").expect("hex");
    let mut l = learner();
    l.weights[0] = -0.0;
    let m = l.metadata.as_mut().expect("m");
    m.delta = -0.0;
    m.max_row_norm = -0.0;
    m.parameters.insert("zero".into(), -0.0);
    m.spec.as_mut().expect("s").options.insert("o".into(), -0.0);
    l.signature = Some(key.sign("org-1", &l).expect("sign"));
    let served = pb::PrivateLearner::decode(l.encode_to_vec().as_slice()).expect("decodes");
    assert!(
        served
            .metadata
            .as_ref()
            .expect("m")
            .delta
            .is_sign_positive()
    );
    assert!(
        served.weights[0].is_sign_negative(),
        "packed weights keep −0"
    );
    public
        .verify("org-1", &served)
        .expect("verifies after the wire");
    // The weights' −0 is still covered: +0 there is another release.
    let mut other = served.clone();
    other.weights[0] = 0.0;
    assert_eq!(
        public.verify("org-1", &other),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn a_peer_key_id_is_quoted_in_the_error() {
    // Found by proto/tests/fuzz.rs: the key id came raw into the message, so a peer (or an
    // edited report.json given to `verify`) could break the line or send terminal escapes.
    let (key, _) = SigningKey::generate().expect("key");
    let public = VerifyingKey::from_hex(&hex(key.public_key()), "test").expect("hex");
    let mut l = signed(&key, "org-1");
    l.signature.as_mut().expect("sig").key_id = "a\n\u{1b}[31mb".into();
    let e = public.verify("org-1", &l).expect_err("other key id");
    assert!(matches!(e, SignatureError::KeyId { .. }), "{e:?}");
    let text = e.to_string();
    assert!(!text.contains('\n') && !text.contains('\u{1b}'), "{text:?}");
    let e = public
        .verify_bytes(b"m", "x\ny", &[0; 64])
        .expect_err("other key id");
    assert!(!e.to_string().contains('\n'), "{e}");
}

#[test]
fn bad_key_files_are_one_line_errors() {
    let e = VerifyingKey::from_hex("abc", "keys/org-1.pub").expect_err("short");
    assert!(e.to_string().starts_with("keys/org-1.pub: "), "{e}");
    let e = SigningKey::from_pkcs8(b"nonsense", "k.pem").expect_err("bad");
    assert!(!e.to_string().contains('\n'));
}

/// The proof label is signed when present, and a release without it (from a node older than the
/// label) keeps the encoding, and so the signature, it always had.
#[test]
fn the_proof_label_is_signed_and_its_absence_keeps_the_old_encoding() {
    let (key, der) = SigningKey::generate().expect("key");
    let _ = der;
    let public = VerifyingKey::from_hex(&hex(key.public_key()), "test").expect("hex");
    let old = learner();
    let mut labelled = learner();
    labelled.metadata.as_mut().expect("metadata").proof = Some("real-arithmetic".into());
    let a = canonical_release("org-1", &old).expect("encodes");
    let b = canonical_release("org-1", &labelled).expect("encodes");
    assert_eq!(&b[..a.len()], &a[..], "the label is appended");
    assert_eq!(b.len(), a.len() + 1 + 8 + "real-arithmetic".len());
    let mut l = labelled.clone();
    l.signature = Some(key.sign("org-1", &l).expect("sign"));
    public.verify("org-1", &l).expect("verifies");
    l.metadata.as_mut().expect("metadata").proof = Some("noise-as-sampled".into());
    assert!(
        public.verify("org-1", &l).is_err(),
        "a changed label breaks the signature"
    );
}
