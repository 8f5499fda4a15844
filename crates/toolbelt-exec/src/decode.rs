//! Turning a command's output bytes into UTF-8 text, as they stream.
//!
//! The first [`SNIFF_BYTES`] of a stream choose its encoding: UTF-8 when they are
//! valid UTF-8 (a character cut at the end of the window aside); otherwise the
//! locale's encoding (from `LC_ALL`, `LC_CTYPE` or `LANG`, e.g. `zh_CN.GBK`) when
//! it decodes them without errors; otherwise GB18030. Bytes that do not decode
//! become U+FFFD. The text is always valid UTF-8.

use encoding_rs::{Decoder, Encoding, GB18030, UTF_8};

/// Bytes looked at before an encoding is chosen.
pub const SNIFF_BYTES: usize = 16 * 1024;

/// A streaming decoder of one output stream.
#[derive(Debug)]
pub struct Transcoder {
    locale: Option<&'static Encoding>,
    state: State,
}

#[derive(Debug)]
enum State {
    Sniffing(Vec<u8>),
    Decoding(Box<Decoder>),
}

/// The encoding named by a locale such as `zh_CN.GBK` or `ja_JP.eucJP@euro`;
/// `None` for UTF-8, `C`, `POSIX` and names it does not know.
#[must_use]
pub fn locale_encoding(locale: &str) -> Option<&'static Encoding> {
    let charset = locale.split_once('.')?.1;
    let charset = charset.split('@').next().unwrap_or(charset);
    Encoding::for_label(charset.as_bytes()).filter(|e| *e != UTF_8)
}

/// The locale's encoding from the environment (`LC_ALL`, then `LC_CTYPE`, then
/// `LANG`, the first that is set and not empty).
#[must_use]
pub fn env_locale_encoding<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Option<&'static Encoding> {
    ["LC_ALL", "LC_CTYPE", "LANG"]
        .into_iter()
        .filter_map(|name| get(name).filter(|v| !v.is_empty()))
        .next()
        .and_then(locale_encoding)
}

impl Transcoder {
    /// A decoder that prefers `locale` to GB18030 for output that is not UTF-8.
    #[must_use]
    pub fn new(locale: Option<&'static Encoding>) -> Transcoder {
        Transcoder {
            locale,
            state: State::Sniffing(Vec::new()),
        }
    }

    /// The encoding chosen, once chosen.
    #[must_use]
    pub fn encoding(&self) -> Option<&'static Encoding> {
        match &self.state {
            State::Sniffing(_) => None,
            State::Decoding(d) => Some(d.encoding()),
        }
    }

    /// Decodes `bytes`, appending text to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        match &mut self.state {
            State::Sniffing(window) => {
                window.extend_from_slice(bytes);
                if window.len() >= SNIFF_BYTES || !plausible_utf8(window) {
                    self.choose_and_flush(out, false);
                }
            }
            State::Decoding(decoder) => decode(decoder, bytes, out, false),
        }
    }

    /// Chooses the encoding now, from the bytes seen so far, and decodes them: for
    /// a stream that pauses before the sniff window is full and whose text is
    /// wanted at once. Nothing happens once the encoding is chosen.
    pub fn settle(&mut self, out: &mut String) {
        if matches!(&self.state, State::Sniffing(window) if !window.is_empty()) {
            self.choose_and_flush(out, false);
        }
    }

    /// Decodes what is left at the end of the stream.
    pub fn finish(&mut self, out: &mut String) {
        match &mut self.state {
            State::Sniffing(_) => self.choose_and_flush(out, true),
            State::Decoding(decoder) => decode(decoder, &[], out, true),
        }
    }

    fn choose_and_flush(&mut self, out: &mut String, last: bool) {
        let window = match &mut self.state {
            State::Sniffing(window) => std::mem::take(window),
            State::Decoding(_) => return,
        };
        let encoding = if plausible_utf8(&window) && (!last || std::str::from_utf8(&window).is_ok())
        {
            UTF_8
        } else if let Some(locale) = self.locale.filter(|e| {
            e.decode_without_bom_handling_and_without_replacement(&window)
                .is_some()
        }) {
            locale
        } else if std::str::from_utf8(&window).is_ok() {
            UTF_8
        } else {
            GB18030
        };
        let mut decoder = Box::new(encoding.new_decoder_without_bom_handling());
        decode(&mut decoder, &window, out, last);
        self.state = State::Decoding(decoder);
    }
}

/// Valid UTF-8, except perhaps for a character cut at the end.
fn plausible_utf8(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

fn decode(decoder: &mut Decoder, bytes: &[u8], out: &mut String, last: bool) {
    let mut rest = bytes;
    loop {
        let needed = decoder
            .max_utf8_buffer_length(rest.len())
            .unwrap_or(rest.len().saturating_mul(3) + 16);
        out.reserve(needed);
        let (result, read, _replaced) = decoder.decode_to_string(rest, out, last);
        rest = &rest[read..];
        if matches!(result, encoding_rs::CoderResult::InputEmpty) {
            return;
        }
    }
}

#[cfg(test)]
#[path = "decode_tests.rs"]
mod tests;
