//! Killing a command's whole process tree.
//!
//! A command runs in its own process group, and every process of its tree
//! carries [`MARKER_VAR`] in its environment (inherited down the tree). A tree is
//! stopped by signalling the group, then every process whose initial environment
//! (`/proc/<pid>/environ`) carries the call's marker: that reaches children that
//! left the group with `setsid`, `nohup ... &` or `disown`. A process that clears
//! its environment on `exec` (`env -i`) is out of reach, and one that survives
//! `SIGKILL` is reported. In a sandbox the command also runs in its own PID
//! namespace, which the kernel empties when the command ends: nothing escapes.

use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

/// The variable that marks every process of a command's tree.
pub const MARKER_VAR: &str = "TOOLBELT_EXEC_ID";

/// How long [`kill_tree`] waits for killed processes to disappear.
const GONE_WAIT: Duration = Duration::from_millis(500);

/// The processes other than this one whose initial environment carries
/// `MARKER_VAR=marker`.
#[must_use]
pub fn marked(marker: &str) -> Vec<Pid> {
    with_env(MARKER_VAR, marker)
}

/// The processes other than this one whose initial environment
/// (`/proc/<pid>/environ`) carries `var=value`.
#[must_use]
pub fn with_env(var: &str, value: &str) -> Vec<Pid> {
    let needle = format!("{var}={value}\0");
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .filter(|&pid| pid != me)
        else {
            continue;
        };
        let environ = entry.path().join("environ");
        // Zombies and other users' processes read as empty or fail: neither runs
        // anything of ours.
        let Ok(bytes) = std::fs::read(environ) else {
            continue;
        };
        if memchr::memmem::find(&bytes, needle.as_bytes()).is_some()
            && let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw)
        {
            found.push(pid);
        }
    }
    found
}

/// Sends `signal` to the process group `group` (when there is one) and to every
/// marked process; returns how many marked processes there were.
pub fn signal_tree(group: Option<Pid>, marker: &str, signal: Signal) -> usize {
    if let Some(group) = group {
        // ESRCH: the group is empty already.
        let _ = rustix::process::kill_process_group(group, signal);
    }
    let marked = marked(marker);
    for &pid in &marked {
        let _ = rustix::process::kill_process(pid, signal);
    }
    marked.len()
}

/// What is left after [`kill_tree`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Killed {
    /// Processes of the tree that were still running and got `SIGKILL`.
    pub killed: usize,
    /// Processes still running after `SIGKILL` (pids).
    pub survivors: Vec<u32>,
}

/// Kills what is left of a tree with `SIGKILL` and waits briefly until it is gone.
#[must_use]
pub fn kill_tree(group: Option<Pid>, marker: &str) -> Killed {
    let group_alive = group.is_some_and(|g| rustix::process::test_kill_process_group(g).is_ok());
    let marked = signal_tree(group, marker, Signal::KILL);
    let mut killed = Killed {
        killed: marked.max(usize::from(group_alive)),
        survivors: Vec::new(),
    };
    if marked == 0 {
        return killed;
    }
    let deadline = Instant::now() + GONE_WAIT;
    loop {
        let left = self::marked(marker);
        if left.is_empty() {
            return killed;
        }
        if Instant::now() >= deadline {
            killed.survivors = left
                .iter()
                .filter_map(|p| u32::try_from(p.as_raw_nonzero().get()).ok())
                .collect();
            return killed;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
