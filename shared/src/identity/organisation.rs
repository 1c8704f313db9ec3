//! Organisation identities: the id rules and the one `dpagg://org/<id>` URI a certificate names.

use super::TlsError;

/// The URI prefix of an organisation identity in a certificate.
pub const IDENTITY_PREFIX: &str = "dpagg://org/";

/// Longest organisation id.
pub const MAX_ORGANISATION_ID: usize = 64;

/// Checks an organisation id: 1 to 64 characters from `A–Z a–z 0–9 . _ -`, starting with a letter
/// or digit. Ids appear in certificates, file names, logs and reports, so nothing else is allowed.
pub fn check_organisation_id(id: &str) -> Result<(), String> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if id.is_empty() || id.len() > MAX_ORGANISATION_ID {
        return Err(format!("1 to {MAX_ORGANISATION_ID} characters"));
    }
    if !id.chars().all(ok_char) || !id.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(
            "letters, digits, '.', '_' and '-' only, starting with a letter or digit".into(),
        );
    }
    Ok(())
}

/// The identity URI of an organisation.
pub fn identity_uri(organisation_id: &str) -> String {
    format!("{IDENTITY_PREFIX}{organisation_id}")
}

/// The organisation a certificate (DER) names: its one `dpagg://org/<id>` URI SAN.
pub fn organisation_of(cert: &[u8]) -> Result<String, TlsError> {
    use x509_parser::extensions::GeneralName;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert)
        .map_err(|e| TlsError::Identity(format!("unparsable certificate ({e})")))?;
    let san = parsed
        .subject_alternative_name()
        .map_err(|e| TlsError::Identity(format!("bad subject alternative names ({e})")))?;
    let ids: Vec<&str> = san
        .iter()
        .flat_map(|s| s.value.general_names.iter())
        .filter_map(|n| match n {
            GeneralName::URI(u) => u.strip_prefix(IDENTITY_PREFIX),
            _ => None,
        })
        .collect();
    match ids.as_slice() {
        [one] => {
            check_organisation_id(one)
                .map_err(|why| TlsError::Identity(format!("invalid id in certificate: {why}")))?;
            Ok((*one).to_owned())
        }
        [] => Err(TlsError::Identity(format!(
            "no {IDENTITY_PREFIX}<id> subject alternative name"
        ))),
        _ => Err(TlsError::Identity(format!(
            "{} {IDENTITY_PREFIX} names",
            ids.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn organisation_ids_are_restricted() {
        for good in ["org-1", "hospital_a", "a", "B.2"] {
            assert!(check_organisation_id(good).is_ok(), "{good}");
        }
        let long = "x".repeat(65);
        for bad in [
            "",
            "-x",
            ".hidden",
            "a b",
            "a/b",
            "é",
            "a\u{1b}[31m",
            long.as_str(),
        ] {
            assert!(check_organisation_id(bad).is_err(), "{bad:?}");
        }
    }
}
