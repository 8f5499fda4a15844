//! The scripted model provider as a program, for tests in other languages and for
//! benchmarks.
//!
//! ```text
//! scripted_provider SCRIPT.json [--forever]
//! ```
//!
//! Reads a [`Script`] (JSON, as `toolbelt_agent::testing::Script` deserializes it)
//! from the file `SCRIPT.json`, binds 127.0.0.1 on a free port, prints ONE line of
//! JSON to stdout and flushes it:
//!
//! ```text
//! {"base_url":"http://127.0.0.1:41234/v1","addr":"127.0.0.1:41234","kind":"openai"}
//! ```
//!
//! (`base_url` as the official SDKs take it: with `/v1` for OpenAI, without for
//! Anthropic), then serves until stdin closes (reaches end of file) or it is killed;
//! with `--forever`, until it is killed only (for stdin from `/dev/null`). The
//! requests received so far: `GET {addr}/_scripted/requests` gives
//! `{"requests": [{method, path, headers, body}...], "remaining": N}`.
//!
//! A script:
//!
//! ```json
//! {"kind": "anthropic",
//!  "replies": [
//!    {"tool_calls": [{"name": "read_file", "arguments": "{\"path\": \"a.txt\"}"}]},
//!    {"text": "Done.", "usage": {"input_tokens": 120, "output_tokens": 3}},
//!    {"error": {"status": 429, "retry_after": "0.05", "message": "slow down"}}
//!  ]}
//! ```
//!
//! Exit status: 0 when stdin closed; 2 for a bad command line or script; 1 when the
//! server cannot start.

use std::io::{self, Read, Write};
use std::process::ExitCode;

use toolbelt_agent::testing::{Script, ScriptedServer};

const USAGE: &str = "usage: scripted_provider SCRIPT.json [--forever]";

fn main() -> ExitCode {
    let mut path = None;
    let mut forever = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--forever" => forever = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ if path.is_none() && !arg.starts_with("--") => path = Some(arg),
            _ => {
                eprintln!("scripted_provider: unexpected argument {arg:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    let Some(path) = path else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let script: Script = match std::fs::read_to_string(&path)
        .map_err(Box::<dyn std::error::Error>::from)
        .and_then(|text| serde_json::from_str(&text).map_err(Into::into))
    {
        Ok(script) => script,
        Err(e) => {
            eprintln!("scripted_provider: cannot read the script {path}: {e}");
            return ExitCode::from(2);
        }
    };
    let server = match ScriptedServer::start(script) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("scripted_provider: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    let line = serde_json::json!({
        "base_url": server.base_url(),
        "addr": server.addr().to_string(),
        "kind": server.kind().as_str(),
    });
    let mut stdout = io::stdout().lock();
    if writeln!(stdout, "{line}")
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    drop(stdout);
    if forever {
        loop {
            std::thread::park();
        }
    }
    // Serve until stdin closes: the parent's end of the pipe going away stops us.
    let mut sink = [0u8; 1024];
    let mut stdin = io::stdin().lock();
    while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
    drop(server);
    ExitCode::SUCCESS
}
