//! What reaches the interactive screen, in one enum ([`UiEvent`]) that the run's
//! side (the event forwarder, the approver and the asker that reach the person,
//! the Ctrl-C watcher) sends and the screen receives; and what an approval carries
//! ([`Ask`], [`Answer`], [`Preview`]). This module imports none of the screen's
//! others.

use serde_json::Value;
use tokio::sync::oneshot;
use toolbelt_agent::AgentEvent;
use toolbelt_core::{Answers, Category, Question, ToolSpec};

/// What reaches the screen.
#[derive(Debug)]
pub enum UiEvent {
    /// An event of the run.
    Event(AgentEvent),
    /// A call that needs the person's approval, and where the answer goes.
    Approval(Ask, oneshot::Sender<Answer>),
    /// Questions for the person (`ask_user`), put one after another, and where
    /// the answers go.
    Questions(Vec<Question>, oneshot::Sender<Answers>),
    /// Ctrl-C (SIGINT) while a command runs.
    Interrupt,
    /// The command that was running finished.
    Done,
}

/// The sending side of the screen's channel.
pub type UiTx = std::sync::mpsc::Sender<UiEvent>;

/// A call to approve, owned, to be sent to the screen.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The tool as the model named it.
    pub tool: String,
    /// What the approval shows of the call's arguments.
    pub preview: Preview,
    /// What the rule looked at: the command of `bash`, the path of a file tool.
    pub subject: Option<String>,
    /// The call's arguments.
    pub arguments: Value,
    /// The rule that asks, as written.
    pub rule: Option<String>,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Yes,
    /// Run it and every later call the same rule covers, for this session.
    Always,
    /// Don't; the reason goes back to the model.
    No(Option<String>),
}

/// What an approval shows of a call, by what its tool declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preview {
    /// The command line (a shell tool whose key argument is `command`).
    Command,
    /// One replacement: `old_string` by `new_string` in a file.
    Edit,
    /// Several replacements (`edits`) in a file.
    Edits,
    /// A file's new `content`.
    Write,
    /// A `patch` of files.
    Patch,
    /// The subject and the arguments as JSON.
    Arguments,
}

impl Preview {
    /// The preview of the tool whose (canonical) spec is `spec`: shell tools by
    /// their key argument, file-writing tools by the arguments that carry their
    /// change.
    pub fn of(spec: &ToolSpec) -> Preview {
        if spec.category == Category::Shell && spec.key_argument.as_deref() == Some("command") {
            return Preview::Command;
        }
        if !spec.permissions.iter().any(|p| p == "fs:write") {
            return Preview::Arguments;
        }
        let has = |name: &str| {
            spec.input_schema
                .get("properties")
                .is_some_and(|p| p.get(name).is_some())
        };
        if has("patch") {
            Preview::Patch
        } else if has("edits") {
            Preview::Edits
        } else if has("old_string") && has("new_string") {
            Preview::Edit
        } else if has("content") {
            Preview::Write
        } else {
            Preview::Arguments
        }
    }
}

/// How a run's tool events show a tool, by what its spec declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// A planning tool that touches nothing (`think`, `ask_user`): its event is
    /// the thought, the questions and answers are on the screen already, and its
    /// result (unless an error) adds no line.
    Thought,
    /// A planning tool that keeps lists in the store (the todo tools): the list
    /// is drawn from its result, so its progress events are not shown.
    Plan,
    /// Any other tool: a line when the call ends.
    Call,
}

impl Shown {
    /// How the tool whose (canonical) spec is `spec` is shown.
    pub fn of(spec: &ToolSpec) -> Shown {
        if spec.category != Category::Planning {
            Shown::Call
        } else if spec.permissions.is_empty() {
            Shown::Thought
        } else if spec.permissions.iter().any(|p| p == "store:write") {
            Shown::Plan
        } else {
            Shown::Call
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::Parser;
    use pretty_assertions::assert_eq;

    use super::*;

    /// The previews and looks of every tool the binary serves (the built-in
    /// tools, `message` and `cron` with a channel, the subagent tools) are the ones
    /// the screen showed when it chose them by tool name.
    #[test]
    fn every_tool_is_shown_as_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("toolbelt.toml");
        std::fs::write(
            &config,
            "[agent]\nmodel = \"m\"\n[channels.f]\nkind = \"file\"\npath = \"out.txt\"\n",
        )
        .unwrap();
        let dir_arg = dir.path().display().to_string();
        let state = dir.path().join("state").display().to_string();
        let cli = crate::cli::Cli::try_parse_from([
            "toolbelt",
            "--root",
            &dir_arg,
            "--state-dir",
            &state,
            "tools",
        ])
        .unwrap();
        let settings = crate::settings::Settings::new(&cli.global).unwrap();
        let registry = crate::workspace::Workspace::build(&settings, true, false)
            .unwrap()
            .registry;
        for name in ["bash", "message", "cron", "task", "spawn"] {
            assert!(registry.has(name), "{name}");
        }
        let mut previews = BTreeMap::new();
        let mut looks = BTreeMap::new();
        for spec in registry.definitions() {
            let tool = registry.get(&spec.name).unwrap();
            let spec = tool.spec();
            let preview = Preview::of(spec);
            if preview != Preview::Arguments {
                previews.insert(spec.name.clone(), preview);
            }
            let shown = Shown::of(spec);
            if shown != Shown::Call {
                looks.insert(spec.name.clone(), shown);
            }
        }
        assert_eq!(
            previews,
            BTreeMap::from([
                ("apply_patch".to_string(), Preview::Patch),
                ("bash".to_string(), Preview::Command),
                ("edit_file".to_string(), Preview::Edit),
                ("multi_edit".to_string(), Preview::Edits),
                ("write_file".to_string(), Preview::Write),
            ])
        );
        assert_eq!(
            looks,
            BTreeMap::from([
                ("ask_user".to_string(), Shown::Thought),
                ("set_todo_list".to_string(), Shown::Plan),
                ("think".to_string(), Shown::Thought),
                ("update_todos".to_string(), Shown::Plan),
            ])
        );
    }
}
