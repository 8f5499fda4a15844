#![allow(clippy::unwrap_used)]

use pretty_assertions::assert_eq;

use super::*;

fn all(bytes: &[u8], locale: Option<&'static Encoding>, chunk: usize) -> String {
    let mut t = Transcoder::new(locale);
    let mut out = String::new();
    for part in bytes.chunks(chunk.max(1)) {
        t.push(part, &mut out);
    }
    t.finish(&mut out);
    out
}

#[test]
fn utf8_passes_through_whatever_the_chunks() {
    let text = "héllo wörld — 你好\n".repeat(50);
    for chunk in [1, 2, 3, 7, 4096] {
        assert_eq!(all(text.as_bytes(), None, chunk), text);
    }
}

#[test]
fn gbk_text_is_readable() {
    let (gbk, _, _) = encoding_rs::GBK.encode("编译失败：找不到文件\n");
    assert_eq!(all(&gbk, None, 3), "编译失败：找不到文件\n");
    // With a GBK locale too.
    assert_eq!(
        all(&gbk, locale_encoding("zh_CN.GBK"), 5),
        "编译失败：找不到文件\n"
    );
}

#[test]
fn the_locale_wins_over_gb18030_when_it_decodes() {
    let (sjis, _, _) = encoding_rs::SHIFT_JIS.encode("ファイルが見つかりません");
    assert_eq!(
        all(&sjis, locale_encoding("ja_JP.SJIS"), 4),
        "ファイルが見つかりません"
    );
}

#[test]
fn bytes_that_decode_in_nothing_become_replacement_characters() {
    let out = all(b"\xff\xfe bad", None, 2);
    assert!(out.ends_with(" bad"), "{out:?}");
    assert!(out.contains('\u{fffd}'));
}

#[test]
fn a_late_invalid_byte_in_utf8_output_is_replaced() {
    let mut bytes = "ok ".repeat(SNIFF_BYTES).into_bytes();
    bytes.extend_from_slice(b"\xff end");
    let out = all(&bytes, None, 1000);
    assert!(out.ends_with("\u{fffd} end"));
}

#[test]
fn locales() {
    assert_eq!(locale_encoding("zh_CN.GBK"), Some(encoding_rs::GBK));
    assert_eq!(
        locale_encoding("de_DE.ISO-8859-1@euro"),
        Some(encoding_rs::WINDOWS_1252)
    );
    assert_eq!(locale_encoding("en_US.UTF-8"), None);
    assert_eq!(locale_encoding("C"), None);
    let env = |n: &str| match n {
        "LC_ALL" => Some(""),
        "LANG" => Some("zh_CN.GB18030"),
        _ => None,
    };
    assert_eq!(env_locale_encoding(env), Some(encoding_rs::GB18030));
}

#[test]
fn settle_decodes_a_short_window_at_once() {
    let mut t = Transcoder::new(None);
    let mut out = String::new();
    t.push("héllo\n".as_bytes(), &mut out);
    assert_eq!(out, "");
    t.settle(&mut out);
    assert_eq!(out, "héllo\n");
    assert_eq!(t.encoding(), Some(encoding_rs::UTF_8));
    t.push(b" more", &mut out);
    t.finish(&mut out);
    assert_eq!(out, "héllo\n more");
}
