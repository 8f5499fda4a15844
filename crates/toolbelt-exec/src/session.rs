//! A new session for each command: its own process group, and no controlling
//! terminal, so nothing it starts can prompt on the terminal the server runs in
//! (`ssh`, `sudo` and `git` credential prompts open `/dev/tty`, which then fails at
//! once instead of waiting for someone to type).

#![allow(unsafe_code)]

/// Makes the child of `cmd` the leader of a new session (and of a new process
/// group whose id is its pid).
pub(crate) fn new_session(cmd: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the child between fork and exec. It only calls
    // setsid(2), which is async-signal-safe: it allocates nothing and takes no lock.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
}
