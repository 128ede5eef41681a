//! WordPiece as a `tokenizer.json` describes it: added tokens matched first on the raw text,
//! then BERT normalisation, pre-tokenisation, greedy longest-match sub-words with a `##`
//! prefix, and the post-processor's template (`[CLS] ... [SEP]`).

use std::collections::HashMap;

use serde_json::Value;

use super::bert_normalizer::{pre_tokenize, BertNormalizer};
use super::{Encoding, Tokenizer};
use super::{TokenInfo, Truncation};
use crate::error::{Result, VizError};

#[derive(Debug, Clone)]
struct AddedToken {
    content: String,
    id: u32,
    special: bool,
}

#[derive(Debug, Clone)]
pub struct WordPiece {
    vocab: HashMap<String, u32>,
    by_id: Vec<String>,
    unk: u32,
    prefix: String,
    /// The longest vocabulary entry in bytes: no longer piece can match, so the search for
    /// each piece starts there instead of at the end of the word.
    longest_entry: usize,
    max_chars_per_word: usize,
    normalizer: BertNormalizer,
    added: Vec<AddedToken>,
    /// Special tokens placed before and after the sentence by the template.
    before: Vec<u32>,
    after: Vec<u32>,
}

fn bad(msg: impl Into<String>) -> VizError {
    VizError::BadTokenizer(msg.into())
}

impl WordPiece {
    /// Builds the tokenizer from the text of a Hugging Face `tokenizer.json`.
    pub fn from_tokenizer_json(json: &str) -> Result<Self> {
        let root: Value = serde_json::from_str(json).map_err(|e| bad(format!("not JSON: {e}")))?;
        let model = &root["model"];
        if model["type"] != "WordPiece" {
            return Err(bad(format!(
                "expected a WordPiece model, found {}",
                model["type"]
            )));
        }
        let vocab_obj = model["vocab"]
            .as_object()
            .ok_or_else(|| bad("model.vocab is missing"))?;
        let mut vocab: HashMap<String, u32> = HashMap::with_capacity(vocab_obj.len());
        let mut by_id = vec![String::new(); vocab_obj.len()];
        for (token, id) in vocab_obj {
            let id = id
                .as_u64()
                .ok_or_else(|| bad(format!("id of `{token}` is not an integer")))?
                as usize;
            if id >= by_id.len() {
                return Err(bad(format!(
                    "id {id} of `{token}` is outside the vocabulary of {}",
                    by_id.len()
                )));
            }
            by_id[id] = token.clone();
            vocab.insert(token.clone(), id as u32);
        }
        let unk_token = model["unk_token"].as_str().unwrap_or("[UNK]");
        let unk = *vocab.get(unk_token).ok_or_else(|| {
            bad(format!(
                "unknown token `{unk_token}` is not in the vocabulary"
            ))
        })?;
        let prefix = model["continuing_subword_prefix"]
            .as_str()
            .unwrap_or("##")
            .to_string();
        let max_chars_per_word = model["max_input_chars_per_word"].as_u64().unwrap_or(100) as usize;

        let n = &root["normalizer"];
        if n["type"] != "BertNormalizer" {
            return Err(bad(format!(
                "expected a BertNormalizer, found {}",
                n["type"]
            )));
        }
        let lowercase = n["lowercase"].as_bool().unwrap_or(true);
        let normalizer = BertNormalizer {
            clean_text: n["clean_text"].as_bool().unwrap_or(true),
            handle_chinese_chars: n["handle_chinese_chars"].as_bool().unwrap_or(true),
            // `null` means "follow lowercase", as in BERT's original code.
            strip_accents: n["strip_accents"].as_bool().unwrap_or(lowercase),
            lowercase,
        };
        if root["pre_tokenizer"]["type"] != "BertPreTokenizer" {
            return Err(bad(format!(
                "expected a BertPreTokenizer, found {}",
                root["pre_tokenizer"]["type"]
            )));
        }

        let mut added = Vec::new();
        for t in root["added_tokens"].as_array().into_iter().flatten() {
            let content = t["content"]
                .as_str()
                .ok_or_else(|| bad("an added token has no content"))?;
            let id = t["id"]
                .as_u64()
                .ok_or_else(|| bad("an added token has no id"))?;
            let id = u32::try_from(id)
                .ok()
                .filter(|&id| (id as usize) < by_id.len());
            let id = id.ok_or_else(|| {
                bad(format!(
                    "the id of added token `{content}` is outside the vocabulary"
                ))
            })?;
            if content.is_empty() {
                return Err(bad("an added token is empty"));
            }
            added.push(AddedToken {
                content: content.into(),
                id,
                special: t["special"].as_bool().unwrap_or(false),
            });
        }
        // Longest first, so that a longer added token wins over a prefix of it.
        added.sort_by_key(|a| std::cmp::Reverse(a.content.len()));

        let (mut before, mut after, mut seen_sequence) = (Vec::new(), Vec::new(), false);
        let single = root["post_processor"]["single"]
            .as_array()
            .ok_or_else(|| bad("post_processor.single is missing"))?;
        let specials = &root["post_processor"]["special_tokens"];
        for piece in single {
            if piece.get("Sequence").is_some() {
                seen_sequence = true;
            } else if let Some(name) = piece["SpecialToken"]["id"].as_str() {
                let ids = specials[name]["ids"]
                    .as_array()
                    .ok_or_else(|| bad(format!("special token `{name}` has no ids")))?;
                let ids = ids.iter().map(|v| {
                    v.as_u64()
                        .and_then(|x| u32::try_from(x).ok())
                        .ok_or_else(|| bad("special id is not a 32-bit integer"))
                });
                let ids: Vec<u32> = ids.collect::<Result<_>>()?;
                if seen_sequence {
                    after.extend(ids)
                } else {
                    before.extend(ids)
                }
            }
        }
        for &id in before.iter().chain(&after) {
            if id as usize >= by_id.len() {
                return Err(bad(format!("special id {id} is outside the vocabulary")));
            }
        }
        let longest_entry = vocab.keys().map(String::len).max().unwrap_or(0);
        Ok(Self {
            vocab,
            by_id,
            unk,
            prefix,
            longest_entry,
            max_chars_per_word,
            normalizer,
            added,
            before,
            after,
        })
    }

    /// Greedy longest-match sub-words of one word; the whole word becomes `[UNK]` if any
    /// part of it is not in the vocabulary. `key` is scratch space for `##`-prefixed lookups.
    fn word_pieces(&self, word: &str, key: &mut String, out: &mut Vec<u32>) {
        if word.chars().count() > self.max_chars_per_word {
            out.push(self.unk);
            return;
        }
        let first = out.len();
        let mut start = 0;
        while start < word.len() {
            let prefix = if start > 0 { self.prefix.as_str() } else { "" };
            // Candidate ends on character boundaries from the longest piece that could be an
            // entry down to one character: the same order as trying every end of the word.
            let mut window = word
                .len()
                .min(start + self.longest_entry.saturating_sub(prefix.len()));
            while !word.is_char_boundary(window) {
                window -= 1;
            }
            let found = word
                .get(start..window)
                .unwrap_or("")
                .char_indices()
                .rev()
                .find_map(|(i, c)| {
                    let end = start + i + c.len_utf8();
                    key.clear();
                    key.push_str(prefix);
                    key.push_str(&word[start..end]);
                    self.vocab.get(key.as_str()).map(|&id| (id, end))
                });
            match found {
                Some((id, end)) => {
                    out.push(id);
                    start = end;
                }
                None => {
                    out.truncate(first);
                    out.push(self.unk);
                    return;
                }
            }
        }
    }

    /// Word ids of text without added tokens into `sink`.
    fn encode_plain(&self, text: &str, sink: &mut IdSink) {
        let mut key = String::new();
        let mut pieces = Vec::new();
        for chunk in whitespace_chunks(text, CHUNK_BYTES) {
            for word in pre_tokenize(&self.normalizer.normalize(chunk)) {
                pieces.clear();
                self.word_pieces(&word, &mut key, &mut pieces);
                sink.extend(&pieces);
            }
        }
    }

    /// Ids of the sentence without the template's special tokens, into `sink`: added tokens
    /// are matched on the raw text (the earliest first; the longest at equal positions), the
    /// text between them is normalised and split into word pieces.
    fn encode_into(&self, text: &str, sink: &mut IdSink) {
        // Where each added token next occurs at or after `offset` (None: nowhere), so that
        // each is searched for once per occurrence rather than once per added token found.
        let mut next: Vec<Option<usize>> =
            self.added.iter().map(|t| text.find(&t.content)).collect();
        let mut offset = 0;
        while offset < text.len() {
            for (t, pos) in self.added.iter().zip(next.iter_mut()) {
                if pos.is_some_and(|p| p < offset) {
                    *pos = text[offset..].find(&t.content).map(|p| offset + p);
                }
            }
            // Longest first in `added`, so the strict `<` keeps the longest at equal positions.
            let mut best: Option<(usize, &AddedToken)> = None;
            for (t, pos) in self.added.iter().zip(&next) {
                if let Some(p) = *pos {
                    if best.is_none_or(|(b, _)| p < b) {
                        best = Some((p, t));
                    }
                }
            }
            match best {
                Some((pos, t)) => {
                    self.encode_plain(&text[offset..pos], sink);
                    sink.extend(&[t.id]);
                    offset = pos + t.content.len();
                }
                None => {
                    self.encode_plain(&text[offset..], sink);
                    break;
                }
            }
        }
    }

    /// Every id of the sentence without the template's special tokens, however long.
    pub fn encode_words(&self, text: &str) -> Vec<u32> {
        self.encode_words_counted(text, usize::MAX).0
    }

    /// The first `keep` ids of `encode_words(text)`, and how many there are in all: the ids
    /// after the first `keep` are only counted, never stored.
    pub fn encode_words_counted(&self, text: &str, keep: usize) -> (Vec<u32>, usize) {
        let mut sink = IdSink {
            ids: Vec::new(),
            keep,
            seen: 0,
        };
        self.encode_into(text, &mut sink);
        (sink.ids, sink.seen)
    }

    fn is_special(&self, id: u32) -> bool {
        self.added.iter().any(|t| t.id == id && t.special)
    }
}

/// Where the ids go: the first `keep` are stored, all are counted.
struct IdSink {
    ids: Vec<u32>,
    keep: usize,
    seen: usize,
}

impl IdSink {
    fn extend(&mut self, ids: &[u32]) {
        let room = self.keep - self.ids.len();
        self.ids.extend(ids.iter().take(room));
        self.seen += ids.len();
    }
}

/// How much raw text is normalised at a time.
const CHUNK_BYTES: usize = 4096;

/// Splits text into pieces of about `size` bytes, cutting only just before an ASCII space,
/// tab, newline or carriage return. Those stay whitespace through BERT's normalisation (other
/// whitespace such as U+000B is dropped as a control character, joining its neighbours), and
/// words never span whitespace, so tokenizing the pieces one by one gives the same tokens as
/// the whole text, with the normalised copy of only one piece in memory at a time. A piece
/// with no such whitespace is as long as it needs to be.
fn whitespace_chunks(text: &str, size: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest
            .char_indices()
            .skip_while(|&(i, _)| i < size)
            .find(|&(_, c)| matches!(c, ' ' | '\t' | '\n' | '\r'))
            .map_or(rest.len(), |(i, _)| i);
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        Some(piece)
    })
}

impl Tokenizer for WordPiece {
    fn kind(&self) -> super::TokenizerKind {
        super::TokenizerKind::WordPiece
    }

    fn encode(&self, text: &str, max_tokens: usize) -> Result<Encoding> {
        if text.trim().is_empty() {
            return Err(VizError::EmptyText);
        }
        let reserved = self.before.len() + self.after.len();
        let room = max_tokens.saturating_sub(reserved);
        // Ids past the context are counted (for the page's "your text is N tokens long"), not kept.
        let (words, total) = self.encode_words_counted(text, room);
        if total == 0 {
            return Err(VizError::NoTokens);
        }
        let truncated = (total > room).then_some(Truncation {
            original_tokens: total + reserved,
            kept_tokens: max_tokens,
        });
        let ids = self
            .before
            .iter()
            .chain(words.iter())
            .chain(self.after.iter());
        let tokens = ids
            .map(|&id| TokenInfo {
                id,
                text: self.by_id[id as usize].clone(),
                special: self.is_special(id),
            })
            .collect();
        Ok(Encoding { tokens, truncated })
    }

    fn vocab_size(&self) -> usize {
        self.by_id.len()
    }

    fn token_text(&self, id: u32) -> Option<&str> {
        self.by_id.get(id as usize).map(String::as_str)
    }
}
