//! The settings' order: flags, then the environment, then the config file, then the
//! defaults; and the usage errors of bad values.

use clap::Parser;
use pretty_assertions::assert_eq;

use super::*;
use crate::config::SubagentsConfig;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: AgentArgs,
}

fn args(line: &[&str]) -> AgentArgs {
    let mut all = vec!["agent"];
    all.extend(line);
    Cli::try_parse_from(all).unwrap().args
}

fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

#[test]
fn flags_then_environment_then_file() {
    let file = AgentConfig {
        provider: Some("anthropic".into()),
        model: Some("file-model".into()),
        base_url: Some("http://file.example/".into()),
        api_key_env: Some("MY_KEY".into()),
        max_steps: Some(7),
        max_repeats: Some(3),
        protocol: Some("text".into()),
        context_window: Some(50_000),
        max_tokens: Some(1_000),
        model_size: None,
        constrain: None,
        temperature: None,
        seed: None,
        first_byte_timeout: None,
        subagents: SubagentsConfig::default(),
    };
    let s = AgentSettings::resolve(&args(&[]), &file, &env(&[("MY_KEY", "sk-1")])).unwrap();
    assert_eq!(s.provider.kind, ProviderKind::Anthropic);
    assert_eq!(s.provider.model, "file-model");
    assert_eq!(s.provider.base_url, "http://file.example");
    assert_eq!(s.provider.api_key, Some(Secret::new("sk-1")));
    assert_eq!(s.provider.max_tokens, 1_000);
    assert_eq!(
        (s.protocol, s.max_steps, s.max_repeats, s.context_window),
        (Protocol::Text, 7, 3, 50_000)
    );
    let from_env = env(&[("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/")]);
    let s = AgentSettings::resolve(&args(&[]), &file, &from_env).unwrap();
    assert_eq!(s.provider.base_url, "http://127.0.0.1:9");
    assert_eq!(s.provider.api_key, None);
    assert_eq!(s.key_env, "MY_KEY");
    let s = AgentSettings::resolve(
        &args(&[
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:1/v1",
            "--protocol",
            "native",
            "--max-steps",
            "2",
        ]),
        &file,
        &from_env,
    )
    .unwrap();
    assert_eq!(s.provider.kind, ProviderKind::OpenAi);
    assert_eq!(s.provider.base_url, "http://127.0.0.1:1/v1");
    assert_eq!((s.protocol, s.max_steps), (Protocol::Native, 2));
}

#[test]
fn defaults_and_usage_errors() {
    let none = env(&[]);
    let err = AgentSettings::resolve(&args(&[]), &AgentConfig::default(), &none).unwrap_err();
    assert_eq!(err.to_string(), NO_MODEL);
    let s =
        AgentSettings::resolve(&args(&["--model", "m"]), &AgentConfig::default(), &none).unwrap();
    assert_eq!(s.provider.kind, ProviderKind::OpenAi);
    assert_eq!(s.provider.base_url, "https://api.openai.com/v1");
    assert_eq!(s.key_env, "OPENAI_API_KEY");
    for bad in [
        &["--model", "m", "--provider", "gemini"][..],
        &["--model", "m", "--protocol", "xml"],
        &["--model", "m", "--max-steps", "0"],
        &["--model", "m", "--max-repeats", "1"],
        &["--model", "m", "--base-url", "ftp://x"],
        &["--model", "m", "--model-size", "tiny"],
        &["--model", "m", "--max-tokens", "0"],
        &["--model", "m", "--first-byte-timeout", "0"],
    ] {
        assert!(
            AgentSettings::resolve(&args(bad), &AgentConfig::default(), &none).is_err(),
            "{bad:?}"
        );
    }
}

/// A server on this machine or the local network gets a lower output limit and a
/// long first-byte timeout by default; flags and `[agent]` still win.
#[test]
fn local_servers_get_their_own_defaults() {
    let none = env(&[]);
    let remote =
        AgentSettings::resolve(&args(&["--model", "m"]), &AgentConfig::default(), &none).unwrap();
    assert_eq!(remote.provider.max_tokens, 8_192);
    assert_eq!(remote.provider.first_byte_timeout.as_secs(), 300);
    let local_args = ["--model", "m", "--base-url", "http://127.0.0.1:8081/v1"];
    let local = AgentSettings::resolve(&args(&local_args), &AgentConfig::default(), &none).unwrap();
    assert_eq!(local.provider.max_tokens, 2_048);
    assert_eq!(local.provider.first_byte_timeout.as_secs(), 1_800);
    assert!(!local.context_window_set);
    let mut given = local_args.to_vec();
    given.extend([
        "--max-tokens",
        "512",
        "--first-byte-timeout",
        "60",
        "--protocol",
        "auto",
    ]);
    given.extend(["--model-size", "small", "--context-window", "4096"]);
    let s = AgentSettings::resolve(&args(&given), &AgentConfig::default(), &none).unwrap();
    assert_eq!(s.provider.max_tokens, 512);
    assert_eq!(s.provider.first_byte_timeout.as_secs(), 60);
    assert!(s.protocol_auto);
    assert_eq!(s.model_size, ModelSize::Small);
    assert_eq!((s.context_window, s.context_window_set), (4_096, true));
}

/// What a server says fills in what was left to it, and nothing else.
#[test]
fn what_the_server_says_fills_in_what_was_left_open() {
    let none = env(&[]);
    let base = ["--model", "m", "--base-url", "http://127.0.0.1:8081/v1"];
    let mut auto = base.to_vec();
    auto.extend(["--protocol", "auto"]);
    let mut s = AgentSettings::resolve(&args(&auto), &AgentConfig::default(), &none).unwrap();
    let said = s
        .learn(&ServerInfo {
            server: Some("llama.cpp"),
            tools: Some(false),
            context_window: Some(16_384),
            ..ServerInfo::default()
        })
        .unwrap();
    assert_eq!((s.protocol, s.context_window), (Protocol::Text, 16_384));
    assert!(
        said.contains("llama.cpp") && said.contains("16384"),
        "{said}"
    );
    let mut fixed = base.to_vec();
    fixed.extend(["--context-window", "8000"]);
    let mut s = AgentSettings::resolve(&args(&fixed), &AgentConfig::default(), &none).unwrap();
    let said = s.learn(&ServerInfo {
        server: Some("ollama"),
        tools: Some(true),
        context_window: Some(2_048),
        ..ServerInfo::default()
    });
    assert_eq!(said, None);
    assert_eq!((s.protocol, s.context_window), (Protocol::Native, 8_000));
}

/// A small model's settings: a low temperature unless given, the constraint
/// left to the server unless given, and a constraint that needs a protocol
/// takes it (or says it cannot).
#[test]
fn small_models_sample_low_and_are_constrained() {
    let none = env(&[]);
    let base = ["--model", "m", "--base-url", "http://127.0.0.1:8081/v1"];
    let with = |extra: &[&str]| {
        let mut all = base.to_vec();
        all.extend_from_slice(extra);
        AgentSettings::resolve(&args(&all), &AgentConfig::default(), &none)
    };
    let s = with(&["--model-size", "small"]).unwrap();
    assert_eq!(s.provider.temperature, Some(super::SMALL_MODEL_TEMPERATURE));
    assert!(s.constrain_auto);
    let s = with(&[]).unwrap();
    assert_eq!((s.provider.temperature, s.constrain_auto), (None, false));
    let s = with(&["--model-size", "small", "--temperature", "0", "--seed", "7"]).unwrap();
    assert_eq!(
        (s.provider.temperature, s.provider.seed),
        (Some(0.0), Some(7))
    );
    let s = with(&["--model-size", "small", "--constrain", "grammar"]).unwrap();
    assert_eq!(
        (s.constraint, s.protocol, s.constrain_auto),
        (Constraint::Grammar, Protocol::Text, false)
    );
    let err = with(&[
        "--model-size",
        "small",
        "--constrain",
        "grammar",
        "--protocol",
        "native",
    ])
    .unwrap_err()
    .to_string();
    assert!(err.contains("works with the text protocol"), "{err}");
    let err = with(&["--constrain", "tool-choice"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("--model-size small"), "{err}");
    let err = with(&["--model-size", "small", "--constrain", "regex"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown constraint"), "{err}");
    let err = with(&["--temperature", "3"]).unwrap_err().to_string();
    assert!(err.contains("between 0 and 2"), "{err}");
}
