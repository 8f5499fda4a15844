//! The wire formats of toolbelt: how tools and calls look to each model API.
//!
//! - [`export`]: tool specs as OpenAI (plain and strict), OpenAI Responses, Anthropic,
//!   Gemini, MCP and text-protocol schemas.
//! - [`calls`]: tool calls parsed from OpenAI, Anthropic, MCP and text-protocol replies,
//!   and results formatted back for each.
//! - [`batch`]: several calls given as one JSON array.
//!
//! The runtime these formats carry (specs, the registry, envelopes) is
//! `toolbelt-core`; this crate only translates.

pub mod batch;
pub mod calls;
pub mod export;
