//! The baseline a language model must beat: a bigram model (the next token from the current
//! one alone), counted on the training stream and interpolated with the unigram
//! distribution; the mixing weight is the best of a few on the held-out stream, which can only
//! flatter the baseline.

use std::collections::HashMap;

/// Held-out cross-entropy (nats per token) of the best interpolated bigram model, and its
/// mixing weight.
pub fn bigram_loss(train: &[u32], held_out: &[u32], vocab: usize) -> (f64, f64) {
    let mut unigram = vec![0f64; vocab];
    let mut pairs: HashMap<(u32, u32), f64> = HashMap::new();
    let mut first = vec![0f64; vocab];
    for w in train.windows(2) {
        *pairs.entry((w[0], w[1])).or_default() += 1.0;
        first[w[0] as usize] += 1.0;
    }
    for &t in train {
        unigram[t as usize] += 1.0;
    }
    let total = train.len() as f64;
    let unigram_p = |b: u32| (unigram[b as usize] + 1.0) / (total + vocab as f64); // add-one: never 0
    [0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
        .iter()
        .map(|&lambda| {
            let mut nats = 0f64;
            for w in held_out.windows(2) {
                let seen = first[w[0] as usize];
                let bigram = if seen > 0.0 {
                    pairs.get(&(w[0], w[1])).copied().unwrap_or(0.0) / seen
                } else {
                    0.0
                };
                nats -= (lambda * bigram + (1.0 - lambda) * unigram_p(w[1])).ln();
            }
            (nats / (held_out.len() - 1) as f64, lambda)
        })
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("six weights")
}
