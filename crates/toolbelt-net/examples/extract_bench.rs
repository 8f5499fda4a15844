//! Runs `toolbelt_net::extract` over the article-extraction data set: writes the
//! extracted text per page as JSON (`{id: text}`), reports pages per second
//! (extraction only, pages already decompressed in memory) and scores the text
//! against the ground truth with the data set's shingle metric.
//!
//! ```text
//! cargo run --release -p toolbelt-net --example extract_bench -- \
//!     [--data DIR] [--out FILE] [--runs N] [--worst N] [--show ID]
//! ```
//! `--data` defaults to `$EXTRACTION_DATA`, else `../shared/data/extraction`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::Value;
use toolbelt_net::extract::extract;
use url::Url;

struct Page {
    id: String,
    html: String,
    url: Option<Url>,
    truth: String,
}

fn main() {
    let mut data = std::env::var("EXTRACTION_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("../shared/data/extraction"));
    let mut out: Option<PathBuf> = None;
    let mut runs = 3usize;
    let mut worst = 0usize;
    let mut show: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--data" => data = PathBuf::from(val()),
            "--out" => out = Some(PathBuf::from(val())),
            "--runs" => runs = val().parse().expect("--runs N"),
            "--worst" => worst = val().parse().expect("--worst N"),
            "--show" => show = Some(val()),
            "--stress" => return stress(args.next()),
            other => panic!("unknown argument {other}"),
        }
    }
    let pages = load(&data);
    if let Some(id) = show {
        let p = pages
            .iter()
            .find(|p| p.id.starts_with(&id))
            .expect("no such page");
        let a = extract(&p.html, p.url.as_ref());
        println!(
            "title={:?}\nauthor={:?}\ndate={:?}\nsite={:?}\ncanonical={:?}\nlang={:?}\n\n{}",
            a.title,
            a.author,
            a.date,
            a.site,
            a.canonical_url,
            a.language,
            a.to_markdown()
        );
        println!("\n===== TRUTH =====\n{}", p.truth);
        return;
    }

    let mut best = f64::MAX;
    let mut texts: Vec<String> = Vec::new();
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        texts = pages
            .iter()
            .map(|p| extract(&p.html, p.url.as_ref()).to_text())
            .collect();
        best = best.min(start.elapsed().as_secs_f64());
    }
    let pps = pages.len() as f64 / best;

    let mut scores = Vec::new();
    for (p, t) in pages.iter().zip(&texts) {
        scores.push((shingle_match(&p.truth, t), p.id.as_str()));
    }
    let (prec, rec, f1) = metrics(&scores.iter().map(|s| s.0).collect::<Vec<_>>());
    println!(
        "pages={} precision={prec:.3} recall={rec:.3} f1={f1:.3} pages_per_s={pps:.1}",
        pages.len()
    );
    if worst > 0 {
        let mut by_f1: Vec<(f64, f64, f64, &str)> = scores
            .iter()
            .map(|((tp, fp, fn_), id)| {
                let p = if tp + fp > 0.0 { tp / (tp + fp) } else { 0.0 };
                let r = if tp + fn_ > 0.0 { tp / (tp + fn_) } else { 0.0 };
                let f = if p + r > 0.0 {
                    2.0 * p * r / (p + r)
                } else {
                    0.0
                };
                (f, p, r, *id)
            })
            .collect();
        by_f1.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (f, p, r, id) in by_f1.iter().take(worst) {
            println!("  f1={f:.3} p={p:.3} r={r:.3} {}", &id[..12]);
        }
    }
    if let Some(out) = out {
        let map: serde_json::Map<String, Value> = pages
            .iter()
            .zip(texts)
            .map(|(p, t)| (p.id.clone(), Value::String(t)))
            .collect();
        std::fs::write(&out, serde_json::to_string(&map).unwrap()).unwrap();
        let timing =
            serde_json::json!({ "pages": pages.len(), "seconds": best, "pages_per_s": pps });
        std::fs::write(out.with_extension("timing.json"), timing.to_string()).unwrap();
    }
}

/// Times extraction of synthetic worst cases: long, deep, wide.
fn stress(only: Option<String>) {
    let mut long = String::from("<html><body><article>");
    while long.len() < 6_000_000 {
        long.push_str("<p>A line of filler text that goes on <a href='/a'>with a link</a>.</p>\n");
    }
    let cases = [
        ("long 6 MB", long.clone()),
        (
            "div x20000",
            format!("{}deep{}", "<div>".repeat(20_000), "</div>".repeat(20_000)),
        ),
        (
            "div+span x20000",
            format!("{}deep", "<div><span>".repeat(20_000)),
        ),
        ("b x20000", format!("{}deep", "<b>".repeat(20_000))),
        (
            "table x5000",
            format!("{}deep", "<table><tr><td>".repeat(5_000)),
        ),
        (
            "table x1000",
            format!("{}deep", "<table><tr><td>".repeat(1_000)),
        ),
        (
            "li x20000",
            format!("<ul>{}", "<li>item text here".repeat(20_000)),
        ),
    ];
    for (name, html) in cases {
        if only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        let start = Instant::now();
        let a = extract(&html, None);
        println!("{name}: {:?} ({} blocks)", start.elapsed(), a.blocks.len());
    }
}

fn load(data: &std::path::Path) -> Vec<Page> {
    let gt: HashMap<String, Value> = serde_json::from_str(
        &std::fs::read_to_string(data.join("ground-truth.json"))
            .unwrap_or_else(|e| panic!("{}: {e}", data.display())),
    )
    .unwrap();
    let mut ids: Vec<&String> = gt.keys().collect();
    ids.sort();
    ids.into_iter()
        .map(|id| {
            let f = std::fs::File::open(data.join("html").join(format!("{id}.html.gz"))).unwrap();
            let mut bytes = Vec::new();
            flate2::read::GzDecoder::new(f)
                .read_to_end(&mut bytes)
                .unwrap();
            let v = &gt[id];
            Page {
                id: id.clone(),
                html: String::from_utf8_lossy(&bytes).into_owned(),
                url: v["url"].as_str().and_then(|u| Url::parse(u).ok()),
                truth: v["articleBody"].as_str().unwrap_or("").to_string(),
            }
        })
        .collect()
}

/// `\w+` tokens (letters, digits, marks of letters, underscore).
fn tokens(s: &str) -> Vec<&str> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .collect()
}

fn shingles(s: &str) -> HashMap<Vec<&str>, u32> {
    let t = tokens(s);
    let mut m = HashMap::new();
    if t.is_empty() {
        return m;
    }
    if t.len() < 4 {
        *m.entry(t).or_insert(0) += 1;
        return m;
    }
    for w in t.windows(4) {
        *m.entry(w.to_vec()).or_insert(0) += 1;
    }
    m
}

/// Normalised (tp, fp, fn) of one page.
fn shingle_match(truth: &str, pred: &str) -> (f64, f64, f64) {
    let t = shingles(truth);
    let p = shingles(pred);
    let (mut tp, mut fp, mut fn_) = (0.0, 0.0, 0.0);
    for (k, &tc) in &t {
        let pc = p.get(k).copied().unwrap_or(0);
        tp += f64::from(tc.min(pc));
        fn_ += f64::from(tc.saturating_sub(pc));
    }
    for (k, &pc) in &p {
        let tc = t.get(k).copied().unwrap_or(0);
        fp += f64::from(pc.saturating_sub(tc));
    }
    let s = tp + fp + fn_;
    if s > 0.0 {
        (tp / s, fp / s, fn_ / s)
    } else {
        (0.0, 0.0, 0.0)
    }
}

fn metrics(per_page: &[(f64, f64, f64)]) -> (f64, f64, f64) {
    let score = |num: f64, other: f64, third: f64| {
        if other == 0.0 && third == 0.0 {
            1.0
        } else if num == 0.0 && other == 0.0 {
            0.0
        } else {
            num / (num + other)
        }
    };
    let ps: Vec<f64> = per_page
        .iter()
        .filter(|(tp, fp, _)| tp + fp > 0.0)
        .map(|&(tp, fp, fn_)| score(tp, fp, fn_))
        .collect();
    let rs: Vec<f64> = per_page
        .iter()
        .filter(|(tp, _, fn_)| tp + fn_ > 0.0)
        .map(|&(tp, fp, fn_)| score(tp, fn_, fp))
        .collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (p, r) = (mean(&ps), mean(&rs));
    (
        p,
        r,
        if p + r > 0.0 {
            2.0 * p * r / (p + r)
        } else {
            0.0
        },
    )
}
