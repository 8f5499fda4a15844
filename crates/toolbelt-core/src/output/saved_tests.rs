//! Saved outputs in chunks: the chunks are the output in whole lines, a page made
//! from them is the page of the file byte for byte, and expiry keeps the newest.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, SystemTime};

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::page::new_output_id;
use super::*;

fn chunks_of(bytes: &[u8], chunk_bytes: usize) -> (Vec<SavedChunk>, (u64, u64)) {
    let mut chunks = LineChunks::with_chunk_bytes(bytes, chunk_bytes);
    let mut out = Vec::new();
    while let Some(chunk) = chunks.next_chunk().unwrap() {
        out.push(chunk);
    }
    (out, chunks.totals())
}

/// A page as a store makes it: from the last chunk whose first line is before
/// the page's (else the first), which is also the first chunk holding the end of
/// the line before the page's, one chunk after the other while it wants more.
fn page_from_chunks(
    chunks: &[SavedChunk],
    totals: (u64, u64),
    request: PageRequest,
) -> SpilledPage {
    let mut fill = PageFill::new(request, totals.0, totals.1);
    let Some(start) = fill.start_line() else {
        return fill.finish();
    };
    let Some(first) = chunks
        .iter()
        .rev()
        .find(|c| c.first_line < start || c.seq == 0)
    else {
        return fill.finish();
    };
    // From the other end: the chunk holding the end of the line before the page's.
    let forward = chunks
        .iter()
        .find(|c| start == 1 || c.first_line + c.lines >= start);
    assert_eq!(forward.map(|c| c.seq), Some(first.seq), "line {start}");
    fill.begin_at(first.first_line);
    for chunk in &chunks[first.seq as usize..] {
        if !fill.feed(chunk.data.as_slice()).unwrap() {
            break;
        }
    }
    fill.finish()
}

fn page_of_file(bytes: &[u8], request: PageRequest) -> SpilledPage {
    let dir = tempfile::tempdir().unwrap();
    let id = new_output_id();
    std::fs::write(dir.path().join(format!("{id}.txt")), bytes).unwrap();
    read_spilled_within(
        dir.path(),
        &id,
        request.offset,
        request.limit,
        request.max_page_bytes,
    )
    .unwrap()
}

fn chunk(seq: u64, first_line: u64, lines: u64, data: &str) -> SavedChunk {
    SavedChunk {
        seq,
        first_line,
        lines,
        data: data.as_bytes().to_vec(),
    }
}

#[test]
fn chunks_end_at_line_ends_and_long_lines_are_cut_into_full_chunks() {
    let text = "aaa\nbbb\ncccccccccccccccccccccc\ndd\ne";
    let (chunks, totals) = chunks_of(text.as_bytes(), 10);
    assert_eq!(
        chunks,
        vec![
            chunk(0, 1, 2, "aaa\nbbb\n"),
            chunk(1, 3, 0, "cccccccccc"),
            chunk(2, 3, 0, "cccccccccc"),
            chunk(3, 3, 3, "cc\ndd\ne"),
        ]
    );
    assert_eq!(totals, (text.len() as u64, 5));
    let (chunks, totals) = chunks_of(b"", 10);
    assert_eq!((chunks, totals), (vec![], (0, 0)));
    let (chunks, _) = chunks_of(b"0123456789", 10);
    assert_eq!(chunks, vec![chunk(0, 1, 1, "0123456789")]);
    let (chunks, _) = chunks_of(b"0123456789\n", 10);
    assert_eq!(
        chunks,
        vec![chunk(0, 1, 0, "0123456789"), chunk(1, 1, 1, "\n")]
    );
}

#[test]
fn a_page_fed_a_byte_at_a_time_is_the_page_of_the_file() {
    let text = format!(
        "{}\r\nshort\r\n\n{}\nlast without a line end é",
        "é".repeat(700),
        "z".repeat(3_000)
    );
    for offset in [-3, 0, 1, 2, 4] {
        let request = PageRequest {
            offset,
            limit: 10,
            max_page_bytes: 1_500,
        };
        let mut fill = PageFill::new(request, text.len() as u64, 5);
        for byte in text.as_bytes().chunks(1) {
            fill.feed(byte).unwrap();
        }
        assert_eq!(fill.finish(), page_of_file(text.as_bytes(), request));
    }
}

#[test]
fn pages_from_chunks_match_the_file_at_the_edges() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("one line, no line end", b"only".to_vec()),
        ("blank lines", b"\n\n\n".to_vec()),
        ("crlf", b"a\r\nb\r\n\r\nc\r".to_vec()),
        (
            "a line over many chunks",
            format!("head\n{}\ntail\n", "x".repeat(5_000)).into_bytes(),
        ),
        (
            "a cut character",
            format!("{}\n{}", "é".repeat(600), "€".repeat(900)).into_bytes(),
        ),
    ];
    for (name, bytes) in cases {
        for chunk_bytes in [1, 7, 64, 4_096] {
            let (chunks, totals) = chunks_of(&bytes, chunk_bytes);
            for offset in [-1_000, -2, -1, 0, 1, 2, 3, 4, 5, 100] {
                for limit in [0, 1, 2, 2_000] {
                    let request = PageRequest {
                        offset,
                        limit,
                        max_page_bytes: 1_024,
                    };
                    assert_eq!(
                        page_from_chunks(&chunks, totals, request),
                        page_of_file(&bytes, request),
                        "{name}, chunks of {chunk_bytes}, offset {offset}, limit {limit}"
                    );
                }
            }
        }
    }
}

fn content() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        6 => Just(b"a".to_vec()),
        2 => Just(b"\n".to_vec()),
        1 => Just(b"\r\n".to_vec()),
        1 => Just("é".as_bytes().to_vec()),
        1 => Just(vec![0xff]),
        1 => (1usize..400).prop_map(|n| vec![b'l'; n]),
    ];
    prop::collection::vec(piece, 0..120).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn chunks_are_the_output_and_say_where_its_lines_are(
        bytes in content(),
        chunk_bytes in 1usize..200,
    ) {
        let (chunks, totals) = chunks_of(&bytes, chunk_bytes);
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.data.clone()).collect();
        prop_assert_eq!(&joined, &bytes);
        let newlines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
        let open = u64::from(bytes.last().is_some_and(|&b| b != b'\n'));
        prop_assert_eq!(totals, (bytes.len() as u64, newlines + open));
        let mut line = 1;
        for (i, c) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            prop_assert_eq!(c.seq, i as u64);
            prop_assert!(!c.data.is_empty() && c.data.len() <= chunk_bytes);
            prop_assert_eq!(c.first_line, line);
            let ends = memchr::memchr_iter(b'\n', &c.data).count() as u64;
            let unterminated = last && c.data.last() != Some(&b'\n');
            prop_assert_eq!(c.lines, ends + u64::from(unterminated));
            // Whole lines, unless a line longer than a chunk fills it.
            if !last && c.data.last() != Some(&b'\n') {
                prop_assert_eq!(c.data.len(), chunk_bytes);
            }
            line += ends;
        }
    }

    #[test]
    fn a_page_from_chunks_is_the_page_of_the_file(
        bytes in content(),
        chunk_bytes in 1usize..300,
        offset in -60i64..60,
        limit in 0usize..25,
        max_page_bytes in prop_oneof![Just(0usize), Just(1_500), Just(24_000)],
    ) {
        let (chunks, totals) = chunks_of(&bytes, chunk_bytes);
        let request = PageRequest { offset, limit, max_page_bytes };
        prop_assert_eq!(
            page_from_chunks(&chunks, totals, request),
            page_of_file(&bytes, request)
        );
    }
}

#[test]
fn expiry_removes_the_old_then_the_oldest_while_over_the_total() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
    let ago = |s: u64| now - Duration::from_secs(s);
    let limits = SavedOutputLimits {
        max_age: Duration::from_secs(100),
        max_total_bytes: 10,
    };
    // Newest first: 8 kept; with 5 the total is 13, over 10: the 5 and all older go.
    let outputs = [
        (ago(50), 5),
        (ago(10), 8),
        (ago(60), 2),
        (ago(101), 1),
        (ago(5), 0),
    ];
    assert_eq!(limits.expired(&outputs, now), vec![0, 2, 3]);
    assert_eq!(limits.expired(&[(ago(100), 10)], now), Vec::<usize>::new());
    assert_eq!(limits.expired(&[(ago(1), 11)], now), vec![0]);
}

#[test]
fn expire_spilled_removes_saved_outputs_only() {
    let dir = tempfile::tempdir().unwrap();
    let now = SystemTime::now();
    let write = |name: &str, bytes: usize, age_s: u64| {
        let path = dir.path().join(name);
        std::fs::write(&path, vec![b'x'; bytes]).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(now - Duration::from_secs(age_s)).unwrap();
        path
    };
    let (old, big, new) = (new_output_id(), new_output_id(), new_output_id());
    let old = write(&format!("{old}.txt"), 10, 1_000);
    let big = write(&format!("{big}.txt"), 60, 20);
    let new = write(&format!("{new}.txt"), 50, 10);
    let other = write("notes.txt", 10, 10_000);
    let limits = SavedOutputLimits {
        max_age: Duration::from_secs(500),
        max_total_bytes: 100,
    };
    let expired = expire_spilled(dir.path(), &limits, now).unwrap();
    assert_eq!((expired.outputs, expired.bytes), (2, 70));
    assert!(expired.problems.is_empty());
    assert_eq!(
        [old.exists(), big.exists(), new.exists(), other.exists()],
        [false, false, true, true]
    );
    let none = expire_spilled(&dir.path().join("missing"), &limits, now).unwrap();
    assert_eq!(none.outputs, 0);
}
