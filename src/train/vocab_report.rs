//! How well a vocabulary reads words, the two figures a vocabulary for the lecture is chosen
//! by: the share of the most frequent words of a text that are one token each (with their
//! leading space, as they stand inside a sentence), and tokens per word on a sentence.

use std::collections::HashMap;

use crate::error::Result;
use crate::tokenize::Tokenizer;

pub struct VocabReport {
    /// The most frequent words looked at (fewer when the text has fewer distinct words).
    pub words: usize,
    /// How many of them are one token.
    pub single: usize,
    /// The frequent words that are not, most frequent first, with their pieces.
    pub split: Vec<(String, Vec<String>)>,
}

/// The tokens a text takes, without the ones the tokenizer adds (the start token).
pub fn text_tokens(tokenizer: &dyn Tokenizer, text: &str) -> Result<Vec<String>> {
    let encoding = tokenizer.encode(text, usize::MAX)?;
    Ok(encoding
        .tokens
        .iter()
        .filter(|t| !tokenizer.is_special(t.id))
        .map(|t| t.text.clone())
        .collect())
}

/// Tokens per word of `sentence` (words: its runs of non-space characters).
pub fn tokens_per_word(tokenizer: &dyn Tokenizer, sentence: &str) -> Result<f64> {
    let words = sentence.split_whitespace().count().max(1);
    Ok(text_tokens(tokenizer, sentence)?.len() as f64 / words as f64)
}

/// Looks at the `top` most frequent words of `documents` (runs of letters, case kept, ties by
/// the word) and encodes each with a leading space.
pub fn vocab_report(
    tokenizer: &dyn Tokenizer,
    documents: &[String],
    top: usize,
) -> Result<VocabReport> {
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for doc in documents {
        for word in doc
            .split(|c: char| !c.is_alphabetic())
            .filter(|w| !w.is_empty())
        {
            *counts.entry(word).or_default() += 1;
        }
    }
    let mut ranked: Vec<(&str, u64)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.truncate(top);
    let mut report = VocabReport {
        words: ranked.len(),
        single: 0,
        split: vec![],
    };
    for (word, _) in ranked {
        let pieces = text_tokens(tokenizer, &format!(" {word}"))?;
        if pieces.len() == 1 {
            report.single += 1;
        } else {
            report.split.push((word.to_string(), pieces));
        }
    }
    Ok(report)
}
