//! GPT-2-style byte-level BPE, as SmolLM2 (and GPT-2) tokenize: the text's UTF-8 bytes, each
//! written as one printable character (GPT-2's byte-to-unicode table, where a space is `Ġ`),
//! are cut into pieces by a pre-tokenizer and each piece is merged pair by pair, always the
//! pair with the lowest merge rank first, until no listed merge applies.
//!
//! Built from plain `tokens` and `merges` lists (a GGUF file's `tokenizer.ggml.tokens` and
//! `tokenizer.ggml.merges`, or a `tokenizer.json`'s vocabulary and merges), so any reader can
//! feed it. Matches Hugging Face `tokenizers` configured as the model's `tokenizer.json` is
//! (`tests/engine/bpe.rs` checks the ids).

use std::collections::HashMap;

use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};

use super::{Encoding, Tokenizer};
use super::{TokenInfo, Truncation};
use crate::error::{Result, VizError};

/// How text is cut into pieces before merging; named as llama.cpp names them in a GGUF file's
/// `tokenizer.ggml.pre`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreTokenizer {
    /// GPT-2's pattern: contractions, letters, numbers, other symbols (each with an optional
    /// leading space), and whitespace runs.
    Gpt2,
    /// Every digit on its own first, then GPT-2's pattern on the text between the digits
    /// (SmolLM2's `Digits(individual_digits)` + `ByteLevel` in its tokenizer.json; llama.cpp's
    /// "smollm", which shares the rule with "starcoder").
    DigitsThenGpt2,
}

impl PreTokenizer {
    /// The pre-tokenizer that a GGUF file's `tokenizer.ggml.pre` names.
    pub fn from_gguf_name(name: &str) -> Result<Self> {
        match name {
            "gpt2" | "default" => Ok(Self::Gpt2),
            "smollm" | "starcoder" => Ok(Self::DigitsThenGpt2),
            other => Err(bad(format!(
                "the pre-tokenizer `{other}` is not supported (known: gpt2, smollm, starcoder)"
            ))),
        }
    }
}

/// The special tokens of a vocabulary and whether the model wants them around a text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecialTokens {
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// `tokenizer.ggml.add_bos_token` / `add_eos_token`: put BOS first / EOS last.
    pub add_bos: bool,
    pub add_eos: bool,
    /// Control tokens (GGUF token type 3, e.g. `<|im_start|>`): written in the text they are
    /// read as one special token each, as Hugging Face's added special tokens are.
    pub control: Vec<u32>,
}

/// GGUF's token type of a control token (llama.cpp's `LLAMA_TOKEN_TYPE_CONTROL`).
pub const GGUF_TOKEN_TYPE_CONTROL: i32 = 3;

impl SpecialTokens {
    /// The ids whose GGUF token type says they are control tokens.
    pub fn control_from_token_types(token_types: &[i32]) -> Vec<u32> {
        (0..token_types.len() as u32)
            .filter(|&id| token_types[id as usize] == GGUF_TOKEN_TYPE_CONTROL)
            .collect()
    }
}

#[derive(Debug, Clone)]
pub struct ByteLevelBpe {
    vocab: HashMap<String, u32>,
    /// The vocabulary strings in id order (byte-level alphabet: `Ġ` for a space).
    by_id: Vec<String>,
    /// What each token stands for: its bytes, or a control token's own text.
    bytes_by_id: Vec<Vec<u8>>,
    /// Each token as readable text (a space is a space); bytes that are only part of a
    /// character are written `<0xF0>`.
    display_by_id: Vec<String>,
    /// The token of each single byte; `None` where the vocabulary has no such token.
    byte_token: [Option<u32>; 256],
    /// (left, right) -> (rank, merged token): a lower rank merges first.
    merges: HashMap<(u32, u32), (u32, u32)>,
    /// Control tokens as (text, id), longest first so a longer one wins at the same place.
    control: Vec<(String, u32)>,
    is_special: Vec<bool>,
    special: SpecialTokens,
    pre: PreTokenizer,
}

fn bad(msg: impl Into<String>) -> VizError {
    VizError::BadTokenizer(msg.into())
}

/// GPT-2's byte-to-unicode table: printable Latin-1 bytes stand for themselves, the other 68
/// (controls, space, DEL, NBSP, soft hyphen) are moved to U+0100 upwards, so every byte is a
/// visible character and a vocabulary can be written as plain strings.
pub fn byte_to_char() -> [char; 256] {
    let printable = |b: u32| {
        (0x21..=0x7E).contains(&b) || (0xA1..=0xAC).contains(&b) || (0xAE..=0xFF).contains(&b)
    };
    let mut table = ['\0'; 256];
    let mut moved = 0;
    for b in 0..256u32 {
        table[b as usize] = if printable(b) {
            char::from_u32(b).unwrap()
        } else {
            moved += 1;
            char::from_u32(0xFF + moved).unwrap()
        };
    }
    table
}

/// GPT-2's pre-tokenizer pattern without its look-ahead (`\s+(?!\S)|` before the last `\s+`),
/// for the property test that compares [`gpt2_match_end`] with the regex crate's matches.
#[cfg(test)]
const GPT2_PATTERN: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+";

/// The class of a character in GPT-2's pattern: `\p{L}`, `\p{N}`, `\s` (Unicode's White_Space,
/// as the regex crate reads `\s`) or anything else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Letter,
    Number,
    Space,
    Other,
}

fn char_class(c: char) -> CharClass {
    if c.is_whitespace() {
        return CharClass::Space;
    }
    match c.general_category_group() {
        GeneralCategoryGroup::Letter => CharClass::Letter,
        GeneralCategoryGroup::Number => CharClass::Number,
        _ => CharClass::Other,
    }
}

/// The contractions GPT-2's pattern takes first, in its order.
const CONTRACTIONS: [&str; 7] = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"];

/// Where the leftmost-first match of GPT-2's pattern,
/// `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, without its
/// look-ahead (which [`Gpt2Pieces`] applies) that starts at byte `at` of `text` ends; `at` is on
/// a character of a non-empty rest. Every character is in one of the classes, so a match starts
/// wherever the scan is: a contraction; else an optional space and a run of the class of the
/// character after it (letters, numbers or other symbols); else a run of whitespace.
///
/// Scanned by hand rather than run by the `regex` crate: the pattern is a choice among runs of
/// four classes of character, and in the page the crate cost about a megabyte of the
/// WebAssembly module and the compilation of the pattern on the first view (each of the
/// engine's functions compiled by the browser at its first call; docs/benchmarks.md, "GPT-2's
/// pattern scanned by hand"). A property test below checks the scan against the crate's matches
/// on random text.
fn gpt2_match_end(text: &str, at: usize) -> usize {
    let rest = &text[at..];
    if let Some(c) = CONTRACTIONS.iter().find(|c| rest.starts_with(**c)) {
        return at + c.len();
    }
    let mut chars = rest.chars();
    let first = chars.next().expect("the scan is inside the text");
    let (run_from, class) = match (first, chars.next().map(char_class)) {
        // ` ?X+`: a space belongs to the run of letters, numbers or symbols after it.
        (' ', Some(next)) if next != CharClass::Space => (1, next),
        _ => (0, char_class(first)),
    };
    let run = rest[run_from..]
        .char_indices()
        .find(|&(_, c)| char_class(c) != class)
        .map_or(rest.len(), |(i, _)| run_from + i);
    at + run
}

/// Readable text of a token's bytes: valid UTF-8 as itself, stray bytes as `<0xF0>`.
fn display_bytes(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("<0x{b:02X}>"));
        }
    }
    out
}

impl ByteLevelBpe {
    /// Builds the tokenizer from the vocabulary in id order, the merges in rank order (each
    /// "left right"), the special tokens and the pre-tokenizer. Fails if a merge or a special
    /// id names a token the vocabulary lacks.
    pub fn new(
        tokens: Vec<String>,
        merges: Vec<String>,
        special: SpecialTokens,
        pre: PreTokenizer,
    ) -> Result<Self> {
        if tokens.is_empty() {
            return Err(bad("the vocabulary is empty"));
        }
        let n = tokens.len();
        for (what, id) in [("BOS", special.bos), ("EOS", special.eos)] {
            if id.is_some_and(|id| id as usize >= n) {
                return Err(bad(format!(
                    "the {what} id {} is outside the vocabulary of {n}",
                    id.unwrap()
                )));
            }
        }
        if (special.add_bos && special.bos.is_none()) || (special.add_eos && special.eos.is_none())
        {
            return Err(bad("the model asks for a BOS or EOS token but names none"));
        }
        let mut is_special = vec![false; n];
        for &id in special
            .control
            .iter()
            .chain(special.bos.iter())
            .chain(special.eos.iter())
        {
            *is_special.get_mut(id as usize).ok_or_else(|| {
                bad(format!("special id {id} is outside the vocabulary of {n}"))
            })? = true;
        }

        let to_char = byte_to_char();
        let from_char: HashMap<char, u8> = (0..=255u8).map(|b| (to_char[b as usize], b)).collect();
        let mut vocab = HashMap::with_capacity(n);
        let mut bytes_by_id = Vec::with_capacity(n);
        let mut display_by_id = Vec::with_capacity(n);
        for (id, token) in tokens.iter().enumerate() {
            vocab.insert(token.clone(), id as u32);
            let bytes: Vec<u8> = if is_special[id] {
                token.as_bytes().to_vec()
            } else {
                // A character outside the byte alphabet stands for itself, as in Hugging
                // Face's ByteLevel decoder.
                let mut bytes = Vec::with_capacity(token.len());
                for c in token.chars() {
                    match from_char.get(&c) {
                        Some(&b) => bytes.push(b),
                        None => bytes.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                    }
                }
                bytes
            };
            display_by_id.push(if is_special[id] {
                token.clone()
            } else {
                display_bytes(&bytes)
            });
            bytes_by_id.push(bytes);
        }
        let mut byte_token = [None; 256];
        for b in 0..256 {
            byte_token[b] = vocab.get(to_char[b].to_string().as_str()).copied();
        }

        let mut merge_ranks = HashMap::with_capacity(merges.len());
        for (rank, merge) in merges.iter().enumerate() {
            let (left, right) = merge
                .split_once(' ')
                .ok_or_else(|| bad(format!("merge {rank} `{merge}` is not two tokens")))?;
            let id = |t: &str| {
                vocab.get(t).copied().ok_or_else(|| {
                    bad(format!(
                        "merge {rank} `{merge}` names `{t}`, which is not in the vocabulary"
                    ))
                })
            };
            let merged = id(&format!("{left}{right}"))?;
            // The first listing of a pair wins, as in Hugging Face's BPE.
            merge_ranks
                .entry((id(left)?, id(right)?))
                .or_insert((rank as u32, merged));
        }

        let mut control: Vec<(String, u32)> = special
            .control
            .iter()
            .map(|&id| (tokens[id as usize].clone(), id))
            .collect();
        control.retain(|(text, _)| !text.is_empty());
        control.sort_by_key(|(text, _)| std::cmp::Reverse(text.len()));
        Ok(Self {
            vocab,
            by_id: tokens,
            bytes_by_id,
            display_by_id,
            byte_token,
            merges: merge_ranks,
            control,
            is_special,
            special,
            pre,
        })
    }

    /// The id of a vocabulary string (byte-level alphabet: `ĠParis` for " Paris").
    pub fn token_id(&self, vocab_string: &str) -> Option<u32> {
        self.vocab.get(vocab_string).copied()
    }

    /// The vocabulary string of an id as stored (byte-level alphabet).
    pub fn vocab_string(&self, id: u32) -> Option<&str> {
        self.by_id.get(id as usize).map(String::as_str)
    }

    pub fn special_tokens(&self) -> &SpecialTokens {
        &self.special
    }

    /// The bytes the ids stand for, concatenated (control tokens as their own text).
    pub fn decode_bytes(&self, ids: &[u32]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        for &id in ids {
            let bytes = self
                .bytes_by_id
                .get(id as usize)
                .ok_or(VizError::UnknownTokenId {
                    id,
                    vocab_size: self.by_id.len(),
                })?;
            out.extend_from_slice(bytes);
        }
        Ok(out)
    }

    /// The text the ids stand for; byte sequences that are not UTF-8 (a character cut in
    /// two) become U+FFFD, as in Hugging Face's ByteLevel decoder.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(String::from_utf8_lossy(&self.decode_bytes(ids)?).into_owned())
    }

    /// The characters of `text` that have no token: the vocabulary lacks a byte of theirs, so
    /// (as in Hugging Face `tokenizers` and llama.cpp) the tokenizer drops those bytes. For
    /// SmolLM2: the controls U+0004, U+0006, U+0013, U+0014, U+0016, U+001D and the
    /// unassigned planes U+40000 to U+BFFFF.
    pub fn chars_without_tokens(&self, text: &str) -> Vec<char> {
        let mut buf = [0; 4];
        text.chars()
            .filter(|c| {
                c.encode_utf8(&mut buf)
                    .bytes()
                    .any(|b| self.byte_token[b as usize].is_none())
            })
            .collect()
    }

    /// Calls `emit` with the ids of `text`, without BOS/EOS, in order.
    fn for_each_id(&self, text: &str, emit: &mut dyn FnMut(u32)) {
        let mut cache = PieceCache::default();
        // The next place of each control token at or after `at`; searched again only once
        // `at` has passed it, so a long text is scanned once per control token, not once
        // per control token found.
        let mut next: Vec<Option<usize>> = self
            .control
            .iter()
            .map(|(t, _)| text.find(t.as_str()))
            .collect();
        let mut at = 0;
        loop {
            for (place, (t, _)) in next.iter_mut().zip(&self.control) {
                if place.is_some_and(|p| p < at) {
                    *place = text[at..].find(t.as_str()).map(|p| p + at);
                }
            }
            // The earliest; `control` is longest first, so the longest wins at the same place.
            let found = next
                .iter()
                .zip(&self.control)
                .filter_map(|(p, entry)| p.map(|p| (p, entry)))
                .min_by_key(|&(p, _)| p);
            match found {
                Some((pos, (t, id))) => {
                    self.plain_ids(&text[at..pos], &mut cache, emit);
                    emit(*id);
                    at = pos + t.len();
                }
                None => {
                    self.plain_ids(&text[at..], &mut cache, emit);
                    return;
                }
            }
        }
    }

    /// Ids of text with no control token in it. Each distinct piece is merged once per call
    /// (text repeats its words).
    fn plain_ids<'t>(&self, text: &'t str, cache: &mut PieceCache<'t>, emit: &mut dyn FnMut(u32)) {
        let mut word = Vec::new();
        for piece in self.pieces(text) {
            let range = match cache.ranges.get(piece) {
                Some(range) => range.clone(),
                None => {
                    self.merge_piece(piece.as_bytes(), &mut word);
                    let start = cache.ids.len();
                    cache.ids.extend_from_slice(&word);
                    cache.ranges.insert(piece, start..cache.ids.len());
                    start..cache.ids.len()
                }
            };
            cache.ids[range].iter().for_each(|&id| emit(id));
        }
    }

    /// The pre-tokenizer's pieces of `text`, in order; together they are the whole text.
    pub fn pieces<'s, 't: 's>(&'s self, text: &'t str) -> Box<dyn Iterator<Item = &'t str> + 's> {
        let stretches: Box<dyn Iterator<Item = &'t str>> = match self.pre {
            PreTokenizer::Gpt2 => Box::new(std::iter::once(text)),
            PreTokenizer::DigitsThenGpt2 => Box::new(digit_stretches(text)),
        };
        Box::new(stretches.flat_map(|stretch| Gpt2Pieces {
            text: stretch,
            at: 0,
        }))
    }

    /// Byte-level BPE on one piece: its bytes as byte tokens, then the lowest-ranked adjacent
    /// pair merged (the leftmost among equals) until no pair has a merge. The pairs wait in a
    /// heap by (rank, place) and the tokens form a linked list, so a piece of n bytes takes
    /// O(n log n) however long it is (a run of 100,000 letters with no space is one piece); a
    /// pair whose tokens changed since it was queued is skipped when it comes out.
    fn merge_piece(&self, bytes: &[u8], word: &mut Vec<u32>) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;

        word.clear();
        // A byte with no token is dropped, as Hugging Face's BPE does with no unknown token.
        let mut ids: Vec<u32> = bytes
            .iter()
            .filter_map(|&b| self.byte_token[b as usize])
            .collect();
        let n = ids.len();
        // Neighbours in the list (usize::MAX: none); a merged-away token has `alive` false.
        let mut next: Vec<usize> = (1..=n)
            .map(|i| if i < n { i } else { usize::MAX })
            .collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        // (rank, left place, left id, right id): the ids tell a stale entry from a live one.
        let mut heap: BinaryHeap<Reverse<(u32, usize, u32, u32)>> = BinaryHeap::new();
        let queue = |heap: &mut BinaryHeap<_>, ids: &[u32], left: usize, right: usize| {
            if let Some(&(rank, _)) = self.merges.get(&(ids[left], ids[right])) {
                heap.push(Reverse((rank, left, ids[left], ids[right])));
            }
        };
        for i in 1..n {
            queue(&mut heap, &ids, i - 1, i);
        }
        while let Some(Reverse((_, left, left_id, right_id))) = heap.pop() {
            let right = next[left];
            if !alive[left] || right == usize::MAX || ids[left] != left_id || ids[right] != right_id
            {
                continue; // a merge since changed one of its tokens
            }
            ids[left] = self.merges[&(left_id, right_id)].1;
            alive[right] = false;
            next[left] = next[right];
            if next[left] != usize::MAX {
                prev[next[left]] = left;
                queue(&mut heap, &ids, left, next[left]);
            }
            if prev[left] != usize::MAX {
                queue(&mut heap, &ids, prev[left], left);
            }
        }
        word.extend((0..n).filter(|&i| alive[i]).map(|i| ids[i]));
    }

    fn token_info(&self, id: u32) -> TokenInfo {
        TokenInfo {
            id,
            text: self.display_by_id[id as usize].clone(),
            special: self.is_special[id as usize],
        }
    }
}

/// The ids of the pieces merged so far in one call: `ranges[piece]` indexes `ids`.
#[derive(Default)]
struct PieceCache<'t> {
    ranges: HashMap<&'t str, std::ops::Range<usize>>,
    ids: Vec<u32>,
}

/// Hugging Face's `Digits(individual_digits: true)`: each numeric character (Rust's
/// `char::is_numeric`, as there) is a stretch of its own, and so is the text between them.
fn digit_stretches(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let first = rest.chars().next()?;
        let len = if first.is_numeric() {
            first.len_utf8()
        } else {
            rest.find(|c: char| c.is_numeric()).unwrap_or(rest.len())
        };
        let (stretch, tail) = rest.split_at(len);
        rest = tail;
        Some(stretch)
    })
}

/// The pieces of GPT-2's pattern in one stretch: its matches ([`gpt2_match_end`]) with the
/// look-ahead of `\s+(?!\S)` applied.
struct Gpt2Pieces<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Iterator for Gpt2Pieces<'t> {
    type Item = &'t str;

    fn next(&mut self) -> Option<&'t str> {
        if self.at >= self.text.len() {
            return None;
        }
        let mut end = gpt2_match_end(self.text, self.at);
        let matched = &self.text[self.at..end];
        let followed_by_non_space = self.text[end..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace());
        if followed_by_non_space && matched.chars().all(char::is_whitespace) {
            // `\s+(?!\S)`: a run of two or more whitespace characters before a non-space
            // leaves its last character to the next piece; a single one is matched by `\s+`.
            let last = matched.chars().next_back().unwrap();
            if matched.len() > last.len_utf8() {
                end -= last.len_utf8();
            }
        }
        let piece = &self.text[self.at..end];
        self.at = end;
        Some(piece)
    }
}

impl Tokenizer for ByteLevelBpe {
    fn kind(&self) -> super::TokenizerKind {
        super::TokenizerKind::ByteBpe
    }

    fn encode(&self, text: &str, max_tokens: usize) -> Result<Encoding> {
        if text.is_empty() {
            return Err(VizError::EmptyText);
        }
        let before: Vec<u32> = self
            .special
            .bos
            .filter(|_| self.special.add_bos)
            .into_iter()
            .collect();
        let after: Vec<u32> = self
            .special
            .eos
            .filter(|_| self.special.add_eos)
            .into_iter()
            .collect();
        let room = max_tokens.saturating_sub(before.len() + after.len());
        // TokenInfo only for the tokens kept; the rest are counted, for the truncation note.
        let mut kept = Vec::new();
        let mut total = 0usize;
        self.for_each_id(text, &mut |id| {
            if kept.len() < room {
                kept.push(id);
            }
            total += 1;
        });
        if total == 0 {
            return Err(VizError::NoTokens);
        }
        let reserved = before.len() + after.len();
        let truncated = (total > room).then_some(Truncation {
            original_tokens: total + reserved,
            kept_tokens: max_tokens,
        });
        let tokens = before
            .iter()
            .chain(&kept)
            .chain(&after)
            .map(|&id| self.token_info(id))
            .collect();
        Ok(Encoding { tokens, truncated })
    }

    fn vocab_size(&self) -> usize {
        self.by_id.len()
    }

    /// The token as readable text: " Paris", not the stored "ĠParis".
    fn token_text(&self, id: u32) -> Option<&str> {
        self.display_by_id.get(id as usize).map(String::as_str)
    }

    fn is_special(&self, id: u32) -> bool {
        self.is_special.get(id as usize).copied().unwrap_or(false)
    }

    fn decode(&self, ids: &[u32]) -> Result<String> {
        ByteLevelBpe::decode(self, ids)
    }
}

#[cfg(test)]
mod tests {
    use super::{char_class, gpt2_match_end, CharClass, GPT2_PATTERN};
    use proptest::prelude::*;
    use std::sync::LazyLock;

    /// The ends of the successive matches from the start of `text`, by the hand scan.
    fn scanned(text: &str) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut at = 0;
        while at < text.len() {
            at = gpt2_match_end(text, at);
            ends.push(at);
        }
        ends
    }

    /// The same by the regex crate, each match starting where the last ended.
    fn by_regex(text: &str) -> Vec<usize> {
        static PATTERN: LazyLock<regex::Regex> =
            LazyLock::new(|| regex::Regex::new(GPT2_PATTERN).unwrap());
        let mut ends = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let m = PATTERN
                .find_at(text, at)
                .expect("the pattern matches every character");
            assert_eq!(m.start(), at, "a match starts where the last ended");
            at = m.end();
            ends.push(at);
        }
        ends
    }

    /// A character's class by the regex crate's Unicode tables.
    fn regex_class(c: char) -> CharClass {
        static CLASSES: LazyLock<[(regex::Regex, CharClass); 3]> = LazyLock::new(|| {
            [
                (regex::Regex::new(r"^\s$").unwrap(), CharClass::Space),
                (regex::Regex::new(r"^\p{L}$").unwrap(), CharClass::Letter),
                (regex::Regex::new(r"^\p{N}$").unwrap(), CharClass::Number),
            ]
        });
        let text = c.to_string();
        CLASSES
            .iter()
            .find(|(re, _)| re.is_match(&text))
            .map_or(CharClass::Other, |(_, class)| *class)
    }

    /// Characters of every class, and those the pattern treats specially. Any character too,
    /// but for the few that the regex crate's Unicode tables and this scan's (a version apart)
    /// class differently, such as a letter assigned in the later version: the test compares
    /// the scan, not the tables.
    fn character() -> impl Strategy<Value = char> {
        prop_oneof![
            4 => prop::sample::select(vec![
                'a', 'Z', 's', 't', 'r', 'e', 'v', 'm', 'l', 'd', '\'', ' ', ' ', '7', '0', '.', ',',
                '!', '-', '\n', '\t', '\r', '\u{a0}', '\u{3000}', '\u{2028}', '\u{85}', 'é', 'ß',
                'Ж', '中', 'ー', 'ǅ', 'ʰ', '\u{301}', '\u{94d}', '½', 'Ⅷ', '٣', '²', '😀', '€', '_',
            ]),
            1 => any::<char>().prop_filter("classed alike by both tables", |&c| {
                char_class(c) == regex_class(c)
            }),
        ]
    }

    proptest! {
        #[test]
        fn the_hand_scan_matches_the_regex_crate(chars in prop::collection::vec(character(), 1..40)) {
            let text: String = chars.into_iter().collect();
            prop_assert_eq!(scanned(&text), by_regex(&text), "{:?}", text);
        }
    }

    #[test]
    fn pieces_of_a_sentence() {
        let text = "He's  here, isn't he? 42 cats\u{3000}ran!!";
        let ends = scanned(text);
        let starts = std::iter::once(0).chain(ends.iter().copied());
        let pieces: Vec<&str> = starts.zip(&ends).map(|(a, &b)| &text[a..b]).collect();
        assert_eq!(
            pieces,
            [
                "He", "'s", "  ", "here", ",", " isn", "'t", " he", "?", " 42", " cats",
                "\u{3000}", "ran", "!!"
            ]
        );
    }
}
