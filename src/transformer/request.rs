//! What a pass is asked for and what it gives back (`Transformer::pass`): the request's
//! input, what it continues and what it keeps; the pass, its trace and an encoder-decoder's
//! decoding.

use ndarray::Array2;

use crate::error::{Result, VizError};
use crate::model::edits::Edits;
use crate::model::forward::Logits;
use crate::model::kv_cache::KvCache;
use crate::model::ForwardOutput;
use crate::tokenize::{Encoding, TokenInfo};
use crate::trace::{Readback, Trace};

/// What a pass reads.
pub enum Input<'a> {
    /// A text, encoded within the model's context. An encoder-decoder's is its source.
    Text(&'a str),
    /// Tokens that came from `Transformer::encode` or `encode_within`, and their text.
    Tokens(Encoding, &'a str),
    /// Token ids (each checked against the vocabulary): what generation appends.
    Ids(&'a [u32]),
}

/// What a pass keeps.
pub enum Keep {
    /// Only the output: the last hidden states and the logits of the positions named.
    Output(Logits),
    /// Every step. A device brings back with the pass the steps `Readback` names; the others
    /// stay on it until asked for (`GpuBackend::read_rest`).
    Steps(Readback),
    /// What the views read of each layer (its stream, attention weights and norm statistics),
    /// a layer's other steps computed again from its stored input when read
    /// (`LayeredRecorder`): a causal model's pass on a backend whose values are ready at once
    /// (the CPU). Other models, and other backends, keep every step.
    Layers,
}

/// What an earlier pass leaves for this one.
pub enum Continue<'a, H> {
    /// A causal model's last trace (when there is one) and the cache holding its keys and
    /// values: the tokens up to the first that differs are taken from them, the rest
    /// computed. Any other model computes every token and empties the cache.
    Trace(Option<&'a Trace>, &'a mut KvCache<H>),
    /// The input's tokens follow those the cache holds (generation: one new row of attention
    /// a layer); their keys and values join it.
    After(&'a mut KvCache<H>),
}

/// One pass: what to read, what to continue, what to keep, what to change.
pub struct PassRequest<'a, H> {
    pub input: Input<'a>,
    pub continues: Option<Continue<'a, H>>,
    pub keep: Keep,
    /// The pass's changes (`Edits::NONE`: the model as trained). A changed pass computes every
    /// token: the cache's keys and values were computed without the change.
    pub edits: &'a Edits,
}

impl<'a, H> PassRequest<'a, H> {
    /// A traced pass on `text` from its first token, keeping what the views read.
    pub fn text(text: &'a str) -> Self {
        Self::of(Input::Text(text))
    }

    /// A traced pass on tokens from `encode`, keeping what the views read.
    pub fn tokens(tokens: Encoding, text: &'a str) -> Self {
        Self::of(Input::Tokens(tokens, text))
    }

    /// A pass on bare ids keeping every position's output.
    pub fn ids(ids: &'a [u32]) -> Self {
        Self::of(Input::Ids(ids)).keeping(Keep::Output(Logits::All))
    }

    fn of(input: Input<'a>) -> Self {
        PassRequest {
            input,
            continues: None,
            keep: Keep::Layers,
            edits: Edits::NONE,
        }
    }

    /// The pass with `edits` made (a head switched off, a run patched in).
    pub fn editing(mut self, edits: &'a Edits) -> Self {
        self.edits = edits;
        self
    }

    pub fn keeping(mut self, keep: Keep) -> Self {
        self.keep = keep;
        self
    }

    /// Continues `previous` (this model's last trace), whose keys and values `cache` holds.
    pub fn continuing(mut self, previous: Option<&'a Trace>, cache: &'a mut KvCache<H>) -> Self {
        self.continues = Some(Continue::Trace(previous, cache));
        self
    }

    /// The input's tokens follow those `cache` holds.
    pub fn after(mut self, cache: &'a mut KvCache<H>) -> Self {
        self.continues = Some(Continue::After(cache));
        self
    }
}

/// What a pass gives back.
pub struct Pass {
    /// The trace, unless the request kept only the output.
    pub trace: Option<Trace>,
    /// The last hidden states and logits, when the request kept only the output.
    pub output: Option<ForwardOutput>,
    /// Tokens taken from the earlier pass (their keys and values from the cache, their trace
    /// rows from its trace) rather than computed again.
    pub reused: usize,
    /// An encoder-decoder's decoding of its source: what it wrote, each step's choice.
    pub decoding: Option<Decoding>,
}

impl Pass {
    pub(super) fn traced(trace: Trace, reused: usize) -> Self {
        Pass {
            trace: Some(trace),
            output: None,
            reused,
            decoding: None,
        }
    }

    /// The trace of a request that kept one.
    pub fn into_trace(self) -> Trace {
        self.trace.expect("the request kept a trace")
    }

    /// The logits (positions, vocab) of a request that kept the output.
    pub fn into_logits(self) -> Result<Array2<f32>> {
        self.output.and_then(|o| o.logits).ok_or(VizError::NoLmHead)
    }
}

/// The three kinds of model the one pass serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Every token sees every other (MiniLM): a pass always starts from the first token.
    Encoder,
    /// Each token sees the ones before it: earlier tokens' keys and values can be kept.
    Causal,
    /// An encoder reads the source, a decoder writes from it (the lecture's reverser).
    EncoderDecoder,
}

/// One decoding step: the token the decoder chose and how sure it was.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DecodedToken {
    pub token: TokenInfo,
    pub probability: f32,
    /// The second most likely token and its probability.
    pub runner_up: Option<(TokenInfo, f32)>,
}

/// What the page keeps of a translation beside its trace: the decoded text, each step's
/// choice, and whether the decoder predicted the end token.
pub type Decoding = (String, Vec<DecodedToken>, bool);

#[derive(Debug)]
pub struct Translation {
    /// The decoder's traced pass over the start token and the output (its `source` holds the
    /// encoder's pass over the source).
    pub trace: Trace,
    /// The decoded text (without the start and end tokens).
    pub output: String,
    /// Each step's choice, the last one the end token when `finished`.
    pub steps: Vec<DecodedToken>,
    /// Whether the decoder predicted the end token before the context filled.
    pub finished: bool,
}

impl Translation {
    /// The trace, and what the page keeps beside it.
    pub fn into_parts(self) -> (Trace, Decoding) {
        (self.trace, (self.output, self.steps, self.finished))
    }
}
