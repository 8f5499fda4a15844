//! The system prompt: who the agent is and where it works, the project's
//! instructions, and (text protocol) the tools.

use toolbelt_core::{Registry, Session};

use crate::options::{AgentOptions, ModelSize, Protocol};
use crate::tool_names::{BASH, EDIT_FILE, GLOB, GREP, READ_FILE, READ_OUTPUT, WRITE_FILE};

/// The system prompt: who the agent is and where it works, the project's
/// instructions, and (text protocol) the tools.
pub(crate) fn system_prompt(
    registry: &Registry,
    options: &AgentOptions,
    tools: Option<&str>,
) -> String {
    let session = registry.session();
    let mut out = match (&options.system_prompt, options.model_size) {
        (Some(custom), _) => custom.trim_end().to_string(),
        (None, ModelSize::Large) => format!("{}\n\n{}", base_prompt(), environment(session)),
        (None, ModelSize::Small) => format!(
            "{}\n\n{}\n\n{}",
            small_prompt(),
            example_call(registry, options.protocol),
            environment(session)
        ),
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
            "\n\nWrite one Action line and stop; its observation comes back in the next message. \
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

/// One call of a tool the registry has, as the model should write it in
/// `protocol`: the prompt of a small model shows it.
fn example_call(registry: &Registry, protocol: Protocol) -> String {
    let specs = registry.definitions();
    let (name, arguments) = match specs
        .iter()
        .find(|s| registry.resolve(&s.name) == Some(READ_FILE))
    {
        Some(spec) => (spec.name.clone(), r#"{"path": "README.md"}"#.to_string()),
        None => match specs
            .iter()
            .find_map(|s| s.examples.first().map(|e| (s, e)))
        {
            Some((spec, example)) => (spec.name.clone(), example.input.to_string()),
            None => return String::new(),
        },
    };
    match protocol {
        Protocol::Native => format!(
            "For example, to read a file, call the tool {name} with the arguments {arguments}. \
             Calls go through the function-calling interface, not in your text."
        ),
        Protocol::Text => format!(
            "For example, to read a file, write this line and stop:\nAction: {name}[{arguments}]"
        ),
    }
}

/// The system prompt of a small model: short, and plain about calling tools.
fn small_prompt() -> String {
    format!(
        "\
You are toolbelt, a coding agent working on the user's project through tools. You act \
only by calling tools: describing a change or a command does nothing, so call the tool \
that does it. Call one tool at a time, read its result, then decide the next call.

- Find files with {GLOB} or {GREP}; read a file with {READ_FILE} before you change it.
- Change a file with {EDIT_FILE} (copy old_string exactly from the file) or {WRITE_FILE}.
- Run programs and tests with {BASH}, and read their output.
- When the task is done, answer in one or two sentences: what you did or found."
    )
}

/// The built-in system prompt.
fn base_prompt() -> String {
    format!(
        "\
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
- Large outputs are cut to their head, tail and error lines; read the rest with {READ_OUTPUT} \
when you need it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prompts name the tools through `tool_names`; their text is what the
    /// model reads, word for word.
    #[test]
    fn prompts_read_as_written() {
        assert_eq!(
            small_prompt(),
            "You are toolbelt, a coding agent working on the user's project through tools. You act \
             only by calling tools: describing a change or a command does nothing, so call the tool \
             that does it. Call one tool at a time, read its result, then decide the next call.\n\
             \n\
             - Find files with glob or grep; read a file with read_file before you change it.\n\
             - Change a file with edit_file (copy old_string exactly from the file) or write_file.\n\
             - Run programs and tests with bash, and read their output.\n\
             - When the task is done, answer in one or two sentences: what you did or found."
        );
        assert!(base_prompt().ends_with(
            "- Large outputs are cut to their head, tail and error lines; read the rest with read_output \
             when you need it."
        ));
    }
}
