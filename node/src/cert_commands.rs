//! `dpagg-node certs init|issue` (part of the binary): a development CA and identity folders,
//! made by [`dpagg_shared::identity::certs`].

use anyhow::Result;
use clap::Subcommand;
use dpagg_shared::cli::Out;
use std::io::Write;
use std::path::PathBuf;

/// `dpagg-node certs …`.
#[derive(Debug, Subcommand)]
pub(crate) enum Certs {
    /// Create a CA in OUT/ca and an identity folder OUT/ORG for each organisation.
    Init {
        /// Folder to create (refused if OUT/ca exists: keys are never overwritten).
        #[arg(long)]
        out: PathBuf,
        /// Organisations (comma-separated or repeated), e.g. hospital-a,hospital-b,aggregator.
        #[arg(long = "org", value_delimiter = ',', required = true)]
        orgs: Vec<String>,
        /// Extra host names or IP addresses the nodes are dialled by (comma-separated).
        #[arg(long = "host", value_delimiter = ',')]
        hosts: Vec<String>,
        /// Days the organisations' certificates are valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
    },
    /// Issue an identity folder OUT/ORG with an existing CA.
    Issue {
        /// The CA folder (ca.pem and ca.key), e.g. federation/ca.
        #[arg(long)]
        ca: PathBuf,
        /// Folder under which ORG/ and public-keys/ORG.pub are written.
        #[arg(long)]
        out: PathBuf,
        /// The organisation.
        #[arg(long = "org")]
        org: String,
        /// Extra host names or IP addresses (comma-separated).
        #[arg(long = "host", value_delimiter = ',')]
        hosts: Vec<String>,
        /// Days the certificate is valid.
        #[arg(long, default_value_t = 365)]
        days: u32,
        /// Start of validity (RFC 3339, e.g. 2020-01-01T00:00:00Z) [default: an hour ago].
        #[arg(long, value_parser = parse_time)]
        not_before: Option<time::OffsetDateTime>,
    },
}

fn parse_time(s: &str) -> Result<time::OffsetDateTime, String> {
    humantime::parse_rfc3339(s)
        .map(time::OffsetDateTime::from)
        .map_err(|e| format!("{e} (e.g. 2020-01-01T00:00:00Z)"))
}

/// `certs init` and `certs issue`: a development CA and identity folders.
pub(crate) fn certs(command: Certs, out: &mut Out) -> Result<()> {
    use dpagg_shared::identity::certs::{Validity, init, issue};
    let dirs = match command {
        Certs::Init {
            out: folder,
            orgs,
            hosts,
            days,
        } => init(&folder, &orgs, &hosts, Validity::days_from_now(days))?,
        Certs::Issue {
            ca,
            out: folder,
            org,
            hosts,
            days,
            not_before,
        } => {
            let validity = not_before.map_or_else(
                || Validity::days_from_now(days),
                |start| Validity::from(start, days),
            );
            vec![issue(&ca, &org, &folder, &hosts, validity)?]
        }
    };
    for d in dirs {
        writeln!(
            out,
            "{}: ca.pem cert.pem key.pem signing.key signing.pub",
            d.display()
        )?;
    }
    Ok(())
}
