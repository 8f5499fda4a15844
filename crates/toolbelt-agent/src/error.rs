//! The agent's errors: [`AgentError`] for what callers see (transcripts, runs), and
//! the crate's own for a subagent that cannot start and an agent type file that
//! cannot be read. Model calls fail with [`ProviderError`].
//!
//! A message says only what failed here; the cause is its `source`, and the
//! chain is joined where it is shown (`toolbelt_core::error_chain` for the
//! model's text and the logs, `{:#}` in the terminal).

use std::io;
use std::path::PathBuf;

use toolbelt_core::RegistryError;
use toolbelt_core::front_matter::FrontMatterError;

use crate::provider::ProviderError;

/// An agent could not be set up, or its runs could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A transcript could not be read or written.
    #[error("transcript {path}")]
    Transcript {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// The file holds no run of `toolbelt agent`.
    #[error("transcript {path}: not a transcript of toolbelt agent")]
    NotATranscript {
        /// The file.
        path: PathBuf,
    },
    /// The folder of transcripts cannot be read.
    #[error("cannot read {dir}")]
    RunsUnreadable {
        /// The folder.
        dir: PathBuf,
        /// What went wrong.
        source: io::Error,
    },
    /// No run has the id asked for (nor starts with it).
    #[error("no run {id:?} in {dir} (toolbelt agent --list shows the runs)")]
    NoSuchRun {
        /// The id asked for.
        id: String,
        /// The folder of transcripts.
        dir: PathBuf,
    },
    /// The id asked for is the start of several runs' ids.
    #[error("{id:?} names {} runs: {}", matches.len(), matches.join(", "))]
    AmbiguousRun {
        /// The id asked for.
        id: String,
        /// The ids of the runs it names.
        matches: Vec<String>,
    },
    /// A run has no such turn to go back to.
    #[error("run {id} has no turn {turn} (turns run: {turns})")]
    NoSuchTurn {
        /// The run.
        id: String,
        /// The turn asked for.
        turn: u32,
        /// The turns it has.
        turns: u32,
    },
}

/// A subagent could not be run. Its message, with its causes, is the result its
/// parent reads.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubagentError {
    /// The subagent tools were registered but never given tools to hand on.
    #[error("the subagent tools are not attached to any tools")]
    Detached,
    /// No model was configured for subagents.
    #[error(
        "no model is configured for subagents (set [agent] model in toolbelt.toml, or TOOLBELT_AGENT_MODEL)"
    )]
    NoModel,
    /// The subagent's own subagent tools could not be registered.
    #[error("the subagent's tools cannot be set up")]
    Tools(#[from] RegistryError),
    /// The model its agent type names cannot be used.
    #[error("the model {name:?} of agent type {agent_type:?} cannot be used")]
    Model {
        /// The model.
        name: String,
        /// The agent type naming it.
        agent_type: String,
        /// Why the provider cannot be built.
        source: ProviderError,
    },
    /// A background subagent was stopped while it waited for a free slot.
    #[error("stopped before it started")]
    NotStarted,
}

/// An agent type file that is left out, and why.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TypeFileError {
    /// The file cannot be read.
    #[error("cannot be read")]
    Read(#[from] io::Error),
    /// Its front matter is missing or malformed.
    #[error(transparent)]
    FrontMatter(#[from] FrontMatterError),
    /// Its name is empty, too long, or has characters names may not have.
    #[error("invalid name {name:?}: use up to {max_chars} letters, digits, '-', '_' or '.'")]
    Name {
        /// The name.
        name: String,
        /// The longest name accepted, in characters.
        max_chars: usize,
    },
    /// Its description is empty.
    #[error("the description is empty: say when this agent should be used")]
    NoDescription,
    /// Its body, the system prompt, is empty.
    #[error("the body (the agent's system prompt) is empty")]
    NoPrompt,
}
