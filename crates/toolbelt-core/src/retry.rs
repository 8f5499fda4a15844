//! The waits servers ask for before a retry, read from header values as text (the
//! HTTP clients of the channels and of the model providers hand them over; no HTTP
//! types here).

use std::time::{Duration, SystemTime};

/// The wait a `Retry-After` value asks for: seconds (`"2"`, `" 2.5 "`), or an HTTP
/// date (`"Wed, 21 Oct 2015 07:28:00 GMT"`) counted from `now` (a date already past
/// is no wait). `None` for anything else, a negative or an endless number.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at: SystemTime = chrono::DateTime::parse_from_rfc2822(value).ok()?.into();
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The wait a `retry-after-ms` value asks for (OpenAI's), in milliseconds. `None`
/// for anything but a finite number of at least zero.
pub fn retry_after_ms(value: &str) -> Option<Duration> {
    let ms = value.trim().parse::<f64>().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms / 1000.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_dates_and_milliseconds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_450);
        for (value, wait) in [
            ("1", Some(Duration::from_secs(1))),
            (" 2.5 ", Some(Duration::from_millis(2_500))),
            // 30 s after `now`.
            (
                "Wed, 21 Oct 2015 07:28:00 GMT",
                Some(Duration::from_secs(30)),
            ),
            // Past.
            ("Sun, 06 Nov 1994 08:49:37 GMT", Some(Duration::ZERO)),
            ("soon", None),
            ("-3", None),
            ("inf", None),
            ("", None),
        ] {
            assert_eq!(retry_after(value, now), wait, "{value:?}");
        }
        assert_eq!(retry_after_ms("1500"), Some(Duration::from_millis(1_500)));
        assert_eq!(retry_after_ms("-1"), None);
        assert_eq!(retry_after_ms("NaN"), None);
    }
}

/// How failed attempts are tried again (a model request, a message to a channel):
/// at most `max_attempts` in all, the first included; the waits start at
/// `initial_delay` and double after each failure up to `max_delay`; a server's
/// `Retry-After` is honoured up to `max_retry_after` (what a caller does with a
/// longer one, wait that long or give up, is its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The wait after the first failure; doubled after each further one.
    pub initial_delay: Duration,
    /// The longest wait the policy chooses itself.
    pub max_delay: Duration,
    /// The longest `Retry-After` honoured.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 5 attempts, waits of 0.5, 1, 2 and 4 s (up to 60 s), a `Retry-After` of up
    /// to 60 s.
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 5,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `failures`-th failure (1 for the first):
    /// `initial_delay` doubled `failures - 1` times, at most `max_delay`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use toolbelt_core::RetryPolicy;
    ///
    /// let policy = RetryPolicy { max_delay: Duration::from_millis(1_500), ..RetryPolicy::default() };
    /// let waits: Vec<_> = (1..=4).map(|n| policy.backoff(n).as_millis()).collect();
    /// assert_eq!(waits, [500, 1_000, 1_500, 1_500]);
    /// ```
    pub fn backoff(&self, failures: u32) -> Duration {
        let doubling = 2u32.saturating_pow(failures.saturating_sub(1).min(20));
        self.initial_delay
            .saturating_mul(doubling)
            .min(self.max_delay)
    }

    /// Whether another attempt may follow the `attempts` made so far.
    pub fn allows_another(&self, attempts: u32) -> bool {
        attempts < self.max_attempts
    }
}
