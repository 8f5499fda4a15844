//! The documents of one server: what each should contain, what was sent (each
//! version with its text), and the latest answer the freshness rules accept.
//!
//! Nothing here talks to the server: syncing returns the [`Outgoing`] messages,
//! which the caller sends in order while it still holds the lock.
//!
//! **Freshness.** An answer belongs to a version; a caller waiting for version
//! `v` takes only an answer for `v` or later. A publish with a version older than
//! the current answer, or naming a version never sent, is dropped. A publish
//! without a version is given the latest version the main loop had written when
//! the publish arrived (the weaker rule: a publish the server made before it read
//! that change, but that we read after writing it, is taken for it).
//!
//! **Other documents.** Every answer taken gets the next number of a counter;
//! [`Baselines`] hold the counter and the other documents' answers when a change
//! was sent, and [`Docs::since`] gives a document's answer taken after that, for
//! the same version: what the change did to it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use lsp_types::Url;
use toolbelt_core::diagnostics::Diagnostic;

use super::convert::convert;

/// Versions kept with their text while no answer covers them.
const MAX_SENT_VERSIONS: usize = 8;

/// A message for the server, produced by a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outgoing {
    /// `textDocument/didOpen`.
    Open {
        /// The document.
        uri: Url,
        /// Its language.
        language_id: String,
        /// The version of `text`.
        version: i32,
        /// The content.
        text: Arc<str>,
    },
    /// `textDocument/didChange` with the whole content.
    Change {
        /// The document.
        uri: Url,
        /// The version of `text`.
        version: i32,
        /// The content.
        text: Arc<str>,
    },
    /// `textDocument/didSave`.
    Save {
        /// The document.
        uri: Url,
        /// The content, when the server asked for it.
        text: Option<Arc<str>>,
    },
    /// `textDocument/didClose`.
    Close {
        /// The document.
        uri: Url,
    },
}

/// An answer: the problems of one version.
#[derive(Debug, Clone)]
pub(crate) struct Answered {
    /// The version they belong to.
    pub(crate) version: i32,
    /// That version's text.
    pub(crate) text: Arc<str>,
    /// The problems, their paths empty.
    pub(crate) diagnostics: Vec<Diagnostic>,
}

/// The other open documents' answers when a change was sent.
#[derive(Debug, Clone)]
pub(crate) struct Baselines {
    /// The answer counter then: later answers came after the change was sent.
    pub(crate) mark: u64,
    /// Each document answered for its latest version, most recently used first.
    pub(crate) docs: Vec<Baseline>,
}

/// One document's answer when a change of another was sent.
#[derive(Debug, Clone)]
pub(crate) struct Baseline {
    /// The document.
    pub(crate) uri: Url,
    /// Its answer, for the version it held.
    pub(crate) answer: Answered,
}

/// One version sent and not yet answered.
#[derive(Debug)]
struct Sent {
    version: i32,
    text: Arc<str>,
}

/// One document.
#[derive(Debug)]
struct Doc {
    language_id: String,
    /// The content it should have (sent when open).
    wanted: Arc<str>,
    open: bool,
    /// The latest version sent.
    version: i32,
    /// The text of the latest version sent (what the server holds).
    current: Option<Arc<str>>,
    /// Versions sent after the answer, oldest first.
    sent: VecDeque<Sent>,
    /// The latest version the main loop has written.
    written: Option<i32>,
    answer: Option<Answered>,
    /// The answer counter when `answer` was taken.
    answer_seq: u64,
    /// Since when the server owes an answer for the latest version.
    waiting_since: Option<Instant>,
    /// LRU clock of the last use.
    used: u64,
}

/// What the server should save after a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SaveMode {
    /// Send no `didSave`.
    No,
    /// Send `didSave` without the text.
    Plain,
    /// Send `didSave` with the text.
    WithText,
}

/// The documents of one server, at most `max` of them (least recently used
/// ones are closed).
#[derive(Debug)]
pub(crate) struct Docs {
    map: HashMap<Url, Doc>,
    tick: u64,
    max: usize,
    /// Answers taken so far (the counter of [`Baselines::mark`]).
    seq: u64,
    /// Whether the server was seen publishing again for a version it had
    /// answered (as servers do for documents another change affects).
    republishes: bool,
}

impl Docs {
    /// An empty table holding at most `max` documents (at least one).
    pub(crate) fn new(max: usize) -> Docs {
        Docs {
            map: HashMap::new(),
            tick: 0,
            max: max.max(1),
            seq: 0,
            republishes: false,
        }
    }

    /// How many documents the server has open.
    #[cfg(test)]
    pub(crate) fn open_count(&self) -> usize {
        self.map.values().filter(|d| d.open).count()
    }

    /// Records that `uri` should contain `text` once the server is ready.
    pub(crate) fn want(
        &mut self,
        uri: &Url,
        language_id: &str,
        text: &str,
        out: &mut Vec<Outgoing>,
    ) {
        let used = self.next_tick();
        if !self.map.contains_key(uri) {
            self.make_room(out);
        }
        let doc = self.map.entry(uri.clone()).or_insert_with(|| Doc {
            language_id: language_id.to_string(),
            wanted: Arc::from(""),
            open: false,
            version: 0,
            current: None,
            sent: VecDeque::new(),
            written: None,
            answer: None,
            answer_seq: 0,
            waiting_since: None,
            used,
        });
        doc.used = used;
        if *doc.wanted != *text {
            doc.wanted = Arc::from(text);
        }
    }

    /// Makes the server's copy of `uri` contain `text` (opening it, or sending a
    /// change when it differs) and returns the version holding it. `save` adds a
    /// `didSave` after a change.
    pub(crate) fn sync(
        &mut self,
        uri: &Url,
        language_id: &str,
        text: &str,
        save: SaveMode,
        out: &mut Vec<Outgoing>,
    ) -> i32 {
        self.want(uri, language_id, text, out);
        self.flush(uri, save, out).unwrap_or(0)
    }

    /// Opens every wanted document not open yet (the server just got ready).
    pub(crate) fn open_wanted(&mut self, out: &mut Vec<Outgoing>) {
        let uris: Vec<Url> = self
            .map
            .iter()
            .filter(|(_, d)| !d.open)
            .map(|(u, _)| u.clone())
            .collect();
        for uri in uris {
            self.flush(&uri, SaveMode::No, out);
        }
    }

    /// Sends what `uri` needs to hold its wanted text; its version.
    fn flush(&mut self, uri: &Url, save: SaveMode, out: &mut Vec<Outgoing>) -> Option<i32> {
        let doc = self.map.get_mut(uri)?;
        if doc.open && doc.current.as_ref().is_some_and(|t| **t == *doc.wanted) {
            return Some(doc.version);
        }
        let text = doc.wanted.clone();
        doc.current = Some(text.clone());
        if doc.open {
            doc.version += 1;
            out.push(Outgoing::Change {
                uri: uri.clone(),
                version: doc.version,
                text: text.clone(),
            });
        } else {
            doc.open = true;
            // Versions stay increasing across a close and a reopen.
            doc.version += 1;
            out.push(Outgoing::Open {
                uri: uri.clone(),
                language_id: doc.language_id.clone(),
                version: doc.version,
                text: text.clone(),
            });
        }
        if doc.sent.len() == MAX_SENT_VERSIONS {
            doc.sent.pop_front();
        }
        doc.sent.push_back(Sent {
            version: doc.version,
            text: text.clone(),
        });
        doc.waiting_since.get_or_insert_with(Instant::now);
        match save {
            SaveMode::No => {}
            SaveMode::Plain => out.push(Outgoing::Save {
                uri: uri.clone(),
                text: None,
            }),
            SaveMode::WithText => out.push(Outgoing::Save {
                uri: uri.clone(),
                text: Some(text),
            }),
        }
        Some(doc.version)
    }

    /// Closes (or forgets) least recently used documents until one more fits.
    fn make_room(&mut self, out: &mut Vec<Outgoing>) {
        while self.map.len() >= self.max {
            let Some(oldest) = self
                .map
                .iter()
                .min_by_key(|(_, d)| d.used)
                .map(|(u, _)| u.clone())
            else {
                return;
            };
            if let Some(doc) = self.map.remove(&oldest)
                && doc.open
            {
                out.push(Outgoing::Close { uri: oldest });
            }
        }
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// The main loop has written version `version` of `uri`.
    pub(crate) fn written(&mut self, uri: &Url, version: i32) {
        if let Some(doc) = self.map.get_mut(uri) {
            doc.written = Some(doc.written.map_or(version, |w| w.max(version)));
        }
    }

    /// A `publishDiagnostics`; true when it became the answer.
    pub(crate) fn published(
        &mut self,
        uri: &Url,
        version: Option<i32>,
        items: &[lsp_types::Diagnostic],
        program: &str,
    ) -> bool {
        let Some(key) = self.key_of(uri) else {
            return false;
        };
        let Some(doc) = self.map.get_mut(&key) else {
            return false;
        };
        let Some(version) = version.or(doc.written) else {
            return false;
        };
        let again = doc.answer.as_ref().is_some_and(|a| a.version == version);
        if !doc.accept(version, items, program) {
            return false;
        }
        self.seq += 1;
        doc.answer_seq = self.seq;
        self.republishes |= again;
        true
    }

    /// The answer of a pull request sent for `version`; taken only while that
    /// version is still the latest (a later change may already be in it).
    pub(crate) fn pulled(
        &mut self,
        uri: &Url,
        version: i32,
        items: &[lsp_types::Diagnostic],
        program: &str,
    ) -> bool {
        match self.map.get_mut(uri) {
            Some(doc) if doc.open && doc.version == version => {
                if !doc.accept(version, items, program) {
                    return false;
                }
                self.seq += 1;
                doc.answer_seq = self.seq;
                true
            }
            _ => false,
        }
    }

    /// The answers of the open documents other than `changed` that are
    /// answered for the version they hold, most recently used first.
    pub(crate) fn baselines(&self, changed: &Url) -> Baselines {
        let mut docs: Vec<(u64, Baseline)> = self
            .map
            .iter()
            .filter(|(uri, d)| *uri != changed && d.open && d.current.is_some())
            .filter_map(|(uri, d)| {
                let answer = d.answer.as_ref().filter(|a| a.version == d.version)?;
                let baseline = Baseline {
                    uri: uri.clone(),
                    answer: answer.clone(),
                };
                Some((d.used, baseline))
            })
            .collect();
        docs.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
        Baselines {
            mark: self.seq,
            docs: docs.into_iter().map(|(_, b)| b).collect(),
        }
    }

    /// The answer of `uri` taken after `mark` for `version`, while the
    /// document is open and still holds that version.
    pub(crate) fn since(&self, uri: &Url, version: i32, mark: u64) -> Option<Answered> {
        let doc = self
            .map
            .get(uri)
            .filter(|d| d.open && d.version == version)?;
        doc.answer
            .as_ref()
            .filter(|a| a.version == version && doc.answer_seq > mark)
            .cloned()
    }

    /// Whether nothing more is to be waited for `uri` after `mark`: answered
    /// since, or no longer open with `version`.
    pub(crate) fn settled(&self, uri: &Url, version: i32, mark: u64) -> bool {
        match self.map.get(uri) {
            Some(doc) if doc.open && doc.version == version => doc.answer_seq > mark,
            _ => true,
        }
    }

    /// Whether the server publishes again for versions it has answered.
    pub(crate) fn republishes(&self) -> bool {
        self.republishes
    }

    /// Our key for a URI the server sent (it may spell the path differently).
    fn key_of(&self, uri: &Url) -> Option<Url> {
        if self.map.contains_key(uri) {
            return Some(uri.clone());
        }
        let path = uri.to_file_path().ok()?;
        self.map
            .keys()
            .find(|k| k.to_file_path().ok().as_deref() == Some(path.as_path()))
            .cloned()
    }

    /// The answer for `version` of `uri` or a later one.
    pub(crate) fn answer(&self, uri: &Url, version: i32) -> Option<Answered> {
        let doc = self.map.get(uri)?;
        doc.answer
            .as_ref()
            .filter(|a| a.version >= version)
            .cloned()
    }

    /// The latest answer of `uri` when it was given for exactly `text`.
    pub(crate) fn answer_for_text(&self, uri: &Url, text: &str) -> Option<Answered> {
        let doc = self.map.get(uri)?;
        doc.answer.as_ref().filter(|a| *a.text == *text).cloned()
    }

    /// Since when the server owes `uri` an answer.
    pub(crate) fn waiting_since(&self, uri: &Url) -> Option<Instant> {
        self.map.get(uri)?.waiting_since
    }

    /// Forgets what was sent (the server is gone): documents are reopened with
    /// their wanted text by the next server.
    pub(crate) fn reset(&mut self) {
        for doc in self.map.values_mut() {
            doc.open = false;
            doc.current = None;
            doc.sent.clear();
            doc.written = None;
            doc.answer = None;
            doc.answer_seq = 0;
            doc.waiting_since = None;
        }
    }
}

impl Doc {
    /// Takes `items` as the answer for `version` when the rules allow.
    fn accept(&mut self, version: i32, items: &[lsp_types::Diagnostic], program: &str) -> bool {
        if version > self.version || self.answer.as_ref().is_some_and(|a| a.version > version) {
            return false;
        }
        let text = match self.sent.iter().find(|s| s.version == version) {
            Some(sent) => sent.text.clone(),
            // A new publish for the answered version (a dependency changed).
            None => match &self.answer {
                Some(a) if a.version == version => a.text.clone(),
                _ => return false,
            },
        };
        let diagnostics = convert(items, &text, program);
        self.sent.retain(|s| s.version > version);
        if version == self.version {
            self.waiting_since = None;
        }
        self.answer = Some(Answered {
            version,
            text,
            diagnostics,
        });
        true
    }
}

#[cfg(test)]
#[path = "docs_tests.rs"]
mod tests;
