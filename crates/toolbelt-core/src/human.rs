//! Numbers as people read them in tool results: byte counts, grouped counts and
//! plurals. One home for every crate, so that a size reads the same in a truncation
//! marker, a file listing and an error.
//!
//! ```
//! use toolbelt_core::human::{group, human_bytes, plural};
//!
//! assert_eq!(group(1_234_567), "1,234,567");
//! assert_eq!(human_bytes(50_000), "50 KB");
//! assert_eq!(human_bytes(12_345), "12.3 KB");
//! assert_eq!(plural(1, "line"), "line");
//! assert_eq!(plural(3, "line"), "lines");
//! ```

/// A byte count in decimal units: `812 B`, `12.3 KB`, `50 KB`, `1.2 MB`, `3.4 GB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1_000 {
        return format!("{n} B");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut x = n as f64 / 1_000.0;
    let mut unit = 0;
    while x >= 999.95 && unit + 1 < UNITS.len() {
        x /= 1_000.0;
        unit += 1;
    }
    let number = if x < 99.95 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    };
    let number = number.strip_suffix(".0").unwrap_or(&number);
    format!("{number} {}", UNITS[unit])
}

/// `1234567` as `1,234,567`: how counts are shown to models and people.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `one` when `n` is 1, else `many`: for the words [`plural`] cannot make
/// (`entry`/`entries`, `looks`/`look`).
pub fn noun<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

/// `word`, with an `s` unless `n` is 1.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_the_same_everywhere() {
        let shown: Vec<String> = [0, 812, 999, 1_000, 12_345, 50_000, 99_960, 150_000, 999_960]
            .into_iter()
            .chain([1_234_567, 3_400_000_000, 5_000_000_000_000_000])
            .map(human_bytes)
            .collect();
        assert_eq!(
            shown,
            [
                "0 B", "812 B", "999 B", "1 KB", "12.3 KB", "50 KB", "100 KB", "150 KB", "1 MB",
                "1.2 MB", "3.4 GB", "5000 TB"
            ]
        );
    }
}
