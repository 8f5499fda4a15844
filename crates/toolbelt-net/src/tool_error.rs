//! The errors of this crate as the tool layer's [`ToolError`]: a code, the message
//! and what to try next, so that a tool writes `?`.

use toolbelt_core::{ErrorCode, ToolError, error_chain};

use crate::error::FetchError;
use crate::search::SearchError;

/// ACCESS_DENIED for a blocked address, INVALID_PARAMS for a URL the model must fix,
/// TIMEOUT, and NETWORK for the rest.
impl From<FetchError> for ToolError {
    fn from(e: FetchError) -> ToolError {
        ToolError::from(&e)
    }
}

impl From<&FetchError> for ToolError {
    fn from(e: &FetchError) -> ToolError {
        let message = error_chain(e);
        match e {
            FetchError::Blocked { .. } => ToolError::new(ErrorCode::AccessDenied, message)
                .hint("private, loopback and metadata addresses are not fetched; use a public URL"),
            FetchError::InvalidUrl { .. }
            | FetchError::UnsupportedScheme { .. }
            | FetchError::Credentials { .. }
            | FetchError::MissingHost { .. } => ToolError::new(ErrorCode::InvalidParams, message)
                .hint("give a full http:// or https:// URL without user name or password"),
            FetchError::Timeout { .. } => ToolError::new(ErrorCode::Timeout, message)
                .hint("the server is slow or not answering; try again later or another source"),
            FetchError::TooManyRedirects { .. }
            | FetchError::RedirectLoop { .. }
            | FetchError::BadRedirect { .. } => ToolError::new(ErrorCode::Network, message),
            _ => ToolError::new(ErrorCode::Network, message)
                .hint("check the URL; the site may be down or unreachable from here"),
        }
    }
}

/// As a fetch failed; HTTP_STATUS for a refusing engine (rate limit, key).
impl From<SearchError> for ToolError {
    fn from(e: SearchError) -> ToolError {
        let message = error_chain(&e);
        match e {
            SearchError::Fetch { source, .. } => ToolError::from(&source),
            SearchError::RateLimited { .. } => ToolError::new(ErrorCode::HttpStatus, message)
                .hint("wait a minute before searching again"),
            SearchError::Unauthorized { .. } => ToolError::new(ErrorCode::AccessDenied, message)
                .hint("the search API key is missing or wrong; the server's operator must set it"),
            _ => ToolError::new(ErrorCode::HttpStatus, message),
        }
    }
}
