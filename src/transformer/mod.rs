//! `Transformer`: a config, its weights and its tokenizer, checked to fit together, and the
//! one pass from a sentence to a trace (`pass`). The methods below `pass` are one-line
//! conveniences over it on the CPU.

pub mod pass;
pub mod readout_memo;
pub mod request;
pub mod translate;

use std::sync::Arc;

use ndarray::Array1;

pub use request::{
    Continue, DecodedToken, Decoding, Input, Keep, Kind, Pass, PassRequest, Translation,
};

use crate::error::{Result, VizError};
use crate::model::backend::on_cpu;
use crate::model::cpu::Cpu;
use crate::model::forward::Logits;
use crate::model::kv_cache::KvCache;
use crate::model::{ForwardOutput, ModelConfig, Weights};
use crate::tokenize::{Encoding, Tokenizer};
use crate::trace::Trace;
use readout_memo::ReadoutMemo;

pub struct Transformer {
    pub config: ModelConfig,
    /// Shared with the trace steps that compute a layer again when read.
    pub weights: Arc<Weights>,
    pub tokenizer: Box<dyn Tokenizer>,
    /// The top token the final norm and unembedding read off stream rows seen lately (the
    /// logit lens's; the weights never change, so neither do the answers).
    pub readout_memo: ReadoutMemo,
}

impl std::fmt::Debug for Transformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Transformer {
    pub fn new(
        config: ModelConfig,
        weights: Weights,
        tokenizer: Box<dyn Tokenizer>,
    ) -> Result<Self> {
        weights.check(&config)?;
        if tokenizer.vocab_size() > config.vocab_size {
            return Err(VizError::BadConfig(format!(
                "the tokenizer has {} tokens but the model's embedding only {}",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        Ok(Self {
            config,
            weights: Arc::new(weights),
            tokenizer,
            readout_memo: ReadoutMemo::default(),
        })
    }

    /// Tokens of the sentence, cut to the model's context.
    pub fn encode(&self, text: &str) -> Result<Encoding> {
        self.encode_within(text, self.config.context)
    }

    /// `encode`, keeping at most `most` tokens (fewer than the context when a caller traces
    /// less than the model can read).
    pub fn encode_within(&self, text: &str, most: usize) -> Result<Encoding> {
        self.tokenizer.encode(text, most.min(self.config.context))
    }

    /// A traced pass on `text` on the CPU, keeping what the views read (`Keep::Layers`). An
    /// encoder-decoder's trace is its decoder's pass over what it wrote from `text`, the
    /// encoder's pass over `text` inside (`translate`).
    pub fn trace(&self, text: &str) -> Result<Trace> {
        Ok(on_cpu(self.pass(&Cpu, PassRequest::text(text)))?.into_trace())
    }

    /// `trace` on tokens that came from `encode` or `encode_within`.
    pub fn trace_tokens(&self, tokens: Encoding, text: &str) -> Result<Trace> {
        Ok(on_cpu(self.pass(&Cpu, PassRequest::tokens(tokens, text)))?.into_trace())
    }

    /// The plain pass on token ids on the CPU, keeping only its output (every position's).
    pub fn run_ids(&self, ids: &[u32]) -> Result<ForwardOutput> {
        let pass = on_cpu(self.pass(&Cpu, PassRequest::ids(ids)))?;
        pass.output.ok_or(VizError::EmptyText)
    }

    /// The next-token logits (vocab) after `new_ids`, which follow the `cache.len()` tokens
    /// the cache holds; their keys and values join the cache. Generation calls this once a
    /// token: one new row of attention per layer.
    pub fn next_logits(&self, new_ids: &[u32], cache: &mut KvCache) -> Result<Array1<f32>> {
        if !self.config.has_lm_head() {
            return Err(VizError::NoLmHead);
        }
        let request = PassRequest::ids(new_ids)
            .after(cache)
            .keeping(Keep::Output(Logits::Last));
        let logits = on_cpu(self.pass(&Cpu, request))?.into_logits()?; // (1, vocab)
        Ok(logits.row(0).to_owned())
    }

    /// An encoder-decoder's translation of `source` on the CPU: the greedy decoding and the
    /// traced final passes (see `translate`).
    pub fn translate(&self, source: &str) -> Result<Translation> {
        if self.kind() != Kind::EncoderDecoder {
            return Err(VizError::NotEncoderDecoder);
        }
        let pass = on_cpu(self.pass(&Cpu, PassRequest::text(source)))?;
        let (output, steps, finished) = pass.decoding.clone().unwrap_or_default();
        Ok(Translation {
            trace: pass.into_trace(),
            output,
            steps,
            finished,
        })
    }
}
