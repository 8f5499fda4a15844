//! Encodings, binary and image sniffing, and numbered line rendering.
//!
//! - [`sniff`]: is a file text, an image a model can look at, or binary (and which kind)?
//! - [`decode`] / [`encode`]: UTF-8, UTF-8 with a BOM, UTF-16 LE/BE with a BOM; anything
//!   else is decoded lossily and flagged. `encode(decode(b)) == b` for every input that
//!   was not lossy, so a file can be edited without touching bytes it did not show.
//! - [`line_ending`] / [`apply_line_ending`]: which line endings a text uses, and making
//!   new text follow them.
//! - [`render_lines`]: the `cat -n` view of read_file: a window of numbered lines, long
//!   lines cut, the whole held to a byte cap, with a footer giving the totals and where
//!   to continue.
//!
//! ```
//! use toolbelt_fs::text::{Encoding, RenderOptions, decode, encode, render_lines};
//!
//! let bytes = b"\xEF\xBB\xBFfn main() {}\r\n";
//! let decoded = decode(bytes);
//! assert_eq!(decoded.encoding, Encoding::Utf8Bom);
//! assert_eq!(encode(&decoded.text, decoded.encoding), bytes);
//!
//! let page = render_lines("one\ntwo\nthree\n", &RenderOptions { offset: -2, ..RenderOptions::default() });
//! assert_eq!(page.body, "     2\ttwo\n     3\tthree\n");
//! assert_eq!(page.footer(), "[lines 2-3 of 3; end of file]");
//! ```

use std::borrow::Cow;
use std::fmt::Write as _;

/// Bytes at the start of a file that [`sniff`] examines.
pub const SNIFF_BYTES: usize = 8 * 1024;
/// Share of control bytes in the sniffed sample above which a file counts as binary,
/// in percent.
pub const BINARY_CONTROL_PERCENT: usize = 30;
/// Lines [`render_lines`] shows by default.
pub const DEFAULT_LIMIT_LINES: usize = 2_000;
/// Characters of one line [`render_lines`] shows by default; longer lines are cut.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Default cap on the bytes of a whole rendering (lines and footer).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 50_000;
/// Bytes kept free below the byte cap for the footer.
pub const FOOTER_RESERVE_BYTES: usize = 256;
/// Line numbers of cut lines named in the footer; more are counted, not listed.
pub const MAX_CUT_LINES_LISTED: usize = 10;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";
const UTF16_LE_BOM: &[u8] = b"\xFF\xFE";
const UTF16_BE_BOM: &[u8] = b"\xFE\xFF";

/// A text encoding toolbelt reads and writes back byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// UTF-8 without a byte order mark (also the reading of invalid bytes, lossily).
    Utf8,
    /// UTF-8 with a byte order mark (`EF BB BF`).
    Utf8Bom,
    /// UTF-16 little endian with a byte order mark (`FF FE`).
    Utf16Le,
    /// UTF-16 big endian with a byte order mark (`FE FF`).
    Utf16Be,
}

impl Encoding {
    /// A stable name: `utf-8`, `utf-8-bom`, `utf-16le`, `utf-16be`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Utf8 => "utf-8",
            Encoding::Utf8Bom => "utf-8-bom",
            Encoding::Utf16Le => "utf-16le",
            Encoding::Utf16Be => "utf-16be",
        }
    }
}

/// A file's bytes as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The text, without the byte order mark.
    pub text: String,
    /// The encoding the bytes were read in.
    pub encoding: Encoding,
    /// True when the bytes were not valid in any supported encoding: invalid sequences
    /// became U+FFFD, so encoding the text again would not give the same bytes.
    pub lossy: bool,
}

/// Decodes a file's bytes: a UTF-8 BOM is stripped, UTF-16 with a BOM is decoded,
/// anything else is read as UTF-8, invalid sequences lossily (with `lossy: true`).
///
/// For every input whose result is not lossy, `encode(&d.text, d.encoding) == bytes`.
pub fn decode(bytes: &[u8]) -> Decoded {
    if let Some(rest) = bytes.strip_prefix(UTF16_LE_BOM) {
        return decode_utf16(rest, Encoding::Utf16Le, u16::from_le_bytes);
    }
    if let Some(rest) = bytes.strip_prefix(UTF16_BE_BOM) {
        return decode_utf16(rest, Encoding::Utf16Be, u16::from_be_bytes);
    }
    let (rest, encoding) = match bytes.strip_prefix(UTF8_BOM) {
        Some(rest) => (rest, Encoding::Utf8Bom),
        None => (bytes, Encoding::Utf8),
    };
    match String::from_utf8_lossy(rest) {
        Cow::Borrowed(text) => Decoded {
            text: text.to_string(),
            encoding,
            lossy: false,
        },
        Cow::Owned(text) => Decoded {
            text,
            encoding,
            lossy: true,
        },
    }
}

fn decode_utf16(bytes: &[u8], encoding: Encoding, unit: fn([u8; 2]) -> u16) -> Decoded {
    let chunks = bytes.chunks_exact(2);
    let odd_tail = !chunks.remainder().is_empty();
    let units = chunks.map(|c| unit([c[0], c[1]]));
    let mut text = String::with_capacity(bytes.len() / 2);
    let mut lossy = odd_tail;
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => text.push(c),
            Err(_) => {
                lossy = true;
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
    }
    if odd_tail {
        text.push(char::REPLACEMENT_CHARACTER);
    }
    Decoded {
        text,
        encoding,
        lossy,
    }
}

/// Encodes `text` in `encoding`, byte order mark included.
pub fn encode(text: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Utf8 => text.as_bytes().to_vec(),
        Encoding::Utf8Bom => {
            let mut out = Vec::with_capacity(UTF8_BOM.len() + text.len());
            out.extend_from_slice(UTF8_BOM);
            out.extend_from_slice(text.as_bytes());
            out
        }
        Encoding::Utf16Le => encode_utf16(text, UTF16_LE_BOM, u16::to_le_bytes),
        Encoding::Utf16Be => encode_utf16(text, UTF16_BE_BOM, u16::to_be_bytes),
    }
}

fn encode_utf16(text: &str, bom: &[u8], bytes: fn(u16) -> [u8; 2]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bom.len() + text.len() * 2);
    out.extend_from_slice(bom);
    for unit in text.encode_utf16() {
        out.extend_from_slice(&bytes(unit));
    }
    out
}

/// The line endings of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LineEnding {
    /// Every line ends with `\n`.
    Lf,
    /// Every line ends with `\r\n`.
    CrLf,
    /// Both `\n` and `\r\n` occur.
    Mixed,
    /// No line break at all.
    None,
}

impl LineEnding {
    /// A stable name: `lf`, `crlf`, `mixed`, `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "lf",
            LineEnding::CrLf => "crlf",
            LineEnding::Mixed => "mixed",
            LineEnding::None => "none",
        }
    }
}

/// The line endings `text` uses (a lone `\r` is not a line ending).
pub fn line_ending(text: &str) -> LineEnding {
    let bytes = text.as_bytes();
    let (mut lf, mut crlf) = (0usize, 0usize);
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
        if lf > 0 && crlf > 0 {
            return LineEnding::Mixed;
        }
    }
    match (lf, crlf) {
        (0, 0) => LineEnding::None,
        (_, 0) => LineEnding::Lf,
        _ => LineEnding::CrLf,
    }
}

/// `text` with its line breaks made `ending`: for [`LineEnding::CrLf`] every lone `\n`
/// becomes `\r\n`, for [`LineEnding::Lf`] every `\r\n` becomes `\n`; [`LineEnding::Mixed`]
/// and [`LineEnding::None`] leave the text as it is.
///
/// Used to make new content follow the line endings of the file it goes into.
pub fn apply_line_ending(text: &str, ending: LineEnding) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    match ending {
        LineEnding::CrLf => {
            let lone = memchr::memchr_iter(b'\n', bytes)
                .filter(|&i| i == 0 || bytes[i - 1] != b'\r')
                .count();
            if lone == 0 {
                return Cow::Borrowed(text);
            }
            let mut out = String::with_capacity(text.len() + lone);
            let mut start = 0;
            for i in memchr::memchr_iter(b'\n', bytes) {
                out.push_str(&text[start..i]);
                if i == 0 || bytes[i - 1] != b'\r' {
                    out.push('\r');
                }
                out.push('\n');
                start = i + 1;
            }
            out.push_str(&text[start..]);
            Cow::Owned(out)
        }
        LineEnding::Lf if memchr::memmem::find(bytes, b"\r\n").is_some() => {
            Cow::Owned(text.replace("\r\n", "\n"))
        }
        LineEnding::Lf | LineEnding::Mixed | LineEnding::None => Cow::Borrowed(text),
    }
}

/// What a file's first bytes say it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sniffed {
    /// Text (possibly with a UTF-8 or UTF-16 byte order mark); read it with [`decode`].
    Text,
    /// An image a model can look at: PNG, JPEG, GIF or WebP.
    Image {
        /// Its media type: `image/png`, `image/jpeg`, `image/gif`, `image/webp`.
        mime: &'static str,
    },
    /// Anything else that is not text.
    Binary {
        /// What it looks like, e.g. `ELF 64-bit executable`, `PDF document`,
        /// `ZIP archive (Java archive, .jar)`, or `binary data` when unknown.
        description: String,
    },
}

/// Sniffs a file from its first bytes (only the first [`SNIFF_BYTES`] are looked at):
/// image magic numbers first, then a UTF-16 byte order mark (text), then the magic
/// numbers of common binary formats, then the content: a NUL byte or more than
/// [`BINARY_CONTROL_PERCENT`] % control bytes make it binary.
pub fn sniff(bytes: &[u8]) -> Sniffed {
    let sample = &bytes[..bytes.len().min(SNIFF_BYTES)];
    if let Some(mime) = image_mime(sample) {
        return Sniffed::Image { mime };
    }
    if sample.starts_with(UTF16_LE_BOM) || sample.starts_with(UTF16_BE_BOM) {
        return Sniffed::Text;
    }
    if let Some(description) = strong_magic(sample) {
        return Sniffed::Binary { description };
    }
    if looks_binary(sample) {
        let description = weak_magic(sample).unwrap_or("binary data").to_string();
        return Sniffed::Binary { description };
    }
    Sniffed::Text
}

/// The media type of a PNG, JPEG, GIF or WebP image.
fn image_mime(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(b"\xFF\xD8\xFF") {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && b.starts_with(b"RIFF") && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Magic numbers that make a file binary whatever follows them.
fn strong_magic(b: &[u8]) -> Option<String> {
    const SIMPLE: &[(&[u8], &str)] = &[
        (b"%PDF-", "PDF document"),
        (b"\x1F\x8B", "gzip compressed data"),
        (b"\xFD7zXZ\x00", "xz compressed data"),
        (b"\x28\xB5\x2F\xFD", "Zstandard compressed data"),
        (b"7z\xBC\xAF\x27\x1C", "7-zip archive"),
        (b"Rar!\x1A\x07", "RAR archive"),
        (b"SQLite format 3\x00", "SQLite 3 database"),
        (b"\x00asm", "WebAssembly binary module"),
        (b"\xFE\xED\xFA\xCE", "Mach-O 32-bit binary"),
        (b"\xCE\xFA\xED\xFE", "Mach-O 32-bit binary"),
        (b"\xFE\xED\xFA\xCF", "Mach-O 64-bit binary"),
        (b"\xCF\xFA\xED\xFE", "Mach-O 64-bit binary"),
        (b"OggS", "Ogg media"),
        (b"fLaC", "FLAC audio"),
        (b"ID3", "MP3 audio"),
        (b"wOFF", "WOFF font"),
        (b"wOF2", "WOFF2 font"),
        (b"PAR1", "Apache Parquet data"),
        (b"II*\x00", "TIFF image"),
        (b"MM\x00*", "TIFF image"),
        (b"8BPS", "Photoshop image"),
        (b"\x00\x00\x01\x00", "Windows icon"),
    ];
    if let Some(elf) = elf(b) {
        return Some(elf);
    }
    if b.starts_with(b"PK\x03\x04") || b.starts_with(b"PK\x05\x06") || b.starts_with(b"PK\x07\x08")
    {
        return Some(zip_kind(b));
    }
    if b.starts_with(b"\xCA\xFE\xBA\xBE") && b.len() >= 8 {
        // Shared by Java class files and universal Mach-O binaries: the next word is a
        // small architecture count in the latter and a class-file version (>= 45) in the former.
        let word = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
        return Some(if word < 20 {
            "Mach-O universal binary".to_string()
        } else {
            "Java class file".to_string()
        });
    }
    if b.len() >= 12 && b.starts_with(b"RIFF") {
        match &b[8..12] {
            b"WAVE" => return Some("WAV audio".to_string()),
            b"AVI " => return Some("AVI video".to_string()),
            _ => {}
        }
    }
    if b.len() >= 12 && &b[4..8] == b"ftyp" {
        return Some("ISO media (MP4, MOV, HEIC...)".to_string());
    }
    if b.len() >= 262 && &b[257..262] == b"ustar" {
        return Some("tar archive".to_string());
    }
    SIMPLE
        .iter()
        .find(|(magic, _)| b.starts_with(magic))
        .map(|(_, what)| (*what).to_string())
}

/// Magic numbers too short to trust on their own: used to name content that is
/// already known to be binary.
fn weak_magic(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"MZ") {
        Some("Windows/DOS executable (PE)")
    } else if b.starts_with(b"BZh") {
        Some("bzip2 compressed data")
    } else if b.starts_with(b"BM") {
        Some("BMP image")
    } else if b.starts_with(b"\x00\x01\x00\x00") || b.starts_with(b"OTTO") {
        Some("TrueType/OpenType font")
    } else if b.starts_with(b"\x1F\x9D") {
        Some("compress'd data")
    } else {
        None
    }
}

fn elf(b: &[u8]) -> Option<String> {
    if !b.starts_with(b"\x7FELF") {
        return None;
    }
    let bits = match b.get(4) {
        Some(1) => "32-bit ",
        Some(2) => "64-bit ",
        _ => "",
    };
    // e_type is a 16-bit field at offset 16 in the file's byte order (byte 5: 1 = LE, 2 = BE).
    let kind = match (b.get(5), b.get(16), b.get(17)) {
        (Some(1), Some(&t), Some(0)) | (Some(2), Some(0), Some(&t)) => match t {
            1 => "relocatable object",
            2 => "executable",
            3 => "shared object",
            4 => "core dump",
            _ => "file",
        },
        _ => "file",
    };
    Some(format!("ELF {bits}{kind}"))
}

/// A ZIP archive, named by what its first entries say it holds.
fn zip_kind(b: &[u8]) -> String {
    let has = |needle: &[u8]| memchr::memmem::find(b, needle).is_some();
    let what = if has(b"mimetypeapplication/epub+zip") {
        Some("EPUB ebook")
    } else if has(b"mimetypeapplication/vnd.oasis.opendocument") {
        Some("OpenDocument file, .odt/.ods/.odp")
    } else if has(b"AndroidManifest.xml") || has(b"classes.dex") {
        Some("Android package, .apk")
    } else if has(b"META-INF/") {
        Some("Java archive, .jar")
    } else if has(b"word/") {
        Some("Word document, .docx")
    } else if has(b"xl/") {
        Some("Excel workbook, .xlsx")
    } else if has(b"ppt/") {
        Some("PowerPoint presentation, .pptx")
    } else if has(b"[Content_Types].xml") {
        Some("Office Open XML document")
    } else {
        None
    };
    match what {
        Some(what) => format!("ZIP archive ({what})"),
        None => "ZIP archive".to_string(),
    }
}

/// A NUL byte, or more than [`BINARY_CONTROL_PERCENT`] % control bytes (tab, line
/// feed, carriage return, form feed and escape do not count).
fn looks_binary(sample: &[u8]) -> bool {
    if memchr::memchr(0, sample).is_some() {
        return true;
    }
    let control = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C | 0x1B)) || b == 0x7F)
        .count();
    control * 100 > sample.len() * BINARY_CONTROL_PERCENT
}

/// What [`render_lines`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// First line, 1-based; negative counts from the end (-1 = the last line); 0 means 1.
    pub offset: i64,
    /// Lines to show; 0 means [`DEFAULT_LIMIT_LINES`].
    pub limit: usize,
    /// Characters of one line shown; longer lines are cut with a marker. 0 means
    /// [`MAX_LINE_CHARS`].
    pub max_line_chars: usize,
    /// Cap on the bytes of the body and footer together. The first line is always
    /// shown (cut to `max_line_chars`), even when it alone is over the cap.
    pub max_bytes: usize,
}

impl Default for RenderOptions {
    fn default() -> RenderOptions {
        RenderOptions {
            offset: 1,
            limit: DEFAULT_LIMIT_LINES,
            max_line_chars: MAX_LINE_CHARS,
            max_bytes: DEFAULT_MAX_OUTPUT_BYTES,
        }
    }
}

/// A line [`render_lines`] cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutLine {
    /// Its number, 1-based.
    pub line: usize,
    /// Its length in characters.
    pub chars: usize,
}

/// A window of numbered lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The lines, `cat -n` style (`{:>6}\t{line}`), each ending with `\n`.
    pub body: String,
    /// Number of the first line shown; 0 when none is.
    pub first_line: usize,
    /// Number of the last line shown; 0 when none is.
    pub last_line: usize,
    /// Lines in the whole text (a trailing line break does not start a line).
    pub total_lines: usize,
    /// Lines shown cut to `max_line_chars`.
    pub cut_lines: Vec<CutLine>,
    /// The offset that continues after this window, when lines remain after it.
    pub next_offset: Option<usize>,
    /// True when the byte cap, not the line limit, ended the window.
    pub stopped_by_bytes: bool,
    /// The byte cap the window was held to.
    pub max_bytes: usize,
    /// The offset asked for, when it lies past the last line (nothing is shown).
    pub past_end: Option<i64>,
}

impl Rendered {
    /// One line saying which lines these are of how many, which were cut, and how to
    /// continue, e.g. `[lines 1-2,000 of 5,432; continue with offset=2001]`.
    /// At most about [`FOOTER_RESERVE_BYTES`] long.
    pub fn footer(&self) -> String {
        let total = self.total_lines;
        if total == 0 {
            return "[empty file: 0 lines]".to_string();
        }
        if let Some(offset) = self.past_end {
            return format!(
                "[offset {offset} is past the end: the file has {} {}; use an offset from 1 to {total}, or a negative one such as -{} for the last lines]",
                group(total),
                plural(total, "line"),
                total.min(100),
            );
        }
        let mut out = String::from("[");
        if self.first_line == 1 && self.last_line == total {
            let _ = write!(
                out,
                "{} {}; whole file",
                group(total),
                plural(total, "line")
            );
        } else if self.first_line == self.last_line {
            let _ = write!(out, "line {} of {}", group(self.first_line), group(total));
        } else {
            let _ = write!(
                out,
                "lines {}-{} of {}",
                group(self.first_line),
                group(self.last_line),
                group(total)
            );
        }
        if !self.cut_lines.is_empty() {
            let listed: Vec<String> = self
                .cut_lines
                .iter()
                .take(MAX_CUT_LINES_LISTED)
                .map(|c| c.line.to_string())
                .collect();
            let more = self.cut_lines.len().saturating_sub(MAX_CUT_LINES_LISTED);
            let _ = write!(
                out,
                "; {} long {} cut: {}",
                self.cut_lines.len(),
                plural(self.cut_lines.len(), "line"),
                listed.join(", ")
            );
            if more > 0 {
                let _ = write!(out, " and {more} more");
            }
        }
        match self.next_offset {
            Some(next) => {
                if self.stopped_by_bytes {
                    let _ = write!(
                        out,
                        "; stopped at the {} output cap",
                        human_bytes(self.max_bytes)
                    );
                }
                let remaining = total + 1 - next;
                let _ = write!(
                    out,
                    "; {} more {}; continue with offset={next}",
                    group(remaining),
                    plural(remaining, "line")
                );
            }
            None if !(self.first_line == 1 && self.last_line == total) => {
                out.push_str("; end of file");
            }
            None => {}
        }
        out.push(']');
        out
    }

    /// The body followed by the footer.
    pub fn to_text(&self) -> String {
        let footer = self.footer();
        let mut out = String::with_capacity(self.body.len() + footer.len());
        out.push_str(&self.body);
        out.push_str(&footer);
        out
    }
}

/// Renders a window of `text`'s lines, `cat -n` style. See [`RenderOptions`] for the
/// window; the line count is the same as `wc -l` except that a last line without a
/// line break counts too. A `\r` before a line break is not shown. Lines longer than
/// `max_line_chars` are cut with a marker such as `… [line cut: 12,345 chars, showing 2,000]`.
/// Lines are added while the body plus [`FOOTER_RESERVE_BYTES`] stays within `max_bytes`.
pub fn render_lines(text: &str, opts: &RenderOptions) -> Rendered {
    let limit = if opts.limit == 0 {
        DEFAULT_LIMIT_LINES
    } else {
        opts.limit
    };
    let max_line_chars = if opts.max_line_chars == 0 {
        MAX_LINE_CHARS
    } else {
        opts.max_line_chars
    };
    let total = count_lines(text);
    let mut out = Rendered {
        body: String::new(),
        first_line: 0,
        last_line: 0,
        total_lines: total,
        cut_lines: Vec::new(),
        next_offset: None,
        stopped_by_bytes: false,
        max_bytes: opts.max_bytes,
        past_end: None,
    };
    if total == 0 {
        return out;
    }
    let start = match opts.offset {
        o if o > 0 => usize::try_from(o).unwrap_or(usize::MAX),
        0 => 1,
        o => {
            let back = usize::try_from(o.unsigned_abs()).unwrap_or(usize::MAX);
            total.saturating_sub(back) + 1
        }
    };
    if start > total {
        out.past_end = Some(opts.offset);
        return out;
    }
    let budget = opts.max_bytes.saturating_sub(FOOTER_RESERVE_BYTES);
    let end = start.saturating_add(limit - 1).min(total);
    out.body
        .reserve(text.len().min(budget) + 7 * (end + 1 - start).min(budget / 8 + 1));
    let mut line_buf = String::new();
    for (i, line) in lines(text).enumerate().skip(start - 1) {
        let n = i + 1;
        if n > end {
            break;
        }
        line_buf.clear();
        let cut = render_line(&mut line_buf, n, line, max_line_chars);
        if out.first_line != 0 && out.body.len() + line_buf.len() > budget {
            out.stopped_by_bytes = true;
            break;
        }
        out.body.push_str(&line_buf);
        if let Some(chars) = cut {
            out.cut_lines.push(CutLine { line: n, chars });
        }
        if out.first_line == 0 {
            out.first_line = n;
        }
        out.last_line = n;
    }
    if out.last_line < total {
        out.next_offset = Some(out.last_line + 1);
    }
    out
}

/// Appends line `n` to `buf`; returns its length in characters when it was cut.
fn render_line(buf: &mut String, n: usize, line: &str, max_chars: usize) -> Option<usize> {
    push_line_number(buf, n);
    // Cheap test first: a line of at most `max_chars` bytes has at most that many chars.
    let cut_at = if line.len() <= max_chars {
        None
    } else {
        line.char_indices().nth(max_chars).map(|(i, _)| i)
    };
    match cut_at {
        None => {
            buf.push_str(line);
            buf.push('\n');
            None
        }
        Some(at) => {
            let chars = max_chars + line[at..].chars().count();
            buf.push_str(&line[..at]);
            let _ = writeln!(
                buf,
                "… [line cut: {} chars, showing {}]",
                group(chars),
                group(max_chars)
            );
            Some(chars)
        }
    }
}

/// Pushes `n` right-aligned in six columns and a tab, as `format!("{n:>6}\t")` does,
/// without the formatting machinery (it is most of the cost of numbering lines).
fn push_line_number(buf: &mut String, n: usize) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    let mut rest = n;
    loop {
        start -= 1;
        // `rest % 10` is below 10.
        digits[start] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let digits = &digits[start..];
    for _ in digits.len()..6 {
        buf.push(' ');
    }
    buf.extend(digits.iter().map(|&d| char::from(d)));
    buf.push('\t');
}

/// The ASCII stand-in of a typographic character (curly quotes and primes, dashes
/// and the minus sign, the Unicode spaces), if it is one: what the edit and patch
/// engines accept in place of ASCII when nothing matches exactly.
pub fn fold_typography(c: char) -> Option<char> {
    match c {
        '\u{2018}'..='\u{201B}' | '\u{2032}' => Some('\''),
        '\u{201C}'..='\u{201F}' | '\u{2033}' => Some('"'),
        '\u{2010}'..='\u{2015}' | '\u{2212}' => Some('-'),
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => Some(' '),
        _ => None,
    }
}

/// `s` with every typographic character folded ([`fold_typography`]).
pub fn fold_typography_str(s: &str) -> String {
    s.chars().map(|c| fold_typography(c).unwrap_or(c)).collect()
}

/// Lines in `text`: line breaks, plus one for a last line without a break.
pub fn count_lines(text: &str) -> usize {
    let breaks = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    breaks + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

/// The lines of `text` without their `\n` or `\r\n`; a trailing line break does not
/// start another line.
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let parts = if text.is_empty() { None } else { Some(body) };
    parts
        .into_iter()
        .flat_map(|b| b.split('\n'))
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// `12345` as `12,345`.
pub fn group(n: usize) -> String {
    toolbelt_core::output::group(n as u64)
}

/// A byte count in decimal units (see [`toolbelt_core::human::human_bytes`]).
pub fn human_bytes(n: usize) -> String {
    toolbelt_core::human::human_bytes(u64::try_from(n).unwrap_or(u64::MAX))
}

fn plural(n: usize, word: &str) -> String {
    toolbelt_core::human::plural(u64::try_from(n).unwrap_or(u64::MAX), word)
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
