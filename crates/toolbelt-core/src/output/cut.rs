//! Where bytes may be cut: line ends and UTF-8 character boundaries.

/// Where the head ends: after the last `\n` within `cap` when that is in the second
/// half, else at a character boundary at or below `cap`.
pub(super) fn head_cut(bytes: &[u8], cap: usize) -> usize {
    let cap = cap.min(bytes.len());
    match memchr::memrchr(b'\n', &bytes[..cap]) {
        Some(i) if i + 1 >= cap / 2 => i + 1,
        _ => floor_char_boundary(bytes, cap),
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The largest index `<= i` not in the middle of a UTF-8 sequence (looking back at
/// most 3 bytes; invalid bytes are boundaries).
pub(super) fn floor_char_boundary(bytes: &[u8], i: usize) -> usize {
    if i >= bytes.len() {
        return bytes.len();
    }
    let mut j = i;
    while j > 0 && i - j < 3 && bytes.get(j).copied().is_some_and(is_continuation) {
        j -= 1;
    }
    if bytes.get(j).copied().is_some_and(is_continuation) {
        i
    } else {
        j
    }
}

/// The smallest index `>= i` not in the middle of a UTF-8 sequence.
pub(super) fn ceil_char_boundary(bytes: &[u8], i: usize) -> usize {
    if i >= bytes.len() {
        return bytes.len();
    }
    let mut j = i;
    while j < bytes.len() && j - i < 3 && bytes.get(j).copied().is_some_and(is_continuation) {
        j += 1;
    }
    j
}

pub(super) fn leading_continuations(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&b| is_continuation(b))
        .count()
}

/// The length of `bytes` without an incomplete UTF-8 sequence at its end.
pub(super) fn complete_prefix_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(4) {
        let b = bytes[n - back];
        if is_continuation(b) {
            continue;
        }
        let need = match b {
            0xF0..=0xFF => 4,
            0xE0..=0xEF => 3,
            0xC0..=0xDF => 2,
            _ => 1,
        };
        return if need > back { n - back } else { n };
    }
    n
}

pub(super) fn lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Cuts `text` to at most `max_bytes` at a character boundary.
pub(super) fn hard_cut(mut text: String, max_bytes: usize) -> String {
    if text.len() > max_bytes {
        let mut end = max_bytes;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}
