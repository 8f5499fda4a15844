//! The call log hook: [`CallLog`] receives one [`CallRecord`] per executed call,
//! with the arguments as a short digest whose secrets are redacted ([`args_digest`]).
//!
//! The registry only hands records over ([`crate::Registry::set_call_log`]); where
//! they are kept (a database, a file) is the implementation's business, and it must
//! not slow the call down.
//!
//! ```
//! use serde_json::json;
//! use toolbelt_core::args_digest;
//!
//! let digest = args_digest(&json!({
//!     "url": "https://api.example.com/v1",
//!     "headers": {"Authorization": "Bearer abc.def.ghi"},
//!     "max_tokens": 100
//! }));
//! assert_eq!(
//!     digest,
//!     r#"{"headers":{"Authorization":"[redacted]"},"max_tokens":100,"url":"https://api.example.com/v1"}"#
//! );
//! ```
//!
//! # Security
//! The digest is written to disk and shown by `toolbelt log`. Redaction is by key
//! (values of keys that name secrets) and by shape (strings that look like
//! credentials, anywhere, also inside longer text such as a shell command). It is a
//! best effort over known shapes, not a guarantee for arbitrary secrets.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::checkpoint::Origin;

/// What replaces a secret in a digest.
pub const REDACTED: &str = "[redacted]";
/// Strings in a digest are cut to this many characters, with a note of their length.
pub const MAX_DIGEST_STRING_CHARS: usize = 200;
/// A whole digest is at most this many characters.
pub const MAX_DIGEST_CHARS: usize = 2000;
/// Of a long string, only the first bytes are scanned for secrets: what is kept
/// ([`MAX_DIGEST_STRING_CHARS`] characters, at most 4 bytes each) and a margin for
/// a secret that starts in the kept part and runs past it (a PEM key block).
const SCAN_WINDOW_BYTES: usize = MAX_DIGEST_STRING_CHARS * 4 + 8192;

/// One executed call, as the call log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallRecord {
    /// When the call started, in milliseconds since the Unix epoch (UTC).
    pub at_ms: i64,
    /// The canonical tool name (or the name asked for, when no tool has it).
    pub tool: String,
    /// The call's id.
    pub call_id: String,
    /// The arguments as received, as a digest: compact JSON, secrets redacted,
    /// long strings cut (see [`args_digest`]).
    pub args: String,
    /// `success`, `partial` or `error`.
    pub status: String,
    /// The error code (`NOT_FOUND`...) of an error.
    pub error_code: Option<String>,
    /// Wall time of the call.
    pub duration_ms: u64,
    /// Bytes handed back: the envelope's text plus its serialised data.
    pub bytes_out: u64,
    /// Where the call came from.
    pub origin: Origin,
    /// The checkpoint taken before the call (`cp-12`), if one was kept.
    pub checkpoint: Option<String>,
    /// The person's hooks that ran for the call.
    pub hooks: Vec<crate::hooks::HookRun>,
}

/// Receives a record of every call a [`crate::Registry`] executes, unknown tools
/// and invalid arguments included, once the envelope is final.
pub trait CallLog: Send + Sync {
    /// Takes one record. Called on the call's own task, before the call's envelope
    /// is handed back to the front end: what it keeps when it returns is kept for a
    /// call whose answer left. It must not wait for a database (hand the record to a
    /// queue, or append it to a local file) and must never fail the call.
    fn record(&self, record: CallRecord);
}

/// The arguments of a call as a digest for the call log: compact JSON with the
/// values of secret-naming keys (see [`is_secret_key`]) and credential-looking
/// text (see [`redact_text`]) replaced by [`REDACTED`], strings cut to
/// [`MAX_DIGEST_STRING_CHARS`] characters and the whole to [`MAX_DIGEST_CHARS`].
/// Arguments sent as a JSON string are parsed first, so their keys are seen.
///
/// # Security
/// Redaction happens before any cut, so a cut never leaves half a secret.
pub fn args_digest(args: &Value) -> String {
    let parsed;
    let value = match args {
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ (Value::Object(_) | Value::Array(_))) => {
                parsed = v;
                &parsed
            }
            _ => args,
        },
        _ => args,
    };
    let redacted = redact_value(value);
    let text = serde_json::to_string(&redacted).unwrap_or_default();
    cut_digest(text)
}

fn redact_value(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, v) in map {
                let shown_key = cut_string(&redact_text(key));
                let v = if is_secret_key(key) && !v.is_null() {
                    Value::String(REDACTED.to_string())
                } else {
                    redact_value(v)
                };
                out.insert(shown_key, v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(redact_value).collect()),
        Value::String(s) => Value::String(digest_string(s)),
        other => other.clone(),
    }
}

/// A string redacted then cut; of a long one only the start is scanned (the
/// rest is cut away anyway), so a call with megabytes of content stays cheap.
fn digest_string(s: &str) -> String {
    if s.len() <= SCAN_WINDOW_BYTES {
        return cut_string(&redact_text(s));
    }
    let mut end = SCAN_WINDOW_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let head = s.get(..end).unwrap_or("");
    cut_to(&redact_text(head), s.chars().count())
}

fn cut_string(s: &str) -> String {
    cut_to(s, s.chars().count())
}

/// The first [`MAX_DIGEST_STRING_CHARS`] characters of `s`, with a note of
/// `total` when that is more.
fn cut_to(s: &str, total: usize) -> String {
    if total <= MAX_DIGEST_STRING_CHARS {
        return s.to_string();
    }
    let head: String = s.chars().take(MAX_DIGEST_STRING_CHARS).collect();
    format!("{head}… [cut, {total} chars]")
}

fn cut_digest(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_DIGEST_CHARS {
        return text;
    }
    let note = format!("… [digest cut, {total} chars]");
    let keep = MAX_DIGEST_CHARS.saturating_sub(note.chars().count());
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&note);
    out
}

/// Word sequences that make a key name a secret.
const SECRET_TERMS: &[&[&str]] = &[
    &["password"],
    &["passwords"],
    &["passwd"],
    &["passphrase"],
    &["secret"],
    &["secrets"],
    &["token"],
    &["apikey"],
    &["api", "key"],
    &["authorization"],
    &["auth"],
    &["cookie"],
    &["cookies"],
    &["privatekey"],
    &["private", "key"],
    &["credential"],
    &["credentials"],
    &["accesskey"],
    &["access", "key"],
    &["clientsecret"],
];

/// The lowercase words of a key: split at anything but letters and digits, and
/// where a lowercase letter or digit meets an uppercase one (`apiKey` -> api, key).
fn key_words(key: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// True when a key names a secret: one of its words (or runs of words) is
/// `password`, `passwd`, `passphrase`, `secret`, `token`, `api key`, `authorization`,
/// `auth`, `cookie`, `private key`, `credential(s)`, `access key` or `client secret`,
/// in any case and spelling (`GITHUB_TOKEN`, `x-api-key`, `accessToken`,
/// `headers.Authorization`, `privateKeyPem`).
///
/// Whole words only: `max_tokens`, `tokens_used` and `author` are not secrets,
/// while `token_count` is (a harmless over-redaction).
pub fn is_secret_key(key: &str) -> bool {
    let words = key_words(key);
    SECRET_TERMS.iter().any(|term| {
        words
            .windows(term.len())
            .any(|w| w.iter().zip(term.iter()).all(|(a, b)| a == b))
    })
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.'
}

/// Replaces what looks like a credential inside `text` with [`REDACTED`]:
/// `Bearer <token>`, OpenAI-style `sk-` keys (20 characters or more), GitHub
/// tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Slack tokens
/// (`xoxb-`, `xoxp-`...), AWS access key ids (`AKIA` + 16), PEM private key
/// blocks, the password of a URL (`scheme://user:password@host`), and the value
/// of secret-naming assignments (`API_KEY=...`, `"password": "..."`,
/// `--token ...`, `Authorization: Basic ...`).
pub fn redact_text(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    private_key_blocks(text, &mut ranges);
    bearer_tokens(bytes, &mut ranges);
    prefixed_tokens(bytes, &mut ranges);
    url_passwords(bytes, &mut ranges);
    secret_assignments(text, &mut ranges);
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    ranges.sort_unstable();
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (start, end) in ranges {
        if end <= pos {
            continue;
        }
        let start = start.max(pos);
        // Every range starts and ends next to ASCII bytes, so on char boundaries.
        out.push_str(text.get(pos..start).unwrap_or(""));
        if !out.ends_with(REDACTED) {
            out.push_str(REDACTED);
        }
        pos = end;
    }
    out.push_str(text.get(pos..).unwrap_or(""));
    Cow::Owned(out)
}

fn find_from(haystack: &str, needle: &str, from: usize) -> Option<usize> {
    haystack.get(from..)?.find(needle).map(|i| i + from)
}

fn private_key_blocks(text: &str, ranges: &mut Vec<(usize, usize)>) {
    let mut from = 0;
    while let Some(start) = find_from(text, "-----BEGIN ", from) {
        let header_end = find_from(text, "-----", start + 11).map_or(text.len(), |i| i + 5);
        let header = text.get(start..header_end).unwrap_or("");
        if !header.contains("PRIVATE KEY") {
            from = header_end.max(start + 1);
            continue;
        }
        let end = find_from(text, "-----END ", header_end)
            .and_then(|i| find_from(text, "-----", i + 9).map(|j| j + 5))
            .unwrap_or(text.len());
        ranges.push((start, end));
        from = end;
    }
}

fn boundary_before(bytes: &[u8], i: usize) -> bool {
    i == 0 || !bytes[i - 1].is_ascii_alphanumeric()
}

fn run_len(bytes: &[u8], from: usize, ok: impl Fn(u8) -> bool) -> usize {
    bytes
        .get(from..)
        .map_or(0, |rest| rest.iter().take_while(|b| ok(**b)).count())
}

fn token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+' | b'/' | b'=')
}

fn starts_with_ignore_case(bytes: &[u8], at: usize, word: &str) -> bool {
    bytes
        .get(at..at + word.len())
        .is_some_and(|s| s.eq_ignore_ascii_case(word.as_bytes()))
}

/// `Bearer <token>` (8 characters or more), in any case.
fn bearer_tokens(bytes: &[u8], ranges: &mut Vec<(usize, usize)>) {
    for i in 0..bytes.len() {
        if !starts_with_ignore_case(bytes, i, "bearer") || !boundary_before(bytes, i) {
            continue;
        }
        let spaces = run_len(bytes, i + 6, |b| b == b' ' || b == b'\t');
        if spaces == 0 {
            continue;
        }
        let start = i + 6 + spaces;
        let len = run_len(bytes, start, token_byte);
        if len >= 8 {
            ranges.push((start, start + len));
        }
    }
}

/// Which bytes may follow a token's prefix.
type TokenByte = fn(u8) -> bool;

/// Tokens known by their prefix: (prefix, characters allowed after it, shortest whole token).
const PREFIXED: &[(&str, TokenByte, usize)] = &[
    ("sk-", dash_word_byte, 20),
    ("ghp_", alnum_byte, 24),
    ("gho_", alnum_byte, 24),
    ("ghu_", alnum_byte, 24),
    ("ghs_", alnum_byte, 24),
    ("ghr_", alnum_byte, 24),
    ("github_pat_", word_byte, 30),
    ("xoxb-", dash_word_byte, 15),
    ("xoxp-", dash_word_byte, 15),
    ("xoxa-", dash_word_byte, 15),
    ("xoxr-", dash_word_byte, 15),
    ("xoxs-", dash_word_byte, 15),
];

fn alnum_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn dash_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn prefixed_tokens(bytes: &[u8], ranges: &mut Vec<(usize, usize)>) {
    for i in 0..bytes.len() {
        if !boundary_before(bytes, i) {
            continue;
        }
        for (prefix, ok, min) in PREFIXED {
            if bytes.get(i..i + prefix.len()) == Some(prefix.as_bytes()) {
                let len = prefix.len() + run_len(bytes, i + prefix.len(), ok);
                if len >= *min {
                    ranges.push((i, i + len));
                }
            }
        }
        // AWS access key ids: AKIA (or ASIA for temporary ones) and 16 of [0-9A-Z].
        if bytes.get(i..i + 4) == Some(b"AKIA") || bytes.get(i..i + 4) == Some(b"ASIA") {
            let len = run_len(bytes, i + 4, |b| {
                b.is_ascii_uppercase() || b.is_ascii_digit()
            });
            let after = bytes.get(i + 4 + len);
            if len == 16 && after.is_none_or(|b| !b.is_ascii_alphanumeric()) {
                ranges.push((i, i + 20));
            }
        }
    }
}

/// The password of `scheme://user:password@host`.
fn url_passwords(bytes: &[u8], ranges: &mut Vec<(usize, usize)>) {
    let mut i = 0;
    while i + 3 <= bytes.len() {
        if bytes.get(i..i + 3) != Some(b"://") {
            i += 1;
            continue;
        }
        let start = i + 3;
        let len = run_len(bytes, start, |b| {
            !matches!(
                b,
                b'/' | b'?'
                    | b'#'
                    | b'"'
                    | b'\''
                    | b'<'
                    | b'>'
                    | b'`'
                    | b' '
                    | b'\t'
                    | b'\n'
                    | b'\r'
            )
        });
        let authority = &bytes[start..start + len];
        if let Some(at) = authority.iter().rposition(|b| *b == b'@')
            && let Some(colon) = authority[..at].iter().position(|b| *b == b':')
            && colon + 1 < at
        {
            ranges.push((start + colon + 1, start + at));
        }
        i = start + len.max(1);
    }
}

/// Values of assignments to secret-naming words: `API_KEY=v`, `"password": "v"`,
/// `token: v`, `--password v`; `Authorization: Basic v` takes both words.
fn secret_assignments(text: &str, ranges: &mut Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident_byte(bytes[i]) || (i > 0 && is_ident_byte(bytes[i - 1])) {
            i += 1;
            continue;
        }
        let len = run_len(bytes, i, is_ident_byte);
        let word = text.get(i..i + len).unwrap_or("");
        let word_end = i + len;
        i = word_end;
        if !is_secret_key(word) {
            continue;
        }
        let dashed = word.starts_with("--");
        let mut j = word_end + run_len(bytes, word_end, |b| matches!(b, b'"' | b'\'' | b'\\'));
        j += run_len(bytes, j, |b| b == b' ' || b == b'\t');
        match bytes.get(j) {
            Some(b'=' | b':') => j += 1,
            Some(_) if dashed && j > word_end => {}
            _ => continue,
        }
        j += run_len(bytes, j, |b| b == b' ' || b == b'\t');
        let quotes = run_len(bytes, j, |b| matches!(b, b'"' | b'\'' | b'\\'));
        let quoted = quotes > 0;
        j += quotes;
        let stop = |b: u8| {
            if quoted {
                !matches!(b, b'"' | b'\'' | b'\\' | b'\n' | b'\r')
            } else {
                !matches!(
                    b,
                    b' ' | b'\t'
                        | b'\n'
                        | b'\r'
                        | b'"'
                        | b'\''
                        | b'\\'
                        | b'&'
                        | b','
                        | b';'
                        | b'}'
                        | b')'
                )
            }
        };
        let mut value_len = run_len(bytes, j, stop);
        let value = text.get(j..j + value_len).unwrap_or("");
        let scheme = ["bearer", "basic", "token", "bot", "digest"]
            .iter()
            .any(|s| value.eq_ignore_ascii_case(s));
        if scheme && !quoted {
            let spaces = run_len(bytes, j + value_len, |b| b == b' ');
            if spaces > 0 {
                value_len += spaces + run_len(bytes, j + value_len + spaces, stop);
            }
        }
        if value_len > 0 {
            ranges.push((j, j + value_len));
            i = j + value_len;
        }
    }
}

#[cfg(test)]
#[path = "calllog_tests.rs"]
mod tests;
