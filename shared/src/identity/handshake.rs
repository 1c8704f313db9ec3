//! Handshake failures classified: which ones a retry would meet again, explained in words an
//! operator can act on.

use tokio_rustls::rustls;

/// What went wrong in a TLS handshake, in words an operator can act on, when `error` (a
/// connection failure and its causes) holds a rustls error that a retry would meet again: a
/// certificate from another CA, an expired one, one refused by the server, or a peer that does
/// not speak TLS. `None` for failures that may pass (refused connection, timeout, reset).
pub fn handshake_problem(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let tls = std::iter::successors(Some(error), |e| e.source()).find_map(|e| {
        e.downcast_ref::<rustls::Error>().or_else(|| {
            e.downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::get_ref)
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        })
    })?;
    Some(describe_tls(tls))
}

/// One rustls error explained.
fn describe_tls(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    let wrong_ca = "the node's certificate is not signed by this federation's CA: check ca.pem \
                    in the identity folder, or another TLS service answers on that port";
    match e {
        E::InvalidCertificate(c) => match c {
            C::BadSignature | C::UnknownIssuer | C::BadEncoding => wrong_ca.into(),
            C::Expired | C::ExpiredContext { .. } => {
                "the node's certificate has expired: issue it a new one (dpagg-node certs issue)"
                    .into()
            }
            C::NotValidYet | C::NotValidYetContext { .. } => {
                "the node's certificate is not valid yet (check the clocks)".into()
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                "the node's certificate does not name the host dialled: issue it with --host".into()
            }
            other => format!("the node's certificate was refused ({other:?})"),
        },
        E::AlertReceived(
            A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::CertificateRequired,
        ) => "the node refused this client's certificate: is it from the node's CA (the \
              identity folder given)?"
            .into(),
        E::AlertReceived(A::CertificateExpired) => {
            "the node refused this client's certificate as expired".into()
        }
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => {
            "the port does not speak TLS: a plain-text node is dialled with http:// and \
             --insecure, or another kind of server listens there"
                .into()
        }
        other => format!("TLS handshake failed: {other}"),
    }
}
