//! From a language server's diagnostics to the core's [`Diagnostic`]: 0-based
//! UTF-16 positions become 1-based lines and character columns, read against the
//! text of the version the diagnostics belong to.

use lsp_types::{DiagnosticSeverity, NumberOrString};
use toolbelt_core::diagnostics::{Diagnostic, Position, Severity};

/// The start of each line of a text, for position conversion.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    /// Indexes `text` (lines end at `\n`; a `\r` before it is not counted).
    fn new(text: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Lines { text, starts }
    }

    /// The text of line `index` (0-based) without its line ending, if it exists.
    fn line(&self, index: usize) -> Option<&'a str> {
        let start = *self.starts.get(index)?;
        let end = self
            .starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        let line = self.text.get(start..end)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }

    /// The 1-based position of an LSP position (0-based line, UTF-16 column).
    /// A column past the end of its line is clamped to just after the line; a
    /// line past the end of the text keeps its number and the column as given.
    fn position(&self, pos: lsp_types::Position) -> Position {
        let line = pos.line.saturating_add(1);
        let Some(text) = usize::try_from(pos.line).ok().and_then(|l| self.line(l)) else {
            return Position {
                line,
                col: pos.character.saturating_add(1),
            };
        };
        Position {
            line,
            col: utf16_to_char_column(text, pos.character),
        }
    }
}

/// The 1-based character column of the UTF-16 offset `units` in `line`.
fn utf16_to_char_column(line: &str, units: u32) -> u32 {
    let mut seen: u32 = 0;
    let mut chars: u32 = 0;
    for c in line.chars() {
        if seen >= units {
            break;
        }
        seen = seen.saturating_add(u32::try_from(c.len_utf16()).unwrap_or(2));
        chars = chars.saturating_add(1);
    }
    chars.saturating_add(1)
}

/// The core severity of an LSP one (missing: an error).
pub(crate) fn severity(severity: Option<DiagnosticSeverity>) -> Severity {
    match severity {
        Some(DiagnosticSeverity::WARNING) => Severity::Warning,
        Some(DiagnosticSeverity::INFORMATION) => Severity::Info,
        Some(DiagnosticSeverity::HINT) => Severity::Hint,
        _ => Severity::Error,
    }
}

/// A diagnostic code as text.
fn code(code: Option<&NumberOrString>) -> Option<String> {
    match code? {
        NumberOrString::Number(n) => Some(n.to_string()),
        NumberOrString::String(s) => Some(s.clone()),
    }
}

/// Converts `items`, published for `text`, into core diagnostics with an empty
/// `path` (filled in when they are shown). `program` is the source of those that
/// name none.
pub(crate) fn convert(
    items: &[lsp_types::Diagnostic],
    text: &str,
    program: &str,
) -> Vec<Diagnostic> {
    let lines = Lines::new(text);
    items
        .iter()
        .map(|item| {
            let start = lines.position(item.range.start);
            Diagnostic {
                path: String::new(),
                line: start.line,
                col: start.col,
                end: lines.position(item.range.end),
                severity: severity(item.severity),
                code: code(item.code.as_ref()),
                source: item
                    .source
                    .clone()
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| program.to_string()),
                message: item.message.clone(),
                new: false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::Range;

    fn item(line: u32, start: u32, end: u32) -> lsp_types::Diagnostic {
        lsp_types::Diagnostic {
            range: Range::new(
                lsp_types::Position::new(line, start),
                lsp_types::Position::new(line, end),
            ),
            ..lsp_types::Diagnostic::default()
        }
    }

    #[test]
    fn utf16_columns_become_character_columns() {
        // "é" is one UTF-16 unit, "😀" two; BROKEN starts at char 4 (0-based).
        let text = "first\r\né😀 BROKEN\n";
        let out = convert(&[item(1, 4, 10)], text, "prog");
        assert_eq!((out[0].line, out[0].col), (2, 4));
        assert_eq!(out[0].end, Position { line: 2, col: 10 });
    }

    #[test]
    fn columns_past_the_line_are_clamped() {
        let out = convert(&[item(0, 50, 60)], "abc\n", "prog");
        assert_eq!(out[0].col, 4);
    }

    #[test]
    fn lines_past_the_text_keep_their_numbers() {
        let out = convert(&[item(9, 2, 3)], "abc", "prog");
        assert_eq!((out[0].line, out[0].col), (10, 3));
    }

    #[test]
    fn severity_code_and_source() {
        let mut d = item(0, 0, 1);
        d.code = Some(NumberOrString::Number(42));
        let out = convert(std::slice::from_ref(&d), "x", "prog");
        assert_eq!(out[0].severity, Severity::Error);
        assert_eq!(out[0].code.as_deref(), Some("42"));
        assert_eq!(out[0].source, "prog");
        d.severity = Some(DiagnosticSeverity::HINT);
        d.source = Some("basedpyright".into());
        d.code = Some(NumberOrString::String("reportReturnType".into()));
        let out = convert(&[d], "x", "prog");
        assert_eq!(out[0].severity, Severity::Hint);
        assert_eq!(out[0].code.as_deref(), Some("reportReturnType"));
        assert_eq!(out[0].source, "basedpyright");
    }
}
