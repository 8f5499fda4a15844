//! `read_file`: numbered windows with totals, encodings, binary and image files,
//! directories, "did you mean", and the read stamp.

use std::fs;
use std::path::Path;

use base64::Engine as _;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tempfile::TempDir;
use toolbelt_core::output::OutputBudget;
use toolbelt_core::{ErrorCode, Session, Status};
use toolbelt_fs::content_hash;

use super::{builtins, call, error_message, registry_with, success_data};

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

async fn read(root: &Path, args: Value) -> toolbelt_core::Envelope {
    call(&builtins(root), "read_file", args).await
}

#[tokio::test]
async fn reads_numbered_lines_with_totals() {
    let dir = TempDir::new().unwrap();
    let body = "fn main() {\n\tprintln!(\"hi\");\n}\n";
    fs::write(dir.path().join("main.rs"), body).unwrap();
    let env = read(dir.path(), json!({"path": "main.rs"})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "path": "main.rs", "kind": "text", "size": body.len(),
            "content_hash": content_hash(body.as_bytes()), "encoding": "utf-8",
            "first_line": 1, "last_line": 3, "total_lines": 3
        })
    );
    insta::assert_snapshot!("read_file__whole", env.text);
    assert_eq!(env.stats.counters.get("total_lines"), Some(&json!(3)));
}

#[tokio::test]
async fn offset_and_limit_give_a_window_and_the_offset_to_continue() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("log.txt"), numbered(100)).unwrap();
    let env = read(
        dir.path(),
        json!({"path": "log.txt", "offset": 10, "limit": 3}),
    )
    .await;
    let data = success_data(&env);
    assert_eq!(
        (
            &data["first_line"],
            &data["last_line"],
            &data["total_lines"],
            &data["next_offset"]
        ),
        (&json!(10), &json!(12), &json!(100), &json!(13))
    );
    insta::assert_snapshot!("read_file__window", env.text);
}

#[tokio::test]
async fn negative_offset_counts_from_the_end() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("log.txt"), numbered(100)).unwrap();
    let env = read(dir.path(), json!({"path": "log.txt", "offset": -3})).await;
    assert_eq!(
        env.text,
        "    98\tline 98\n    99\tline 99\n   100\tline 100\n[lines 98-100 of 100; end of file]"
    );
    let env = read(dir.path(), json!({"path": "log.txt", "offset": -1})).await;
    assert_eq!(env.text, "   100\tline 100\n[line 100 of 100; end of file]");
}

#[tokio::test]
async fn offset_past_the_end_says_how_many_lines_there_are() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("short.txt"), numbered(3)).unwrap();
    let env = read(dir.path(), json!({"path": "short.txt", "offset": 9})).await;
    assert_eq!(success_data(&env)["total_lines"], json!(3));
    assert_eq!(
        env.text,
        "[offset 9 is past the end: the file has 3 lines; use an offset from 1 to 3, or a negative one such as -3 for the last lines]"
    );
    fs::write(dir.path().join("empty.txt"), "").unwrap();
    let env = read(dir.path(), json!({"path": "empty.txt"})).await;
    assert_eq!(env.text, "[empty file: 0 lines]");
}

#[tokio::test]
async fn long_lines_are_cut_and_named() {
    let dir = TempDir::new().unwrap();
    let long = "x".repeat(12_345);
    fs::write(dir.path().join("min.js"), format!("a\n{long}\nb\n")).unwrap();
    let env = read(dir.path(), json!({"path": "min.js"})).await;
    assert_eq!(success_data(&env)["cut_lines"], json!([2]));
    let expected = format!(
        "     1\ta\n     2\t{}… [line cut: 12,345 chars, showing 2,000]\n     3\tb\n[3 lines; whole file; 1 long line cut: 2]",
        "x".repeat(2_000)
    );
    assert_eq!(env.text, expected);
}

#[tokio::test]
async fn the_byte_cap_follows_the_session_budget() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("big.txt"), numbered(5_000)).unwrap();
    let registry =
        registry_with(Session::new(dir.path()).with_budget(OutputBudget::with_max_bytes(4_000)));
    let env = call(&registry, "read_file", json!({"path": "big.txt"})).await;
    // Held below the budget: a complete answer, never cut and saved aside.
    assert_eq!(env.status, Status::Success);
    assert!(env.text.len() <= 4_000, "{}", env.text.len());
    let data = &env.data;
    assert_eq!(data["stopped_by_bytes"], json!(true));
    let last = data["last_line"].as_u64().unwrap();
    assert_eq!(data["next_offset"], json!(last + 1));
    assert!(
        env.text.ends_with(&format!(
            "; stopped at the 3.5 KB output cap; {} more lines; continue with offset={}]",
            toolbelt_fs::text::group(5_000 - usize::try_from(last).unwrap()),
            last + 1
        )),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn bom_and_utf16_files_are_decoded_and_their_encoding_named() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("bom.txt"), b"\xEF\xBB\xBFhello\r\n").unwrap();
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "héllo\r\nwörld\r\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    fs::write(dir.path().join("wide.txt"), &utf16).unwrap();

    let env = read(dir.path(), json!({"path": "bom.txt"})).await;
    assert_eq!(success_data(&env)["encoding"], json!("utf-8-bom"));
    assert_eq!(
        env.text,
        "     1\thello\n[1 line; whole file]\n[encoding: UTF-8 with a byte order mark; writes keep it]"
    );
    let env = read(dir.path(), json!({"path": "wide.txt"})).await;
    assert_eq!(success_data(&env)["encoding"], json!("utf-16le"));
    assert_eq!(
        success_data(&env)["content_hash"],
        json!(content_hash(&utf16))
    );
    assert_eq!(
        env.text,
        "     1\théllo\n     2\twörld\n[2 lines; whole file]\n[encoding: UTF-16 little endian with a byte order mark; writes keep it]"
    );
}

#[tokio::test]
async fn invalid_bytes_are_shown_lossily_and_flagged() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
    let env = read(dir.path(), json!({"path": "latin1.txt"})).await;
    assert_eq!(success_data(&env)["lossy"], json!(true));
    assert!(
        env.text
            .starts_with("     1\tcaf\u{FFFD}\n[1 line; whole file]\n[not valid text"),
        "{}",
        env.text
    );
}

#[tokio::test]
async fn binary_files_are_described_not_shown() {
    let dir = TempDir::new().unwrap();
    let mut elf = b"\x7FELF\x02\x01\x01\0".to_vec();
    elf.resize(16, 0);
    elf.extend_from_slice(&[2, 0]);
    elf.resize(4_096, 0);
    fs::write(dir.path().join("app"), &elf).unwrap();
    let env = read(dir.path(), json!({"path": "app"})).await;
    assert_eq!(
        success_data(&env),
        &json!({
            "path": "app", "kind": "binary", "size": 4_096,
            "content_hash": content_hash(&elf), "description": "ELF 64-bit executable"
        })
    );
    assert_eq!(
        env.text,
        "[app is a binary file: ELF 64-bit executable, 4.1 KB (4,096 bytes); its bytes are not shown]"
    );
}

#[tokio::test]
async fn images_are_attached_as_base64() {
    let dir = TempDir::new().unwrap();
    let png =
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89".to_vec();
    fs::write(dir.path().join("dot.png"), &png).unwrap();
    let env = read(dir.path(), json!({"path": "dot.png"})).await;
    let data = success_data(&env);
    assert_eq!(data["kind"], json!("image"));
    assert_eq!(data["image"]["mime_type"], json!("image/png"));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(data["image"]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, png);
    assert_eq!(env.text, "[image dot.png: image/png, 33 bytes; attached]");
}

#[tokio::test]
async fn a_directory_is_listed() {
    let dir = TempDir::new().unwrap();
    fs::create_dir_all(dir.path().join("src/deep")).unwrap();
    fs::write(dir.path().join("src/lib.rs"), "").unwrap();
    fs::write(dir.path().join("src/deep/x.rs"), "").unwrap();
    let env = read(dir.path(), json!({"path": "src"})).await;
    let data = success_data(&env);
    assert_eq!(data["kind"], json!("directory"));
    assert_eq!(data["listing"], json!(["deep/", "lib.rs"]));
    assert_eq!(
        env.text,
        "📁 src/\n├── 📁 deep/\n└── lib.rs\n[2 entries: 1 directory, 1 file]\n[src is a directory, listed one level deep; list_dir lists deeper, with patterns and sizes]"
    );
}

#[tokio::test]
async fn a_missing_file_suggests_the_closest_names() {
    let dir = TempDir::new().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    fs::write(dir.path().join("src/main.rs"), "").unwrap();
    let env = read(dir.path(), json!({"path": "src/mian.rs"})).await;
    assert_eq!(
        error_message(&env, ErrorCode::NotFound),
        "src/mian.rs does not exist"
    );
    assert_eq!(
        env.error.as_ref().unwrap().hint.as_deref(),
        Some("did you mean src/main.rs?")
    );
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("work");
    fs::create_dir(&root).unwrap();
    fs::write(dir.path().join("secret.txt"), "s3cr3t").unwrap();
    let env = read(&root, json!({"path": "../secret.txt"})).await;
    assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
    assert!(!env.text.contains("s3cr3t"));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link")).unwrap();
        let env = read(&root, json!({"path": "link"})).await;
        assert_eq!(env.error_code(), Some(ErrorCode::AccessDenied));
        assert!(!env.text.contains("s3cr3t"));
    }
}

#[tokio::test]
async fn files_over_the_read_cap_are_too_large() {
    let dir = TempDir::new().unwrap();
    let file = fs::File::create(dir.path().join("huge.log")).unwrap();
    // Sparse: no disk space used.
    file.set_len(toolbelt_tools::MAX_READ_BYTES + 1).unwrap();
    let env = read(dir.path(), json!({"path": "huge.log"})).await;
    let message = error_message(&env, ErrorCode::TooLarge);
    assert!(
        message.starts_with(
            "huge.log is 100 MB (100,000,001 bytes), over the 100 MB read_file reads into memory"
        ),
        "{message}"
    );
    assert!(
        env.error
            .as_ref()
            .unwrap()
            .hint
            .as_deref()
            .unwrap()
            .contains("grep")
    );
}

#[tokio::test]
async fn the_read_is_recorded_so_a_write_may_follow() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    let registry = builtins(dir.path());
    let args = json!({"path": "a.txt", "content": "two\n"});
    let env = call(&registry, "write_file", args.clone()).await;
    error_message(&env, ErrorCode::Conflict);
    success_data(&call(&registry, "read_file", json!({"path": "a.txt"})).await);
    success_data(&call(&registry, "write_file", args).await);
    assert_eq!(
        fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "two\n"
    );
}

#[tokio::test]
async fn the_example_is_what_the_tool_returns() {
    let dir = TempDir::new().unwrap();
    fs::create_dir(dir.path().join("src")).unwrap();
    fs::write(
        dir.path().join("src/main.rs"),
        "fn main() {\n    println!(\"hello\");\n}\n// end\n",
    )
    .unwrap();
    let registry = builtins(dir.path());
    let spec = registry.get("read_file").unwrap().spec().clone();
    for example in &spec.examples {
        let env = call(&registry, "read_file", example.input.clone()).await;
        assert_eq!(success_data(&env), &example.output);
    }
}

#[tokio::test]
async fn a_root_replaced_between_calls_is_opened_again() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().join("project");
    fs::create_dir(&root).unwrap();
    fs::write(root.join("a.txt"), "first\n").unwrap();
    let registry = builtins(&root);
    let env = call(&registry, "read_file", json!({"path": "a.txt"})).await;
    assert!(env.text.contains("first"), "{}", env.text);
    // The directory is moved away and another takes its path (a fresh clone, say).
    fs::rename(&root, dir.path().join("old")).unwrap();
    fs::create_dir(&root).unwrap();
    fs::write(root.join("a.txt"), "second\n").unwrap();
    let env = call(&registry, "read_file", json!({"path": "a.txt"})).await;
    assert!(env.text.contains("second"), "{}", env.text);
    // A root that is gone is reported, not read through an old handle.
    fs::remove_dir_all(&root).unwrap();
    let env = call(&registry, "read_file", json!({"path": "a.txt"})).await;
    assert_eq!(env.status, Status::Error, "{env:?}");
}

#[tokio::test]
async fn file_path_as_other_agents_send_it_is_repaired_and_recorded() {
    let dir = TempDir::new().unwrap();
    fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let env = read(dir.path(), json!({"file_path": "a.txt"})).await;
    assert_eq!(success_data(&env)["path"], "a.txt");
    let repairs: Vec<(String, String)> = env
        .context
        .repairs
        .iter()
        .map(|r| (r.path.clone(), r.action.clone()))
        .collect();
    assert_eq!(
        repairs,
        [(
            "path".to_string(),
            "`file_path` -> `path` (the parameter's name here)".to_string()
        )]
    );
}

/// With inline file work, a read and a shallow listing run on the calling thread:
/// they answer while every worker thread of the runtime is busy; without it, the
/// read waits for a worker.
#[test]
fn inline_file_work_needs_no_worker_thread() {
    let dir = TempDir::new().unwrap();
    let root = dir.path().canonicalize().unwrap();
    fs::write(root.join("a.txt"), "alpha\n").unwrap();
    if !toolbelt_fs::mounts::on_local_filesystems(std::slice::from_ref(&root)) {
        eprintln!("skipping: the temporary directory is not on a local filesystem");
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(1)
        .build()
        .unwrap();
    rt.block_on(async {
        let (release, held) = std::sync::mpsc::channel::<()>();
        let busy = tokio::task::spawn_blocking(move || held.recv());
        let inline = registry_with(Session::new(&root).with_inline_file_work(true));
        let env = call(&inline, "read_file", json!({"path": "a.txt"})).await;
        assert!(env.text.contains("alpha"), "{env:#?}");
        let env = call(&inline, "list_dir", json!({"path": "."})).await;
        assert!(env.text.contains("a.txt"), "{env:#?}");

        let pooled = builtins(&root);
        let waiting = tokio::time::timeout(
            std::time::Duration::from_millis(300),
            pooled.execute("read_file", json!({"path": "a.txt"})),
        )
        .await;
        assert!(
            waiting.is_err(),
            "the read did not wait for the busy worker"
        );
        release.send(()).unwrap();
        busy.await.unwrap().unwrap();
        let env = call(&pooled, "read_file", json!({"path": "a.txt"})).await;
        assert!(env.text.contains("alpha"), "{env:#?}");
    });
}
