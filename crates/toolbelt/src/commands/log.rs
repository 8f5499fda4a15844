//! `toolbelt log`: the most recent calls of the call log, as lines or as JSON.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use toolbelt_store::{CallEntry, CallFilter, Store, StoreHandle, recent_calls};

use super::out;
use crate::cli::LogArgs;
use crate::runtime::{self, Threads};

/// Prints the call log of `store`.
///
/// # Errors
/// The store cannot be opened or read, or standard output cannot be written.
pub fn run(args: &LogArgs, store: &StoreHandle) -> Result<ExitCode> {
    let rt = runtime::start(Threads::One)?;
    let text = rt.block_on(async {
        let opened = store.store().await.context("the store cannot be opened")?;
        let mut text = Vec::new();
        print(opened, args, &mut text).await?;
        anyhow::Ok(text)
    })?;
    out(&String::from_utf8_lossy(&text))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the last `args.tail` calls (of `args.tool`), oldest first, to `out`.
///
/// # Errors
/// The store cannot be read, or `out` cannot be written.
pub async fn print(store: &Store, args: &LogArgs, out: &mut impl Write) -> Result<()> {
    let entries = recent_calls(
        store,
        &CallFilter {
            tail: args.tail,
            tool: args.tool.clone(),
        },
    )
    .await
    .context("cannot read the call log")?;
    if args.json {
        serde_json::to_writer_pretty(&mut *out, &entries)?;
        writeln!(out)?;
        return Ok(());
    }
    if entries.is_empty() {
        match &args.tool {
            Some(tool) => writeln!(out, "no calls of {tool} in the log")?,
            None => writeln!(out, "no calls in the log")?,
        }
        return Ok(());
    }
    for entry in &entries {
        writeln!(out, "{}", format_entry(entry))?;
    }
    Ok(())
}

/// One call as a line: time (UTC, RFC 3339 to the second), tool, status with
/// its error code, duration, bytes out, and the arguments' digest.
pub fn format_entry(e: &CallEntry) -> String {
    let time = chrono::DateTime::from_timestamp_millis(e.at_ms).map_or_else(
        || e.at_ms.to_string(),
        |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    );
    let status = match &e.error_code {
        Some(code) => format!("{} {code}", e.status),
        None => e.status.clone(),
    };
    format!(
        "{time}  {}  {status}  {}ms  {}B  {}",
        e.tool, e.duration_ms, e.bytes_out, e.args
    )
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use toolbelt_core::{CallLog, CallRecord};
    use toolbelt_store::{CallLogWriter, Location};

    use super::*;

    fn record(n: i64, tool: &str, code: Option<&str>) -> CallRecord {
        CallRecord {
            at_ms: 1_795_000_000_000 + n * 61_500,
            tool: tool.into(),
            call_id: format!("c{n}"),
            args: format!(r#"{{"n":{n}}}"#),
            status: if code.is_some() { "error" } else { "success" }.into(),
            error_code: code.map(str::to_string),
            duration_ms: 3 * n as u64,
            bytes_out: 100 + n as u64,
            ..CallRecord::default()
        }
    }

    async fn printed(store: &Store, args: LogArgs) -> String {
        let mut out = Vec::new();
        print(store, &args, &mut out).await.unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn lines_json_and_filters() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Location::in_state_dir(dir.path()))
            .await
            .unwrap();
        let args = |tail, tool: Option<&str>, json| LogArgs {
            tail,
            tool: tool.map(str::to_string),
            json,
        };
        assert_eq!(
            printed(&store, args(20, None, false)).await,
            "no calls in the log\n"
        );

        let writer = CallLogWriter::start(store.clone(), "/w");
        writer.record(record(1, "read_file", None));
        writer.record(record(2, "grep", Some("INVALID_PARAMS")));
        writer.record(record(3, "read_file", Some("NOT_FOUND")));
        writer.flush().await;

        assert_eq!(
            printed(&store, args(20, None, false)).await,
            "2026-11-18T11:07:41Z  read_file  success  3ms  101B  {\"n\":1}\n\
             2026-11-18T11:08:43Z  grep  error INVALID_PARAMS  6ms  102B  {\"n\":2}\n\
             2026-11-18T11:09:44Z  read_file  error NOT_FOUND  9ms  103B  {\"n\":3}\n"
        );
        assert_eq!(
            printed(&store, args(1, Some("read_file"), false)).await,
            "2026-11-18T11:09:44Z  read_file  error NOT_FOUND  9ms  103B  {\"n\":3}\n"
        );
        assert_eq!(
            printed(&store, args(5, Some("bash"), false)).await,
            "no calls of bash in the log\n"
        );

        let json: serde_json::Value =
            serde_json::from_str(&printed(&store, args(1, None, true)).await).unwrap();
        assert_eq!(
            json,
            serde_json::json!([{
                "id": 3,
                "at_ms": 1_795_000_184_500_i64,
                "tool": "read_file",
                "call_id": "c3",
                "args": "{\"n\":3}",
                "status": "error",
                "error_code": "NOT_FOUND",
                "duration_ms": 9,
                "bytes_out": 103,
                "workspace": "/w"
            }])
        );
        assert_eq!(printed(&store, args(5, Some("bash"), true)).await, "[]\n");
    }
}
