//! Where an error leaves the program as text: its chain joined once.
//!
//! An error's message says only its own layer, and its cause stays a typed
//! [`source`](std::error::Error::source). The text a model reads joins the chain
//! here, once; a terminal joins it with anyhow's `{:#}`, which reads the same.
//!
//! ```
//! use toolbelt_core::error_chain;
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("could not read the saved output out.txt")]
//! struct ReadFailed(#[source] std::io::Error);
//!
//! let e = ReadFailed(std::io::Error::other("disk on fire"));
//! assert_eq!(error_chain(&e), "could not read the saved output out.txt: disk on fire");
//! ```

use std::error::Error;

/// The messages of `error` and of its sources, outermost first, joined with `": "`.
pub fn error_chain(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("the rules cannot be read")]
        Rules(#[source] Middle),
        #[error(transparent)]
        Through(Middle),
    }

    #[derive(Debug, thiserror::Error)]
    #[error("line 3 is not a rule")]
    struct Middle(#[source] std::io::Error);

    #[test]
    fn every_layer_once_outermost_first() {
        let inner = || Middle(std::io::Error::other("unexpected end"));
        assert_eq!(
            error_chain(&Outer::Rules(inner())),
            "the rules cannot be read: line 3 is not a rule: unexpected end"
        );
        assert_eq!(
            error_chain(&Outer::Through(inner())),
            "line 3 is not a rule: unexpected end"
        );
        assert_eq!(error_chain(&std::io::Error::other("alone")), "alone");
    }
}
