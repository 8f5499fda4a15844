//! Tests of `extract`.

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use toolbelt_net::extract::{Article, Block, Inline, extract};
use url::Url;

const NEWS: &str = include_str!("../fixtures/extract/news.html");

fn url(s: &str) -> Url {
    Url::parse(s).unwrap()
}

#[test]
fn boilerplate_removed_from_news_page() {
    let article = extract(NEWS, Some(&url("https://coastal.example/news/2024/bridge")));
    assert_eq!(
        article.to_text(),
        "The harbour bridge reopened to traffic on Tuesday morning after six months of repairs \
         to its steel deck and cables.\n\n\
         Engineers replaced more than four hundred bolts and repainted the main span, according \
         to the city council's final report, which was published last week.\n\n\
         What changes for drivers\n\n\
         The speed limit on the bridge stays at forty kilometres an hour, and the cycle lane on \
         the northern side is now twice as wide as before.\n\n\
         Council officials said the next inspection is planned for the autumn, when traffic is \
         usually lighter than in the summer months."
    );
}

#[test]
fn metadata_from_meta_tags() {
    let article = extract(NEWS, Some(&url("https://coastal.example/news/2024/bridge")));
    assert_eq!(
        (
            article.title.as_deref(),
            article.author.as_deref(),
            article.date.as_deref(),
            article.site.as_deref(),
            article.canonical_url.as_deref(),
            article.language.as_deref(),
        ),
        (
            Some("Harbour bridge reopens after repairs"),
            Some("Jane Doe"),
            Some("2024-03-05T08:30:00Z"),
            Some("The Coastal Times"),
            Some("https://coastal.example/news/harbour-bridge-reopens"),
            Some("en-GB"),
        )
    );
}

#[test]
fn relative_links_made_absolute_in_markdown() {
    let article = extract(NEWS, Some(&url("https://coastal.example/news/2024/bridge")));
    let md = article.to_markdown();
    assert!(
        md.contains(
            "according to the city council's \
             [final report](https://coastal.example/news/reports/bridge-2024.pdf), which"
        ),
        "{md}"
    );
    assert!(md.contains("## What changes for drivers"), "{md}");
}

#[test]
fn links_without_page_url_stay_as_written() {
    let html = r#"<html><body><article>
        <p>A paragraph long enough to be the content of this page, with <a href="/docs/intro">a relative link</a> inside it.</p>
        </article></body></html>"#;
    let article = extract(html, None);
    assert_eq!(
        article.blocks,
        vec![Block::Paragraph(vec![
            Inline::Text(
                "A paragraph long enough to be the content of this page, with ".to_string()
            ),
            Inline::Link {
                text: "a relative link".to_string(),
                url: "/docs/intro".to_string()
            },
            Inline::Text(" inside it.".to_string()),
        ])]
    );
}

const TABLE_PAGE: &str = r#"<!DOCTYPE html><html><head><title>Tide tables</title></head><body>
<nav><a href="/">Home</a> <a href="/tides">Tides</a></nav>
<div id="content" class="post-content">
  <p>High and low tides for the harbour this week, measured at the pier gauge every morning.</p>
  <table>
    <thead><tr><th>Day</th><th>High tide</th><th>Low tide</th></tr></thead>
    <tbody>
      <tr><td>Monday</td><td>06:12</td><td>12:30</td></tr>
      <tr><td>Tuesday</td><td><a href="/tides/tue">06:58</a></td><td>13:15</td></tr>
      <tr><td colspan="2">Wednesday | closed</td><td>14:01</td></tr>
    </tbody>
  </table>
  <p>Times are local and may differ by a few minutes when the wind is strong from the west.</p>
</div>
</body></html>"#;

#[test]
fn tables_kept_as_markdown_tables() {
    let article = extract(TABLE_PAGE, Some(&url("https://tides.example/week")));
    assert_eq!(
        article.to_markdown(),
        "High and low tides for the harbour this week, measured at the pier gauge every morning.\n\
         \n\
         | Day | High tide | Low tide |\n\
         | --- | --- | --- |\n\
         | Monday | 06:12 | 12:30 |\n\
         | Tuesday | [06:58](https://tides.example/tides/tue) | 13:15 |\n\
         | Wednesday \\| closed |  | 14:01 |\n\
         \n\
         Times are local and may differ by a few minutes when the wind is strong from the west."
    );
}

#[test]
fn text_output_has_no_markup() {
    let article = extract(TABLE_PAGE, Some(&url("https://tides.example/week")));
    assert_eq!(
        article.to_text(),
        "High and low tides for the harbour this week, measured at the pier gauge every morning.\n\
         \n\
         Day\tHigh tide\tLow tide\n\
         Monday\t06:12\t12:30\n\
         Tuesday\t06:58\t13:15\n\
         Wednesday | closed\t\t14:01\n\
         \n\
         Times are local and may differ by a few minutes when the wind is strong from the west."
    );
    let news = extract(NEWS, None).to_text();
    for markup in ["<", ">", "](", "##", "**", "`"] {
        assert!(!news.contains(markup), "{markup:?} in {news}");
    }
}

#[test]
fn lists_quotes_and_code_in_markdown() {
    let html = r#"<html><body><div class="entry-content">
        <p>Installing the tool takes three steps, and each of them is explained in detail below.</p>
        <ol><li>Download the archive</li><li>Unpack it with <code>tar -xf</code></li><li>Run the installer</li></ol>
        <blockquote><p>It worked on the first try, which never happens with software like this.</p></blockquote>
        <pre><code>tar -xf tool.tar.gz
./install.sh --prefix ~/.local</code></pre>
        <ul><li>Linux</li><li>macOS</li></ul>
    </div></body></html>"#;
    assert_eq!(
        extract(html, None).to_markdown(),
        "Installing the tool takes three steps, and each of them is explained in detail below.\n\
         \n\
         1. Download the archive\n\
         2. Unpack it with `tar -xf`\n\
         3. Run the installer\n\
         \n\
         > It worked on the first try, which never happens with software like this.\n\
         \n\
         ```\n\
         tar -xf tool.tar.gz\n\
         ./install.sh --prefix ~/.local\n\
         ```\n\
         \n\
         - Linux\n\
         - macOS"
    );
}

#[test]
fn metadata_from_json_ld() {
    let html = r#"<html><head>
        <title>Page title | Site</title>
        <script type="application/ld+json">
        {"@context": "https://schema.org", "@graph": [
          {"@type": "WebSite", "name": "Garden Notes"},
          {"@type": "NewsArticle", "headline": "Planting tulips in autumn",
           "author": [{"@type": "Person", "name": "Ann Lee"}, {"@type": "Person", "name": "Bo Chen"}],
           "datePublished": "2023-10-01", "publisher": {"@type": "Organization", "name": "Garden Notes"},
           "inLanguage": "en"}
        ]}
        </script>
        </head><body><p>Tulip bulbs go into the ground in October, about fifteen centimetres deep and a hand apart.</p></body></html>"#;
    let article = extract(html, None);
    assert_eq!(
        article,
        Article {
            title: Some("Planting tulips in autumn".to_string()),
            author: Some("Ann Lee, Bo Chen".to_string()),
            date: Some("2023-10-01".to_string()),
            site: Some("Garden Notes".to_string()),
            canonical_url: None,
            language: Some("en".to_string()),
            blocks: vec![Block::Paragraph(vec![Inline::Text(
                "Tulip bulbs go into the ground in October, about fifteen centimetres deep and \
                 a hand apart."
                    .to_string()
            )])],
        }
    );
}

#[test]
fn title_falls_back_to_h1_then_title_tag() {
    let with_h1 = extract(
        "<html><head><title>Tag title</title></head><body><h1>Heading title</h1></body></html>",
        None,
    );
    assert_eq!(with_h1.title.as_deref(), Some("Heading title"));
    let only_tag = extract("<title> Tag   title </title><p>x</p>", None);
    assert_eq!(only_tag.title.as_deref(), Some("Tag title"));
}

#[test]
fn time_element_gives_the_date() {
    let html = r#"<body><article><time datetime="2022-02-02">2 Feb</time>
        <p>A paragraph that is long enough to be taken as the main content of the page.</p></article></body>"#;
    assert_eq!(extract(html, None).date.as_deref(), Some("2022-02-02"));
}

#[test]
fn empty_documents_give_empty_articles() {
    for html in [
        "",
        "   \n\t ",
        "<html></html>",
        "<!DOCTYPE html>",
        "<body></body>",
    ] {
        assert_eq!(extract(html, None), Article::default(), "{html:?}");
    }
}

#[test]
fn plain_text_without_markup_is_kept() {
    let article = extract("just some words, no tags at all", None);
    assert_eq!(article.to_text(), "just some words, no tags at all");
}

#[test]
fn malformed_html_still_extracted() {
    let html = "<html><body><div class=content><p>First paragraph of the story, which never closes its tags and still has to be read in full.\
        <p>Second paragraph <b>with <i>misnested</b> formatting</i> and a stray </span> end tag, \
        and an attribute <a href=\"/x\" title=\"unterminated>link text</a> that is broken.\
        <table><tr><td>cell without end";
    let article = extract(html, None);
    let text = article.to_text();
    assert!(
        text.starts_with(
            "First paragraph of the story, which never closes its tags and still has to be read in full.\n\nSecond paragraph with misnested formatting and a stray end tag,"
        ),
        "{text}"
    );
}

#[test]
fn binary_garbage_does_not_panic() {
    let mut s = String::new();
    for i in 0..20_000u32 {
        s.push(char::from_u32((i * 7919) % 0x2FFF).unwrap_or('<'));
        if i % 13 == 0 {
            s.push_str("<p><a href='\u{0}'>");
        }
    }
    let _ = extract(&s, Some(&url("https://x.example/")));
}

#[test]
fn huge_input_bounded_time() {
    // 3 MB of paragraphs: linear; in a slow (unoptimised) build the parse budget
    // may cut it, so only the start is checked.
    let mut html = String::from("<html><body><article>");
    while html.len() < 3_000_000 {
        html.push_str(
            "<p>A line of filler text that goes on and on <a href='/a'>with a link</a>.</p>\n",
        );
    }
    let start = Instant::now();
    let article = extract(&html, None);
    assert_eq!(
        article.blocks.first().map(Block::plain_text).as_deref(),
        Some("A line of filler text that goes on and on with a link.")
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn deep_nesting_bounded_time() {
    // Deep nesting makes HTML5 tree building quadratic: parsing stops at its
    // budget, and nothing overflows the stack.
    for html in [
        format!("{}deep text", "<div><span>".repeat(50_000)),
        format!("{}deep text", "<table><tr><td>".repeat(5_000)),
        format!("<ul>{}", "<li><b>item".repeat(20_000)),
    ] {
        let start = Instant::now();
        let _ = extract(&html, None);
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?} for {}",
            start.elapsed(),
            &html[..20]
        );
    }
    let shallow = format!("{}deep text", "<div><span>".repeat(300));
    assert_eq!(extract(&shallow, None).to_text(), "deep text");
}

#[test]
fn longer_than_the_cap_is_cut_not_refused() {
    let mut html = String::from("<p>");
    html.push_str(&"é".repeat(toolbelt_net::extract::MAX_HTML_BYTES));
    let article = extract(&html, None);
    assert!(article.to_text().len() <= toolbelt_net::extract::MAX_HTML_BYTES);
}

/// A sample of the extraction data set (every tenth page), kept with the tests.
fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/extract/dataset")
}

fn tokens(s: &str) -> Vec<&str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .collect()
}

fn shingles(s: &str) -> HashMap<Vec<&str>, u32> {
    let t = tokens(s);
    let mut m = HashMap::new();
    if t.len() < 4 {
        if !t.is_empty() {
            m.insert(t, 1);
        }
        return m;
    }
    for w in t.windows(4) {
        *m.entry(w.to_vec()).or_insert(0) += 1;
    }
    m
}

fn f1(truth: &str, pred: &str) -> f64 {
    let (t, p) = (shingles(truth), shingles(pred));
    let tp: u32 = t
        .iter()
        .map(|(k, &c)| c.min(p.get(k).copied().unwrap_or(0)))
        .sum();
    let (nt, np): (u32, u32) = (t.values().sum(), p.values().sum());
    if tp == 0 {
        return 0.0;
    }
    let (prec, rec) = (f64::from(tp) / f64::from(np), f64::from(tp) / f64::from(nt));
    2.0 * prec * rec / (prec + rec)
}

#[test]
fn data_set_pages_score_above_floor() {
    let dir = data_dir();
    assert!(
        dir.join("ground-truth.json").is_file(),
        "the extraction sample is missing: expected {}",
        dir.display()
    );
    let gt: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ground-truth.json")).unwrap())
            .unwrap();
    let mut ids: Vec<&String> = gt.keys().collect();
    ids.sort();
    let sample = ids;
    let mut total = 0.0;
    for id in &sample {
        let f = std::fs::File::open(dir.join("html").join(format!("{id}.html.gz"))).unwrap();
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(f)
            .read_to_end(&mut bytes)
            .unwrap();
        let html = String::from_utf8_lossy(&bytes);
        let page = &gt[id.as_str()];
        let page_url = page["url"].as_str().and_then(|u| Url::parse(u).ok());
        let text = extract(&html, page_url.as_ref()).to_text();
        total += f1(page["articleBody"].as_str().unwrap_or(""), &text);
    }
    let mean = total / sample.len() as f64;
    assert!(mean >= 0.9, "mean F1 {mean:.3} over {} pages", sample.len());
}

/// Pieces of HTML, well-formed or not, that random documents are made of.
const PIECES: &[&str] = &[
    "<p>",
    "</p>",
    "<div class=\"content\">",
    "<div class=\"comments\">",
    "</div>",
    "<table>",
    "<tr>",
    "<td>",
    "</td>",
    "</table>",
    "<a href=\"/x?a=1&b=2\">",
    "</a>",
    "<ul><li>",
    "</li>",
    "<pre>",
    "</pre>",
    "<h2>",
    "</h2>",
    "<br>",
    "<img alt=\"pic\" src=\"data:x\">",
    "<!--",
    "-->",
    "<script>",
    "</script>",
    "<svg>",
    "<nav>",
    "<blockquote>",
    "<code>",
    "`|[]*#",
    "some words of text here, ",
    "a longer run of words that looks like a real sentence. ",
    "&amp;&lt;&#x1F600;&bogus;",
    "<",
    ">",
    "\"",
    "\u{0}",
    "é漢字",
    "<script type=\"application/ld+json\">{\"@type\":\"Article\",\"articleBody\":\"&lt;p&gt;x\"}</script>",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    #[test]
    fn never_panics_on_random_html(picks in proptest::collection::vec(0..PIECES.len(), 0..200)) {
        let html: String = picks.iter().map(|&i| PIECES[i]).collect();
        let article = extract(&html, Some(&url("https://example.com/a/b")));
        let text = article.to_text();
        let _ = article.to_markdown();
        proptest::prop_assert!(!text.contains("<script"));
    }
}
