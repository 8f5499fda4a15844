//! Turning the chosen subtree into [`Block`]s, leaving boilerplate out.

use url::Url;

use super::dom::{Dom, Kind, NodeIx};
use super::meta::absolutize;
use super::score::{Stats, is_block, subtree_end};
use super::{Block, Inline, Table};

/// Below this depth the tree is walked; deeper, a subtree is flattened to text.
const MAX_RENDER_DEPTH: usize = 200;
/// A table cell longer than this marks a layout table.
const MAX_DATA_CELL_CHARS: u32 = 600;

#[derive(Debug)]
pub(crate) struct Renderer<'a> {
    pub(crate) dom: &'a Dom,
    pub(crate) stats: &'a Stats,
    pub(crate) base: Option<&'a Url>,
    /// Leave out link-heavy containers that hold no good text.
    pub(crate) prune: bool,
}

impl Renderer<'_> {
    /// The blocks of the subtree at `root`.
    pub(crate) fn render(&self, root: NodeIx) -> Vec<Block> {
        let mut out = Vec::new();
        let mut inl = Vec::new();
        self.walk(root, 0, &mut out, &mut inl);
        flush(&mut out, &mut inl);
        out
    }

    fn skip(&self, ix: NodeIx) -> bool {
        if self.stats.removed[ix] {
            return true;
        }
        let Some(el) = self.dom.element(ix) else {
            return false;
        };
        if el.hidden || matches!(el.tag.as_str(), "figcaption") {
            return true;
        }
        if !self.prune || !is_block(&el.tag) {
            return false;
        }
        let (text, link, good) = (
            self.stats.text[ix],
            self.stats.link[ix],
            self.stats.good[ix],
        );
        if good > 0 || text == 0 {
            return false;
        }
        // An article's header without body text: title, byline, date.
        if el.tag == "header" {
            return true;
        }
        // A container of mostly links and no good text: menus, tag lists, link rows.
        link * 2 > text
    }

    fn walk(&self, ix: NodeIx, depth: usize, out: &mut Vec<Block>, inl: &mut Vec<Inline>) {
        let children = &self.dom.nodes[ix].children;
        for &c in children {
            if self.skip(c) {
                continue;
            }
            match &self.dom.nodes[c].kind {
                Kind::Text(t) => inl.push(Inline::Text(t.to_string())),
                Kind::Element(el) => {
                    if depth >= MAX_RENDER_DEPTH {
                        inl.push(Inline::Text(self.text_of(c)));
                        continue;
                    }
                    self.element(c, &el.tag, depth + 1, out, inl);
                }
            }
        }
    }

    fn element(
        &self,
        ix: NodeIx,
        tag: &str,
        depth: usize,
        out: &mut Vec<Block>,
        inl: &mut Vec<Inline>,
    ) {
        let el = self.dom.element(ix);
        match tag {
            "br" => inl.push(Inline::Break),
            "img" => {
                let alt = el.and_then(|e| e.alt.as_deref()).map(super::meta::clean);
                if let Some(alt) = alt.filter(|a| !a.is_empty()) {
                    flush(out, inl);
                    let src = el
                        .and_then(|e| e.src.as_deref())
                        .filter(|s| !s.starts_with("data:"))
                        .map(|s| absolutize(s, self.base));
                    out.push(Block::Image { alt, src });
                }
            }
            "a" if !self.has_block(ix) => {
                // Raw: a space just inside the link still separates words.
                let text = self.raw_text_of(ix);
                let href = el
                    .and_then(|e| e.href.as_deref())
                    .map(str::trim)
                    .filter(|h| !h.is_empty() && !h.starts_with('#'))
                    .filter(|h| !h.to_ascii_lowercase().starts_with("javascript:"));
                match href {
                    Some(h) if !text.trim().is_empty() => inl.push(Inline::Link {
                        text,
                        url: absolutize(h, self.base),
                    }),
                    _ => inl.push(Inline::Text(text)),
                }
            }
            "code" | "kbd" | "samp" | "tt" if !self.has_block(ix) => {
                inl.push(Inline::Code(self.raw_text_of(ix)));
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                flush(out, inl);
                let level = tag[1..].parse::<u8>().unwrap_or(2);
                let text = super::meta::clean(&self.text_of(ix));
                if !text.is_empty() {
                    out.push(Block::Heading {
                        level,
                        text: vec![Inline::Text(text)],
                    });
                }
            }
            "ul" | "ol" => {
                flush(out, inl);
                let mut items = Vec::new();
                for &c in &self.dom.nodes[ix].children {
                    if self.skip(c) {
                        continue;
                    }
                    let mut item = Vec::new();
                    let mut item_inl = Vec::new();
                    if self.dom.element(c).is_some() {
                        if self.dom.tag(c) == "li" {
                            self.walk(c, depth, &mut item, &mut item_inl);
                        } else {
                            self.element(c, self.dom.tag(c), depth, &mut item, &mut item_inl);
                        }
                    } else if let Kind::Text(t) = &self.dom.nodes[c].kind {
                        item_inl.push(Inline::Text(t.to_string()));
                    }
                    flush(&mut item, &mut item_inl);
                    if !item.is_empty() {
                        items.push(item);
                    }
                }
                if !items.is_empty() {
                    out.push(Block::List {
                        ordered: tag == "ol",
                        items,
                    });
                }
            }
            "blockquote" => {
                flush(out, inl);
                let mut inner = Vec::new();
                let mut inner_inl = Vec::new();
                self.walk(ix, depth, &mut inner, &mut inner_inl);
                flush(&mut inner, &mut inner_inl);
                if !inner.is_empty() {
                    out.push(Block::Quote(inner));
                }
            }
            "pre" => {
                flush(out, inl);
                let text = self.raw_text_of(ix);
                let text = text.trim_matches('\n').trim_end().to_string();
                if !text.trim().is_empty() {
                    out.push(Block::Code(text));
                }
            }
            "table" => {
                flush(out, inl);
                match self.table(ix, depth) {
                    Some(t) => out.push(Block::Table(t)),
                    None => {
                        self.walk(ix, depth, out, inl);
                        flush(out, inl);
                    }
                }
            }
            "hr" => flush(out, inl),
            _ if is_block(tag) => {
                flush(out, inl);
                self.walk(ix, depth, out, inl);
                flush(out, inl);
            }
            _ => self.walk(ix, depth, out, inl),
        }
    }

    /// A data table, or `None` for a layout table (rendered as blocks).
    fn table(&self, ix: NodeIx, depth: usize) -> Option<Table> {
        let end = subtree_end(self.dom, ix);
        // Layout signals first, before any cell is rendered: nested tables,
        // block content, long cells.
        for r in ix + 1..end {
            if self.stats.removed[r] {
                continue;
            }
            match self.dom.tag(r) {
                "table" => return None,
                "p" | "div" | "ul" | "ol" | "blockquote" | "pre" | "h1" | "h2" | "h3" | "h4"
                | "h5" | "h6"
                    if self.stats.text[r] > 0 =>
                {
                    return None;
                }
                "td" | "th" if self.stats.text[r] > MAX_DATA_CELL_CHARS => return None,
                _ => {}
            }
        }
        let mut rows: Vec<Vec<Vec<Inline>>> = Vec::new();
        let mut header = false;
        for r in ix + 1..end {
            if self.dom.tag(r) != "tr" || self.stats.removed[r] {
                continue;
            }
            let mut row = Vec::new();
            for &c in &self.dom.nodes[r].children {
                let tag = self.dom.tag(c);
                if !matches!(tag, "td" | "th") || self.stats.removed[c] {
                    continue;
                }
                if rows.is_empty() && tag == "th" {
                    header = true;
                }
                let mut cell_out = Vec::new();
                let mut cell = Vec::new();
                self.walk(c, depth, &mut cell_out, &mut cell);
                for b in cell_out {
                    cell.push(Inline::Text(format!(" {} ", b.plain_text())));
                }
                let cell = normalize(cell);
                let span = self.dom.element(c).map_or(1, |e| e.colspan);
                row.push(cell);
                for _ in 1..span {
                    row.push(Vec::new());
                }
            }
            if !row.is_empty() {
                rows.push(row);
            }
        }
        let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
        if rows.is_empty() || cols < 2 {
            return None;
        }
        for row in &mut rows {
            row.resize_with(cols, Vec::new);
        }
        Some(Table { rows, header })
    }

    fn has_block(&self, ix: NodeIx) -> bool {
        let end = subtree_end(self.dom, ix);
        (ix + 1..end).any(|d| {
            let t = self.dom.tag(d);
            is_block(t) && t != "picture"
        })
    }

    /// The visible text of a subtree, whitespace collapsed.
    fn text_of(&self, ix: NodeIx) -> String {
        super::meta::clean(&self.raw_text_of(ix))
    }

    /// The visible text of a subtree, whitespace kept.
    fn raw_text_of(&self, ix: NodeIx) -> String {
        let end = subtree_end(self.dom, ix);
        let mut s = String::new();
        let mut d = ix + 1;
        while d < end {
            if self.stats.removed[d] || self.dom.element(d).is_some_and(|e| e.hidden) {
                d = subtree_end(self.dom, d);
                continue;
            }
            match &self.dom.nodes[d].kind {
                Kind::Text(t) => s.push_str(t),
                Kind::Element(e) if e.tag == "br" => s.push('\n'),
                Kind::Element(_) => {}
            }
            d += 1;
        }
        s
    }
}

/// Ends the paragraph being built, if it has any text.
fn flush(out: &mut Vec<Block>, inl: &mut Vec<Inline>) {
    if inl.is_empty() {
        return;
    }
    let para = normalize(std::mem::take(inl));
    if para.is_empty() {
        return;
    }
    let block = Block::Paragraph(para);
    if !is_label(&block.plain_text()) {
        out.push(block);
    }
}

/// Short paragraphs that are page furniture wherever they stand.
const LABELS: &[&str] = &[
    "ad",
    "advert",
    "advertisement",
    "advertising",
    "sponsored",
    "sponsored content",
    "comments",
    "comment",
    "share",
    "share this",
    "share this article",
    "share this story",
    "related",
    "related articles",
    "related stories",
    "read more",
    "continue reading",
    "loading",
    "this slideshow requires javascript",
    "tell us what you think",
];

fn is_label(text: &str) -> bool {
    if text.len() > 40 {
        return false;
    }
    let t = text
        .trim()
        .trim_end_matches(['.', ':', '!', '…'])
        .trim()
        .to_lowercase();
    LABELS.contains(&t.as_str())
}

/// Merges text runs, collapses whitespace across them and trims the ends.
pub(crate) fn normalize(inl: Vec<Inline>) -> Vec<Inline> {
    let mut out: Vec<Inline> = Vec::with_capacity(inl.len());
    // Whether the text so far ends in a space (or nothing), so a leading one is dropped.
    let mut at_space = true;
    let mut pending_space = false;
    for i in inl {
        match i {
            Inline::Text(t) => {
                for (k, w) in t.split_whitespace().enumerate() {
                    let lead =
                        (k > 0 || t.starts_with(char::is_whitespace) || pending_space) && !at_space;
                    push_text(&mut out, if lead { " " } else { "" }, w);
                    at_space = false;
                    pending_space = false;
                }
                if t.ends_with(char::is_whitespace) {
                    pending_space = true;
                }
            }
            Inline::Link { text, url } => {
                let clean = super::meta::clean(&text);
                if clean.is_empty() {
                    continue;
                }
                if (pending_space || text.starts_with(char::is_whitespace)) && !at_space {
                    push_text(&mut out, " ", "");
                }
                out.push(Inline::Link { text: clean, url });
                at_space = false;
                pending_space = text.ends_with(char::is_whitespace);
            }
            Inline::Code(code) => {
                let code = code.trim().to_string();
                if code.is_empty() {
                    continue;
                }
                if pending_space && !at_space {
                    push_text(&mut out, " ", "");
                }
                out.push(Inline::Code(code));
                at_space = false;
                pending_space = false;
            }
            Inline::Break => {
                if out.is_empty() || matches!(out.last(), Some(Inline::Break)) {
                    continue;
                }
                out.push(Inline::Break);
                at_space = true;
                pending_space = false;
            }
        }
    }
    while matches!(out.last(), Some(Inline::Break)) {
        out.pop();
    }
    out
}

fn push_text(out: &mut Vec<Inline>, sep: &str, word: &str) {
    if let Some(Inline::Text(last)) = out.last_mut() {
        last.push_str(sep);
        last.push_str(word);
    } else {
        out.push(Inline::Text(format!("{sep}{word}")));
    }
}
