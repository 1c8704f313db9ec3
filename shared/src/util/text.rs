//! Text from outside — a peer's ids, messages and reasons, a client's request fields — made safe
//! for logs, reports and terminals: cut to a length and stripped of what reorders or hides text.
//! The node's audit log and the aggregator's reports use this one implementation, so a peer
//! cannot fill a disk through either, nor forge a line with an escape sequence.

/// Longest text kept from a peer (ids, messages, reasons), in characters.
pub const MAX_TEXT: usize = 300;

/// `text` made safe for reports and terminals: control characters (escape sequences, newlines)
/// and the invisible formatting characters that reorder or hide text (bidirectional overrides,
/// zero-width characters) replaced by `�`, cut to `max` characters with `…`. Reads at most
/// `max + 1` characters of `text`, so a cut of a huge string costs what the result does.
pub fn clean(text: &str, max: usize) -> String {
    let hidden = |c: char| {
        c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
    };
    let mut chars = text.chars();
    let mut out: String = chars
        .by_ref()
        .take(max)
        .map(|c| if hidden(c) { '\u{fffd}' } else { c })
        .collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_is_cut_and_marked() {
        let huge = "x".repeat(4_000_000);
        let cut = clean(&huge, MAX_TEXT);
        assert_eq!(cut.chars().count(), MAX_TEXT + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(clean("short", MAX_TEXT), "short");
        assert_eq!(clean(&"é".repeat(5), 5), "ééééé", "exactly max: no mark");
    }

    #[test]
    fn escapes_newlines_and_bidi_overrides_are_replaced() {
        assert_eq!(clean("a\u{1b}[31mb\nc", 20), "a\u{fffd}[31mb\u{fffd}c");
        assert_eq!(clean("id\u{202e}cod.exe", 20), "id\u{fffd}cod.exe");
        assert_eq!(clean("zero\u{200b}width", 20), "zero\u{fffd}width");
    }
}
