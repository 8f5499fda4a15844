//! The interactive screen of `toolbelt agent`: a line editor for prompts, the
//! answer as it streams in, one line per tool call, a spinner while the model or a
//! tool works, approvals, the model's questions ([`picker`]), slash commands.
//!
//! Threads: the agent runs on the Tokio runtime; this thread owns the terminal.
//! Everything the run says reaches this thread over one channel ([`UiEvent`]):
//! events, approval requests and questions (answered here, so only this thread
//! reads standard input), Ctrl-C, and the end of a command.

pub(super) mod rewind_screen;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::cursor::MoveToColumn;
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, Clear, ClearType};
use rustyline::error::ReadlineError;
use rustyline::{
    Cmd, ConditionalEventHandler, DefaultEditor, EventContext, EventHandler, Movement, RepeatCount,
};
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;
use toolbelt_agent::{Agent, AgentEvent};
use toolbelt_core::{Answers, Question, Registry};

use super::event::{Answer, Ask, UiEvent};
use super::picker::{self, Outcome};
use super::render::{self, EventLines, Paint};
use rewind_screen::{Current, Rewinder};

/// How often the spinner turns.
const TICK: Duration = Duration::from_millis(100);
/// A second Ctrl-C within this time leaves.
const DOUBLE_INTERRUPT: Duration = Duration::from_secs(2);
/// The spinner shows after this long without output.
const SPINNER_DELAY: Duration = Duration::from_millis(250);
/// The spinner's frames.
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// The prompt of the line editor.
const PROMPT: &str = "› ";
/// What the model is told when Ctrl-C answered an approval or its questions.
const INTERRUPTED: &str = "the user interrupted the run";

/// What the agent's task is asked to do.
enum Task {
    Run(String, CancellationToken),
    Compact(CancellationToken),
    Clear,
    /// Say which run is on the screen (answered at once; no `Done` follows).
    Where(std::sync::mpsc::Sender<Current>),
    /// Go on with this agent instead (a rewind forked the run; no `Done`).
    Replace(Box<Agent>),
    /// End the session: its `session_end` hooks run (answered when they are
    /// done; no `Done` follows).
    End(std::sync::mpsc::Sender<()>),
}

/// How long the screen waits for the agent's task to say which run it is on.
const WHERE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the screen, closing, waits for the session's `session_end` hooks.
const END_TIMEOUT: Duration = Duration::from_secs(5);

/// What the interactive screen needs.
pub struct Parts<'a> {
    pub rt: &'a tokio::runtime::Runtime,
    pub agent: Agent,
    pub events: UnboundedReceiver<AgentEvent>,
    pub ui_tx: Sender<UiEvent>,
    pub ui_rx: Receiver<UiEvent>,
    pub registry: Arc<Registry>,
    /// The line editor's history file.
    pub history: PathBuf,
    /// The conversation of an earlier run was loaded.
    pub resumed: bool,
    /// What `/rewind` needs.
    pub rewinder: Rewinder,
}

/// Whether to go on after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Exit,
}

/// Ctrl-C in the line editor: clears a line with text, leaves on an empty one.
struct CtrlC;

impl ConditionalEventHandler for CtrlC {
    fn handle(
        &self,
        _evt: &rustyline::Event,
        _n: RepeatCount,
        _positive: bool,
        ctx: &EventContext<'_>,
    ) -> Option<Cmd> {
        if ctx.line().is_empty() {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeLine))
        }
    }
}

/// Runs the screen until `/exit`, Ctrl-D or Ctrl-C on an empty prompt, or a
/// second Ctrl-C during a run.
pub fn run(parts: Parts<'_>) -> Result<()> {
    let Parts {
        rt,
        mut agent,
        mut events,
        ui_tx,
        ui_rx,
        registry,
        history,
        resumed,
        rewinder,
    } = parts;
    let paint = Paint::for_terminal(std::io::IsTerminal::is_terminal(&std::io::stdout()));
    let model = agent_header(&agent, resumed);

    // The agent's task: one command at a time.
    let (cmd_tx, mut cmd_rx) = tokio::sync::mpsc::unbounded_channel::<Task>();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    rt.spawn(async move {
        while let Some(cmd) = cmd_rx.recv().await {
            match cmd {
                Task::Run(prompt, cancel) => {
                    agent.run(&prompt, &cancel).await;
                }
                Task::Compact(cancel) => agent.compact_now(&cancel).await,
                Task::Clear => {
                    agent.end("clear").await;
                    agent.clear();
                }
                Task::Where(reply) => {
                    let _ = reply.send(Current {
                        run_id: agent.run_id().to_string(),
                        transcript: agent.transcript_path().map(Path::to_path_buf),
                    });
                    continue;
                }
                Task::Replace(next) => {
                    agent.end("rewind").await;
                    agent = *next;
                    continue;
                }
                Task::End(reply) => {
                    agent.end("exit").await;
                    let _ = reply.send(());
                    continue;
                }
            }
            if done_tx.send(()).is_err() {
                break;
            }
        }
    });
    // Events, then the end of the command that sent them, in order.
    let forward = ui_tx.clone();
    rt.spawn(async move {
        loop {
            tokio::select! {
                biased;
                Some(event) = events.recv() => {
                    if forward.send(UiEvent::Event(event)).is_err() {
                        break;
                    }
                }
                Some(()) = done_rx.recv() => {
                    while let Ok(event) = events.try_recv() {
                        let _ = forward.send(UiEvent::Event(event));
                    }
                    if forward.send(UiEvent::Done).is_err() {
                        break;
                    }
                }
                else => break,
            }
        }
    });
    // Ctrl-C while a command runs (the line editor reads it as a key otherwise).
    // The handler is installed here, before the line editor first runs: the editor
    // puts back whatever SIGINT handler it found when it started reading, and
    // finding none it would leave Ctrl-C to kill the process.
    let mut sigint = rt
        .block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        })
        .context("cannot listen for Ctrl-C")?;
    let interrupts = ui_tx.clone();
    rt.spawn(async move {
        while sigint.recv().await.is_some() {
            if interrupts.send(UiEvent::Interrupt).is_err() {
                break;
            }
        }
    });
    drop(ui_tx);

    let mut editor = DefaultEditor::new().context("cannot set up the line editor")?;
    editor.bind_sequence(
        rustyline::KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC)),
    );
    if let Some(dir) = history.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = editor.load_history(&history);

    let mut screen = Screen::new(paint, Arc::clone(&registry));
    screen.say(&paint.dim(&format!(
        "{model} · /help for commands · Ctrl-C stops a run, Ctrl-D leaves"
    )));
    loop {
        let line = match editor.readline(PROMPT) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted | ReadlineError::Eof) => break,
            Err(e) => return Err(e).context("cannot read the terminal"),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        let _ = editor.save_history(&history);
        // Nothing runs now: anything queued (a stray SIGINT) is stale.
        while ui_rx.try_recv().is_ok() {}
        let flow = if let Some(command) = line.strip_prefix('/') {
            match command.split_whitespace().next().unwrap_or("") {
                "exit" | "quit" | "q" => Flow::Exit,
                "help" | "?" => {
                    screen.say(&help());
                    Flow::Continue
                }
                "tools" => {
                    screen.say(&tools(&registry, paint));
                    Flow::Continue
                }
                "clear" => {
                    let _ = cmd_tx.send(Task::Clear);
                    let flow = screen.wait(&ui_rx, &CancellationToken::new(), &mut editor);
                    screen.say(
                        &paint.dim("The conversation was cleared; the next prompt starts afresh."),
                    );
                    flow
                }
                "compact" => {
                    let cancel = CancellationToken::new();
                    let _ = cmd_tx.send(Task::Compact(cancel.clone()));
                    screen.spin("compacting the history");
                    screen.compacted = false;
                    let flow = screen.wait(&ui_rx, &cancel, &mut editor);
                    if !screen.compacted {
                        screen.say(&paint.dim("There is nothing to compact yet."));
                    }
                    flow
                }
                "rewind" => {
                    let (tx, rx) = std::sync::mpsc::channel();
                    let _ = cmd_tx.send(Task::Where(tx));
                    match rx.recv_timeout(WHERE_TIMEOUT) {
                        Ok(current) => {
                            if let Some(next) = rewinder.run(&mut screen, rt, &current) {
                                let _ = cmd_tx.send(Task::Replace(Box::new(next)));
                            }
                        }
                        Err(_) => {
                            screen.say(&paint.red("✗ the agent did not say which run it is on"))
                        }
                    }
                    Flow::Continue
                }
                other => {
                    screen.say(&paint.yellow(&format!(
                        "unknown command /{other}; /help lists the commands"
                    )));
                    Flow::Continue
                }
            }
        } else {
            let cancel = CancellationToken::new();
            let _ = cmd_tx.send(Task::Run(line.to_string(), cancel.clone()));
            screen.spin("thinking");
            screen.wait(&ui_rx, &cancel, &mut editor)
        };
        if flow == Flow::Exit {
            break;
        }
    }
    let _ = editor.save_history(&history);
    // The session ends with the screen: its `session_end` hooks run first.
    let (ended_tx, ended_rx) = std::sync::mpsc::channel();
    if cmd_tx.send(Task::End(ended_tx)).is_ok() {
        let _ = ended_rx.recv_timeout(END_TIMEOUT);
    }
    Ok(())
}

fn agent_header(agent: &Agent, resumed: bool) -> String {
    if resumed {
        format!("toolbelt agent · continuing run {}", agent.run_id())
    } else {
        "toolbelt agent".to_string()
    }
}

fn help() -> String {
    "Type a task and press Enter. While it runs, Ctrl-C stops it and keeps the conversation.\n\
     /help     this help\n\
     /tools    the tools the model can use\n\
     /clear    forget the conversation and start afresh\n\
     /compact  summarise the history to free context\n\
     /rewind   back to before a turn: the files, the conversation or both\n\
     /exit     leave (also Ctrl-D, or Ctrl-C on an empty line)"
        .to_string()
}

fn tools(registry: &Registry, paint: Paint) -> String {
    let specs = registry.definitions();
    let width = specs.iter().map(|s| s.name.len()).max().unwrap_or(4);
    specs
        .iter()
        .map(|s| {
            format!(
                "{}  {}",
                paint.bold(&format!("{:<width$}", s.name)),
                paint.dim(&render::clip(s.summary(), 90))
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What is on the terminal: the streamed text's line, the spinner.
pub(super) struct Screen {
    pub(super) paint: Paint,
    lines: EventLines,
    /// The cursor is after streamed text, not at the start of a line.
    line_open: bool,
    /// Text of the current step has streamed.
    streamed: bool,
    /// The spinner's label and since when; `None`: no spinner.
    spinner: Option<(String, Instant)>,
    /// The spinner is on screen.
    spinner_drawn: bool,
    frame: usize,
    last_output: Instant,
    last_interrupt: Option<Instant>,
    /// The history was compacted during the last command.
    compacted: bool,
}

impl Screen {
    fn new(paint: Paint, registry: Arc<Registry>) -> Screen {
        Screen {
            paint,
            lines: EventLines::new(paint, registry, true),
            line_open: false,
            streamed: false,
            spinner: None,
            spinner_drawn: false,
            frame: 0,
            last_output: Instant::now(),
            last_interrupt: None,
            compacted: false,
        }
    }

    /// Shows the spinner with `label`.
    fn spin(&mut self, label: &str) {
        match &mut self.spinner {
            Some((l, _)) if l == label => {}
            _ => self.spinner = Some((label.to_string(), Instant::now())),
        }
    }

    /// Renders events until the command ends; `cancel` stops it.
    fn wait(
        &mut self,
        rx: &Receiver<UiEvent>,
        cancel: &CancellationToken,
        editor: &mut DefaultEditor,
    ) -> Flow {
        let flow = loop {
            match rx.recv_timeout(TICK) {
                Err(RecvTimeoutError::Timeout) => self.tick(),
                Err(RecvTimeoutError::Disconnected) => break Flow::Exit,
                Ok(UiEvent::Event(event)) => self.event(&event),
                Ok(UiEvent::Approval(ask, reply)) => {
                    let answer = self.approve(&ask, editor, cancel);
                    let _ = reply.send(answer);
                }
                Ok(UiEvent::Questions(questions, reply)) => {
                    let answers = self.questions(&questions, cancel);
                    let _ = reply.send(answers);
                }
                Ok(UiEvent::Interrupt) => {
                    if self.interrupt(cancel) == Flow::Exit {
                        break Flow::Exit;
                    }
                }
                Ok(UiEvent::Done) => break Flow::Continue,
            }
        };
        self.spinner = None;
        self.clear_spinner();
        self.close_line();
        flow
    }

    /// Ctrl-C: stops the command; a second one soon after leaves.
    fn interrupt(&mut self, cancel: &CancellationToken) -> Flow {
        let now = Instant::now();
        if self
            .last_interrupt
            .is_some_and(|t| now.duration_since(t) < DOUBLE_INTERRUPT)
        {
            cancel.cancel();
            self.say(&self.paint.yellow("⏹ leaving"));
            return Flow::Exit;
        }
        self.last_interrupt = Some(now);
        if !cancel.is_cancelled() {
            cancel.cancel();
            self.say(
                &self
                    .paint
                    .yellow("⏹ interrupted: the conversation is kept (Ctrl-C again to leave)"),
            );
        }
        Flow::Continue
    }

    fn event(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::StepStarted { .. } => {
                self.streamed = false;
                self.spin("thinking");
            }
            AgentEvent::TextDelta { text } => {
                self.write_text(text, false);
            }
            AgentEvent::ReasoningDelta { text } => {
                self.write_text(text, true);
            }
            AgentEvent::AssistantMessage { text, .. } => {
                // A provider that did not stream: the text whole.
                if !self.streamed && !text.trim().is_empty() {
                    self.write_text(text.trim_end(), false);
                }
                self.close_line();
                self.spin("working");
            }
            // A local server still reading the prompt: the spinner says so, and
            // for how long.
            AgentEvent::Waiting {
                elapsed_ms,
                prompt_tokens,
            } => {
                self.spin(&format!(
                    "waiting for the model: {} s (it reads a prompt of about {} tokens first)",
                    elapsed_ms / 1000,
                    toolbelt_core::output::group(*prompt_tokens)
                ));
            }
            AgentEvent::ToolCall { summary, .. } => {
                self.lines.event(event);
                self.spin(summary);
            }
            AgentEvent::ToolEvent { tool, message, .. } => {
                let lines = self.lines.event(event);
                if lines.is_empty() && !self.lines.quiet_events(tool) {
                    // A tool saying what it does: the spinner shows it.
                    self.spin(&render::clip(message.lines().next().unwrap_or(""), 80));
                }
                for line in lines {
                    self.say(&line);
                }
            }
            AgentEvent::ToolResult { .. } => {
                for line in self.lines.event(event) {
                    self.say(&line);
                }
                let next = self.lines.still_running().unwrap_or("thinking").to_string();
                self.spin(&next);
            }
            // A subagent at work: its progress is the spinner's one line.
            AgentEvent::Subagent {
                background: false,
                state,
                label,
                tool_calls,
                last,
                ..
            } if state == "running" || state == "queued" => {
                let mut line = format!(
                    "task \"{label}\" — {}",
                    render::count(*tool_calls, "tool call")
                );
                if state == "queued" {
                    line.push_str(" (waiting for a free slot)");
                } else if let Some(last) = last {
                    line.push_str(&format!(" · {last}"));
                }
                self.spin(&line);
            }
            AgentEvent::Compacted { .. } => {
                self.compacted = true;
                for line in self.lines.event(event) {
                    self.say(&line);
                }
            }
            AgentEvent::RunEnded {
                outcome,
                message,
                steps,
                tool_calls,
                usage,
            } => {
                self.spinner = None;
                self.clear_spinner();
                self.close_line();
                let p = self.paint;
                match outcome.as_str() {
                    "final_answer" => {}
                    "cancelled" => self.say(&p.yellow("⏹ cancelled")),
                    _ => self.say(&p.red(&format!("✗ {outcome}: {message}"))),
                }
                self.say(&p.dim(&format!(
                    "── {}",
                    render::footer(*steps, *tool_calls, usage)
                )));
            }
            other => {
                for line in self.lines.event(other) {
                    self.say(&line);
                }
            }
        }
    }

    /// Asks the person about `ask`: `[y]es / [n]o / [a]lways`, and after a no, why.
    fn approve(
        &mut self,
        ask: &Ask,
        editor: &mut DefaultEditor,
        cancel: &CancellationToken,
    ) -> Answer {
        let p = self.paint;
        self.clear_spinner();
        self.close_line();
        let rule = ask
            .rule
            .as_deref()
            .map(|r| format!(" (rule {r})"))
            .unwrap_or_default();
        self.say(&format!(
            "{} {} needs your approval{rule}:",
            p.yellow("?"),
            p.bold(&ask.tool)
        ));
        for line in render::approval_lines(p, ask) {
            self.say(&line);
        }
        self.write(&format!(
            "Allow? {} ",
            p.bold("[y]es / [n]o / [a]lways for this session")
        ));
        let key = read_key();
        let answer = match key {
            Key::Yes => {
                self.say("yes");
                Answer::Yes
            }
            Key::Always => {
                self.say("always");
                Answer::Always
            }
            Key::No => {
                self.say("no");
                let reason = match editor.readline("Why not? (optional, Enter to skip) ") {
                    Ok(r) if !r.trim().is_empty() => Some(r.trim().to_string()),
                    _ => None,
                };
                Answer::No(reason)
            }
            Key::Interrupt => {
                self.say("no");
                self.interrupted(cancel);
                Answer::No(Some(INTERRUPTED.into()))
            }
        };
        self.last_output = Instant::now();
        answer
    }

    /// Puts the model's `questions` to the person with the picker, one after
    /// another; Esc declines them all, Ctrl-C declines them and stops the run.
    fn questions(&mut self, questions: &[Question], cancel: &CancellationToken) -> Answers {
        let p = self.paint;
        self.clear_spinner();
        self.close_line();
        let what = match questions.len() {
            1 => "a question".to_string(),
            n => format!("{n} questions"),
        };
        self.say(&format!("{} The model has {what} for you:", p.yellow("?")));
        let outcome = picker::ask(p, questions);
        self.last_output = Instant::now();
        match outcome {
            Outcome::Answered(answers) => Answers::Answered(answers),
            Outcome::Declined => Answers::Declined { reason: None },
            Outcome::Interrupted => {
                self.interrupted(cancel);
                Answers::Declined {
                    reason: Some(INTERRUPTED.into()),
                }
            }
        }
    }

    /// Ctrl-C read as a key (while a prompt waits for it): stops the run, and a
    /// second Ctrl-C soon after leaves.
    fn interrupted(&mut self, cancel: &CancellationToken) {
        self.last_interrupt = Some(Instant::now());
        cancel.cancel();
        self.say(
            &self
                .paint
                .yellow("⏹ interrupted: the conversation is kept (Ctrl-C again to leave)"),
        );
    }

    /// Streamed text (reasoning dimmed).
    fn write_text(&mut self, text: &str, reasoning: bool) {
        if text.is_empty() {
            return;
        }
        self.clear_spinner();
        self.streamed = true;
        let shown = if reasoning {
            self.paint.dim(text)
        } else {
            text.to_string()
        };
        self.write(&shown);
        self.line_open = !text.ends_with('\n');
    }

    /// A whole line.
    pub(super) fn say(&mut self, line: &str) {
        self.clear_spinner();
        self.close_line();
        self.write(&format!("{line}\n"));
    }

    fn close_line(&mut self) {
        if self.line_open {
            self.write("\n");
            self.line_open = false;
        }
    }

    pub(super) fn write(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.last_output = Instant::now();
    }

    /// Turns the spinner, when one is due and the cursor is at a line's start.
    fn tick(&mut self) {
        let Some((label, since)) = &self.spinner else {
            return;
        };
        if self.line_open || self.last_output.elapsed() < SPINNER_DELAY {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let width = terminal::size().map_or(80, |(w, _)| usize::from(w));
        let elapsed = format!(" {:.1}s", since.elapsed().as_secs_f64());
        let room = width.saturating_sub(elapsed.chars().count() + 4).max(10);
        let text = format!(
            "{} {}{}",
            FRAMES[self.frame],
            render::clip(label, room),
            elapsed
        );
        let mut out = std::io::stdout().lock();
        let _ = crossterm::queue!(
            out,
            MoveToColumn(0),
            Clear(ClearType::CurrentLine),
            crossterm::style::Print(self.paint.dim(&text))
        );
        let _ = out.flush();
        self.spinner_drawn = true;
    }

    fn clear_spinner(&mut self) {
        if !self.spinner_drawn {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = crossterm::queue!(out, MoveToColumn(0), Clear(ClearType::CurrentLine));
        let _ = out.flush();
        self.spinner_drawn = false;
    }
}

/// An answer key.
pub(super) enum Key {
    Yes,
    No,
    Always,
    Interrupt,
}

/// Reads `y`, `n` or `a` (or Ctrl-C, Esc) from the terminal in raw mode.
pub(super) fn read_key() -> Key {
    if terminal::enable_raw_mode().is_err() {
        return read_key_line();
    }
    let key = loop {
        match event::read() {
            Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => match k.code {
                KeyCode::Char('c' | 'd') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    break if k.code == KeyCode::Char('c') {
                        Key::Interrupt
                    } else {
                        Key::No
                    };
                }
                KeyCode::Char('y' | 'Y') => break Key::Yes,
                KeyCode::Char('n' | 'N') | KeyCode::Esc => break Key::No,
                KeyCode::Char('a' | 'A') => break Key::Always,
                _ => {}
            },
            Ok(_) => {}
            Err(_) => break Key::No,
        }
    };
    let _ = terminal::disable_raw_mode();
    key
}

/// Without raw mode: a line, `y`, `n` or `a`.
fn read_key_line() -> Key {
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() {
        return Key::No;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Key::Yes,
        "a" | "always" => Key::Always,
        _ => Key::No,
    }
}
