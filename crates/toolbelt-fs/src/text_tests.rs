#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

fn binary(description: &str) -> Sniffed {
    Sniffed::Binary {
        description: description.to_string(),
    }
}

fn utf16le(text: &str) -> Vec<u8> {
    let mut out = vec![0xFF, 0xFE];
    for u in text.encode_utf16() {
        out.extend_from_slice(&u.to_le_bytes());
    }
    out
}

#[test]
fn decode_plain_utf8() {
    assert_eq!(
        decode("héllo\n".as_bytes()),
        Decoded {
            text: "héllo\n".to_string(),
            encoding: Encoding::Utf8,
            lossy: false
        }
    );
    assert_eq!(
        decode(b""),
        Decoded {
            text: String::new(),
            encoding: Encoding::Utf8,
            lossy: false
        }
    );
}

#[test]
fn decode_strips_the_utf8_bom() {
    assert_eq!(
        decode(b"\xEF\xBB\xBFa\r\nb"),
        Decoded {
            text: "a\r\nb".to_string(),
            encoding: Encoding::Utf8Bom,
            lossy: false
        }
    );
}

#[test]
fn decode_utf16_both_byte_orders() {
    let le = utf16le("zoë 🦀\r\n");
    assert_eq!(
        decode(&le),
        Decoded {
            text: "zoë 🦀\r\n".to_string(),
            encoding: Encoding::Utf16Le,
            lossy: false
        }
    );
    let mut be = vec![0xFE, 0xFF];
    for u in "zoë 🦀".encode_utf16() {
        be.extend_from_slice(&u.to_be_bytes());
    }
    assert_eq!(
        decode(&be),
        Decoded {
            text: "zoë 🦀".to_string(),
            encoding: Encoding::Utf16Be,
            lossy: false
        }
    );
    assert_eq!(encode("zoë 🦀", Encoding::Utf16Be), be);
}

#[test]
fn invalid_bytes_are_decoded_lossily_and_flagged() {
    assert_eq!(
        decode(b"caf\xE9 au lait"),
        Decoded {
            text: "caf\u{FFFD} au lait".to_string(),
            encoding: Encoding::Utf8,
            lossy: true
        }
    );
    assert_eq!(
        decode(b"\xEF\xBB\xBF\xFFx"),
        Decoded {
            text: "\u{FFFD}x".to_string(),
            encoding: Encoding::Utf8Bom,
            lossy: true
        }
    );
}

#[test]
fn broken_utf16_is_lossy() {
    // An odd trailing byte.
    let mut odd = utf16le("ab");
    odd.push(b'c');
    assert_eq!(
        decode(&odd),
        Decoded {
            text: "ab\u{FFFD}".to_string(),
            encoding: Encoding::Utf16Le,
            lossy: true
        }
    );
    // An unpaired high surrogate.
    let lone = [0xFF, 0xFE, 0x00, 0xD8, b'a', 0x00];
    assert_eq!(
        decode(&lone),
        Decoded {
            text: "\u{FFFD}a".to_string(),
            encoding: Encoding::Utf16Le,
            lossy: true
        }
    );
}

#[test]
fn encode_adds_the_bom_back() {
    assert_eq!(encode("x", Encoding::Utf8), b"x");
    assert_eq!(encode("x", Encoding::Utf8Bom), b"\xEF\xBB\xBFx");
    assert_eq!(encode("x", Encoding::Utf16Le), b"\xFF\xFEx\x00");
    assert_eq!(encode("x", Encoding::Utf16Be), b"\xFE\xFF\x00x");
    assert_eq!(
        [
            Encoding::Utf8,
            Encoding::Utf8Bom,
            Encoding::Utf16Le,
            Encoding::Utf16Be
        ]
        .map(Encoding::as_str),
        ["utf-8", "utf-8-bom", "utf-16le", "utf-16be"]
    );
}

proptest! {
    #[test]
    fn encode_of_decode_gives_the_same_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let d = decode(&bytes);
        if !d.lossy {
            prop_assert_eq!(encode(&d.text, d.encoding), bytes);
        }
    }

    #[test]
    fn encode_of_decode_holds_for_every_encoding(text in "\\PC*", which in 0usize..4) {
        let encoding = [Encoding::Utf8, Encoding::Utf8Bom, Encoding::Utf16Le, Encoding::Utf16Be][which];
        let bytes = encode(&text, encoding);
        let d = decode(&bytes);
        prop_assert!(!d.lossy);
        prop_assert_eq!(encode(&d.text, d.encoding), bytes);
    }

    #[test]
    fn crlf_conversion_round_trips(lines in prop::collection::vec("[^\r\n]*", 0..8), trailing in any::<bool>()) {
        let mut lf = lines.join("\n");
        if trailing {
            lf.push('\n');
        }
        let crlf = apply_line_ending(&lf, LineEnding::CrLf).into_owned();
        prop_assert_eq!(crlf.matches('\n').count(), crlf.matches("\r\n").count());
        prop_assert_eq!(apply_line_ending(&crlf, LineEnding::Lf).into_owned(), lf.clone());
        prop_assert_eq!(count_lines(&crlf), count_lines(&lf));
    }

    #[test]
    fn render_never_exceeds_its_byte_cap(
        lines in prop::collection::vec("[a-zé🦀 ]{0,300}", 1..60),
        offset in -80i64..80,
        limit in 0usize..70,
        max_bytes in 2_000usize..6_000,
    ) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let r = render_lines(&text, &RenderOptions { offset, limit, max_line_chars: 100, max_bytes });
        prop_assert_eq!(r.total_lines, lines.len());
        prop_assert!(r.to_text().len() <= max_bytes);
        let shown = r.body.lines().count();
        prop_assert_eq!(shown, if r.first_line == 0 { 0 } else { r.last_line - r.first_line + 1 });
        prop_assert_eq!(r.next_offset, (r.last_line < r.total_lines && r.past_end.is_none()).then_some(r.last_line + 1));
    }
}

#[test]
fn line_endings() {
    assert_eq!(line_ending(""), LineEnding::None);
    assert_eq!(line_ending("no break\r"), LineEnding::None);
    assert_eq!(line_ending("a\nb\n"), LineEnding::Lf);
    assert_eq!(line_ending("a\r\nb\r\n"), LineEnding::CrLf);
    assert_eq!(line_ending("a\r\nb\n"), LineEnding::Mixed);
    assert_eq!(line_ending("\n\r\n"), LineEnding::Mixed);
    assert_eq!(LineEnding::CrLf.as_str(), "crlf");
}

#[test]
fn apply_line_ending_converts_only_what_differs() {
    assert_eq!(
        apply_line_ending("a\nb\r\nc\n", LineEnding::CrLf),
        "a\r\nb\r\nc\r\n"
    );
    assert_eq!(apply_line_ending("\n", LineEnding::CrLf), "\r\n");
    assert_eq!(apply_line_ending("a\r\nb\n", LineEnding::Lf), "a\nb\n");
    assert_eq!(apply_line_ending("a\r\nb\n", LineEnding::Mixed), "a\r\nb\n");
    assert_eq!(apply_line_ending("a\nb", LineEnding::None), "a\nb");
    assert!(matches!(
        apply_line_ending("a\r\nb", LineEnding::CrLf),
        Cow::Borrowed(_)
    ));
}

#[test]
fn sniff_images() {
    assert_eq!(
        sniff(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"),
        Sniffed::Image { mime: "image/png" }
    );
    assert_eq!(
        sniff(b"\xFF\xD8\xFF\xE0\0\x10JFIF"),
        Sniffed::Image { mime: "image/jpeg" }
    );
    assert_eq!(sniff(b"GIF89a\x01\0"), Sniffed::Image { mime: "image/gif" });
    assert_eq!(
        sniff(b"RIFF\x24\0\0\0WEBPVP8 "),
        Sniffed::Image { mime: "image/webp" }
    );
}

#[test]
fn sniff_text() {
    assert_eq!(sniff(b""), Sniffed::Text);
    assert_eq!(sniff(b"fn main() {}\n"), Sniffed::Text);
    assert_eq!(sniff("héllo wörld 🦀\r\n".as_bytes()), Sniffed::Text);
    assert_eq!(sniff(b"\xEF\xBB\xBFbom"), Sniffed::Text);
    assert_eq!(sniff(&utf16le("hi\n")), Sniffed::Text);
    // Latin-1 is text (read lossily), not binary.
    assert_eq!(sniff(b"caf\xe9\n"), Sniffed::Text);
    // Coloured logs: escape bytes do not count as control bytes.
    assert_eq!(
        sniff(b"\x1b[31merror\x1b[0m\n\x1b[32mok\x1b[0m\n"),
        Sniffed::Text
    );
    // Text that merely starts like a weak magic number.
    assert_eq!(sniff(b"MZ is a prefix\n"), Sniffed::Text);
    assert_eq!(sniff(b"BZh, said the bee\n"), Sniffed::Text);
}

#[test]
fn sniff_binary_content() {
    assert_eq!(sniff(b"abc\0def"), binary("binary data"));
    assert_eq!(sniff(b"\x01\x02\x03abcdef"), binary("binary data"));
    // 2 control bytes in 10: 20 %, still text.
    assert_eq!(sniff(b"\x01\x02abcdefgh"), Sniffed::Text);
    // Only the first SNIFF_BYTES count.
    let mut late = vec![b'a'; SNIFF_BYTES];
    late.push(0);
    assert_eq!(sniff(&late), Sniffed::Text);
    assert_eq!(
        sniff(b"MZ\x90\0\x03\0"),
        binary("Windows/DOS executable (PE)")
    );
}

#[test]
fn sniff_names_common_binary_formats() {
    let mut elf = b"\x7FELF\x02\x01\x01\0".to_vec();
    elf.resize(16, 0);
    elf.extend_from_slice(&[3, 0]);
    let mut tar = b"file.txt".to_vec();
    tar.resize(257, 0);
    tar.extend_from_slice(b"ustar\x0000");
    let mut zip_jar = b"PK\x03\x04\x14\0\0\0".to_vec();
    zip_jar.extend_from_slice(b"\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0META-INF/MANIFEST.MF");
    let mut docx = b"PK\x03\x04".to_vec();
    docx.extend_from_slice(b"[Content_Types].xml....word/document.xml");
    let cases: Vec<(&[u8], &str)> = vec![
        (&elf, "ELF 64-bit shared object"),
        (
            b"\x7FELF\x01\x02\x01\0\0\0\0\0\0\0\0\0\0\x02",
            "ELF 32-bit executable",
        ),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF document"),
        (b"PK\x03\x04\x14\0\0\0", "ZIP archive"),
        (&zip_jar, "ZIP archive (Java archive, .jar)"),
        (&docx, "ZIP archive (Word document, .docx)"),
        (b"\x1F\x8B\x08\0", "gzip compressed data"),
        (&tar, "tar archive"),
        (b"SQLite format 3\0\x10\0", "SQLite 3 database"),
        (b"\0asm\x01\0\0\0", "WebAssembly binary module"),
        (b"\xCF\xFA\xED\xFE\x07\0\0\x01", "Mach-O 64-bit binary"),
        (b"\xCA\xFE\xBA\xBE\0\0\0\x02", "Mach-O universal binary"),
        (b"\xCA\xFE\xBA\xBE\0\0\0\x34", "Java class file"),
        (b"\xFD7zXZ\0\0", "xz compressed data"),
        (b"\0\0\0\x20ftypisom", "ISO media (MP4, MOV, HEIC...)"),
    ];
    for (bytes, description) in cases {
        assert_eq!(sniff(bytes), binary(description), "{bytes:?}");
    }
}

fn opts(offset: i64, limit: usize) -> RenderOptions {
    RenderOptions {
        offset,
        limit,
        ..RenderOptions::default()
    }
}

#[test]
fn line_counting() {
    assert_eq!(count_lines(""), 0);
    assert_eq!(count_lines("\n"), 1);
    assert_eq!(count_lines("a"), 1);
    assert_eq!(count_lines("a\n"), 1);
    assert_eq!(count_lines("a\nb"), 2);
    assert_eq!(count_lines("a\r\nb\r\n\r\n"), 3);
    assert_eq!(lines("a\r\nb\r\n\r\n").collect::<Vec<_>>(), ["a", "b", ""]);
    assert_eq!(lines("").count(), 0);
    assert_eq!(lines("x\ry").collect::<Vec<_>>(), ["x\ry"]);
}

#[test]
fn renders_the_whole_file() {
    let r = render_lines("alpha\r\nbeta\r\n", &RenderOptions::default());
    assert_eq!(
        r,
        Rendered {
            body: "     1\talpha\n     2\tbeta\n".to_string(),
            first_line: 1,
            last_line: 2,
            total_lines: 2,
            cut_lines: vec![],
            next_offset: None,
            stopped_by_bytes: false,
            max_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            past_end: None,
        }
    );
    assert_eq!(r.footer(), "[2 lines; whole file]");
    assert_eq!(
        render_lines("one", &RenderOptions::default()).to_text(),
        "     1\tone\n[1 line; whole file]"
    );
}

#[test]
fn renders_a_window_with_continuation() {
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    let r = render_lines(&text, &opts(3, 4));
    assert_eq!(
        r.to_text(),
        "     3\tline 3\n     4\tline 4\n     5\tline 5\n     6\tline 6\n[lines 3-6 of 10; 4 more lines; continue with offset=7]"
    );
    assert_eq!(r.next_offset, Some(7));
    let r = render_lines(&text, &opts(10, 4));
    assert_eq!(r.to_text(), "    10\tline 10\n[line 10 of 10; end of file]");
    assert_eq!(
        render_lines(&text, &opts(0, 1)).footer(),
        "[line 1 of 10; 9 more lines; continue with offset=2]"
    );
}

#[test]
fn negative_offsets_count_from_the_end() {
    let text: String = (1..=10).map(|i| format!("{i}\n")).collect();
    let r = render_lines(&text, &opts(-1, 0));
    assert_eq!(r.to_text(), "    10\t10\n[line 10 of 10; end of file]");
    let r = render_lines(&text, &opts(-3, 2));
    assert_eq!(
        r.to_text(),
        "     8\t8\n     9\t9\n[lines 8-9 of 10; 1 more line; continue with offset=10]"
    );
    // Further back than the start: from line 1.
    let r = render_lines(&text, &opts(-50, 0));
    assert_eq!((r.first_line, r.last_line), (1, 10));
}

#[test]
fn offset_past_the_end_and_empty_text() {
    let r = render_lines("a\nb\n", &opts(5, 0));
    assert_eq!(r.body, "");
    assert_eq!(r.past_end, Some(5));
    assert_eq!(r.next_offset, None);
    assert_eq!(
        r.footer(),
        "[offset 5 is past the end: the file has 2 lines; use an offset from 1 to 2, or a negative one such as -2 for the last lines]"
    );
    let r = render_lines("", &opts(1, 0));
    assert_eq!((r.body.as_str(), r.total_lines), ("", 0));
    assert_eq!(r.footer(), "[empty file: 0 lines]");
}

#[test]
fn long_lines_are_cut_with_a_marker() {
    let long = "é".repeat(12_345);
    let text = format!("short\n{long}\nend\n");
    let r = render_lines(&text, &RenderOptions::default());
    let expected = format!(
        "     1\tshort\n     2\t{}… [line cut: 12,345 chars, showing 2,000]\n     3\tend\n[3 lines; whole file; 1 long line cut: 2]",
        "é".repeat(2_000)
    );
    assert_eq!(r.to_text(), expected);
    assert_eq!(
        r.cut_lines,
        vec![CutLine {
            line: 2,
            chars: 12_345
        }]
    );
    // Exactly at the limit: not cut.
    let at_limit = "x".repeat(MAX_LINE_CHARS);
    assert!(
        render_lines(&at_limit, &RenderOptions::default())
            .cut_lines
            .is_empty()
    );
}

#[test]
fn many_cut_lines_are_listed_up_to_a_limit() {
    let text: String = (0..13).map(|_| format!("{}\n", "y".repeat(30))).collect();
    let r = render_lines(
        &text,
        &RenderOptions {
            max_line_chars: 10,
            ..RenderOptions::default()
        },
    );
    assert_eq!(
        r.footer(),
        "[13 lines; whole file; 13 long lines cut: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 3 more]"
    );
}

#[test]
fn the_byte_cap_stops_early_and_says_so() {
    let text: String = (1..=1_000).map(|i| format!("{i:0>90}\n")).collect();
    let r = render_lines(
        &text,
        &RenderOptions {
            max_bytes: 2_000,
            ..RenderOptions::default()
        },
    );
    // 98 bytes a line, 1,744 bytes of room below the footer reserve: 17 lines.
    assert_eq!((r.first_line, r.last_line), (1, 17));
    assert!(r.stopped_by_bytes);
    assert_eq!(
        r.footer(),
        "[lines 1-17 of 1,000; stopped at the 2 KB output cap; 983 more lines; continue with offset=18]"
    );
    assert!(r.to_text().len() <= 2_000);
}

#[test]
fn the_first_line_is_shown_even_over_the_cap() {
    let text = "z".repeat(5_000);
    let r = render_lines(
        &text,
        &RenderOptions {
            max_bytes: 100,
            ..RenderOptions::default()
        },
    );
    assert_eq!((r.first_line, r.last_line, r.next_offset), (1, 1, None));
    assert_eq!(r.cut_lines.len(), 1);
}

#[test]
fn numbers_and_sizes_read_well() {
    assert_eq!(group(0), "0");
    assert_eq!(group(999), "999");
    assert_eq!(group(1_000), "1,000");
    assert_eq!(group(1_234_567), "1,234,567");
    assert_eq!(human_bytes(812), "812 B");
    assert_eq!(human_bytes(12_345), "12.3 KB");
    assert_eq!(human_bytes(50_000), "50 KB");
    assert_eq!(human_bytes(256_000_000), "256 MB");
    assert_eq!(human_bytes(3_400_000_000), "3.4 GB");
}

#[test]
fn line_numbers_are_right_aligned_in_six_columns_like_format() {
    for n in [
        0,
        1,
        9,
        10,
        99_999,
        100_000,
        999_999,
        1_000_000,
        123_456_789,
        usize::MAX,
    ] {
        let mut buf = String::new();
        push_line_number(&mut buf, n);
        assert_eq!(buf, format!("{n:>6}\t"));
    }
}
