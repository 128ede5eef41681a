//! What a lecture model does with the stories' held-out sentences, measured through the
//! engine: whether a head sends each pronoun to the word it stands for, and whether the model
//! names the right person at the end of an indirect-object sentence. `transformer-viz
//! behaviours` prints it; `tests/engine/trainer.rs` asks it of the committed models.

use crate::analysis::prediction::single_token;
use crate::error::{Result, VizError};
use crate::model::attention::probabilities_of;
use crate::tokenize::TokenInfo;
use crate::transformer::Transformer;

use super::stories::{IoiPrompt, Rendered};

/// The seed of the held-out sentences and prompts the behaviours are measured on (by
/// `transformer-viz behaviours`, the training log and the tests; any seed would do: the names
/// and templates are held out).
pub const HELD_OUT_SEED: u64 = 7;

/// How often one head's strongest weight from a pronoun lands on its antecedent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PronounHead {
    pub layer: usize,
    pub head: usize,
    /// Share of the pronouns (0 to 1).
    pub share: f32,
}

/// The token that holds byte `at` of the text `tokens` spell out (laid end to end, special
/// ones left out), as a position in `tokens`. An error when they do not reach that byte.
pub fn token_at(tokens: &[TokenInfo], text: &str, at: usize) -> Result<usize> {
    let mut end = 0;
    for (i, t) in tokens.iter().enumerate() {
        if t.special {
            continue;
        }
        end += t.text.len();
        if at < end {
            return Ok(i);
        }
    }
    Err(VizError::Training(format!(
        "no token of {text:?} holds byte {at}"
    )))
}

/// For every head, the share of the cases' pronouns whose strongest weight, among the other
/// ordinary tokens before it, is on the first token of its antecedent; best head first.
pub fn pronoun_heads(model: &Transformer, cases: &[Rendered]) -> Result<Vec<PronounHead>> {
    let c = &model.config;
    let mut hits = vec![0usize; c.n_layers * c.n_heads];
    let mut pronouns = 0usize;
    for case in cases {
        let trace = model.trace(&case.text)?;
        let refs: Vec<(usize, usize)> = case
            .references
            .iter()
            .map(|&(p, a)| {
                Ok((
                    token_at(&trace.tokens, &case.text, p)?,
                    token_at(&trace.tokens, &case.text, a)?,
                ))
            })
            .collect::<Result<_>>()?;
        for layer in 0..c.n_layers {
            let heads = trace.attention_layer(layer)?; // (heads, T, T)
            for (head, a) in heads.outer_iter().enumerate() {
                for &(q, k) in &refs {
                    let strongest = (0..q)
                        .filter(|&j| !trace.tokens[j].special)
                        .max_by(|&x, &y| a[[q, x]].total_cmp(&a[[q, y]]));
                    if strongest == Some(k) {
                        hits[layer * c.n_heads + head] += 1;
                    }
                }
            }
        }
        pronouns += refs.len();
    }
    let mut ranked: Vec<PronounHead> = hits
        .iter()
        .enumerate()
        .map(|(i, &h)| PronounHead {
            layer: i / c.n_heads,
            head: i % c.n_heads,
            share: h as f32 / pronouns.max(1) as f32,
        })
        .collect();
    ranked.sort_by(|x, y| y.share.total_cmp(&x.share));
    Ok(ranked)
}

/// The kinds of pronoun in the held-out sentences, each with its words: a model may give
/// people and things to different heads, and the share of all pronouns hides which.
pub const PRONOUN_KINDS: [(&str, &[&str]); 3] = [
    ("he / she", &["he", "she"]),
    ("him / her", &["him", "her"]),
    ("it", &["it"]),
];

/// The cases with only the references whose pronoun is one of `words` (in any case); cases
/// left without one are dropped.
pub fn of_kind(cases: &[Rendered], words: &[&str]) -> Vec<Rendered> {
    cases
        .iter()
        .map(|case| Rendered {
            text: case.text.clone(),
            references: case
                .references
                .iter()
                .copied()
                .filter(|&(p, _)| {
                    let word = case.text[p..]
                        .split(|c: char| !c.is_alphabetic())
                        .next()
                        .unwrap_or_default();
                    words.iter().any(|w| w.eq_ignore_ascii_case(word))
                })
                .collect(),
        })
        .filter(|case| !case.references.is_empty())
        .collect()
}

/// How the model ends indirect-object sentences.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IoiReport {
    pub prompts: usize,
    /// Share of prompts whose most likely next token is the answer.
    pub first: f32,
    /// Share whose answer is more likely than the repeated name.
    pub beats_other: f32,
    /// Mean probability of the answer and of the other name.
    pub answer_probability: f32,
    pub other_probability: f32,
}

pub fn ioi_report(model: &Transformer, prompts: &[IoiPrompt]) -> Result<IoiReport> {
    let mut report = IoiReport {
        prompts: prompts.len(),
        first: 0.0,
        beats_other: 0.0,
        answer_probability: 0.0,
        other_probability: 0.0,
    };
    let n = prompts.len().max(1) as f32;
    for p in prompts {
        let (answer, other) = (
            single_token(model, &p.answer)?,
            single_token(model, &p.other)?,
        );
        let ids = model
            .tokenizer
            .encode(&p.prompt, model.config.context)?
            .ids();
        let logits = model.run_ids(&ids)?.logits.ok_or(VizError::NoLmHead)?; // (T, V)
        let last = logits.row(logits.nrows() - 1); // (V,)
        let probabilities = probabilities_of(last.to_owned()); // (V,)
        let top = (0..probabilities.len())
            .max_by(|&x, &y| probabilities[x].total_cmp(&probabilities[y]))
            .unwrap_or(0);
        let (p_answer, p_other) = (
            probabilities[answer as usize],
            probabilities[other as usize],
        );
        report.first += (top == answer as usize) as u32 as f32 / n;
        report.beats_other += (p_answer > p_other) as u32 as f32 / n;
        report.answer_probability += p_answer / n;
        report.other_probability += p_other / n;
    }
    Ok(report)
}
