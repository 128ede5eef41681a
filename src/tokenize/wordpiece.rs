//! WordPiece as a `tokenizer.json` describes it: added tokens matched first on the raw text,
//! then BERT normalisation, pre-tokenisation, greedy longest-match sub-words with a `##`
//! prefix, and the post-processor's template (`[CLS] ... [SEP]`).

use std::collections::HashMap;

use serde_json::Value;

use super::bert_normalizer::{pre_tokenize, BertNormalizer};
use super::{Encoding, Tokenizer};
use crate::error::{Result, VizError};
use crate::trace::{TokenInfo, Truncation};

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
            return Err(bad(format!("expected a WordPiece model, found {}", model["type"])));
        }
        let vocab_obj = model["vocab"].as_object().ok_or_else(|| bad("model.vocab is missing"))?;
        let mut vocab = HashMap::with_capacity(vocab_obj.len());
        let mut by_id = vec![String::new(); vocab_obj.len()];
        for (token, id) in vocab_obj {
            let id = id.as_u64().ok_or_else(|| bad(format!("id of `{token}` is not an integer")))? as usize;
            if id >= by_id.len() {
                return Err(bad(format!("id {id} of `{token}` is outside the vocabulary of {}", by_id.len())));
            }
            by_id[id] = token.clone();
            vocab.insert(token.clone(), id as u32);
        }
        let unk_token = model["unk_token"].as_str().unwrap_or("[UNK]");
        let unk = *vocab.get(unk_token).ok_or_else(|| bad(format!("unknown token `{unk_token}` is not in the vocabulary")))?;
        let prefix = model["continuing_subword_prefix"].as_str().unwrap_or("##").to_string();
        let max_chars_per_word = model["max_input_chars_per_word"].as_u64().unwrap_or(100) as usize;

        let n = &root["normalizer"];
        if n["type"] != "BertNormalizer" {
            return Err(bad(format!("expected a BertNormalizer, found {}", n["type"])));
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
            return Err(bad(format!("expected a BertPreTokenizer, found {}", root["pre_tokenizer"]["type"])));
        }

        let mut added = Vec::new();
        for t in root["added_tokens"].as_array().into_iter().flatten() {
            let content = t["content"].as_str().ok_or_else(|| bad("an added token has no content"))?;
            let id = t["id"].as_u64().ok_or_else(|| bad("an added token has no id"))? as u32;
            added.push(AddedToken { content: content.into(), id, special: t["special"].as_bool().unwrap_or(false) });
        }
        // Longest first, so that a longer added token wins over a prefix of it.
        added.sort_by(|a, b| b.content.len().cmp(&a.content.len()));

        let (mut before, mut after, mut seen_sequence) = (Vec::new(), Vec::new(), false);
        let single = root["post_processor"]["single"].as_array().ok_or_else(|| bad("post_processor.single is missing"))?;
        let specials = &root["post_processor"]["special_tokens"];
        for piece in single {
            if piece.get("Sequence").is_some() {
                seen_sequence = true;
            } else if let Some(name) = piece["SpecialToken"]["id"].as_str() {
                let ids = specials[name]["ids"].as_array().ok_or_else(|| bad(format!("special token `{name}` has no ids")))?;
                let ids = ids.iter().map(|v| v.as_u64().map(|x| x as u32).ok_or_else(|| bad("special id is not an integer")));
                let ids: Vec<u32> = ids.collect::<Result<_>>()?;
                if seen_sequence { after.extend(ids) } else { before.extend(ids) }
            }
        }
        for &id in before.iter().chain(&after) {
            if id as usize >= by_id.len() {
                return Err(bad(format!("special id {id} is outside the vocabulary")));
            }
        }
        Ok(Self { vocab, by_id, unk, prefix, max_chars_per_word, normalizer, added, before, after })
    }

    /// Greedy longest-match sub-words of one word; the whole word becomes `[UNK]` if any
    /// part of it is not in the vocabulary.
    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() > self.max_chars_per_word {
            out.push(self.unk);
            return;
        }
        let mut pieces = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while start < end {
                let mut piece: String = chars[start..end].iter().collect();
                if start > 0 {
                    piece.insert_str(0, &self.prefix);
                }
                if let Some(&id) = self.vocab.get(&piece) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => pieces.push(id),
                None => {
                    out.push(self.unk);
                    return;
                }
            }
            start = end;
        }
        out.extend(pieces);
    }

    fn encode_plain(&self, text: &str, out: &mut Vec<u32>) {
        for word in pre_tokenize(&self.normalizer.normalize(text)) {
            self.word_pieces(&word, out);
        }
    }

    /// Ids of the sentence without the template's special tokens.
    pub fn encode_words(&self, text: &str) -> Vec<u32> {
        let mut ids = Vec::new();
        let mut rest = text;
        'outer: while !rest.is_empty() {
            // Find the earliest added token; the longest wins at equal positions.
            let mut best: Option<(usize, &AddedToken)> = None;
            for t in &self.added {
                if let Some(pos) = rest.find(&t.content) {
                    if best.is_none_or(|(p, _)| pos < p) {
                        best = Some((pos, t));
                    }
                }
            }
            match best {
                Some((pos, t)) => {
                    self.encode_plain(&rest[..pos], &mut ids);
                    ids.push(t.id);
                    rest = &rest[pos + t.content.len()..];
                }
                None => {
                    self.encode_plain(rest, &mut ids);
                    break 'outer;
                }
            }
        }
        ids
    }

    fn is_special(&self, id: u32) -> bool {
        self.added.iter().any(|t| t.id == id && t.special)
    }
}

impl Tokenizer for WordPiece {
    fn encode(&self, text: &str, max_tokens: usize) -> Result<Encoding> {
        if text.trim().is_empty() {
            return Err(VizError::EmptyText);
        }
        let words = self.encode_words(text);
        if words.is_empty() {
            return Err(VizError::NoTokens);
        }
        let reserved = self.before.len() + self.after.len();
        let room = max_tokens.saturating_sub(reserved);
        let original = words.len() + reserved;
        let truncated = (words.len() > room).then_some(Truncation { original_tokens: original, kept_tokens: max_tokens });
        let ids = self.before.iter().chain(words.iter().take(room)).chain(self.after.iter());
        let tokens = ids
            .map(|&id| TokenInfo { id, text: self.by_id[id as usize].clone(), special: self.is_special(id) })
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
