//! A fast streaming pass before the tree is built: it reads the page's metadata
//! (`<title>`, `<meta>`, `<link rel=canonical>`, JSON-LD) and drops what can
//! never be content (scripts, styles, inline SVG, frames, navigation, asides,
//! footers, form controls). The tree
//! builder then has a third as many bytes to read.

use std::cell::RefCell;

use lol_html::html_content::{Element, TextChunk};
use lol_html::{RewriteStrSettings, element, rewrite_str, text};

/// Metadata found while streaming the page.
#[derive(Debug, Default)]
pub(crate) struct RawMeta {
    /// `<html lang>`, read from the tree.
    pub(crate) lang: Option<String>,
    pub(crate) title: String,
    /// `(key, content)` of every `<meta>` with a `name`, `property` or `itemprop`
    /// (key lowercased).
    pub(crate) metas: Vec<(String, String)>,
    pub(crate) canonical: Option<String>,
    pub(crate) json_ld: Vec<String>,
    /// The first `<time datetime>`, read from the tree.
    pub(crate) time: Option<String>,
    /// The JSON-LD script being read.
    current_ld: Option<String>,
}

/// Elements dropped with their content.
const DROP: &str = "script:not([type=\"application/ld+json\"]), style, svg, noscript, iframe, \
                    template, object, embed, canvas, nav, aside, footer, button, select, \
                    textarea, input, link, meta, base, source";

/// Runs the pass; returns the reduced HTML (or the input unchanged when the
/// rewriter gives up) and the metadata.
pub(crate) fn run(html: &str) -> (String, RawMeta) {
    let meta = RefCell::new(RawMeta::default());
    let on_meta = |el: &mut Element<'_, '_>| {
        let key = el
            .get_attribute("property")
            .or_else(|| el.get_attribute("name"))
            .or_else(|| el.get_attribute("itemprop"))
            .or_else(|| el.get_attribute("http-equiv"));
        if let (Some(key), Some(content)) = (key, el.get_attribute("content")) {
            meta.borrow_mut()
                .metas
                .push((key.to_ascii_lowercase(), content));
        }
        el.remove();
        Ok(())
    };
    let on_link = |el: &mut Element<'_, '_>| {
        let rel = el.get_attribute("rel").unwrap_or_default();
        if rel
            .split_ascii_whitespace()
            .any(|r| r.eq_ignore_ascii_case("canonical"))
        {
            let mut m = meta.borrow_mut();
            if m.canonical.is_none() {
                m.canonical = el.get_attribute("href");
            }
        }
        el.remove();
        Ok(())
    };
    let on_title = |t: &mut TextChunk<'_>| {
        let mut m = meta.borrow_mut();
        if m.title.len() < 4096 {
            m.title.push_str(t.as_str());
        }
        Ok(())
    };
    let on_ld = |t: &mut TextChunk<'_>| {
        let mut m = meta.borrow_mut();
        let cur = m.current_ld.get_or_insert_with(String::new);
        cur.push_str(t.as_str());
        if t.last_in_text_node()
            && let Some(done) = m.current_ld.take()
        {
            m.json_ld.push(done);
        }
        t.remove();
        Ok(())
    };
    let on_drop = |el: &mut Element<'_, '_>| {
        el.remove();
        Ok(())
    };
    let settings = RewriteStrSettings::new()
        .append_element_content_handler(element!("meta", on_meta))
        .append_element_content_handler(element!("link", on_link))
        .append_element_content_handler(text!("title", on_title))
        .append_element_content_handler(text!("script[type=\"application/ld+json\"]", on_ld))
        .append_element_content_handler(element!(DROP, on_drop));
    let out = rewrite_str(html, settings).unwrap_or_else(|_| html.to_string());
    (out, meta.into_inner())
}
