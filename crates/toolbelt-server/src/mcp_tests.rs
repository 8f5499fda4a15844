use std::time::Duration;

use pretty_assertions::assert_eq;
use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequest, ClientConfig, ClientRequest, ErrorCode as RpcCode, ProgressNotificationParam,
    RequestParamsMeta,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use serde_json::json;
use toolbelt_core::{Reply, Session, ToolContext, ToolSpec};

use super::lines::{INVALID_REQUEST_CODE, PARSE_ERROR_CODE, PIPE_BYTES};
use super::server::call_result;
use super::*;
use rmcp::ErrorData as McpError;
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, ProgressToken, Prompt, Role, Tool,
};
use rmcp::service::RequestContext;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use toolbelt_core::{Envelope, ErrorCode, Registry};
use toolbelt_tools::Skills;

/// Every test gives up after this long.
const TEST_TIMEOUT: Duration = Duration::from_secs(20);

/// A client that records the progress and list-changed notifications it receives.
#[derive(Clone)]
struct Recorder {
    progress: mpsc::UnboundedSender<ProgressNotificationParam>,
    changed: mpsc::UnboundedSender<Changed>,
}

/// A list the server said changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Changed {
    Tools,
    Prompts,
}

impl ClientHandler for Recorder {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::default()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.send(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(Changed::Tools);
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(Changed::Prompts);
    }
}

/// Reports when the call that holds it is dropped (stopped).
struct Stopped(mpsc::UnboundedSender<()>);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

struct Harness {
    client: RunningService<RoleClient, Recorder>,
    progress: mpsc::UnboundedReceiver<ProgressNotificationParam>,
    changed: mpsc::UnboundedReceiver<Changed>,
    cancelled: mpsc::UnboundedReceiver<()>,
    dir: tempfile::TempDir,
}

/// Registers the built-ins, `skill` serving the skills of the registry's roots
/// only (never the user's own).
fn register_builtins(registry: &mut Registry) {
    let skills = Skills::discover(registry.session().roots(), None);
    toolbelt_tools::register_builtins_with(
        registry,
        toolbelt_tools::BuiltinOptions {
            skills: Some(skills),
            ..toolbelt_tools::BuiltinOptions::default()
        },
    )
    .unwrap();
}

/// A registry with the built-ins plus `count_to` (reports progress) and `wait`
/// (runs until cancelled), over a temporary workspace with `hello.txt`, its skills
/// served as prompts too.
async fn harness() -> Harness {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
    let mut registry =
        Registry::new(Session::new(dir.path()).with_state_dir(dir.path().join(".toolbelt")));
    register_builtins(&mut registry);
    let count_spec = ToolSpec::new(
        "count_to",
        "Counts to n, reporting progress.",
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    );
    registry
        .register_fn(count_spec, |ctx: ToolContext, args: Value| async move {
            let n = args["n"].as_u64().unwrap_or(0);
            for i in 1..=n {
                ctx.progress(i as f64, Some(n as f64), Some(&format!("step {i}")));
            }
            Ok(Reply::new(json!({"n": n}), format!("counted to {n}")))
        })
        .unwrap();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    let wait_spec = ToolSpec::new(
        "wait",
        "Waits until cancelled.",
        json!({"type": "object", "properties": {}}),
    );
    registry
        .register_fn(wait_spec, move |_ctx: ToolContext, _args: Value| {
            let stopped = Stopped(cancelled_tx.clone());
            async move {
                // Only a stopped call drops `stopped` before the test's timeout.
                tokio::time::sleep(Duration::from_secs(60)).await;
                drop(stopped);
                Ok(Reply::new(json!({}), "done"))
            }
        })
        .unwrap();
    let skills = Skills::discover(registry.session().roots(), None);
    // The envelope is what these tests look at.
    let server = McpServer::new(Arc::new(registry))
        .with_skills(skills)
        .with_options(McpOptions {
            structured_content: StructuredContent::Always,
            ..McpOptions::default()
        });
    let (server_io, client_io) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        let running = server.serve(server_io).await.unwrap();
        let _ = running.waiting().await;
    });
    let (progress_tx, progress) = mpsc::unbounded_channel();
    let (changed_tx, changed) = mpsc::unbounded_channel();
    let client = Recorder {
        progress: progress_tx,
        changed: changed_tx,
    }
    .serve(client_io)
    .await
    .unwrap();
    Harness {
        client,
        progress,
        changed,
        cancelled,
        dir,
    }
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(args) = arguments {
        params.arguments = Some(args);
    }
    params
}

async fn with_timeout<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(TEST_TIMEOUT, f)
        .await
        .expect("the test timed out")
}

#[tokio::test]
async fn initialize_names_the_server_and_offers_tools() {
    with_timeout(async {
        let h = harness().await;
        let info = h.client.peer_info().unwrap();
        assert_eq!(info.server_info.as_ref().unwrap().name, "toolbelt");
        assert_eq!(
            info.server_info.as_ref().unwrap().version,
            env!("CARGO_PKG_VERSION")
        );
        let tools = info.capabilities.tools.clone().unwrap();
        assert_eq!(tools.list_changed, Some(true));
        let prompts = info.capabilities.prompts.clone().unwrap();
        assert_eq!(prompts.list_changed, Some(true));
        assert!(
            info.instructions
                .as_deref()
                .unwrap()
                .contains("read_output")
        );
    })
    .await;
}

#[tokio::test]
async fn tools_list_has_every_builtin_with_annotations() {
    with_timeout(async {
        let h = harness().await;
        let tools = h.client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            vec![
                "analyze_patterns",
                "apply_patch",
                "ask_user",
                "bash",
                "bash_output",
                "complete_task",
                "count_to",
                "create_goal",
                "create_project",
                "create_task",
                "delete_project",
                "edit_file",
                "get_project",
                "glob",
                "grep",
                "kill_shell",
                "link_goal_to_project",
                "list_dir",
                "list_goals",
                "list_projects",
                "list_reviews",
                "list_shells",
                "list_tasks",
                "multi_edit",
                "read_file",
                "read_output",
                "set_todo_list",
                "skill",
                "think",
                "update_project",
                "update_todos",
                "wait",
                "web_fetch",
                "web_search",
                "write_file",
                "write_review",
                "write_stdin",
            ]
        );
        let read = tools.iter().find(|t| t.name == "read_file").unwrap();
        let notes = read.annotations.clone().unwrap();
        assert_eq!(notes.read_only_hint, Some(true));
        assert_eq!(notes.destructive_hint, Some(false));
        assert_eq!(notes.open_world_hint, Some(false));
        assert!(read.title.is_some());
        assert!(read.input_schema.contains_key("properties"));
        assert!(read.output_schema.is_some());
        let write = tools.iter().find(|t| t.name == "write_file").unwrap();
        assert_eq!(
            write.annotations.clone().unwrap().read_only_hint,
            Some(false)
        );
    })
    .await;
}

#[tokio::test]
async fn think_answers_with_text_and_the_envelope() {
    with_timeout(async {
        let h = harness().await;
        let result = h
            .client
            .call_tool(call("think", json!({"thought": "plan the change"})))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false));
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["status"], "success");
        assert_eq!(structured["context"]["tool"], "think");
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(!text.is_empty());
    })
    .await;
}

#[tokio::test]
async fn read_file_reads_the_workspace() {
    with_timeout(async {
        let h = harness().await;
        let result = h
            .client
            .call_tool(call("read_file", json!({"path": "hello.txt"})))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false));
        let text = &result.content[0].as_text().unwrap().text;
        assert!(text.contains("hello"), "{text}");
        assert!(text.contains("world"), "{text}");
        assert_eq!(result.structured_content.unwrap()["status"], "success");
    })
    .await;
}

#[tokio::test]
async fn invalid_arguments_are_a_tool_error_naming_the_field() {
    with_timeout(async {
        let h = harness().await;
        let result = h
            .client
            .call_tool(call("read_file", json!({"path": "hello.txt", "bogus": 1})))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true));
        let structured = result.structured_content.unwrap();
        assert_eq!(structured["error"]["code"], "INVALID_PARAMS");
        let text = &result.content[0].as_text().unwrap().text;
        assert!(text.contains("bogus"), "{text}");
    })
    .await;
}

#[tokio::test]
async fn an_unknown_tool_is_a_protocol_error_with_close_names() {
    with_timeout(async {
        let h = harness().await;
        let err = h
            .client
            .call_tool(call("read_fil", json!({})))
            .await
            .unwrap_err();
        let rmcp::ServiceError::McpError(err) = err else {
            panic!("expected a JSON-RPC error, got {err:?}");
        };
        assert_eq!(err.code, RpcCode::INVALID_PARAMS);
        assert!(err.message.contains("read_file"), "{}", err.message);
    })
    .await;
}

#[tokio::test]
async fn progress_reaches_the_client_before_the_result() {
    with_timeout(async {
        let mut h = harness().await;
        let mut params = call("count_to", json!({"n": 3}));
        params.set_progress_token(ProgressToken(rmcp::model::NumberOrString::String(
            "p1".into(),
        )));
        let result = h.client.call_tool(params).await.unwrap();
        assert_eq!(result.is_error, Some(false));
        let mut seen = Vec::new();
        while let Ok(p) = h.progress.try_recv() {
            seen.push((p.progress, p.total, p.message));
        }
        assert_eq!(
            seen,
            vec![
                (1.0, Some(3.0), Some("step 1".to_owned())),
                (2.0, Some(3.0), Some("step 2".to_owned())),
                (3.0, Some(3.0), Some("step 3".to_owned())),
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn cancellation_stops_the_call() {
    with_timeout(async {
        let mut h = harness().await;
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(call("wait", json!({}))));
        let handle = h
            .client
            .peer()
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .unwrap();
        // Let the call start before cancelling it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        handle
            .cancel(Some("the user stopped".into()))
            .await
            .unwrap();
        assert_eq!(h.cancelled.recv().await, Some(()));
        // The server keeps serving.
        let result = h
            .client
            .call_tool(call("think", json!({"thought": "still here"})))
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(false));
    })
    .await;
}

/// Runs [`serve_lines`] on in-memory pipes; returns the client's ends.
fn lines_server() -> (
    tokio::io::DuplexStream,
    tokio::io::Lines<BufReader<tokio::io::DuplexStream>>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut registry = Registry::new(Session::new(dir.path()));
    register_builtins(&mut registry);
    let (client_in, server_in) = tokio::io::duplex(PIPE_BYTES);
    let (server_out, client_out) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(serve_lines(
        McpServer::new(Arc::new(registry)),
        server_in,
        server_out,
    ));
    (client_in, BufReader::new(client_out).lines(), dir)
}

async fn answer(lines: &mut tokio::io::Lines<BufReader<tokio::io::DuplexStream>>) -> Value {
    let line = lines.next_line().await.unwrap().unwrap();
    serde_json::from_str(&line).unwrap()
}

async fn send(input: &mut tokio::io::DuplexStream, message: &Value) {
    input
        .write_all(format!("{message}\n").as_bytes())
        .await
        .unwrap();
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
}

#[tokio::test]
async fn messages_before_initialize_are_answered_or_dropped_and_the_handshake_still_works() {
    with_timeout(async {
        let (mut input, mut output, _dir) = lines_server();
        // A notification and a response first: the engine would end the session
        // on either, so they are dropped.
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 7, "result": {}}),
        )
        .await;
        // A request before initialize is answered with an error.
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
        let early = answer(&mut output).await;
        assert_eq!(early["id"], 1);
        assert_eq!(early["error"]["code"], INVALID_REQUEST_CODE);
        let message = early["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("\"tools/list\"") && message.contains("initialize"),
            "{message}"
        );
        // A 2026-07-28 request missing a key hears which.
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list",
            "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
        )
        .await;
        let partial = answer(&mut output).await;
        assert_eq!(partial["id"], 8);
        let message = partial["error"]["message"].as_str().unwrap();
        assert!(message.contains("clientCapabilities"), "{message}");
        // ping is allowed before initialize.
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
        )
        .await;
        assert_eq!(
            answer(&mut output).await,
            json!({"jsonrpc": "2.0", "id": 2, "result": {}})
        );
        send(&mut input, &initialize(3)).await;
        let init = answer(&mut output).await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "think", "arguments": {"thought": "hi"}}}),
        )
        .await;
        let called = answer(&mut output).await;
        assert_eq!(called["id"], 4);
        assert_eq!(called["result"]["isError"], false);
        // The 2025-11-25 revision has no resultType.
        assert!(called["result"].get("resultType").is_none(), "{called}");
    })
    .await;
}

#[tokio::test]
async fn the_2026_07_28_revision_works_without_a_handshake() {
    with_timeout(async {
        let (mut input, mut output, _dir) = lines_server();
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            // The client named in `_meta` (no handshake): the Inspector gets the envelope.
            "io.modelcontextprotocol/clientInfo": {"name": "inspector-cli", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
            "params": {"_meta": meta}}),
        )
        .await;
        let discovered = answer(&mut output).await;
        let versions = discovered["result"]["supportedVersions"]
            .as_array()
            .unwrap();
        assert!(versions.contains(&json!("2026-07-28")), "{discovered}");
        assert!(versions.contains(&json!("2025-11-25")), "{discovered}");
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
            "params": {"_meta": meta}}),
        )
        .await;
        let listed = answer(&mut output).await;
        assert_eq!(listed["result"]["resultType"], "complete");
        assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 35);
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "think", "arguments": {"thought": "hi"}, "_meta": meta}}),
        )
        .await;
        let called = answer(&mut output).await;
        assert_eq!(called["result"]["resultType"], "complete", "{called}");
        assert_eq!(called["result"]["structuredContent"]["status"], "success");
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": ""}, "_meta": meta}}),
        )
        .await;
        let invalid = answer(&mut output).await;
        assert_eq!(invalid["result"]["resultType"], "complete", "{invalid}");
        assert_eq!(invalid["result"]["isError"], true);
    })
    .await;
}

#[tokio::test]
async fn malformed_lines_are_answered_and_the_server_goes_on() {
    with_timeout(async {
        let (mut input, mut output, _dir) = lines_server();
        input.write_all(b"this is not json\n").await.unwrap();
        let garbage = answer(&mut output).await;
        assert_eq!(garbage["error"]["code"], PARSE_ERROR_CODE);
        assert_eq!(garbage["id"], Value::Null);
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\n")
            .await
            .unwrap();
        assert_eq!(answer(&mut output).await["error"]["code"], PARSE_ERROR_CODE);
        let deep = format!("{}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        input.write_all(deep.as_bytes()).await.unwrap();
        assert!(
            answer(&mut output).await["error"]["message"]
                .as_str()
                .unwrap()
                .contains("nested")
        );
        // A 100 MB line, streamed in pieces: discarded as it comes, never held whole.
        let writer = async {
            let piece = vec![b'x'; 1 << 20];
            for _ in 0..100 {
                input.write_all(&piece).await.unwrap();
            }
            input.write_all(b"\n").await.unwrap();
            input
        };
        let (mut input, huge_answer) = tokio::join!(writer, answer(&mut output));
        assert_eq!(huge_answer["error"]["code"], INVALID_REQUEST_CODE);
        let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        input
            .write_all(format!("{init}\n").as_bytes())
            .await
            .unwrap();
        let init = answer(&mut output).await;
        assert_eq!(init["id"], 2);
        assert_eq!(init["result"]["serverInfo"]["name"], "toolbelt");
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .await
            .unwrap();
        input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}\n")
            .await
            .unwrap();
        let list = answer(&mut output).await;
        assert_eq!(list["id"], 3);
        assert_eq!(list["result"]["tools"].as_array().unwrap().len(), 35);
    })
    .await;
}

/// A client whose roots the test changes.
#[derive(Clone)]
struct RootsClient {
    roots: Arc<std::sync::Mutex<Vec<PathBuf>>>,
}

#[allow(deprecated, reason = "roots are what clients send today")]
impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.capabilities = rmcp::model::ClientCapabilities::builder()
            .enable_roots()
            .enable_roots_list_changed()
            .build();
        config
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, McpError> {
        let roots = self.roots.lock().unwrap().clone();
        Ok(rmcp::model::ListRootsResult::new(
            roots
                .iter()
                .map(|p| {
                    rmcp::model::Root::new(url::Url::from_directory_path(p).unwrap().to_string())
                })
                .collect(),
        ))
    }
}

fn builtins_on(roots: Vec<PathBuf>) -> Result<Registry, crate::mcp::RootsError> {
    let mut registry = Registry::new(Session::new(roots[0].clone()).with_roots(roots));
    register_builtins(&mut registry);
    Ok(registry)
}

/// Calls `read_file` on `path` until it succeeds.
async fn eventually_reads(client: &RunningService<RoleClient, RootsClient>, path: &str) -> String {
    loop {
        let result = client
            .call_tool(call("read_file", json!({"path": path})))
            .await
            .unwrap();
        if result.is_error == Some(false) {
            return result.content[0].as_text().unwrap().text.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn the_clients_roots_become_the_workspace() {
    with_timeout(async {
        let start = tempfile::tempdir().unwrap();
        let first = tempfile::tempdir().unwrap();
        std::fs::write(first.path().join("first.txt"), "from the first root\n").unwrap();
        let second = tempfile::tempdir().unwrap();
        std::fs::write(second.path().join("second.txt"), "from the second root\n").unwrap();

        let server = McpServer::new(Arc::new(
            builtins_on(vec![start.path().to_owned()]).unwrap(),
        ))
        .with_client_roots(builtins_on);
        let (server_io, client_io) = tokio::io::duplex(PIPE_BYTES);
        tokio::spawn(async move {
            let running = server.serve(server_io).await.unwrap();
            let _ = running.waiting().await;
        });
        let roots = Arc::new(std::sync::Mutex::new(vec![first.path().to_owned()]));
        let client = RootsClient {
            roots: Arc::clone(&roots),
        }
        .serve(client_io)
        .await
        .unwrap();

        let text = eventually_reads(&client, "first.txt").await;
        assert!(text.contains("from the first root"), "{text}");

        *roots.lock().unwrap() = vec![second.path().to_owned()];
        client.notify_roots_list_changed().await.unwrap();
        let text = eventually_reads(&client, "second.txt").await;
        assert!(text.contains("from the second root"), "{text}");
    })
    .await;
}

#[test]
fn tool_results_have_the_shape_of_the_mcp_export() {
    let envelopes = [
        Envelope::success(json!({"entries": [1, 2, {"name": "a"}]}), "two entries"),
        Envelope::partial(json!({"shown": 1}), "cut short"),
        Envelope::error(ErrorCode::NotFound, "no such file", Some("list_dir".into())),
        Envelope::success(
            json!({"image": {"mime_type": "image/png", "data": "iVBORw0KGgo=", "width": 1}}),
            "an image",
        ),
        Envelope::success(
            json!({"image": {"mime_type": "text/plain", "data": "not an image"}}),
            "not an image",
        ),
    ];
    for env in envelopes {
        let mut expected = toolbelt_wire::calls::to_mcp_call_result(&env);
        expected["resultType"] = json!("complete");
        assert_eq!(
            serde_json::to_value(call_result(env.clone(), true)).unwrap(),
            expected
        );
        // Without structured content: the same, less the envelope.
        expected
            .as_object_mut()
            .unwrap()
            .remove("structuredContent");
        assert_eq!(
            serde_json::to_value(call_result(env, false)).unwrap(),
            expected
        );
    }
}

/// Writes the skill `name` into the root's `.toolbelt/skills/`.
fn write_skill(root: &std::path::Path, name: &str, description: &str, body: &str) -> PathBuf {
    let folder = root.join(".toolbelt/skills").join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}"),
    )
    .unwrap();
    folder
}

/// The `skill` tool's description in a `tools/list`.
fn skill_description(tools: &[Tool]) -> String {
    tools
        .iter()
        .find(|t| t.name == "skill")
        .and_then(|t| t.description.as_deref())
        .unwrap()
        .to_string()
}

/// Waits for the server to say that `list` changed.
async fn changed(h: &mut Harness, list: Changed) {
    loop {
        let got = tokio::time::timeout(Duration::from_secs(5), h.changed.recv())
            .await
            .unwrap_or_else(|_| panic!("no notification that the {list:?} changed within 5 s"))
            .unwrap();
        if got == list {
            return;
        }
    }
}

#[tokio::test]
async fn a_skill_added_on_disk_is_announced_and_listed() {
    with_timeout(async {
        let mut h = harness().await;
        let tools = h.client.list_all_tools().await.unwrap();
        let before = skill_description(&tools);
        assert!(
            before.ends_with("No skills are installed at the moment."),
            "{before}"
        );
        assert_eq!(h.client.list_all_prompts().await.unwrap(), Vec::new());

        write_skill(
            h.dir.path(),
            "pdf",
            "Fill PDF forms.",
            "Use the form script.\n",
        );
        changed(&mut h, Changed::Tools).await;
        let tools = h.client.list_all_tools().await.unwrap();
        let after = skill_description(&tools);
        assert!(
            after.ends_with("\n\nSkills:\n- pdf: Fill PDF forms."),
            "{after}"
        );
        changed(&mut h, Changed::Prompts).await;
        let prompts = h.client.list_all_prompts().await.unwrap();
        assert_eq!(
            prompts,
            vec![Prompt::new("pdf", Some("Fill PDF forms."), None)]
        );

        // Nothing changes: nothing is announced.
        tokio::time::sleep(LIST_POLL_INTERVAL * 2).await;
        assert_eq!(h.changed.try_recv().ok(), None);
    })
    .await;
}

#[tokio::test]
async fn prompts_are_the_skills_instructions() {
    with_timeout(async {
        let h = harness().await;
        let folder = write_skill(
            h.dir.path(),
            "pdf",
            "Fill PDF forms.",
            "Run `uv run scripts/fill.py`.\n",
        );
        write_skill(h.dir.path(), "docx", "Word files.", "Use python-docx.\n");
        let names: Vec<String> = h
            .client
            .list_all_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, vec!["docx", "pdf"]);

        let prompt = h
            .client
            .get_prompt(GetPromptRequestParams::new("pdf"))
            .await
            .unwrap();
        assert_eq!(prompt.description.as_deref(), Some("Fill PDF forms."));
        assert_eq!(prompt.messages.len(), 1);
        assert_eq!(prompt.messages[0].role, Role::User);
        let text = prompt.messages[0].content.as_text().unwrap().text.clone();
        assert_eq!(
            text,
            format!(
                "Skill \"pdf\" from the folder {} (run its scripts and open its files from there).\n\n\
                 Run `uv run scripts/fill.py`.\n",
                folder.display()
            )
        );

        let err = h
            .client
            .get_prompt(GetPromptRequestParams::new("pdff"))
            .await
            .unwrap_err();
        let rmcp::ServiceError::McpError(err) = err else {
            panic!("not an MCP error: {err:?}");
        };
        assert_eq!(err.code, RpcCode::INVALID_PARAMS);
        assert_eq!(
            err.message,
            "there is no skill named \"pdff\"; did you mean \"pdf\"?"
        );
    })
    .await;
}

#[tokio::test]
async fn the_skills_follow_the_clients_roots() {
    with_timeout(async {
        let start = tempfile::tempdir().unwrap();
        let client_root = tempfile::tempdir().unwrap();
        write_skill(
            client_root.path(),
            "theirs",
            "In the client's root.",
            "Body.\n",
        );
        let registry = builtins_on(vec![start.path().to_owned()]).unwrap();
        let skills = Skills::discover(registry.session().roots(), None);
        let server = McpServer::new(Arc::new(registry))
            .with_skills(skills)
            .with_client_roots(builtins_on);
        let (server_io, client_io) = tokio::io::duplex(PIPE_BYTES);
        tokio::spawn(async move {
            let running = server.serve(server_io).await.unwrap();
            let _ = running.waiting().await;
        });
        let client = RootsClient {
            roots: Arc::new(std::sync::Mutex::new(vec![client_root.path().to_owned()])),
        }
        .serve(client_io)
        .await
        .unwrap();
        loop {
            let prompts = client.list_all_prompts().await.unwrap();
            if prompts.iter().any(|p| p.name == "theirs") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let tools = client.list_all_tools().await.unwrap();
        assert!(skill_description(&tools).contains("- theirs: In the client's root."));
    })
    .await;
}

#[tokio::test]
async fn the_list_watch_ends_with_the_connection() {
    with_timeout(async {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::new(Session::new(dir.path()));
        register_builtins(&mut registry);
        let server = McpServer::new(Arc::new(registry));
        let probe = server.clone();
        let (server_io, client_io) = tokio::io::duplex(PIPE_BYTES);
        tokio::spawn(async move {
            let running = server.serve(server_io).await.unwrap();
            let _ = running.waiting().await;
        });
        let (progress, _) = mpsc::unbounded_channel();
        let (changed, _) = mpsc::unbounded_channel();
        let client = Recorder { progress, changed }
            .serve(client_io)
            .await
            .unwrap();
        // The probe, the connection and, once the handshake is done, its watch.
        while Arc::strong_count(&probe.served) < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        client.cancel().await.unwrap();
        // The watch notices within one interval that the client is gone.
        while Arc::strong_count(&probe.served) > 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn subscriptions_listen_is_acknowledged_and_carries_list_changes() {
    with_timeout(async {
        let (mut input, mut output, dir) = lines_server();
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        send(
            &mut input,
            &json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
            "params": {"notifications": {"toolsListChanged": true, "promptsListChanged": true},
                       "_meta": meta}}),
        )
        .await;
        let ack = answer(&mut output).await;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        // Tools only: this server serves no prompts.
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true}),
            "{ack}"
        );
        // A skill added on disk changes `skill`'s description: the stream says so.
        write_skill(dir.path(), "fresh", "A new skill.", "Do it.");
        let changed = answer(&mut output).await;
        assert_eq!(
            changed["method"], "notifications/tools/list_changed",
            "{changed}"
        );
    })
    .await;
}
