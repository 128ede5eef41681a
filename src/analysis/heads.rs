//! Head scores: a few numbers per attention head that say what kind of pattern it draws, so a
//! student can be led to the heads that do something recognisable instead of opening all of
//! them one by one. Computed from the softmax weights the trace recorded; every model works.

use ndarray::{ArrayView2, Axis};
use serde::Serialize;

use super::antecedents::{references, Reference};
use crate::error::{Result, VizError};
use crate::trace::Trace;

/// How strongly one head follows each simple positional pattern, as mean attention weights
/// in [0, 1] (1: every query puts all its weight there).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PatternScores {
    /// Mean weight from token i to token i-1, over i = 1..T.
    pub previous: f32,
    /// Mean weight from token i to token i+1, over i = 0..T-1.
    pub next: f32,
    /// Mean weight from every token to position 0 (`[CLS]` for BERT-style models).
    pub first: f32,
    /// Mean weight from every token to the final special token (`[SEP]`), for models whose
    /// sentences end with one; `None` otherwise.
    pub last: Option<f32>,
}

/// The scores of one head of one layer.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeadScores {
    pub layer: usize,
    pub head: usize,
    #[serde(flatten)]
    pub scores: PatternScores,
    /// Induction: see `induction_score`; `None` when the text repeats no token.
    pub induction: Option<f32>,
    /// Duplicate token: the mean weight from a repeated token on its earlier copy (see
    /// `duplicate_targets`); `None` when the text repeats no token.
    pub duplicate: Option<f32>,
    /// Antecedent: the mean weight from a pronoun on the word it refers to, by agreement
    /// (`antecedents::references`); `None` when no pronoun's antecedent is known.
    pub antecedent: Option<f32>,
}

/// The queries an induction head acts on, each with the key it should attend to: a token i
/// whose id occurred before, at j (the most recent earlier occurrence), looks at j + 1, the
/// token that followed it last time, so as to predict it again. Immediate repeats (j = i - 1,
/// whose target is the query itself) are left out.
pub fn induction_targets(ids: &[u32]) -> Vec<(usize, usize)> {
    let mut last_seen = std::collections::HashMap::new();
    let mut targets = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        if let Some(&j) = last_seen.get(id) {
            if j + 1 < i {
                targets.push((i, j + 1));
            }
        }
        last_seen.insert(*id, i);
    }
    targets
}

/// The queries a duplicate-token head acts on, each with the key it attends to: a token i
/// whose id occurred before, at j (the most recent earlier occurrence), looks at j itself, its
/// earlier copy (a repeated name finds where the name came first). Immediate repeats are left
/// out, as for induction: a previous-token head would score there too.
pub fn duplicate_targets(ids: &[u32]) -> Vec<(usize, usize)> {
    induction_targets(ids)
        .into_iter()
        .map(|(query, after_copy)| (query, after_copy - 1))
        .collect()
}

/// Mean weight that `a` (T, T) puts on each target (query, key) of `targets` (induction's or
/// the duplicate token's); `None` when there is none.
pub fn induction_score(a: ArrayView2<f32>, targets: &[(usize, usize)]) -> Option<f32> {
    (!targets.is_empty())
        .then(|| targets.iter().map(|&(q, k)| a[[q, k]]).sum::<f32>() / targets.len() as f32)
}

/// Mean weight that `a` (T, T) puts from each pronoun on its antecedent's tokens (both names
/// of a pair, summed); `None` when there is no reference.
pub fn antecedent_score(a: ArrayView2<f32>, references: &[Reference]) -> Option<f32> {
    (!references.is_empty()).then(|| {
        references
            .iter()
            .map(|r| r.antecedent.iter().map(|&k| a[[r.pronoun, k]]).sum::<f32>())
            .sum::<f32>()
            / references.len() as f32
    })
}

/// Where one head sends the most weight from one query token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeadTarget {
    pub layer: usize,
    pub head: usize,
    /// The key position with the largest weight among the candidates.
    pub key: usize,
    pub weight: f32,
}

/// The scores of one attention pattern `a` (T, T): rows are queries, columns keys.
/// `ends_with_special`: the last position is a special token such as `[SEP]`.
pub fn pattern_scores(a: ArrayView2<f32>, ends_with_special: bool) -> PatternScores {
    let t = a.nrows();
    let mean = |values: &mut dyn Iterator<Item = f32>, count: usize| {
        if count == 0 {
            0.0
        } else {
            values.sum::<f32>() / count as f32
        }
    };
    let previous = mean(&mut (1..t).map(|i| a[[i, i - 1]]), t.saturating_sub(1));
    let next = mean(
        &mut (0..t.saturating_sub(1)).map(|i| a[[i, i + 1]]),
        t.saturating_sub(1),
    );
    let first = if t == 0 {
        0.0
    } else {
        a.column(0).mean().unwrap_or(0.0)
    };
    // With a single token the last position is also the first: no separate score.
    let last = (ends_with_special && t > 1).then(|| a.column(t - 1).mean().unwrap_or(0.0));
    PatternScores {
        previous,
        next,
        first,
        last,
    }
}

/// True when the trace's sentence ends with a special token (BERT's `[SEP]`).
pub fn ends_with_special(trace: &Trace) -> bool {
    trace.len() > 1 && trace.tokens.last().is_some_and(|t| t.special)
}

/// The scores of every head of every layer, layer by layer, head by head.
pub fn head_scores(trace: &Trace) -> Result<Vec<HeadScores>> {
    let special_end = ends_with_special(trace);
    let ids: Vec<u32> = trace.tokens.iter().map(|t| t.id).collect();
    let targets = induction_targets(&ids);
    let duplicates = duplicate_targets(&ids);
    let references = references(&trace.tokens);
    let mut all = Vec::with_capacity(trace.config.n_layers * trace.config.n_heads);
    for layer in 0..trace.config.n_layers {
        let heads = trace.attention_layer(layer)?; // (heads, T, T)
        for (head, a) in heads.axis_iter(Axis(0)).enumerate() {
            all.push(HeadScores {
                layer,
                head,
                scores: pattern_scores(a, special_end),
                induction: induction_score(a, &targets),
                duplicate: induction_score(a, &duplicates),
                antecedent: antecedent_score(a, &references),
            });
        }
    }
    Ok(all)
}

/// For every head, the key that query `query` attends to most among the *other* ordinary
/// tokens (itself and special tokens left out: many heads park their weight on `[CLS]` or
/// `[SEP]` when they have nothing to do), ranked by that weight, strongest first.
/// `beyond_neighbours` also leaves out the tokens just before and after the query: the
/// previous- and next-token heads put nearly all their weight there for every token, so
/// they would crowd out the heads that link a word to a distant one (a pronoun to its noun).
/// Empty when the sentence has no candidate token.
pub fn heads_from(trace: &Trace, query: usize, beyond_neighbours: bool) -> Result<Vec<HeadTarget>> {
    if query >= trace.len() {
        return Err(VizError::NoSuchToken {
            index: query,
            tokens: trace.len(),
        });
    }
    let near = |k: usize| beyond_neighbours && k.abs_diff(query) == 1;
    // A decoder's token cannot see the tokens after it (their weight is always 0): only
    // earlier words are candidates, so no head is listed as looking at a masked one.
    let visible = |k: usize| !trace.config.causal || k < query;
    let candidates: Vec<usize> = (0..trace.len())
        .filter(|&k| k != query && !trace.tokens[k].special && !near(k) && visible(k))
        .collect();
    let mut ranked = Vec::new();
    for layer in 0..trace.config.n_layers {
        let heads = trace.attention_layer(layer)?; // (heads, T, T)
        for (head, a) in heads.axis_iter(Axis(0)).enumerate() {
            let row = a.row(query); // (T,)
            let best = candidates
                .iter()
                .map(|&k| (k, row[k]))
                .max_by(|x, y| x.1.total_cmp(&y.1));
            if let Some((key, weight)) = best {
                ranked.push(HeadTarget {
                    layer,
                    head,
                    key,
                    weight,
                });
            }
        }
    }
    ranked.sort_by(|x, y| y.weight.total_cmp(&x.weight));
    Ok(ranked)
}
