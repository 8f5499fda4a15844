//! How a small model's replies are held to one tool call: chosen by what the
//! server supports (`--constrain auto`). What a server says about itself
//! (llama.cpp's `/props`, Ollama's `/api/show`, `/v1/models`) decides where it
//! says enough; otherwise one small request with `tool_choice: "required"` asks
//! it, and the answer is remembered per server and model in
//! `$XDG_STATE_HOME/toolbelt/servers.json`, so that it is asked once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toolbelt_agent::{Constraint, Protocol, ProviderConfig, ServerInfo, probe_tool_choice};

/// The file, in the user's state directory, of what servers were found to do.
pub const SERVERS_FILE: &str = "servers.json";

/// What one server was found to do.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
struct Remembered {
    /// It answered a request with `tool_choice: "required"` with a call.
    tool_choice_required: bool,
}

/// The constraint on the server of `provider`, the protocol it goes with, and
/// why, in words. A protocol the person gave (`given`) is kept; otherwise the
/// strongest constraint the server takes is chosen: a grammar (exactly one
/// valid call, then the reply ends), else `tool_choice: "required"` when the
/// server was seen to honour it, else a JSON schema.
/// What servers were found to do is remembered in `memory` ([`SERVERS_FILE`] in
/// the user's state directory).
pub async fn choose(
    provider: &ProviderConfig,
    protocol: Protocol,
    given: bool,
    info: &ServerInfo,
    memory: Option<&Path>,
) -> (Constraint, Protocol, String) {
    let server = info.server.unwrap_or("the server");
    let for_text = || match (info.grammar, info.json_schema) {
        (Some(true), _) => Some((Constraint::Grammar, format!("{server} takes a grammar"))),
        (_, Some(true)) => Some((
            Constraint::JsonSchema,
            format!("{server} takes a JSON schema"),
        )),
        _ => None,
    };
    if given && protocol == Protocol::Text {
        return match for_text() {
            Some((c, why)) => (c, Protocol::Text, why),
            None => (
                Constraint::None,
                Protocol::Text,
                format!("{server} said nothing of grammars or JSON schemas"),
            ),
        };
    }
    if !given
        && info.grammar == Some(true)
        && let Some((c, why)) = for_text()
    {
        return (c, Protocol::Text, why);
    }
    let (honours, why) = honours_tool_choice(provider, info, server, memory).await;
    if honours == Some(true) {
        return (Constraint::ToolChoice, Protocol::Native, why);
    }
    if !given && let Some((c, why)) = for_text() {
        return (c, Protocol::Text, why);
    }
    let why = match honours {
        Some(_) => format!("the server does not honour tool_choice \"required\" ({why})"),
        None => why,
    };
    (Constraint::None, protocol, why)
}

/// Whether the server honours `tool_choice: "required"`: what it says of itself
/// where that can be trusted, else what it did when asked (once, remembered).
async fn honours_tool_choice(
    provider: &ProviderConfig,
    info: &ServerInfo,
    server: &str,
    path: Option<&Path>,
) -> (Option<bool>, String) {
    // llama.cpp's chat-template capabilities say tools are taken, not that a
    // call is enforced: it is asked.
    if server != "llama.cpp"
        && let Some(honours) = info.tool_choice_required
    {
        return (Some(honours), format!("{server} says so"));
    }
    let key = format!("{} {}", provider.base_url, provider.model);
    if let Some(known) = path.and_then(|p| recall(p, &key)) {
        return (
            Some(known.tool_choice_required),
            "as it answered before".to_string(),
        );
    }
    match probe_tool_choice(provider).await {
        Some(honours) => {
            if let Some(path) = path {
                remember(
                    path,
                    &key,
                    Remembered {
                        tool_choice_required: honours,
                    },
                );
            }
            (Some(honours), "asked once; remembered".to_string())
        }
        None => (None, "the server did not answer the question".to_string()),
    }
}

/// What was remembered of `key`, if anything (an unreadable file is nothing).
fn recall(path: &Path, key: &str) -> Option<Remembered> {
    let text = std::fs::read_to_string(path).ok()?;
    let all: BTreeMap<String, Remembered> = serde_json::from_str(&text).ok()?;
    all.get(key).cloned()
}

/// Adds what was learnt of `key` to the file (read, changed and written under
/// a lock beside it, then renamed into place, so that two runs that learn at
/// once both keep theirs); a file that cannot be written only costs the
/// question next time.
fn remember(path: &Path, key: &str, what: Remembered) {
    let Some(dir) = path.parent() else { return };
    let written = std::fs::create_dir_all(dir).and_then(|()| {
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!(".{SERVERS_FILE}.lock")))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)?;
        let mut all: BTreeMap<String, Remembered> = std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        all.insert(key.to_string(), what);
        let tmp: PathBuf = dir.join(format!(".{SERVERS_FILE}.{}", std::process::id()));
        let body = serde_json::to_vec_pretty(&all).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, body)
            .and_then(|()| std::fs::rename(&tmp, path))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
    });
    if let Err(e) = written {
        tracing::warn!(
            "cannot remember what the server does in {}: {e}",
            path.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_server_did_is_remembered_per_server_and_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join(SERVERS_FILE);
        assert_eq!(recall(&path, "http://127.0.0.1:8080/v1 m"), None);
        let yes = Remembered {
            tool_choice_required: true,
        };
        remember(&path, "http://127.0.0.1:8080/v1 m", yes.clone());
        remember(&path, "http://127.0.0.1:9/v1 m", Remembered::default());
        assert_eq!(recall(&path, "http://127.0.0.1:8080/v1 m"), Some(yes));
        assert_eq!(
            recall(&path, "http://127.0.0.1:9/v1 m"),
            Some(Remembered::default())
        );
        std::fs::write(&path, "not json").unwrap();
        assert_eq!(recall(&path, "http://127.0.0.1:8080/v1 m"), None);
    }
}
