//! Questions of agent runs waiting for the person at the web page: the model's
//! `ask_user` calls, put through [`PendingQuestions`] (an [`Asker`]) and answered
//! over `/v1/questions` (see [`crate::web`]).
//!
//! Each call's questions are held under an id of their own until they are
//! answered or declined, until nobody has answered within the wait (then they
//! count as declined, with that reason), or until the asking call goes away (a
//! cancelled run): whichever comes first removes them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use toolbelt_core::sync::lock;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use toolbelt_core::{Answer, Answers, AskError, Asker, BoxFuture, Question};

/// How long questions wait for an answer by default (10 minutes).
pub const DEFAULT_ANSWER_WAIT: Duration = Duration::from_secs(10 * 60);
/// How many calls' questions may wait at once by default; one more is refused.
pub const DEFAULT_MAX_PENDING: usize = 100;
/// Random bytes in a question set's id.
const ID_BYTES: usize = 8;

/// The questions waiting for an answer, shared by whoever asks (agent runs) and
/// whoever answers (the web page's API). Cheap to clone: clones share them.
#[derive(Clone)]
pub struct PendingQuestions {
    inner: Arc<Inner>,
}

struct Inner {
    wait: Duration,
    max_pending: usize,
    /// Orders the sets by when they were asked.
    seq: AtomicU64,
    pending: Mutex<HashMap<String, Entry>>,
}

/// One call's questions, waiting.
struct Entry {
    seq: u64,
    asked_at: i64,
    expires_at: i64,
    run_id: Option<String>,
    questions: Vec<Question>,
    reply: oneshot::Sender<Answers>,
}

/// One call's questions as `GET /v1/questions` lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pending {
    /// The id to answer them under (`POST /v1/questions/{id}`).
    pub id: String,
    /// When they were asked, in milliseconds since the epoch.
    pub asked_at: i64,
    /// When they stop waiting and count as declined, in milliseconds since the epoch.
    pub expires_at: i64,
    /// The agent run that asks (its transcript's id), when known.
    pub run_id: Option<String>,
    /// The questions, in order.
    pub questions: Vec<Question>,
}

/// An answer to pending questions: `{"answers": [...]}` or `{"decline": true,
/// "reason": "..."}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// One answer per question.
    #[serde(default)]
    pub answers: Option<Vec<ReplyAnswer>>,
    /// True to answer none of them.
    #[serde(default)]
    pub decline: bool,
    /// Why they are declined, for the model.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The answer to one question in a [`Reply`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyAnswer {
    /// The question's header.
    pub header: String,
    /// The labels picked: one at most, unless the question is multi-select.
    #[serde(default)]
    pub selected: Vec<String>,
    /// An answer in the person's own words.
    #[serde(default)]
    pub text: Option<String>,
}

/// Why a [`Reply`] was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// No questions wait under that id (never asked, answered already, expired,
    /// or their run stopped waiting).
    #[error(
        "no questions are waiting under {0:?}: they were answered, declined or withdrawn; see GET /v1/questions"
    )]
    NotPending(String),
    /// The reply does not fit the questions; they stay pending.
    #[error(transparent)]
    Invalid(#[from] InvalidReply),
}

impl Default for PendingQuestions {
    fn default() -> PendingQuestions {
        PendingQuestions::new()
    }
}

impl std::fmt::Debug for PendingQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingQuestions")
            .field("wait", &self.inner.wait)
            .field("max_pending", &self.inner.max_pending)
            .field("pending", &self.len())
            .finish()
    }
}

impl PendingQuestions {
    /// None pending; questions wait [`DEFAULT_ANSWER_WAIT`], at most
    /// [`DEFAULT_MAX_PENDING`] sets at once.
    pub fn new() -> PendingQuestions {
        PendingQuestions::with_limits(DEFAULT_ANSWER_WAIT, DEFAULT_MAX_PENDING)
    }

    /// None pending; questions wait `wait` for an answer, at most `max_pending`
    /// calls' questions at once. (A call through a registry is cut off after
    /// [`toolbelt_core::MAX_TIMEOUT_MS`] and a little more whatever the wait.)
    pub fn with_limits(wait: Duration, max_pending: usize) -> PendingQuestions {
        PendingQuestions {
            inner: Arc::new(Inner {
                wait,
                max_pending,
                seq: AtomicU64::new(0),
                pending: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// How long questions wait for an answer.
    pub fn wait(&self) -> Duration {
        self.inner.wait
    }

    /// How many calls' questions are waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none are waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The questions waiting, the oldest first.
    pub fn list(&self) -> Vec<Pending> {
        let pending = self.lock();
        let mut sets: Vec<(u64, Pending)> = pending
            .iter()
            .map(|(id, e)| {
                (
                    e.seq,
                    Pending {
                        id: id.clone(),
                        asked_at: e.asked_at,
                        expires_at: e.expires_at,
                        run_id: e.run_id.clone(),
                        questions: e.questions.clone(),
                    },
                )
            })
            .collect();
        sets.sort_by_key(|(seq, _)| *seq);
        sets.into_iter().map(|(_, p)| p).collect()
    }

    /// Answers (or declines) the questions waiting under `id`, which then stop
    /// waiting. Returns whether they were answered (false: declined).
    ///
    /// # Errors
    /// [`ReplyError::NotPending`] when nothing waits under `id`;
    /// [`ReplyError::Invalid`] when `reply` does not fit the questions (they stay
    /// pending).
    pub fn answer(&self, id: &str, reply: Reply) -> Result<bool, ReplyError> {
        let not_pending = || ReplyError::NotPending(id.to_string());
        let (entry, answers) = {
            let mut pending = self.lock();
            let questions = &pending.get(id).ok_or_else(not_pending)?.questions;
            let answers = resolve(reply, questions)?;
            (pending.remove(id).ok_or_else(not_pending)?, answers)
        };
        let answered = matches!(answers, Answers::Answered(_));
        // The asking call may have gone away meanwhile.
        entry.reply.send(answers).map_err(|_| not_pending())?;
        tracing::info!(target: "toolbelt::serve", id, answered, "questions answered on the web page");
        Ok(answered)
    }

    /// An asker that says which run asks: `run_id` holds the run's id once the
    /// run has one.
    pub fn for_run(&self, run_id: Arc<OnceLock<String>>) -> RunQuestions {
        RunQuestions {
            pending: self.clone(),
            run_id,
        }
    }

    /// Puts `questions` up for an answer, from the run `run_id` if known, and
    /// waits for it (at most [`PendingQuestions::wait`]; then they count as
    /// declined). Dropping the future withdraws them.
    ///
    /// # Errors
    /// [`AskError::Failed`] when there are no questions, too many are pending
    /// already, or no id can be made.
    pub async fn ask_from(
        &self,
        run_id: Option<String>,
        questions: &[Question],
    ) -> Result<Answers, AskError> {
        if questions.is_empty() {
            return Err(AskError::Failed("there are no questions to put".into()));
        }
        let (tx, rx) = oneshot::channel();
        let id = self.register(run_id, questions, tx)?;
        let _withdraw = Withdraw {
            pending: self,
            id: &id,
        };
        match tokio::time::timeout(self.inner.wait, rx).await {
            Ok(Ok(answers)) => Ok(answers),
            Ok(Err(_)) => Err(AskError::Failed("the questions were withdrawn".into())),
            Err(_) => {
                tracing::info!(target: "toolbelt::serve", id, "questions not answered in time");
                Ok(Answers::Declined {
                    reason: Some(format!(
                        "nobody answered within {}",
                        spoken(self.inner.wait)
                    )),
                })
            }
        }
    }

    /// Holds `questions` under a fresh id.
    fn register(
        &self,
        run_id: Option<String>,
        questions: &[Question],
        reply: oneshot::Sender<Answers>,
    ) -> Result<String, AskError> {
        let mut pending = self.lock();
        if pending.len() >= self.inner.max_pending {
            return Err(AskError::Failed(format!(
                "{} sets of questions are waiting for an answer on the web page already",
                pending.len()
            )));
        }
        let id = loop {
            let id = new_id()?;
            if !pending.contains_key(&id) {
                break id;
            }
        };
        let asked_at = toolbelt_store::now_ms();
        let wait_ms = i64::try_from(self.inner.wait.as_millis()).unwrap_or(i64::MAX);
        pending.insert(
            id.clone(),
            Entry {
                seq: self.inner.seq.fetch_add(1, Ordering::Relaxed),
                asked_at,
                expires_at: asked_at.saturating_add(wait_ms),
                run_id: run_id.clone(),
                questions: questions.to_vec(),
                reply,
            },
        );
        tracing::info!(
            target: "toolbelt::serve",
            id,
            run_id = run_id.as_deref().unwrap_or("-"),
            questions = questions.len(),
            "questions waiting for an answer on the web page"
        );
        Ok(id)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        lock(&self.inner.pending)
    }
}

impl Asker for PendingQuestions {
    fn ask<'a>(&'a self, questions: &'a [Question]) -> BoxFuture<'a, Result<Answers, AskError>> {
        Box::pin(self.ask_from(None, questions))
    }
}

/// The [`Asker`] of one agent run: [`PendingQuestions`] that know the run's id.
#[derive(Debug, Clone)]
pub struct RunQuestions {
    pending: PendingQuestions,
    run_id: Arc<OnceLock<String>>,
}

impl Asker for RunQuestions {
    fn ask<'a>(&'a self, questions: &'a [Question]) -> BoxFuture<'a, Result<Answers, AskError>> {
        Box::pin(self.pending.ask_from(self.run_id.get().cloned(), questions))
    }
}

/// Removes the questions it names when dropped (answered, expired or withdrawn).
struct Withdraw<'a> {
    pending: &'a PendingQuestions,
    id: &'a str,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.pending.lock().remove(self.id).is_some() {
            tracing::debug!(target: "toolbelt::serve", id = self.id, "questions withdrawn");
        }
    }
}

/// `reply` as the answers to `questions`, in their order, or what is wrong with it.
/// Why a reply does not fit its questions: the message says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidReply(String);

impl From<String> for InvalidReply {
    fn from(message: String) -> InvalidReply {
        InvalidReply(message)
    }
}

impl From<&str> for InvalidReply {
    fn from(message: &str) -> InvalidReply {
        InvalidReply(message.to_string())
    }
}

fn resolve(reply: Reply, questions: &[Question]) -> Result<Answers, InvalidReply> {
    match (reply.answers, reply.decline) {
        (Some(_), true) => Err(InvalidReply::from(
            "send either \"answers\" or \"decline\": true, not both",
        )),
        (None, true) => Ok(Answers::Declined {
            reason: reply
                .reason
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty()),
        }),
        (None, false) => Err(InvalidReply::from(
            "send {\"answers\": [{\"header\", \"selected\", \"text\"}, ...]} or {\"decline\": true}",
        )),
        (Some(_), false) if reply.reason.is_some() => Err(InvalidReply::from(
            "\"reason\" goes with \"decline\": true only",
        )),
        (Some(given), false) => resolve_answers(given, questions).map(Answers::Answered),
    }
}

/// One answer per question, matched by header (questions that share a header
/// take their answers in order).
fn resolve_answers(
    given: Vec<ReplyAnswer>,
    questions: &[Question],
) -> Result<Vec<Answer>, InvalidReply> {
    let mut slots: Vec<Option<Answer>> = vec![None; questions.len()];
    for (i, a) in given.into_iter().enumerate() {
        let at = format!("answers[{i}]");
        let mut same_header = questions
            .iter()
            .enumerate()
            .filter(|(_, q)| q.header == a.header)
            .peekable();
        if same_header.peek().is_none() {
            let headers: Vec<String> = questions
                .iter()
                .map(|q| format!("{:?}", q.header))
                .collect();
            return Err(InvalidReply::from(format!(
                "{at}.header: no question has the header {:?} (the headers: {})",
                a.header,
                headers.join(", ")
            )));
        }
        let Some((slot, question)) = same_header.find(|(j, _)| slots[*j].is_none()) else {
            return Err(InvalidReply::from(format!(
                "{at}: the question {:?} is answered twice",
                a.header
            )));
        };
        slots[slot] = Some(check_answer(&at, a, question)?);
    }
    questions
        .iter()
        .zip(slots)
        .map(|(q, slot)| {
            slot.ok_or_else(|| {
                InvalidReply::from(format!("no answer to the question {:?}", q.header))
            })
        })
        .collect()
}

/// `a` as the answer to `question`: picked labels among its options, one at most
/// unless multi-select; a question of one choice needs a pick or a text.
fn check_answer(at: &str, a: ReplyAnswer, question: &Question) -> Result<Answer, InvalidReply> {
    let labels: Vec<&str> = question.options.iter().map(|o| o.label.as_str()).collect();
    for (k, label) in a.selected.iter().enumerate() {
        if !labels.contains(&label.as_str()) {
            let listed: Vec<String> = labels.iter().map(|l| format!("{l:?}")).collect();
            return Err(InvalidReply::from(format!(
                "{at}.selected[{k}]: {label:?} is not an option of {:?} (the options: {})",
                question.header,
                listed.join(", ")
            )));
        }
        if a.selected[..k].contains(label) {
            return Err(InvalidReply::from(format!(
                "{at}.selected[{k}]: {label:?} is picked twice"
            )));
        }
    }
    let text = a
        .text
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty());
    if !question.multi_select {
        if a.selected.len() > 1 {
            return Err(InvalidReply::from(format!(
                "{at}.selected: {:?} takes one choice, not {}",
                question.header,
                a.selected.len()
            )));
        }
        if a.selected.is_empty() && text.is_none() {
            return Err(InvalidReply::from(format!(
                "{at}: pick one option of {:?} or answer in \"text\"",
                question.header
            )));
        }
    }
    Ok(Answer {
        header: a.header,
        selected: a.selected,
        text,
    })
}

/// A fresh id: `q-` and random hex.
fn new_id() -> Result<String, AskError> {
    let hex =
        crate::random_hex(ID_BYTES).map_err(|e| AskError::caused("no randomness for an id", e))?;
    Ok(format!("q-{hex}"))
}

/// `wait` in words: "10 minutes", "1 hour", "90 seconds".
fn spoken(wait: Duration) -> String {
    let secs = wait.as_secs();
    let (n, unit) = if secs >= 3600 && secs.is_multiple_of(3600) {
        (secs / 3600, "hour")
    } else if secs >= 60 && secs.is_multiple_of(60) {
        (secs / 60, "minute")
    } else if secs >= 1 {
        (secs, "second")
    } else {
        (
            u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
            "millisecond",
        )
    };
    format!("{n} {}", toolbelt_core::human::plural(n, unit))
}

#[cfg(test)]
#[path = "questions_tests.rs"]
mod tests;
