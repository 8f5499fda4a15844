//! Approvals of calls that an `ask` permission rule covers.
//!
//! - [`Unattended`]: `-p` runs. Nobody is there to answer: every such call is
//!   declined with a reason the model reads, unless `--yes` approves them all.
//! - [`Prompted`]: the interactive screen. The agent's loop runs on Tokio while the
//!   terminal belongs to the screen's thread, so the approver does not read the
//!   terminal itself: it sends the call to the screen over a channel and waits for
//!   the answer the screen reads (one reader of standard input at a time).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use serde_json::Value;
use tokio::sync::oneshot;
use toolbelt_core::{Approval, ApprovalRequest, Approver, BoxFuture, Registry};

/// The reason a non-interactive run gives the model for a call that needs approval.
pub const UNATTENDED_REASON: &str = "no one is there to approve it in a non-interactive run; \
     rerun with --yes or change the [permissions] rules";

/// A call to approve, owned, to be sent to the screen.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The tool as the model named it.
    pub tool: String,
    /// Its canonical name (`bash`, `edit_file`), to know how to show it.
    pub canonical: String,
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

/// The reason a scheduled job's run gives the model for a call that needs approval.
pub const JOB_REASON: &str = "no one is there to approve it in a scheduled job; \
     do without it, or say in the answer that the [permissions] rules must allow it";

/// Approves everything (`--yes`) or nothing, with a reason ([`UNATTENDED_REASON`],
/// [`JOB_REASON`]).
#[derive(Debug, Clone, Copy)]
pub struct Unattended {
    /// `--yes`.
    pub approve_all: bool,
    /// Why a call is declined, for the model.
    pub reason: &'static str,
}

impl Approver for Unattended {
    fn approve<'a>(&'a self, _request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        let answer = if self.approve_all {
            Approval::Approve
        } else {
            Approval::Decline {
                reason: Some(self.reason.to_string()),
            }
        };
        Box::pin(std::future::ready(answer))
    }
}

/// A request the screen answers.
pub type AskTx = std::sync::mpsc::Sender<super::tui::UiMsg>;

/// Sends each call to the screen and waits for the person's answer; remembers
/// "always" per rule (per tool when no rule is named) for the session.
pub struct Prompted {
    screen: AskTx,
    /// Exposed name -> canonical name.
    canonical: HashMap<String, String>,
    always: Mutex<HashSet<String>>,
}

impl Prompted {
    /// An approver that asks through `screen`; `registry` names the tools'
    /// canonical names (read once, as the registry is not shared yet).
    pub fn new(screen: AskTx, registry: &Registry) -> Prompted {
        let canonical: HashMap<String, String> = registry
            .definitions()
            .into_iter()
            .filter_map(|s| {
                registry
                    .resolve(&s.name)
                    .map(|c| (s.name.clone(), c.to_string()))
            })
            .collect();
        Prompted {
            screen,
            canonical,
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
        let remembered = self.always.lock().is_ok_and(|set| set.contains(&key));
        let ask = Ask {
            tool: request.tool.to_string(),
            canonical: self
                .canonical
                .get(request.tool)
                .cloned()
                .unwrap_or_else(|| request.tool.to_string()),
            subject: request.subject.map(str::to_string),
            arguments: request.arguments.clone(),
            rule: request.rule.map(str::to_string),
        };
        Box::pin(async move {
            if remembered {
                return Approval::Approve;
            }
            let (tx, rx) = oneshot::channel();
            if self
                .screen
                .send(super::tui::UiMsg::Approval(ask, tx))
                .is_err()
            {
                return Approval::Decline {
                    reason: Some("the terminal was closed before anyone answered".into()),
                };
            }
            match rx.await {
                Ok(Answer::Yes) => Approval::Approve,
                Ok(Answer::Always) => {
                    if let Ok(mut set) = self.always.lock() {
                        set.insert(key);
                    }
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
    use serde_json::json;

    use std::sync::Arc;

    use super::*;

    fn request(args: &Value) -> ApprovalRequest<'_> {
        ApprovalRequest {
            tool: "bash",
            subject: Some("echo hi"),
            arguments: args,
            rule: Some("bash(echo:*)"),
        }
    }

    #[tokio::test]
    async fn unattended_declines_with_a_reason_unless_told_yes() {
        let args = json!({"command": "echo hi"});
        let no = Unattended {
            approve_all: false,
            reason: UNATTENDED_REASON,
        };
        assert_eq!(
            no.approve(request(&args)).await,
            Approval::Decline {
                reason: Some(UNATTENDED_REASON.into())
            }
        );
        let yes = Unattended {
            approve_all: true,
            reason: UNATTENDED_REASON,
        };
        assert_eq!(yes.approve(request(&args)).await, Approval::Approve);
    }

    #[tokio::test]
    async fn always_is_remembered_per_rule() {
        let (tx, rx) = std::sync::mpsc::channel();
        let registry = Registry::new(toolbelt_core::Session::new(std::env::temp_dir()));
        let approver = Arc::new(Prompted::new(tx, &registry));
        let screen = std::thread::spawn(move || {
            // The screen answers the first request only.
            match rx.recv().unwrap() {
                super::super::tui::UiMsg::Approval(ask, reply) => {
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
