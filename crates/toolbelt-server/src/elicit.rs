//! The person behind an MCP client, reached by elicitation (`elicitation/create`):
//! the approval of a call under an `ask` rule, and the questions of `ask_user`.
//! A client that did not declare the capability is never asked: the registry
//! then refuses `ask` calls as before, and `ask_user` says nobody can answer.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use toolbelt_core::sync::lock;

use std::collections::BTreeMap;

use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequiredResult,
    ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Map, Value, json};
use toolbelt_core::{
    Answer, Answers, Approval, ApprovalRequest, Approver, AskError, Asker, BoxFuture, Question,
    error_chain,
};

/// The longest excerpt of a call's arguments an approval shows.
const MAX_SHOWN_CHARS: usize = 2_000;

/// Whether the client of `context` takes elicitation requests (form mode).
pub(crate) fn supports_elicitation(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some())
}

/// How the person is reached for one `tools/call`.
#[derive(Clone)]
pub(crate) enum Channel {
    /// Before 2026-07-28: an `elicitation/create` request to the client.
    Request(Peer<RoleServer>),
    /// From 2026-07-28 on, servers send no requests: the call answers
    /// `input_required` with the forms, and the client calls again with the
    /// answers (carried from round to round in the request state).
    Rounds(Arc<Rounds>),
}

/// The forms and answers of one call under the multi-round flow.
#[derive(Default)]
pub(crate) struct Rounds {
    /// The answers of earlier rounds, by form key.
    answers: BTreeMap<String, Value>,
    /// The forms this round still needs.
    pending: Mutex<BTreeMap<String, ElicitRequestParams>>,
    /// Set when a form waits for the next round: the call is sent again then.
    pub(crate) put_off: Arc<std::sync::atomic::AtomicBool>,
}

/// Where the request state of the multi-round flow starts.
const STATE_PREFIX: &str = "toolbelt-answers:";

impl Channel {
    /// The channel of a call under `context`, with the answers `responses` and
    /// `state` carry (a retried multi-round call).
    pub(crate) fn for_call(
        context: &RequestContext<RoleServer>,
        responses: Option<&BTreeMap<String, Value>>,
        state: Option<&str>,
    ) -> Channel {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return Channel::Request(context.peer.clone());
        }
        let mut answers: BTreeMap<String, Value> = state
            .and_then(|s| s.strip_prefix(STATE_PREFIX))
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        if let Some(responses) = responses {
            answers.extend(responses.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        Channel::Rounds(Arc::new(Rounds {
            answers,
            pending: Mutex::default(),
            put_off: Arc::default(),
        }))
    }

    /// The flag the registry reads to leave a put-off call out of the call log.
    pub(crate) fn put_off(&self) -> Option<Arc<std::sync::atomic::AtomicBool>> {
        match self {
            Channel::Request(_) => None,
            Channel::Rounds(rounds) => Some(Arc::clone(&rounds.put_off)),
        }
    }

    /// The `input_required` answer of a call that stopped for forms, if it did.
    pub(crate) fn input_required(&self) -> Option<InputRequiredResult> {
        let Channel::Rounds(rounds) = self else {
            return None;
        };
        let pending = lock(&rounds.pending);
        if pending.is_empty() {
            return None;
        }
        let mut requests = BTreeMap::new();
        for (key, params) in pending.iter() {
            let request = serde_json::from_value::<InputRequest>(json!({
                "method": "elicitation/create",
                "params": params,
            }));
            match request {
                Ok(request) => {
                    requests.insert(key.clone(), request);
                }
                Err(e) => tracing::warn!("an elicitation form cannot be sent: {e}"),
            }
        }
        let state = format!(
            "{STATE_PREFIX}{}",
            serde_json::to_string(&rounds.answers).unwrap_or_else(|_| "{}".into())
        );
        Some(InputRequiredResult::new(Some(requests), Some(state)))
    }

    /// Asks form `key`: sends it, or takes its answer from an earlier round, or
    /// notes it for the `input_required` answer (then [`ElicitError::NextRound`]).
    async fn elicit(
        &self,
        key: &str,
        message: String,
        schema: Value,
    ) -> Result<ElicitResult, ElicitError> {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": message,
            "requestedSchema": schema,
        }))?;
        match self {
            Channel::Request(peer) => Ok(peer.create_elicitation(params).await?),
            Channel::Rounds(rounds) => {
                if let Some(answer) = rounds.answers.get(key) {
                    return Ok(serde_json::from_value(answer.clone())?);
                }
                lock(&rounds.pending).insert(key.to_string(), params);
                rounds
                    .put_off
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                Err(ElicitError::NextRound)
            }
        }
    }
}

/// Why a form got no answer (now).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ElicitError {
    /// The form, or the client's answer from an earlier round, does not parse.
    #[error("a form or its answer is not valid")]
    Json(#[from] serde_json::Error),
    /// The client did not answer the request.
    #[error(transparent)]
    Client(#[from] rmcp::service::ServiceError),
    /// The form waits for the next round; the call's envelope is then replaced by
    /// the `input_required` answer.
    #[error("the answer comes in the next round")]
    NextRound,
}

impl From<ElicitError> for AskError {
    fn from(e: ElicitError) -> AskError {
        // `AskError` carries the text the model reads: the chain is joined here,
        // where it leaves for the model.
        AskError::Failed(error_chain(&e))
    }
}

/// Approves calls under `ask` rules by asking the client's user; "always" is
/// remembered for the session (the same tool on the same subject).
pub(crate) struct ElicitApprover {
    channel: Channel,
    always: Arc<Mutex<BTreeSet<String>>>,
}

impl ElicitApprover {
    pub(crate) fn new(channel: Channel, always: Arc<Mutex<BTreeSet<String>>>) -> Self {
        ElicitApprover { channel, always }
    }
}

impl Approver for ElicitApprover {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        Box::pin(async move {
            let key = format!("{}\u{0}{}", request.tool, request.subject.unwrap_or(""));
            if lock(&self.always).contains(&key) {
                return Approval::Approve;
            }
            let schema = json!({
                "type": "object",
                "properties": {
                    "decision": {
                        "type": "string",
                        "title": "Allow this call?",
                        "oneOf": [
                            {"const": "accept", "title": "Allow once"},
                            {"const": "always", "title": "Allow for this session"},
                            {"const": "decline", "title": "Decline"}
                        ]
                    },
                    "reason": {
                        "type": "string",
                        "title": "Reason (sent to the model when declining)"
                    }
                },
                "required": ["decision"]
            });
            let message = approval_message(&request);
            let result = match self.channel.elicit("approval", message, schema).await {
                Ok(result) => result,
                Err(e) => {
                    return Approval::Decline {
                        reason: Some(format!(
                            "the approval could not be asked: {}",
                            error_chain(&e)
                        )),
                    };
                }
            };
            let content = result.content.unwrap_or(Value::Null);
            let reason = content
                .get("reason")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(str::to_string);
            match (
                result.action,
                content.get("decision").and_then(Value::as_str),
            ) {
                (ElicitationAction::Accept, Some("accept")) => Approval::Approve,
                (ElicitationAction::Accept, Some("always")) => {
                    lock(&self.always).insert(key);
                    Approval::Approve
                }
                _ => Approval::Decline { reason },
            }
        })
    }
}

/// What an approval shows: the tool, what the rule looked at, the rule, and the
/// arguments (an edit's old and new text as removed and added lines).
fn approval_message(request: &ApprovalRequest<'_>) -> String {
    let mut message = format!("toolbelt: allow {}", request.tool);
    if let Some(subject) = request.subject {
        message.push_str(&format!(" on {subject:?}"));
    }
    message.push('?');
    if let Some(rule) = request.rule {
        message.push_str(&format!(" (the rule `{rule}` asks)"));
    }
    let args = request.arguments;
    let old = args.get("old_string").and_then(Value::as_str);
    let new = args.get("new_string").and_then(Value::as_str);
    let shown = if let (Some(old), Some(new)) = (old, new) {
        let mut diff = String::new();
        for line in old.lines() {
            diff.push_str(&format!("- {line}\n"));
        }
        for line in new.lines() {
            diff.push_str(&format!("+ {line}\n"));
        }
        diff
    } else if let Some(command) = args.get("command").and_then(Value::as_str) {
        format!("$ {command}")
    } else {
        serde_json::to_string_pretty(args).unwrap_or_default()
    };
    let clipped: String = shown.chars().take(MAX_SHOWN_CHARS).collect();
    message.push_str("\n\n");
    message.push_str(clipped.trim_end());
    if clipped.len() < shown.len() {
        message.push_str("\n…");
    }
    message
}

/// Puts `ask_user`'s questions to the client's user as one form: per question a
/// choice (several for multi-select) and a field for their own words.
pub(crate) struct ElicitAsker {
    channel: Channel,
}

impl ElicitAsker {
    pub(crate) fn new(channel: Channel) -> Self {
        ElicitAsker { channel }
    }
}

impl Asker for ElicitAsker {
    fn ask<'a>(&'a self, questions: &'a [Question]) -> BoxFuture<'a, Result<Answers, AskError>> {
        Box::pin(async move {
            let mut properties = Map::new();
            let mut message = String::from("The assistant asks:");
            for (i, q) in questions.iter().enumerate() {
                message.push_str(&format!("\n{}. {} — {}", i + 1, q.header, q.question));
                let choices: Vec<Value> = q
                    .options
                    .iter()
                    .map(|o| {
                        let title = if o.description.is_empty() {
                            o.label.clone()
                        } else {
                            format!("{} — {}", o.label, o.description)
                        };
                        json!({"const": o.label, "title": title})
                    })
                    .collect();
                let field = if q.multi_select {
                    json!({
                        "type": "array",
                        "title": q.header,
                        "description": q.question,
                        "items": {"anyOf": choices}
                    })
                } else {
                    json!({
                        "type": "string",
                        "title": q.header,
                        "description": q.question,
                        "oneOf": choices
                    })
                };
                properties.insert(format!("q{}", i + 1), field);
                properties.insert(
                    format!("q{}_text", i + 1),
                    json!({
                        "type": "string",
                        "title": format!("{}: in your own words (optional)", q.header)
                    }),
                );
            }
            let schema = json!({"type": "object", "properties": properties});
            let result = self.channel.elicit("questions", message, schema).await?;
            if result.action != ElicitationAction::Accept {
                return Ok(Answers::Declined { reason: None });
            }
            let content = result.content.unwrap_or(Value::Null);
            let answers = questions
                .iter()
                .enumerate()
                .map(|(i, q)| {
                    let picked = content.get(format!("q{}", i + 1));
                    let selected = match picked {
                        Some(Value::String(s)) => vec![s.clone()],
                        Some(Value::Array(items)) => items
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect(),
                        _ => Vec::new(),
                    };
                    let text = content
                        .get(format!("q{}_text", i + 1))
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_string);
                    Answer {
                        header: q.header.clone(),
                        selected,
                        text,
                    }
                })
                .collect();
            Ok(Answers::Answered(answers))
        })
    }
}
