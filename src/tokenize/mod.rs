//! Tokenizers: text to the ids a model was trained on.

pub mod bert_normalizer;
pub mod bpe;
pub mod bytes;
pub mod vocab_file;
pub mod wordpiece;

use crate::error::Result;
use serde::{Deserialize, Serialize};

/// The tokens of one sentence, special tokens included, cut to the model's context.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoding {
    pub tokens: Vec<TokenInfo>,
    pub truncated: Option<Truncation>,
}

impl Encoding {
    pub fn ids(&self) -> Vec<u32> {
        self.tokens.iter().map(|t| t.id).collect()
    }
}

/// How a tokenizer cuts text, for the words a page says about tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TokenizerKind {
    /// Words, or a word's first piece and then `##` pieces; `[CLS]` and `[SEP]` added.
    WordPiece,
    /// Byte-level BPE: merged runs of bytes, a leading space part of a token (`Ġ`), and any
    /// byte no merge covers as a token of its own (`<0xED>`).
    ByteBpe,
    /// One token a UTF-8 byte.
    Bytes,
}

pub trait Tokenizer: Send + Sync {
    /// How this tokenizer cuts text.
    fn kind(&self) -> TokenizerKind;
    /// Tokenizes `text`, adds the model's special tokens and keeps at most `max_tokens`
    /// tokens in all (the end of the text is dropped and the encoding says so).
    fn encode(&self, text: &str, max_tokens: usize) -> Result<Encoding>;
    fn vocab_size(&self) -> usize;
    /// The vocabulary string of an id, for labels.
    fn token_text(&self, id: u32) -> Option<&str>;

    /// Whether `id` is a special token the tokenizer adds or reads as one (`[CLS]`, `<|im_end|>`).
    fn is_special(&self, id: u32) -> bool {
        let _ = id;
        false
    }

    /// The token of id `id` as the trace lists it.
    fn token_info(&self, id: u32) -> Option<TokenInfo> {
        Some(TokenInfo {
            id,
            text: self.token_text(id)?.to_string(),
            special: self.is_special(id),
        })
    }

    /// The text that `ids` stand for (generated tokens back to text). By default their texts
    /// joined; byte-level tokenizers join their bytes.
    fn decode(&self, ids: &[u32]) -> Result<String> {
        Ok(ids.iter().filter_map(|&id| self.token_text(id)).collect())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenInfo {
    pub id: u32,
    pub text: String,
    pub special: bool,
}

/// Set when the sentence had more tokens than the model's context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Truncation {
    pub original_tokens: usize,
    pub kept_tokens: usize,
}
