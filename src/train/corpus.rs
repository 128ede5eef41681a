//! The training text: every `.txt` file under a folder (the set-up step fetches public-domain
//! English into `models/corpus/`), each file one document, split into training and held-out
//! documents by a fixed rule, and turned into one stream of token ids per split with the start
//! token between documents.

use std::path::{Path, PathBuf};

use super::stories::{drill_stories_with_asides, role_stories, stories, DrillExtras, Split};
use crate::error::{Result, VizError};
use crate::tokenize::Tokenizer;

/// Every `HELD_OUT_EVERY`-th document (in path order) is held out for validation.
pub const HELD_OUT_EVERY: usize = 20;

pub struct Corpus {
    pub train: Vec<String>,
    pub held_out: Vec<String>,
}

fn text_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let io = |e: std::io::Error| VizError::Io {
        path: dir.display().to_string(),
        reason: e.to_string(),
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            text_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "txt") {
            out.push(path);
        }
    }
    Ok(())
}

impl Corpus {
    /// Reads every `.txt` file under `dir` (line ends made `\n`, leading and trailing space
    /// trimmed); fails when there is none.
    pub fn read(dir: &Path) -> Result<Self> {
        let mut paths = Vec::new();
        text_files(dir, &mut paths)?;
        paths.sort();
        if paths.is_empty() {
            return Err(VizError::Io {
                path: dir.display().to_string(),
                reason: "holds no .txt files (run `scripts/fetch-corpus.sh`)".into(),
            });
        }
        let mut corpus = Corpus {
            train: vec![],
            held_out: vec![],
        };
        for (i, path) in paths.iter().enumerate() {
            let bytes = std::fs::read(path).map_err(|e| VizError::Io {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            let text = String::from_utf8_lossy(&bytes)
                .replace("\r\n", "\n")
                .trim()
                .to_string();
            if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1 {
                corpus.held_out.push(text)
            } else {
                corpus.train.push(text)
            }
        }
        Ok(corpus)
    }
}

impl Corpus {
    /// Adds `count` generated stories (`stories::stories`, the training side's names and
    /// templates, seed `STORIES_SEED`) to the training documents, one document a story; the
    /// held-out documents stay real text.
    pub fn add_stories(&mut self, count: usize) {
        self.train
            .extend(stories(STORIES_SEED, count, Split::Train));
    }
}

impl Corpus {
    /// Adds `count` role stories (`stories::role_stories`, seed `ROLE_STORIES_SEED`) to the
    /// training documents: the text of a second phase of training.
    pub fn add_role_stories(&mut self, count: usize) {
        self.train.extend(role_stories(ROLE_STORIES_SEED, count));
    }
}

/// The seed of `Corpus::add_role_stories`' stories.
pub const ROLE_STORIES_SEED: u64 = 2023;

/// The seed of `drill_text`'s stories.
pub const DRILL_STORIES_SEED: u64 = 2024;

/// The drill text (`Mixture::drills`): `count` drill stories (`stories::drill_stories`, with
/// `extras`), whose pairs may come right after any word of the `documents` (each distinct word
/// of letters only, in the order first met).
pub fn drill_text(count: usize, documents: &[String], extras: DrillExtras) -> Vec<String> {
    let asides = if extras.corpus_asides {
        aside_sentences(documents)
    } else {
        Vec::new()
    };
    let mut seen = std::collections::HashSet::new();
    let words: Vec<String> = documents
        .iter()
        .flat_map(|d| d.split_whitespace())
        .filter(|w| w.len() <= 12 && w.chars().all(|c| c.is_ascii_alphabetic()))
        .filter(|w| seen.insert(w.to_string()))
        .map(str::to_string)
        .collect();
    drill_stories_with_asides(DRILL_STORIES_SEED, count, &words, &asides, extras)
}

/// At most this many sentences for `aside_sentences`.
const ASIDES: usize = 20_000;

/// The words an aside may start with: common ones, never a name.
const ASIDE_OPENINGS: &[&str] = &[
    "The", "It", "They", "There", "This", "That", "A", "But", "Then", "All", "Some", "Its",
    "Their", "Now", "In", "On", "At", "One",
];

/// Sentences of the documents a drill may put between its pair and its action
/// (`DrillExtras::corpus_asides`), the first `ASIDES` distinct ones in the order met: 3 to 14
/// words of letters (a comma after a word allowed), the first one of `ASIDE_OPENINGS` and no
/// capital after it (no name that would be another name said once), none with a word of the
/// held-out templates' own ("while", "working", "day").
pub fn aside_sentences(documents: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    documents
        .iter()
        .flat_map(|d| d.split_inclusive(['.', '!', '?']))
        .map(str::trim)
        .filter(|s| {
            let Some(body) = s.strip_suffix(['.', '!', '?']) else {
                return false;
            };
            let words: Vec<&str> = body.split(' ').collect();
            (3..=14).contains(&words.len())
                && words.iter().enumerate().all(|(i, w)| {
                    let w = w.strip_suffix(',').unwrap_or(w);
                    let mut chars = w.chars();
                    let opening = i > 0 || ASIDE_OPENINGS.contains(&w);
                    opening
                        && chars
                            .next()
                            .is_some_and(|c| c.is_ascii_lowercase() || i == 0)
                        && chars.all(|c| c.is_ascii_lowercase())
                        && !matches!(w.to_ascii_lowercase().as_str(), "while" | "working" | "day")
                })
        })
        .filter(|s| seen.insert(s.to_string()))
        .take(ASIDES)
        .map(str::to_string)
        .collect()
}

/// The seed of the stories `Corpus::add_stories` adds: the vocabulary and the model learn
/// from the same ones.
pub const STORIES_SEED: u64 = 2022;

/// The documents as one id stream: `bos` before each document.
pub fn token_stream(documents: &[String], tokenizer: &dyn Tokenizer, bos: u32) -> Result<Vec<u32>> {
    let mut stream = Vec::new();
    for doc in documents.iter().filter(|d| !d.is_empty()) {
        // encode() puts BOS first; the whole document is kept.
        let encoding = tokenizer.encode(doc, usize::MAX)?;
        debug_assert_eq!(encoding.tokens.first().map(|t| t.id), Some(bos));
        stream.extend(encoding.tokens.iter().map(|t| t.id));
    }
    Ok(stream)
}
