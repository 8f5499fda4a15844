//! The guards a small model needs, and what they tell it.
//!
//! The loop in `agent` asks these for a verdict and sends the texts; none of them
//! knows the loop:
//!
//! - [`Repeats`]: the same call made step after step (reminded at
//!   `repeat_warn`, stopped at `repeat_stop`);
//! - [`Runaway`]: a reply that goes round in circles while it streams in;
//! - [`is_observation_echo`]: a reply that writes a tool's result (or an error)
//!   itself instead of a call or an answer;
//! - the nudges: the texts the model gets back when its reply cannot be taken as
//!   it is (cut by the output limit, empty, without an action, in prose before
//!   any tool was called, a call repeated).

use std::collections::BTreeMap;

use serde_json::Value;
use toolbelt_core::sync::lock;

use crate::options::Protocol;

/// Asks the model to go on after an answer cut by the output limit.
pub(crate) const CONTINUE_AFTER_CUT: &str =
    "(Your last answer was cut off by the output limit. Continue exactly where it stopped.)";

/// Replies without an action and without a final answer that the text protocol
/// sends back before it takes such a reply as the final answer.
pub(crate) const MAX_TEXT_NUDGES: usize = 2;

/// The reminder of the text protocol's format. It holds nothing that reads as an
/// action: a model that copies it runs nothing.
pub(crate) const TEXT_FORMAT_REMINDER: &str = "Observation (error): your reply had neither an action nor a final answer. \
     To use a tool, write a line that starts with the word Action and a colon, then the tool's name and its \
     arguments as a JSON object in square brackets, and stop there. When the task is done, write a line that \
     starts with Final Answer and a colon, then your answer.";

/// The reminder for a native reply that is empty or only repeats a tool's result.
pub(crate) const NOT_AN_ANSWER: &str = "Your reply held no call and no answer (it was empty, or it \
     repeated a tool result: results come from the tools, not from you). Call the next tool \
     you need, or answer the task in your own words.";

/// The reminder a model that ends its runs through the finish tool (`finish`)
/// gets for a reply without a call: how to call a tool in `protocol` (JSON
/// objects when `json` holds), and that the run ends only with the finish call.
/// It shows no tool's result and no conversation to continue.
pub(crate) fn call_finish_reminder(protocol: Protocol, json: bool, finish: &str) -> String {
    let how = match (protocol, json) {
        (Protocol::Native, _) => "Call a tool through the function-calling interface".to_string(),
        (Protocol::Text, false) => format!(
            "Reply with one line: the word Action, a colon, the tool's name and its arguments \
             as a JSON object in square brackets (for the answer: Action: {finish}[{{\"answer\": \"...\"}}])"
        ),
        (Protocol::Text, true) => format!(
            "Reply with one JSON object naming the tool and its arguments (for the answer: \
             {{\"name\": \"{finish}\", \"arguments\": {{\"answer\": \"...\"}}}})"
        ),
    };
    format!(
        "Your reply called no tool, so nothing happened. {how}: the next tool the task needs, or, \
         when the task is done, {finish} with your answer. Only {finish} ends the task."
    )
}

/// What a model is told when the server could not read the call it wrote
/// (llama.cpp: "Failed to parse tool call arguments as JSON"): what was wrong,
/// and one valid call.
pub(crate) fn malformed_call_reminder(server_said: &str, example: String) -> String {
    let example = if example.is_empty() {
        String::new()
    } else {
        format!(" For example: {example}")
    };
    format!(
        "Your last reply was not a valid tool call, so nothing was run: the server said: {server_said}. \
         Write the call again with its arguments as one valid JSON object (double quotes around \
         names and strings, no trailing commas, nothing after the closing brace).{example}"
    )
}

/// The result of a finish call made beside other calls: not taken.
pub(crate) fn finish_not_alone(finish: &str) -> String {
    format!(
        "ERROR: {finish} was not taken: it came with other calls, before their results. \
         Read their results; when the task is done, call {finish} alone."
    )
}

/// Added to a text-protocol observation when the reply also gave a final answer,
/// written before the model saw the results.
pub(crate) const FINAL_ANSWER_NOT_TAKEN: &str = "\n\n(Your reply also gave a final answer before seeing these observations; it was not taken. Give it again if it still holds.)";

/// Added to a text-protocol observation when the reply held more actions than the
/// one that was run.
pub(crate) fn actions_dropped(dropped: usize) -> String {
    format!(
        "\n\n(Only your first action was run; the other {dropped} were not. Write one action per reply and wait for its observation.)"
    )
}

/// Added to a text-protocol observation when the reply went on to write the
/// action's observation itself.
pub(crate) const OBSERVATION_IGNORED: &str = "\n\n(The text you wrote after your action, from `Observation:` on, was ignored: observations come from the tools.)";

/// Counts the same call made again and again: in consecutive steps, alone or
/// among others (a model that sends the same two calls step after step repeats
/// both).
#[derive(Debug, Default)]
pub(crate) struct Repeats {
    /// The calls of the last step that made calls, with their streaks.
    previous: BTreeMap<String, usize>,
    /// The calls of this step so far.
    current: BTreeMap<String, usize>,
}

impl Repeats {
    /// A new step with calls begins.
    pub(crate) fn next_step(&mut self) {
        self.previous = std::mem::take(&mut self.current);
    }

    /// Records a call; returns how many steps in a row it has now been made in.
    pub(crate) fn see(&mut self, key: String) -> usize {
        if let Some(&streak) = self.current.get(&key) {
            return streak;
        }
        let streak = self.previous.get(&key).map_or(1, |s| s + 1);
        self.current.insert(key, streak);
        streak
    }
}

/// What makes two calls the same: the tool's canonical name and the arguments,
/// with object keys sorted.
pub(crate) fn call_key(canonical_name: &str, arguments: &Value) -> String {
    format!("{canonical_name}\u{0}{}", canonical_json(arguments))
}

/// The reminder appended to the result of a call made `streak` times in a row
/// (from `repeat_warn` on); the run stops at `repeat_stop`.
pub(crate) fn repeat_reminder(streak: usize, repeat_stop: usize) -> String {
    format!(
        "\n\n[Reminder: you have made this exact call {streak} times in a row. Its result will not change; do something different or give your final answer. At {repeat_stop} repeats the run stops.]"
    )
}

/// The result of a call not run because it was made `streak` times in a row.
pub(crate) fn repeated_call_error(streak: usize) -> String {
    format!(
        "ERROR [REPEATED_CALL]: this exact call was made {streak} times in a row and was not run again; the run stops here."
    )
}

/// What the person is told when a reply was cut where it began repeating itself.
pub(crate) const RUNAWAY_NOTICE: &str =
    "the model was repeating itself; its reply was cut where the repetition began";

/// True when `text` is an observation the model wrote itself (most often one of
/// its errors, repeated): never a final answer.
pub(crate) fn is_observation_echo(text: &str) -> bool {
    let t = text.trim_start().trim_start_matches(['*', '`', '#', ' ']);
    t.starts_with("Observation")
        || t.starts_with("<tool_response>")
        || t.starts_with("ERROR [")
        || t.starts_with("ERROR:")
        || t.starts_with("Error: line ")
}

/// How much of a reply is looked at for repetition, from its end.
const RUNAWAY_WINDOW: usize = 4_096;
/// A repeating tail at least this long (and at least four copies of its unit) is
/// a model going round in circles.
const RUNAWAY_MIN_CHARS: usize = 400;
/// The longest repeating unit looked for, in bytes.
const RUNAWAY_MAX_PERIOD: usize = 300;

/// Watches a reply as it streams in for a model that repeats itself (the same
/// line or block again and again until the output limit).
#[derive(Debug, Default)]
pub(crate) struct Runaway {
    text: std::sync::Mutex<RunawayText>,
}

#[derive(Debug, Default)]
struct RunawayText {
    text: String,
    checked_at: usize,
    /// Where the repetition began (after its first copy), once seen.
    cut: Option<usize>,
}

impl Runaway {
    /// Adds streamed text; true when the reply has started repeating itself.
    pub(crate) fn push(&self, delta: &str) -> bool {
        let mut t = lock(&self.text);
        if t.cut.is_some() {
            return true;
        }
        t.text.push_str(delta);
        if t.text.len() < t.checked_at + 64 {
            return false;
        }
        t.checked_at = t.text.len();
        t.cut = repeating_tail(&t.text);
        t.cut.is_some()
    }

    /// True when the reply has started repeating itself.
    pub(crate) fn repeating(&self) -> bool {
        lock(&self.text).cut.is_some()
    }

    /// The reply up to where the repetition began.
    pub(crate) fn kept(&self) -> String {
        let t = lock(&self.text);
        let end = t.cut.unwrap_or(t.text.len());
        t.text[..end].to_string()
    }
}

/// Where `text` starts repeating itself: the end of the first copy of a unit that
/// repeats to the end, when the repeating part is long and has four copies or
/// more.
fn repeating_tail(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let from = bytes.len().saturating_sub(RUNAWAY_WINDOW);
    let tail = &bytes[from..];
    for period in 1..=RUNAWAY_MAX_PERIOD.min(tail.len() / 4) {
        // How far back from the end every byte equals the one a period before.
        let mut run = 0;
        while run + period < tail.len()
            && tail[tail.len() - 1 - run] == tail[tail.len() - 1 - run - period]
        {
            run += 1;
        }
        if run >= RUNAWAY_MIN_CHARS.max(3 * period) {
            let mut cut = from + tail.len() - run;
            while !text.is_char_boundary(cut) {
                cut += 1;
            }
            return Some(cut);
        }
    }
    None
}

/// JSON with object keys sorted, so that equal arguments compare equal.
fn canonical_json(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let sorted: BTreeMap<&String, Value> =
                    map.iter().map(|(k, v)| (k, sort(v))).collect();
                Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}
