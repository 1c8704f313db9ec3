//! A file's bytes as text: UTF-8 checked up front (a non-UTF-8 export is one clear line naming
//! where it fails), a byte-order mark dropped, the separator declared or detected, and 1-based
//! line numbers of byte offsets counted by us (LF, CRLF and lone CR each end one line), so an
//! error in a CRLF file names the line an editor shows.

use super::DataError;
use crate::data::schema::{Schema, Separator};

/// The whole input as UTF-8 text, without a leading byte-order mark.
pub(crate) struct Text {
    bytes: Vec<u8>,
    /// Byte offset where the text starts (3 after a BOM, else 0).
    start: usize,
    /// Byte offsets (into the text) at which each line after the first starts.
    line_starts: Vec<usize>,
}

impl Text {
    /// Reads `reader` to the end and checks that it is UTF-8.
    pub(crate) fn read<R: std::io::Read>(mut reader: R, origin: &str) -> Result<Self, DataError> {
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|source| DataError::Io {
                origin: origin.to_owned(),
                source,
            })?;
        let start = if bytes.starts_with(b"\xEF\xBB\xBF") {
            3
        } else {
            0
        };
        let line_starts = line_starts(&bytes[start..]);
        let text = Self {
            bytes,
            start,
            line_starts,
        };
        if let Err(e) = std::str::from_utf8(text.as_bytes()) {
            let at = e.valid_up_to();
            return Err(DataError::NotUtf8 {
                origin: origin.to_owned(),
                line: text.line_of(at),
                byte: text.as_bytes()[at],
            });
        }
        Ok(text)
    }

    /// The text's bytes (valid UTF-8, BOM excluded).
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[self.start..]
    }

    /// The 1-based line of byte offset `at` of the text.
    pub(crate) fn line_of(&self, at: usize) -> u64 {
        (self.line_starts.partition_point(|&s| s <= at) + 1) as u64
    }

    /// The line of a record that the parser says starts at `at`: after a CR the parser starts
    /// the next record at the LF that follows it (which is why its own line numbers are one
    /// too low in CRLF files), so line terminators at `at` are skipped first.
    pub(crate) fn record_line(&self, at: usize) -> u64 {
        let bytes = self.as_bytes();
        let mut at = at;
        while matches!(bytes.get(at), Some(b'\r' | b'\n')) {
            at += 1;
        }
        self.line_of(at)
    }

    /// The first line, without its terminator.
    pub(crate) fn first_line(&self) -> &str {
        let bytes = self.as_bytes();
        let end = self.line_starts.first().copied().unwrap_or(bytes.len());
        std::str::from_utf8(&bytes[..end])
            .unwrap_or_default()
            .trim_end_matches(['\r', '\n'])
    }

    /// The separator: the schema's `[csv] separator`, or detected from the header line.
    pub(crate) fn separator(&self, schema: &Schema) -> Separator {
        schema
            .csv
            .as_ref()
            .and_then(|c| c.separator)
            .unwrap_or_else(|| Separator::detect(self.first_line()))
    }
}

/// Offsets at which lines 2, 3, … start: after every LF, and after every CR not followed by LF.
fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        let ends_line = b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
        if ends_line {
            starts.push(i + 1);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &[u8]) -> Text {
        Text::read(s, "t.csv").expect("utf-8")
    }

    #[test]
    fn lines_of_lf_crlf_and_cr_files() {
        for sep in ["\n", "\r\n", "\r"] {
            let body = ["a,b", "1,2", "3,4"].join(sep);
            let t = text(body.as_bytes());
            let third = body.find('3').expect("3");
            assert_eq!(t.line_of(0), 1, "{sep:?}");
            assert_eq!(t.line_of(third), 3, "{sep:?}");
            assert_eq!(t.first_line(), "a,b");
        }
    }

    #[test]
    fn a_bom_is_dropped_and_lines_still_count_from_one() {
        let t = text(b"\xEF\xBB\xBFa;b\r\n1;2\r\n");
        assert_eq!(t.as_bytes(), b"a;b\r\n1;2\r\n");
        assert_eq!(t.first_line(), "a;b");
        assert_eq!(t.line_of(5), 2);
    }

    #[test]
    fn non_utf8_names_the_line_and_byte() {
        let e = Text::read(&b"a,b\n1,2\n3,\xe9t\xe9\n"[..], "t.csv")
            .err()
            .expect("latin-1");
        let msg = e.to_string();
        assert!(msg.starts_with("t.csv:3: not UTF-8 text"), "{msg}");
        assert!(msg.contains("0xe9") && msg.contains("UTF-8"), "{msg}");
        assert!(!msg.contains('\n'));
    }
}
