//! The block the model reads, and the structured list beside it: the new problems
//! of each file with a few lines of context, counts of fixed and already-there
//! ones, what is pending and one-line notes; quiet when there is nothing to say.

use toolbelt_core::human::plural;
use toolbelt_core::{Diagnostic, DiagnosticsReport, DiagnosticsSummary, Severity};

use crate::compare::Compared;

/// Most problems kept in `data.diagnostics` for one call.
pub const MAX_LISTED: usize = 200;
/// Lines of context shown on each side of a problem's line.
const CONTEXT_LINES: u32 = 1;
/// Characters of one context line shown.
const MAX_CONTEXT_CHARS: usize = 160;

/// The problems of one file.
#[derive(Debug, Clone)]
pub struct FileResult {
    /// The path as shown.
    pub shown: String,
    /// Its problems, compared with before (or all counted new/there, see [`Mode`]).
    pub compared: Compared,
    /// Its content, for context lines.
    pub text: Option<String>,
}

/// What the report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A change (a write, a shell command): new problems, fixed and already-there
    /// counts; quiet when nothing changed.
    Change,
    /// A check on demand: every problem found.
    Check,
}

/// Builds the report of `files`.
pub fn render(
    floor: Severity,
    files: Vec<FileResult>,
    pending: Vec<String>,
    notes: Vec<String>,
    max_per_file: usize,
    mode: Mode,
) -> DiagnosticsReport {
    let new: usize = files.iter().map(|f| f.compared.new).sum();
    let fixed: usize = files.iter().map(|f| f.compared.fixed).sum();
    let already: usize = files.iter().map(|f| f.compared.already_there).sum();
    let mut text = String::new();
    let mut listed: Vec<Diagnostic> = Vec::new();
    let shown_kind = |d: &Diagnostic| mode == Mode::Check || d.new;
    let all: Vec<&Diagnostic> = files
        .iter()
        .flat_map(|f| f.compared.after.iter())
        .filter(|d| shown_kind(d))
        .collect();
    match mode {
        Mode::Change if new > 0 || fixed > 0 => {
            text.push_str(&format!(
                "Problems after this change: {} ({} fixed, {} already there).\n",
                count_words(new, &all, "new ", floor),
                fixed,
                already
            ));
        }
        Mode::Change => {}
        Mode::Check => {
            let total = all.len();
            if total > 0 {
                let files_with = files
                    .iter()
                    .filter(|f| f.compared.after.iter().any(shown_kind))
                    .count();
                text.push_str(&format!(
                    "{} in {} {}:\n",
                    count_words(total, &all, "", floor),
                    files_with,
                    plural(files_with as u64, "file")
                ));
            }
        }
    }
    for file in &files {
        let mine: Vec<&Diagnostic> = file
            .compared
            .after
            .iter()
            .filter(|d| shown_kind(d))
            .collect();
        for d in mine.iter().take(max_per_file) {
            text.push_str(&d.one_line());
            text.push('\n');
            if let Some(content) = &file.text {
                text.push_str(&context(content, d.line));
            }
        }
        if mine.len() > max_per_file {
            text.push_str(&format!(
                "... {} more in {} (all in data.diagnostics; `diagnostics` lists them)\n",
                mine.len() - max_per_file,
                file.shown
            ));
        }
        for d in mine {
            if listed.len() < MAX_LISTED {
                listed.push(d.clone());
            }
        }
    }
    if !pending.is_empty() {
        text.push_str(&format!(
            "Diagnostics pending: {}; the `diagnostics` tool shows them later.\n",
            pending.join("; ")
        ));
    }
    for note in &notes {
        text.push_str(&format!("Note: {note}\n"));
    }
    let quiet = text.is_empty();
    let summary = (!quiet || already > 0).then_some(DiagnosticsSummary {
        new,
        fixed,
        already_there: already,
        pending,
        notes,
        output_id: None,
    });
    DiagnosticsReport {
        diagnostics: listed,
        diagnostics_summary: summary,
        text: text.trim_end().to_owned() + if quiet { "" } else { "\n" },
    }
}

/// "1 new error", "3 new problems" (mixed severities).
fn count_words(n: usize, shown: &[&Diagnostic], prefix: &str, floor: Severity) -> String {
    let first = shown.first().map_or(Some(floor), |d| Some(d.severity));
    let same = first.filter(|s| shown.iter().all(|d| d.severity == *s));
    let noun = match same {
        Some(Severity::Error) => "error",
        Some(Severity::Warning) => "warning",
        _ => "problem",
    };
    format!("{n} {prefix}{}", plural(n as u64, noun))
}

/// The lines around `line`, numbered, the line itself marked.
fn context(content: &str, line: u32) -> String {
    let first = line.saturating_sub(CONTEXT_LINES).max(1);
    let last = line.saturating_add(CONTEXT_LINES);
    let width = last.to_string().len();
    let mut out = String::new();
    for (i, text) in content.lines().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if n < first {
            continue;
        }
        if n > last {
            break;
        }
        let mark = if n == line { '>' } else { ' ' };
        let text: String = text.chars().take(MAX_CONTEXT_CHARS).collect();
        out.push_str(&format!("  {mark} {n:>width$} | {text}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use toolbelt_core::diagnostics::Position;

    use super::*;

    fn d(line: u32, new: bool) -> Diagnostic {
        Diagnostic {
            path: "x.py".into(),
            line,
            col: 7,
            end: Position { line, col: 8 },
            severity: Severity::Error,
            code: Some("invalid-syntax".into()),
            source: "ruff".into(),
            message: "Expected a parameter name".into(),
            new,
        }
    }

    #[test]
    fn a_change_lists_its_new_problems_with_context_and_counts_the_rest() {
        let compared = Compared {
            after: vec![d(2, true), d(40, false)],
            new: 1,
            fixed: 0,
            already_there: 1,
        };
        let report = render(
            Severity::Error,
            vec![FileResult {
                shown: "x.py".into(),
                compared,
                text: Some("import os\ndef f(:\n    pass\n".into()),
            }],
            Vec::new(),
            Vec::new(),
            20,
            Mode::Change,
        );
        assert!(
            report
                .text
                .starts_with("Problems after this change: 1 new error (0 fixed, 1 already there).\nx.py:2:7 error invalid-syntax Expected a parameter name\n"),
            "{}",
            report.text
        );
        assert!(report.text.contains("> 2 | def f(:"), "{}", report.text);
        assert!(!report.text.contains(":40:"));
        assert_eq!(report.diagnostics.len(), 1);
        assert_eq!(report.diagnostics_summary.unwrap().already_there, 1);
    }

    #[test]
    fn a_change_that_changed_no_problem_is_quiet() {
        let compared = Compared {
            after: vec![d(40, false)],
            new: 0,
            fixed: 0,
            already_there: 1,
        };
        let report = render(
            Severity::Error,
            vec![FileResult {
                shown: "x.py".into(),
                compared,
                text: None,
            }],
            Vec::new(),
            Vec::new(),
            20,
            Mode::Change,
        );
        assert!(report.is_quiet());
        assert!(report.diagnostics.is_empty());
    }
}
