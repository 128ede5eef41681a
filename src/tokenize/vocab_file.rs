//! This project's own tokenizer file for the byte-level BPE vocabularies its trainer learns
//! (`transformer-viz vocab`): the vocabulary in id order, the merges in rank order and the
//! start token, as JSON. Read with every count checked, like any file the page loads.

use serde::{Deserialize, Serialize};

use super::bpe::{byte_to_char, ByteLevelBpe, PreTokenizer, SpecialTokens};
use crate::error::{Result, VizError};

/// The largest vocabulary this format accepts (the trainer learns a few thousand).
pub const MAX_TOKENS: usize = 1 << 16;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VocabFile {
    /// Always "byte-level-bpe".
    pub kind: String,
    /// The vocabulary strings in id order, in GPT-2's byte alphabet (`Ġ` is a space).
    pub tokens: Vec<String>,
    /// "left right", the first learned first.
    pub merges: Vec<String>,
    /// The start-of-text token every sequence begins with (also the end of a document in training).
    pub bos: u32,
}

pub const KIND: &str = "byte-level-bpe";

impl VocabFile {
    pub fn parse(json: &str) -> Result<Self> {
        let file: VocabFile = serde_json::from_str(json)
            .map_err(|e| VizError::BadTokenizer(format!("tokenizer.json: {e}")))?;
        if file.kind != KIND {
            let kind: String = file.kind.chars().take(40).collect();
            return Err(VizError::BadTokenizer(format!(
                "tokenizer.json: kind `{kind}` is not `{KIND}`"
            )));
        }
        if file.tokens.len() > MAX_TOKENS || file.merges.len() >= file.tokens.len().max(1) {
            return Err(VizError::BadTokenizer(format!(
                "tokenizer.json: {} tokens and {} merges (at most {MAX_TOKENS} tokens, fewer merges than tokens)",
                file.tokens.len(),
                file.merges.len()
            )));
        }
        Ok(file)
    }

    /// The tokenizer: GPT-2's pre-tokenizer, BOS put first.
    pub fn tokenizer(self) -> Result<ByteLevelBpe> {
        let special = SpecialTokens {
            bos: Some(self.bos),
            eos: None,
            add_bos: true,
            add_eos: false,
            control: vec![],
        };
        ByteLevelBpe::new(self.tokens, self.merges, special, PreTokenizer::Gpt2)
    }

    /// A vocabulary of single bytes, no merges: one token for each of `bytes` (in GPT-2's byte
    /// alphabet, a space is `Ġ`), in that order, then the start token.
    pub fn characters(bytes: impl IntoIterator<Item = u8>) -> Self {
        let alphabet = byte_to_char();
        let mut tokens: Vec<String> = bytes
            .into_iter()
            .map(|b| alphabet[b as usize].to_string())
            .collect();
        tokens.push("<|endoftext|>".into());
        VocabFile {
            kind: KIND.into(),
            bos: (tokens.len() - 1) as u32,
            tokens,
            merges: vec![],
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("strings and numbers serialise")
    }
}
