//! The request headers a fetch's options ask for, checked once per fetch.

use http::HeaderValue;
use http::header::HeaderName;

use super::{DEFAULT_ACCEPT, FetchOptions};
use crate::error::FetchError;

/// The checked headers of one fetch.
pub(super) struct RequestHeaders {
    /// The `Accept` header.
    pub(super) accept: HeaderValue,
    /// The extra headers, sent to the first URL's host only.
    pub(super) extra: Vec<(HeaderName, HeaderValue)>,
}

/// Which option was being checked when a header was refused.
enum Part {
    /// The accepted media types.
    Accept,
    /// The name of the extra header at this index.
    Name(usize),
    /// The value of the extra header with this name.
    Value(HeaderName),
}

impl RequestHeaders {
    /// Checks the headers of `options`.
    ///
    /// # Errors
    /// [`FetchError::Config`] naming the option that is not a valid header.
    pub(super) fn of(options: &FetchOptions) -> Result<Self, FetchError> {
        let mut part = Part::Accept;
        Self::check(options, &mut part).map_err(|e| {
            let what = match part {
                Part::Accept => format!("accept {:?}", options.accept.as_deref().unwrap_or("")),
                Part::Name(i) => format!("header name {:?}", options.headers[i].0),
                Part::Value(name) => format!("header {name}"),
            };
            FetchError::bad_setting(what, e)
        })
    }

    /// [`of`](Self::of) before its error names the option: `part` says which
    /// one was checked last.
    fn check(options: &FetchOptions, part: &mut Part) -> Result<Self, http::Error> {
        let accept = match &options.accept {
            Some(a) => HeaderValue::from_str(a)?,
            None => HeaderValue::from_static(DEFAULT_ACCEPT),
        };
        let mut extra = Vec::with_capacity(options.headers.len());
        for (i, (name, value)) in options.headers.iter().enumerate() {
            *part = Part::Name(i);
            let name = HeaderName::from_bytes(name.as_bytes())?;
            *part = Part::Value(name.clone());
            extra.push((name, HeaderValue::from_str(value)?));
        }
        Ok(RequestHeaders { accept, extra })
    }
}
