//! Rate limits for the log lines a peer can cause: refused handshakes and connections, accept
//! errors, refused and failed calls. Each key (a kind of event, or a caller) may write
//! [`LOGGED_PER_MINUTE`] lines in a one-minute window; the rest are counted, and the count is
//! written with the key's next line (`suppressed_since_last`), so a flood costs the disk a few
//! lines a minute and the operator still learns how big it was.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Lines each key may write per minute; more are counted, not written one by one.
pub const LOGGED_PER_MINUTE: u32 = 20;

/// The window of the limit.
const WINDOW: Duration = Duration::from_secs(60);

/// Keys remembered before windows that have ended are forgotten (bounded memory whatever the
/// number of callers).
const MAX_KEYS: usize = 10_000;

/// One key's window.
#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    logged: u32,
    suppressed: u64,
}

/// Per-key fixed one-minute windows of at most `per_minute` lines.
#[derive(Debug)]
pub struct LogLimit<K> {
    per_minute: u32,
    windows: Mutex<HashMap<K, Window>>,
}

impl<K: Hash + Eq + Clone> Default for LogLimit<K> {
    fn default() -> Self {
        Self::new(LOGGED_PER_MINUTE)
    }
}

impl<K: Hash + Eq + Clone> LogLimit<K> {
    /// A limit of `per_minute` lines per key.
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// `Some(lines suppressed since the key's last written line)` when this event of `key` may
    /// be written at `now`; `None` when it is only counted.
    pub fn admit(&self, key: &K, now: Instant) -> Option<u64> {
        let Ok(mut windows) = self.windows.lock() else {
            return None;
        };
        if windows.len() >= MAX_KEYS && !windows.contains_key(key) {
            // Forget windows that ended with nothing left to report; if a flood of keys
            // leaves no room, the oldest counts go unreported rather than memory growing.
            windows.retain(|_, w| now.duration_since(w.start) < WINDOW || w.suppressed > 0);
            if windows.len() >= MAX_KEYS {
                windows.clear();
            }
        }
        let w = windows.entry(key.clone()).or_insert(Window {
            start: now,
            logged: 0,
            suppressed: 0,
        });
        if now.duration_since(w.start) >= WINDOW {
            w.start = now;
            w.logged = 0;
        }
        if w.logged >= self.per_minute {
            w.suppressed += 1;
            return None;
        }
        w.logged += 1;
        Some(std::mem::take(&mut w.suppressed))
    }

    /// [`LogLimit::admit`] at the current time.
    pub fn admit_now(&self, key: &K) -> Option<u64> {
        self.admit(key, Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_written_up_to_the_quota_then_counted_per_key() {
        let log = LogLimit::new(3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(log.admit(&"a", t0), Some(0));
        }
        assert_eq!(log.admit(&"a", t0), None);
        assert_eq!(log.admit(&"a", t0 + Duration::from_secs(30)), None);
        assert_eq!(
            log.admit(&"b", t0),
            Some(0),
            "another key has its own quota"
        );
        assert_eq!(log.admit(&"a", t0 + Duration::from_secs(61)), Some(2));
        assert_eq!(log.admit(&"a", t0 + Duration::from_secs(62)), Some(0));
    }

    #[test]
    fn a_flood_of_keys_keeps_memory_bounded() {
        let log = LogLimit::new(1);
        let t0 = Instant::now();
        for k in 0..3 * MAX_KEYS {
            assert_eq!(log.admit(&k, t0), Some(0));
        }
        let held = log.windows.lock().expect("lock").len();
        assert!(held <= MAX_KEYS, "{held} windows held");
    }
}
