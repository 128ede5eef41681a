//! The next-token prediction at the end of a text, as the CLI prints it.

use serde::Serialize;

use crate::error::Result;
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

/// The ids of the `n` largest values, largest first (ties: lower id first).
pub fn top_ids(values: &[f32], n: usize) -> Vec<u32> {
    let mut ids: Vec<u32> = (0..values.len() as u32).collect();
    let n = n.min(ids.len());
    let by_value = |a: &u32, b: &u32| {
        values[*b as usize]
            .total_cmp(&values[*a as usize])
            .then(a.cmp(b))
    };
    if n < ids.len() && n > 0 {
        ids.select_nth_unstable_by(n - 1, by_value);
    }
    ids.truncate(n);
    ids.sort_by(by_value);
    ids
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
