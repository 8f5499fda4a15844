//! What this machine can enforce, found by running the helper once and trying
//! every part for real.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::SandboxError;
use crate::mode::SandboxMode;

/// The Landlock ABI a file-system sandbox needs: 3 adds truncation to what is
/// controlled.
pub const MIN_LANDLOCK_ABI: u32 = 3;

/// What the sandbox can use on this machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Support {
    /// The Landlock ABI in force (none: Landlock is not available).
    pub landlock_abi: Option<u32>,
    /// New user namespaces can be created.
    pub user_namespace: bool,
    /// New mount namespaces can be created and bind a directory read-only.
    pub mount_namespace: bool,
    /// New network namespaces can be created.
    pub network_namespace: bool,
    /// New PID namespaces can be created and run a command.
    pub pid_namespace: bool,
    /// Why what is missing is missing.
    pub problems: Vec<String>,
}

impl Support {
    /// Probes with `helper` (a program that answers [`crate::HELPER_ARG`]).
    #[must_use]
    pub fn probe_with(helper: &Path) -> Support {
        // Why the helper could not answer is the probe's one problem.
        ask(helper).unwrap_or_else(|e| Support {
            problems: vec![crate::chain(&e)],
            ..Support::default()
        })
    }

    /// Probes once per process with the helper [`crate::locate_helper`] finds.
    #[must_use]
    pub fn probe() -> &'static Support {
        static PROBED: OnceLock<Support> = OnceLock::new();
        PROBED.get_or_init(|| match crate::locate_helper() {
            Some(helper) => Support::probe_with(&helper),
            None => Support {
                problems: vec![
                    "no sandbox helper: run through the toolbelt binary, or put \
                     toolbelt-sandbox beside this program"
                        .to_string(),
                ],
                ..Support::default()
            },
        })
    }

    /// Whether `mode` with the network on or off can be enforced.
    ///
    /// # Errors
    /// [`SandboxError::Unsupported`] saying what is missing.
    pub fn check(&self, mode: SandboxMode, network: bool) -> Result<(), SandboxError> {
        match self.missing(mode, network) {
            None => Ok(()),
            Some(missing) => Err(SandboxError::Unsupported {
                mode,
                network,
                missing,
                problems: self.problems.clone(),
            }),
        }
    }

    /// What `mode` with the network on or off needs that this machine lacks.
    fn missing(&self, mode: SandboxMode, network: bool) -> Option<String> {
        if mode != SandboxMode::None {
            match self.landlock_abi {
                Some(abi) if abi >= MIN_LANDLOCK_ABI => {}
                Some(abi) => {
                    return Some(format!(
                        "Landlock ABI {MIN_LANDLOCK_ABI} or later (this kernel has {abi})"
                    ));
                }
                None => return Some("Landlock".to_string()),
            }
        }
        if !network && !self.network_namespace {
            return Some("network namespaces".to_string());
        }
        None
    }

    /// A few lines for people: what is available and which modes hold.
    #[must_use]
    pub fn report(&self) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let mut text = String::new();
        let _ = writeln!(
            text,
            "landlock: {}",
            self.landlock_abi
                .map_or_else(|| "no".to_string(), |abi| format!("ABI {abi}"))
        );
        let _ = writeln!(text, "user namespace: {}", yes(self.user_namespace));
        let _ = writeln!(text, "mount namespace: {}", yes(self.mount_namespace));
        let _ = writeln!(text, "network namespace: {}", yes(self.network_namespace));
        let _ = writeln!(text, "pid namespace: {}", yes(self.pid_namespace));
        for mode in SandboxMode::ALL {
            for network in [true, false] {
                let verdict = match self.missing(mode, network) {
                    None if mode == SandboxMode::None && network => "no sandbox".to_string(),
                    None => "enforced".to_string(),
                    Some(missing) => format!("refused: needs {missing}"),
                };
                let net = if network { "on" } else { "off" };
                let _ = writeln!(text, "mode {mode}, network {net}: {verdict}");
            }
        }
        for p in &self.problems {
            let _ = writeln!(text, "note: {p}");
        }
        text
    }
}

/// Why the helper could not say what this machine supports.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("the sandbox helper {} cannot start", helper.display())]
    Start {
        helper: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The helper failed; its standard error says why (text: it comes from
    /// another process).
    #[error("the sandbox probe {} failed ({status}): {stderr}", helper.display())]
    Failed {
        helper: PathBuf,
        status: ExitStatus,
        stderr: String,
    },
    #[error("the sandbox probe answered badly")]
    Answer(#[source] serde_json::Error),
}

/// What `helper` finds this machine supports.
fn ask(helper: &Path) -> Result<Support, ProbeError> {
    let out = Command::new(helper)
        .args([crate::HELPER_ARG, "probe"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|source| ProbeError::Start {
            helper: helper.to_path_buf(),
            source,
        })?;
    if !out.status.success() {
        return Err(ProbeError::Failed {
            helper: helper.to_path_buf(),
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(ProbeError::Answer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn support(landlock_abi: Option<u32>, namespaces: bool) -> Support {
        Support {
            landlock_abi,
            user_namespace: namespaces,
            mount_namespace: namespaces,
            network_namespace: namespaces,
            pid_namespace: namespaces,
            problems: Vec::new(),
        }
    }

    fn missing(s: &Support, mode: SandboxMode, network: bool) -> Option<String> {
        match s.check(mode, network) {
            Ok(()) => None,
            Err(SandboxError::Unsupported { missing, .. }) => Some(missing),
            Err(e) => Some(format!("unexpected: {e}")),
        }
    }

    #[test]
    fn modes_are_refused_for_what_is_missing() {
        let full = support(Some(7), true);
        for mode in SandboxMode::ALL {
            for network in [true, false] {
                assert_eq!(missing(&full, mode, network), None);
            }
        }
        let none = support(None, false);
        assert_eq!(missing(&none, SandboxMode::None, true), None);
        assert_eq!(
            missing(&none, SandboxMode::ReadOnly, true),
            Some("Landlock".to_string())
        );
        assert_eq!(
            missing(&none, SandboxMode::None, false),
            Some("network namespaces".to_string())
        );
        let old = support(Some(2), true);
        assert_eq!(
            missing(&old, SandboxMode::WorkspaceWrite, true),
            Some("Landlock ABI 3 or later (this kernel has 2)".to_string())
        );
        // Landlock alone: the file-system modes hold, the network cannot be cut.
        let landlock_only = support(Some(7), false);
        assert_eq!(missing(&landlock_only, SandboxMode::ReadOnly, true), None);
        assert_eq!(
            missing(&landlock_only, SandboxMode::ReadOnly, false),
            Some("network namespaces".to_string())
        );
    }

    #[test]
    fn the_report_says_which_modes_hold() {
        let report = support(Some(7), false).report();
        assert!(report.contains("landlock: ABI 7\n"), "{report}");
        assert!(
            report.contains("mode read-only, network on: enforced\n"),
            "{report}"
        );
        assert!(
            report.contains("mode read-only, network off: refused: needs network namespaces\n"),
            "{report}"
        );
    }

    #[test]
    fn a_helper_that_cannot_answer_is_the_probes_one_problem() {
        let problems = |helper: &str| Support::probe_with(Path::new(helper)).problems;
        assert_eq!(
            problems("/nonexistent/toolbelt-sandbox"),
            vec![
                "the sandbox helper /nonexistent/toolbelt-sandbox cannot start: No such file \
                 or directory (os error 2)"
                    .to_string()
            ]
        );
        assert_eq!(
            problems("/bin/echo"),
            vec!["the sandbox probe answered badly: expected value at line 1 column 1".to_string()]
        );
        assert_eq!(
            problems("/bin/false"),
            vec!["the sandbox probe /bin/false failed (exit status: 1): ".to_string()]
        );
    }

    #[test]
    fn mode_names_parse() {
        assert_eq!(
            SandboxMode::parse("workspace_write"),
            Some(SandboxMode::WorkspaceWrite)
        );
        assert_eq!(
            SandboxMode::parse(" Read-Only "),
            Some(SandboxMode::ReadOnly)
        );
        assert_eq!(SandboxMode::parse("full"), None);
    }
}
