//! How a file is written: missing-value markers and the `[csv]` table.
//!
//! Hospitals' tools write "not measured" in many ways: an empty cell, `NA`, `NULL`, or a number
//! such as `0` or `-999`. A schema declares them, per feature (`missing = 0`, `missing = "NA"`,
//! `missing = [0, "", "NA"]`) or for every feature at once (`[csv] missing = ["", "NA"]`). A cell
//! equal to a text marker (after trimming), or whose number equals a numeric marker, is
//! *missing*: the ball map sends it to z = 0 (the feature's centre), the paper map to the middle
//! of [lo, hi] (0 before the √dim scaling), and raw-unit data releases replace it by
//! [`super::FeatureSpec::raw_of_center`]. A missing value is never clipped and is counted apart
//! (`check` reports the counts). Any other cell must be a finite number.
//!
//! The `[csv]` table also names the separator (`,` `;` tab or `|`); without it the separator is
//! detected from the header line. It describes a file's encoding, not what the data means, so it
//! is left out of the schema's fingerprint: organisations whose exports differ can share one
//! schema.

use serde::{Deserialize, Serialize};

/// One missing-value marker: a number or a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Marker {
    /// A raw number that means "not measured" (e.g. `0` in Pima glucose).
    Number(f64),
    /// A cell text that means "not measured" (e.g. `""`, `"NA"`), compared after trimming.
    Text(String),
}

/// One marker or several, as written in TOML (`missing = 0` or `missing = [0, "NA"]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Markers {
    /// A single marker (the form schemas had before lists; serialised the same way).
    One(Marker),
    /// Several markers.
    Many(Vec<Marker>),
}

impl Markers {
    /// Every marker.
    pub fn iter(&self) -> impl Iterator<Item = &Marker> {
        match self {
            Self::One(m) => std::slice::from_ref(m).iter(),
            Self::Many(v) => v.iter(),
        }
    }

    /// Whether the raw number `v` is one of the numeric markers.
    pub fn has_number(&self, v: f64) -> bool {
        self.iter()
            .any(|m| matches!(m, Marker::Number(x) if *x == v))
    }

    /// Whether the (trimmed) cell `text` is one of the text markers.
    pub fn has_text(&self, text: &str) -> bool {
        self.iter()
            .any(|m| matches!(m, Marker::Text(t) if t.trim() == text))
    }

    /// The first numeric marker, if any.
    pub fn first_number(&self) -> Option<f64> {
        self.iter().find_map(|m| match m {
            Marker::Number(x) => Some(*x),
            Marker::Text(_) => None,
        })
    }

    /// The first numeric marker that is not finite, if any.
    pub fn non_finite(&self) -> Option<f64> {
        self.iter().find_map(|m| match m {
            Marker::Number(x) if !x.is_finite() => Some(*x),
            _ => None,
        })
    }
}

/// A column separator a schema may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Separator {
    /// `,` (the default).
    #[serde(rename = ",")]
    Comma,
    /// `;` (Excel in locales whose decimal mark is a comma).
    #[serde(rename = ";")]
    Semicolon,
    /// A tab (`"\t"` in TOML).
    #[serde(rename = "\t")]
    Tab,
    /// `|`.
    #[serde(rename = "|")]
    Pipe,
}

impl Separator {
    /// Every separator, in detection order.
    pub const ALL: [Separator; 4] = [Self::Comma, Self::Semicolon, Self::Tab, Self::Pipe];

    /// The byte.
    pub fn byte(self) -> u8 {
        match self {
            Self::Comma => b',',
            Self::Semicolon => b';',
            Self::Tab => b'\t',
            Self::Pipe => b'|',
        }
    }

    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Comma => "','",
            Self::Semicolon => "';'",
            Self::Tab => "tab",
            Self::Pipe => "'|'",
        }
    }

    /// How a schema declares it (`separator = …`).
    pub fn toml(self) -> &'static str {
        match self {
            Self::Comma => "\",\"",
            Self::Semicolon => "\";\"",
            Self::Tab => "\"\\t\"",
            Self::Pipe => "\"|\"",
        }
    }

    /// The separator a header line uses: the candidate that occurs most often outside quotes
    /// (a comma on ties and when none occurs).
    pub fn detect(header: &str) -> Separator {
        let mut counts = [0usize; 4];
        let mut quoted = false;
        for b in header.bytes() {
            if b == b'"' {
                quoted = !quoted;
            } else if !quoted && let Some(k) = Self::ALL.iter().position(|s| s.byte() == b) {
                counts[k] += 1;
            }
        }
        let best = (0..4).fold(0, |best, k| if counts[k] > counts[best] { k } else { best });
        Self::ALL[best]
    }
}

/// The schema's `[csv]` table: how the organisations' files are written.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvFormat {
    /// The column separator; detected from the header line when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separator: Option<Separator>,
    /// Cells that mean "not measured" in every feature column (e.g. `["", "NA"]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Markers>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize)]
    struct Holder {
        missing: Markers,
    }

    fn markers(toml_text: &str) -> Markers {
        toml::from_str::<Holder>(toml_text).expect("parses").missing
    }

    #[test]
    fn one_or_many_numbers_and_texts() {
        let m = markers("missing = 0");
        assert!(m.has_number(0.0) && !m.has_number(1.0) && !m.has_text("0"));
        let m = markers("missing = [0, \"\", \"NA\", -999.5]");
        assert!(m.has_number(0.0) && m.has_number(-999.5));
        assert!(m.has_text("") && m.has_text("NA") && !m.has_text("na"));
        let m = markers("missing = \" NA \"");
        assert!(m.has_text("NA"), "markers are compared trimmed");
    }

    #[test]
    fn a_single_number_serialises_as_before() {
        // Schemas that had `missing = 0.0` keep their canonical form (and fingerprint).
        let json = serde_json::to_string(&markers("missing = 0.0")).expect("json");
        assert_eq!(json, "0.0");
        assert_eq!(
            serde_json::to_string(&Marker::Number(0.0)).expect("json"),
            "0.0"
        );
    }

    #[test]
    fn separators_are_detected_outside_quotes() {
        assert_eq!(Separator::detect("a,b,c"), Separator::Comma);
        assert_eq!(Separator::detect("a;b;c"), Separator::Semicolon);
        assert_eq!(Separator::detect("a\tb\tc"), Separator::Tab);
        assert_eq!(Separator::detect("\"x;y\",b"), Separator::Comma);
        assert_eq!(Separator::detect("single"), Separator::Comma);
        assert_eq!(Separator::detect("a|b;c|d"), Separator::Pipe);
    }

    #[test]
    fn the_csv_table_reads_every_separator() {
        for (text, want) in [
            (r#"separator = ",""#, Separator::Comma),
            (r#"separator = ";""#, Separator::Semicolon),
            (r#"separator = "\t""#, Separator::Tab),
            (r#"separator = "|""#, Separator::Pipe),
        ] {
            let t: CsvFormat = toml::from_str(text).expect(text);
            assert_eq!(t.separator, Some(want));
            assert_eq!(
                toml::from_str::<CsvFormat>(&format!("separator = {}", want.toml()))
                    .expect("round trip")
                    .separator,
                Some(want)
            );
        }
        assert!(toml::from_str::<CsvFormat>(r#"separator = ":""#).is_err());
        assert!(toml::from_str::<CsvFormat>("sep = \",\"").is_err());
    }
}
