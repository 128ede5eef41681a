//! A byte-level tokenizer (one token per UTF-8 byte, plus a start token), used by the small
//! random-weight fixture models in tests: it accepts any text.

use super::{Encoding, Tokenizer};
use super::{TokenInfo, Truncation};
use crate::error::{Result, VizError};

pub struct ByteTokenizer {
    names: Vec<String>,
}

/// The id of the start-of-text token.
pub const BOS: u32 = 256;

impl Default for ByteTokenizer {
    fn default() -> Self {
        let mut names: Vec<String> = (0u16..256)
            .map(|b| {
                let c = b as u8 as char;
                if c.is_ascii_graphic() || c == ' ' {
                    c.to_string()
                } else {
                    format!("<0x{b:02X}>")
                }
            })
            .collect();
        names.push("<s>".into());
        Self { names }
    }
}

impl Tokenizer for ByteTokenizer {
    fn kind(&self) -> super::TokenizerKind {
        super::TokenizerKind::Bytes
    }

    fn encode(&self, text: &str, max_tokens: usize) -> Result<Encoding> {
        if text.is_empty() {
            return Err(VizError::EmptyText);
        }
        let ids: Vec<u32> = std::iter::once(BOS)
            .chain(text.bytes().map(u32::from))
            .collect();
        let truncated = (ids.len() > max_tokens).then_some(Truncation {
            original_tokens: ids.len(),
            kept_tokens: max_tokens,
        });
        let tokens = ids
            .into_iter()
            .take(max_tokens)
            .map(|id| TokenInfo {
                id,
                text: self.names[id as usize].clone(),
                special: id == BOS,
            })
            .collect();
        Ok(Encoding { tokens, truncated })
    }

    fn vocab_size(&self) -> usize {
        self.names.len()
    }

    fn token_text(&self, id: u32) -> Option<&str> {
        self.names.get(id as usize).map(String::as_str)
    }
}
