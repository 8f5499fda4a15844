//! The servers of a [`Servers`](super::Servers): one slot per (language, root),
//! each with its running server, its count of unexpected stops and its backoff;
//! the programs found missing; the notes waiting to be shown.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::process::{find_program, root_of};
use super::server::{Server, StartArgs};
use super::server::{StopReason, StopReport};
use super::{ServerSpec, lock};

/// Documents a server holds open at most.
pub const MAX_OPEN_DOCUMENTS: usize = 50;

/// A server unused this long is stopped.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// The first wait before restarting a server that stopped; doubled each time.
pub const DEFAULT_BACKOFF: Duration = Duration::from_millis(500);

/// Restarts after unexpected stops before a server is turned off.
pub const MAX_RESTARTS: u32 = 5;

/// How long a program found missing is not looked for again.
pub const MISSING_RETRY: Duration = Duration::from_secs(60);

/// A server initialized this long before it stopped starts its count afresh.
const HEALTHY_UPTIME: Duration = Duration::from_secs(5 * 60);

/// The limits and waits of a [`Servers`](super::Servers).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) backoff: Duration,
    pub(crate) max_restarts: u32,
    pub(crate) idle: Duration,
    pub(crate) max_open: usize,
    pub(crate) missing_retry: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            backoff: DEFAULT_BACKOFF,
            max_restarts: MAX_RESTARTS,
            idle: IDLE_TIMEOUT,
            max_open: MAX_OPEN_DOCUMENTS,
            missing_retry: MISSING_RETRY,
        }
    }
}

/// A (spec index, root) pair.
type SlotKey = (usize, PathBuf);

/// One (language, root).
#[derive(Debug, Default)]
struct Slot {
    server: Option<Arc<Server>>,
    /// Unexpected stops so far.
    stops: u32,
    /// No restart before then.
    retry_at: Option<Instant>,
    /// Turned off after too many stops.
    off: bool,
}

/// Everything behind the lock.
#[derive(Debug, Default)]
struct Registry {
    config: Config,
    slots: HashMap<SlotKey, Slot>,
    /// Specs whose program was missing, and when that was found.
    missing: HashMap<usize, Instant>,
    /// Specs whose missing program was told already.
    told_missing: HashSet<usize>,
    notes: Vec<String>,
    /// After `shutdown`: nothing starts any more.
    closed: bool,
}

/// What a call gets for a file.
#[derive(Debug)]
pub(crate) enum Acquired {
    /// A server (maybe still starting).
    Server(Arc<Server>),
    /// No server now; say this.
    Waiting(String),
    /// No server for this file.
    Unavailable,
}

/// The shared core of [`Servers`](super::Servers).
#[derive(Debug)]
pub(crate) struct Inner {
    specs: Vec<Arc<ServerSpec>>,
    roots: Vec<PathBuf>,
    state: Mutex<Registry>,
}

impl Inner {
    /// The servers of `specs` for files within `roots`.
    pub(crate) fn new(specs: Vec<ServerSpec>, roots: Vec<PathBuf>) -> Inner {
        let roots = roots
            .into_iter()
            .map(|r| std::path::absolute(&r).unwrap_or(r))
            .collect();
        Inner {
            specs: specs.into_iter().map(Arc::new).collect(),
            roots,
            state: Mutex::new(Registry::default()),
        }
    }

    /// The specs.
    pub(crate) fn specs(&self) -> &[Arc<ServerSpec>] {
        &self.specs
    }

    /// Changes the configuration.
    pub(crate) fn configure(&self, f: impl FnOnce(&mut Config)) {
        f(&mut lock(&self.state).config);
    }

    /// The index of the spec handling `file`, by extension.
    pub(crate) fn spec_for(&self, file: &Path) -> Option<usize> {
        let name = file.file_name()?.to_str()?;
        self.specs.iter().position(|spec| {
            spec.extensions.iter().any(|ext| {
                let ext = ext.strip_prefix('.').unwrap_or(ext);
                !ext.is_empty()
                    && name
                        .strip_suffix(ext)
                        .is_some_and(|stem| stem.ends_with('.') && stem.len() > 1)
            })
        })
    }

    /// The server for `file`, started when it is not running and may start.
    pub(crate) fn acquire(self: &Arc<Self>, file: &Path) -> Acquired {
        let Some(index) = self.spec_for(file) else {
            return Acquired::Unavailable;
        };
        if !file.is_absolute() {
            return Acquired::Unavailable;
        }
        let spec = &self.specs[index];
        let root = root_of(file, &spec.root_markers, &self.roots);
        let mut reg = lock(&self.state);
        if reg.closed || reg.is_missing(index) {
            return Acquired::Unavailable;
        }
        let key = (index, root);
        let slot = reg.slots.entry(key.clone()).or_default();
        if slot.off {
            return Acquired::Unavailable;
        }
        if let Some(server) = &slot.server {
            return Acquired::Server(server.clone());
        }
        if slot.retry_at.is_some_and(|at| Instant::now() < at) {
            return Acquired::Waiting(format!("{} restarting after it stopped", spec.program()));
        }
        self.start(&mut reg, key)
    }

    /// Starts the server of `key` (the registry locked).
    fn start(self: &Arc<Self>, reg: &mut Registry, key: SlotKey) -> Acquired {
        let (index, root) = key.clone();
        let spec = self.specs[index].clone();
        if !root.is_dir() {
            // A file in a folder that does not exist (yet): nothing to run in.
            return Acquired::Unavailable;
        }
        let Some(program_path) = spec.command.first().and_then(|p| find_program(p)) else {
            reg.missing_program(index, &spec, "not found on PATH");
            return Acquired::Unavailable;
        };
        let weak = Arc::downgrade(self);
        let stop_key = key.clone();
        let started = Server::start(StartArgs {
            spec: spec.clone(),
            program_path,
            root,
            max_open: reg.config.max_open,
            idle: reg.config.idle,
            on_stop: Box::new(move |report| stopped(&weak, &stop_key, report)),
        });
        match started {
            Ok(server) => {
                tracing::debug!(server = %server.program, root = %server.root().display(), "language server started");
                reg.slots.entry(key).or_default().server = Some(server.clone());
                Acquired::Server(server)
            }
            Err(err) => {
                tracing::warn!(program = %spec.program(), %err, "language server did not start");
                reg.missing_program(index, &spec, &format!("could not start ({err})"));
                Acquired::Unavailable
            }
        }
    }

    /// A server of `key` stopped.
    fn on_stopped(&self, key: &SlotKey, report: StopReport) {
        let mut reg = lock(&self.state);
        let config = reg.config.clone();
        let Some(slot) = reg.slots.get_mut(key) else {
            return;
        };
        slot.server = None;
        if report.reason == StopReason::Requested {
            return;
        }
        let spec = &self.specs[key.0];
        let mut notes = Vec::new();
        if report.reason == StopReason::StartTimeout {
            notes.push(format!(
                "{} diagnostics: {} did not start within {}",
                spec.language,
                spec.program(),
                whole_seconds(spec.startup_timeout)
            ));
        }
        if report.ready_for.is_some_and(|d| d >= HEALTHY_UPTIME) {
            slot.stops = 0;
        }
        slot.stops += 1;
        if slot.stops > config.max_restarts {
            slot.off = true;
            notes.push(format!(
                "{} diagnostics off: `{}` stopped {} times",
                spec.language,
                spec.program(),
                slot.stops
            ));
        } else {
            let factor = 1u32 << (slot.stops - 1).min(16);
            slot.retry_at = Some(Instant::now() + config.backoff.saturating_mul(factor));
        }
        reg.notes.extend(notes);
    }

    /// The notes not taken yet.
    pub(crate) fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut lock(&self.state).notes)
    }

    /// Closes the registry and takes every running server out of it.
    pub(crate) fn close(&self) -> Vec<Arc<Server>> {
        let mut reg = lock(&self.state);
        reg.closed = true;
        reg.slots
            .values_mut()
            .filter_map(|slot| slot.server.take())
            .collect()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for server in self.close() {
            server.kill_now();
        }
    }
}

impl Registry {
    /// Whether spec `index`'s program was found missing recently.
    fn is_missing(&self, index: usize) -> bool {
        self.missing
            .get(&index)
            .is_some_and(|at| at.elapsed() < self.config.missing_retry)
    }

    /// Remembers that spec `index`'s program cannot run; tells it once.
    fn missing_program(&mut self, index: usize, spec: &ServerSpec, why: &str) {
        self.missing.insert(index, Instant::now());
        if self.told_missing.insert(index) {
            let hint = spec
                .install_hint
                .as_deref()
                .map(|h| format!("; {h}"))
                .unwrap_or_default();
            self.notes.push(format!(
                "{} diagnostics unavailable: `{}` {why}{hint}",
                spec.language,
                spec.program()
            ));
        }
    }
}

/// Reports a stop to the registry, if it still exists.
fn stopped(inner: &Weak<Inner>, key: &SlotKey, report: StopReport) {
    if let Some(inner) = inner.upgrade() {
        inner.on_stopped(key, report);
    }
}

/// `60 s`, `1.5 s`.
fn whole_seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0} s")
    } else {
        format!("{secs:.1} s")
    }
}
