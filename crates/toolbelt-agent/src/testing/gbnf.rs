//! A checker for llama.cpp GBNF grammars, for tests: [`Grammar::parse`] reads a
//! grammar as llama.cpp's `grammar-parser` does and refuses what it refuses;
//! [`Grammar::accepts`] decides whether a whole string is in its language.
//!
//! The syntax: rules `name ::= alternatives` (names of letters, digits and `-`),
//! one per line (a rule goes on over several lines only inside parentheses or
//! after a `|`); literals `"..."`; character classes `[a-z]`, `[^"\\]`; the escapes
//! `\x..`, `\u....`, `\U........`, `\t`, `\r`, `\n`, `\\`, `\"`, `\[`, `\]`; groups
//! `( ... )`; `|`; `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}`; `.` (any character);
//! comments from `#` to the end of the line. Refused as llama.cpp refuses them: a
//! rule named but not defined, a grammar without `root`, left recursion.
//!
//! Repetitions become rules as llama.cpp makes them (`x*` is `r ::= x r |`), and
//! the language is decided by an Earley recognizer over characters, which takes
//! recursion (JSON values) and ambiguity in its stride.
//!
//! ```
//! use toolbelt_agent::testing::gbnf::Grammar;
//!
//! let grammar = Grammar::parse("root ::= \"a\" [0-9]{1,3} (\"b\" | \"c\")*\n")?;
//! assert!(grammar.accepts("a12bcb"));
//! assert!(!grammar.accepts("a1234"));
//! # Ok::<(), toolbelt_agent::testing::gbnf::GbnfError>(())
//! ```

use std::collections::{HashMap, HashSet};

/// Why a grammar was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GbnfError {
    /// The text is not a grammar.
    #[error("line {line}: {message}")]
    Syntax {
        /// The 1-based line.
        line: usize,
        /// What was expected or found there.
        message: String,
    },
    /// A rule is named but never defined (llama.cpp: `Undefined rule identifier`).
    #[error("undefined rule identifier '{name}'")]
    UndefinedRule {
        /// The rule's name.
        name: String,
    },
    /// There is no `root` rule.
    #[error("the grammar does not contain a 'root' symbol")]
    NoRoot,
    /// A rule can reach itself without reading a character.
    #[error("left recursion detected for rule '{name}'")]
    LeftRecursion {
        /// A rule on the cycle.
        name: String,
    },
}

/// One element of a sequence: a character from a set, or a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Sym {
    Chars(CharSet),
    Rule(usize),
}

/// A set of characters: ranges, or everything but them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CharSet {
    negated: bool,
    ranges: Vec<(char, char)>,
}

impl CharSet {
    fn one(c: char) -> CharSet {
        CharSet {
            negated: false,
            ranges: vec![(c, c)],
        }
    }

    fn any() -> CharSet {
        CharSet {
            negated: true,
            ranges: Vec::new(),
        }
    }

    fn matches(&self, c: char) -> bool {
        let inside = self.ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
        inside != self.negated
    }
}

/// A parsed grammar.
#[derive(Debug, Clone)]
pub struct Grammar {
    /// Per rule, its alternatives, each a sequence.
    rules: Vec<Vec<Vec<Sym>>>,
    names: Vec<String>,
    nullable: Vec<bool>,
    root: usize,
}

/// An Earley item: rule, alternative, position in it, start of the match.
type Item = (usize, usize, usize, usize);

impl Grammar {
    /// Parses `text`.
    ///
    /// # Errors
    /// [`GbnfError`] for text llama.cpp would refuse.
    pub fn parse(text: &str) -> Result<Grammar, GbnfError> {
        let mut parser = Parser {
            chars: text.chars().collect(),
            pos: 0,
            ids: HashMap::new(),
            names: Vec::new(),
            rules: Vec::new(),
            defined: Vec::new(),
        };
        parser.grammar()?;
        let Parser {
            names,
            rules,
            defined,
            ids,
            ..
        } = parser;
        if let Some(i) = defined.iter().position(|d| !d) {
            return Err(GbnfError::UndefinedRule {
                name: names[i].clone(),
            });
        }
        let root = *ids.get("root").ok_or(GbnfError::NoRoot)?;
        let rules: Vec<Vec<Vec<Sym>>> = rules.into_iter().map(Option::unwrap_or_default).collect();
        let nullable = nullable(&rules);
        let grammar = Grammar {
            rules,
            names,
            nullable,
            root,
        };
        grammar.check_left_recursion()?;
        Ok(grammar)
    }

    /// The number of rules, those made for groups and repetitions included.
    pub fn rule_count(&self) -> usize {
        self.rules.len()
    }

    /// True when the whole of `input` is in the grammar's language (from `root`).
    pub fn accepts(&self, input: &str) -> bool {
        let chars: Vec<char> = input.chars().collect();
        let n = chars.len();
        let mut sets: Vec<Vec<Item>> = vec![Vec::new(); n + 1];
        let mut seen: Vec<HashSet<Item>> = vec![HashSet::new(); n + 1];
        let add = |sets: &mut [Vec<Item>], seen: &mut [HashSet<Item>], at: usize, item: Item| {
            if seen[at].insert(item) {
                sets[at].push(item);
            }
        };
        for alt in 0..self.rules[self.root].len() {
            add(&mut sets, &mut seen, 0, (self.root, alt, 0, 0));
        }
        for i in 0..=n {
            let mut k = 0;
            while k < sets[i].len() {
                let (rule, alt, dot, origin) = sets[i][k];
                k += 1;
                match self.rules[rule][alt].get(dot) {
                    Some(Sym::Rule(next)) => {
                        for a in 0..self.rules[*next].len() {
                            add(&mut sets, &mut seen, i, (*next, a, 0, i));
                        }
                        if self.nullable[*next] {
                            add(&mut sets, &mut seen, i, (rule, alt, dot + 1, origin));
                        }
                    }
                    Some(Sym::Chars(set)) => {
                        if i < n && set.matches(chars[i]) {
                            add(&mut sets, &mut seen, i + 1, (rule, alt, dot + 1, origin));
                        }
                    }
                    None => {
                        let mut j = 0;
                        while j < sets[origin].len() {
                            let (r, a, d, o) = sets[origin][j];
                            j += 1;
                            if self.rules[r][a].get(d) == Some(&Sym::Rule(rule)) {
                                add(&mut sets, &mut seen, i, (r, a, d + 1, o));
                            }
                        }
                    }
                }
            }
        }
        sets[n].iter().any(|&(rule, alt, dot, origin)| {
            rule == self.root && origin == 0 && dot == self.rules[rule][alt].len()
        })
    }

    /// Refuses a rule that reaches itself before any character.
    fn check_left_recursion(&self) -> Result<(), GbnfError> {
        // 0: not visited, 1: on the path, 2: done.
        let mut state = vec![0u8; self.rules.len()];
        for start in 0..self.rules.len() {
            if state[start] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, Vec<usize>)> = vec![(start, self.left_edges(start))];
            state[start] = 1;
            while let Some((rule, edges)) = stack.last_mut() {
                let rule = *rule;
                match edges.pop() {
                    Some(next) if state[next] == 1 => {
                        return Err(GbnfError::LeftRecursion {
                            name: self.names[next].clone(),
                        });
                    }
                    Some(next) if state[next] == 0 => {
                        state[next] = 1;
                        let next_edges = self.left_edges(next);
                        stack.push((next, next_edges));
                    }
                    Some(_) => {}
                    None => {
                        state[rule] = 2;
                        stack.pop();
                    }
                }
            }
        }
        Ok(())
    }

    /// The rules `rule` may begin with (before it reads a character).
    fn left_edges(&self, rule: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for alt in &self.rules[rule] {
            for sym in alt {
                match sym {
                    Sym::Rule(next) => {
                        out.push(*next);
                        if !self.nullable[*next] {
                            break;
                        }
                    }
                    Sym::Chars(_) => break,
                }
            }
        }
        out
    }
}

/// Which rules match the empty string.
fn nullable(rules: &[Vec<Vec<Sym>>]) -> Vec<bool> {
    let mut nullable = vec![false; rules.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for (i, alts) in rules.iter().enumerate() {
            if nullable[i] {
                continue;
            }
            let empty = alts.iter().any(|seq| {
                seq.iter().all(|sym| match sym {
                    Sym::Rule(r) => nullable[*r],
                    Sym::Chars(_) => false,
                })
            });
            if empty {
                nullable[i] = true;
                changed = true;
            }
        }
    }
    nullable
}

/// Reads a grammar's text into rules.
struct Parser {
    chars: Vec<char>,
    pos: usize,
    ids: HashMap<String, usize>,
    names: Vec<String>,
    rules: Vec<Option<Vec<Vec<Sym>>>>,
    /// Whether each rule was defined (rules made for groups are).
    defined: Vec<bool>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    fn error(&self, message: impl Into<String>) -> GbnfError {
        let end = self.pos.min(self.chars.len());
        let line = self.chars[..end].iter().filter(|&&c| c == '\n').count() + 1;
        GbnfError::Syntax {
            line,
            message: message.into(),
        }
    }

    /// The id of rule `name`, made (undefined) when first named.
    fn id(&mut self, name: &str) -> usize {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len();
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        self.rules.push(None);
        self.defined.push(false);
        id
    }

    /// A new rule made for a group or a repetition inside rule `parent`.
    fn made(&mut self, parent: &str, alternatives: Vec<Vec<Sym>>) -> usize {
        let id = self.names.len();
        // `_` cannot be in a rule's name: these never clash with one.
        let name = format!("{parent}_{id}");
        self.ids.insert(name.clone(), id);
        self.names.push(name);
        self.rules.push(Some(alternatives));
        self.defined.push(true);
        id
    }

    /// Skips blanks and comments, and line ends when `newline_ok`.
    fn space(&mut self, newline_ok: bool) {
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' => self.pos += 1,
                '#' => {
                    while self.peek().is_some_and(|c| c != '\n' && c != '\r') {
                        self.pos += 1;
                    }
                }
                '\n' | '\r' if newline_ok => self.pos += 1,
                _ => break,
            }
        }
    }

    fn grammar(&mut self) -> Result<(), GbnfError> {
        self.space(true);
        while self.peek().is_some() {
            let name = self.name()?;
            self.space(false);
            if !(self.peek() == Some(':')
                && self.peek_at(1) == Some(':')
                && self.peek_at(2) == Some('='))
            {
                return Err(self.error("expecting ::="));
            }
            self.pos += 3;
            self.space(true);
            let alternatives = self.alternatives(&name, false)?;
            let id = self.id(&name);
            self.rules[id] = Some(alternatives);
            self.defined[id] = true;
            match self.peek() {
                None => {}
                Some('\r') => {
                    self.pos += 1;
                    if self.peek() == Some('\n') {
                        self.pos += 1;
                    }
                }
                Some('\n') => self.pos += 1,
                Some(_) => return Err(self.error("expecting newline or end")),
            }
            self.space(true);
        }
        Ok(())
    }

    fn name(&mut self) -> Result<String, GbnfError> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            self.pos += 1;
        }
        if self.pos == start {
            return Err(self.error("expecting name"));
        }
        Ok(self.chars[start..self.pos].iter().collect())
    }

    fn alternatives(&mut self, rule: &str, nested: bool) -> Result<Vec<Vec<Sym>>, GbnfError> {
        let mut out = vec![self.sequence(rule, nested)?];
        while self.peek() == Some('|') {
            self.pos += 1;
            self.space(true);
            out.push(self.sequence(rule, nested)?);
        }
        Ok(out)
    }

    fn sequence(&mut self, rule: &str, nested: bool) -> Result<Vec<Sym>, GbnfError> {
        let mut out: Vec<Sym> = Vec::new();
        // Where the last element (a whole literal counts as one) starts in `out`.
        let mut last: Option<usize> = None;
        while let Some(c) = self.peek() {
            match c {
                '"' => {
                    self.pos += 1;
                    last = Some(out.len());
                    while self.peek() != Some('"') {
                        if self.peek().is_none() {
                            return Err(self.error("unexpected end of input"));
                        }
                        let c = self.char()?;
                        out.push(Sym::Chars(CharSet::one(c)));
                    }
                    self.pos += 1;
                }
                '[' => {
                    self.pos += 1;
                    let negated = self.peek() == Some('^');
                    if negated {
                        self.pos += 1;
                    }
                    let mut ranges = Vec::new();
                    while self.peek() != Some(']') {
                        if self.peek().is_none() {
                            return Err(self.error("unexpected end of input"));
                        }
                        let lo = self.char()?;
                        let hi = if self.peek() == Some('-') && self.peek_at(1) != Some(']') {
                            self.pos += 1;
                            if self.peek().is_none() {
                                return Err(self.error("unexpected end of input"));
                            }
                            self.char()?
                        } else {
                            lo
                        };
                        ranges.push((lo, hi));
                    }
                    self.pos += 1;
                    last = Some(out.len());
                    out.push(Sym::Chars(CharSet { negated, ranges }));
                }
                c if c.is_ascii_alphanumeric() || c == '-' => {
                    let name = self.name()?;
                    last = Some(out.len());
                    out.push(Sym::Rule(self.id(&name)));
                }
                '(' => {
                    self.pos += 1;
                    self.space(true);
                    let alternatives = self.alternatives(rule, true)?;
                    if self.peek() != Some(')') {
                        return Err(self.error("expecting ')'"));
                    }
                    self.pos += 1;
                    let id = self.made(rule, alternatives);
                    last = Some(out.len());
                    out.push(Sym::Rule(id));
                }
                '.' => {
                    self.pos += 1;
                    last = Some(out.len());
                    out.push(Sym::Chars(CharSet::any()));
                }
                '*' | '+' | '?' => {
                    self.pos += 1;
                    let Some(start) = last else {
                        return Err(self.error("expecting preceding item to */+/?/{"));
                    };
                    let (min, max) = match c {
                        '*' => (0, None),
                        '+' => (1, None),
                        _ => (0, Some(1)),
                    };
                    self.repeat(&mut out, start, min, max, rule);
                }
                '{' => {
                    self.pos += 1;
                    let Some(start) = last else {
                        return Err(self.error("expecting preceding item to */+/?/{"));
                    };
                    self.space(nested);
                    let min = self.int()?;
                    self.space(nested);
                    let max = match self.peek() {
                        Some('}') => Some(min),
                        Some(',') => {
                            self.pos += 1;
                            self.space(nested);
                            let max = if self.peek().is_some_and(|c| c.is_ascii_digit()) {
                                let max = self.int()?;
                                self.space(nested);
                                Some(max)
                            } else {
                                None
                            };
                            if self.peek() != Some('}') {
                                return Err(self.error("expecting '}'"));
                            }
                            max
                        }
                        _ => return Err(self.error("expecting ','")),
                    };
                    self.pos += 1;
                    self.repeat(&mut out, start, min, max, rule);
                }
                _ => break,
            }
            self.space(nested);
        }
        Ok(out)
    }

    fn int(&mut self) -> Result<usize, GbnfError> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        let digits: String = self.chars[start..self.pos].iter().collect();
        digits.parse().map_err(|_| self.error("expecting an int"))
    }

    /// Replaces `out[start..]` (the last element) by `min` to `max` of it.
    fn repeat(
        &mut self,
        out: &mut Vec<Sym>,
        start: usize,
        min: usize,
        max: Option<usize>,
        rule: &str,
    ) {
        let item: Vec<Sym> = out.drain(start..).collect();
        for _ in 0..min {
            out.extend(item.iter().cloned());
        }
        match max {
            None => {
                // r ::= item r |
                let id = self.made(rule, Vec::new());
                let mut again = item;
                again.push(Sym::Rule(id));
                self.rules[id] = Some(vec![again, Vec::new()]);
                out.push(Sym::Rule(id));
            }
            Some(max) => {
                // r1 ::= item |, rk ::= item r(k-1) |
                let mut inner: Option<usize> = None;
                for _ in 0..max.saturating_sub(min) {
                    let mut seq = item.clone();
                    if let Some(inner) = inner {
                        seq.push(Sym::Rule(inner));
                    }
                    inner = Some(self.made(rule, vec![seq, Vec::new()]));
                }
                if let Some(inner) = inner {
                    out.push(Sym::Rule(inner));
                }
            }
        }
    }

    /// One character of a literal or a class, escapes read.
    fn char(&mut self) -> Result<char, GbnfError> {
        let Some(c) = self.peek() else {
            return Err(self.error("unexpected end of input"));
        };
        self.pos += 1;
        if c != '\\' {
            return Ok(c);
        }
        let Some(escape) = self.peek() else {
            return Err(self.error("unexpected end of input"));
        };
        self.pos += 1;
        match escape {
            'x' => self.hex(2),
            'u' => self.hex(4),
            'U' => self.hex(8),
            't' => Ok('\t'),
            'r' => Ok('\r'),
            'n' => Ok('\n'),
            '\\' | '"' | '[' | ']' => Ok(escape),
            other => Err(self.error(format!("unknown escape at \\{other}"))),
        }
    }

    fn hex(&mut self, digits: usize) -> Result<char, GbnfError> {
        let mut value: u32 = 0;
        for _ in 0..digits {
            let Some(d) = self.peek().and_then(|c| c.to_digit(16)) else {
                return Err(self.error(format!("expecting {digits} hex chars")));
            };
            value = value * 16 + d;
            self.pos += 1;
        }
        char::from_u32(value).ok_or_else(|| self.error(format!("not a character: {value:#x}")))
    }
}

#[cfg(test)]
#[path = "gbnf_tests.rs"]
mod tests;
