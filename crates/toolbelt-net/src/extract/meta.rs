//! Metadata: title, author, date, site name, canonical URL and language, from
//! `<meta>` tags, JSON-LD, `<title>`, `<time>` and the first `<h1>`.

use serde_json::Value;
use url::Url;

use super::prepass::RawMeta;

/// The metadata fields of an [`super::Article`].
#[derive(Debug, Default)]
pub(crate) struct Meta {
    pub(crate) title: Option<String>,
    pub(crate) author: Option<String>,
    pub(crate) date: Option<String>,
    pub(crate) site: Option<String>,
    pub(crate) canonical_url: Option<String>,
    pub(crate) language: Option<String>,
    /// JSON-LD `articleBody`, when a page ships its text that way.
    pub(crate) ld_body: Option<String>,
}

/// What JSON-LD said about the article.
#[derive(Debug, Default)]
struct Ld {
    headline: Option<String>,
    author: Option<String>,
    date: Option<String>,
    publisher: Option<String>,
    language: Option<String>,
    body: Option<String>,
}

const MAX_LD_BYTES: usize = 1 << 20;
const MAX_LD_NODES: usize = 2_000;

const ARTICLE_TYPES: &[&str] = &[
    "article",
    "newsarticle",
    "blogposting",
    "reportagenewsarticle",
    "analysisnewsarticle",
    "opinionnewsarticle",
    "techarticle",
    "scholarlyarticle",
    "webpage",
    "report",
    "review",
    "posting",
    "socialmediaposting",
    "liveblogposting",
];

pub(crate) fn build(raw: &RawMeta, h1: Option<String>, base: Option<&Url>) -> Meta {
    let get = |keys: &[&str]| -> Option<String> {
        keys.iter().find_map(|k| {
            raw.metas
                .iter()
                .find(|(key, v)| key == k && !clean(v).is_empty())
                .map(|(_, v)| clean(v))
        })
    };
    let ld = json_ld(&raw.json_ld);
    let title_tag = Some(clean(&raw.title)).filter(|t| !t.is_empty());
    let title = get(&["og:title", "twitter:title", "dc.title", "headline"])
        .or(ld.headline)
        .or_else(|| h1.clone().filter(|h| !h.is_empty()))
        .or(title_tag);
    let author = get(&[
        "author",
        "article:author",
        "dc.creator",
        "parsely-author",
        "sailthru.author",
        "byl",
    ])
    .filter(|a| !a.starts_with("http"))
    .or(ld.author)
    .or_else(|| get(&["article:author"]));
    let date = get(&[
        "article:published_time",
        "datepublished",
        "og:published_time",
        "publish-date",
        "pubdate",
        "date",
        "dc.date",
        "dc.date.issued",
        "sailthru.date",
        "parsely-pub-date",
    ])
    .or(ld.date)
    .or_else(|| raw.time.as_deref().map(clean).filter(|t| !t.is_empty()));
    let site = get(&["og:site_name", "application-name", "twitter:site"]).or(ld.publisher);
    let canonical_url = raw
        .canonical
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(|c| absolutize(c, base))
        .or_else(|| get(&["og:url"]).map(|c| absolutize(&c, base)));
    let language = raw
        .lang
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .or_else(|| get(&["content-language", "og:locale", "language", "dc.language"]))
        .or(ld.language);
    Meta {
        title,
        author,
        date,
        site,
        canonical_url,
        language,
        ld_body: ld.body,
    }
}

/// A URL resolved against the page's, or as written when it cannot be.
pub(crate) fn absolutize(href: &str, base: Option<&Url>) -> String {
    let href = href.trim();
    match base {
        Some(b) => b.join(href).map_or_else(|_| href.to_string(), String::from),
        None => Url::parse(href).map_or_else(|_| href.to_string(), String::from),
    }
}

/// Whitespace collapsed, entities already decoded by the parser.
pub(crate) fn clean(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

fn json_ld(scripts: &[String]) -> Ld {
    let mut ld = Ld::default();
    for s in scripts {
        if s.len() > MAX_LD_BYTES {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(s.trim()) else {
            continue;
        };
        let mut budget = MAX_LD_NODES;
        visit(&v, &mut ld, &mut budget);
    }
    ld
}

/// Walks JSON-LD objects (arrays and `@graph` included) breadth-first with a node
/// budget, filling fields from article-like objects first come first served.
fn visit(root: &Value, ld: &mut Ld, budget: &mut usize) {
    let mut queue = std::collections::VecDeque::from([root]);
    while let Some(v) = queue.pop_front() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        match v {
            Value::Array(items) => queue.extend(items.iter()),
            Value::Object(map) => {
                if let Some(g) = map.get("@graph") {
                    queue.push_back(g);
                }
                if !is_article(map.get("@type")) {
                    continue;
                }
                let s = |k: &str| map.get(k).and_then(Value::as_str).map(clean);
                if ld.headline.is_none() {
                    ld.headline = s("headline")
                        .or_else(|| s("name"))
                        .filter(|h| !h.is_empty());
                }
                if ld.date.is_none() {
                    ld.date = s("datePublished")
                        .or_else(|| s("dateCreated"))
                        .filter(|d| !d.is_empty());
                }
                if ld.author.is_none() {
                    ld.author = map.get("author").and_then(person);
                }
                if ld.publisher.is_none() {
                    ld.publisher = map.get("publisher").and_then(person);
                }
                if ld.language.is_none() {
                    ld.language = s("inLanguage");
                }
                if ld.body.is_none() {
                    ld.body = map
                        .get("articleBody")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .filter(|b| !b.trim().is_empty());
                }
            }
            _ => {}
        }
    }
}

fn is_article(t: Option<&Value>) -> bool {
    let one = |v: &Value| {
        v.as_str()
            .is_some_and(|s| ARTICLE_TYPES.contains(&s.to_ascii_lowercase().as_str()))
    };
    match t {
        Some(Value::Array(ts)) => ts.iter().any(one),
        Some(v) => one(v),
        None => false,
    }
}

/// A name from a string, a `{ "name": … }` object, or a list of either.
fn person(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(clean(s)).filter(|s| !s.is_empty()),
        Value::Object(m) => m
            .get("name")
            .and_then(Value::as_str)
            .map(clean)
            .filter(|s| !s.is_empty()),
        Value::Array(items) => {
            let names: Vec<String> = items.iter().filter_map(person).take(8).collect();
            Some(names.join(", ")).filter(|s| !s.is_empty())
        }
        _ => None,
    }
}
