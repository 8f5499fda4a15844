//! Requests for small local models, against the scripted provider: the sampling
//! settings and the reply constraints as each wire format sends them, a server
//! that cannot read the model's tool call (answered at once, not retried), and
//! the probes for what a server honours.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use toolbelt_agent::provider::{ReplyConstraint, probe_tool_choice};
use toolbelt_agent::testing::{Reply, Script, ScriptedServer};
use toolbelt_agent::{
    Message, ModelRequest, ProviderConfig, ProviderError, ProviderKind, RetryPolicy, Secret,
    ServerInfo, build_provider, probe_server,
};

/// The longest any test may take.
const TEST_TIMEOUT: Duration = Duration::from_secs(20);
/// The API key; no error may show it.
const KEY: &str = "sk-shaped-5e4d3c2b1a";

fn config(server: &ScriptedServer) -> ProviderConfig {
    let mut config = ProviderConfig::new(server.kind(), "small-local-model");
    config.base_url = server.base_url();
    config.api_key = Some(Secret::new(KEY));
    config.retry = RetryPolicy {
        max_attempts: 4,
        initial_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        max_retry_after: Duration::from_millis(50),
    };
    config
}

fn request(constraint: Option<ReplyConstraint>, tools: Option<Value>) -> ModelRequest {
    ModelRequest {
        system: "Be brief.".into(),
        messages: vec![Message::user("Go.")],
        tools: tools.map(Arc::new),
        constraint,
        ..ModelRequest::default()
    }
}

fn openai_tools() -> Value {
    json!([{"type": "function", "function": {"name": "finish", "description": "Ends it.",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}}}}])
}

async fn complete(
    config: ProviderConfig,
    request: &ModelRequest,
) -> Result<toolbelt_agent::ModelResponse, ProviderError> {
    let provider = build_provider(config).unwrap();
    tokio::time::timeout(
        TEST_TIMEOUT,
        provider.complete(request, &|_| {}, &CancellationToken::new()),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn openai_sends_the_sampling_settings_and_each_constraint() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        (0..5).map(|_| Reply::text("ok")).collect(),
    ))
    .unwrap();
    let mut sampled = config(&server);
    sampled.temperature = Some(0.2);
    sampled.seed = Some(7);
    let schema = Arc::new(json!({"type": "object"}));
    let requests = [
        request(Some(ReplyConstraint::ToolRequired), Some(openai_tools())),
        request(Some(ReplyConstraint::ToolRequired), None),
        request(
            Some(ReplyConstraint::Grammar("root ::= \"ok\"".into())),
            None,
        ),
        request(Some(ReplyConstraint::JsonSchema(Arc::clone(&schema))), None),
    ];
    for r in &requests {
        complete(sampled.clone(), r).await.unwrap();
    }
    complete(config(&server), &request(None, None))
        .await
        .unwrap();

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    let field = |i: usize, key: &str| bodies[i].get(key).cloned();
    for body in &bodies[..4] {
        assert_eq!(body.get("temperature"), Some(&json!(0.2)), "{body}");
        assert_eq!(body.get("seed"), Some(&json!(7)));
    }
    assert_eq!(field(0, "tool_choice"), Some(json!("required")));
    // No tools: nothing to require.
    assert_eq!(field(1, "tool_choice"), None);
    assert_eq!(field(2, "grammar"), Some(json!("root ::= \"ok\"")));
    assert_eq!(
        field(3, "response_format"),
        Some(json!({"type": "json_schema",
            "json_schema": {"name": "reply", "strict": true, "schema": {"type": "object"}}}))
    );
    for key in [
        "temperature",
        "seed",
        "tool_choice",
        "grammar",
        "response_format",
    ] {
        assert_eq!(field(4, key), None, "{key}");
        if key != "temperature" && key != "seed" {
            let others: Vec<usize> = (0..4).filter(|i| field(*i, key).is_some()).collect();
            assert_eq!(others.len(), 1, "{key} sent more than once: {others:?}");
        }
    }
}

#[tokio::test]
async fn anthropic_sends_the_temperature_and_any_tool_but_no_seed() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::Anthropic,
        vec![Reply::text("ok"), Reply::text("ok")],
    ))
    .unwrap();
    let mut sampled = config(&server);
    sampled.temperature = Some(0.0);
    sampled.seed = Some(7);
    let tools = json!([{"name": "finish", "description": "Ends it.",
        "input_schema": {"type": "object"}}]);
    complete(
        sampled.clone(),
        &request(Some(ReplyConstraint::ToolRequired), Some(tools)),
    )
    .await
    .unwrap();
    complete(
        sampled,
        &request(
            Some(ReplyConstraint::Grammar("root ::= \"ok\"".into())),
            None,
        ),
    )
    .await
    .unwrap();
    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies[0]["temperature"], json!(0.0));
    assert_eq!(bodies[0]["tool_choice"], json!({"type": "any"}));
    assert_eq!(bodies[0].get("seed"), None);
    for key in ["tool_choice", "grammar", "response_format", "seed"] {
        assert_eq!(bodies[1].get(key), None, "{key}");
    }
}

#[tokio::test]
async fn a_call_the_server_cannot_read_is_answered_at_once() {
    for said in [
        format!(
            "Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse \
             error at line 1, column 40: syntax error while parsing value - invalid string: \
             missing closing quote; last read: '\"{KEY}'"
        ),
        "Failed to parse input at pos 13: <tool_call>{\"name\": \"finish\"".to_string(),
        "The model produced output that does not match the expected Hermes 2 Pro format"
            .to_string(),
    ] {
        let server = ScriptedServer::start(Script::new(
            ProviderKind::OpenAi,
            vec![Reply::error(500, None, said.clone()), Reply::text("never")],
        ))
        .unwrap();
        let err = complete(config(&server), &request(None, None))
            .await
            .unwrap_err();
        assert!(err.is_malformed_call(), "{err:?}");
        let ProviderError::MalformedCall {
            provider,
            status,
            message,
        } = &err
        else {
            panic!("{err:?}");
        };
        assert_eq!((*provider, *status), (ProviderKind::OpenAi, 500));
        assert_eq!(message, &said.replace(KEY, "***"));
        assert!(!err.to_string().contains(KEY), "{err}");
        assert_eq!(server.requests().len(), 1, "asked again: {said}");
        assert_eq!(server.remaining(), 1);
    }
}

#[tokio::test]
async fn a_plain_server_error_is_still_retried() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![
            Reply::error(500, None, "Internal server error"),
            Reply::text("ok"),
        ],
    ))
    .unwrap();
    let response = complete(config(&server), &request(None, None))
        .await
        .unwrap();
    assert_eq!(response.content, "ok");
    assert_eq!(server.requests().len(), 2);
    let server = ScriptedServer::start(
        Script::new(ProviderKind::OpenAi, Vec::new()).when_done(Reply::error(
            503,
            None,
            "Loading model",
        )),
    )
    .unwrap();
    let err = complete(config(&server), &request(None, None))
        .await
        .unwrap_err();
    assert!(!err.is_malformed_call(), "{err:?}");
    assert!(
        matches!(
            err,
            ProviderError::Status {
                status: 503,
                attempts: 4,
                ..
            }
        ),
        "{err:?}"
    );
}

async fn probe(server: &ScriptedServer) -> Option<bool> {
    tokio::time::timeout(TEST_TIMEOUT, probe_tool_choice(&config(server)))
        .await
        .unwrap()
}

#[tokio::test]
async fn the_tool_choice_probe_sees_a_forced_call() {
    let server = ScriptedServer::start(Script::new(
        ProviderKind::OpenAi,
        vec![Reply::call("finish", r#"{"answer": "ok"}"#)],
    ))
    .unwrap();
    assert_eq!(probe(&server).await, Some(true));
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &sent.body;
    assert_eq!(
        (
            &body["tool_choice"],
            &body["max_tokens"],
            &body["temperature"],
            &body["stream"]
        ),
        (&json!("required"), &json!(48), &json!(0), &json!(false))
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "Call the tool."}, {"role": "user", "content": "Go."}])
    );
    assert_eq!(body["tools"][0]["function"]["name"], json!("finish"));
    assert_eq!(
        body["tools"][0]["function"]["parameters"]["required"],
        json!(["answer"])
    );
}

#[tokio::test]
async fn the_tool_choice_probe_sees_a_refusal_prose_or_nothing() {
    let cases = [
        (
            Reply::error(400, None, "tool_choice param requires --jinja flag"),
            Some(false),
        ),
        (
            Reply::error(422, None, "tool_choice: unknown variant"),
            Some(false),
        ),
        (Reply::text("Hello! How can I help?"), Some(false)),
        (
            Reply::error(500, None, "Failed to parse input at pos 3: {\"answ"),
            Some(false),
        ),
        (Reply::error(503, None, "Loading model"), None),
    ];
    for (reply, expected) in cases {
        let server =
            ScriptedServer::start(Script::new(ProviderKind::OpenAi, vec![reply.clone()])).unwrap();
        assert_eq!(probe(&server).await, expected, "{reply:?}");
        assert_eq!(server.requests().len(), 1);
    }
    // Nothing listening.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut config = ProviderConfig::new(ProviderKind::OpenAi, "m");
    config.base_url = format!("http://127.0.0.1:{port}/v1");
    let found = tokio::time::timeout(TEST_TIMEOUT, probe_tool_choice(&config))
        .await
        .unwrap();
    assert_eq!(found, None);
    // Not asked of Anthropic.
    let config = ProviderConfig::new(ProviderKind::Anthropic, "m");
    assert_eq!(probe_tool_choice(&config).await, None);
}

#[tokio::test]
async fn the_server_probe_says_how_llama_cpp_holds_replies() {
    let server = ScriptedServer::start(
        Script::new(ProviderKind::OpenAi, Vec::new()).with_server_info(json!({
            "default_generation_settings": {"n_ctx": 8192},
            "chat_template_caps": {"supports_tools": true, "supports_tool_calls": true},
        })),
    )
    .unwrap();
    let info = tokio::time::timeout(TEST_TIMEOUT, probe_server(&config(&server)))
        .await
        .unwrap();
    assert_eq!(
        info,
        ServerInfo {
            server: Some("llama.cpp"),
            tools: Some(true),
            context_window: Some(8192),
            grammar: Some(true),
            json_schema: Some(true),
            tool_choice_required: Some(true),
        }
    );
    // Only `/models` answers: an OpenAI-compatible server of unknown powers.
    let server = ScriptedServer::start(Script::new(ProviderKind::OpenAi, Vec::new())).unwrap();
    let info = tokio::time::timeout(TEST_TIMEOUT, probe_server(&config(&server)))
        .await
        .unwrap();
    assert_eq!(
        info,
        ServerInfo {
            server: Some("openai-compatible"),
            ..ServerInfo::default()
        }
    );
}
