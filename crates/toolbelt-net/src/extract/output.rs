//! Markdown and plain-text renderings of an [`Article`].

use std::fmt::Write as _;

use super::{Article, Block, Inline, Table};

impl Article {
    /// The content as markdown: `#` headings, `-`/`1.` lists, `>` quotes, fenced
    /// code, pipe tables, `[text](absolute url)` links, `![alt](src)` images.
    /// Metadata is not included.
    #[must_use]
    pub fn to_markdown(&self) -> String {
        join_blocks(&self.blocks, &markdown_block)
    }

    /// The content as plain text: one block per paragraph, list items and table
    /// rows on their own lines, cells separated by tabs, no markup, no images.
    #[must_use]
    pub fn to_text(&self) -> String {
        let parts: Vec<String> = self
            .blocks
            .iter()
            .map(Block::plain_text)
            .filter(|t| !t.is_empty())
            .collect();
        parts.join("\n\n")
    }
}

impl Block {
    /// This block's text without markup (images give nothing).
    #[must_use]
    pub fn plain_text(&self) -> String {
        match self {
            Block::Heading { text, .. } | Block::Paragraph(text) => inline_text(text),
            Block::List { items, .. } => items
                .iter()
                .map(|item| {
                    item.iter()
                        .map(Block::plain_text)
                        .filter(|t| !t.is_empty())
                        .collect::<Vec<_>>()
                        .join("\n")
                })
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
            Block::Quote(inner) => inner
                .iter()
                .map(Block::plain_text)
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n"),
            Block::Code(code) => code.clone(),
            Block::Table(t) => t
                .rows
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|c| inline_text(c))
                        .collect::<Vec<_>>()
                        .join("\t")
                })
                .collect::<Vec<_>>()
                .join("\n"),
            Block::Image { .. } => String::new(),
        }
    }
}

fn inline_text(inl: &[Inline]) -> String {
    let mut s = String::new();
    for i in inl {
        match i {
            Inline::Text(t) | Inline::Code(t) | Inline::Link { text: t, .. } => s.push_str(t),
            Inline::Break => s.push('\n'),
        }
    }
    s
}

fn join_blocks(blocks: &[Block], f: &dyn Fn(&Block) -> String) -> String {
    blocks
        .iter()
        .map(f)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn markdown_block(b: &Block) -> String {
    match b {
        Block::Heading { level, text } => {
            format!(
                "{} {}",
                "#".repeat(usize::from((*level).clamp(1, 6))),
                inline_md(text)
            )
        }
        Block::Paragraph(text) => inline_md(text),
        Block::List { ordered, items } => {
            let mut out = String::new();
            for (n, item) in items.iter().enumerate() {
                let marker = if *ordered {
                    format!("{}. ", n + 1)
                } else {
                    "- ".to_string()
                };
                let body = join_blocks(item, &markdown_block);
                let indent = " ".repeat(marker.len());
                for (k, line) in body.lines().enumerate() {
                    if k == 0 {
                        out.push_str(&marker);
                    } else if !line.is_empty() {
                        out.push_str(&indent);
                    }
                    out.push_str(line);
                    out.push('\n');
                }
            }
            out.trim_end().to_string()
        }
        Block::Quote(inner) => join_blocks(inner, &markdown_block)
            .lines()
            .map(|l| {
                if l.is_empty() {
                    ">".to_string()
                } else {
                    format!("> {l}")
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Block::Code(code) => {
            let fence = "`".repeat(longest_run(code, '`').max(2) + 1);
            format!("{fence}\n{code}\n{fence}")
        }
        Block::Table(t) => table_md(t),
        Block::Image { alt, src } => match src {
            Some(src) => format!("![{}]({})", escape_brackets(alt), link_target(src)),
            None => String::new(),
        },
    }
}

fn table_md(t: &Table) -> String {
    let cols = t.rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = String::new();
    let row_md = |row: &[Vec<Inline>]| {
        let mut s = String::from("|");
        for c in 0..cols {
            let cell = row.get(c).map(|c| inline_md(c)).unwrap_or_default();
            let cell = cell.replace('\n', " ").replace('|', "\\|");
            let _ = write!(s, " {} |", cell.trim());
        }
        s
    };
    let mut rows = t.rows.iter();
    if t.header {
        if let Some(first) = rows.next() {
            out.push_str(&row_md(first));
            out.push('\n');
        }
    } else {
        out.push('|');
        out.push_str(&"  |".repeat(cols));
        out.push('\n');
    }
    out.push('|');
    out.push_str(&" --- |".repeat(cols));
    for row in rows {
        out.push('\n');
        out.push_str(&row_md(row));
    }
    out
}

fn inline_md(inl: &[Inline]) -> String {
    let mut s = String::new();
    for i in inl {
        match i {
            Inline::Text(t) => s.push_str(t),
            Inline::Link { text, url } => {
                let _ = write!(s, "[{}]({})", escape_brackets(text), link_target(url));
            }
            Inline::Code(c) => {
                let ticks = "`".repeat(longest_run(c, '`') + 1);
                let pad = if c.starts_with('`') || c.ends_with('`') {
                    " "
                } else {
                    ""
                };
                let _ = write!(s, "{ticks}{pad}{c}{pad}{ticks}");
            }
            Inline::Break => s.push_str("  \n"),
        }
    }
    s
}

fn escape_brackets(s: &str) -> String {
    s.replace('[', "\\[").replace(']', "\\]")
}

/// A link target safe inside `( )`: angle brackets when it has spaces or parentheses.
fn link_target(url: &str) -> String {
    if url.contains([' ', '(', ')']) {
        format!("<{}>", url.replace('<', "%3C").replace('>', "%3E"))
    } else {
        url.to_string()
    }
}

fn longest_run(s: &str, ch: char) -> usize {
    let (mut best, mut cur) = (0, 0);
    for c in s.chars() {
        if c == ch {
            cur += 1;
            best = best.max(cur);
        } else {
            cur = 0;
        }
    }
    best
}
