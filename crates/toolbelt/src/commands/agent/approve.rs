//! Approvals on the interactive screen of calls that an `ask` permission rule
//! covers ([`Prompted`]; runs nobody watches have
//! [`Unattended`](crate::model::Unattended)).
//!
//! The agent's loop runs on Tokio while the terminal belongs to the screen's
//! thread, so the approver does not read the terminal itself: it sends the call
//! to the screen as a [`UiEvent::Approval`] and waits for the answer the screen
//! reads (one reader of standard input at a time).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use tokio::sync::oneshot;
use toolbelt_core::{Approval, ApprovalRequest, Approver, BoxFuture, Registry};

use super::event::{Answer, Ask, Preview, UiEvent, UiTx};

/// Sends each call to the screen and waits for the person's answer; remembers
/// "always" per rule (per tool when no rule is named) for the session.
pub struct Prompted {
    screen: UiTx,
    /// What an approval shows of each tool's calls, by exposed and canonical name.
    previews: HashMap<String, Preview>,
    always: Mutex<HashSet<String>>,
}

impl Prompted {
    /// An approver that asks through `screen`; `registry`'s tools tell what to
    /// show of their calls (read once, as the registry is not shared yet).
    pub fn new(screen: UiTx, registry: &Registry) -> Prompted {
        let mut previews = HashMap::new();
        for exposed in registry.definitions() {
            if let Some(tool) = registry.get(&exposed.name) {
                let preview = Preview::of(tool.spec());
                previews.insert(tool.spec().name.clone(), preview);
                previews.insert(exposed.name, preview);
            }
        }
        Prompted {
            screen,
            previews,
            always: Mutex::new(HashSet::new()),
        }
    }

    fn always_key(request: &ApprovalRequest<'_>) -> String {
        match request.rule {
            Some(rule) => format!("rule:{rule}"),
            None => format!("tool:{}", request.tool),
        }
    }
}

impl Approver for Prompted {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        let key = Prompted::always_key(&request);
        let remembered = toolbelt_core::sync::lock(&self.always).contains(&key);
        let ask = Ask {
            tool: request.tool.to_string(),
            preview: self
                .previews
                .get(request.tool)
                .copied()
                .unwrap_or(Preview::Arguments),
            subject: request.subject.map(str::to_string),
            arguments: request.arguments.clone(),
            // A guard says what the call would destroy.
            rule: match request.guard {
                Some(guard) => Some(format!("{}: {}", guard.rule, guard.danger)),
                None => request.rule.map(str::to_string),
            },
        };
        Box::pin(async move {
            if remembered {
                return Approval::Approve;
            }
            let (tx, rx) = oneshot::channel();
            if self.screen.send(UiEvent::Approval(ask, tx)).is_err() {
                return Approval::Decline {
                    reason: Some("the terminal was closed before anyone answered".into()),
                };
            }
            match rx.await {
                Ok(Answer::Yes) => Approval::Approve,
                Ok(Answer::Always) => {
                    toolbelt_core::sync::lock(&self.always).insert(key);
                    Approval::Approve
                }
                Ok(Answer::No(reason)) => Approval::Decline { reason },
                Err(_) => Approval::Decline {
                    reason: Some("the run was interrupted before anyone answered".into()),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    use std::sync::Arc;

    use super::*;

    fn request(args: &Value) -> ApprovalRequest<'_> {
        ApprovalRequest {
            tool: "bash",
            subject: Some("echo hi"),
            arguments: args,
            rule: Some("bash(echo:*)"),
            guard: None,
        }
    }

    #[tokio::test]
    async fn always_is_remembered_per_rule() {
        let (tx, rx) = std::sync::mpsc::channel();
        let registry = Registry::new(toolbelt_core::Session::new(std::env::temp_dir()));
        let approver = Arc::new(Prompted::new(tx, &registry));
        let screen = std::thread::spawn(move || {
            // The screen answers the first request only.
            match rx.recv().unwrap() {
                UiEvent::Approval(ask, reply) => {
                    assert_eq!(ask.subject.as_deref(), Some("echo hi"));
                    reply.send(Answer::Always).unwrap();
                }
                _ => panic!("expected an approval"),
            }
            rx
        });
        let args = json!({"command": "echo hi"});
        let first = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            approver.approve(request(&args)),
        )
        .await
        .unwrap();
        assert_eq!(first, Approval::Approve);
        let _rx = screen.join().unwrap();
        // Asked again, it does not reach the screen.
        assert_eq!(approver.approve(request(&args)).await, Approval::Approve);
    }
}
