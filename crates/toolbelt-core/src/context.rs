//! What every call gets: [`Session`] (shared: roots, cwd, state dir, limits) and
//! [`ToolContext`] (per call: id, cancellation, progress, events).
//! The session also holds the [`FileStamps`] of optimistic locking and, when the
//! saved outputs are kept beyond this process, their [`SavedOutputs`].

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::authorize::Authorizer;
use crate::output::{OutputBudget, OutputSink, SavedOutputs};
use crate::stamps::FileStamps;

/// Default per-call timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Hard ceiling on any per-call timeout, whatever a caller asks for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The environment shared by the calls of one session: workspace roots, the
/// working directory, the state directory and limits.
#[derive(Debug, Clone)]
pub struct Session {
    roots: Vec<PathBuf>,
    cwd: PathBuf,
    state_dir: PathBuf,
    budget: OutputBudget,
    timeout: Duration,
    stamps: Arc<FileStamps>,
    inline_file_work: bool,
    small_model: bool,
    temp_journal: Option<PathBuf>,
    saved_outputs: Option<Arc<dyn SavedOutputs>>,
}

impl Session {
    /// A session rooted at `root`, with its state in `<root>/.toolbelt`.
    pub fn new(root: impl Into<PathBuf>) -> Session {
        let root = root.into();
        Session {
            state_dir: root.join(".toolbelt"),
            cwd: root.clone(),
            roots: vec![root],
            budget: OutputBudget::default(),
            timeout: Duration::from_millis(DEFAULT_TIMEOUT_MS),
            stamps: Arc::new(FileStamps::new()),
            inline_file_work: false,
            small_model: false,
            temp_journal: None,
            saved_outputs: None,
        }
    }

    /// Replaces the workspace roots. The first root becomes the cwd unless one is set later.
    pub fn with_roots(mut self, roots: Vec<PathBuf>) -> Session {
        if let Some(first) = roots.first() {
            self.cwd = first.clone();
        }
        self.roots = roots;
        self
    }

    /// Sets the working directory.
    pub fn with_cwd(mut self, cwd: impl Into<PathBuf>) -> Session {
        self.cwd = cwd.into();
        self
    }

    /// Sets the state directory (spilled outputs live in `<state>/tool-output/`).
    pub fn with_state_dir(mut self, dir: impl Into<PathBuf>) -> Session {
        self.state_dir = dir.into();
        self
    }

    /// Sets the output budget.
    pub fn with_budget(mut self, budget: OutputBudget) -> Session {
        self.budget = budget;
        self
    }

    /// Sets the default per-call timeout (capped at [`MAX_TIMEOUT_MS`]).
    pub fn with_timeout(mut self, timeout: Duration) -> Session {
        self.timeout = timeout.min(Duration::from_millis(MAX_TIMEOUT_MS));
        self
    }

    /// Lets small file operations (a read, a shallow listing) run on the calling
    /// thread instead of a worker thread, where the roots are on local
    /// filesystems. This saves the hand-over between threads, the larger part of a
    /// small call's time, for a server answering one request at a time on a
    /// single-threaded runtime; while such an operation runs, nothing else on that
    /// thread does, so leave it off (the default) where calls must be cancellable
    /// mid-operation or run side by side.
    pub fn with_inline_file_work(mut self, inline: bool) -> Session {
        self.inline_file_work = inline;
        self
    }

    /// Whether small file operations may run on the calling thread
    /// ([`Session::with_inline_file_work`]).
    pub fn inline_file_work(&self) -> bool {
        self.inline_file_work
    }

    /// Marks the session's calls as a small model's (`toolbelt agent --model-size
    /// small`): where a slip of such a model would cost work that cannot be had
    /// back, the tools take the careful path (replacing a file with much less
    /// needs a read of it in this session first). Off by default: other callers
    /// (an MCP client, the command line) get the tools as they are.
    pub fn with_small_model(mut self, small: bool) -> Session {
        self.small_model = small;
        self
    }

    /// Whether the calls are a small model's ([`Session::with_small_model`]).
    pub fn small_model(&self) -> bool {
        self.small_model
    }

    /// Keeps a journal at `path` of the directories where the file tools create the
    /// temporary files of atomic writes (each directory once per process), so that
    /// the files a killed process left there can be found and removed at the next
    /// start. Off by default.
    pub fn with_temp_journal(mut self, path: impl Into<PathBuf>) -> Session {
        self.temp_journal = Some(path.into());
        self
    }

    /// The journal of directories holding temporary files, when one is kept
    /// ([`Session::with_temp_journal`]).
    pub fn temp_journal(&self) -> Option<&Path> {
        self.temp_journal.as_deref()
    }

    /// Keeps the saved outputs in `saved` too (a store the replicas of a server
    /// share): the registry writes each one there before the call's answer leaves,
    /// and `read_output` pages from there an output not in this process's spill
    /// directory. Without it, saved outputs are this process's files only.
    pub fn with_saved_outputs(mut self, saved: Arc<dyn SavedOutputs>) -> Session {
        self.saved_outputs = Some(saved);
        self
    }

    /// Where saved outputs are kept beyond the spill directory, if anywhere
    /// ([`Session::with_saved_outputs`]).
    pub fn saved_outputs(&self) -> Option<&Arc<dyn SavedOutputs>> {
        self.saved_outputs.as_ref()
    }

    /// Workspace roots.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Working directory.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// State directory.
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Where spilled outputs are written.
    pub fn spill_dir(&self) -> PathBuf {
        self.state_dir.join("tool-output")
    }

    /// The output budget.
    pub fn budget(&self) -> &OutputBudget {
        &self.budget
    }

    /// The default per-call timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// What the agent last saw of each file (optimistic locking). Clones of a
    /// session share it.
    pub fn file_stamps(&self) -> &Arc<FileStamps> {
        &self.stamps
    }
}

/// Receives progress of long calls (MCP progress notifications, progress bars).
pub trait ProgressSink: Send + Sync {
    /// `progress` so far, out of `total` when known, with an optional message.
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>);
}

/// Receives UI-facing events of a call (e.g. "💭 Thinking: ...").
pub trait EventSink: Send + Sync {
    /// One event from `tool`'s call `call_id`.
    fn emit(&self, tool: &str, call_id: &str, message: &str);
}

/// Everything one call gets. Cheap to clone.
#[derive(Clone)]
pub struct ToolContext {
    call_id: Arc<str>,
    tool: Arc<str>,
    session: Arc<Session>,
    cancel: CancellationToken,
    progress: Option<Arc<dyn ProgressSink>>,
    events: Option<Arc<dyn EventSink>>,
    authorizer: Option<Arc<dyn Authorizer>>,
    asker: Option<Arc<dyn crate::Asker>>,
    after_write: Option<Arc<dyn crate::AfterWrite>>,
    /// The call's own output budget, over the session's.
    budget: Option<OutputBudget>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("tool", &self.tool)
            .field("cwd", &self.session.cwd)
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for one call of `tool`.
    pub fn new(session: Arc<Session>, tool: &str, call_id: &str) -> ToolContext {
        ToolContext {
            call_id: call_id.into(),
            tool: tool.into(),
            session,
            cancel: CancellationToken::new(),
            progress: None,
            events: None,
            authorizer: None,
            asker: None,
            after_write: None,
            budget: None,
        }
    }

    /// Holds this call's output to `budget` instead of the session's (none: the
    /// session's).
    pub fn with_budget(mut self, budget: Option<OutputBudget>) -> ToolContext {
        self.budget = budget;
        self
    }

    /// The output budget of this call: its own, else the session's. Tools that
    /// page their output fit a page to it.
    pub fn budget(&self) -> &OutputBudget {
        self.budget.as_ref().unwrap_or(&self.session.budget)
    }

    /// Uses `token` for cancellation.
    pub fn with_cancel(mut self, token: CancellationToken) -> ToolContext {
        self.cancel = token;
        self
    }

    /// Sends progress to `sink`.
    pub fn with_progress(mut self, sink: Option<Arc<dyn ProgressSink>>) -> ToolContext {
        self.progress = sink;
        self
    }

    /// Sends events to `sink`.
    pub fn with_events(mut self, sink: Option<Arc<dyn EventSink>>) -> ToolContext {
        self.events = sink;
        self
    }

    /// Gives the call the registry's authorizer, so that a tool can check what it
    /// reaches beyond its arguments (the target of a symlink, the files a search
    /// opens).
    pub fn with_authorizer(mut self, authorizer: Option<Arc<dyn Authorizer>>) -> ToolContext {
        self.authorizer = authorizer;
        self
    }

    /// Lets the call put questions to the person through `asker`.
    pub fn with_asker(mut self, asker: Option<Arc<dyn crate::Asker>>) -> ToolContext {
        self.asker = asker;
        self
    }

    /// Gives the call the post-edit pipeline (formatter, syntax check, diagnostics)
    /// that the write tools run around their writes.
    pub fn with_after_write(mut self, after: Option<Arc<dyn crate::AfterWrite>>) -> ToolContext {
        self.after_write = after;
        self
    }

    /// The post-edit pipeline, when one is set up.
    pub fn after_write(&self) -> Option<&Arc<dyn crate::AfterWrite>> {
        self.after_write.as_ref()
    }

    /// Who answers this call's questions, if anyone can.
    pub fn asker(&self) -> Option<&Arc<dyn crate::Asker>> {
        self.asker.as_ref()
    }

    /// The registry's authorizer, when the call came through a registry.
    pub fn authorizer(&self) -> Option<&Arc<dyn Authorizer>> {
        self.authorizer.as_ref()
    }

    /// This call's id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The canonical name of the tool being called.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The shared session.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The cancellation token; long tools check it or select on `cancelled()`.
    pub fn cancel_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// True once the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// True when somebody listens to [`ToolContext::progress`] (the client sent a
    /// progress token, say): long work can skip counting otherwise.
    pub fn wants_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Reports progress, if anyone listens.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(p) = &self.progress {
            p.report(progress, total, message);
        }
    }

    /// Emits a UI event, if anyone listens.
    pub fn emit(&self, message: &str) {
        if let Some(e) = &self.events {
            e.emit(&self.tool, &self.call_id, message);
        }
    }

    /// A sink that keeps output within the session's budget and spills the full
    /// output to `<state>/tool-output/<output_id>.txt` when it grows past it.
    pub fn output_sink(&self) -> OutputSink {
        OutputSink::new(self.budget().clone(), self.session.spill_dir())
    }
}
