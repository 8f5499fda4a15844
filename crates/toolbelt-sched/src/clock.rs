//! [`Clock`]: where the scheduler and the outbox read the time, so tests can set it.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of the current time, in milliseconds since the Unix epoch (UTC).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Now.
    fn now_ms(&self) -> i64;
}

/// The system's clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        toolbelt_store::now_ms()
    }
}

/// A clock that says what it is told: for tests (DST days, missed firings).
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicI64,
}

impl ManualClock {
    /// A clock standing at `now_ms`.
    pub fn new(now_ms: i64) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            now: AtomicI64::new(now_ms),
        })
    }

    /// Sets the time.
    pub fn set(&self, now_ms: i64) {
        self.now.store(now_ms, Ordering::SeqCst);
    }

    /// Moves the time on by `ms`.
    pub fn advance(&self, ms: i64) {
        self.now.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.now.load(Ordering::SeqCst)
    }
}
