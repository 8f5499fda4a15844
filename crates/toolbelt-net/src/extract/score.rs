//! Finding the main content: boilerplate marked by tag, role and class/id
//! patterns; text blocks judged by length and link density; then the element
//! that holds the most good text for the least other text.

use super::dom::{Dom, Kind, NodeIx};

/// Tags whose text starts a new block.
pub(crate) fn is_block(tag: &str) -> bool {
    matches!(
        tag,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "header"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "ul"
            | "ol"
            | "li"
            | "dl"
            | "dt"
            | "dd"
            | "blockquote"
            | "pre"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "tr"
            | "td"
            | "th"
            | "caption"
            | "figure"
            | "figcaption"
            | "hr"
            | "address"
            | "details"
            | "summary"
            | "center"
            | "form"
            | "fieldset"
            | "body"
            | "html"
            | "head"
            | "title"
            | "picture"
            | "video"
            | "audio"
    )
}

/// Class/id fragments that mark boilerplate wherever they appear.
const STRONG_NEGATIVE: &[&str] = &[
    "comment",
    "disqus",
    "share",
    "sharing",
    "social",
    "related",
    "outbrain",
    "taboola",
    "newsletter",
    "subscribe",
    "cookie",
    "consent",
    "promo",
    "sponsor",
    "advert",
    "recommend",
    "popular",
    "trending",
    "most-read",
    "mostread",
    "breadcrumb",
    "signup",
    "sign-up",
    "paywall",
    "modal",
    "popup",
    "skip-link",
    "screen-reader",
    "sr-only",
    "visually-hidden",
    "visuallyhidden",
    "byline",
    "author-bio",
    "author-info",
    "about-author",
    "more-stories",
    "read-more",
    "readmore",
    "next-article",
    "pagination",
    "toolbar",
    "masthead",
];

/// Class/id fragments that mark boilerplate unless a positive one is there too.
const WEAK_NEGATIVE: &[&str] = &[
    "sidebar",
    "footer",
    "header",
    "navbar",
    "navigation",
    "menu",
    "widget",
    "banner",
    "meta",
    "tags",
    "caption",
    "credit",
];

/// Whole class/id tokens that mark boilerplate.
const NEGATIVE_TOKENS: &[&str] = &[
    "ad",
    "ads",
    "nav",
    "tag",
    "aside",
    "rail",
    "share",
    "dateline",
    "date",
    "timestamp",
    "author",
    "sidebar",
    "pager",
    "print",
];

/// Whole class names that hide an element (responsive variants such as
/// `hidden-xs` do not count).
const HIDDEN_CLASSES: &[&str] = &["hidden", "hide", "is-hidden", "d-none", "invisible"];

/// Class/id fragments that mark the content itself.
const POSITIVE: &[&str] = &[
    "article", "content", "entry", "post", "story", "main", "body", "text", "blog",
];

const NEGATIVE_ROLES: &[&str] = &[
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "menu",
    "menubar",
    "search",
    "dialog",
    "alert",
];

/// Tags dropped with their content wherever they are.
fn is_dropped_tag(tag: &str) -> bool {
    matches!(
        tag,
        "script"
            | "style"
            | "noscript"
            | "template"
            | "svg"
            | "iframe"
            | "object"
            | "embed"
            | "canvas"
            | "nav"
            | "aside"
            | "footer"
            | "button"
            | "select"
            | "textarea"
            | "input"
            | "head"
            | "title"
    )
}

/// Per-node measures, indexed like [`Dom::nodes`].
#[derive(Debug)]
pub(crate) struct Stats {
    /// Dropped as boilerplate (itself or an ancestor).
    pub(crate) removed: Vec<bool>,
    /// Non-space characters in the subtree (removed parts excluded).
    pub(crate) text: Vec<u32>,
    /// Of which inside links.
    pub(crate) link: Vec<u32>,
    /// Of which in good blocks.
    pub(crate) good: Vec<u32>,
}

/// Thresholds for a good block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Params {
    pub(crate) min_block_chars: u32,
    pub(crate) max_link_density: f32,
}

pub(crate) const STRICT: Params = Params {
    min_block_chars: 60,
    max_link_density: 0.33,
};

pub(crate) const LOOSE: Params = Params {
    min_block_chars: 15,
    max_link_density: 0.5,
};

fn class_is_boilerplate(class_id: &str) -> bool {
    if class_id.is_empty() {
        return false;
    }
    if STRONG_NEGATIVE.iter().any(|n| class_id.contains(n))
        || class_id
            .split_ascii_whitespace()
            .any(|w| HIDDEN_CLASSES.contains(&w))
    {
        return true;
    }
    let positive = POSITIVE.iter().any(|p| class_id.contains(p));
    if positive {
        return false;
    }
    if WEAK_NEGATIVE.iter().any(|n| class_id.contains(n)) {
        return true;
    }
    class_id
        .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .any(|t| NEGATIVE_TOKENS.contains(&t))
}

/// Whether an element is boilerplate by its own markup.
fn is_boilerplate(dom: &Dom, ix: NodeIx) -> bool {
    let Some(el) = dom.element(ix) else {
        return false;
    };
    if matches!(el.tag.as_str(), "body" | "html" | "main" | "article") {
        return false;
    }
    if is_dropped_tag(&el.tag) || el.hidden {
        return true;
    }
    if el
        .role
        .as_deref()
        .is_some_and(|r| NEGATIVE_ROLES.contains(&r))
    {
        return true;
    }
    if el
        .itemprop
        .as_deref()
        .is_some_and(|p| p.contains("articlebody"))
    {
        return false;
    }
    class_is_boilerplate(&el.class_id)
}

/// Whether an element is marked as the content by its markup.
pub(crate) fn is_positive(dom: &Dom, ix: NodeIx) -> bool {
    let Some(el) = dom.element(ix) else {
        return false;
    };
    matches!(el.tag.as_str(), "article" | "main")
        || el
            .itemprop
            .as_deref()
            .is_some_and(|p| p.contains("articlebody"))
        || el.role.as_deref() == Some("main")
        || POSITIVE.iter().any(|p| el.class_id.contains(p))
}

/// Boilerplate patterns never remove an element holding more than this share of
/// the page's good text: a wrapper with an unlucky class name is not boilerplate.
const MAX_PRUNED_SHARE: f32 = 0.4;

/// Measures every node. `prune` turns the boilerplate patterns on.
pub(crate) fn measure(dom: &Dom, params: Params, prune: bool) -> Stats {
    if !prune {
        return measure_with(dom, params, &|_| false);
    }
    let raw = measure_with(dom, params, &|_| false);
    #[allow(clippy::cast_precision_loss)]
    let total = raw.good.first().copied().unwrap_or(0) as f32;
    measure_with(dom, params, &|ix| {
        #[allow(clippy::cast_precision_loss)]
        let share = raw.good[ix] as f32 / total.max(1.0);
        is_boilerplate(dom, ix) && (share <= MAX_PRUNED_SHARE || always_dropped(dom, ix))
    })
}

/// Class/id fragments so sure that no share of text keeps the element.
const ALWAYS_NEGATIVE: &[&str] = &["comment", "disqus", "cookie", "consent", "gdpr"];

/// Dropped whatever its share of the text: non-content tags, comment sections,
/// cookie banners.
fn always_dropped(dom: &Dom, ix: NodeIx) -> bool {
    let Some(el) = dom.element(ix) else {
        return false;
    };
    matches!(
        el.tag.as_str(),
        "script" | "style" | "noscript" | "template" | "svg" | "head" | "title"
    ) || (!matches!(el.tag.as_str(), "body" | "html" | "main" | "article")
        && ALWAYS_NEGATIVE.iter().any(|n| el.class_id.contains(n)))
}

fn measure_with(dom: &Dom, params: Params, drop: &dyn Fn(NodeIx) -> bool) -> Stats {
    let n = dom.nodes.len();
    let mut removed = vec![false; n];
    let mut in_link = vec![false; n];
    // Nearest block ancestor (or self) of each node.
    let mut block = vec![0usize; n];
    for ix in 0..n {
        let node = &dom.nodes[ix];
        let (p_removed, p_link, p_block) = node
            .parent
            .map_or((false, false, ix), |p| (removed[p], in_link[p], block[p]));
        removed[ix] = p_removed || drop(ix);
        let tag = dom.tag(ix);
        in_link[ix] = p_link || tag == "a";
        block[ix] = if is_block(tag) { ix } else { p_block };
    }
    let mut own_text = vec![0u32; n];
    let mut own_link = vec![0u32; n];
    let mut text = vec![0u32; n];
    let mut link = vec![0u32; n];
    for ix in 0..n {
        if removed[ix] {
            continue;
        }
        if let Kind::Text(_) = &dom.nodes[ix].kind {
            let len = dom.nodes[ix].chars;
            text[ix] = len;
            own_text[block[ix]] += len;
            if in_link[ix] {
                link[ix] = len;
                own_link[block[ix]] += len;
            }
        }
    }
    for ix in (1..n).rev() {
        if let Some(p) = dom.nodes[ix].parent
            && !removed[ix]
        {
            text[p] += text[ix];
            link[p] += link[ix];
        }
    }
    let mut good = vec![0u32; n];
    for ix in 0..n {
        let t = own_text[ix];
        if removed[ix] || t == 0 || !is_block(dom.tag(ix)) {
            continue;
        }
        let tag = dom.tag(ix);
        if matches!(
            tag,
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "figcaption" | "caption"
        ) {
            continue;
        }
        #[allow(clippy::cast_precision_loss)]
        let density = own_link[ix] as f32 / t as f32;
        if t >= params.min_block_chars
            && density <= params.max_link_density
            && !is_teaser(dom, &text, &link, ix)
        {
            good[ix] = t - own_link[ix];
        }
    }
    for ix in (1..n).rev() {
        if let Some(p) = dom.nodes[ix].parent
            && !removed[ix]
        {
            good[p] += good[ix];
        }
    }
    Stats {
        removed,
        text,
        link,
        good,
    }
}

/// Whether the block at `ix` is the blurb of a teaser card: the smallest
/// element around it holds little else, and that little is mostly a link (the
/// headline pointing to another page).
fn is_teaser(dom: &Dom, text: &[u32], link: &[u32], ix: NodeIx) -> bool {
    let mut card = ix;
    for _ in 0..3 {
        match dom.nodes[card].parent {
            Some(p) => card = p,
            None => return false,
        }
        if text[card] > text[ix] {
            break;
        }
    }
    let rest_text = text[card].saturating_sub(text[ix]);
    let rest_link = link[card].saturating_sub(link[ix]);
    rest_link >= 10 && rest_link * 2 >= rest_text && text[card] * 2 <= text[ix] * 5
}

/// The element holding the main content, if any good text was found.
pub(crate) fn best_node(dom: &Dom, stats: &Stats, root: NodeIx) -> Option<NodeIx> {
    let mut best: Option<(f32, NodeIx)> = None;
    let end = subtree_end(dom, root);
    for ix in root..end {
        if stats.removed[ix] || stats.good[ix] == 0 || dom.element(ix).is_none() {
            continue;
        }
        #[allow(clippy::cast_precision_loss)]
        let (good, link, text) = (
            stats.good[ix] as f32,
            stats.link[ix] as f32,
            stats.text[ix] as f32,
        );
        let other = (text - good - link).max(0.0);
        let mut score = good - 0.6 * link - 0.5 * other;
        if is_positive(dom, ix) {
            score += 0.05 * good;
        }
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, ix));
        }
    }
    best.map(|(_, ix)| ix)
}

/// One past the last descendant of `ix` (nodes are in document order).
pub(crate) fn subtree_end(dom: &Dom, ix: NodeIx) -> usize {
    let depth = dom.nodes.get(ix).map_or(0, |n| n.depth);
    let mut end = ix + 1;
    while end < dom.nodes.len() && dom.nodes[end].depth > depth {
        end += 1;
    }
    end
}
