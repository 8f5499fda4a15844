//! Questions of agent runs waiting for the person at the web page: the model's
//! `ask_user` calls, put through [`PendingQuestions`] (an [`Asker`]) and answered
//! over `/v1/questions` (see [`crate::web`]).
//!
//! Each call's questions are held under an id of their own until they are
//! answered or declined, until nobody has answered within the wait (then they
//! count as declined, with that reason), or until the asking call goes away (a
//! cancelled run): whichever comes first removes them.
//!
//! Replicas of a server that share a store keep the questions there
//! ([`PendingQuestions::with_store`]): any replica lists them and takes an
//! answer, once; the asking replica looks for the answers to its waiting
//! questions every [`ANSWER_POLL_MS`] (at once when it took the answer itself).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;
use toolbelt_core::sync::lock;

use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;
use toolbelt_core::{Answer, Answers, AskError, Asker, BoxFuture, Question};
use toolbelt_store::{StoreError, StoreHandle};

use crate::questions_shared::{Shared, questions_of};

/// How long questions wait for an answer by default (10 minutes).
pub const DEFAULT_ANSWER_WAIT: Duration = Duration::from_secs(10 * 60);
/// How many calls' questions may wait at once by default; one more is refused.
pub const DEFAULT_MAX_PENDING: usize = 100;
/// Random bytes in a question set's id.
const ID_BYTES: usize = 8;
/// How often a replica whose runs wait looks in the store for their answers, in
/// milliseconds.
pub const ANSWER_POLL_MS: u64 = 250;

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
    pending: Mutex<Waiting>,
    /// The store the questions are kept in, when replicas share them.
    shared: Option<Shared>,
}

/// This process's runs' questions, waiting.
#[derive(Default)]
struct Waiting {
    entries: HashMap<String, Entry>,
    /// A task looks for their answers in the store.
    polling: bool,
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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// No questions wait under that id (never asked, answered already, expired,
    /// or their run stopped waiting).
    #[error(
        "no questions are waiting under {0:?}: they were answered, declined or withdrawn; see GET /v1/questions"
    )]
    NotPending(String),
    /// The questions were answered (or declined) already: the first answer stands.
    #[error(
        "the questions under {0:?} were answered already; the first answer stands (see GET /v1/questions)"
    )]
    Answered(String),
    /// The questions stopped waiting unanswered: their wait ran out (they
    /// counted as declined) or their run stopped.
    #[error(
        "the questions under {0:?} are no longer waiting: nobody answered within the wait, or their run stopped (see GET /v1/questions)"
    )]
    Expired(String),
    /// The reply does not fit the questions; they stay pending.
    #[error(transparent)]
    Invalid(#[from] InvalidReply),
    /// The store that keeps the questions failed.
    #[error("the questions cannot be reached in the store")]
    Store(#[source] StoreError),
    /// The questions kept in the store cannot be read.
    #[error("the questions under {id:?} cannot be read from the store")]
    Unreadable {
        /// The set.
        id: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
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
            .field("replica", &self.replica())
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
        PendingQuestions::build(wait, max_pending, None)
    }

    /// The same limits, the questions kept in `store` (as asked by `replica`, an
    /// id of this process), where every replica sharing the store lists and
    /// answers them. Questions waiting in `self` are not carried over: call it
    /// before any are asked.
    #[must_use]
    pub fn with_store(self, store: StoreHandle, replica: impl Into<String>) -> PendingQuestions {
        PendingQuestions::build(
            self.inner.wait,
            self.inner.max_pending,
            Some(Shared::new(store, replica.into())),
        )
    }

    fn build(wait: Duration, max_pending: usize, shared: Option<Shared>) -> PendingQuestions {
        PendingQuestions {
            inner: Arc::new(Inner {
                wait,
                max_pending,
                seq: AtomicU64::new(0),
                pending: Mutex::new(Waiting::default()),
                shared,
            }),
        }
    }

    /// The id this process's questions carry in the store, when they are kept there.
    pub fn replica(&self) -> Option<&str> {
        self.inner.shared.as_ref().map(Shared::replica)
    }

    /// How long questions wait for an answer.
    pub fn wait(&self) -> Duration {
        self.inner.wait
    }

    /// How many calls' questions of this process are waiting.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether none are waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The questions of this process waiting, the oldest first.
    pub fn list(&self) -> Vec<Pending> {
        let pending = self.lock();
        let mut sets: Vec<(u64, Pending)> = pending
            .entries
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

    /// The questions waiting, the oldest first: those of every replica when they
    /// are kept in the store (a set whose questions cannot be read is left out,
    /// with a warning), else [`PendingQuestions::list`].
    ///
    /// # Errors
    /// The store fails.
    pub async fn waiting(&self) -> Result<Vec<Pending>, StoreError> {
        let Some(shared) = &self.inner.shared else {
            return Ok(self.list());
        };
        let sets = shared.waiting(toolbelt_store::now_ms()).await?;
        Ok(sets
            .into_iter()
            .filter_map(|set| match questions_of(&set) {
                Ok(questions) => Some(Pending {
                    id: set.id,
                    asked_at: set.asked_ms,
                    expires_at: set.expires_ms,
                    run_id: set.run_id,
                    questions,
                }),
                Err(e) => {
                    tracing::warn!(target: "toolbelt::serve", id = set.id, "questions in the store cannot be read: {e}");
                    None
                }
            })
            .collect())
    }

    /// Answers (or declines) the questions waiting under `id`, which then stop
    /// waiting. Returns whether they were answered (false: declined). Kept in the
    /// store, they are answered once whichever replica takes the answer.
    ///
    /// # Errors
    /// [`ReplyError::NotPending`] when nothing waits under `id`
    /// ([`ReplyError::Answered`], [`ReplyError::Expired`]: no longer);
    /// [`ReplyError::Invalid`] when `reply` does not fit the questions (they stay
    /// pending); [`ReplyError::Store`] and [`ReplyError::Unreadable`] when the
    /// store fails.
    pub async fn answer(&self, id: &str, reply: Reply) -> Result<bool, ReplyError> {
        match &self.inner.shared {
            Some(shared) => self.answer_in_store(shared, id, reply).await,
            None => self.answer_here(id, reply),
        }
    }

    /// [`PendingQuestions::answer`] in the store.
    async fn answer_in_store(
        &self,
        shared: &Shared,
        id: &str,
        reply: Reply,
    ) -> Result<bool, ReplyError> {
        let not_waiting = |set: Option<toolbelt_store::StoredQuestion>| match set {
            None => ReplyError::NotPending(id.to_string()),
            Some(set) if set.answers.is_some() => ReplyError::Answered(id.to_string()),
            Some(_) => ReplyError::Expired(id.to_string()),
        };
        let now = toolbelt_store::now_ms();
        let set = shared.get(id).await.map_err(ReplyError::Store)?;
        let set = match set {
            Some(set) if set.is_waiting(now) => set,
            other => return Err(not_waiting(other)),
        };
        let questions = questions_of(&set).map_err(|source| ReplyError::Unreadable {
            id: id.to_string(),
            source,
        })?;
        let answers = resolve(reply, &questions)?;
        let answered = matches!(answers, Answers::Answered(_));
        if !shared
            .record(id, &answers, now)
            .await
            .map_err(ReplyError::Store)?
        {
            // Answered through another replica meanwhile, or just expired.
            return Err(not_waiting(
                shared.get(id).await.map_err(ReplyError::Store)?,
            ));
        }
        // Asked by this process: its run goes on now, not at the next look.
        let entry = self.lock().entries.remove(id);
        if let Some(entry) = entry {
            let _ = entry.reply.send(answers);
        }
        tracing::info!(target: "toolbelt::serve", id, answered, asked_by = set.replica, "questions answered on the web page");
        Ok(answered)
    }

    /// [`PendingQuestions::answer`] in this process's memory.
    fn answer_here(&self, id: &str, reply: Reply) -> Result<bool, ReplyError> {
        let not_pending = || ReplyError::NotPending(id.to_string());
        let (entry, answers) = {
            let mut pending = self.lock();
            let questions = &pending.entries.get(id).ok_or_else(not_pending)?.questions;
            let answers = resolve(reply, questions)?;
            (pending.entries.remove(id).ok_or_else(not_pending)?, answers)
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
        let (id, asked_at, expires_at) = self.register(run_id.clone(), questions, tx)?;
        let mut withdraw = Withdraw {
            pending: self,
            id: &id,
            in_store: false,
        };
        if let Some(shared) = &self.inner.shared {
            shared
                .put(&id, run_id.as_deref(), questions, asked_at, expires_at)
                .await
                .map_err(|e| AskError::caused("the questions cannot be kept in the store", e))?;
            withdraw.in_store = true;
            self.watch();
        }
        let waited = tokio::time::timeout(self.inner.wait, rx).await;
        // Answered or expired: nothing to withdraw from the store.
        withdraw.in_store = false;
        match waited {
            Ok(Ok(answers)) => Ok(answers),
            Ok(Err(_)) => Err(AskError::Failed("the questions were withdrawn".into())),
            Err(_) => {
                // An answer taken by another replica in the last moments counts.
                if let Some(shared) = &self.inner.shared
                    && let Ok(found) = shared.answered(std::slice::from_ref(&id)).await
                    && let Some((_, answers)) = found.into_iter().next()
                {
                    return Ok(answers);
                }
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

    /// Holds `questions` under a fresh id; returns it, when they were asked and
    /// when they stop waiting.
    fn register(
        &self,
        run_id: Option<String>,
        questions: &[Question],
        reply: oneshot::Sender<Answers>,
    ) -> Result<(String, i64, i64), AskError> {
        let mut pending = self.lock();
        if pending.entries.len() >= self.inner.max_pending {
            return Err(AskError::Failed(format!(
                "{} sets of questions are waiting for an answer on the web page already",
                pending.entries.len()
            )));
        }
        let id = loop {
            let id = new_id()?;
            if !pending.entries.contains_key(&id) {
                break id;
            }
        };
        let asked_at = toolbelt_store::now_ms();
        let wait_ms = i64::try_from(self.inner.wait.as_millis()).unwrap_or(i64::MAX);
        let expires_at = asked_at.saturating_add(wait_ms);
        pending.entries.insert(
            id.clone(),
            Entry {
                seq: self.inner.seq.fetch_add(1, Ordering::Relaxed),
                asked_at,
                expires_at,
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
        Ok((id, asked_at, expires_at))
    }

    /// Starts looking for the answers to this process's questions in the store,
    /// unless a look is under way.
    fn watch(&self) {
        {
            let mut pending = self.lock();
            if pending.polling || pending.entries.is_empty() {
                return;
            }
            pending.polling = true;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(poll_answers(Arc::downgrade(&self.inner)));
            }
            Err(_) => self.lock().polling = false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        lock(&self.inner.pending)
    }
}

/// Every [`ANSWER_POLL_MS`], hands the answers found in the store to the
/// questions of this process that wait for them, until none waits (or the
/// questions are dropped).
async fn poll_answers(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(Duration::from_millis(ANSWER_POLL_MS)).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let Some(shared) = &inner.shared else {
            return;
        };
        let ids: Vec<String> = {
            let mut pending = lock(&inner.pending);
            if pending.entries.is_empty() {
                pending.polling = false;
                return;
            }
            pending.entries.keys().cloned().collect()
        };
        match shared.answered(&ids).await {
            Ok(found) => {
                for (id, answers) in found {
                    let entry = lock(&inner.pending).entries.remove(&id);
                    if let Some(entry) = entry {
                        tracing::info!(target: "toolbelt::serve", id, "questions answered through another replica");
                        let _ = entry.reply.send(answers);
                    }
                }
            }
            Err(e) => tracing::warn!(
                target: "toolbelt::serve",
                "cannot look for answers in the store: {}",
                toolbelt_core::error_chain(&e)
            ),
        }
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

/// Removes the questions it names when dropped (answered, expired or withdrawn),
/// and withdraws them from the store when they still wait there (the asking
/// call went away).
struct Withdraw<'a> {
    pending: &'a PendingQuestions,
    id: &'a str,
    in_store: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if self.pending.lock().entries.remove(self.id).is_some() {
            tracing::debug!(target: "toolbelt::serve", id = self.id, "questions withdrawn");
        }
        let Some(shared) = self.pending.inner.shared.as_ref().filter(|_| self.in_store) else {
            return;
        };
        let (shared, id) = (shared.clone(), self.id.to_string());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = shared.withdraw(&id).await {
                    tracing::warn!(
                        target: "toolbelt::serve",
                        id,
                        "questions could not be withdrawn from the store: {}",
                        toolbelt_core::error_chain(&e)
                    );
                }
            });
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

#[cfg(test)]
#[path = "questions_replica_tests.rs"]
mod replica_tests;
