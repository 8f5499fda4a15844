//! Descriptions that list what is configured (skills, channels), kept within
//! [`MAX_DESCRIPTION_CHARS`].

use toolbelt_core::MAX_DESCRIPTION_CHARS;

/// `base` followed by `lines`, as many as fit in [`MAX_DESCRIPTION_CHARS`] with
/// room for the line `more(left_out)` that says how many were left out (of
/// `lines`, and the `hidden` ones never offered) and how to reach them.
pub(crate) fn with_listing<I>(
    base: String,
    lines: I,
    hidden: usize,
    more: impl Fn(usize) -> String,
) -> String
where
    I: IntoIterator<Item = String>,
{
    let lines: Vec<String> = lines.into_iter().collect();
    let total = lines.len() + hidden;
    let mut text = base;
    let mut used = text.chars().count();
    for (shown, line) in lines.into_iter().enumerate() {
        let after = used + line.chars().count();
        let left_after = total - shown - 1;
        let reserve = if left_after > 0 {
            more(left_after).chars().count()
        } else {
            0
        };
        if after + reserve > MAX_DESCRIPTION_CHARS {
            text.push_str(&more(total - shown));
            return text;
        }
        text.push_str(&line);
        used = after;
    }
    if hidden > 0 {
        text.push_str(&more(hidden));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_listing_before_the_limit_and_says_how_many_are_left() {
        let lines = (0..200).map(|i| format!("\n- item{i:03}: {}", "x".repeat(30)));
        let text = with_listing("Base.".into(), lines, 0, |n| format!("\n... and {n} more"));
        assert!(
            text.chars().count() <= MAX_DESCRIPTION_CHARS,
            "{}",
            text.len()
        );
        let shown = text.matches("\n- item").count();
        assert!(shown > 10, "{shown}");
        assert!(
            text.ends_with(&format!("\n... and {} more", 200 - shown)),
            "{text}"
        );
    }

    #[test]
    fn lists_everything_that_fits() {
        let lines = (0..3).map(|i| format!("\n- {i}"));
        assert_eq!(
            with_listing("B".into(), lines, 0, |n| format!(" +{n}")),
            "B\n- 0\n- 1\n- 2"
        );
        let lines = (0..3).map(|i| format!("\n- {i}"));
        assert_eq!(
            with_listing("B".into(), lines, 4, |n| format!(" +{n}")),
            "B\n- 0\n- 1\n- 2 +4"
        );
    }
}
