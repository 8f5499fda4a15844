//! [`Secret`]: a value that must not be shown (an API key, a token, a password, a
//! webhook URL), shared by the crates that hold such values.

use std::fmt;

/// A value that must not be shown. Its `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value`.
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The value itself, for the one place that sends it.
    ///
    /// # Security
    /// Never log, print or store what this returns.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neither_debug_nor_display_shows_the_value() {
        let s = Secret::new("sk-very-secret");
        assert_eq!(
            format!("{s:?} {s} {:?}", Some(&s)),
            "Secret(***) *** Some(Secret(***))"
        );
        assert_eq!(s.expose(), "sk-very-secret");
    }
}
