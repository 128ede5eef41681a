//! Tokenizers: text to the ids a model was trained on.

pub mod bert_normalizer;
pub mod bpe;
pub mod bytes;
pub mod wordpiece;

use crate::error::Result;
use crate::trace::{TokenInfo, Truncation};

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

pub trait Tokenizer: Send + Sync {
    /// Tokenizes `text`, adds the model's special tokens and keeps at most `max_tokens`
    /// tokens in all (the end of the text is dropped and the encoding says so).
    fn encode(&self, text: &str, max_tokens: usize) -> Result<Encoding>;
    fn vocab_size(&self) -> usize;
    /// The vocabulary string of an id, for labels.
    fn token_text(&self, id: u32) -> Option<&str>;
}
