//! Why a permission rule was refused.

/// Why a permission rule was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The rule is blank.
    #[error("a permission rule is empty; write `tool` or `tool(specifier)`")]
    Empty,
    /// Nothing precedes the `(`.
    #[error(
        "permission rule {rule:?} has no tool name; write `tool(specifier)`, or `*(specifier)` for any tool"
    )]
    EmptyTool {
        /// The rule as written.
        rule: String,
    },
    /// The tool part has characters a tool name cannot have.
    #[error(
        "permission rule {rule:?} names the tool {tool:?}; tool names use letters, digits, `_`, `-` and `.`, with an optional trailing `*`"
    )]
    BadToolName {
        /// The rule as written.
        rule: String,
        /// The tool part.
        tool: String,
    },
    /// A `(` without its closing `)` at the end, or a stray `)`.
    #[error(
        "permission rule {rule:?} has unbalanced parentheses; write `tool` or `tool(specifier)`, with the closing `)` last"
    )]
    Unbalanced {
        /// The rule as written.
        rule: String,
    },
    /// `tool()` or `tool(:*)`.
    #[error(
        "permission rule {rule:?} has an empty specifier; write the tool name alone to match every call"
    )]
    EmptySpecifier {
        /// The rule as written.
        rule: String,
    },
    /// A path pattern that is not a valid glob.
    #[error("permission rule {rule:?} has an invalid path pattern")]
    BadGlob {
        /// The rule as written.
        rule: String,
        /// What is wrong with the glob.
        #[source]
        source: globset::Error,
    },
    /// A `domain:` specifier that is not a host name or IP address.
    #[error(
        "permission rule {rule:?} has an invalid domain {domain:?} ({reason}); write `domain:example.com` without scheme, port or path"
    )]
    BadDomain {
        /// The rule as written.
        rule: String,
        /// The text after `domain:`.
        domain: String,
        /// What is wrong with it. Text, not a source: the message says it inside
        /// the sentence, in parentheses, and most reasons are this crate's own.
        reason: String,
    },
    /// A `domain:` specifier whose host the URL parser refuses (`a<b.com`).
    #[error("permission rule {rule:?} has an invalid domain {domain:?}")]
    BadHost {
        /// The rule as written.
        rule: String,
        /// The text after `domain:`.
        domain: String,
        /// Why the URL parser refuses it.
        #[source]
        source: url::ParseError,
    },
    /// A URL tool's rule without `domain:`.
    #[error(
        "permission rule {rule:?}: rules for {tool} take `domain:HOST`, e.g. `{tool}(domain:example.com)`"
    )]
    NeedsDomain {
        /// The rule as written.
        rule: String,
        /// The tool part.
        tool: String,
    },
    /// A path given to [`crate::Policy::with_protected_paths`] that cannot be
    /// matched.
    #[error("the protected path {path:?} is {reason}; give a file or directory as a UTF-8 path")]
    BadProtectedPath {
        /// The path as given.
        path: std::path::PathBuf,
        /// What is wrong with it (`empty`, `not valid UTF-8`).
        reason: &'static str,
    },
}

impl From<PolicyError> for toolbelt_core::RegistryError {
    fn from(e: PolicyError) -> toolbelt_core::RegistryError {
        toolbelt_core::RegistryError::Rules(Box::new(e))
    }
}
