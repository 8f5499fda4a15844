//! Main-content extraction from HTML.
//!
//! [`extract`] parses a page with a real HTML5 parser, finds its main content
//! (the article, not the navigation, ads, comments, share bars or related links)
//! and its metadata, and returns an [`Article`]: a tree of [`Block`]s that
//! renders as markdown ([`Article::to_markdown`]) or plain text
//! ([`Article::to_text`]).
//!
//! How the content is found:
//! 1. a streaming pass reads the metadata and drops what is never content
//!    (scripts, styles, navigation, asides, footers, form controls);
//! 2. the rest is parsed into a tree; elements whose tag, role, class or id mark
//!    boilerplate (comments, share bars, related links, promos, sidebars…) are
//!    set aside;
//! 3. text blocks long enough and with few links count as good text; the
//!    element holding the most good text for the least other text is the
//!    content, and link-heavy containers inside it are left out;
//! 4. when that finds nothing, looser thresholds are tried, then the page's
//!    JSON-LD `articleBody`, then the whole body.
//!
//! ```
//! let html = r#"<html><head><title>Hello</title></head><body>
//!   <nav><a href="/">Home</a></nav>
//!   <article><p>This paragraph is the whole story, long enough to count as content.</p></article>
//! </body></html>"#;
//! let article = toolbelt_net::extract::extract(html, None);
//! assert_eq!(article.title.as_deref(), Some("Hello"));
//! assert_eq!(
//!     article.to_text(),
//!     "This paragraph is the whole story, long enough to count as content."
//! );
//! ```

mod dom;
mod meta;
mod output;
mod prepass;
mod render;
mod score;

use std::time::{Duration, Instant};

use html5ever::tendril::TendrilSink;
use scraper::{Html, HtmlTreeSink, StrTendril};
use url::Url;

use dom::Dom;
use render::Renderer;

/// Pages longer than this are cut (at a character boundary) before parsing,
/// which keeps the time spent on one page bounded.
pub const MAX_HTML_BYTES: usize = 8 * 1024 * 1024;
/// At most this many nodes of a page are looked at.
pub const MAX_NODES: usize = 400_000;
/// Parsing stops (keeping what it has) once it has taken this long.
pub const PARSE_BUDGET: Duration = Duration::from_secs(3);
/// The parser is fed this many bytes at a time, the budget checked between.
const PARSE_CHUNK_BYTES: usize = 32 * 1024;
/// Content with fewer good characters than this sends extraction to its fallbacks.
const MIN_CONTENT_CHARS: u32 = 250;

/// A page's main content and metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Article {
    /// The title: `og:title`, JSON-LD `headline`, the first `<h1>` or `<title>`.
    pub title: Option<String>,
    /// The author: `<meta name=author>`, `article:author` or JSON-LD `author`.
    pub author: Option<String>,
    /// The publication date as the page gives it: `article:published_time`,
    /// JSON-LD `datePublished` or the first `<time datetime>`.
    pub date: Option<String>,
    /// The site's name: `og:site_name`, `application-name` or JSON-LD `publisher`.
    pub site: Option<String>,
    /// `<link rel=canonical>` or `og:url`, made absolute.
    pub canonical_url: Option<String>,
    /// `<html lang>`, `content-language` or `og:locale`.
    pub language: Option<String>,
    /// The main content.
    pub blocks: Vec<Block>,
}

/// One block of content.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Block {
    /// A heading, level 1 to 6.
    Heading {
        /// 1 for `<h1>` … 6 for `<h6>`.
        level: u8,
        /// The heading's text.
        text: Vec<Inline>,
    },
    /// A paragraph.
    Paragraph(Vec<Inline>),
    /// A list; each item is a list of blocks.
    List {
        /// `<ol>` rather than `<ul>`.
        ordered: bool,
        /// The items.
        items: Vec<Vec<Block>>,
    },
    /// A block quotation.
    Quote(Vec<Block>),
    /// Preformatted text or code, whitespace kept.
    Code(String),
    /// A data table.
    Table(Table),
    /// An image with alternative text.
    Image {
        /// The `alt` text.
        alt: String,
        /// The image's absolute URL, when known.
        src: Option<String>,
    },
}

/// A data table: rows of cells, every row as long as the longest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The rows; each cell is inline content.
    pub rows: Vec<Vec<Vec<Inline>>>,
    /// Whether the first row is a header row (`<th>` cells).
    pub header: bool,
}

/// Inline content of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inline {
    /// Plain text, whitespace collapsed.
    Text(String),
    /// A link with its absolute URL.
    Link {
        /// The link's text.
        text: String,
        /// The target, resolved against the page's URL.
        url: String,
    },
    /// Inline code.
    Code(String),
    /// A line break.
    Break,
}

/// Extracts the main content and metadata of an HTML page.
///
/// `url` is the page's address; links, images and the canonical URL are resolved
/// against it. Never panics; time is linear in the input, which is cut at
/// [`MAX_HTML_BYTES`], and parsing stops after [`PARSE_BUDGET`] (pathologically
/// deep nesting makes HTML5 tree building quadratic).
///
/// # Security
/// The page is untrusted: nothing in it is fetched or run, and its size and
/// node count are capped.
#[must_use]
pub fn extract(html: &str, url: Option<&Url>) -> Article {
    let html = cut(html, MAX_HTML_BYTES);
    let (reduced, mut raw) = prepass::run(html);
    let doc = parse(&reduced);
    let dom = Dom::from_html(&doc, MAX_NODES);
    drop(doc);
    let h1 = first_h1(&dom);
    let extra = |tag: &str| {
        (0..dom.nodes.len())
            .filter(|&i| dom.tag(i) == tag)
            .find_map(|i| dom.element(i).and_then(|e| e.extra.clone()))
    };
    raw.lang = extra("html");
    raw.time = extra("time");
    let meta = meta::build(&raw, h1, url);
    let mut blocks = content(&dom, url, meta.ld_body.as_deref());
    drop_title_heading(&mut blocks, meta.title.as_deref());
    Article {
        title: meta.title,
        author: meta.author,
        date: meta.date,
        site: meta.site,
        canonical_url: meta.canonical_url,
        language: meta.language,
        blocks,
    }
}

/// The main content, with the fallbacks in order.
fn content(dom: &Dom, url: Option<&Url>, ld_body: Option<&str>) -> Vec<Block> {
    let Some(body) = dom
        .body
        .or(if dom.nodes.is_empty() { None } else { Some(0) })
    else {
        return ld_body.map(|ld| ld_blocks(ld, url)).unwrap_or_default();
    };
    let mut best_weak: Option<Vec<Block>> = None;
    for params in [score::STRICT, score::LOOSE] {
        let stats = score::measure(dom, params, true);
        if let Some(node) = score::best_node(dom, &stats, body) {
            let r = Renderer {
                dom,
                stats: &stats,
                base: url,
                prune: true,
            };
            let blocks = r.render(node);
            if stats.good[node] >= MIN_CONTENT_CHARS {
                return prefer_ld(blocks, ld_body, url);
            }
            if best_weak.is_none() && !blocks.is_empty() {
                best_weak = Some(blocks);
            }
        }
    }
    if let Some(ld) = ld_body.filter(|b| b.trim().len() >= MIN_CONTENT_CHARS as usize) {
        let blocks = ld_blocks(ld, url);
        if !blocks.is_empty() {
            return blocks;
        }
    }
    if let Some(blocks) = best_weak {
        return blocks;
    }
    // The whole body, boilerplate set aside, then the whole body as is.
    for prune in [true, false] {
        let stats = score::measure(dom, score::LOOSE, prune);
        let r = Renderer {
            dom,
            stats: &stats,
            base: url,
            prune: false,
        };
        let blocks = r.render(body);
        if !blocks.is_empty() {
            return blocks;
        }
    }
    ld_body.map(|ld| ld_blocks(ld, url)).unwrap_or_default()
}

/// The title is metadata: a heading repeating it at the top of the content goes.
fn drop_title_heading(blocks: &mut Vec<Block>, title: Option<&str>) {
    let Some(title) = title.map(str::to_lowercase) else {
        return;
    };
    if let Some(pos) = blocks.iter().take(3).position(|b| match b {
        Block::Heading { .. } => b.plain_text().to_lowercase() == title,
        _ => false,
    }) {
        blocks.remove(pos);
    }
}

/// The page's own JSON-LD `articleBody` when it is much longer than what the
/// tree gave: a sign the content is rendered by script or cut by the scorer.
fn prefer_ld(blocks: Vec<Block>, ld_body: Option<&str>, url: Option<&Url>) -> Vec<Block> {
    let Some(ld) = ld_body else {
        return blocks;
    };
    let got: usize = blocks.iter().map(|b| b.plain_text().len()).sum();
    if ld.len() <= 3 * got.max(1) {
        return blocks;
    }
    let from_ld = ld_blocks(ld, url);
    let ld_len: usize = from_ld.iter().map(|b| b.plain_text().len()).sum();
    if ld_len > 3 * got.max(1) {
        from_ld
    } else {
        blocks
    }
}

/// The blocks of a JSON-LD `articleBody`: plain text as paragraphs; HTML (even
/// entity-escaped HTML) parsed and rendered whole.
fn ld_blocks(ld: &str, url: Option<&Url>) -> Vec<Block> {
    if !looks_like_markup(ld) {
        return paragraphs(ld);
    }
    let html = if ld.contains("&lt;") {
        let dom = Dom::from_html(&parse(ld), MAX_NODES);
        let mut text = String::with_capacity(ld.len());
        for node in &dom.nodes {
            if let dom::Kind::Text(t) = &node.kind {
                text.push_str(t);
            }
        }
        text
    } else {
        ld.to_string()
    };
    let dom = Dom::from_html(&parse(&html), MAX_NODES);
    let Some(body) = dom.body else {
        return Vec::new();
    };
    let stats = score::measure(&dom, score::LOOSE, true);
    Renderer {
        dom: &dom,
        stats: &stats,
        base: url,
        prune: false,
    }
    .render(body)
}

/// Whether a JSON-LD body is HTML (escaped or not) rather than text.
fn looks_like_markup(s: &str) -> bool {
    s.contains("&lt;") || s.contains("</") || s.contains("<p") || s.contains("<br")
}

fn paragraphs(text: &str) -> Vec<Block> {
    text.split('\n')
        .map(meta::clean)
        .filter(|p| !p.is_empty())
        .map(|p| Block::Paragraph(vec![Inline::Text(p)]))
        .collect()
}

fn first_h1(dom: &Dom) -> Option<String> {
    let ix = (0..dom.nodes.len()).find(|&i| dom.tag(i) == "h1")?;
    let end = score::subtree_end(dom, ix);
    let mut s = String::new();
    for d in ix + 1..end {
        if let dom::Kind::Text(t) = &dom.nodes[d].kind {
            s.push_str(t);
            s.push(' ');
        }
    }
    Some(meta::clean(&s)).filter(|t| !t.is_empty())
}

/// Parses in chunks, stopping early when the time budget is spent: html5ever
/// is quadratic on pathologically deep nesting, and what was parsed by then is
/// kept.
fn parse(html: &str) -> Html {
    let start = Instant::now();
    let mut parser = html5ever::driver::parse_document(
        HtmlTreeSink::new(Html::new_document()),
        html5ever::ParseOpts::default(),
    );
    let mut rest = html;
    while !rest.is_empty() {
        let (chunk, tail) = rest.split_at(char_boundary(rest, PARSE_CHUNK_BYTES));
        parser.process(StrTendril::from_slice(chunk));
        rest = tail;
        if start.elapsed() > PARSE_BUDGET {
            break;
        }
    }
    parser.finish()
}

/// The largest char boundary of `s` at or below `max` (at least one char).
fn char_boundary(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    if end == 0 {
        s.chars().next().map_or(s.len(), char::len_utf8)
    } else {
        end
    }
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
