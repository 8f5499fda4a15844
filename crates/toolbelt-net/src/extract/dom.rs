//! A compact arena copy of the parsed document: only what the scorer and the
//! renderer read, with nodes in document order (a parent always before its
//! descendants), so bottom-up passes are one reverse loop and nothing recurses.

use scraper::{Html, Node as HtmlNode, StrTendril};

/// Index of a node in [`Dom::nodes`].
pub(crate) type NodeIx = usize;

/// What a node is.
#[derive(Debug)]
pub(crate) enum Kind {
    /// An element, with its lowercased tag name.
    Element(Element),
    /// A text node.
    Text(StrTendril),
}

/// The attributes of an element the extractor reads.
#[derive(Debug, Default)]
pub(crate) struct Element {
    pub(crate) tag: String,
    /// `class` and `id` joined by a space, lowercased.
    pub(crate) class_id: String,
    pub(crate) role: Option<String>,
    pub(crate) itemprop: Option<String>,
    pub(crate) href: Option<String>,
    pub(crate) src: Option<String>,
    pub(crate) alt: Option<String>,
    /// `hidden`, `aria-hidden="true"` or an inline `display:none`.
    pub(crate) hidden: bool,
    pub(crate) colspan: usize,
    /// `lang` of `<html>`, `datetime` of `<time>`.
    pub(crate) extra: Option<String>,
}

/// One node of the arena.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) parent: Option<NodeIx>,
    pub(crate) children: Vec<NodeIx>,
    pub(crate) depth: usize,
    /// For text: its characters that are not whitespace, counted once.
    pub(crate) chars: u32,
}

/// The document as an arena in document order.
#[derive(Debug, Default)]
pub(crate) struct Dom {
    pub(crate) nodes: Vec<Node>,
    /// The `body` element, when the document has one.
    pub(crate) body: Option<NodeIx>,
}

impl Dom {
    /// Copies a parsed document into an arena, keeping at most `max_nodes` nodes.
    pub(crate) fn from_html(html: &Html, max_nodes: usize) -> Dom {
        let mut dom = Dom::default();
        // Depth-first over the ego tree, with an explicit stack of (node, parent ix).
        let mut stack = vec![(html.tree.root(), None::<NodeIx>)];
        while let Some((node, parent)) = stack.pop() {
            if dom.nodes.len() >= max_nodes {
                break;
            }
            let kind = match node.value() {
                HtmlNode::Document | HtmlNode::Fragment => None,
                // A shared, reference-counted handle on the parser's buffer: no copy.
                HtmlNode::Text(text) => Some(Kind::Text(text.text.clone())),
                HtmlNode::Element(el) => Some(Kind::Element(element(el))),
                _ => continue,
            };
            let ix = match kind {
                None => parent,
                Some(kind) => {
                    let ix = dom.nodes.len();
                    let depth = parent.map_or(0, |p| dom.nodes[p].depth + 1);
                    if let Kind::Element(el) = &kind
                        && el.tag == "body"
                        && dom.body.is_none()
                    {
                        dom.body = Some(ix);
                    }
                    let chars = match &kind {
                        Kind::Text(t) => non_space_chars(t),
                        Kind::Element(_) => 0,
                    };
                    dom.nodes.push(Node {
                        kind,
                        parent,
                        children: Vec::new(),
                        depth,
                        chars,
                    });
                    if let Some(p) = parent {
                        dom.nodes[p].children.push(ix);
                    }
                    Some(ix)
                }
            };
            // Children pushed in reverse so they pop in document order.
            let mut child = node.last_child();
            while let Some(c) = child {
                stack.push((c, ix));
                child = c.prev_sibling();
            }
        }
        dom
    }

    /// The element at `ix`, if it is one.
    pub(crate) fn element(&self, ix: NodeIx) -> Option<&Element> {
        match &self.nodes.get(ix)?.kind {
            Kind::Element(el) => Some(el),
            Kind::Text(_) => None,
        }
    }

    /// The tag name at `ix`, or "" for text.
    pub(crate) fn tag(&self, ix: NodeIx) -> &str {
        self.element(ix).map_or("", |el| el.tag.as_str())
    }
}

/// Characters that are not ASCII whitespace, counted on bytes (UTF-8
/// continuation bytes skipped).
fn non_space_chars(s: &str) -> u32 {
    let n = s
        .bytes()
        .filter(|b| !b.is_ascii_whitespace() && (b & 0xC0) != 0x80)
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn element(el: &scraper::node::Element) -> Element {
    let tag = el.name();
    let tag = if tag.bytes().any(|b| b.is_ascii_uppercase()) {
        tag.to_ascii_lowercase()
    } else {
        tag.to_string()
    };
    let mut out = Element {
        colspan: 1,
        ..Element::default()
    };
    for (name, value) in el.attrs() {
        match name {
            "class" | "id" => {
                if !out.class_id.is_empty() {
                    out.class_id.push(' ');
                }
                out.class_id.push_str(value);
            }
            "role" => out.role = Some(value.to_ascii_lowercase()),
            "itemprop" => out.itemprop = Some(value.to_ascii_lowercase()),
            "href" if tag == "a" => out.href = Some(value.to_string()),
            "src" if tag == "img" => out.src = Some(value.to_string()),
            "data-src" if tag == "img" && out.src.is_none() => out.src = Some(value.to_string()),
            "alt" if tag == "img" => out.alt = Some(value.to_string()),
            "hidden" => out.hidden = true,
            "aria-hidden" => out.hidden |= value.trim().eq_ignore_ascii_case("true"),
            "style" => out.hidden |= style_hides(value),
            "lang" if tag == "html" => out.extra = Some(value.to_string()),
            "datetime" if tag == "time" => out.extra = Some(value.to_string()),
            "colspan" => {
                out.colspan = value.trim().parse::<usize>().unwrap_or(1).clamp(1, 64);
            }
            _ => {}
        }
    }
    out.class_id.make_ascii_lowercase();
    out.tag = tag;
    out
}

/// Whether an inline style hides the element (`display:none`, `visibility:hidden`).
fn style_hides(style: &str) -> bool {
    style.split(';').any(|decl| {
        let Some((prop, val)) = decl.split_once(':') else {
            return false;
        };
        let (prop, val) = (prop.trim(), val.trim());
        (prop.eq_ignore_ascii_case("display") && val.eq_ignore_ascii_case("none"))
            || (prop.eq_ignore_ascii_case("visibility") && val.eq_ignore_ascii_case("hidden"))
    })
}
