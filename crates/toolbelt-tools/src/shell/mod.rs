//! The shell toolset: [`bash::Bash`] runs a command, in the foreground or as a
//! background shell that [`bash_output::BashOutputTool`], [`write_stdin::WriteStdin`],
//! [`kill_shell::KillShell`] and [`list_shells::ListShells`] reach.

pub(crate) mod bash;
pub(crate) mod bash_output;
pub(crate) mod kill_shell;
pub(crate) mod list_shells;
pub(crate) mod write_stdin;
