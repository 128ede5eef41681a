//! What the page learns of a pass (`Viz::set_text`, `Viz::install_pass`): its tokens, every
//! step's texts and shape, the norms, the KV cache, a translation's decoding.

use serde::Serialize;

use super::generated::Generated;
use crate::model::record::Op;
use crate::tokenize::{TokenInfo, Truncation};
use crate::transformer::DecodedToken;

#[derive(Serialize, Hash)]
pub(super) struct StepInfo<'a> {
    pub(super) index: usize,
    pub(super) op: Op,
    pub(super) layer: Option<usize>,
    pub(super) name: &'a str,
    pub(super) title: String,
    pub(super) equation: String,
    pub(super) explanation: String,
    pub(super) axes: &'a [String],
    pub(super) inputs: &'a [String],
}

#[derive(Serialize)]
pub(super) struct NormInfo<'a> {
    pub(super) index: usize,
    pub(super) step: &'a str,
    pub(super) layer: Option<usize>,
}

#[derive(Serialize)]
pub(super) struct Summary<'a> {
    pub(super) tokens: &'a [TokenInfo],
    pub(super) truncated: &'a Option<Truncation>,
    // `steps` (the StepInfo of each step) is set on the object afterwards (`Viz::steps_js`);
    // the page gives each its shape from `shapes`.
    /// Each step's tensor shape (T changes it).
    pub(super) shapes: Vec<&'a [usize]>,
    pub(super) norms: Vec<NormInfo<'a>>,
    pub(super) milliseconds: f64,
    /// False when the new text gave the same tokens as the last one, so the last forward
    /// pass (the same numbers) was kept.
    pub(super) recomputed: bool,
    /// Threads that computed the pass (`model::threads`).
    pub(super) threads: usize,
    /// The most tokens a pass takes: the model's context, or less (`PAGE_TOKENS`).
    pub(super) token_limit: usize,
    /// Tokens taken from the last pass (a causal model's KV cache and trace rows) rather
    /// than computed again; 0 for an encoder, whose every token sees every other.
    pub(super) reused: usize,
    /// Tokens whose keys and values the KV cache holds now, and its size in bytes.
    pub(super) cached_tokens: usize,
    pub(super) cache_bytes: usize,
    /// The token `generate_next` just added, and the whole text with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) generated: Option<Generated>,
    /// An encoder-decoder's pass: the text is its source, `tokens` what it wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) translation: Option<TranslationSummary<'a>>,
}

#[derive(Serialize)]
pub(super) struct TranslationSummary<'a> {
    pub(super) source_tokens: &'a [TokenInfo],
    pub(super) source_truncated: &'a Option<Truncation>,
    pub(super) output: &'a str,
    /// Each decoding step's choice (the last the end token when `finished`).
    pub(super) steps: &'a [DecodedToken],
    pub(super) finished: bool,
}

#[derive(Serialize)]
pub(super) struct CompareSummary<'a> {
    pub(super) tokens: &'a [TokenInfo],
    pub(super) truncated: &'a Option<Truncation>,
    pub(super) recomputed: bool,
}
