//! Words of a review for theme counting: English by letters and digits, Chinese by
//! jieba's dictionary segmentation, each without its stopwords.

use std::sync::LazyLock;

use jieba_rs::Jieba;

/// jieba with its built-in dictionary, loaded on first use (a few hundred ms once).
static JIEBA: LazyLock<Jieba> = LazyLock::new(Jieba::new);

/// English words too common to be a theme. Review words ("today") are included.
const ENGLISH_STOPWORDS: &[&str] = &[
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "didn't",
    "do",
    "does",
    "doesn't",
    "doing",
    "don't",
    "down",
    "during",
    "each",
    "even",
    "few",
    "for",
    "from",
    "further",
    "got",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i'm",
    "i've",
    "if",
    "in",
    "into",
    "is",
    "isn't",
    "it",
    "it's",
    "its",
    "just",
    "me",
    "more",
    "most",
    "much",
    "my",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "really",
    "same",
    "she",
    "should",
    "so",
    "some",
    "still",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "today",
    "tomorrow",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "wasn't",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "why",
    "will",
    "with",
    "won't",
    "would",
    "yesterday",
    "yet",
    "you",
    "your",
];

/// Chinese words too common to be a theme (single characters are dropped anyway).
const CHINESE_STOPWORDS: &[&str] = &[
    "今天",
    "昨天",
    "明天",
    "我们",
    "你们",
    "他们",
    "她们",
    "它们",
    "自己",
    "一个",
    "一些",
    "一下",
    "一直",
    "这个",
    "那个",
    "这些",
    "那些",
    "这样",
    "那样",
    "这么",
    "那么",
    "什么",
    "怎么",
    "为什么",
    "没有",
    "不是",
    "就是",
    "还是",
    "但是",
    "可是",
    "因为",
    "所以",
    "如果",
    "虽然",
    "而且",
    "或者",
    "然后",
    "已经",
    "可以",
    "还有",
    "以及",
    "时候",
    "之后",
    "之前",
    "其实",
    "有点",
    "非常",
    "比较",
    "一起",
    "而是",
    "并且",
    "只是",
    "还要",
    "需要",
    "应该",
];

/// True for a CJK ideograph.
fn is_han(c: char) -> bool {
    matches!(c,
        '\u{4E00}'..='\u{9FFF}'
        | '\u{3400}'..='\u{4DBF}'
        | '\u{F900}'..='\u{FAFF}'
        | '\u{20000}'..='\u{2A6DF}')
}

/// Punctuation that ends a sentence or a clause: no phrase spans it.
fn is_break(c: char) -> bool {
    matches!(
        c,
        '.' | '!'
            | '?'
            | ';'
            | ':'
            | ','
            | '\n'
            | '\r'
            | '('
            | ')'
            | '['
            | ']'
            | '。'
            | '！'
            | '？'
            | '；'
            | '：'
            | '，'
            | '、'
            | '…'
            | '（'
            | '）'
            | '【'
            | '】'
    )
}

/// The theme words of `text`, one list per sentence or clause, in order: English
/// words lowercased (letters and digits, apostrophes inside a word kept, numbers
/// alone dropped), Chinese words as jieba segments them; stopwords and words of one
/// letter or one character left out.
pub(crate) fn sentences(text: &str) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut sentence: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut han = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if is_han(c) {
            flush_word(&mut word, &mut sentence);
            han.push(c);
        } else if c.is_alphanumeric() {
            flush_han(&mut han, &mut sentence);
            word.extend(c.to_lowercase());
        } else if (c == '\'' || c == '’')
            && !word.is_empty()
            && chars
                .peek()
                .is_some_and(|n| n.is_alphabetic() && !is_han(*n))
        {
            word.push('\'');
        } else {
            flush_word(&mut word, &mut sentence);
            flush_han(&mut han, &mut sentence);
            if is_break(c) && !sentence.is_empty() {
                out.push(std::mem::take(&mut sentence));
            }
        }
    }
    flush_word(&mut word, &mut sentence);
    flush_han(&mut han, &mut sentence);
    if !sentence.is_empty() {
        out.push(sentence);
    }
    out
}

fn flush_word(word: &mut String, sentence: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let w = std::mem::take(word);
    let keep = w.chars().count() >= 2
        && w.chars().any(char::is_alphabetic)
        && !ENGLISH_STOPWORDS.contains(&w.as_str());
    if keep {
        sentence.push(w);
    }
}

fn flush_han(han: &mut String, sentence: &mut Vec<String>) {
    if han.is_empty() {
        return;
    }
    for token in JIEBA.cut(han, false) {
        let w = token.word;
        if w.chars().count() >= 2 && !CHINESE_STOPWORDS.contains(&w) {
            sentence.push(w.to_string());
        }
    }
    han.clear();
}

/// Two adjacent words as one phrase: joined without a space when both are Chinese.
pub(crate) fn phrase(a: &str, b: &str) -> String {
    let han = |s: &str| s.chars().last().is_some_and(is_han);
    let han_start = |s: &str| s.chars().next().is_some_and(is_han);
    if han(a) && han_start(b) {
        format!("{a}{b}")
    } else {
        format!("{a} {b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<Vec<&'static str>> {
        sentences(text)
            .into_iter()
            .map(|s| {
                s.into_iter()
                    .map(|w| &*Box::leak(w.into_boxed_str()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn english_is_lowercased_without_stopwords() {
        assert_eq!(
            words("Finished the database migration today; I didn't sleep well. 3 hours, 42 PRs"),
            vec![
                vec!["finished", "database", "migration"],
                vec!["sleep", "well"],
                vec!["hours"],
                vec!["prs"]
            ]
        );
    }

    #[test]
    fn chinese_is_segmented_by_jieba() {
        assert_eq!(
            words("今天进展顺利，完成了数据库迁移"),
            vec![vec!["进展", "顺利"], vec!["完成", "数据库", "迁移"]]
        );
    }

    #[test]
    fn mixed_text_keeps_both() {
        assert_eq!(
            words("学习Rust的所有权"),
            vec![vec!["学习", "rust", "所有权"]]
        );
        assert_eq!(phrase("数据库", "迁移"), "数据库迁移");
        assert_eq!(phrase("学习", "rust"), "学习 rust");
    }
}
