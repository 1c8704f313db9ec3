//! Wall-clock time as releases and reports record it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The last millisecond RFC 3339 can write (9999-12-31T23:59:59.999Z).
const LAST_MS: i64 = 253_402_300_799_999;

/// RFC 3339 text of a Unix time in milliseconds, e.g. `2026-11-23T14:37:15.000Z`; times before
/// the epoch or after year 9999 (a peer's release may claim any) are clamped to them.
pub fn rfc3339(unix_ms: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(unix_ms.clamp(0, LAST_MS) as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_the_epoch_and_clamps_negative_times() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(-5), "1970-01-01T00:00:00.000Z");
        assert!(now_ms() > 1_700_000_000_000);
    }

    #[test]
    fn times_after_year_9999_are_clamped_not_a_panic() {
        // Found by proto/tests/fuzz.rs: humantime refuses years above 9999 with fmt::Error,
        // which `to_string` turned into a panic when a peer's release claimed such a time.
        assert_eq!(rfc3339(LAST_MS), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(LAST_MS + 1), "9999-12-31T23:59:59.999Z");
        assert_eq!(rfc3339(i64::MAX), "9999-12-31T23:59:59.999Z");
    }
}
