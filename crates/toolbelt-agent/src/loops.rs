//! Loops across steps: a model that goes round the same two or three calls with
//! the same results (A-B-A-B, A-B-C-A-B-C), and a call that changes nothing,
//! again. ([`crate::guard::Repeats`] sees the same call step after step.)
//!
//! A step is what its calls were and what they gave: the calls' keys with a
//! digest of each result. A cycle of [`MIN_CYCLE`] to [`MAX_CYCLE`] steps that
//! has come round [`LOOP_WARN_ROUNDS`] times in a row gets a reminder naming it;
//! at [`LOOP_STOP_ROUNDS`] the run stops.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use serde_json::Value;
use toolbelt_core::{Envelope, Status};

/// The shortest cycle looked for, in steps (one step repeated is a repeat).
pub(crate) const MIN_CYCLE: usize = 2;
/// The longest cycle looked for, in steps.
pub(crate) const MAX_CYCLE: usize = 3;
/// Rounds of the same cycle in a row that get a reminder naming it.
pub(crate) const LOOP_WARN_ROUNDS: usize = 2;
/// Rounds of the same cycle in a row that end the run.
pub(crate) const LOOP_STOP_ROUNDS: usize = 3;

/// The steps of a turn with calls, and the calls that changed nothing.
#[derive(Debug, Default)]
pub(crate) struct Loops {
    /// Each step with calls: its key (calls and result digests) and how it reads.
    steps: Vec<(u64, String)>,
    /// Calls (by key) that changed nothing, and how often.
    no_ops: BTreeMap<String, usize>,
}

/// A cycle seen at the end of the steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cycle {
    /// Steps in one round.
    pub(crate) length: usize,
    /// Rounds in a row.
    pub(crate) rounds: usize,
    /// The steps of one round, as they read (`read_file a.py`).
    pub(crate) steps: Vec<String>,
}

impl Cycle {
    /// The round as it reads: `read_file a.py → read_file b.py`.
    pub(crate) fn path(&self) -> String {
        self.steps.join(" → ")
    }
}

/// One call of a step as the guard sees it: its key, how it reads, and its result.
pub(crate) struct StepCall<'a> {
    /// [`crate::guard::call_key`] of the call.
    pub(crate) key: &'a str,
    /// How it reads (the call's one-line summary).
    pub(crate) label: &'a str,
    /// What it gave.
    pub(crate) envelope: &'a Envelope,
}

impl Loops {
    /// Records a step's calls; the cycle the steps end in now, if any.
    pub(crate) fn step(&mut self, calls: &[StepCall<'_>]) -> Option<Cycle> {
        if calls.is_empty() {
            return None;
        }
        let mut h = DefaultHasher::new();
        for c in calls {
            c.key.hash(&mut h);
            c.envelope.status.as_str().hash(&mut h);
            c.envelope.text.hash(&mut h);
        }
        let label = calls
            .iter()
            .map(|c| {
                if is_no_op(c.envelope) {
                    format!("{} (unchanged)", c.label)
                } else if c.envelope.status == Status::Error {
                    format!("{} (error)", c.label)
                } else {
                    c.label.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join(" + ");
        self.steps.push((h.finish(), label));
        self.cycle()
    }

    /// The shortest cycle the steps end in, with its rounds in a row.
    fn cycle(&self) -> Option<Cycle> {
        let keys: Vec<u64> = self.steps.iter().map(|s| s.0).collect();
        for length in MIN_CYCLE..=MAX_CYCLE {
            let round = &keys[keys.len().saturating_sub(length)..];
            // One step repeated is the repeat guard's; a round that is a shorter
            // cycle's twice was seen as that one.
            if round.len() < length || round.iter().all(|k| *k == round[0]) {
                continue;
            }
            let mut rounds = 1;
            while keys.len() >= (rounds + 1) * length {
                let start = keys.len() - (rounds + 1) * length;
                if keys[start..start + length] != *round {
                    break;
                }
                rounds += 1;
            }
            if rounds >= LOOP_WARN_ROUNDS {
                let from = self.steps.len() - length;
                return Some(Cycle {
                    length,
                    rounds,
                    steps: self.steps[from..].iter().map(|s| s.1.clone()).collect(),
                });
            }
        }
        None
    }

    /// Records what a call gave; true when it changed nothing and the same call
    /// changed nothing before in this turn.
    pub(crate) fn no_op_again(&mut self, key: &str, envelope: &Envelope) -> bool {
        if !is_no_op(envelope) {
            return false;
        }
        let seen = self.no_ops.entry(key.to_string()).or_default();
        *seen += 1;
        *seen >= 2
    }
}

/// True when a call changed nothing: a write whose content the file already
/// held (`changed: false`), an edit whose new text equals the old or leaves the
/// file as it was.
pub(crate) fn is_no_op(env: &Envelope) -> bool {
    if env.data.get("changed") == Some(&Value::Bool(false))
        && env.data.get("dry_run") != Some(&Value::Bool(true))
    {
        return true;
    }
    if env.status == Status::Error {
        let reason = env.data.get("reason").and_then(Value::as_str);
        return matches!(reason, Some("identical" | "no_change"));
    }
    false
}

/// The reminder added to the last result of a step that ends a cycle's
/// `rounds`-th round.
pub(crate) fn loop_reminder(cycle: &Cycle) -> String {
    format!(
        "\n\n[Reminder: you are going round in a loop: the same {} calls with the same results, {} times in a row: {}. \
         Doing them again changes nothing. Do something different (read the file you need to change, \
         change it, or run the test), or finish. At {LOOP_STOP_ROUNDS} rounds the run stops.]",
        cycle.length,
        cycle.rounds,
        cycle.path()
    )
}

/// What ends a run that went round a cycle [`LOOP_STOP_ROUNDS`] times.
pub(crate) fn loop_stopped(cycle: &Cycle) -> String {
    format!(
        "the model went round the same {} calls with the same results {} times in a row ({}); the run was stopped",
        cycle.length,
        cycle.rounds,
        cycle.path()
    )
}

/// The reminder added to a call that changed nothing, again.
pub(crate) const NO_OP_AGAIN: &str = "\n\n[Reminder: this call changed nothing, again: the file already holds \
     exactly that. Repeating it will not help. Read the file to see what it holds now, then change what still \
     needs changing, or finish.]";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(text: &str) -> Envelope {
        Envelope::success(json!({}), text)
    }

    fn step(loops: &mut Loops, key: &str, e: &Envelope) -> Option<Cycle> {
        loops.step(&[StepCall {
            key,
            label: key,
            envelope: e,
        }])
    }

    #[test]
    fn a_b_a_b_is_named_at_the_second_round_and_stops_at_the_third() {
        let (a, b) = (env("A"), env("B"));
        let mut loops = Loops::default();
        assert_eq!(step(&mut loops, "a", &a), None);
        assert_eq!(step(&mut loops, "b", &b), None);
        assert_eq!(step(&mut loops, "a", &a), None);
        let warn = step(&mut loops, "b", &b).unwrap();
        assert_eq!((warn.length, warn.rounds), (2, 2));
        assert_eq!(warn.path(), "a → b");
        assert_eq!(step(&mut loops, "a", &a).map(|c| c.rounds), Some(2));
        let stop = step(&mut loops, "b", &b).unwrap();
        assert_eq!(stop.rounds, LOOP_STOP_ROUNDS);
    }

    #[test]
    fn a_b_c_cycles_are_seen_and_different_results_break_them() {
        let (a, b, c) = (env("A"), env("B"), env("C"));
        let mut loops = Loops::default();
        for e in [&a, &b, &c, &a, &b] {
            assert_eq!(step(&mut loops, &e.text.clone(), e), None);
        }
        let cycle = step(&mut loops, "C", &c).unwrap();
        assert_eq!((cycle.length, cycle.rounds), (3, 2));
        // The same calls with a result that changed are progress, not a loop.
        let mut loops = Loops::default();
        for (i, key) in ["a", "b", "a", "b", "a", "b"].iter().enumerate() {
            assert_eq!(step(&mut loops, key, &env(&i.to_string())), None);
        }
    }

    #[test]
    fn one_call_repeated_is_left_to_the_repeat_guard() {
        let a = env("A");
        let mut loops = Loops::default();
        for _ in 0..6 {
            assert_eq!(step(&mut loops, "a", &a), None);
        }
    }

    #[test]
    fn a_write_that_changes_nothing_twice_is_seen() {
        let unchanged = Envelope::success(json!({"changed": false}), "unchanged");
        let mut loops = Loops::default();
        assert!(!loops.no_op_again("w", &env("wrote")));
        assert!(!loops.no_op_again("w", &unchanged));
        assert!(loops.no_op_again("w", &unchanged));
    }
}
