//! Command text as rules compare it.

/// Collapses runs of unquoted blanks (spaces and tabs) to one space and trims the
/// ends; quoted text and escaped characters are kept as they are.
pub(crate) fn normalize_command(command: &str) -> String {
    let mut out = String::with_capacity(command.len());
    let mut quote: Option<char> = None;
    let mut blank = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            out.push(c);
            if c == q {
                quote = None;
            } else if c == '\\'
                && q == '"'
                && let Some(next) = chars.next()
            {
                out.push(next);
            }
            continue;
        }
        if c == ' ' || c == '\t' {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push(' ');
            blank = false;
        }
        out.push(c);
        if c == '\'' || c == '"' {
            quote = Some(c);
        } else if c == '\\'
            && let Some(next) = chars.next()
        {
            out.push(next);
        }
    }
    out
}
