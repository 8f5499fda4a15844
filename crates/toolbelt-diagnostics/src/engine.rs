//! The pipeline as the write tools see it ([`AfterWrite`]): the formatter and the
//! reject-mode syntax check on the staged text; after the write, the syntax check,
//! the linter and the language server at once under one wall-clock budget, each
//! compared with before; the same for the files a shell command changed and on
//! demand.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use toolbelt_core::diagnostics::{CheckRequest, Rejection, StageRequest, Staged, Written};
use toolbelt_core::sync::lock;
use toolbelt_core::{AfterWrite, Diagnostic, DiagnosticsReport, Severity};

use crate::compare::{Compared, compare};
use crate::config::{
    Config, ConfigError, DEFAULT_FORMAT_TIMEOUT_MS, DEFAULT_LINT_TIMEOUT_MS,
    DEFAULT_STARTUP_TIMEOUT_MS, Reject, Settings, check_command, extensions_of, has_extension,
};
use crate::format::{self, Formatter};
use crate::lint::{self, Linter};
use crate::lsp::{self, Answer, ServerSpec, Servers};
use crate::report::{FileResult, Mode, render};
use crate::syntax::{self, Lang};

/// A boxed future that may move between threads.
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Files remembered with their last known problems (the "before" of the next change).
const MAX_KNOWN_FILES: usize = 128;
/// Largest content remembered for a file.
const MAX_KNOWN_BYTES: usize = 512 * 1024;
/// Largest file read for a check.
const MAX_CHECKED_BYTES: u64 = 4 * 1024 * 1024;
/// Most files one on-demand check looks at.
const MAX_CHECKED_FILES: usize = 200;
/// Budget of an on-demand check of many files.
const CHECK_BUDGET: Duration = Duration::from_secs(30);

/// The post-edit pipeline, built from the configuration.
pub struct Engine {
    settings: Settings,
    formatters: Vec<(Vec<String>, Formatter)>,
    linters: Vec<(Vec<String>, Linter)>,
    servers: Option<Servers>,
    /// The formatters' and linters' tables (`lint.python`) and commands.
    commands: Vec<(String, Vec<String>)>,
    /// The problems last seen in each file, with the content they are of.
    known: Mutex<HashMap<PathBuf, Known>>,
    /// Notes already given once (a linter missing).
    said: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A file's content and its problems then (every source, unfiltered), and the
/// linter's and the syntax check's own when they ran.
#[derive(Debug, Clone)]
struct Known {
    text: String,
    problems: Vec<Diagnostic>,
    lint: Option<Vec<Diagnostic>>,
    syntax: Option<Vec<Diagnostic>>,
}

/// What the linter and the syntax check found in a content, when they ran.
#[derive(Debug, Default)]
struct Checked {
    lint: Option<Vec<Diagnostic>>,
    syntax: Option<Vec<Diagnostic>>,
}

/// One line of `toolbelt doctor` about a configured program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramStatus {
    /// `lint.python`, `format.python`, `lsp.python`.
    pub table: String,
    /// The program.
    pub program: String,
    /// Whether it can be started.
    pub found: bool,
    /// How to install it, when known.
    pub install: Option<String>,
}

impl Engine {
    /// The pipeline of `config`, for a workspace with `roots`.
    ///
    /// # Errors
    /// A table that cannot be used (an empty command, an unknown parser or scope, a
    /// language without extensions).
    pub fn new(config: Config, roots: Vec<PathBuf>) -> Result<Engine, ConfigError> {
        let mut formatters = Vec::new();
        let mut commands = Vec::new();
        for (lang, spec) in &config.format {
            commands.push((format!("format.{lang}"), spec.command.clone()));
            check_command("format", lang, &spec.command)?;
            let scope = match spec.scope.as_deref() {
                None => format::Scope::ChangedLines,
                Some(s) => s.parse().map_err(|source| ConfigError::Scope {
                    table: format!("format.{lang}"),
                    source,
                })?,
            };
            formatters.push((
                extensions_of("format", lang, spec.extensions.as_deref())?,
                Formatter {
                    name: crate::lint::command::program_name(&spec.command),
                    argv: spec.command.clone(),
                    scope,
                    timeout: Duration::from_millis(
                        spec.timeout_ms.unwrap_or(DEFAULT_FORMAT_TIMEOUT_MS),
                    ),
                },
            ));
        }
        let mut linters = Vec::new();
        for (lang, spec) in &config.lint {
            commands.push((format!("lint.{lang}"), spec.command.clone()));
            check_command("lint", lang, &spec.command)?;
            let parser =
                spec.parser
                    .parse()
                    .map_err(|source: lint::LintError| ConfigError::Parser {
                        table: format!("lint.{lang}"),
                        source: Box::new(source),
                    })?;
            linters.push((
                extensions_of("lint", lang, spec.extensions.as_deref())?,
                Linter {
                    name: crate::lint::command::program_name(&spec.command),
                    argv: spec.command.clone(),
                    parser,
                    timeout: Duration::from_millis(
                        spec.timeout_ms.unwrap_or(DEFAULT_LINT_TIMEOUT_MS),
                    ),
                },
            ));
        }
        let mut specs = Vec::new();
        for (lang, spec) in &config.lsp {
            check_command("lsp", lang, &spec.command)?;
            specs.push(ServerSpec {
                language: lang.clone(),
                command: spec.command.clone(),
                extensions: extensions_of("lsp", lang, spec.extensions.as_deref())?,
                root_markers: spec.root_markers.clone(),
                startup_timeout: Duration::from_millis(
                    spec.startup_timeout_ms
                        .unwrap_or(DEFAULT_STARTUP_TIMEOUT_MS),
                ),
                initialization_options: spec.initialization_options.clone(),
                install_hint: spec.install.clone(),
            });
        }
        let servers = (!specs.is_empty()).then(|| Servers::new(specs, roots));
        Ok(Engine {
            settings: config.settings,
            formatters,
            linters,
            servers,
            commands,
            known: Mutex::default(),
            said: Mutex::default(),
        })
    }

    /// The settings in use.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Every configured program, and whether it can be started (for `doctor`).
    pub fn programs(&self) -> Vec<ProgramStatus> {
        let mut out: Vec<ProgramStatus> = self
            .commands
            .iter()
            .map(|(table, argv)| status(table, argv))
            .collect();
        if let Some(servers) = &self.servers {
            for s in servers.report() {
                out.push(ProgramStatus {
                    table: format!("lsp.{}", s.language),
                    program: s.program,
                    found: s.found,
                    install: s.install_hint,
                });
            }
        }
        out
    }

    /// Stops every language server.
    pub async fn shutdown(&self) {
        if let Some(servers) = &self.servers {
            servers.shutdown().await;
        }
    }

    fn formatter_for(&self, file: &Path) -> Option<&Formatter> {
        self.formatters
            .iter()
            .find(|(exts, _)| has_extension(file, exts))
            .map(|(_, f)| f)
    }

    fn linter_for(&self, file: &Path) -> Option<&Linter> {
        self.linters
            .iter()
            .find(|(exts, _)| has_extension(file, exts))
            .map(|(_, l)| l)
    }

    /// Whether anything checks `file`.
    fn checks(&self, file: &Path) -> bool {
        (self.settings.syntax_check && Lang::for_path(file).is_some())
            || self.linter_for(file).is_some()
            || self.servers.as_ref().is_some_and(|s| s.handles(file))
    }

    /// The in-process syntax problems of `text`.
    fn syntax(&self, file: &Path, shown: &str, text: &str) -> Vec<Diagnostic> {
        match Lang::for_path(file) {
            Some(lang) if self.settings.syntax_check => syntax::check(lang, shown, text),
            _ => Vec::new(),
        }
    }

    /// A note given once per engine.
    fn note_once(&self, note: String) -> Option<String> {
        lock(&self.said).insert(note.clone()).then_some(note)
    }

    /// The linter's problems of `text` (a file's content before a change) through
    /// a staged copy next to it; `None` when it cannot say in time.
    async fn lint_text(
        &self,
        linter: &Linter,
        file: &Path,
        shown: &str,
        text: &str,
        cwd: &Path,
    ) -> Option<Vec<Diagnostic>> {
        let copy = staged_copy(file);
        std::fs::write(&copy, text).ok()?;
        let found = lint::run(linter, &copy, shown, cwd).await;
        let _ = std::fs::remove_file(&copy);
        found.ok()
    }

    fn remember(&self, file: &Path, text: &str, problems: &[Diagnostic], checked: Checked) {
        if text.len() > MAX_KNOWN_BYTES {
            lock(&self.known).remove(file);
            return;
        }
        let mut known = lock(&self.known);
        if known.len() >= MAX_KNOWN_FILES && !known.contains_key(file) {
            known.clear();
        }
        known.insert(
            file.to_path_buf(),
            Known {
                text: text.to_owned(),
                problems: problems.to_vec(),
                lint: checked.lint,
                syntax: checked.syntax,
            },
        );
    }

    fn known(&self, file: &Path) -> Option<Known> {
        lock(&self.known).get(file).cloned()
    }

    /// Keeps the problems at or above the configured severity.
    fn severe(&self, problems: Vec<Diagnostic>) -> Vec<Diagnostic> {
        let floor = self.settings.severity.0;
        problems
            .into_iter()
            .filter(|d| severity_rank(d.severity) <= severity_rank(floor))
            .collect()
    }

    /// After a write: syntax, linter and server at once, under the budget.
    async fn after_write(&self, w: Written<'_>) -> DiagnosticsReport {
        let deadline = Instant::now() + self.settings.budget();
        let cwd = w.file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let mut pending = Vec::new();
        let mut notes = Vec::new();
        let known = self
            .known(w.file)
            .filter(|k| Some(k.text.as_str()) == w.old);

        let lint = async {
            let linter = self.linter_for(w.file)?;
            let before = async {
                match (known.as_ref().and_then(|k| k.lint.clone()), w.old) {
                    (Some(lint), _) => Some(lint),
                    (None, Some(old)) => self.lint_text(linter, w.file, w.shown, old, &cwd).await,
                    (None, None) => Some(Vec::new()),
                }
            };
            let after = lint::run(linter, w.file, w.shown, &cwd);
            let (before, after) = tokio::join!(
                tokio::time::timeout_at(deadline.into(), before),
                tokio::time::timeout_at(deadline.into(), after)
            );
            Some((linter.name.clone(), before, after))
        };
        let server = async {
            let servers = self.servers.as_ref().filter(|s| s.handles(w.file))?;
            Some(
                servers
                    .change(w.file, w.shown, w.old, w.new, deadline)
                    .await,
            )
        };
        let (lint, server) = tokio::join!(lint, server);

        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut checked_by_tool = false;
        let mut linted = None;
        match lint {
            Some((_, Ok(Some(b)), Ok(Ok(a)))) => {
                let a = dedupe_syntax(a);
                before.extend(b);
                after.extend(a.clone());
                linted = Some(a);
                checked_by_tool = true;
            }
            Some((name, _, Ok(Err(e)))) => {
                notes.extend(self.note_once(format!("{name}: {e}")));
            }
            Some((name, _, _)) => {
                pending.push(format!(
                    "{name} did not finish within {:.1} s",
                    self.settings.budget().as_secs_f64()
                ));
            }
            None => {}
        }
        let mut others = Vec::new();
        if let Some(change) = server {
            others = self.other_files(w, change.others);
            match change.after {
                Answer::Fresh(a) => {
                    before.extend(change.before.unwrap_or_default());
                    after.extend(a);
                    checked_by_tool = true;
                }
                Answer::Pending(what) => pending.push(what),
                Answer::Unavailable => {}
            }
        }
        if let Some(servers) = &self.servers {
            notes.extend(servers.take_notes());
        }
        // A linter or server that answered sees syntax errors too, in its words.
        // The old text's are remembered from the last change (one parse, not two).
        let mut parsed = None;
        if !checked_by_tool {
            match (known.as_ref().and_then(|k| k.syntax.clone()), w.old) {
                (Some(known), _) => before.extend(known),
                (None, Some(old)) => before.extend(self.syntax(w.file, w.shown, old)),
                (None, None) => {}
            }
            let now = self.syntax(w.file, w.shown, w.new);
            after.extend(now.clone());
            parsed = Some(now);
        }
        self.remember(
            w.file,
            w.new,
            &after,
            Checked {
                lint: linted,
                syntax: parsed,
            },
        );
        let compared = compare(&self.severe(before), self.severe(after), w.old, w.new);
        let mut files = vec![FileResult {
            shown: w.shown.to_owned(),
            compared,
            text: Some(w.new.to_owned()),
        }];
        files.extend(others);
        render(
            self.settings.severity.0,
            files,
            pending,
            notes,
            self.settings.max_per_file,
            Mode::Change,
        )
    }

    /// The other files a change broke (as their server saw them), at most
    /// `other_files`, their paths shown as the written file's is.
    fn other_files(&self, w: Written<'_>, others: Vec<lsp::OtherFile>) -> Vec<FileResult> {
        // The directory the written file's path is shown from.
        let shown = Path::new(w.shown);
        let cwd = if shown.is_relative() {
            let mut cwd = w.file.to_path_buf();
            for _ in shown.components() {
                cwd.pop();
            }
            Some(cwd)
        } else {
            None
        };
        let mut out = Vec::new();
        for other in others {
            if out.len() >= self.settings.other_files {
                break;
            }
            let Some(text) = read_text(&other.file) else {
                continue;
            };
            let shown = cwd.as_deref().map_or_else(
                || other.file.display().to_string(),
                |c| shown_path(c, &other.file),
            );
            let relabel = |list: Vec<Diagnostic>| -> Vec<Diagnostic> {
                list.into_iter()
                    .map(|mut d| {
                        d.path.clone_from(&shown);
                        d
                    })
                    .collect()
            };
            let before = self.severe(relabel(other.before));
            let after = self.severe(relabel(other.after));
            let compared = compare(&before, after, Some(&text), &text);
            // Only files this change newly broke.
            if compared.new == 0 {
                continue;
            }
            let compared = Compared {
                fixed: 0,
                already_there: 0,
                ..compared
            };
            out.push(FileResult {
                shown,
                compared,
                text: Some(text),
            });
        }
        out
    }

    /// The problems of files as they are now; each compared with its last known
    /// content when there is one (`compared`), else listed as found.
    async fn look(
        &self,
        cwd: &Path,
        files: Vec<PathBuf>,
        deadline: Instant,
    ) -> (Vec<FileResult>, Vec<FileResult>, Vec<String>, Vec<String>) {
        let mut compared = Vec::new();
        let mut found = Vec::new();
        let mut pending = Vec::new();
        let mut notes = Vec::new();
        for file in files {
            let Some(text) = read_text(&file) else {
                continue;
            };
            let shown = shown_path(cwd, &file);
            let mut problems = Vec::new();
            let mut linted = None;
            let mut by_tool = false;
            let dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
            if let Some(linter) = self.linter_for(&file) {
                match tokio::time::timeout_at(
                    deadline.into(),
                    lint::run(linter, &file, &shown, &dir),
                )
                .await
                {
                    Ok(Ok(found)) => {
                        let found = dedupe_syntax(found);
                        problems.extend(found.clone());
                        linted = Some(found);
                        by_tool = true;
                    }
                    Ok(Err(e)) => notes.extend(self.note_once(format!("{}: {e}", linter.name))),
                    Err(_) => pending.push(format!("{} on {shown}", linter.name)),
                }
            }
            if let Some(servers) = self.servers.as_ref().filter(|s| s.handles(&file)) {
                match servers.check(&file, &shown, &text, deadline).await {
                    Answer::Fresh(found) => {
                        problems.extend(found);
                        by_tool = true;
                    }
                    Answer::Pending(what) => pending.push(what),
                    Answer::Unavailable => {}
                }
                notes.extend(servers.take_notes());
            }
            if !by_tool {
                problems.extend(self.syntax(&file, &shown, &text));
            }
            let before = self.known(&file);
            self.remember(
                &file,
                &text,
                &problems,
                Checked {
                    lint: linted,
                    syntax: None,
                },
            );
            let after = self.severe(problems);
            match before {
                Some(k) => compared.push(FileResult {
                    shown,
                    compared: compare(&self.severe(k.problems), after, Some(&k.text), &text),
                    text: Some(text),
                }),
                None => found.push(FileResult {
                    shown,
                    compared: Compared {
                        already_there: after.len(),
                        after,
                        new: 0,
                        fixed: 0,
                    },
                    text: Some(text),
                }),
            }
        }
        (compared, found, pending, notes)
    }

    /// The files under `paths` that something checks (directories walked with the
    /// ignore files respected), at most [`MAX_CHECKED_FILES`].
    fn expand(&self, paths: &[PathBuf]) -> (Vec<PathBuf>, usize) {
        let mut files = Vec::new();
        let mut total = 0;
        for path in paths {
            if path.is_file() {
                total += 1;
                files.push(path.clone());
                continue;
            }
            for entry in ignore::WalkBuilder::new(path).build().flatten() {
                let p = entry.path();
                if entry.file_type().is_some_and(|t| t.is_file()) && self.checks(p) {
                    total += 1;
                    if files.len() < MAX_CHECKED_FILES {
                        files.push(p.to_path_buf());
                    }
                }
            }
        }
        (files, total)
    }
}

impl AfterWrite for Engine {
    fn stage<'a>(&'a self, request: StageRequest<'a>) -> BoxFuture<'a, Staged> {
        Box::pin(async move {
            let mut text = request.new.to_owned();
            let mut notes = Vec::new();
            if let Some(formatter) = self.formatter_for(request.file) {
                let formatted = format::run(formatter, request.file, request.old, &text).await;
                text = formatted.text;
                notes.extend(formatted.note);
            }
            let rejected = (self.settings.reject == Reject::Syntax)
                .then(|| self.reject_syntax(request, &text))
                .flatten();
            Staged {
                text,
                rejected,
                notes,
            }
        })
    }

    fn collect<'a>(&'a self, written: Written<'a>) -> BoxFuture<'a, Option<DiagnosticsReport>> {
        Box::pin(async move {
            if !self.settings.after_edit || !self.checks(written.file) {
                return None;
            }
            Some(self.after_write(written).await)
        })
    }

    fn after_bash(&self) -> bool {
        self.settings.after_bash
    }

    fn changed(&self, request: CheckRequest) -> BoxFuture<'_, Option<DiagnosticsReport>> {
        Box::pin(async move {
            let files: Vec<PathBuf> = request
                .files
                .into_iter()
                .filter(|f| self.checks(f))
                .collect();
            if files.is_empty() {
                return None;
            }
            let deadline = Instant::now() + self.settings.budget();
            let (compared, found, pending, notes) = self.look(&request.cwd, files, deadline).await;
            let max = self.settings.max_per_file;
            let mut report = render(
                self.settings.severity.0,
                compared,
                pending,
                notes,
                max,
                Mode::Change,
            );
            if found.iter().any(|f| !f.compared.after.is_empty()) {
                let mut listed = render(
                    self.settings.severity.0,
                    found,
                    Vec::new(),
                    Vec::new(),
                    max,
                    Mode::Check,
                );
                listed.text = format!(
                    "In the files this call changed (not checked before it): {}",
                    listed.text
                );
                report.merge(listed);
            }
            Some(report)
        })
    }

    fn check(&self, request: CheckRequest) -> BoxFuture<'_, DiagnosticsReport> {
        Box::pin(async move {
            let (files, total) = self.expand(&request.files);
            let deadline = Instant::now() + CHECK_BUDGET.max(self.settings.budget());
            let (compared, found, pending, mut notes) =
                self.look(&request.cwd, files, deadline).await;
            if total > MAX_CHECKED_FILES {
                notes.push(format!(
                    "checked the first {MAX_CHECKED_FILES} of {total} files; give a smaller directory or a file"
                ));
            }
            let all = compared
                .into_iter()
                .map(|mut f| {
                    // On demand every problem counts as found.
                    f.compared.already_there += f.compared.new;
                    f.compared.new = 0;
                    f.compared.fixed = 0;
                    for d in &mut f.compared.after {
                        d.new = false;
                    }
                    f
                })
                .chain(found)
                .collect();
            render(
                self.settings.severity.0,
                all,
                pending,
                notes,
                self.settings.max_per_file,
                Mode::Check,
            )
        })
    }
}

impl Engine {
    /// With `reject = "syntax"`: the refusal of a staged text that adds syntax errors.
    fn reject_syntax(&self, request: StageRequest<'_>, text: &str) -> Option<Rejection> {
        let lang = Lang::for_path(request.file)?;
        let before = request
            .old
            .map(|old| syntax::check(lang, request.shown, old))
            .unwrap_or_default();
        let after = syntax::check(lang, request.shown, text);
        let compared = compare(&before, after, request.old, text);
        if compared.new == 0 {
            return None;
        }
        let new: Vec<Diagnostic> = compared.after.into_iter().filter(|d| d.new).collect();
        let mut message = format!(
            "The change was not written: it adds {} {} to {}, which is unchanged.\n",
            new.len(),
            toolbelt_core::human::plural(new.len() as u64, "syntax error"),
            request.shown
        );
        for d in new.iter().take(self.settings.max_per_file) {
            message.push_str(&d.one_line());
            message.push('\n');
        }
        let first = new.first().map_or(1, |d| d.line);
        message.push_str("The lines as the change would make them:\n");
        message.push_str(&numbered(text, first));
        if let Some(old) = request.old {
            message.push_str("The lines as they are:\n");
            message.push_str(&numbered(old, first));
        }
        Some(Rejection {
            message: message.trim_end().to_owned(),
            diagnostics: new,
        })
    }
}

/// Lines `line - 3 ..= line + 3` of `text`, numbered.
fn numbered(text: &str, line: u32) -> String {
    let first = line.saturating_sub(3).max(1);
    let last = line.saturating_add(3);
    let mut out = String::new();
    for (i, l) in text.lines().enumerate() {
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        if (first..=last).contains(&n) {
            let mark = if n == line { '>' } else { ' ' };
            out.push_str(&format!("  {mark} {n:>4} | {l}\n"));
        }
    }
    if out.is_empty() {
        out.push_str("  (empty)\n");
    }
    out
}

fn severity_rank(s: Severity) -> u8 {
    match s {
        Severity::Error => 0,
        Severity::Warning => 1,
        Severity::Info => 2,
        Severity::Hint => 3,
    }
}

/// One syntax error per line from a linter (ruff reports a broken line's
/// consequences as several `invalid-syntax` errors).
fn dedupe_syntax(found: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = HashSet::new();
    found
        .into_iter()
        .filter(|d| d.code.as_deref() != Some("invalid-syntax") || seen.insert(d.line))
        .collect()
}

fn status(table: &str, argv: &[String]) -> ProgramStatus {
    let program = argv.first().cloned().unwrap_or_default();
    ProgramStatus {
        table: table.to_owned(),
        found: toolbelt_exec::on_path(&program),
        program,
        install: None,
    }
}

/// A hidden sibling of `file` with its extension, for linting another content.
fn staged_copy(file: &Path) -> PathBuf {
    let name = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = file
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let unique = std::process::id() as u128 * 1_000_000_007
        + std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
    file.with_file_name(format!(".{name}.before-{unique:x}{ext}"))
}

fn read_text(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_CHECKED_BYTES {
        return None;
    }
    String::from_utf8(std::fs::read(file).ok()?).ok()
}

fn shown_path(cwd: &Path, file: &Path) -> String {
    file.strip_prefix(cwd)
        .map_or_else(|_| file.display().to_string(), |p| p.display().to_string())
}
