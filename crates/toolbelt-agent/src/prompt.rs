//! The system prompt: who the agent is and where it works, the project's
//! instructions, and (text protocol) the tools.

use toolbelt_core::{Registry, Session, ToolSpec};
use toolbelt_wire::export::{text_prompt, tool_sections};

use crate::options::{AgentOptions, ModelSize, Protocol};
use crate::tool_names::{BASH, EDIT_FILE, GLOB, GREP, READ_FILE, READ_OUTPUT, WRITE_FILE};

/// The system prompt: who the agent is and where it works, the project's
/// instructions, and (text protocol) the tools. `finish` names the tool that
/// ends a small model's run.
pub(crate) fn system_prompt(
    registry: &Registry,
    options: &AgentOptions,
    finish: Option<&str>,
    tools: Option<&str>,
) -> String {
    let session = registry.session();
    let mut out = match (&options.system_prompt, options.model_size) {
        (Some(custom), _) => custom.trim_end().to_string(),
        (None, ModelSize::Large) => format!("{}\n\n{}", base_prompt(), environment(session)),
        (None, ModelSize::Small) => format!(
            "{}\n\n{}",
            small_prompt(registry, finish, options.protocol),
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
        if finish.is_none() {
            out.push_str(
                "\n\nWrite one Action line and stop; its observation comes back in the next message. \
                 When the task is done, write `Final Answer: ` followed by your answer.",
            );
        }
    }
    out
}

/// The tools section of the text protocol: the protocol's own, or for a model
/// that ends its runs through `finish`, how to write one call (an `Action:`
/// line, or a JSON object when `json` holds) with no example of a conversation
/// to continue.
pub(crate) fn tools_prompt(specs: &[ToolSpec], finish: Option<&str>, json: bool) -> String {
    let Some(finish) = finish else {
        return text_prompt(specs);
    };
    let form = if json {
        "reply with exactly one JSON object and nothing else:\n\n\
         {\"name\": \"tool_name\", \"arguments\": {\"argument\": \"value\"}}\n\n\
         It names the tool and holds its arguments."
    } else {
        "reply with exactly one line of this form and nothing else:\n\n\
         Action: tool_name[{\"argument\": \"value\"}]\n\n\
         The brackets hold one JSON object with the tool's arguments."
    };
    format!(
        "# Tools\n\nTo call a tool, {form} The tool's result comes back in the next message. \
         When the task is done, call {finish} with your answer.\n{}",
        tool_sections(specs)
    )
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

/// The system prompt of a small model: short, and plain about calling tools,
/// the tools named as the registry's profile names them (only those it has).
fn small_prompt(registry: &Registry, finish: Option<&str>, protocol: Protocol) -> String {
    let name = |canonical: &'static str| {
        registry
            .has(canonical)
            .then(|| registry.profile().exposed(canonical).to_string())
    };
    let mut out = String::from(
        "You are toolbelt, a coding agent working on the user's project through tools. You act \
         only by calling tools: describing a change or a command does nothing, so call the tool \
         that does it. Call one tool at a time, read its result, then decide the next call.\n",
    );
    let finders: Vec<String> = [GLOB, GREP].into_iter().filter_map(name).collect();
    match (finders.is_empty(), name(READ_FILE)) {
        (false, Some(read)) => out.push_str(&format!(
            "\n- Find files with {}; read a file with {read} before you change it.",
            finders.join(" or ")
        )),
        (true, Some(read)) => out.push_str(&format!(
            "\n- Read a file with {read} before you change it."
        )),
        (false, None) => out.push_str(&format!("\n- Find files with {}.", finders.join(" or "))),
        (true, None) => {}
    }
    match (name(EDIT_FILE), name(WRITE_FILE)) {
        (Some(edit), Some(write)) => out.push_str(&format!(
            "\n- Change part of a file with {edit} (copy old_string exactly from the file); \
             create a new file with {write}."
        )),
        (Some(edit), None) => out.push_str(&format!(
            "\n- Change part of a file with {edit} (copy old_string exactly from the file)."
        )),
        (None, Some(write)) => out.push_str(&format!("\n- Write a file with {write}.")),
        (None, None) => {}
    }
    if let Some(bash) = name(BASH) {
        out.push_str(&format!(
            "\n- Run programs and tests with {bash}, and read their output."
        ));
    }
    match finish {
        Some(finish) => out.push_str(&format!(
            "\n- When the task is done, call {finish} with your answer: what you did or found, in \
             one or two sentences. Only {finish} ends the task."
        )),
        None => out.push_str(
            "\n- When the task is done, answer in one or two sentences: what you did or found.",
        ),
    }
    if protocol == Protocol::Native {
        out.push_str("\n\nCalls go through the function-calling interface, not in your text.");
    }
    out
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

    /// The prompts name the tools through `tool_names`, as the profile names
    /// them; their text is what the model reads, word for word.
    #[test]
    fn prompts_read_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut registry = Registry::new(Session::new(dir.path()));
        toolbelt_tools::register_builtins(&mut registry).unwrap();
        assert_eq!(
            small_prompt(&registry, Some("finish"), Protocol::Native),
            "You are toolbelt, a coding agent working on the user's project through tools. You act \
             only by calling tools: describing a change or a command does nothing, so call the tool \
             that does it. Call one tool at a time, read its result, then decide the next call.\n\
             \n\
             - Find files with glob or grep; read a file with read_file before you change it.\n\
             - Change part of a file with edit_file (copy old_string exactly from the file); create a \
             new file with write_file.\n\
             - Run programs and tests with bash, and read their output.\n\
             - When the task is done, call finish with your answer: what you did or found, in one or \
             two sentences. Only finish ends the task.\n\
             \n\
             Calls go through the function-calling interface, not in your text."
        );
        registry.set_profile(
            toolbelt_core::profile::Profile::custom(
                "mine",
                [("read_file", "Read"), ("glob", "Glob"), ("grep", "Grep")],
            )
            .unwrap(),
        );
        let claude = small_prompt(&registry, Some("Finish"), Protocol::Text);
        assert!(
            claude.contains(
                "- Find files with Glob or Grep; read a file with Read before you change it."
            ),
            "{claude}"
        );
        assert!(claude.contains("call Finish with your answer"), "{claude}");
        assert!(base_prompt().ends_with(
            "- Large outputs are cut to their head, tail and error lines; read the rest with read_output \
             when you need it."
        ));
    }
}
