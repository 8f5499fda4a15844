//! Integration tests: policy.
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::profile::Profile;
use toolbelt_core::{
    Approval, ApprovalRequest, Approver, BoxFuture, Envelope, ErrorCode, ErrorInfo, Registry,
    Reply, Session, Status, ToolContext, ToolResult, ToolSpec, TypedTool,
};
use toolbelt_policy::Policy;

const TEST_TIMEOUT_MS: u64 = 10_000;

#[derive(Deserialize, JsonSchema)]
struct ReadNoteParams {
    /// The note's path.
    path: String,
}

#[derive(Serialize, JsonSchema)]
struct ReadNoteOutput {
    path: String,
}

/// A file tool whose permission subject is its `path` argument.
struct ReadNote;

impl TypedTool for ReadNote {
    type Params = ReadNoteParams;
    type Output = ReadNoteOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("read_note", "Reads a note.")
            .permission("fs:read")
            .key_argument("path")
    }

    async fn call(&self, _ctx: &ToolContext, p: ReadNoteParams) -> ToolResult<ReadNoteOutput> {
        let text = format!("read {}", p.path);
        Ok(Reply::new(ReadNoteOutput { path: p.path }, text))
    }
}

/// Answers every approval request the same way and records what it was asked.
struct FixedApprover {
    /// `None` approves; `Some(reason)` declines.
    answer: Option<Option<String>>,
    asked: Mutex<Vec<(String, Option<String>)>>,
}

impl FixedApprover {
    fn new(answer: bool) -> Arc<FixedApprover> {
        Arc::new(FixedApprover {
            answer: (!answer).then_some(None),
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<(String, Option<String>)> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for FixedApprover {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> BoxFuture<'a, Approval> {
        self.asked.lock().unwrap().push((
            request.tool.to_string(),
            request.subject.map(str::to_string),
        ));
        Box::pin(std::future::ready(match &self.answer {
            None => Approval::Approve,
            Some(reason) => Approval::Decline {
                reason: reason.clone(),
            },
        }))
    }
}

fn registry(policy: Policy) -> (Registry, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::new(Session::new(dir.path()));
    registry.register_typed(ReadNote).unwrap();
    registry.set_authorizer(Arc::new(policy.with_roots([dir.path()])));
    (registry, dir)
}

async fn within_timeout<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_millis(TEST_TIMEOUT_MS), fut)
        .await
        .unwrap()
}

async fn read(registry: &Registry, path: &str) -> Envelope {
    within_timeout(registry.execute("read_note", json!({ "path": path }))).await
}

fn denied(message: &str, hint: &str) -> Option<ErrorInfo> {
    Some(ErrorInfo {
        code: ErrorCode::AccessDenied,
        message: message.to_string(),
        hint: Some(hint.to_string()),
    })
}

const DENIED_HINT: &str =
    "do not retry this call; choose another way or ask the user to change the permission rules";

#[tokio::test]
async fn env_file_is_refused_naming_the_built_in_rule() {
    let (registry, _dir) = registry(Policy::default());
    let env = read(&registry, ".env").await;
    assert_eq!(env.status, Status::Error);
    assert_eq!(
        env.error,
        denied(
            r#"read_note on ".env" is denied by the rule `deny secret file .env (built-in)`"#,
            DENIED_HINT
        )
    );
    let env = read(&registry, "config/../deploy/id_rsa").await;
    assert_eq!(
        env.error,
        denied(
            r#"read_note on "config/../deploy/id_rsa" is denied by the rule `deny secret file id_rsa* (built-in)`"#,
            DENIED_HINT
        )
    );
}

#[tokio::test]
async fn env_example_is_allowed() {
    let (registry, _dir) = registry(Policy::default());
    let env = read(&registry, ".env.example").await;
    assert_eq!(env.error, None);
    assert_eq!(env.status, Status::Success);
    assert_eq!(env.data, json!({ "path": ".env.example" }));
    assert_eq!(env.text, "read .env.example");
}

#[tokio::test]
async fn secret_files_open_once_the_defaults_are_off() {
    let (registry, _dir) = registry(Policy::default().without_secret_defaults());
    let env = read(&registry, ".env").await;
    assert_eq!(env.status, Status::Success);
    assert_eq!(env.data, json!({ "path": ".env" }));
}

#[tokio::test]
async fn an_explicit_deny_rule_refuses() {
    let policy = Policy::from_rules(&["read_note"], &[], &["read_note(drafts/**)"]).unwrap();
    let (registry, dir) = registry(policy);
    let env = read(&registry, "drafts/plan.md").await;
    assert_eq!(
        env.error,
        denied(
            r#"read_note on "drafts/plan.md" is denied by the rule `read_note(drafts/**)`"#,
            DENIED_HINT
        )
    );
    // The same file named by its absolute path under the workspace root.
    let absolute = dir.path().join("drafts/plan.md");
    let absolute = absolute.to_str().unwrap();
    let env = read(&registry, absolute).await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    assert_eq!(
        read(&registry, "notes/plan.md").await.status,
        Status::Success
    );
}

#[tokio::test]
async fn an_ask_rule_refuses_without_an_approver() {
    let policy = Policy::from_rules(&[], &["read_note(private/*)"], &[]).unwrap();
    let (registry, _dir) = registry(policy);
    let env = read(&registry, "private/diary.md").await;
    assert_eq!(
        env.error,
        denied(
            r#"read_note on "private/diary.md" needs approval under the rule `read_note(private/*)` and was not approved"#,
            "this call needs approval, which is not available here; ask the user to add an allow rule"
        )
    );
    assert_eq!(read(&registry, "public/a.md").await.status, Status::Success);
}

#[tokio::test]
async fn an_ask_rule_runs_when_approved() {
    let policy = Policy::from_rules(&[], &["read_note(private/*)"], &[]).unwrap();
    let (mut registry, _dir) = registry(policy);
    let approver = FixedApprover::new(true);
    registry.set_approver(Some(approver.clone()));
    let env = read(&registry, "private/diary.md").await;
    assert_eq!(env.error, None);
    assert_eq!(env.data, json!({ "path": "private/diary.md" }));
    // Only the call under the ask rule was put to the approver.
    assert_eq!(read(&registry, "public/a.md").await.status, Status::Success);
    assert_eq!(
        approver.asked(),
        vec![(
            "read_note".to_string(),
            Some("private/diary.md".to_string())
        )]
    );
}

#[tokio::test]
async fn an_ask_rule_refuses_when_declined() {
    let policy = Policy::from_rules(&[], &["read_note(private/*)"], &[]).unwrap();
    let (mut registry, _dir) = registry(policy);
    registry.set_approver(Some(FixedApprover::new(false)));
    let env = read(&registry, "private/diary.md").await;
    assert_eq!(
        env.error,
        denied(
            r#"read_note on "private/diary.md" needs approval under the rule `read_note(private/*)` and was not approved"#,
            "the user declined this call; do not retry it unchanged"
        )
    );
}

#[tokio::test]
async fn a_declined_call_carries_the_persons_reason_to_the_model() {
    let policy = Policy::from_rules(&[], &["read_note(private/*)"], &[]).unwrap();
    let (mut registry, _dir) = registry(policy);
    registry.set_approver(Some(Arc::new(FixedApprover {
        answer: Some(Some("read the public notes instead".into())),
        asked: Mutex::new(Vec::new()),
    })));
    let env = read(&registry, "private/diary.md").await;
    assert_eq!(
        env.error.unwrap().hint.as_deref(),
        Some(
            "the user declined this call, saying: read the public notes instead; do not retry it unchanged"
        )
    );
}

#[tokio::test]
async fn secret_defaults_win_over_an_approving_approver() {
    let policy = Policy::from_rules(&[], &["read_note"], &[]).unwrap();
    let (mut registry, _dir) = registry(policy);
    let approver = FixedApprover::new(true);
    registry.set_approver(Some(approver.clone()));
    let env = read(&registry, "keys/server.pem").await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    assert_eq!(approver.asked(), Vec::new());
}

#[tokio::test]
async fn rules_may_name_the_tool_as_the_profile_exposes_it() {
    let policy = Policy::from_rules(&[], &[], &["Note(drafts/**)"]).unwrap();
    let (mut registry, _dir) = registry(policy);
    registry.set_profile(Profile::custom("notes", [("read_note", "Note")]).unwrap());
    let env = within_timeout(registry.execute("Note", json!({ "path": "drafts/a.md" }))).await;
    assert_eq!(
        env.error,
        denied(
            r#"Note on "drafts/a.md" is denied by the rule `Note(drafts/**)`"#,
            DENIED_HINT
        )
    );
    // The canonical name reaches the same tool and the same rule.
    let env = read(&registry, "drafts/a.md").await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
}
