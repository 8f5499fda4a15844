//! `/rewind` on the interactive screen: back to before a turn of the run on it.
//!
//! The run's turns are listed with the start of their prompt and the files their
//! checkpoints changed; the person picks one ([`picker::choose`]), sees what a
//! rewind of the files would do (the plan, and the first lines of the changes it
//! takes back), chooses the code, the conversation or both, and confirms. Then
//! it is what `toolbelt agent --resume ID --rewind-to TURN` does ([`rewind`]):
//! the files through their checkpoints, the conversation forked into a new run,
//! which the screen goes on with.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use tokio::runtime::Runtime;
use toolbelt_agent::{Agent, transcript};
use toolbelt_checkpoint::{Checkpoints, RewindPlan, RewindRequest, checkpoint_diff};
use toolbelt_core::{Origin, Question, QuestionOption};

use super::super::picker;
use super::super::render::{self, Paint};
use super::super::rewind::{self, Done, Half};
use super::{Key, Screen, read_key};

/// The longest part of a prompt shown in the list of turns.
const PROMPT_CHARS: usize = 40;
/// The most paths named after a turn in the list.
const LISTED_FILES: usize = 3;
/// The most lines of the changes a rewind takes back, in all.
const PREVIEW_LINES: usize = 16;
/// The most lines of one path's change.
const PREVIEW_LINES_PER_PATH: usize = 6;

/// Makes the agent that goes on with the run of a transcript.
pub type Resume = Box<dyn Fn(&Path) -> Result<Agent>>;

/// What `/rewind` needs besides the screen.
pub struct Rewinder {
    /// Where the runs' transcripts are.
    pub runs_dir: PathBuf,
    /// The workspace's checkpoints; `None` when they are off.
    pub checkpoints: Option<Checkpoints>,
    pub resume: Resume,
}

/// The run on the screen, as the agent says.
#[derive(Debug, Clone)]
pub struct Current {
    pub run_id: String,
    /// Its transcript, once a turn has started.
    pub transcript: Option<PathBuf>,
}

/// One turn in the list.
struct TurnRow {
    turn: u32,
    prompt: String,
    files: Vec<String>,
}

impl Rewinder {
    /// `/rewind` for the run `current`: the agent to go on with when the
    /// conversation was forked.
    pub fn run(&self, screen: &mut Screen, rt: &Runtime, current: &Current) -> Option<Agent> {
        let p = screen.paint;
        let Some(path) = &current.transcript else {
            screen.say(&p.dim("There is nothing to rewind: this conversation has no turns yet."));
            return None;
        };
        let rows = match self.rows(rt, path) {
            Ok(rows) => rows,
            Err(e) => {
                screen.say(&p.red(&format!("✗ cannot read run {}: {e:#}", current.run_id)));
                return None;
            }
        };
        if rows.is_empty() {
            screen.say(&p.dim("There is nothing to rewind: this conversation has no turns yet."));
            return None;
        }
        if self.checkpoints.is_none() {
            screen.say(&p.yellow(
                "Checkpoints are off in this workspace ([checkpoints] enabled = false): \
                 the files cannot be rewound, only the conversation.",
            ));
        }
        let question = Question {
            header: "Rewind".into(),
            question: format!("Back to before which turn of run {}?", current.run_id),
            options: rows
                .iter()
                .map(|r| QuestionOption {
                    label: turn_label(r, self.checkpoints.is_some()),
                    description: String::new(),
                })
                .collect(),
            multi_select: false,
        };
        let picked = picker::choose(p, &question, rows.len() - 1)?;
        let turn = rows[picked].turn;

        let half = match &self.checkpoints {
            Some(checkpoints) => {
                self.preview(screen, rt, checkpoints, path, turn);
                choose_half(p, turn)?
            }
            None => Half::Conversation,
        };
        let what = match half {
            Half::Both => "the files and the conversation",
            Half::Code => "the files",
            Half::Conversation => "the conversation",
        };
        screen.write(&format!(
            "Rewind {what} to before turn {turn}? {} ",
            p.bold("[y]es / [n]o")
        ));
        if !matches!(read_key(), Key::Yes) {
            screen.say("no");
            screen.say(&p.dim("Nothing was rewound."));
            return None;
        }
        screen.say("yes");
        let checkpoints = self.checkpoints.as_ref();
        let done = match rewind::rewind(rt, half, path, &self.runs_dir, checkpoints, turn) {
            Ok(done) => done,
            Err(e) => {
                screen.say(&p.red(&format!("✗ {e:#}")));
                return None;
            }
        };
        let Done { files, forked } = done;
        let report = rewind::report(&current.run_id, turn, files.as_ref(), forked.as_ref());
        for line in report.lines() {
            screen.say(&p.dim(line));
        }
        let forked = forked?;
        match (self.resume)(&forked.path) {
            Ok(agent) => {
                screen.say(&p.green(&format!(
                    "✓ Now in run {}: the conversation as it was before turn {turn}.",
                    forked.run_id
                )));
                Some(agent)
            }
            Err(e) => {
                screen.say(&p.red(&format!(
                    "✗ cannot go on with run {}: {e:#} (toolbelt agent --resume {} can)",
                    forked.run_id, forked.run_id
                )));
                None
            }
        }
    }

    /// The turns of run `path`, with their prompts and the files they changed.
    fn rows(&self, rt: &Runtime, path: &Path) -> Result<Vec<TurnRow>> {
        let turns = transcript::turns(path)?;
        let prompts = prompts(path);
        let mut files = match &self.checkpoints {
            Some(c) => rt.block_on(rewind::files_by_turn(c, path, &self.runs_dir))?,
            None => BTreeMap::new(),
        };
        Ok(turns
            .starts
            .iter()
            .map(|s| TurnRow {
                turn: s.turn,
                prompt: prompts.get(&s.turn).cloned().unwrap_or_default(),
                files: files.remove(&s.turn).unwrap_or_default(),
            })
            .collect())
    }

    /// What rewinding the files to before `turn` would do: each path and what
    /// becomes of it, then the first lines of the changes taken back.
    fn preview(
        &self,
        screen: &mut Screen,
        rt: &Runtime,
        checkpoints: &Checkpoints,
        path: &Path,
        turn: u32,
    ) {
        let p = screen.paint;
        let planned = rt.block_on(async {
            let Some(to) = rewind::first_of_turn(checkpoints, path, &self.runs_dir, turn).await?
            else {
                return Ok(None);
            };
            let request = RewindRequest {
                to,
                dry_run: true,
                origin: Origin::new("rewind"),
                ..RewindRequest::default()
            };
            let plan = checkpoints.plan_rewind(&request).await?;
            let diffs = undone_diffs(p, checkpoints, &plan).await;
            anyhow::Ok(Some((plan, diffs)))
        });
        let (plan, diffs) = match planned {
            Ok(Some(planned)) => planned,
            Ok(None) => {
                screen.say(&p.dim(&format!(
                    "No file was changed from turn {turn} on: the files stay as they are."
                )));
                return;
            }
            Err(e) => {
                screen.say(&p.yellow(&format!("The files' rewind cannot be planned: {e:#}")));
                return;
            }
        };
        for line in plan_lines(p, &plan, turn) {
            screen.say(&line);
        }
        if !diffs.is_empty() {
            screen.say(&p.dim("What it takes back:"));
            for line in diffs {
                screen.say(&line);
            }
        }
    }
}

/// `"add a flag"  3 files: src/main.rs, README.md, …`
fn turn_label(row: &TurnRow, checkpoints: bool) -> String {
    let prompt = render::clip(row.prompt.lines().next().unwrap_or(""), PROMPT_CHARS);
    let mut label = format!("\"{prompt}\"");
    if !checkpoints {
        return label;
    }
    if row.files.is_empty() {
        label.push_str("  no file changed");
    } else {
        let mut names: Vec<&str> = row
            .files
            .iter()
            .take(LISTED_FILES)
            .map(String::as_str)
            .collect();
        if row.files.len() > LISTED_FILES {
            names.push("…");
        }
        label.push_str(&format!(
            "  {}: {}",
            render::count(row.files.len(), "file"),
            names.join(", ")
        ));
    }
    label
}

/// The plan of a rewind, for the screen.
fn plan_lines(p: Paint, plan: &RewindPlan, turn: u32) -> Vec<String> {
    let items: Vec<_> = plan.items.iter().filter(|i| i.action != "none").collect();
    if items.is_empty() {
        return vec![p.dim(&format!(
            "The files are already as they were before turn {turn} ({}).",
            plan.to
        ))];
    }
    let mut lines = vec![format!(
        "Rewinding the files to before turn {turn} ({}) would:",
        plan.to
    )];
    for item in &items {
        let why = match (&item.skipped, item.conflict) {
            (Some(why), _) => p.yellow(&format!(" (left alone: {why})")),
            (None, true) => p.yellow(" (changed outside toolbelt since: a conflict)"),
            (None, false) => String::new(),
        };
        lines.push(format!("  {:<9}{}{why}", item.action, item.path));
    }
    let conflicts = plan.conflicts();
    if !conflicts.is_empty() {
        lines.push(p.yellow(&format!(
            "{} in conflict: the files cannot be rewound from here \
             (toolbelt rewind {} --skip-conflicts or --force decides); \
             the conversation alone can.",
            render::count(conflicts.len(), "path"),
            plan.to
        )));
    }
    lines
}

/// The first lines of the changes the checkpoints `plan` undoes made, as they
/// were made (at most [`PREVIEW_LINES`]).
async fn undone_diffs(p: Paint, checkpoints: &Checkpoints, plan: &RewindPlan) -> Vec<String> {
    let mut out = Vec::new();
    let mut left_out = false;
    for cp in &plan.undoes {
        let Ok(id) = toolbelt_checkpoint::parse_id(cp) else {
            continue;
        };
        let Ok((_, diffs)) = checkpoint_diff(checkpoints, id).await else {
            continue;
        };
        for d in diffs {
            let Some(diff) = &d.diff else { continue };
            let body: Vec<&str> = diff
                .lines()
                .filter(|l| !l.starts_with("---") && !l.starts_with("+++"))
                .collect();
            if out.len() + 2 > PREVIEW_LINES {
                left_out = true;
                break;
            }
            out.push(format!(
                "  {} {}",
                p.bold(&d.path),
                p.dim(&format!("({} in {cp})", d.change))
            ));
            let room = PREVIEW_LINES_PER_PATH.min(PREVIEW_LINES - out.len());
            out.extend(render::diff_lines(p, &body.join("\n"), room));
        }
        if left_out {
            break;
        }
    }
    if left_out && let Some(last) = plan.undoes.last() {
        out.push(p.dim(&format!(
            "  … toolbelt checkpoints diff shows the rest ({} to {last})",
            plan.to
        )));
    }
    out
}

/// Code, conversation or both: `None` when the person cancels.
fn choose_half(p: Paint, turn: u32) -> Option<Half> {
    let option = |label: &str| QuestionOption {
        label: label.into(),
        description: String::new(),
    };
    let question = Question {
        header: "Rewind".into(),
        question: format!("What goes back to before turn {turn}?"),
        options: vec![
            option("Both: the files, and the conversation in a new run"),
            option("Code: the files only; the conversation goes on"),
            option("Conversation: a new run; the files stay as they are"),
        ],
        multi_select: false,
    };
    match picker::choose(p, &question, 0)? {
        0 => Some(Half::Both),
        1 => Some(Half::Code),
        _ => Some(Half::Conversation),
    }
}

/// The prompt of each turn of the transcript at `path`: the first user message
/// after its `turn` line (or, in a transcript without them, after the run's
/// start or the previous turn's end).
fn prompts(path: &Path) -> BTreeMap<u32, String> {
    let mut prompts = BTreeMap::new();
    let Ok(text) = std::fs::read_to_string(path) else {
        return prompts;
    };
    let mut pending: Option<u32> = None;
    let mut expect = false;
    let mut count = 0;
    for event in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match event.get("type").and_then(Value::as_str) {
            Some("run" | "end") => expect = true,
            Some("turn") => {
                let turn = event
                    .get("turn")
                    .and_then(Value::as_u64)
                    .and_then(|t| u32::try_from(t).ok())
                    .unwrap_or(count + 1);
                count = count.max(turn);
                pending = Some(turn);
                expect = false;
            }
            Some("message") => {
                let message = event.get("message");
                if message.and_then(|m| m.get("role")).and_then(Value::as_str) != Some("user") {
                    continue;
                }
                let turn = match pending.take() {
                    Some(t) => t,
                    None if expect => {
                        count += 1;
                        count
                    }
                    None => continue,
                };
                expect = false;
                let content = message
                    .and_then(|m| m.get("content"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                prompts.insert(turn, content.trim().to_string());
            }
            _ => {}
        }
    }
    prompts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_shows_its_prompt_and_first_files() {
        let row = TurnRow {
            turn: 2,
            prompt: "add a flag to the command line, and document it in the README".into(),
            files: vec![
                "src/main.rs".into(),
                "README.md".into(),
                "src/cli.rs".into(),
                "CHANGELOG.md".into(),
            ],
        };
        assert_eq!(
            turn_label(&row, true),
            "\"add a flag to the command line, and doc…\"  \
             4 files: src/main.rs, README.md, src/cli.rs, …"
        );
        let none = TurnRow {
            files: Vec::new(),
            prompt: "look around".into(),
            ..row
        };
        assert_eq!(turn_label(&none, true), "\"look around\"  no file changed");
        assert_eq!(turn_label(&none, false), "\"look around\"");
    }

    #[test]
    fn the_prompts_are_read_by_turn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let lines = [
            r#"{"type":"run","run_id":"r"}"#,
            r#"{"type":"turn","turn":1}"#,
            r#"{"type":"message","message":{"role":"user","content":"first one"}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":"ok"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"an observation"}}"#,
            r#"{"type":"end"}"#,
            r#"{"type":"message","message":{"role":"user","content":"no turn line"}}"#,
            r#"{"type":"end"}"#,
            r#"{"type":"turn","turn":3}"#,
            r#"{"type":"message","message":{"role":"user","content":"third\nline two"}}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let got = prompts(&path);
        assert_eq!(
            got.into_iter().collect::<Vec<_>>(),
            vec![
                (1, "first one".to_string()),
                (2, "no turn line".to_string()),
                (3, "third\nline two".to_string()),
            ]
        );
    }
}
