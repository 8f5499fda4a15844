use std::collections::BTreeMap;
use std::path::Path;

use super::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(toml_text: &str) -> ServerConfig {
    serde_json::from_value(serde_json::to_value(toml_value(toml_text)).unwrap()).unwrap()
}

/// A tiny TOML-ish reader is not needed: the tests write JSON objects.
fn toml_value(json: &str) -> serde_json::Value {
    serde_json::from_str(json).unwrap()
}

fn resolve(c: &ServerConfig) -> Result<ServerSpec, ConfigError> {
    c.resolve("files", "toolbelt.toml", Path::new("/w"), "__", &no_env)
}

#[test]
fn a_stdio_server_resolves_with_its_defaults() {
    let c = parse(
        r#"{"command": "npx", "args": ["-y", "pkg"], "env": {"TOKEN": "s3cret"}, "cwd": "sub"}"#,
    );
    let spec = resolve(&c).unwrap();
    assert_eq!(spec.startup, Startup::Eager);
    assert_eq!(spec.tool_timeout, DEFAULT_TOOL_TIMEOUT);
    match &spec.transport {
        Transport::Stdio {
            command,
            args,
            cwd,
            env,
        } => {
            assert_eq!(command, "npx");
            assert_eq!(args, &["-y", "pkg"]);
            assert_eq!(cwd.as_deref(), Some(Path::new("/w/sub")));
            assert_eq!(env[0].1.expose(), "s3cret");
        }
        other => panic!("{other:?}"),
    }
    // Neither Debug form shows the value.
    assert!(!format!("{c:?} {spec:?}").contains("s3cret"));
}

#[test]
fn codex_keys_are_accepted() {
    let c = parse(
        r#"{"url": "http://127.0.0.1:9/mcp", "bearer_token_env_var": "TOK", "startup_timeout_sec": 5, "tool_timeout_sec": 2.5, "enabled_tools": ["a"], "disabled_tools": ["b"], "http_headers": {"X-A": "1"}}"#,
    );
    let env = |v: &str| (v == "TOK").then(|| "abc".to_string());
    let spec = c
        .resolve("remote", "toolbelt.toml", Path::new("/"), "__", &env)
        .unwrap();
    assert_eq!(spec.tool_timeout, std::time::Duration::from_millis(2500));
    assert!(spec.offers("a") && !spec.offers("b") && !spec.offers("c"));
    let Transport::Http { headers, url } = &spec.transport else {
        panic!()
    };
    assert_eq!(url, "http://127.0.0.1:9/mcp");
    let auth: Vec<_> = headers
        .iter()
        .filter(|(k, _)| k == "Authorization")
        .collect();
    assert_eq!(auth[0].1.expose(), "Bearer abc");
    assert!(!format!("{spec:?}").contains("abc"));
}

#[test]
fn mistakes_are_named() {
    let cases = [
        (r#"{}"#, "give `command`"),
        (r#"{"command": "a", "url": "http://x"}"#, "not both"),
        (r#"{"url": "ftp://x"}"#, "http:// or https://"),
        (
            r#"{"url": "http://x", "args": ["a"]}"#,
            "are for `command` servers",
        ),
        (
            r#"{"command": "a", "headers": {"A": "b"}}"#,
            "are for `url` servers",
        ),
        (
            r#"{"url": "http://x", "bearer_token_env": "MISSING"}"#,
            "MISSING, which is not set",
        ),
        (r#"{"command": "a", "startup": "later"}"#, "eager or lazy"),
        (r#"{"command": "a", "tool_timeout": 0}"#, "above 0"),
    ];
    for (json, expected) in cases {
        let err = resolve(&parse(json)).unwrap_err().to_string();
        assert!(err.contains(expected), "{json}: {err}");
        assert!(err.contains("\"files\""), "{err}");
    }
    let bad_name = ServerConfig {
        command: Some("a".into()),
        ..ServerConfig::default()
    }
    .resolve("my__server", "x", Path::new("/"), "__", &no_env)
    .unwrap_err();
    assert!(
        bad_name.to_string().contains("without \"__\""),
        "{bad_name}"
    );
}

#[test]
fn mcp_json_expands_variables_and_refuses_sse() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(".mcp.json");
    std::fs::write(
        &path,
        r#"{"mcpServers": {
            "a": {"command": "${BIN:-node}", "args": ["${HOME_DIR}/x"], "env": {"K": "${KEY}"}},
            "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${KEY}"}, "disabled": true}
        }}"#,
    )
    .unwrap();
    let vars: BTreeMap<&str, &str> = [("HOME_DIR", "/h"), ("KEY", "k1")].into();
    let env = |v: &str| vars.get(v).map(|s| (*s).to_string());
    let servers = McpJson::load(&path, &env).unwrap();
    assert_eq!(servers["a"].command.as_deref(), Some("node"));
    assert_eq!(servers["a"].args, ["/h/x"]);
    assert_eq!(servers["a"].env["K"], "k1");
    assert_eq!(servers["b"].headers["Authorization"], "Bearer k1");
    assert!(!servers["b"].is_enabled());

    let err = toolbelt_core::error_chain(&McpJson::load(&path, &no_env).unwrap_err());
    assert!(err.contains("HOME_DIR is not set"), "{err}");

    std::fs::write(
        &path,
        r#"{"mcpServers": {"s": {"type": "sse", "url": "http://x/sse"}}}"#,
    )
    .unwrap();
    let err = McpJson::load(&path, &no_env).unwrap_err().to_string();
    assert!(err.contains("legacy SSE"), "{err}");
}
