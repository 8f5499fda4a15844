//! `read_file`: a window of a file's numbered lines; images attached, binary files
//! described, directories listed.

use base64::Engine as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolbelt_core::human::plural;
use toolbelt_core::{
    Category, ErrorCode, Hints, Reply, Subject, ToolContext, ToolError, ToolResult, ToolSpec,
    TypedTool,
};
use toolbelt_fs::text::{self, Encoding, RenderOptions, Sniffed};
use toolbelt_fs::{FsError, WorkPath};
use toolbelt_search::tree::{self, TreeOptions};

use crate::workspace::{Workspace, workspace};

/// The largest file read into memory; larger ones are refused with TOO_LARGE.
pub const MAX_READ_BYTES: u64 = 100_000_000;
/// The largest image attached; larger ones are described, not attached.
pub const MAX_IMAGE_BYTES: u64 = 5_000_000;
/// Most lines one call may ask for.
pub const MAX_READ_LIMIT_LINES: u32 = 10_000;
/// Bytes kept free below the output cap for the notes after the footer.
const NOTES_RESERVE_BYTES: usize = 512;

/// Arguments of `read_file`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileParams {
    /// The file, relative to the working directory or absolute inside the workspace.
    #[schemars(length(min = 1))]
    pub path: String,
    /// First line to show, 1-based; negative counts from the end (-1 = the last line, -50 = the last 50 lines). Default 1.
    #[serde(default)]
    pub offset: Option<i64>,
    /// Most lines to show (default 2000, at most 10000). Output stops earlier at its byte cap and says where to continue.
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<u32>,
}

/// What was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadKind {
    /// A text file: its lines are in `text`.
    Text,
    /// An image, attached in `image`.
    Image,
    /// A binary file: described, not shown.
    Binary,
    /// A directory: listed one level deep.
    Directory,
}

/// An attached image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ImageData {
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub mime_type: String,
    /// The file's bytes, base64 (standard alphabet, padded).
    pub data: String,
}

/// Result of `read_file`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ReadFileOutput {
    /// The path, as shown to the model.
    pub path: String,
    /// `text`, `image`, `binary` or `directory`.
    pub kind: ReadKind,
    /// Size in bytes (of a file).
    pub size: u64,
    /// The content hash of the file as read; pass it as `expected_hash` to write tools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_hash: Option<String>,
    /// Text: the encoding (`utf-8`, `utf-8-bom`, `utf-16le`, `utf-16be`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Text: true when bytes were not valid in the encoding and are shown as U+FFFD; such files cannot be edited.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lossy: bool,
    /// Text: number of the first line shown (0 when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_line: Option<usize>,
    /// Text: number of the last line shown (0 when none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_line: Option<usize>,
    /// Text: lines in the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<usize>,
    /// Text: the offset to continue with, when lines remain after those shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<usize>,
    /// Text: lines shown cut because they were over 2000 characters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cut_lines: Vec<usize>,
    /// Text: true when the output's byte cap ended the window before `limit`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_by_bytes: bool,
    /// Image: the attached image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageData>,
    /// Binary (or an image too large to attach): what it looks like.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Directory: its entries, one level deep (subdirectories end with `/`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing: Option<Vec<String>>,
}

impl ReadFileOutput {
    fn new(path: String, kind: ReadKind, size: u64) -> ReadFileOutput {
        ReadFileOutput {
            path,
            kind,
            size,
            content_hash: None,
            encoding: None,
            lossy: false,
            first_line: None,
            last_line: None,
            total_lines: None,
            next_offset: None,
            cut_lines: Vec::new(),
            stopped_by_bytes: false,
            image: None,
            description: None,
            listing: None,
        }
    }
}

/// The `read_file` tool.
#[derive(Debug, Default)]
pub struct ReadFile;

impl TypedTool for ReadFile {
    type Params = ReadFileParams;
    type Output = ReadFileOutput;

    fn spec(&self) -> ToolSpec {
        ToolSpec::describe("read_file", include_str!("read_file.md"))
            .title("Read File")
            .category(Category::Files)
            .subject(Subject::Path)
            .permission("fs:read")
            .hints(Hints::read_only())
            .key_argument("path")
            .short_arguments(&["offset", "limit"])
            .example(
                "Read the last 2 lines of a file",
                serde_json::json!({"path": "src/main.rs", "offset": -2}),
                serde_json::json!({
                    "path": "src/main.rs", "kind": "text", "size": 44,
                    "content_hash": "3789fcea967e6d69", "encoding": "utf-8",
                    "first_line": 3, "last_line": 4, "total_lines": 4
                }),
            )
    }

    async fn call(&self, ctx: &ToolContext, p: ReadFileParams) -> ToolResult<ReadFileOutput> {
        let ws = workspace(ctx)?;
        // Held to the session's output budget so the page is never cut and saved aside.
        let max_bytes = text::DEFAULT_MAX_OUTPUT_BYTES.min(ctx.budget().max_bytes);
        ws.run(move |ws| read(ws, &p, max_bytes)).await
    }
}

fn read(
    ws: &Workspace,
    p: &ReadFileParams,
    max_bytes: usize,
) -> Result<Reply<ReadFileOutput>, ToolError> {
    let path = ws.resolve(&p.path)?;
    let shown = ws.display(&path);
    // One look at the path: the read itself refuses a directory, listed instead.
    let bytes = match ws.jail.read(&path, MAX_READ_BYTES) {
        Err(FsError::IsADirectory { .. }) => return directory(&path, shown),
        read => read,
    };
    let bytes = bytes.map_err(|e| match e {
        FsError::TooLarge { size, .. } => ToolError::new(
            ErrorCode::TooLarge,
            format!(
                "{shown} is {}, over the {} read_file reads into memory",
                size_words(size),
                text::human_bytes(usize::try_from(MAX_READ_BYTES).unwrap_or(usize::MAX)),
            ),
        )
        .hint("search it with grep (pattern, context_lines) to find the lines you need"),
        FsError::NotFound { .. } => ws.not_found(&path),
        e => e.into(),
    })?;
    let hash = ws.record_read(&path, &bytes);
    let size = bytes.len() as u64;
    match text::sniff(&bytes) {
        Sniffed::Text => Ok(text_reply(shown, &bytes, hash, p, max_bytes)),
        Sniffed::Image { mime } if size <= MAX_IMAGE_BYTES => {
            let mut out = ReadFileOutput::new(shown, ReadKind::Image, size);
            let text = format!(
                "[image {}: {mime}, {}; attached]",
                out.path,
                size_words(size)
            );
            out.content_hash = Some(hash);
            out.image = Some(ImageData {
                mime_type: mime.to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(&bytes),
            });
            Ok(Reply::new(out, text).stat("bytes", size))
        }
        Sniffed::Image { mime } => {
            let description = format!("{mime} image");
            let text = format!(
                "[{shown} is a {description} of {}, over the {} that can be attached; its bytes are not shown]",
                size_words(size),
                size_words(MAX_IMAGE_BYTES)
            );
            Ok(binary_reply(shown, size, hash, description, text))
        }
        Sniffed::Binary { description } => {
            let text = format!(
                "[{shown} is a binary file: {description}, {}; its bytes are not shown]",
                size_words(size)
            );
            Ok(binary_reply(shown, size, hash, description, text))
        }
    }
}

fn binary_reply(
    path: String,
    size: u64,
    hash: String,
    description: String,
    text: String,
) -> Reply<ReadFileOutput> {
    let mut out = ReadFileOutput::new(path, ReadKind::Binary, size);
    out.content_hash = Some(hash);
    out.description = Some(description);
    Reply::new(out, text).stat("bytes", size)
}

fn text_reply(
    shown: String,
    bytes: &[u8],
    hash: String,
    p: &ReadFileParams,
    max_bytes: usize,
) -> Reply<ReadFileOutput> {
    let decoded = text::decode(bytes);
    let opts = RenderOptions {
        offset: p.offset.unwrap_or(1),
        limit: p.limit.map_or(text::DEFAULT_LIMIT_LINES, |l| {
            l.min(MAX_READ_LIMIT_LINES) as usize
        }),
        max_line_chars: text::MAX_LINE_CHARS,
        max_bytes: max_bytes.saturating_sub(NOTES_RESERVE_BYTES),
    };
    let page = text::render_lines(&decoded.text, &opts);
    let mut out_text = page.to_text();
    if decoded.encoding != Encoding::Utf8 {
        out_text.push_str(&format!(
            "\n[encoding: {}; writes keep it]",
            encoding_words(decoded.encoding)
        ));
    }
    if decoded.lossy {
        out_text.push_str(
            "\n[not valid text in any supported encoding: invalid bytes are shown as \u{FFFD}; edits of this file are refused, a full overwrite with write_file is allowed]",
        );
    }
    let size = bytes.len() as u64;
    let shown_lines = if page.first_line == 0 {
        0
    } else {
        page.last_line - page.first_line + 1
    };
    let out = ReadFileOutput {
        content_hash: Some(hash),
        encoding: Some(decoded.encoding.as_str().to_string()),
        lossy: decoded.lossy,
        first_line: Some(page.first_line),
        last_line: Some(page.last_line),
        total_lines: Some(page.total_lines),
        next_offset: page.next_offset,
        cut_lines: page.cut_lines.iter().map(|c| c.line).collect(),
        stopped_by_bytes: page.stopped_by_bytes,
        ..ReadFileOutput::new(shown, ReadKind::Text, size)
    };
    Reply::new(out, out_text)
        .stat("lines", shown_lines)
        .stat("total_lines", page.total_lines)
        .stat("bytes", size)
}

fn directory(path: &WorkPath, shown: String) -> Result<Reply<ReadFileOutput>, ToolError> {
    let tree = tree::list_tree(path.abs(), &shown, &TreeOptions::default())?;
    let text = format!(
        "{}\n[{shown} is a directory, listed one level deep; list_dir lists deeper, with patterns and sizes]",
        tree.text
    );
    let mut out = ReadFileOutput::new(shown, ReadKind::Directory, 0);
    out.listing = Some(tree.entries.into_iter().map(|e| e.path).collect());
    Ok(Reply::new(out, text).stat("entries", tree.shown))
}

fn encoding_words(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::Utf8 => "UTF-8",
        Encoding::Utf8Bom => "UTF-8 with a byte order mark",
        Encoding::Utf16Le => "UTF-16 little endian with a byte order mark",
        Encoding::Utf16Be => "UTF-16 big endian with a byte order mark",
    }
}

/// `12.3 KB (12,345 bytes)`, or `812 bytes`.
fn size_words(size: u64) -> String {
    let n = usize::try_from(size).unwrap_or(usize::MAX);
    if n < 1_000 {
        format!("{n} {}", plural(size, "byte"))
    } else {
        format!("{} ({} bytes)", text::human_bytes(n), text::group(n))
    }
}
