//! The call log through `toolbelt serve` on PostgreSQL: a server SIGKILLed under
//! load loses no call whose answer a client received; the next start on the same
//! state directory writes what the killed one had only journalled.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolbelt_store::{CallFilter, Location, Store, recent_calls};

use super::replicas::{replica, shared_database};

const CLIENTS: usize = 4;

/// One `read_file` call through the JSON API of the server at `addr`: its
/// envelope, or `None` when no whole answer came back (the server died).
fn try_read(addr: &str, body: &str) -> Option<Value> {
    let mut sock = TcpStream::connect(addr).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    write!(
        sock,
        "POST /v1/tools/read_file HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    let mut answer = String::new();
    sock.read_to_string(&mut answer).ok()?;
    let (head, json) = answer.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    serde_json::from_str(json).ok()
}

/// How many rows each call id has in the log of `database`.
fn logged(database: &str) -> BTreeMap<String, i64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Store::open(&Location::Postgres(database.to_string()))
            .await
            .unwrap();
        let entries = recent_calls(
            &store,
            &CallFilter {
                tail: 1_000_000,
                tool: None,
            },
        )
        .await
        .unwrap();
        store.close().await;
        let mut counts = BTreeMap::new();
        for entry in entries {
            *counts.entry(entry.call_id).or_insert(0) += 1;
        }
        counts
    })
}

/// The bytes of every file in `dir`.
fn journal_bytes(dir: &Path) -> Vec<u64> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.metadata().unwrap().len())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_server_killed_under_load_loses_no_answered_call_from_the_call_log() {
    let database = shared_database();
    let root = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("small.txt"), "x\n".repeat(512)).unwrap();
    let journal = state.path().join("call-journal");

    let server = replica(root.path(), &database, state.path());
    let addr = server.url.trim_start_matches("http://").to_string();
    let body = json!({ "path": "small.txt" }).to_string();
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (addr, body, stop) = (addr.clone(), body.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut answered = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match try_read(&addr, &body) {
                        Some(env) => {
                            assert_eq!(env["status"], "success", "{env}");
                            answered.push(env["context"]["call_id"].as_str().unwrap().to_string());
                        }
                        None => break,
                    }
                }
                answered
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = rustix::process::Pid::from_raw(i32::try_from(server.pid()).unwrap()).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    stop.store(true, Ordering::Relaxed);
    let answered: Vec<String> = clients
        .into_iter()
        .flat_map(|c| c.join().unwrap())
        .collect();
    assert!(
        answered.len() > 20,
        "only {} calls answered",
        answered.len()
    );
    let before = logged(&database);
    let only_journalled = answered
        .iter()
        .filter(|id| !before.contains_key(*id))
        .count();
    assert!(
        only_journalled > 0 && journal_bytes(&journal).iter().any(|n| *n > 0),
        "the kill left no answered call outside the store: nothing to test"
    );

    // The next start writes the killed server's journal, on its own.
    let again = replica(root.path(), &database, state.path());
    let deadline = Instant::now() + Duration::from_secs(60);
    let missing = |logged: &BTreeMap<String, i64>| -> Vec<String> {
        answered
            .iter()
            .filter(|id| !logged.contains_key(*id))
            .cloned()
            .collect()
    };
    while !missing(&logged(&database)).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    again.stop();
    let after = logged(&database);
    let missing = missing(&after);
    assert!(
        missing.is_empty(),
        "{} of {} answered calls missing from the log ({only_journalled} were only journalled at the kill), e.g. {:?}; journals: {:?}",
        missing.len(),
        answered.len(),
        &missing[..missing.len().min(5)],
        std::fs::read_dir(&journal).map(|d| d
            .flatten()
            .map(|e| (e.file_name(), e.metadata().unwrap().len()))
            .collect::<Vec<_>>())
    );
    let twice: Vec<(&String, &i64)> = after.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "logged more than once: {twice:?}");
    assert_eq!(
        journal_bytes(&journal).iter().sum::<u64>(),
        0,
        "records left in the journal after a clean stop"
    );
}
