//! Finding a body's character encoding and decoding it to UTF-8.
//!
//! The order follows the HTML standard's: a byte-order mark wins over everything,
//! then the `charset` parameter of `Content-Type`, then (for HTML) a
//! `<meta charset>` or `<meta http-equiv="Content-Type">` in the first
//! [`META_PRESCAN_BYTES`] bytes, then UTF-8 when the bytes are valid UTF-8, and
//! windows-1252 otherwise.
//!
//! ```
//! use toolbelt_net::charset::{decode, CharsetSource};
//!
//! let (bytes, _, unmappable) = encoding_rs::SHIFT_JIS.encode("<meta charset=\"shift_jis\">日本");
//! assert!(!unmappable);
//! let decoded = decode(Some("text/html"), &bytes);
//! assert_eq!(decoded.encoding, "Shift_JIS");
//! assert_eq!(decoded.source, CharsetSource::Meta);
//! assert!(decoded.text.ends_with("日本"));
//! ```

use encoding_rs::Encoding;

/// How many bytes at the start of an HTML body are searched for a `<meta>` charset.
pub const META_PRESCAN_BYTES: usize = 4096;

/// Where the encoding came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CharsetSource {
    /// A byte-order mark at the start of the body.
    Bom,
    /// The `charset` parameter of the `Content-Type` header.
    Header,
    /// A `<meta>` element in the HTML.
    Meta,
    /// Nothing declared; the bytes are valid UTF-8.
    DefaultUtf8,
    /// Nothing declared and not UTF-8: windows-1252, as browsers do.
    DefaultLegacy,
}

/// A body decoded to UTF-8.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decoded {
    /// The text.
    pub text: String,
    /// The encoding's canonical name (`UTF-8`, `Shift_JIS`, `UTF-16LE`, ...).
    pub encoding: &'static str,
    /// Where the encoding came from.
    pub source: CharsetSource,
    /// Whether malformed sequences were replaced with U+FFFD.
    pub had_errors: bool,
}

/// The `charset` parameter of a `Content-Type` value, if any.
pub fn charset_param(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|param| {
        let (name, value) = param.split_once('=')?;
        if name.trim().eq_ignore_ascii_case("charset") {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'').trim();
            (!value.is_empty()).then_some(value)
        } else {
            None
        }
    })
}

fn is_html(content_type: Option<&str>, body: &[u8]) -> bool {
    match content_type {
        Some(ct) => {
            let essence = ct.split(';').next().unwrap_or("").trim();
            essence.eq_ignore_ascii_case("text/html")
                || essence.eq_ignore_ascii_case("application/xhtml+xml")
        }
        None => {
            let head = &body[..body.len().min(512)];
            let lower = head.to_ascii_lowercase();
            memfind(&lower, b"<html").is_some() || memfind(&lower, b"<!doctype html").is_some()
        }
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The charset declared by a `<meta>` element within the first
/// [`META_PRESCAN_BYTES`] bytes: `<meta charset="x">` or
/// `<meta http-equiv="Content-Type" content="text/html; charset=x">`.
pub fn meta_charset(body: &[u8]) -> Option<&'static Encoding> {
    let head = body[..body.len().min(META_PRESCAN_BYTES)].to_ascii_lowercase();
    let mut rest: &[u8] = &head;
    while let Some(at) = memfind(rest, b"<meta") {
        let tag_start = &rest[at + 5..];
        let end = tag_start
            .iter()
            .position(|&b| b == b'>')
            .unwrap_or(tag_start.len());
        let tag = &tag_start[..end];
        if let Some(enc) = charset_in_tag(tag).and_then(Encoding::for_label) {
            // A page cannot declare itself UTF-16 in ASCII bytes.
            return Some(
                if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
                    encoding_rs::UTF_8
                } else {
                    enc
                },
            );
        }
        rest = &tag_start[end..];
    }
    None
}

fn charset_in_tag(tag: &[u8]) -> Option<&[u8]> {
    let at = memfind(tag, b"charset")?;
    let mut rest = &tag[at + 7..];
    rest = trim_start(rest);
    rest = rest.strip_prefix(b"=")?;
    rest = trim_start(rest);
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let len = rest
        .iter()
        .position(|&b| matches!(b, b'"' | b'\'' | b';' | b'/' | b'>') || b.is_ascii_whitespace())
        .unwrap_or(rest.len());
    (len > 0).then(|| &rest[..len])
}

fn trim_start(mut bytes: &[u8]) -> &[u8] {
    while let [first, rest @ ..] = bytes {
        if first.is_ascii_whitespace() {
            bytes = rest;
        } else {
            break;
        }
    }
    bytes
}

/// Finds the encoding of `body` served with `content_type` (see the module docs for
/// the order).
pub fn detect(content_type: Option<&str>, body: &[u8]) -> (&'static Encoding, CharsetSource) {
    if let Some((enc, _)) = Encoding::for_bom(body) {
        return (enc, CharsetSource::Bom);
    }
    if let Some(enc) = content_type
        .and_then(charset_param)
        .and_then(|label| Encoding::for_label(label.as_bytes()))
    {
        return (enc, CharsetSource::Header);
    }
    if let Some(enc) = is_html(content_type, body)
        .then(|| meta_charset(body))
        .flatten()
    {
        return (enc, CharsetSource::Meta);
    }
    if std::str::from_utf8(body).is_ok() {
        (encoding_rs::UTF_8, CharsetSource::DefaultUtf8)
    } else {
        (encoding_rs::WINDOWS_1252, CharsetSource::DefaultLegacy)
    }
}

/// Decodes `body` served with `content_type` to UTF-8. A BOM is removed; malformed
/// sequences become U+FFFD (and [`Decoded::had_errors`] is set).
pub fn decode(content_type: Option<&str>, body: &[u8]) -> Decoded {
    let (encoding, source) = detect(content_type, body);
    // `decode` sniffs the BOM again and strips it.
    let (text, actual, had_errors) = encoding.decode(body);
    Decoded {
        text: text.into_owned(),
        encoding: actual.name(),
        source,
        had_errors,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charset_param_forms() {
        assert_eq!(charset_param("text/html; charset=UTF-8"), Some("UTF-8"));
        assert_eq!(
            charset_param("text/html;charset=\"shift_jis\""),
            Some("shift_jis")
        );
        assert_eq!(charset_param("text/html"), None);
        assert_eq!(charset_param("text/html; charset="), None);
    }

    #[test]
    fn meta_forms() {
        let cases: [&[u8]; 4] = [
            b"<html><head><meta charset=\"euc-jp\"></head>",
            b"<META CHARSET=euc-jp>",
            b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=euc-jp\">",
            b"<meta name=x><meta content='text/html;charset=EUC-JP' http-equiv=content-type>",
        ];
        for case in cases {
            assert_eq!(meta_charset(case), Some(encoding_rs::EUC_JP), "{case:?}");
        }
        assert_eq!(meta_charset(b"<meta name=viewport content=x>"), None);
        assert_eq!(
            meta_charset(b"<meta charset=utf-16>"),
            Some(encoding_rs::UTF_8)
        );
    }

    #[test]
    fn bom_wins_over_header() {
        let body = [0xFF, 0xFE, b'h', 0, b'i', 0];
        let d = decode(Some("text/plain; charset=iso-8859-1"), &body);
        assert_eq!(
            (d.text.as_str(), d.encoding, d.source),
            ("hi", "UTF-16LE", CharsetSource::Bom)
        );
    }

    #[test]
    fn defaults() {
        assert_eq!(
            decode(None, "é".as_bytes()).source,
            CharsetSource::DefaultUtf8
        );
        let d = decode(Some("text/plain"), b"caf\xe9");
        assert_eq!(
            (d.text.as_str(), d.source),
            ("café", CharsetSource::DefaultLegacy)
        );
    }
}
