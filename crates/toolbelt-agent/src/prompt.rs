//! The system prompt: who the agent is and where it works, the project's
//! instructions, and (text protocol) the tools.

use toolbelt_core::{Registry, Session};

use crate::options::AgentOptions;

/// The system prompt: who the agent is and where it works, the project's
/// instructions, and (text protocol) the tools.
pub(crate) fn system_prompt(
    registry: &Registry,
    options: &AgentOptions,
    tools: Option<&str>,
) -> String {
    let session = registry.session();
    let mut out = match &options.system_prompt {
        Some(custom) => custom.trim_end().to_string(),
        None => format!("{BASE_PROMPT}\n\n{}", environment(session)),
    };
    for (name, text) in &options.instructions {
        let text = text.trim();
        if !text.is_empty() {
            out.push_str(&format!("\n\n# Project instructions ({name})\n\n{text}"));
        }
    }
    if let Some(tools) = tools {
        out.push_str("\n\n");
        out.push_str(tools.trim_end());
        out.push_str(
            "\n\nWrite one or more Action lines and stop; the observations come back in the next message. \
             When the task is done, write `Final Answer: ` followed by your answer.",
        );
    }
    out
}

/// The `# Environment` section of a system prompt: where the agent works.
pub(crate) fn environment(session: &Session) -> String {
    let roots = session
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "# Environment\n- Working directory: {}\n- Workspace roots: {roots}\n- Platform: {}\n- Today: {}",
        session.cwd().display(),
        std::env::consts::OS,
        chrono::Local::now().format("%Y-%m-%d"),
    )
}

/// The built-in system prompt.
const BASE_PROMPT: &str = "\
You are toolbelt, an agent that works on the user's machine through tools: files, search, \
the shell, the web, a todo list. Do the task the user gives you, then answer briefly with \
what you did and what you found.

- Look before you act: list, search and read the files a change touches before you edit them.
- Keep changes small and focused; follow the project's style.
- After a change, run what checks it (the tests, a build) when the project has it, and read \
the result.
- For a task of several steps, keep a todo list and update it as you go.
- When a tool answers with an error, read its message and hint and fix the call; do not \
repeat a call that failed unchanged.
- Large outputs are cut to their head, tail and error lines; read the rest with read_output \
when you need it.";
