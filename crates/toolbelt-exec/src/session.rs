//! A new session for each command when the server has a controlling terminal:
//! nothing the command starts can then prompt on it (`ssh`, `sudo` and `git`
//! credential prompts open `/dev/tty`, which fails at once instead of waiting for
//! someone to type). A server without a terminal (an MCP or HTTP server) has
//! none to give away, and starts commands in their own process group only, which
//! lets the standard library spawn them without a fork.

#![allow(unsafe_code)]

use std::sync::OnceLock;

/// Starts the child of `cmd` in a new session (and a new process group whose id
/// is its pid) when this process has a controlling terminal, else in a new
/// process group.
pub(crate) fn detach(cmd: &mut tokio::process::Command) {
    if !has_terminal() {
        cmd.process_group(0);
        return;
    }
    // SAFETY: the closure runs in the child between fork and exec. It only calls
    // setsid(2), which is async-signal-safe: it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
}

/// Whether this process has a controlling terminal (`tty_nr` of
/// `/proc/self/stat`), read once.
fn has_terminal() -> bool {
    static TTY: OnceLock<bool> = OnceLock::new();
    *TTY.get_or_init(|| {
        std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|stat| {
                // pid (comm) state ppid pgrp session tty_nr ...
                let rest = stat.rsplit_once(") ")?.1;
                rest.split(' ').nth(4)?.parse::<i64>().ok()
            })
            // Unknown: give the command its own session to be safe.
            .is_none_or(|tty| tty != 0)
    })
}
