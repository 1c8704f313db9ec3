//! `dpagg-node split`: deal the rows of one CSV file over several organisations, to try dpagg by
//! hand with one public dataset (README, "Running organisations by hand").
//!
//! The rows are shuffled with a seed (this is a simulation aid: no release depends on it) and
//! dealt in turn, so the parts' sizes differ by at most one row. Each part keeps the header and
//! is written atomically as `OUT/NAME.csv`; nothing is written unless every part can be. Fields
//! are re-quoted only where CSV needs it, so values are copied exactly, and the parts keep the
//! input's separator (`,` `;` tab or `|`, detected from the header line as the loader does).

use dpagg_shared::data::schema::Separator;
use dpagg_shared::util::files::atomic_write;
use dpagg_shared::util::seed::derived_rng;
use rand::seq::SliceRandom;
use std::path::{Path, PathBuf};

/// Why a split failed.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// The input cannot be read or parsed.
    #[error("{path}: {reason}")]
    Input {
        /// The input file.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// A part name is not usable as a file name.
    #[error(
        "--into: `{0}` is not a usable organisation name (letters, digits, `-`, `_` and `.`; not starting with `.`)"
    )]
    BadName(String),
    /// The same name twice.
    #[error("--into: `{0}` appears twice")]
    DuplicateName(String),
    /// Too few names or rows.
    #[error(
        "{path}: {rows} data row(s) cannot be dealt over {parts} organisation(s): give at least 2 names and at most one per row"
    )]
    TooFew {
        /// The input file.
        path: String,
        /// Rows read.
        rows: usize,
        /// Parts asked for.
        parts: usize,
    },
    /// A part cannot be written.
    #[error("{path}: cannot write: {source}")]
    Write {
        /// The part.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

/// Checks that `name` can be a file name on every platform we run on.
fn check_name(name: &str) -> Result<(), SplitError> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(SplitError::BadName(name.to_owned()))
    }
}

/// The header and data rows of `input`, read with the separator its header line uses (`,` `;`
/// tab or `|`, as the loader detects it).
struct Table {
    header: csv::StringRecord,
    rows: Vec<csv::StringRecord>,
    separator: u8,
}

/// Reads `input`.
fn read(input: &Path) -> Result<Table, SplitError> {
    let path = input.display().to_string();
    let bad = |e: csv::Error| SplitError::Input {
        path: path.clone(),
        reason: e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
    };
    let bytes = std::fs::read(input).map_err(|e| SplitError::Input {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let text = String::from_utf8_lossy(&bytes);
    let first = text.lines().next().unwrap_or_default();
    let separator = Separator::detect(first.trim_start_matches('\u{feff}')).byte();
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .delimiter(separator)
        .from_reader(bytes.as_slice());
    let header = reader.headers().map_err(bad)?.clone();
    let rows = reader
        .records()
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    Ok(Table {
        header,
        rows,
        separator,
    })
}

/// One part as CSV bytes, with the input's separator.
fn encode(
    header: &csv::StringRecord,
    rows: &[&csv::StringRecord],
    separator: u8,
) -> Result<Vec<u8>, csv::Error> {
    let mut w = csv::WriterBuilder::new()
        .delimiter(separator)
        .from_writer(Vec::new());
    w.write_record(header)?;
    for r in rows {
        w.write_record(*r)?;
    }
    w.into_inner().map_err(|e| csv::Error::from(e.into_error()))
}

/// Deals the rows of `input` over `names` (shuffled with `seed`) into `out/NAME.csv`; returns
/// each file written with its row count.
pub fn split_csv(
    input: &Path,
    names: &[String],
    seed: u64,
    out: &Path,
) -> Result<Vec<(PathBuf, usize)>, SplitError> {
    let mut seen = std::collections::HashSet::new();
    for name in names {
        check_name(name)?;
        if !seen.insert(name) {
            return Err(SplitError::DuplicateName(name.clone()));
        }
    }
    let Table {
        header,
        rows,
        separator,
    } = read(input)?;
    if names.len() < 2 || rows.len() < names.len() {
        return Err(SplitError::TooFew {
            path: input.display().to_string(),
            rows: rows.len(),
            parts: names.len(),
        });
    }
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.shuffle(&mut derived_rng(seed, &[]));
    let mut encoded = Vec::with_capacity(names.len());
    for (k, name) in names.iter().enumerate() {
        let part: Vec<&csv::StringRecord> = order
            .iter()
            .skip(k)
            .step_by(names.len())
            .map(|&i| &rows[i])
            .collect();
        let path = out.join(format!("{name}.csv"));
        let bytes = encode(&header, &part, separator).map_err(|e| SplitError::Write {
            path: path.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        })?;
        encoded.push((path, bytes, part.len()));
    }
    std::fs::create_dir_all(out).map_err(|source| SplitError::Write {
        path: out.display().to_string(),
        source,
    })?;
    let mut written = Vec::with_capacity(encoded.len());
    for (path, bytes, count) in encoded {
        atomic_write(&path, &bytes).map_err(|source| SplitError::Write {
            path: path.display().to_string(),
            source,
        })?;
        written.push((path, count));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn every_row_goes_to_exactly_one_part_and_sizes_differ_by_at_most_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let input = dir.path().join("all.csv");
        let mut text = String::from("a,\"b c\"\n");
        for i in 0..11 {
            text.push_str(&format!("{i},\"x, {i}\"\n"));
        }
        std::fs::write(&input, &text).expect("write");
        let out = dir.path().join("parts");
        let written = split_csv(&input, &names(&["h1", "h2", "agg"]), 7, &out).expect("split");
        let sizes: Vec<usize> = written.iter().map(|(_, n)| *n).collect();
        assert_eq!(sizes, vec![4, 4, 3]);
        let mut all: Vec<String> = Vec::new();
        for (path, n) in &written {
            let part = std::fs::read_to_string(path).expect("read");
            let mut lines = part.lines();
            assert_eq!(lines.next(), Some("a,b c"));
            let rows: Vec<String> = lines.map(str::to_owned).collect();
            assert_eq!(rows.len(), *n);
            all.extend(rows);
        }
        all.sort();
        let mut want: Vec<String> = (0..11).map(|i| format!("{i},\"x, {i}\"")).collect();
        want.sort();
        assert_eq!(all, want, "each row exactly once, values unchanged");
        let again = split_csv(&input, &names(&["h1", "h2", "agg"]), 7, &out).expect("split");
        assert_eq!(
            std::fs::read(&again[0].0).expect("read"),
            std::fs::read(&written[0].0).expect("read"),
            "the same seed deals the same rows"
        );
    }

    #[test]
    fn bad_requests_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let input = dir.path().join("all.csv");
        std::fs::write(&input, "a\n1\n2\n").expect("write");
        let out = dir.path().join("parts");
        for (list, needle) in [
            (vec!["a", "b", "c"], "2 data row(s) cannot be dealt over 3"),
            (vec!["only"], "over 1 organisation"),
            (vec!["a", "a"], "appears twice"),
            (vec!["../x", "b"], "not a usable organisation name"),
        ] {
            let e = split_csv(&input, &names(&list), 1, &out).expect_err("refused");
            assert!(e.to_string().contains(needle), "{e}");
        }
        let missing = split_csv(&dir.path().join("nope.csv"), &names(&["a", "b"]), 1, &out)
            .expect_err("missing");
        assert!(missing.to_string().contains("nope.csv"), "{missing}");
        assert!(!out.exists(), "nothing written");
    }

    #[test]
    fn an_excel_export_keeps_its_separator_and_decimal_commas() {
        let dir = tempfile::tempdir().expect("tempdir");
        let input = dir.path().join("all.csv");
        std::fs::write(&input, "\u{feff}id;bmi;y\r\n1;33,6;yes\r\n2;26,1;no\r\n").expect("write");
        let out = dir.path().join("parts");
        let written = split_csv(&input, &names(&["a", "b"]), 1, &out).expect("split");
        let mut rows = Vec::new();
        for (path, n) in &written {
            let text = std::fs::read_to_string(path).expect("read");
            assert!(text.starts_with("id;bmi;y\n"), "{text}");
            assert_eq!(*n, 1);
            rows.extend(text.lines().skip(1).map(str::to_owned));
        }
        rows.sort();
        assert_eq!(rows, ["1;33,6;yes", "2;26,1;no"]);
    }
}
