//! What a model server says about itself: whether its chat template takes tools,
//! its context window, and which ways of holding a reply to a shape it honours.
//! Asked of servers on this machine or the local network (a model served by
//! llama.cpp, Ollama or vLLM), where guessing costs the most:
//!
//! - llama.cpp: `GET /props` (beside `/v1`) gives `chat_template_caps`
//!   (`supports_tools`, `supports_tool_calls`) and
//!   `default_generation_settings.n_ctx`; it takes a GBNF `grammar`, a
//!   `response_format` JSON schema, and `tool_choice: "required"` when its template
//!   takes tools;
//! - Ollama: `POST /api/show` gives `capabilities` (`tools`) and the model's
//!   `num_ctx` parameter when one is set; its OpenAI-compatible endpoint reads a
//!   `response_format` JSON schema but has no `tool_choice` field (its
//!   `ChatCompletionRequest` in `openai/openai.go`) and no grammar;
//! - any OpenAI-compatible server: `GET {base_url}/models` may give the model's
//!   `max_model_len` (vLLM) or `meta.n_ctx_train` (llama.cpp); an entry
//!   `owned_by: "vllm"` marks vLLM, which reads a `response_format` JSON schema and
//!   `tool_choice: "required"` (since 0.8.3), and no top-level `grammar`.
//!
//! Every question has a short timeout, and a server that answers none of them
//! leaves everything unknown. [`probe_tool_choice`] finds out by asking for a
//! forced tool call, where the server does not say.

use std::time::Duration;

use serde_json::{Value, json};

use super::decode::{error_message, is_malformed_call_message};
use super::{ProviderConfig, ProviderKind};

/// How long each question may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the forced tool call of [`probe_tool_choice`] may take: the model
/// writes a few dozen tokens, on a CPU perhaps.
const TOOL_CHOICE_PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// The most tokens the forced tool call may have.
const TOOL_CHOICE_PROBE_MAX_TOKENS: u32 = 48;

/// What a model server said about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerInfo {
    /// `llama.cpp`, `ollama`, `vllm` or `openai-compatible`, when the server
    /// answered.
    pub server: Option<&'static str>,
    /// Whether the chat template takes tools (native function calling works).
    pub tools: Option<bool>,
    /// The context window the server runs the model with, in tokens.
    pub context_window: Option<u64>,
    /// Whether the server holds a reply to a GBNF `grammar` (llama.cpp).
    pub grammar: Option<bool>,
    /// Whether the server holds a reply to a `response_format` JSON schema
    /// (llama.cpp, Ollama, vLLM).
    pub json_schema: Option<bool>,
    /// Whether the server honours `tool_choice: "required"` (llama.cpp when its
    /// template takes tools, vLLM; not Ollama, which ignores the field).
    pub tool_choice_required: Option<bool>,
}

/// A client for the questions, each taking at most `timeout`.
fn client(timeout: Duration) -> Option<reqwest::Client> {
    let tls = toolbelt_net::tls::client_config(&[], toolbelt_net::tls::ALPN_H2_HTTP1).ok()?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(timeout)
        .connect_timeout(PROBE_TIMEOUT)
        .build()
        .ok()
}

/// Asks the server of `config` about itself. Only OpenAI-compatible servers are
/// asked; for others, or when nothing answers, everything is unknown.
pub async fn probe_server(config: &ProviderConfig) -> ServerInfo {
    if config.kind != ProviderKind::OpenAi {
        return ServerInfo::default();
    }
    let Some(client) = client(PROBE_TIMEOUT) else {
        return ServerInfo::default();
    };
    let Ok(base) = reqwest::Url::parse(&config.base_url) else {
        return ServerInfo::default();
    };
    let root = server_root(&base);
    let key = config.api_key.as_ref().map(|k| k.expose().to_string());
    let get = |url: reqwest::Url| {
        let mut request = client.get(url);
        if let Some(key) = &key {
            request = request.bearer_auth(key);
        }
        async move { json_of(request.send().await).await }
    };

    if let Some(props) = get(join(&root, "props")).await
        && let Some(info) = llama_cpp(&props)
    {
        return info;
    }
    let mut show = client
        .post(join(&root, "api/show"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(json!({"model": config.model}).to_string());
    if let Some(key) = &key {
        show = show.bearer_auth(key);
    }
    if let Some(show) = json_of(show.send().await).await
        && let Some(info) = ollama(&show)
    {
        return info;
    }
    let models = join(&base, "models");
    match get(models).await {
        Some(models) => openai_compatible(&models, &config.model),
        None => ServerInfo::default(),
    }
}

/// Asks the server of `config` for a forced tool call: one small request (system
/// `Call the tool.`, user `Go.`, one tool `finish` taking a string `answer`,
/// `tool_choice: "required"`, at most 48 tokens, temperature 0, not streamed).
///
/// `Some(true)` when the answer holds a tool call; `Some(false)` when it holds
/// none, or the server refused the request (HTTP 400 or 422: `tool_choice`, or
/// tools, not taken) or could not read the call it made; `None` when the server
/// cannot be reached or answered something else (and for Anthropic, which always
/// takes `tool_choice`).
///
/// # Security
/// The key of `config` is sent as `Authorization: Bearer` to its base URL only.
pub async fn probe_tool_choice(config: &ProviderConfig) -> Option<bool> {
    if config.kind != ProviderKind::OpenAi {
        return None;
    }
    let client = client(TOOL_CHOICE_PROBE_TIMEOUT)?;
    let base = reqwest::Url::parse(&config.base_url).ok()?;
    let mut request = client
        .post(join(&base, "chat/completions"))
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(tool_choice_request(&config.model).to_string());
    if let Some(key) = &config.api_key {
        request = request.bearer_auth(key.expose());
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let bytes = response.bytes().await.ok()?;
    if status == 400 || status == 422 {
        return Some(false);
    }
    if !(200..300).contains(&status) {
        let message = error_message(&String::from_utf8_lossy(&bytes));
        return is_malformed_call_message(&message).then_some(false);
    }
    let answer: Value = serde_json::from_slice(&bytes).ok()?;
    let message = answer.pointer("/choices/0/message")?;
    Some(
        message
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|calls| !calls.is_empty()),
    )
}

/// The body of [`probe_tool_choice`]'s request.
fn tool_choice_request(model: &str) -> Value {
    json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "Call the tool."},
            {"role": "user", "content": "Go."},
        ],
        "tools": [{
            "type": "function",
            "function": {
                "name": "finish",
                "description": "Ends the task with an answer.",
                "parameters": {
                    "type": "object",
                    "properties": {"answer": {"type": "string"}},
                    "required": ["answer"],
                },
            },
        }],
        "tool_choice": "required",
        "max_tokens": TOOL_CHOICE_PROBE_MAX_TOKENS,
        "temperature": 0,
        "stream": false,
    })
}

/// The server's root: the base URL without its `/v1` (or whatever API path).
fn server_root(base: &reqwest::Url) -> reqwest::Url {
    let mut root = base.clone();
    let path = base.path().trim_end_matches('/');
    let trimmed = path.strip_suffix("/v1").unwrap_or(path);
    root.set_path(&format!("{trimmed}/"));
    root
}

/// `base` with `path` added to its path.
fn join(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = base.clone();
    let joined = format!("{}/{path}", base.path().trim_end_matches('/'));
    url.set_path(&joined);
    url
}

/// The JSON body of a successful answer.
async fn json_of(response: reqwest::Result<reqwest::Response>) -> Option<Value> {
    let response = response.ok()?;
    if !response.status().is_success() {
        return None;
    }
    let bytes = response.bytes().await.ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// llama.cpp's `/props`.
fn llama_cpp(props: &Value) -> Option<ServerInfo> {
    let settings = props.get("default_generation_settings")?;
    let context_window = settings
        .get("n_ctx")
        .and_then(Value::as_u64)
        .filter(|n| *n > 0);
    let caps = props.get("chat_template_caps");
    let flag = |name: &str| caps.and_then(|c| c.get(name)).and_then(Value::as_bool);
    let tools = match (flag("supports_tools"), flag("supports_tool_calls")) {
        (Some(a), Some(b)) => Some(a && b),
        (Some(a), None) | (None, Some(a)) => Some(a),
        (None, None) => None,
    };
    Some(ServerInfo {
        server: Some("llama.cpp"),
        tools,
        context_window,
        grammar: Some(true),
        json_schema: Some(true),
        tool_choice_required: tools,
    })
}

/// Ollama's `/api/show`.
fn ollama(show: &Value) -> Option<ServerInfo> {
    let capabilities = show.get("capabilities").and_then(Value::as_array);
    let model_info = show.get("model_info");
    if capabilities.is_none() && model_info.is_none() {
        return None;
    }
    let tools = capabilities.map(|c| c.iter().any(|v| v.as_str() == Some("tools")));
    let num_ctx = show
        .get("parameters")
        .and_then(Value::as_str)
        .and_then(|text| {
            text.lines().find_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("num_ctx"))
                    .then(|| words.next()?.parse::<u64>().ok())
                    .flatten()
            })
        });
    Some(ServerInfo {
        server: Some("ollama"),
        tools,
        context_window: num_ctx.filter(|n| *n > 0),
        grammar: Some(false),
        json_schema: Some(true),
        tool_choice_required: Some(false),
    })
}

/// A server that answered only `/models`: vLLM when an entry is `owned_by:
/// "vllm"`, else an OpenAI-compatible server of unknown powers.
fn openai_compatible(models: &Value, model: &str) -> ServerInfo {
    let context_window = models_context(models, model);
    let vllm = models
        .get("data")
        .and_then(Value::as_array)
        .is_some_and(|list| {
            list.iter()
                .any(|m| m.get("owned_by").and_then(Value::as_str) == Some("vllm"))
        });
    if vllm {
        return ServerInfo {
            server: Some("vllm"),
            tools: None,
            context_window,
            grammar: Some(false),
            json_schema: Some(true),
            tool_choice_required: Some(true),
        };
    }
    ServerInfo {
        server: Some("openai-compatible"),
        context_window,
        ..ServerInfo::default()
    }
}

/// The context window `/models` gives for `model` (or its only model).
fn models_context(models: &Value, model: &str) -> Option<u64> {
    let list = models.get("data").and_then(Value::as_array)?;
    let entry = list
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (list.len() == 1).then(|| &list[0]))?;
    entry
        .get("max_model_len")
        .and_then(Value::as_u64)
        .or_else(|| {
            entry
                .get("meta")
                .and_then(|m| m.get("n_ctx_train"))
                .and_then(Value::as_u64)
        })
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_base_without_v1() {
        let root = |s: &str| server_root(&reqwest::Url::parse(s).unwrap()).to_string();
        assert_eq!(root("http://127.0.0.1:8081/v1"), "http://127.0.0.1:8081/");
        assert_eq!(root("http://h/proxy/v1/"), "http://h/proxy/");
        assert_eq!(root("http://h:1"), "http://h:1/");
        let base = reqwest::Url::parse("http://h/v1").unwrap();
        assert_eq!(join(&base, "models").as_str(), "http://h/v1/models");
    }

    #[test]
    fn llama_cpp_props_are_read() {
        let props = json!({
            "default_generation_settings": {"n_ctx": 16384, "params": {}},
            "chat_template_caps": {"supports_tools": false, "supports_tool_calls": false},
        });
        assert_eq!(
            llama_cpp(&props),
            Some(ServerInfo {
                server: Some("llama.cpp"),
                tools: Some(false),
                context_window: Some(16384),
                grammar: Some(true),
                json_schema: Some(true),
                tool_choice_required: Some(false),
            })
        );
        assert_eq!(llama_cpp(&json!({"model": "x"})), None);
    }

    #[test]
    fn ollama_show_is_read() {
        let show = json!({
            "capabilities": ["completion", "tools"],
            "parameters": "stop \"<|im_end|>\"\nnum_ctx 8192",
            "model_info": {"qwen2.context_length": 32768},
        });
        assert_eq!(
            ollama(&show),
            Some(ServerInfo {
                server: Some("ollama"),
                tools: Some(true),
                context_window: Some(8192),
                grammar: Some(false),
                json_schema: Some(true),
                tool_choice_required: Some(false),
            })
        );
    }

    #[test]
    fn models_metadata_gives_the_window() {
        let vllm = json!({"data": [{"id": "qwen", "max_model_len": 32768}]});
        assert_eq!(models_context(&vllm, "qwen"), Some(32768));
        let llama = json!({"data": [{"id": "other", "meta": {"n_ctx_train": 32768}}]});
        assert_eq!(models_context(&llama, "qwen"), Some(32768));
        assert_eq!(models_context(&json!({"data": []}), "qwen"), None);
    }

    #[test]
    fn vllm_is_known_by_its_models_list() {
        let vllm = json!({"object": "list", "data": [
            {"id": "qwen", "object": "model", "owned_by": "vllm", "max_model_len": 32768}
        ]});
        assert_eq!(
            openai_compatible(&vllm, "qwen"),
            ServerInfo {
                server: Some("vllm"),
                tools: None,
                context_window: Some(32768),
                grammar: Some(false),
                json_schema: Some(true),
                tool_choice_required: Some(true),
            }
        );
        let other = json!({"data": [{"id": "qwen", "owned_by": "someone"}]});
        assert_eq!(
            openai_compatible(&other, "qwen"),
            ServerInfo {
                server: Some("openai-compatible"),
                ..ServerInfo::default()
            }
        );
    }
}
