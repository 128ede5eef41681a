//! The next-token prediction at the end of a text, as the CLI prints it.

use serde::Serialize;

use crate::error::{Result, VizError};
use crate::tensor::top_ids;
use crate::trace::Trace;
use crate::Transformer;

#[derive(Debug, Clone, Serialize)]
pub struct NextToken {
    pub id: u32,
    /// The token's text as it reads (a leading space is a space).
    pub token: String,
    pub prob: f32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Prediction {
    /// The text's tokens, as the model's text pieces.
    pub tokens: Vec<String>,
    /// The `top` most likely next tokens, most likely first.
    pub next: Vec<NextToken>,
}

/// The `top` most likely next tokens after the trace's text.
pub fn prediction(model: &Transformer, trace: &Trace, top: usize) -> Result<Prediction> {
    let probs = trace.next_token_probabilities()?; // (vocab)
    let probs = probs
        .as_slice()
        .map(<[f32]>::to_vec)
        .unwrap_or_else(|| probs.to_vec());
    let next = top_ids(&probs, top)
        .into_iter()
        .map(|id| NextToken {
            id,
            token: model.tokenizer.token_text(id).unwrap_or("").to_string(),
            prob: probs[id as usize],
        })
        .collect();
    Ok(Prediction {
        tokens: trace.token_texts(),
        next,
    })
}

/// The single token of `word` (with its leading space, as in " Mary"), or an error naming the
/// word: an answer to score must be one token.
pub fn single_token(model: &Transformer, word: &str) -> Result<u32> {
    let e = model.tokenizer.encode(word, usize::MAX)?;
    let ordinary: Vec<u32> = e
        .tokens
        .iter()
        .filter(|t| !t.special)
        .map(|t| t.id)
        .collect();
    match ordinary[..] {
        [id] => Ok(id),
        _ => Err(VizError::NotOneToken {
            text: word.to_string(),
            tokens: ordinary.len(),
        }),
    }
}
