use super::*;

/// Lines 1..=200 `v<i> = <i>` (formatted), except 20..=24 `u<i> = [ <i>,<i> ]`
/// (unformatted), with line `edited` replaced by `with`.
fn file(edited: Option<(usize, &str)>, format_all: bool) -> String {
    (1..=200)
        .map(|i| match edited {
            Some((at, with)) if at == i => format!("{with}\n"),
            _ if (20..=24).contains(&i) && format_all => format!("u{i} = [{i}, {i}]\n"),
            _ if (20..=24).contains(&i) => format!("u{i} = [ {i},{i} ]\n"),
            _ => format!("v{i} = {i}\n"),
        })
        .collect()
}

#[test]
fn only_the_edited_region_of_an_unformatted_file_is_formatted() {
    let old = file(None, false);
    let staged = file(Some((150, "w = [ 1,2 ]")), false);
    let formatted = file(Some((150, "w = [1, 2]")), true);
    let kept = keep_changed_lines(Some(&old), &staged, &formatted);
    assert_eq!(kept, file(Some((150, "w = [1, 2]")), false));
    assert!(kept.contains("u20 = [ 20,20 ]\n"));
}

#[test]
fn an_unchanged_file_keeps_none_of_the_formatter() {
    let old = file(None, false);
    let formatted = file(None, true);
    assert_eq!(keep_changed_lines(Some(&old), &old, &formatted), old);
}

#[test]
fn a_new_file_is_formatted_whole() {
    let staged = "x=1\ny = [ 1 ]\n";
    let formatted = "x = 1\ny = [1]\n";
    assert_eq!(keep_changed_lines(None, staged, formatted), formatted);
    assert_eq!(keep_changed_lines(None, "", "\n"), "\n");
}

#[test]
fn lines_the_formatter_inserts_beside_an_edit_are_kept() {
    let old = "import os\nx = 1\n";
    let staged = "import os\ndef f( ):\n    pass\nx = 1\n";
    let formatted = "import os\n\n\ndef f():\n    pass\n\n\nx = 1\n";
    assert_eq!(keep_changed_lines(Some(old), staged, formatted), formatted);
}

#[test]
fn a_reformatted_statement_spanning_the_edit_is_kept_whole() {
    let old = "a = f(1,\n      2)\nb = 1\n";
    let staged = "a = f(1,\n      3)\nb = 1\n";
    let formatted = "a = f(1, 3)\nb = 1\n";
    assert_eq!(keep_changed_lines(Some(old), staged, formatted), formatted);
}

#[test]
fn a_formatter_change_beside_a_deletion_is_kept() {
    let old = "a=1\nb=2\nc=3\nd=4\n";
    let staged = "a=1\nc=3\nd=4\n";
    let formatted = "a = 1\nc = 3\nd = 4\n";
    // The deletion sits between `a` and `c`: both touch it, `d` does not.
    assert_eq!(
        keep_changed_lines(Some(old), staged, formatted),
        "a = 1\nc = 3\nd=4\n"
    );
}

#[test]
fn the_staged_line_ends_are_kept() {
    let old = "a = 1\r\nb=2\r\nc=3\r\n";
    let staged = "a = 1\r\nb=5\r\nc=3\r\n";
    let formatted = "a = 1\nb = 5\nc = 3\n";
    assert_eq!(
        keep_changed_lines(Some(old), staged, formatted),
        "a = 1\r\nb = 5\r\nc=3\r\n"
    );
}

#[test]
fn a_final_newline_is_a_change_of_the_last_line() {
    let old = "a=1\nb = 2";
    // The last line is not edited: no newline added.
    let staged = "a=5\nb = 2";
    assert_eq!(
        keep_changed_lines(Some(old), staged, "a = 5\nb = 2\n"),
        "a = 5\nb = 2"
    );
    // The last line is edited: the newline comes with it.
    let staged = "a=1\nb = 3";
    assert_eq!(
        keep_changed_lines(Some(old), staged, "a = 1\nb = 3\n"),
        "a=1\nb = 3\n"
    );
}

#[test]
fn overlap_rules() {
    // Shared lines.
    assert!(overlaps(&(3..5), &(4..6)));
    assert!(!overlaps(&(3..5), &(5..6)));
    assert!(!overlaps(&(6..7), &(4..6)));
    // A formatter insertion touching an edited range.
    assert!(overlaps(&(4..4), &(4..6)));
    assert!(overlaps(&(6..6), &(4..6)));
    assert!(!overlaps(&(7..7), &(4..6)));
    assert!(!overlaps(&(3..3), &(4..6)));
    // A deletion point touching a formatter hunk.
    assert!(overlaps(&(3..5), &(5..5)));
    assert!(overlaps(&(3..5), &(3..3)));
    assert!(!overlaps(&(3..5), &(6..6)));
    assert!(overlaps(&(2..2), &(2..2)));
}

#[test]
fn text_without_line_ends_takes_the_formatters() {
    assert_eq!(with_line_ends_of("x", "x\r\n"), "x\r\n");
    assert_eq!(with_line_ends_of("x\n", "x\r\ny\r\n"), "x\ny\n");
    assert_eq!(with_line_ends_of("x\r\n", "x\ny"), "x\r\ny");
}

#[test]
fn a_respaced_file_is_respaced_only_where_edited() {
    let old = "a=1\nb=2\nc=3\nd=4\n";
    let staged = "a=1\nb=2\nc=7\nd=4\n";
    let formatted = "a = 1\nb = 2\nc = 7\nd = 4\n";
    assert_eq!(
        keep_changed_lines(Some(old), staged, formatted),
        "a=1\nb=2\nc = 7\nd=4\n"
    );
}

#[test]
fn a_reindented_block_is_kept_whole() {
    // Taking the edited line's new indentation alone would break the block.
    let old = "if x:\n  a()\n  b()\n";
    let staged = "if x:\n  a()\n  c()\n";
    let formatted = "if x:\n    a()\n    c()\n";
    assert_eq!(keep_changed_lines(Some(old), staged, formatted), formatted);
}

#[test]
fn a_reflowed_statement_is_not_split_by_spacing() {
    // Two lines become two other lines holding the same text differently cut.
    let old = "f(a,\n  b)\nz=1\n";
    let staged = "f(a,\n  c)\nz=1\n";
    let formatted = "f(\n  a, c)\nz = 1\n";
    assert_eq!(
        keep_changed_lines(Some(old), staged, formatted),
        "f(\n  a, c)\nz=1\n"
    );
}

#[test]
fn spacing_keys_keep_indentation() {
    assert_eq!(spacing_key("a = 1\n"), spacing_key("a=1"));
    assert_ne!(spacing_key("  a()\n"), spacing_key("    a()\n"));
}

#[test]
fn a_wholly_unformatted_file_is_formatted_only_at_the_edited_line() {
    let unformatted = |edit: Option<&str>| -> String {
        (1..=200)
            .map(|i| match edit {
                Some(with) if i == 100 => format!("{with}\n"),
                _ => format!("v{i}={i}\n"),
            })
            .collect()
    };
    let old = unformatted(None);
    let staged = unformatted(Some("w=[1,2]"));
    let formatted: String = staged.replace('=', " = ").replace(",", ", ");
    let kept = keep_changed_lines(Some(&old), &staged, &formatted);
    assert_eq!(kept, unformatted(Some("w = [1, 2]")));
}
