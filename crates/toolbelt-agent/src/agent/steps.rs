//! One step of each protocol: what the model's reply is (calls, an answer, or
//! neither), what the model is told when it is neither, and where a small
//! model's `finish` call ends the turn.

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use toolbelt_wire::calls::{ParsedCall, TextReply, calls_in_text, parse_text_reply};

use super::{Agent, TurnState};
use crate::events::AgentEvent;
use crate::finish::finish_answer;
use crate::guard::{
    CONTINUE_AFTER_CUT, FINAL_ANSWER_NOT_TAKEN, MAX_TEXT_NUDGES, NOT_AN_ANSWER,
    OBSERVATION_IGNORED, TEXT_FORMAT_REMINDER, actions_dropped, call_finish_reminder,
    finish_not_alone, is_observation_echo,
};
use crate::message::{Message, ModelCall, ToolOutput};
use crate::options::Outcome;
use crate::provider::{ModelResponse, StopReason};

impl Agent {
    /// One step of native function calling; `Some` ends the turn.
    pub(super) async fn native_step(
        &mut self,
        response: ModelResponse,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<(Outcome, String)> {
        let ModelResponse {
            content,
            tool_calls,
            stop_reason,
            ..
        } = response;
        let (content, tool_calls) = if tool_calls.is_empty() {
            self.written_calls(content)
        } else {
            (content, tool_calls)
        };
        // The history holds every call's arguments as a JSON object: a server
        // that renders past calls with a chat template (llama.cpp) refuses a
        // conversation holding one it cannot parse, on every later request.
        let mut kept = tool_calls.clone();
        for call in &mut kept {
            if !matches!(
                serde_json::from_str::<Value>(&call.arguments),
                Ok(Value::Object(_))
            ) {
                let parsed = ParsedCall::from_arguments_text(&call.name, &call.arguments);
                call.arguments = match parsed.arguments {
                    v @ Value::Object(_) => v.to_string(),
                    _ => "{}".to_string(),
                };
            }
        }
        self.emit(AgentEvent::AssistantMessage {
            text: content.clone(),
            tool_calls: tool_calls.len(),
        });
        self.push(Message::Assistant {
            content: content.clone(),
            tool_calls: kept,
        });
        if tool_calls.is_empty() {
            if stop_reason == StopReason::MaxTokens {
                self.ask_to_go_on();
                return None;
            }
            if self.finish.is_some() {
                return self.no_call(content, state);
            }
            let empty = content.trim().is_empty();
            if (empty || is_observation_echo(&content)) && state.nudges < MAX_TEXT_NUDGES {
                // Nothing, or template debris (`<tool_response>...`: a tool's result
                // written by the model): never its answer.
                state.nudges += 1;
                self.notice(if empty {
                    "the reply was empty; reminding the model".into()
                } else {
                    "the reply repeated a tool result instead of a call or an answer; reminding the model".into()
                });
                self.push(Message::user(NOT_AN_ANSWER));
                return None;
            }
            return Some((Outcome::FinalAnswer, content));
        }
        state.nudges = 0;
        let (finishes, tool_calls): (Vec<ModelCall>, Vec<ModelCall>) = tool_calls
            .into_iter()
            .partition(|c| self.is_finish(&c.name));
        if let Some(first) = finishes.first()
            && tool_calls.is_empty()
        {
            let arguments =
                ParsedCall::from_arguments_text(&first.name, &first.arguments).arguments;
            let answer = finish_answer(&arguments);
            let outputs = finishes
                .iter()
                .map(|c| ToolOutput {
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    content: "The task is finished.".into(),
                    is_error: false,
                })
                .collect();
            self.push(Message::Tool { results: outputs });
            return Some(self.finished(answer));
        }
        let calls = tool_calls
            .iter()
            .map(|c| ParsedCall::from_arguments_text(&c.name, &c.arguments).with_id(&c.id))
            .map(Ok)
            .collect();
        let (results, stop) = self.run_calls(calls, state, cancel).await;
        let mut outputs: Vec<ToolOutput> = results
            .into_iter()
            .map(|r| ToolOutput {
                call_id: r.call_id,
                name: r.tool,
                content: r.text,
                is_error: r.is_error,
            })
            .collect();
        // A finish beside other calls: the model answered before it saw their results.
        outputs.extend(finishes.iter().map(|c| ToolOutput {
            call_id: c.id.clone(),
            name: c.name.clone(),
            content: finish_not_alone(&c.name),
            is_error: true,
        }));
        self.push(Message::Tool { results: outputs });
        if cancel.is_cancelled() {
            return Some((Outcome::Cancelled, "cancelled".into()));
        }
        stop
    }

    /// One step of the text protocol; `Some` ends the turn.
    pub(super) async fn text_step(
        &mut self,
        response: ModelResponse,
        state: &mut TurnState,
        cancel: &CancellationToken,
    ) -> Option<(Outcome, String)> {
        let content = response.content;
        let mut reply = if self.reply_json {
            self.json_reply(&content)
        } else {
            parse_text_reply(&content)
        };
        if self.finish.is_some()
            && let Some(answer) = reply.final_answer.take()
        {
            // `Action: finish[{"answer": ...}]`: the answer is the argument.
            reply.final_answer = Some(match serde_json::from_str::<Value>(&answer) {
                Ok(v @ Value::Object(_)) => finish_answer(&v),
                _ => answer,
            });
        }
        // One action per reply: the model decides the next one on its observation.
        let dropped_actions = reply.actions.len().saturating_sub(1);
        reply.actions.truncate(1);
        self.emit(AgentEvent::AssistantMessage {
            text: content.clone(),
            tool_calls: reply.actions.len(),
        });
        self.push(Message::assistant(content.clone()));
        if reply.actions.is_empty() {
            let echoed = reply
                .final_answer
                .as_deref()
                .map_or_else(|| is_observation_echo(&content), is_observation_echo);
            if echoed {
                // The model wrote an observation (an error, most often) itself: that is
                // never its answer.
                if state.nudges >= MAX_TEXT_NUDGES {
                    return Some((
                        Outcome::NoAnswer,
                        "the model kept writing observations and errors itself instead of an action or a final answer"
                            .into(),
                    ));
                }
                state.nudges += 1;
                self.notice(
                    "the reply repeated an observation instead of an action or an answer; reminding the model of the format"
                        .into(),
                );
                self.push(Message::user(TEXT_FORMAT_REMINDER));
                return None;
            }
            if let Some(answer) = reply.final_answer {
                return Some(self.finished(answer));
            }
            if response.stop_reason == StopReason::MaxTokens {
                self.ask_to_go_on();
                return None;
            }
            if self.finish.is_some() {
                return self.no_call(content, state);
            }
            if state.nudges >= MAX_TEXT_NUDGES {
                return Some((Outcome::FinalAnswer, content.trim().to_string()));
            }
            state.nudges += 1;
            self.notice(
                "the reply had no Action and no Final Answer; reminding the model of the format"
                    .into(),
            );
            self.push(Message::user(TEXT_FORMAT_REMINDER));
            return None;
        }
        state.nudges = 0;
        let ignored_final = reply.final_answer.is_some();
        let (results, stop) = self.run_calls(reply.actions, state, cancel).await;
        let mut observation = results
            .iter()
            .map(|r| r.observation.clone())
            .collect::<Vec<_>>()
            .join("\n\n");
        if ignored_final {
            observation.push_str(FINAL_ANSWER_NOT_TAKEN);
        }
        if dropped_actions > 0 {
            observation.push_str(&actions_dropped(dropped_actions));
        }
        if reply.ignored_after_observation.is_some() {
            observation.push_str(OBSERVATION_IGNORED);
        }
        self.push(Message::user(observation));
        if cancel.is_cancelled() {
            return Some((Outcome::Cancelled, "cancelled".into()));
        }
        stop
    }

    /// A reply without a call from a model that ends its runs through `finish`:
    /// a reminder, or the end of the turn once the reminders are spent.
    fn no_call(&mut self, content: String, state: &mut TurnState) -> Option<(Outcome, String)> {
        if state.nudges >= MAX_TEXT_NUDGES {
            return Some((
                Outcome::NoAnswer,
                format!(
                    "the model kept replying without a tool call (a run ends only through {}); its last reply: {}",
                    self.finish.as_deref().unwrap_or_default(),
                    content.trim()
                ),
            ));
        }
        state.nudges += 1;
        self.notice("the reply called no tool; reminding the model".into());
        let reminder = call_finish_reminder(
            self.options.protocol,
            self.reply_json,
            self.finish.as_deref().unwrap_or_default(),
        );
        self.push(Message::user(reminder));
        None
    }

    /// After an answer cut by the output limit: the model is asked to go on.
    fn ask_to_go_on(&mut self) {
        self.notice("the answer was cut off by the output limit; asking the model to go on".into());
        self.push(Message::user(CONTINUE_AFTER_CUT));
    }

    /// True when `name` is the finish tool's.
    fn is_finish(&self, name: &str) -> bool {
        self.finish
            .as_deref()
            .is_some_and(|f| f.eq_ignore_ascii_case(name.trim()))
    }

    /// The end of a turn with `answer`, shown as the model's last words.
    fn finished(&mut self, answer: String) -> (Outcome, String) {
        if self.finish.is_some() {
            self.emit(AgentEvent::AssistantMessage {
                text: answer.clone(),
                tool_calls: 0,
            });
        }
        (Outcome::FinalAnswer, answer)
    }

    /// A reply written as a JSON object (`{"name": ..., "arguments": {...}}`),
    /// read as the text protocol's reply: its call, or its finish.
    fn json_reply(&self, content: &str) -> TextReply {
        let registry = &self.registry;
        let known = |name: &str| registry.resolve(name).is_some() || self.is_finish(name);
        let mut reply = TextReply {
            thought: None,
            actions: Vec::new(),
            final_answer: None,
            ignored_after_observation: None,
        };
        let Some(found) = calls_in_text(content, &known) else {
            return reply;
        };
        for call in found.calls {
            if self.is_finish(&call.name) {
                reply.final_answer = Some(finish_answer(&call.arguments));
            } else {
                reply.actions.push(Ok(call));
            }
        }
        reply
    }
}
