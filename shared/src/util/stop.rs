//! [`Stop`]: how a caller ends long work early — a shared flag (shutdown, a client gone) and/or a
//! deadline (a server-side cap on training time that no client can raise).
//!
//! Long loops (Langevin chains, DP-SGD steps, BST iterations) call [`Stop::check`] every so
//! often; a stopped release returns [`Stopped`] and releases nothing. Checking costs one relaxed
//! atomic load and, with a deadline, one clock read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// When to give up. The default never stops.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    flag: Option<Arc<AtomicBool>>,
    deadline: Option<Instant>,
}

/// Why work stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    /// The flag was raised (e.g. the server is shutting down).
    #[error("stopped: the work was cancelled")]
    Cancelled,
    /// The deadline passed.
    #[error("stopped: the time limit for this work passed")]
    DeadlinePassed,
}

impl Stop {
    /// Never stops.
    pub fn never() -> Self {
        Self::default()
    }

    /// Stops once `flag` is set.
    pub fn on_flag(flag: Arc<AtomicBool>) -> Self {
        Self {
            flag: Some(flag),
            deadline: None,
        }
    }

    /// The same, and also stops at `deadline`.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// `Err` once the flag is set or the deadline has passed.
    pub fn check(&self) -> Result<(), Stopped> {
        if self
            .flag
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
        {
            return Err(Stopped::Cancelled);
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(Stopped::DeadlinePassed);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn flag_and_deadline_stop() {
        assert!(Stop::never().check().is_ok());
        let flag = Arc::new(AtomicBool::new(false));
        let stop = Stop::on_flag(flag.clone());
        assert!(stop.check().is_ok());
        flag.store(true, Ordering::Relaxed);
        assert_eq!(stop.check(), Err(Stopped::Cancelled));
        let past = Stop::never().with_deadline(Instant::now());
        assert_eq!(past.check(), Err(Stopped::DeadlinePassed));
        let future = Stop::never().with_deadline(Instant::now() + Duration::from_secs(3600));
        assert!(future.check().is_ok());
    }
}
