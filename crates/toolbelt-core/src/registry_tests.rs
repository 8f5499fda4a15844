#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::{Reply, Status, ToolError, Violation};

#[derive(Deserialize, JsonSchema)]
struct RangeParams {
    start: u32,
    end: u32,
    #[serde(default)]
    verbose: bool,
}

#[derive(Serialize, JsonSchema)]
struct RangeOut {
    len: u32,
}

struct RangeTool;

impl TypedTool for RangeTool {
    type Params = RangeParams;
    type Output = RangeOut;
    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("range", "Length of a range.")
            .category(Category::Files)
            .hints(crate::Hints::read_only())
    }
    fn validate(&self, p: &RangeParams) -> Vec<Violation> {
        if p.start > p.end {
            vec![Violation::new(
                "start",
                format!("start ({}) must be <= end ({})", p.start, p.end),
            )]
        } else {
            Vec::new()
        }
    }
    async fn call(&self, _ctx: &ToolContext, p: RangeParams) -> ToolResult<RangeOut> {
        let _ = p.verbose;
        Ok(Reply::new(
            RangeOut {
                len: p.end - p.start,
            },
            format!("{}", p.end - p.start),
        ))
    }
}

fn registry() -> Registry {
    let dir = std::env::temp_dir().join("toolbelt-registry-tests");
    let mut r = Registry::new(Session::new(dir));
    r.register_typed(RangeTool).unwrap();
    r
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn success_envelope_has_context_and_stats() {
    let r = registry();
    let env = rt().block_on(r.execute("range", json!({"start": 2, "end": 5})));
    assert_eq!(env.status, Status::Success);
    assert_eq!(env.data, json!({"len": 3}));
    assert_eq!(env.text, "3");
    assert_eq!(env.context.tool, "range");
    assert!(env.context.call_id.starts_with("call_"));
    assert_eq!(env.context.params_input, json!({"start": 2, "end": 5}));
    assert!(env.context.repairs.is_empty());
    assert!(env.error.is_none());
}

#[test]
fn repairs_are_recorded_and_input_kept() {
    let r = registry();
    let env = rt().block_on(r.execute(
        "range",
        json!("{\"arguments\": {\"start\": \"1\", \"end\": 4, \"verbose\": \"true\"}}"),
    ));
    assert_eq!(env.status, Status::Success, "{}", env.text);
    assert_eq!(env.data, json!({"len": 3}));
    let actions: Vec<_> = env
        .context
        .repairs
        .iter()
        .map(|r| (r.path.as_str(), r.action.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            ("", "stringified JSON arguments parsed"),
            ("", "unwrapped {\"arguments\": {...}}"),
            ("start", "string \"1\" -> integer 1"),
            ("verbose", "string \"true\" -> boolean true"),
        ]
    );
    assert!(env.context.params_input.is_string());
}

#[test]
fn all_violations_are_listed() {
    let r = registry();
    let env = rt().block_on(r.execute("range", json!({"start": -1, "extra": 1})));
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    let msg = &env.error.as_ref().unwrap().message;
    assert!(
        msg.contains("start: -1 is less than the minimum of 0"),
        "{msg}"
    );
    assert!(msg.contains("\"end\" is a required property"), "{msg}");
    assert!(msg.contains("(3 problems)"), "{msg}");
    assert_eq!(env.data["violations"].as_array().unwrap().len(), 3);
}

#[test]
fn custom_validator_runs_after_schema() {
    let r = registry();
    let env = rt().block_on(r.execute("range", json!({"start": 9, "end": 2})));
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    assert!(
        env.text.contains("start: start (9) must be <= end (2)"),
        "{}",
        env.text
    );
}

#[test]
fn unknown_tool_names_the_closest() {
    let r = registry();
    let env = rt().block_on(r.execute("Range", json!({})));
    assert_eq!(env.error_code(), Some(ErrorCode::UnknownTool));
    assert!(env.text.contains("did you mean \"range\"?"), "{}", env.text);
    assert_eq!(env.data["suggestions"], json!(["range"]));
    let env = rt().block_on(r.execute("zzz", json!({})));
    assert!(
        env.text.contains("the closest tools are \"range\""),
        "{}",
        env.text
    );
    assert_eq!(env.context.tool, "zzz");
}

#[test]
fn malformed_json_is_invalid_params() {
    let r = registry();
    let env = rt().block_on(r.execute("range", json!("{\"start\": ")));
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    let env = rt().block_on(r.execute("range", json!("not json")));
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    assert!(env.text.contains("not valid JSON"), "{}", env.text);
}

#[test]
fn registration_errors() {
    let mut r = registry();
    assert!(matches!(
        r.register_typed(RangeTool),
        Err(RegistryError::Duplicate(_))
    ));
    let bad = ToolSpec::new("has space", "x", json!({"type": "object"}));
    assert!(matches!(
        r.register_fn(bad, |_c, v| async move { Ok(Reply::new(v, "")) }),
        Err(RegistryError::InvalidName(_))
    ));
    let bad = ToolSpec::new("arr", "x", json!({"type": "array"}));
    assert!(matches!(
        r.register_fn(bad, |_c, v| async move { Ok(Reply::new(v, "")) }),
        Err(RegistryError::InvalidSchema { .. })
    ));
    let bad = ToolSpec::new(
        "bad_schema",
        "x",
        json!({"type": "object", "properties": {"a": {"type": 5}}}),
    );
    assert!(matches!(
        r.register_fn(bad, |_c, v| async move { Ok(Reply::new(v, "")) }),
        Err(RegistryError::InvalidSchema { .. })
    ));
}

#[test]
fn lookup_order_and_categories() {
    let mut r = registry();
    for name in ["zeta", "alpha", "mid"] {
        r.register_fn(
            ToolSpec::new(name, "x", json!({"type": "object"})),
            |_c, v| async move { Ok(Reply::new(v, "ok")) },
        )
        .unwrap();
    }
    assert_eq!(r.names(), ["alpha", "mid", "range", "zeta"]);
    let defs: Vec<_> = r.definitions().into_iter().map(|s| s.name).collect();
    assert_eq!(defs, ["alpha", "mid", "range", "zeta"]);
    assert_eq!(r.by_category(Category::Files).len(), 1);
    assert!(r.has("mid") && r.get("mid").is_some());
    assert!(r.unregister("mid").is_some());
    assert!(!r.has("mid"));
    assert!(r.unregister("mid").is_none());
}

#[test]
fn register_fn_tool_errors_become_envelopes() {
    let mut r = registry();
    let spec = ToolSpec::new(
        "lookup",
        "Looks up a key.",
        json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}),
    );
    r.register_fn(spec, |_ctx, args: Value| async move {
        let key = args["key"].as_str().unwrap_or_default().to_string();
        if key == "a" {
            Ok(Reply::new(json!({"value": 1}), "a = 1"))
        } else {
            Err(
                ToolError::new(ErrorCode::NotFound, format!("no key {key:?}"))
                    .hint("known keys: a"),
            )
        }
    })
    .unwrap();
    let rt = rt();
    let ok = rt.block_on(r.execute("lookup", json!({"key": "a"})));
    assert_eq!(ok.data, json!({"value": 1}));
    let err = rt.block_on(r.execute("lookup", json!({"key": "b"})));
    assert_eq!(err.error_code(), Some(ErrorCode::NotFound));
    assert_eq!(
        err.text,
        "ERROR [NOT_FOUND]: no key \"b\"\nHint: known keys: a"
    );
}

fn sleepy(
    r: &mut Registry,
    name: &str,
    safe: bool,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) {
    let mut spec = ToolSpec::new(
        name,
        "Sleeps.",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}, "tag": {"type": "string"}}}),
    );
    spec.hints.concurrency_safe = safe;
    r.register_fn(spec, move |ctx, args| {
        let running = Arc::clone(&running);
        let peak = Arc::clone(&peak);
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let ms = args["ms"].as_u64().unwrap_or(0);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = ctx.cancel_token().cancelled() => {}
            }
            running.fetch_sub(1, Ordering::SeqCst);
            Ok(Reply::new(args["tag"].clone(), ""))
        }
    })
    .unwrap();
}

#[test]
fn batch_keeps_order_and_only_safe_tools_overlap() {
    let mut r = registry();
    let running = Arc::new(AtomicUsize::new(0));
    let peak_safe = Arc::new(AtomicUsize::new(0));
    sleepy(
        &mut r,
        "safe",
        true,
        Arc::clone(&running),
        Arc::clone(&peak_safe),
    );
    let rt = rt();
    let calls: Vec<_> = [40, 5, 20, 1]
        .iter()
        .enumerate()
        .map(|(i, ms)| ToolCall::new("safe", json!({"ms": ms, "tag": format!("s{i}")})))
        .collect();
    let out = rt.block_on(r.execute_batch(calls, BatchMode::Concurrent { max: 4 }));
    let tags: Vec<_> = out.iter().map(|e| e.data.clone()).collect();
    assert_eq!(tags, [json!("s0"), json!("s1"), json!("s2"), json!("s3")]);
    assert!(
        peak_safe.load(Ordering::SeqCst) >= 2,
        "safe calls should overlap"
    );

    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    sleepy(
        &mut r,
        "unsafe",
        false,
        Arc::clone(&running),
        Arc::clone(&peak),
    );
    let calls: Vec<_> = (0..3)
        .map(|i| ToolCall::new("unsafe", json!({"ms": 10, "tag": format!("u{i}")})))
        .collect();
    let out = rt.block_on(r.execute_batch(calls, BatchMode::Concurrent { max: 4 }));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "unsafe calls must run alone"
    );
    assert_eq!(out[2].data, json!("u2"));

    // Sequential mode never overlaps, even safe tools.
    let peak_seq = Arc::new(AtomicUsize::new(0));
    sleepy(
        &mut r,
        "safe2",
        true,
        Arc::new(AtomicUsize::new(0)),
        Arc::clone(&peak_seq),
    );
    let calls: Vec<_> = (0..3)
        .map(|_| ToolCall::new("safe2", json!({"ms": 5})))
        .collect();
    rt.block_on(r.execute_batch(calls, BatchMode::Sequential));
    assert_eq!(peak_seq.load(Ordering::SeqCst), 1);
}

#[test]
fn timeout_and_cancellation() {
    let mut r = registry();
    sleepy(
        &mut r,
        "sleep",
        true,
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let rt = rt();
    let opts = CallOptions {
        timeout: Some(Duration::from_millis(50)),
        ..CallOptions::default()
    };
    let env = rt.block_on(r.execute_call(ToolCall::new("sleep", json!({"ms": 10_000})), opts));
    assert_eq!(env.error_code(), Some(ErrorCode::Timeout));
    assert!(env.stats.time_ms < 5_000);

    let token = CancellationToken::new();
    let opts = CallOptions {
        cancel: Some(token.clone()),
        ..CallOptions::default()
    };
    let env = rt.block_on(async {
        let t = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            t.cancel();
        });
        r.execute_call(
            ToolCall::new("sleep", json!({"ms": 10_000})).with_id("c-1"),
            opts,
        )
        .await
    });
    assert_eq!(env.error_code(), Some(ErrorCode::Cancelled));
    assert_eq!(env.context.call_id, "c-1");
}

#[test]
fn batch_options_reach_every_call() {
    let mut r = registry();
    sleepy(
        &mut r,
        "sleep",
        true,
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
    );
    let rt = rt();
    let calls = || {
        vec![
            ToolCall::new("sleep", json!({"ms": 1})),
            ToolCall::new("sleep", json!({"ms": 10_000})),
            ToolCall::new("sleep", json!({"ms": 1})),
        ]
    };
    // The timeout applies to each call; the batch goes on after one times out.
    let opts = CallOptions {
        timeout: Some(Duration::from_millis(500)),
        ..CallOptions::default()
    };
    let out = rt.block_on(r.execute_batch_with(calls(), BatchMode::Sequential, &opts));
    let codes: Vec<Option<ErrorCode>> = out.iter().map(Envelope::error_code).collect();
    assert_eq!(codes, [None, Some(ErrorCode::Timeout), None]);

    // Cancelling the batch's token cancels the call running and those after it.
    let token = CancellationToken::new();
    let opts = CallOptions {
        cancel: Some(token.clone()),
        ..CallOptions::default()
    };
    let out = rt.block_on(async {
        let t = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            t.cancel();
        });
        r.execute_batch_with(calls(), BatchMode::Sequential, &opts)
            .await
    });
    let codes: Vec<Option<ErrorCode>> = out.iter().map(Envelope::error_code).collect();
    assert_eq!(
        codes,
        [None, Some(ErrorCode::Cancelled), Some(ErrorCode::Cancelled)]
    );
}

#[test]
fn a_panicking_tool_is_an_internal_error_and_the_runtime_lives() {
    let mut r = registry();
    r.register_fn(
        ToolSpec::new("boom", "Panics.", json!({"type": "object"})),
        |_c, _v| async move {
            if true {
                panic!("kaboom");
            }
            Ok(Reply::new(json!({}), ""))
        },
    )
    .unwrap();
    let rt = rt();
    let env = rt.block_on(r.execute("boom", json!({})));
    assert_eq!(env.error_code(), Some(ErrorCode::Internal));
    assert!(env.text.contains("kaboom"), "{}", env.text);
    let env = rt.block_on(r.execute("range", json!({"start": 1, "end": 2})));
    assert_eq!(env.status, Status::Success);
}

#[test]
fn truncated_arguments_are_refused_for_tools_that_write() {
    let mut r = registry();
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"]
    });
    let writer = ToolSpec::new("save", "Saves a file.", schema.clone()).permission("fs:write");
    r.register_fn(writer, |_c, v| async move { Ok(Reply::new(v, "saved")) })
        .unwrap();
    let reader = ToolSpec::new("show", "Shows text.", schema);
    r.register_fn(reader, |_c, v| async move { Ok(Reply::new(v, "shown")) })
        .unwrap();
    // Cut off by the model's output limit in the middle of `content`.
    let cut = json!("{\"path\": \"a.txt\", \"content\": \"line one\\nline tw");
    let env = rt().block_on(r.execute("save", cut.clone()));
    assert_eq!(env.error_code(), Some(ErrorCode::InvalidParams));
    assert!(env.text.contains("cut off"), "{}", env.text);
    assert!(
        env.context
            .repairs
            .iter()
            .any(|rep| rep.action.contains("closed unterminated string"))
    );
    // A tool that only reads may still run on the repaired arguments.
    let env = rt().block_on(r.execute("show", cut));
    assert_eq!(env.status, Status::Success, "{}", env.text);
    // Complete arguments with other repairs still run for the writer.
    let env =
        rt().block_on(r.execute("save", json!("{\"path\": \"a.txt\", \"content\": \"ok\",}")));
    assert_eq!(env.status, Status::Success, "{}", env.text);
}

#[test]
fn permission_argument_is_what_the_authorizer_judges_and_tools_see_it() {
    #[derive(Debug)]
    struct DenyPrivate;
    impl crate::Authorizer for DenyPrivate {
        fn evaluate(&self, request: &crate::Request<'_>) -> crate::Evaluation {
            if request.subject.is_some_and(|s| s.starts_with("private/")) {
                crate::Evaluation {
                    decision: crate::Decision::Deny,
                    rule: Some("search(./private/**)".into()),
                }
            } else {
                crate::Evaluation::allowed()
            }
        }
        fn secret_defaults(&self) -> bool {
            true
        }
    }
    let mut r = registry();
    let schema = json!({
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}},
        "required": ["pattern"]
    });
    let search = ToolSpec::new("search", "Searches.", schema)
        .permission("fs:read")
        .key_argument("pattern")
        .permission_argument("path");
    r.register_fn(search, |ctx, v| async move {
        let secret_defaults = ctx.authorizer().is_some_and(|a| a.secret_defaults());
        Ok(Reply::new(
            json!({"secret_defaults": secret_defaults, "args": v}),
            "ok",
        ))
    })
    .unwrap();
    r.set_authorizer(std::sync::Arc::new(DenyPrivate));
    // The pattern names a secret file, but the rules look at the path: allowed.
    let env = rt().block_on(r.execute("search", json!({"pattern": ".env"})));
    assert_eq!(env.status, Status::Success, "{}", env.text);
    assert_eq!(env.data["secret_defaults"], json!(true));
    // The path is under a deny rule.
    let env = rt().block_on(r.execute("search", json!({"pattern": "x", "path": "private/notes"})));
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    assert!(env.text.contains("search(./private/**)"), "{}", env.text);
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpanParams {
    /// The first line; `range` measures one without a `start_line`.
    start_line: u32,
    /// Where it ends.
    end_at: Option<u32>,
}

struct SpanTool;

impl TypedTool for SpanTool {
    type Params = SpanParams;
    type Output = RangeOut;
    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("span", "Like `range`, from `start_line` to `end_at`.")
            .category(Category::Files)
            .hints(crate::Hints::read_only())
    }
    fn validate(&self, p: &SpanParams) -> Vec<Violation> {
        match p.end_at {
            Some(end) if end < p.start_line => {
                vec![Violation::new("end_at", "is before `start_line`")]
            }
            _ => Vec::new(),
        }
    }
    async fn call(&self, _ctx: &ToolContext, p: SpanParams) -> ToolResult<RangeOut> {
        let len = p.end_at.unwrap_or(p.start_line) - p.start_line;
        Ok(Reply::new(RangeOut { len }, len.to_string()))
    }
}

#[test]
fn profiles_rename_mentions_and_camel_case_parameters() {
    let mut r = registry();
    r.register_typed(SpanTool).unwrap();
    let profile = crate::profile::Profile::custom("p", [("range", "Range"), ("span", "Span")])
        .unwrap()
        .with_param_case(ParamCase::Camel);
    r.set_profile(profile);
    let defs = r.definitions();
    let span = defs.iter().find(|s| s.name == "Span").unwrap();
    // Tools named in backticks are the exposed ones; parameters are camelCase.
    assert_eq!(
        span.description,
        "Like `Range`, from `startLine` to `endAt`."
    );
    assert_eq!(
        span.input_schema["properties"]["startLine"]["description"],
        "The first line; `Range` measures one without a `startLine`."
    );
    assert_eq!(span.input_schema["required"], json!(["startLine"]));

    let rt = rt();
    let env = rt.block_on(r.execute("Span", json!({"startLine": 2, "endAt": 5})));
    assert_eq!(env.data, json!({"len": 3}), "{}", env.text);
    // The canonical names work too.
    let env = rt.block_on(r.execute("span", json!({"start_line": 2})));
    assert_eq!(env.status, Status::Success, "{}", env.text);
    // Violations name the parameters as the model sees them: the schema's and the
    // tool's own.
    let env = rt.block_on(r.execute("Span", json!({"endAt": 5})));
    let message = &env.error.as_ref().unwrap().message;
    assert!(
        message.contains("\"startLine\" is a required property"),
        "{message}"
    );
    let env = rt.block_on(r.execute("Span", json!({"startLine": 9, "endAt": 5})));
    let message = &env.error.as_ref().unwrap().message;
    assert!(
        message.contains("- endAt: is before `startLine`"),
        "{message}"
    );
    // Without a camelCase profile nothing is renamed.
    r.set_profile(crate::profile::Profile::default_profile());
    let defs = r.definitions();
    let span = defs.iter().find(|s| s.name == "span").unwrap();
    assert_eq!(
        span.description,
        "Like `range`, from `start_line` to `end_at`."
    );
}

#[test]
fn call_ids_are_distinct_time_ordered_uuid_v7s() {
    let before = unix_ms_now();
    let ids: Vec<String> = (0..10_000).map(|_| new_call_id()).collect();
    let after = unix_ms_now();
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len());
    for id in &ids {
        let uuid = uuid::Uuid::parse_str(id.strip_prefix("call_").unwrap()).unwrap();
        assert_eq!(uuid.get_version_num(), 7, "{id}");
        let (secs, nanos) = uuid.get_timestamp().unwrap().to_unix();
        let ms = i64::try_from(secs * 1000 + u64::from(nanos / 1_000_000)).unwrap();
        assert!(
            (before..=after).contains(&ms),
            "{id}: {ms} not in {before}..={after}"
        );
    }
    // Another thread draws from its own key.
    let other = std::thread::spawn(new_call_id).join().unwrap();
    assert!(!distinct.contains(&other));
}

/// Holds every `rm -r` command of the `run` tool with a guard; allows everything.
#[derive(Debug)]
struct GuardRecursiveRm;

impl crate::Authorizer for GuardRecursiveRm {
    fn evaluate(&self, _request: &crate::Request<'_>) -> crate::Evaluation {
        crate::Evaluation::allowed()
    }
    fn guard(&self, request: &crate::Request<'_>) -> Option<crate::Guard> {
        request
            .subject
            .is_some_and(|s| s.starts_with("rm -r"))
            .then(|| crate::Guard {
                rule: "ask before rm -r (test guard)".into(),
                danger: "it deletes a directory tree".into(),
                instead: "delete single files".into(),
            })
    }
}

/// Approves every call, unless a guard holds it (as `--yes` does); records what
/// it was asked.
struct ApproveUnguarded(std::sync::Mutex<Vec<(Option<String>, bool)>>);

impl Approver for ApproveUnguarded {
    fn approve<'a>(&'a self, request: ApprovalRequest<'a>) -> crate::BoxFuture<'a, Approval> {
        crate::sync::lock(&self.0)
            .push((request.rule.map(str::to_string), request.guard.is_some()));
        let answer = match request.guard {
            None => Approval::Approve,
            Some(_) => Approval::Decline {
                reason: Some("nobody approves it here".into()),
            },
        };
        Box::pin(std::future::ready(answer))
    }
}

fn command_registry() -> Registry {
    let mut r = registry();
    let spec = ToolSpec::new(
        "run",
        "Runs a command.",
        json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
    )
    .permission_argument("command");
    r.register_fn(spec, |_ctx, v| async move { Ok(Reply::new(v, "ran")) })
        .unwrap();
    r.set_authorizer(Arc::new(GuardRecursiveRm));
    r
}

/// Sets an [`ApproveUnguarded`] approver on `r`, runs `ls`, which must run
/// without the person being asked, then `rm -rf build`: the approver and that
/// call's envelope.
fn ls_then_rm_rf(r: &mut Registry) -> (Arc<ApproveUnguarded>, Envelope) {
    let approver = Arc::new(ApproveUnguarded(std::sync::Mutex::new(Vec::new())));
    r.set_approver(Some(approver.clone()));
    let rt = rt();
    let env = rt.block_on(r.execute("run", json!({"command": "ls"})));
    assert_eq!(env.status, Status::Success, "{}", env.text);
    assert!(crate::sync::lock(&approver.0).is_empty());
    let env = rt.block_on(r.execute("run", json!({"command": "rm -rf build"})));
    (approver, env)
}

#[test]
fn a_guarded_call_is_asked_even_where_the_rules_allow_it() {
    let mut r = command_registry();
    // Not held (ls): allowed without asking. Held: asked, with the guard and
    // under its name; declined with what it would destroy and the safer way.
    let (approver, env) = ls_then_rm_rf(&mut r);
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    let error = env.error.as_ref().unwrap();
    assert_eq!(
        error.message,
        "run on \"rm -rf build\" was not run: it deletes a directory tree, which cannot be undone, so it needs the user's approval, and it was not approved (nobody approves it here)"
    );
    assert_eq!(
        error.hint.as_deref(),
        Some("delete single files; do not retry it unchanged")
    );
    assert_eq!(
        *crate::sync::lock(&approver.0),
        [(Some("ask before rm -r (test guard)".to_string()), true)]
    );
    // Without an approver, the same.
    r.set_approver(None);
    let env = rt().block_on(r.execute("run", json!({"command": "rm -r x"})));
    assert!(
        env.text.contains("it deletes a directory tree"),
        "{}",
        env.text
    );
}

/// A `permission_request` hook that allows every call it is asked about.
#[derive(Debug)]
struct AllowEveryPermission;

impl crate::hooks::CallHooks for AllowEveryPermission {
    fn wants(&self, event: crate::hooks::HookEvent) -> bool {
        event == crate::hooks::HookEvent::PermissionRequest
    }
    fn run<'a>(
        &'a self,
        _input: crate::hooks::HookInput<'a>,
    ) -> crate::BoxFuture<'a, crate::hooks::HookVerdict> {
        Box::pin(std::future::ready(crate::hooks::HookVerdict {
            decision: crate::hooks::HookDecision::Allow,
            ..Default::default()
        }))
    }
}

#[test]
fn a_hook_answers_for_the_person_but_not_for_a_guarded_call() {
    let mut r = command_registry();
    // Every call asks (a rule would), and a hook allows every one.
    r.set_authorizer(Arc::new(AskEverythingGuardRm));
    r.set_hooks(Some(Arc::new(AllowEveryPermission)));
    // Asked by a rule (ls): the hook approves it, the person is not asked.
    // Held by a guard: the hook's allow does not count; the person is asked.
    let (approver, env) = ls_then_rm_rf(&mut r);
    assert_eq!(
        env.error_code(),
        Some(ErrorCode::AccessDenied),
        "{}",
        env.text
    );
    assert_eq!(crate::sync::lock(&approver.0).len(), 1);
    assert!(crate::sync::lock(&approver.0)[0].1, "asked with the guard");
}

/// Asks about every call (as an `ask` rule does), and guards `rm -r` as
/// [`GuardRecursiveRm`] does.
#[derive(Debug)]
struct AskEverythingGuardRm;

impl crate::Authorizer for AskEverythingGuardRm {
    fn evaluate(&self, _request: &crate::Request<'_>) -> crate::Evaluation {
        crate::Evaluation {
            decision: crate::Decision::Ask,
            rule: Some("ask: run(*) (test rule)".into()),
        }
    }
    fn guard(&self, request: &crate::Request<'_>) -> Option<crate::Guard> {
        GuardRecursiveRm.guard(request)
    }
}

#[test]
fn a_tools_error_names_the_tools_it_points_to_as_the_profile_does() {
    let mut r = registry();
    let spec = ToolSpec::new("fails", "Fails.", json!({"type": "object"}));
    r.register_fn(spec, |_ctx, _v| async move {
        Err::<Reply<Value>, _>(
            ToolError::new(ErrorCode::Conflict, "not done: read it with `range` first")
                .hint("then call `range` again, not range"),
        )
    })
    .unwrap();
    r.set_profile(crate::profile::Profile::custom("p", [("range", "Range")]).unwrap());
    let env = rt().block_on(r.execute("fails", json!({})));
    let error = env.error.as_ref().unwrap();
    assert_eq!(error.message, "not done: read it with `Range` first");
    assert_eq!(
        error.hint.as_deref(),
        Some("then call `Range` again, not range")
    );
    assert!(
        env.text.contains("read it with `Range` first"),
        "{}",
        env.text
    );
    assert!(env.text.contains("then call `Range` again"), "{}", env.text);
}
