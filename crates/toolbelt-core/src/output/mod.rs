//! Output budgets and spill files.
//!
//! Every text a model reads has a budget ([`OutputBudget`], 30,000 bytes by default).
//! Output over it is cut to the head, the tail **and the lines in between that look
//! like errors** ([`ERROR_MARKERS`], then [`WARNING_MARKERS`]), with markers saying
//! what was left out; the full output is streamed to `<spill_dir>/<output_id>.txt`,
//! from where [`read_spilled`] pages it back (the `read_output` tool).
//!
//! - [`OutputSink`]: a streaming, memory-bounded writer for a tool's output; finish
//!   it to get a [`Captured`].
//! - [`apply_budget`] / [`truncate_in_memory`]: the same for a text already in memory.
//! - [`Captured::apply_to`]: puts the result into an [`Envelope`](crate::Envelope)
//!   (`partial`, `data.truncated`, `data.output_id`, `stats.output_bytes`/`output_lines`).
//!
//! ```
//! use std::io::Write;
//! use toolbelt_core::output::{OutputBudget, OutputSink, read_spilled};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut sink = OutputSink::new(OutputBudget::with_max_bytes(2_000), dir.path().to_path_buf());
//! for i in 1..=1_000 {
//!     if i == 500 {
//!         writeln!(sink, "error[E0425]: cannot find value `x` in this scope").unwrap();
//!     } else {
//!         writeln!(sink, "compiling crate {i}").unwrap();
//!     }
//! }
//! let captured = sink.finish().unwrap();
//! assert!(captured.truncated && captured.text.len() <= 2_000);
//! assert!(captured.text.contains("[line 500] error[E0425]"));
//! let id = captured.output_id.unwrap();
//! let page = read_spilled(dir.path(), &id, 500, 1).unwrap();
//! assert!(page.text.starts_with("   500\terror[E0425]"));
//! ```
//!
//! Memory stays bounded whatever the output: the sink holds at most `max_bytes`
//! before it spills, then the head, a ring buffer of the tail, a prefix of the
//! current line and at most `max_error_lines` error lines of `max_line_bytes` each.
//!
//! Saved outputs beyond this process: a session may hold [`SavedOutputs`] (a
//! store shared by the replicas of a server). The registry then keeps each saved
//! output there too, in [`SavedChunk`]s of whole lines ([`LineChunks`]), before
//! the call's answer leaves, and `read_output` pages it from there when the file
//! is not in this process's spill directory. Both sources make their pages with
//! one [`PageFill`], so a page is the same byte for byte wherever it was read.
//! [`SavedOutputLimits`] says how long both keep them ([`expire_spilled`]).
//!
//! The module's rooms: `budget` (the limits and the bounded result), `sink` (the
//! streaming writer and its spill file), `truncate` (the layout of a cut text and
//! its markers), `page` (saved outputs' ids and files, read back a page at a
//! time), `fill` (a page made from an output's bytes, wherever they are kept),
//! `chunks` (an output cut into chunks of lines for a store), `saved` (the store
//! of saved outputs), `expiry` (how long they are kept), `cut` (line and
//! character boundaries) and `reply` (where all this meets the tool layer).

mod budget;
mod chunks;
mod cut;
mod expiry;
mod fill;
mod page;
mod reply;
mod saved;
mod sink;
mod truncate;

pub use budget::{
    Captured, DEFAULT_MAX_ERROR_LINES, DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_OUTPUT_BYTES,
    MARKER_RESERVE_BYTES, OutputBudget,
};
pub use chunks::{LineChunks, SAVED_CHUNK_BYTES, SavedChunk};
pub use expiry::{
    Expired, SAVED_OUTPUT_MAX_AGE, SAVED_OUTPUT_MAX_TOTAL_BYTES, SavedOutputLimits, expire_spilled,
};
pub use fill::{
    DEFAULT_READ_LIMIT_LINES, MAX_PAGE_BYTES, MAX_PAGE_LINE_BYTES, MAX_READ_LIMIT_LINES, PageFill,
    PageRequest, SpilledPage,
};
pub use page::{SpillError, is_valid_output_id, read_spilled, read_spilled_within, spilled_path};
pub use saved::{SaveError, SavedOutputs};
pub use sink::{OutputSink, apply_budget, truncate_in_memory};
pub use truncate::{ERROR_MARKERS, WARNING_MARKERS};

/// Counts as people read them; its home is [`crate::human::group`].
pub use crate::human::group;

#[cfg(test)]
mod saved_tests;
#[cfg(test)]
mod tests;
