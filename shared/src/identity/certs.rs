//! `dpagg-node certs`: a development certificate authority and per-organisation identity folders,
//! for people who are not PKI experts (rcgen; no `openssl` binary needed).
//!
//! `init` creates, under `--out`:
//!
//! ```text
//! ca/ca.pem  ca/ca.key          the federation's CA (keep ca.key offline; it issues identities)
//! <org>/ca.pem                  a copy of the CA certificate (what every party trusts)
//! <org>/cert.pem <org>/key.pem  the organisation's TLS certificate (URI SAN dpagg://org/<org>,
//!                               DNS/IP SANs localhost, 127.0.0.1, ::1, <org>, and each --host)
//! <org>/signing.key             its Ed25519 release-signing key (PKCS#8 PEM)
//! public-keys/<org>.pub         the signing key's public half (64 hex characters): give this
//!                               folder to aggregators (`signing_keys`)
//! ```
//!
//! `issue` adds one organisation with an existing CA. Keys come from the operating system's
//! CSPRNG; private keys are created with mode 0600 (never widened, not even while written) in
//! folders of mode 0700; every file is written atomically.
//! Certificates use ECDSA P-256 with SHA-256.

use super::{CA_FILE, CERT_FILE, KEY_FILE, SIGNING_KEY_FILE, check_organisation_id, identity_uri};
use crate::util::files::{atomic_write, atomic_write_private, create_private_dir};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use std::path::{Path, PathBuf};
use time::{Duration, OffsetDateTime};

/// Folder of the CA under `--out`.
pub const CA_DIR: &str = "ca";
/// The CA's private key file in [`CA_DIR`].
pub const CA_KEY_FILE: &str = "ca.key";
/// Folder of the public signing keys under `--out`.
pub const PUBLIC_KEYS_DIR: &str = "public-keys";

/// Why certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CertsError {
    /// A file could not be read or written.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An organisation id or host name is not allowed.
    #[error("{what} {value:?}: {reason}")]
    Name {
        /// "organisation" or "host".
        what: &'static str,
        /// The value.
        value: String,
        /// The rule it breaks.
        reason: String,
    },
    /// rcgen failed.
    #[error("cannot make a certificate: {0}")]
    Rcgen(#[from] rcgen::Error),
    /// The signing key could not be made.
    #[error("(new key): {0}")]
    Signing(&'static str),
    /// The folder exists already (never overwrite keys).
    #[error("{0} exists already: refusing to overwrite keys (choose another --out or remove it)")]
    Exists(PathBuf),
}

/// When a certificate is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    /// Start.
    pub not_before: OffsetDateTime,
    /// End.
    pub not_after: OffsetDateTime,
}

impl Validity {
    /// From an hour ago (clock skew between organisations) for `days` days.
    pub fn days_from_now(days: u32) -> Self {
        let now = OffsetDateTime::now_utc();
        Self::from(now - Duration::hours(1), days)
    }

    /// From `start` for `days` days.
    pub fn from(start: OffsetDateTime, days: u32) -> Self {
        Self {
            not_before: start,
            not_after: start + Duration::days(i64::from(days)),
        }
    }
}

fn write(path: &Path, bytes: &[u8], private: bool) -> Result<(), CertsError> {
    let err = |e: std::io::Error| CertsError::File {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    if let Some(dir) = path.parent() {
        // A folder that holds a secret is the owner's only; others are ordinary.
        if private {
            create_private_dir(dir).map_err(err)?;
        } else {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
    }
    // A private key is born 0600 (never chmod'ed after it was written readable).
    if private {
        atomic_write_private(path, bytes).map_err(err)
    } else {
        atomic_write(path, bytes).map_err(err)
    }
}

/// A folder that will hold a key: the owner's only (0700) before anything is written into it.
fn private_dir(dir: &Path) -> Result<(), CertsError> {
    create_private_dir(dir).map_err(|e| CertsError::File {
        path: dir.to_owned(),
        reason: e.to_string(),
    })
}

fn read(path: &Path) -> Result<String, CertsError> {
    std::fs::read_to_string(path).map_err(|e| CertsError::File {
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

fn fresh(path: &Path) -> Result<(), CertsError> {
    if path.exists() {
        return Err(CertsError::Exists(path.to_owned()));
    }
    Ok(())
}

/// Creates the CA under `out/ca/` and an identity folder for each organisation.
pub fn init(
    out: &Path,
    organisations: &[String],
    hosts: &[String],
    validity: Validity,
) -> Result<Vec<PathBuf>, CertsError> {
    for org in organisations {
        check_name(org, hosts)?;
    }
    let ca_dir = out.join(CA_DIR);
    fresh(&ca_dir)?;
    private_dir(&ca_dir)?;
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "dpagg federation development CA");
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.not_before = validity.not_before;
    // The CA outlives the identities it issues.
    params.not_after = validity.not_after + Duration::days(365);
    let cert = params.self_signed(&key)?;
    write(&ca_dir.join(CA_FILE), cert.pem().as_bytes(), false)?;
    write(
        &ca_dir.join(CA_KEY_FILE),
        key.serialize_pem().as_bytes(),
        true,
    )?;
    organisations
        .iter()
        .map(|org| issue(&ca_dir, org, out, hosts, validity))
        .collect()
}

fn check_name(org: &str, hosts: &[String]) -> Result<(), CertsError> {
    check_organisation_id(org).map_err(|reason| CertsError::Name {
        what: "organisation",
        value: org.to_owned(),
        reason,
    })?;
    for h in hosts {
        if h.is_empty()
            || !h
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-:".contains(c))
        {
            return Err(CertsError::Name {
                what: "host",
                value: h.clone(),
                reason: "a DNS name or an IP address".into(),
            });
        }
    }
    Ok(())
}

/// Issues `organisation`'s identity folder `out/<organisation>/` (and its public signing key in
/// `out/public-keys/`) with the CA in `ca_dir`.
pub fn issue(
    ca_dir: &Path,
    organisation: &str,
    out: &Path,
    hosts: &[String],
    validity: Validity,
) -> Result<PathBuf, CertsError> {
    check_name(organisation, hosts)?;
    let dir = out.join(organisation);
    fresh(&dir)?;
    let ca_pem = read(&ca_dir.join(CA_FILE))?;
    let ca_key_path = ca_dir.join(CA_KEY_FILE);
    let ca_key = KeyPair::from_pem(&read(&ca_key_path)?).map_err(|e| CertsError::File {
        path: ca_key_path,
        reason: format!("not a private key ({e})"),
    })?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key)?;

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, organisation);
    params.subject_alt_names = sans(organisation, hosts)?;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    // Every organisation is both a server (its node) and a client (its aggregator, health).
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.not_before = validity.not_before;
    params.not_after = validity.not_after;
    let cert = params.signed_by(&key, &issuer)?;

    let (pkcs8, signing_public) = signing_key()?;
    private_dir(&dir)?;
    write(&dir.join(CA_FILE), ca_pem.as_bytes(), false)?;
    write(&dir.join(CERT_FILE), cert.pem().as_bytes(), false)?;
    write(&dir.join(KEY_FILE), key.serialize_pem().as_bytes(), true)?;
    let pem = pem_private_key(&pkcs8);
    write(&dir.join(SIGNING_KEY_FILE), pem.as_bytes(), true)?;
    let public = format!("{}\n", hex(&signing_public));
    write(&dir.join("signing.pub"), public.as_bytes(), false)?;
    write(
        &out.join(PUBLIC_KEYS_DIR)
            .join(format!("{organisation}.pub")),
        public.as_bytes(),
        false,
    )?;
    Ok(dir)
}

fn sans(organisation: &str, hosts: &[String]) -> Result<Vec<SanType>, CertsError> {
    let mut names = vec![SanType::URI(identity_uri(organisation).try_into()?)];
    let mut dns = vec!["localhost".to_owned()];
    // The id doubles as a host name where it is one (compose and Kubernetes service names).
    if organisation
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    {
        dns.push(organisation.to_owned());
    }
    let mut ips: Vec<std::net::IpAddr> = vec![
        std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::Ipv6Addr::LOCALHOST.into(),
    ];
    for h in hosts {
        match h.parse() {
            Ok(ip) => ips.push(ip),
            Err(_) => dns.push(h.clone()),
        }
    }
    dns.dedup();
    for d in dns {
        names.push(SanType::DnsName(d.try_into()?));
    }
    names.extend(ips.into_iter().map(SanType::IpAddress));
    Ok(names)
}

/// A new Ed25519 release-signing key from the operating system's CSPRNG: its PKCS#8 (v2) DER,
/// to store, and its raw 32-byte public key. `dpagg_proto::signature::SigningKey::load` reads
/// the stored key back (it signs releases; this module only makes keys).
fn signing_key() -> Result<(Vec<u8>, Vec<u8>), CertsError> {
    use ring::signature::{Ed25519KeyPair, KeyPair as _};
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng)
        .map_err(|_| CertsError::Signing("the operating system's random generator failed"))?;
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref())
        .map_err(|_| CertsError::Signing("a fresh key did not read back"))?;
    Ok((pkcs8.as_ref().to_vec(), pair.public_key().as_ref().to_vec()))
}

/// Lowercase hex, the format of the `.pub` files (`dpagg_proto::signature::VerifyingKey`).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// PKCS#8 DER as a PEM `PRIVATE KEY` block (RFC 7468): base64 lines of 64 characters.
fn pem_private_key(der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut b = String::new();
    for chunk in der.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &x)| n | (u32::from(x) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                b.push(char::from(B64[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                b.push('=');
            }
        }
    }
    let mut out = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in b.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END PRIVATE KEY-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::{IdentityDir, organisation_of};
    use rustls_pki_types::pem::PemObject;

    #[test]
    fn init_writes_identity_folders_that_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("fed");
        let orgs = vec!["org-1".to_owned(), "hospital_b".to_owned()];
        let made = init(
            &out,
            &orgs,
            &["node.example".into()],
            Validity::days_from_now(30),
        )
        .expect("init");
        assert_eq!(made.len(), 2);
        let id = IdentityDir::load(&made[1]).expect("loads");
        assert_eq!(id.organisation_id, "hospital_b");
        id.client().expect("client config");
        let pem = std::fs::read(id.signing_key_path()).expect("signing key");
        let der = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(&pem).expect("pem");
        let key =
            ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der.secret_pkcs8_der())
                .expect("an Ed25519 key");
        let public = std::fs::read_to_string(out.join("public-keys/hospital_b.pub")).expect("pub");
        use ring::signature::KeyPair as _;
        assert_eq!(public.trim(), hex(key.public_key().as_ref()));
        // Never overwrite keys.
        assert!(matches!(
            init(&out, &orgs, &[], Validity::days_from_now(1)),
            Err(CertsError::Exists(_))
        ));
        assert!(matches!(
            issue(
                &out.join(CA_DIR),
                "org-1",
                &out,
                &[],
                Validity::days_from_now(1)
            ),
            Err(CertsError::Exists(_))
        ));
        let issued = issue(
            &out.join(CA_DIR),
            "org-3",
            &out,
            &[],
            Validity::days_from_now(1),
        )
        .expect("issue");
        let pem = std::fs::read(issued.join(CERT_FILE)).expect("cert");
        let der = rustls_pki_types::CertificateDer::pem_slice_iter(&pem)
            .next()
            .expect("one")
            .expect("pem");
        assert_eq!(organisation_of(&der).expect("identity"), "org-3");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(issued.join(KEY_FILE))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "private keys are not readable by others");
    }

    /// Every secret `init` writes is 0600 in a 0700 folder. That it is 0600 from the moment it
    /// exists (under any umask: the mode is given to `open(O_CREAT)`, never widened) is
    /// `util::files`' test of `write_via_temp`; here, that every key goes through that path and
    /// that nothing in this file changes a mode after writing.
    #[test]
    fn every_private_key_is_born_0600_in_a_0700_folder() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("fed");
        let orgs: Vec<String> = (0..3).map(|i| format!("org-{i}")).collect();
        init(&out, &orgs, &[], Validity::days_from_now(30)).expect("init");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        let mut secrets = vec![out.join(CA_DIR).join(CA_KEY_FILE)];
        for org in &orgs {
            secrets.push(out.join(org).join(KEY_FILE));
            secrets.push(out.join(org).join(SIGNING_KEY_FILE));
        }
        for secret in &secrets {
            assert_eq!(mode(secret), 0o600, "{}", secret.display());
            let folder = secret.parent().expect("folder");
            assert_eq!(mode(folder), 0o700, "{}", folder.display());
        }
        let source = include_str!("certs.rs");
        let chmod = ["set_", "permissions("].concat();
        assert!(!source.contains(&chmod), "no mode is changed after writing");
        assert!(source.contains("atomic_write_private(path, bytes)"));
    }

    #[test]
    fn bad_names_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("fed");
        let e = init(&out, &["../x".into()], &[], Validity::days_from_now(1)).expect_err("bad");
        assert!(e.to_string().contains("organisation \"../x\""), "{e}");
        assert!(!out.exists());
        let e = init(
            &out,
            &["a".into()],
            &["a b".into()],
            Validity::days_from_now(1),
        )
        .expect_err("bad host");
        assert!(e.to_string().starts_with("host"), "{e}");
    }

    #[test]
    fn pem_encoding_matches_the_reader() {
        for len in [0usize, 1, 2, 3, 47, 48, 49, 100] {
            let der: Vec<u8> = (0..len).map(|i| (i * 37 % 256) as u8).collect();
            let pem = pem_private_key(&der);
            let back = rustls_pki_types::PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes());
            if len == 0 {
                continue;
            }
            assert_eq!(back.expect("parses").secret_pkcs8_der(), &der[..], "{len}");
        }
    }
}
