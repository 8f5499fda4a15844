//! A person's own hooks: commands and inline rules run before and after tool
//! calls, for every front end, matched in process and failing closed.
//!
//! [`Hooks`] is the registry's [`CallHooks`]: built from the `[hooks]` tables of
//! the user's and the workspace's configuration ([`Layer`]), it is asked at each
//! stage of every call (see [`toolbelt_core::hooks`]) and by the agent at the
//! edges of a run.
//!
//! - **Matching** happens in process, so no process starts unless a hook
//!   matches: tool-name globs (`bash`, `Edit|Write`, `files__*`), an `if` in the
//!   permission-rule syntax with shell lines split into commands
//!   (`bash(git push:*)`), `write(glob)` over what a call may write (a shell
//!   line's redirections, `tee`, `sed -i`, `cp`... and `unknown` when it cannot
//!   be told), and `paths` globs over what it writes or changed.
//! - **Handlers**: a command (a shell line or a program and its arguments, JSON
//!   on its standard input, the environment scrubbed of secrets, its whole tree
//!   killed, its output read up to 1 MiB), or `deny = "..."` / `context = "..."`
//!   answered in process.
//! - **Answers**: exit 2 blocks with its standard error as the reason; JSON on
//!   standard output may allow, deny, ask, block or revert, rewrite the
//!   arguments (`updatedInput`) and add context (`additionalContext`), in
//!   Claude Code's spelling or toolbelt's. Hooks of one event run side by side
//!   and compose in configuration order: any deny wins; rewrites apply in order.
//! - **Failures** (a timeout, a crash, a missing command, a value that means
//!   nothing) apply the hook's `on_error`: guards deny, observers warn.
//! - **Trust**: hooks of a workspace's own configuration run only once their
//!   hash is in the user's [`TrustStore`]; an untrusted `required` hook denies.

mod compose;
mod config;
mod ended;
mod http;
mod matcher;
mod reply;
mod runner;
mod trust;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{Map, Value};
use toolbelt_core::BoxFuture;
use toolbelt_core::hooks::{
    CallHooks, HookContext, HookDecision, HookEvent, HookInput, HookRun, HookVerdict,
};
use toolbelt_policy::ToolKinds;

pub use config::{
    CommandSpec, ConfigError, DEFAULT_TIMEOUT_MS, Dialect, HookSpec, HooksConfig, MAX_TIMEOUT_MS,
    OnError,
};
pub use ended::MAX_HOOK_OUTPUT_BYTES;
pub use matcher::CallWrites;
pub use trust::{TRUST_FILE, TrustError, TrustStore, Trusted, definition_hash};

use crate::compose::{Answer, compose};
use crate::ended::Ended;
use crate::matcher::{MatchEnv, Matcher};
use crate::reply::{Said, Unusable};

/// Where a `[hooks]` table was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The user's own configuration (outside every workspace): trusted.
    User(PathBuf),
    /// A workspace's configuration: its hooks run once trusted.
    Workspace(PathBuf),
}

impl Source {
    /// The file.
    pub fn file(&self) -> &Path {
        match self {
            Source::User(p) | Source::Workspace(p) => p,
        }
    }
}

/// One configuration's hooks.
#[derive(Debug, Clone)]
pub struct Layer {
    /// The hooks.
    pub config: HooksConfig,
    /// Where they were read.
    pub source: Source,
}

/// What hooks need to know of the workspace and its tools.
#[derive(Debug, Clone, Default)]
pub struct HookEnv {
    /// The workspace's roots (the first is where commands run).
    pub roots: Vec<PathBuf>,
    /// What the tools' subjects are, for `if` rules.
    pub kinds: ToolKinds,
    /// Claude Code's names of the tools (`bash` -> `Bash`), for `dialect = "claude"`
    /// and matchers that use them.
    pub claude_names: BTreeMap<String, String>,
    /// The user's trust file (none: every workspace hook is untrusted).
    pub trust: Option<Arc<TrustStore>>,
}

/// What a hook does.
#[derive(Debug)]
enum Handler {
    Command(CommandSpec),
    Http(reqwest::Url),
    Deny(String),
    Context(String),
}

/// One hook, ready to run.
#[derive(Debug)]
struct Hook {
    name: String,
    event: HookEvent,
    spec: HookSpec,
    matcher: Matcher,
    handler: Handler,
    timeout_ms: u64,
    on_error: OnError,
    source: Source,
}

/// What `toolbelt hooks list` and `doctor` show of one hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInfo {
    /// Its name.
    pub name: String,
    /// Its event.
    pub event: HookEvent,
    /// Where it is defined.
    pub source: Source,
    /// What it runs (`command: ./check.sh`, `deny: ...`, `context: ...`).
    pub handler: String,
    /// Whether it may run (a user's hook always; a workspace's once trusted).
    pub trusted: bool,
    /// Its hash (what `toolbelt hooks trust` records), for a workspace hook.
    pub hash: Option<String>,
    /// Whether an untrusted copy denies what it matches.
    pub required: bool,
    /// The program it starts, when it starts one that cannot be found.
    pub missing: Option<String>,
}

/// The hooks of a workspace. See the [crate documentation](crate).
#[derive(Debug)]
pub struct Hooks {
    by_event: BTreeMap<HookEvent, Vec<Hook>>,
    env: HookEnv,
    /// The workspace's hook definitions and scripts, relative to the first root:
    /// a call that changes one is reported (the hooks it changed stop until
    /// trusted again).
    watched: Vec<String>,
}

impl Hooks {
    /// The hooks of `layers`, in order (the user's first, then the workspace's).
    ///
    /// # Errors
    /// An unknown event, a hook with no handler or two, an empty command, a
    /// timeout out of range, an invalid matcher, `if` or path glob, two hooks of
    /// one event with one name.
    pub fn new(layers: &[Layer], env: HookEnv) -> Result<Hooks, ConfigError> {
        let mut by_event: BTreeMap<HookEvent, Vec<Hook>> = BTreeMap::new();
        let match_env = MatchEnv {
            roots: &env.roots,
            kinds: &env.kinds,
        };
        for layer in layers {
            for (event_name, specs) in &layer.config.events {
                let event = HookEvent::parse(event_name)
                    .ok_or_else(|| ConfigError::UnknownEvent(event_name.clone()))?;
                let list = by_event.entry(event).or_default();
                for spec in specs {
                    let name = spec.display_name(event, list.len());
                    if list.iter().any(|h| h.name == name) {
                        return Err(ConfigError::Duplicate {
                            event: event_name.clone(),
                            name,
                        });
                    }
                    let handler = match (&spec.command, &spec.deny, &spec.context) {
                        _ if spec.http.is_some()
                            && (spec.command.is_some()
                                || spec.deny.is_some()
                                || spec.context.is_some()) =>
                        {
                            return Err(ConfigError::TwoHandlers(name));
                        }
                        (None, None, None) if spec.http.is_some() => {
                            let text = spec.http.as_deref().unwrap_or_default();
                            Handler::Http(http::checked_url(&name, text, spec.allow_remote)?)
                        }
                        (Some(c), None, None) => {
                            let empty = match c {
                                CommandSpec::Line(l) => l.trim().is_empty(),
                                CommandSpec::Exec(a) => a.first().is_none_or(|p| p.is_empty()),
                            };
                            if empty {
                                return Err(ConfigError::EmptyCommand(name));
                            }
                            Handler::Command(c.clone())
                        }
                        (None, Some(d), None) => Handler::Deny(d.clone()),
                        (None, None, Some(c)) => Handler::Context(c.clone()),
                        (None, None, None) => return Err(ConfigError::NoHandler(name)),
                        _ => return Err(ConfigError::TwoHandlers(name)),
                    };
                    let timeout_ms = spec.timeout_ms(&name)?;
                    let matcher = Matcher::new(&name, spec, &match_env)?;
                    list.push(Hook {
                        on_error: spec.on_error(event),
                        name,
                        event,
                        spec: spec.clone(),
                        matcher,
                        handler,
                        timeout_ms,
                        source: layer.source.clone(),
                    });
                }
            }
        }
        by_event.retain(|_, v| !v.is_empty());
        let watched = workspace_files(layers, &env.roots);
        Ok(Hooks {
            by_event,
            env,
            watched,
        })
    }

    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.by_event.is_empty()
    }

    /// Every hook, by event then configuration order.
    pub fn list(&self) -> Vec<HookInfo> {
        self.by_event
            .values()
            .flatten()
            .map(|h| HookInfo {
                name: h.name.clone(),
                event: h.event,
                source: h.source.clone(),
                handler: match &h.handler {
                    Handler::Command(c) => format!("command: {}", runner::shell_line(c)),
                    Handler::Deny(d) => format!("deny: {d}"),
                    Handler::Context(c) => format!("context: {c}"),
                    Handler::Http(url) => format!("http: {url}"),
                },
                trusted: self.trusted(h),
                hash: self.hash(h),
                required: h.spec.required,
                missing: self.missing_program(h),
            })
            .collect()
    }

    /// Records every workspace hook as trusted; returns the names newly trusted.
    ///
    /// # Errors
    /// There is no trust file, or it cannot be written.
    pub fn trust_all(&self) -> Result<Vec<String>, TrustError> {
        let Some(store) = &self.env.trust else {
            return Ok(Vec::new());
        };
        let mut done = Vec::new();
        for h in self.by_event.values().flatten() {
            let Some(hash) = self.hash(h) else { continue };
            if store.is_trusted(&hash) {
                continue;
            }
            store.trust(
                &hash,
                Trusted {
                    workspace: self.workspace(),
                    what: format!("hook {} '{}'", h.event, h.name),
                    at_ms: now_ms(),
                },
            )?;
            done.push(h.name.clone());
        }
        Ok(done)
    }

    /// The first root, as the trust file names the workspace.
    fn workspace(&self) -> String {
        self.env
            .roots
            .first()
            .map(|r| r.display().to_string())
            .unwrap_or_default()
    }

    /// The hash a workspace hook is trusted by (none for a user's hook).
    fn hash(&self, h: &Hook) -> Option<String> {
        let Source::Workspace(_) = &h.source else {
            return None;
        };
        let definition = serde_json::to_string(&h.spec).unwrap_or_default();
        let script = match &h.handler {
            Handler::Command(c) => self.script(c),
            _ => None,
        };
        Some(definition_hash(
            &self.workspace(),
            &format!("hook {}", h.event),
            &definition,
            script.as_deref(),
        ))
    }

    /// The script file a command runs, when its program is a path to a file.
    fn script(&self, c: &CommandSpec) -> Option<PathBuf> {
        let program = runner::program(c)?;
        if !program.contains('/') {
            return None;
        }
        let root = self.env.roots.first()?;
        let path = root.join(&program);
        path.is_file().then_some(path)
    }

    /// The program a command hook starts, when it cannot be found.
    fn missing_program(&self, h: &Hook) -> Option<String> {
        let Handler::Command(c) = &h.handler else {
            return None;
        };
        let program = runner::program(c)?;
        let found = if program.contains('/') {
            let root = self
                .env
                .roots
                .first()
                .map_or_else(PathBuf::new, Clone::clone);
            root.join(&program).is_file()
        } else {
            is_shell_word(&program) || toolbelt_exec::on_path(&program)
        };
        (!found).then_some(program)
    }

    /// Whether hook `h` may run.
    fn trusted(&self, h: &Hook) -> bool {
        match &h.source {
            Source::User(_) => true,
            Source::Workspace(_) => match (&self.env.trust, self.hash(h)) {
                (Some(store), Some(hash)) => store.is_trusted(&hash),
                _ => false,
            },
        }
    }

    /// Runs one matched hook.
    async fn run_one(&self, h: &Hook, input: &HookInput<'_>, base: &Map<String, Value>) -> Answer {
        let started = Instant::now();
        let mut answer = if !self.trusted(h) {
            if h.spec.required {
                Answer::decided(
                    HookDecision::Deny {
                        hook: h.name.clone(),
                        reason: "it is a required hook of this workspace that is not trusted yet; ask the user to review it and run `toolbelt hooks trust`".into(),
                    },
                    "untrusted",
                )
            } else {
                Answer::outcome(
                    "untrusted",
                    Some("not trusted: `toolbelt hooks trust` runs it".into()),
                )
            }
        } else {
            match &h.handler {
                Handler::Deny(message) => Answer::decided(
                    HookDecision::Deny {
                        hook: h.name.clone(),
                        reason: message.clone(),
                    },
                    "denied",
                ),
                Handler::Context(text) => {
                    let mut a = Answer::outcome("context", None);
                    a.context = Some(text.clone());
                    a
                }
                Handler::Command(c) => self.run_command(h, c, input, base).await,
                Handler::Http(url) => {
                    let ended = http::post(url, self.payload(h, input, base), h.timeout_ms).await;
                    self.read_ended(h, None, ended)
                }
            }
        };
        answer.ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        answer
    }

    /// The JSON hook `h` is given: `base` with the names its dialect uses.
    fn payload(&self, h: &Hook, input: &HookInput<'_>, base: &Map<String, Value>) -> Vec<u8> {
        let claude = input
            .call
            .and_then(|call| self.env.claude_names.get(call.tool));
        runner::for_dialect(
            base.clone(),
            input,
            h.spec.dialect,
            claude.map(String::as_str),
        )
    }

    async fn run_command(
        &self,
        h: &Hook,
        c: &CommandSpec,
        input: &HookInput<'_>,
        base: &Map<String, Value>,
    ) -> Answer {
        let payload = self.payload(h, input, base);
        let root = self
            .env
            .roots
            .first()
            .map_or_else(|| input.cwd.to_path_buf(), Clone::clone);
        let mut vars = BTreeMap::new();
        vars.insert(
            "TOOLBELT_HOOK_EVENT".to_string(),
            h.event.as_str().to_string(),
        );
        vars.insert("TOOLBELT_HOOK_NAME".to_string(), h.name.clone());
        vars.insert(
            "TOOLBELT_PROJECT_DIR".to_string(),
            root.display().to_string(),
        );
        if h.spec.dialect == Dialect::Claude {
            vars.insert("CLAUDE_PROJECT_DIR".to_string(), root.display().to_string());
        }
        let ended = runner::run(c, payload, &root, &vars, h.timeout_ms).await;
        self.read_ended(h, Some(c), ended)
    }

    /// What a command's end means.
    fn read_ended(&self, h: &Hook, c: Option<&CommandSpec>, ended: Ended) -> Answer {
        let (code, stdout, stderr, cut) = match ended {
            Ended::Timeout(ms) => {
                return self.failed(h, "timeout", format!("timed out after {ms} ms"));
            }
            Ended::Signal(s) => {
                return self.failed(h, "failed", format!("killed by signal {s}"));
            }
            Ended::NotStarted(why) => {
                let why = toolbelt_core::error_chain(&why);
                return self.failed(h, "failed", format!("could not start: {why}"));
            }
            Ended::Http(why) => {
                return self.failed(h, "failed", toolbelt_core::error_chain(&why));
            }
            Ended::Exit {
                code,
                stdout,
                stderr,
                cut,
            } => (code, stdout, stderr, cut),
        };
        let first_err = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        match code {
            0 => {}
            2 => {
                let reason = stderr.trim();
                if reason.is_empty() {
                    return self.failed(
                        h,
                        "failed",
                        "exit 2 without a reason on standard error".into(),
                    );
                }
                return self.blocked(h, reason.to_string());
            }
            126 | 127 => {
                let program = c.and_then(runner::program).unwrap_or_default();
                let what = if code == 127 {
                    "not found"
                } else {
                    "cannot be run"
                };
                return self.failed(h, "failed", format!("exit {code}: {program}: {what}"));
            }
            code => {
                let why = if first_err.is_empty() {
                    format!("exit {code}")
                } else {
                    format!("exit {code}: {first_err}")
                };
                return self.failed(h, "failed", why);
            }
        }
        if cut {
            return Answer::outcome(
                "warning",
                Some(format!(
                    "its output is over {} KiB; ignored",
                    MAX_HOOK_OUTPUT_BYTES / 1024
                )),
            );
        }
        let reply = match reply::parse(&stdout) {
            Ok(None) => return Answer::outcome("ok", None),
            Ok(Some(r)) => r,
            Err(Unusable::NotJson) => {
                // Plain text is context where Claude Code reads it so.
                if matches!(h.event, HookEvent::SessionStart | HookEvent::UserPrompt) {
                    let mut a = Answer::outcome("context", None);
                    a.context = Some(stdout.trim().to_string());
                    return a;
                }
                return Answer::outcome("warning", Some("its output is not JSON; ignored".into()));
            }
            Err(Unusable::BadField { field, value }) => {
                return self.failed(
                    h,
                    "failed",
                    format!("{field} = {value} is not a value it can have"),
                );
            }
        };
        self.answer(h, reply)
    }

    /// A JSON reply as an answer.
    fn answer(&self, h: &Hook, reply: reply::Reply) -> Answer {
        let hook = h.name.clone();
        let reason = reply.reason.clone();
        let (decision, outcome) = if let Some(stop) = reply.stop.clone() {
            let reason = non_empty(Some(stop))
                .or(reason)
                .unwrap_or_else(|| "it said not to continue".into());
            if h.event == HookEvent::Stop {
                (HookDecision::Continue, "ok")
            } else {
                (HookDecision::Deny { hook, reason }, "denied")
            }
        } else {
            match reply.decision {
                None => (HookDecision::Continue, "ok"),
                Some(Said::Allow) => (HookDecision::Allow, "allowed"),
                Some(Said::Ask) => (HookDecision::Ask { hook, reason }, "asked"),
                Some(Said::Deny) => (
                    HookDecision::Deny {
                        hook,
                        reason: reason.unwrap_or_else(|| "denied without a reason".into()),
                    },
                    "denied",
                ),
                Some(Said::Block) => {
                    let reason = reason.unwrap_or_else(|| "blocked without a reason".into());
                    if h.event.guards() {
                        (HookDecision::Deny { hook, reason }, "denied")
                    } else {
                        (HookDecision::Block { hook, reason }, "blocked")
                    }
                }
                Some(Said::Revert) => {
                    let reason = reason.unwrap_or_else(|| "reverted without a reason".into());
                    match h.event {
                        HookEvent::PostToolUse
                        | HookEvent::PostToolFailure
                        | HookEvent::FileChanged => {
                            (HookDecision::Revert { hook, reason }, "reverted")
                        }
                        _ => (HookDecision::Deny { hook, reason }, "denied"),
                    }
                }
            }
        };
        let mut a = Answer::decided(decision, outcome);
        if reply.updated_input.is_some() && matches!(a.outcome, "ok" | "allowed") {
            a.outcome = "rewrote";
        }
        a.rewrite = reply.updated_input;
        if a.outcome == "ok" && reply.context.is_some() {
            a.outcome = "context";
        }
        a.context = reply.context;
        a.message = reply.message.or(a.message);
        a
    }

    /// A hook that exited 2 with a reason.
    fn blocked(&self, h: &Hook, reason: String) -> Answer {
        let hook = h.name.clone();
        match h.event {
            e if e.guards() => Answer::decided(HookDecision::Deny { hook, reason }, "denied"),
            HookEvent::UserPrompt => Answer::decided(HookDecision::Deny { hook, reason }, "denied"),
            _ => Answer::decided(HookDecision::Block { hook, reason }, "blocked"),
        }
    }

    /// A hook that could not answer: its `on_error`.
    fn failed(&self, h: &Hook, outcome: &'static str, why: String) -> Answer {
        tracing::warn!(hook = %h.name, event = %h.event, "hook failed: {why}");
        match h.on_error {
            OnError::Deny => {
                let mut a = Answer::decided(
                    HookDecision::Deny {
                        hook: h.name.clone(),
                        reason: format!(
                            "the hook failed ({why}), and a failing guard denies (on_error = \"deny\")"
                        ),
                    },
                    outcome,
                );
                a.message = Some(why);
                a
            }
            OnError::Allow => Answer::outcome(outcome, Some(why)),
        }
    }

    /// Runs the hooks of `input.event` that match it, side by side, and
    /// composes their answers in configuration order.
    pub async fn run_event(&self, input: HookInput<'_>) -> HookVerdict {
        let mut verdict = self.run_matched(&input).await;
        if input.event == HookEvent::FileChanged {
            self.report_tampering(&input, &mut verdict);
        }
        verdict
    }

    /// A call that changed the workspace's hooks (through the shell, outside the
    /// sandbox): the person and the model are told, and the hooks it changed do
    /// not run again until trusted.
    fn report_tampering(&self, input: &HookInput<'_>, verdict: &mut HookVerdict) {
        let touched: Vec<&str> = input
            .changed
            .iter()
            .map(|c| c.path.as_str())
            .filter(|p| {
                self.watched
                    .iter()
                    .any(|w| p == w || p.starts_with(&format!("{w}/")))
            })
            .collect();
        if touched.is_empty() {
            return;
        }
        let message = format!(
            "this call changed the workspace's hooks ({}); a changed hook does not run until the user reviews it and runs `toolbelt hooks trust`",
            touched.join(", ")
        );
        tracing::warn!("{message}");
        verdict.runs.push(HookRun {
            name: "hook files".into(),
            event: HookEvent::FileChanged.as_str().into(),
            outcome: "warning".into(),
            ms: 0,
            message: Some(message.clone()),
        });
        verdict.context.push(HookContext {
            hook: "hook files".into(),
            text: message,
        });
    }

    /// The hooks of `input.event` that match it, run and composed.
    async fn run_matched(&self, input: &HookInput<'_>) -> HookVerdict {
        let input = *input;
        let Some(list) = self.by_event.get(&input.event) else {
            return HookVerdict::default();
        };
        let root = self
            .env
            .roots
            .first()
            .map_or_else(|| input.cwd.to_path_buf(), Clone::clone);
        let cell = std::sync::OnceLock::new();
        let writes = || cell.get_or_init(|| CallWrites::of(&input, &root));
        let claude = input
            .call
            .and_then(|c| self.env.claude_names.get(c.tool))
            .map(String::as_str);
        let matched: Vec<&Hook> = list
            .iter()
            .filter(|h| h.matcher.matches(&input, &writes, claude))
            .collect();
        if matched.is_empty() {
            return HookVerdict::default();
        }
        let base = if matched
            .iter()
            .any(|h| matches!(h.handler, Handler::Command(_) | Handler::Http(_)))
        {
            runner::payload(&input, writes())
        } else {
            Map::new()
        };
        let answers =
            futures::future::join_all(matched.iter().map(|h| self.run_one(h, &input, &base))).await;
        let names: Vec<(String, HookEvent)> =
            matched.iter().map(|h| (h.name.clone(), h.event)).collect();
        compose(&names, answers, input.call.map(|c| c.arguments))
    }
}

impl CallHooks for Hooks {
    fn wants(&self, event: HookEvent) -> bool {
        self.by_event.contains_key(&event)
            || (event == HookEvent::FileChanged && !self.watched.is_empty())
    }

    fn run<'a>(&'a self, input: HookInput<'a>) -> BoxFuture<'a, HookVerdict> {
        Box::pin(self.run_event(input))
    }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

/// A word the shell runs itself (`exit`, `echo`, `[`), found on no path.
fn is_shell_word(word: &str) -> bool {
    matches!(
        word,
        "exit"
            | "echo"
            | "printf"
            | "true"
            | "false"
            | "test"
            | "["
            | "cd"
            | "read"
            | "if"
            | "for"
            | "while"
            | "case"
            | "exec"
            | "set"
            | "export"
            | "{"
            | "("
    ) || word.contains('=')
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The workspace's files that define hooks, relative to the first root: the
/// configuration files of its layers and the scripts they run.
fn workspace_files(layers: &[Layer], roots: &[PathBuf]) -> Vec<String> {
    let Some(root) = roots.first() else {
        return Vec::new();
    };
    let workspace: Vec<Layer> = layers
        .iter()
        .filter(|l| matches!(l.source, Source::Workspace(_)))
        .cloned()
        .collect();
    let mut files: Vec<PathBuf> = workspace
        .iter()
        .map(|l| l.source.file().to_path_buf())
        .collect();
    files.extend(script_paths(&workspace, root));
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.clone());
    files
        .iter()
        .filter_map(|f| {
            let real = std::fs::canonicalize(f).unwrap_or_else(|_| f.clone());
            real.strip_prefix(&real_root)
                .or_else(|_| f.strip_prefix(root))
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
        })
        .collect()
}

/// The script files the command hooks of `layers` run (a program named by a path,
/// relative to `root`, that exists): what the file tools and the sandbox keep
/// the agent from rewriting.
pub fn script_paths(layers: &[Layer], root: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = layers
        .iter()
        .flat_map(|l| l.config.events.values().flatten())
        .filter_map(|spec| spec.command.as_ref().and_then(runner::program))
        .filter(|program| program.contains('/'))
        .map(|program| root.join(program))
        .filter(|path| path.is_file())
        .collect();
    out.sort();
    out.dedup();
    out
}
