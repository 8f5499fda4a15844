//! Measures `toolbelt_exec::run` against plain `sh -c`: the cost of spawning a
//! short command, and the throughput and memory of a flood of output.
//!
//! `cargo run --release -p toolbelt-exec --example exec_bench -- [RUNS] [FLOOD_BYTES]`

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use toolbelt_core::output::OutputBudget;
use toolbelt_exec::{EnvPolicy, ExecRequest, run};
use toolbelt_sandbox::{Sandbox, SandboxMode};

/// Bytes fed to base64 in the flood: `head -c 2G`.
const DEFAULT_FLOOD_BYTES: u64 = 2 << 30;

/// What one command holds for its output, in KiB, per stream: a 64 KiB pipe read,
/// its decoded text, the spill file's 64 KiB write buffer and the text budget.
const BUFFER_CAP_KIB: u64 = 2 * (64 + 64 + 64 + 30);

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn request(command: &str, spill: &std::path::Path) -> ExecRequest {
    let mut req = ExecRequest::new(command, std::env::temp_dir(), Duration::from_secs(600));
    req.env = EnvPolicy::default().build(std::env::vars(), &BTreeMap::new());
    req.spill_dir = Some(spill.to_path_buf());
    req.stdout_budget = OutputBudget::default();
    req
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let runs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let flood: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(DEFAULT_FLOOD_BYTES);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let spill = std::env::temp_dir().join(format!("toolbelt-exec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&spill)?;
    let never = CancellationToken::new();

    println!(
        "{runs} runs per command; the median of each. toolbelt runs commands with bash, \
         which starts slower than sh (dash here): the ratio and the fixed cost are given \
         against both.\n"
    );
    println!(
        "| command | `sh -c` (ms) | `bash -c` (ms) | toolbelt_exec::run (ms) | ratio to sh / bash | fixed cost over sh / bash (ms) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for command in ["true", "echo hello"] {
        let mut sh = Vec::with_capacity(runs);
        let mut bash = Vec::with_capacity(runs);
        let mut ours = Vec::with_capacity(runs);
        for i in 0..runs + 10 {
            // Take turns, so that a noisy moment falls on all three.
            let plain = |shell: &str| -> Result<Duration, std::io::Error> {
                let t = Instant::now();
                let out = Command::new(shell)
                    .args(["-c", command])
                    .stdin(Stdio::null())
                    .output()?;
                assert!(out.status.success());
                Ok(t.elapsed())
            };
            let s = plain("sh")?;
            let b = plain("bash")?;
            let t = Instant::now();
            let outcome = rt.block_on(run(request(command, &spill), &never))?;
            let o = t.elapsed();
            assert_eq!(outcome.exit_code, 0);
            if i >= 10 {
                sh.push(s);
                bash.push(b);
                ours.push(o);
            }
        }
        let (s, b, o) = (median(sh), median(bash), median(ours));
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| `{command}` | {:.2} | {:.2} | {:.2} | {:.2}x / {:.2}x | {:.2} / {:.2} |",
            ms(s),
            ms(b),
            ms(o),
            ms(o) / ms(s),
            ms(o) / ms(b),
            ms(o) - ms(s),
            ms(o) - ms(b),
        );
    }

    sandboxed(&rt, runs, &spill, &never)?;

    let command = format!("head -c {flood} /dev/zero | base64");
    let t = Instant::now();
    let status = Command::new("sh")
        .args(["-c", &format!("{command} > /dev/null")])
        .status()?;
    let plain = t.elapsed();
    assert!(status.success());
    let before = peak_rss_kib();
    let t = Instant::now();
    let outcome = rt.block_on(run(request(&command, &spill), &never))?;
    let ours = t.elapsed();
    let after = peak_rss_kib();
    let bytes = outcome.stdout.captured.total_bytes;
    let mb = bytes as f64 / 1e6;
    println!("\nOutput flood: `{command}` ({mb:.0} MB of output).\n");
    println!(
        "| measure | `sh -c ... > /dev/null` | toolbelt_exec::run (bounded text, whole output spilled) |"
    );
    println!("|---|---:|---:|");
    println!(
        "| time (s) | {:.2} | {:.2} |",
        plain.as_secs_f64(),
        ours.as_secs_f64()
    );
    println!(
        "| throughput (MB/s) | {:.0} | {:.0} |",
        mb / plain.as_secs_f64(),
        mb / ours.as_secs_f64()
    );
    println!(
        "| peak RSS of the caller (MiB) | | {:.1} (grew {:.1} during the flood) |",
        after as f64 / 1024.0,
        after.saturating_sub(before) as f64 / 1024.0
    );
    println!(
        "| text kept for the model (bytes) | | {} |",
        outcome.stdout.captured.text.len()
    );
    // base64: 4 characters per 3 bytes, in lines of 76 characters.
    let chars = flood.div_ceil(3) * 4;
    let expected = chars + chars.div_ceil(76);
    let spilled = outcome
        .stdout
        .captured
        .spill_path
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    let grown = after.saturating_sub(before);
    let check = |ok: bool| if ok { "yes" } else { "**no**" };
    println!(
        "\n- text within the 30 KB budget: {}\n- spill complete ({spilled} of {expected} bytes): {}\n         - memory grew {grown} KiB, under 3x the {BUFFER_CAP_KIB} KiB the buffers hold: {}",
        check(outcome.stdout.captured.text.len() <= 30_000),
        check(spilled == expected),
        check(grown < 3 * BUFFER_CAP_KIB),
    );
    std::fs::remove_dir_all(&spill)?;
    Ok(())
}

/// The cost of a sandbox: `true` run plainly and in each sandbox mode.
fn sandboxed(
    rt: &tokio::runtime::Runtime,
    runs: usize,
    spill: &std::path::Path,
    never: &CancellationToken,
) -> Result<(), Box<dyn std::error::Error>> {
    let root = vec![std::env::temp_dir()];
    let modes = [
        ("no sandbox", None),
        (
            "read-only, network on",
            Sandbox::new(SandboxMode::ReadOnly, true, &root)?,
        ),
        (
            "workspace-write, network on",
            Sandbox::new(SandboxMode::WorkspaceWrite, true, &root)?,
        ),
        (
            "workspace-write, network off",
            Sandbox::new(SandboxMode::WorkspaceWrite, false, &root)?,
        ),
    ];
    println!(
        "\nSandbox: `true` through toolbelt_exec::run in each mode (the helper is started, enters its namespaces and Landlock, then starts bash).\n"
    );
    println!("| mode | median (ms) | cost over no sandbox (ms) |");
    println!("|---|---:|---:|");
    let mut base = None;
    for (name, sandbox) in modes {
        let sandbox = sandbox.map(Arc::new);
        let mut times = Vec::with_capacity(runs);
        for i in 0..runs + 10 {
            let mut req = request("true", spill);
            req.sandbox.clone_from(&sandbox);
            let t = Instant::now();
            let outcome = rt.block_on(run(req, never))?;
            let elapsed = t.elapsed();
            assert_eq!(
                outcome.exit_code, 0,
                "{name}: {}",
                outcome.stderr.captured.text
            );
            if i >= 10 {
                times.push(elapsed);
            }
        }
        let ms = median(times).as_secs_f64() * 1e3;
        let base_ms = *base.get_or_insert(ms);
        println!("| {name} | {ms:.2} | {:.2} |", ms - base_ms);
    }
    Ok(())
}
