//! `Transformer`: a config, its weights and its tokenizer, checked to fit together; the
//! entry point from a sentence to a trace.

use std::sync::Arc;

use ndarray::Array1;

use crate::error::{Result, VizError};
use crate::model::backend::{on_cpu, Backend, Cpu};
use crate::model::forward::{forward_cached, forward_with, Logits};
use crate::model::kv_cache::KvCache;
use crate::model::{forward, ForwardOutput, ModelConfig, Weights};
use crate::tokenize::{Encoding, Tokenizer};
use crate::trace::{
    ContinuedRecorder, LayeredRecorder, NoRecorder, Readback, Trace, TraceRecorder,
};

pub struct Transformer {
    pub config: ModelConfig,
    /// Shared with the trace steps that compute a layer again when read.
    pub weights: Arc<Weights>,
    pub tokenizer: Box<dyn Tokenizer>,
}

/// A traced pass that may have continued an earlier one.
pub struct Continued {
    pub trace: Trace,
    /// Tokens taken from the earlier pass (their keys and values from the cache, their trace
    /// rows from its trace) rather than computed again.
    pub reused: usize,
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

    /// The forward pass with every intermediate recorded.
    /// An encoder-decoder's trace is its decoder's pass over what it wrote from `text`, the
    /// encoder's pass over `text` inside (`translate`).
    pub fn trace(&self, text: &str) -> Result<Trace> {
        if self.config.is_encoder_decoder() {
            return Ok(self.translate(text)?.trace);
        }
        let encoding = self.encode(text)?;
        Ok(self.trace_ids(encoding, text))
    }

    /// `trace` with every operation of the pass computed by `backend`, recorded whole (no
    /// step is left to be computed again when read, as a causal model's `trace` leaves a
    /// layer's inner steps: that would compute them on the CPU).
    /// Asynchronous: a GPU's results come back asynchronously (natively, wait on it with
    /// `pollster::block_on`; on `Cpu`, `model::backend::on_cpu` runs it to its end at once).
    /// An encoder-decoder's trace is `translate_with`'s (the text is its source).
    pub async fn trace_with<B: Backend>(&self, backend: &B, text: &str) -> Result<Trace> {
        if self.config.is_encoder_decoder() {
            return Ok(self.translate_with(backend, text).await?.trace);
        }
        let encoding = self.encode(text)?;
        Ok(self
            .trace_whole(backend, encoding, text, Readback::Everything)
            .await)
    }

    /// `trace_with` on tokens that came from `encode` or `encode_within` (a decoder-only
    /// model or an encoder: an encoder-decoder reads its source, `translate_with`).
    pub async fn trace_encoding_with<B: Backend>(
        &self,
        backend: &B,
        encoding: Encoding,
        text: &str,
    ) -> Result<Trace> {
        self.trace_reading(backend, encoding, text, Readback::Everything)
            .await
    }

    /// `trace_encoding_with`, the device's readback bringing back with the pass only the
    /// values `readback` names (a GPU leaves the others on the device until asked for:
    /// `GpuBackend::read_rest`; until then they read as zeros, `TensorData::awaits_device`).
    pub async fn trace_reading<B: Backend>(
        &self,
        backend: &B,
        encoding: Encoding,
        text: &str,
        readback: Readback,
    ) -> Result<Trace> {
        if self.config.is_encoder_decoder() {
            return Err(VizError::BadConfig(format!(
                "{} is an encoder-decoder: its pass starts from the source text (`translate_with`)",
                self.config.name
            )));
        }
        Ok(self.trace_whole(backend, encoding, text, readback).await)
    }

    /// The pass of a decoder-only model or an encoder on `backend`, every step recorded.
    async fn trace_whole<B: Backend>(
        &self,
        backend: &B,
        encoding: Encoding,
        text: &str,
        readback: Readback,
    ) -> Trace {
        let mut rec = TraceRecorder::with_readback(&self.config, readback);
        let logits = if self.config.causal {
            Logits::Last
        } else {
            Logits::All
        };
        let ids = encoding.ids();
        let (steps, norms) = match forward_with(
            backend,
            &ids,
            None,
            &self.weights,
            &self.config,
            &mut rec,
            logits,
        )
        .await
        {
            Some(_) => rec.into_parts(),
            None => {
                // The backend failed during the pass (a GPU's lost device, say; it says why):
                // the CPU computes the pass again.
                let mut rec = TraceRecorder::new(&self.config);
                forward_cached(&ids, None, &self.weights, &self.config, &mut rec, logits);
                rec.into_parts()
            }
        };
        self.trace_of(encoding, text, steps, norms)
    }

    /// The plain forward pass, keeping only its output.
    pub fn run(&self, text: &str) -> Result<ForwardOutput> {
        let encoding = self.encode(text)?;
        Ok(self.run_ids(&encoding.ids()))
    }

    /// The plain forward pass on ids that came from `encode`.
    pub fn run_ids(&self, ids: &[u32]) -> ForwardOutput {
        forward(ids, &self.weights, &self.config, &mut NoRecorder)
    }

    /// The traced forward pass on ids that came from `encode` (a decoder-only model or an
    /// encoder: an encoder-decoder needs its source, `translate`).
    pub fn trace_ids(&self, encoding: Encoding, text: &str) -> Trace {
        if self.config.causal {
            return self
                .continue_trace(encoding, text, None, &mut KvCache::new())
                .trace;
        }
        on_cpu(self.trace_whole(&Cpu, encoding, text, Readback::Everything))
    }

    /// How many of `ids`' first tokens a pass continuing `previous` (with `cache`) can take
    /// from it: those up to the first that differs, but never the last one (its logits give
    /// the next-token prediction).
    pub fn reusable<H: Clone>(
        &self,
        ids: &[u32],
        previous: Option<&Trace>,
        cache: &KvCache<H>,
    ) -> usize {
        let same = previous
            .filter(|p| self.config.causal && p.config == self.config && p.len() == cache.len())
            .map_or(0, |p| {
                p.tokens
                    .iter()
                    .zip(ids)
                    .take_while(|(a, b)| a.id == **b)
                    .count()
            });
        same.min(ids.len().saturating_sub(1))
    }

    /// The traced pass of a causal model on `encoding`, continuing `previous` (this model's
    /// last trace, whose keys and values `cache` holds): the tokens up to the first one that
    /// differs are reused and only the rest are computed. A layer's detailed steps are
    /// computed again from its stored input when read (`LayeredRecorder`).
    pub fn continue_trace(
        &self,
        encoding: Encoding,
        text: &str,
        previous: Option<&Trace>,
        cache: &mut KvCache,
    ) -> Continued {
        let ids = encoding.ids();
        let reused = self.reusable(&ids, previous, cache);
        cache.truncate(reused);
        let prefix = previous.filter(|_| reused > 0).map(|p| (p, reused));
        let mut rec = LayeredRecorder::new(&self.config, self.weights.clone(), prefix, ids.len());
        forward_cached(
            &ids[reused..],
            Some(cache),
            &self.weights,
            &self.config,
            &mut rec,
            Logits::Last,
        );
        let (steps, norms) = rec.into_parts();
        let trace = self.trace_of(encoding, text, steps, norms);
        Continued { trace, reused }
    }

    /// `continue_trace` with every operation computed by `backend`, whose tensors `cache`
    /// holds (a GPU's stay on the device), and every step recorded (`ContinuedRecorder`: a
    /// step is the earlier trace's first rows then the new ones, joined when read). The
    /// device brings back with the pass the new rows of the steps `readback` names; the
    /// others stay on it with the earlier pass's, until asked for (`GpuBackend::read_rest`).
    /// A backend that fails during the pass (a GPU's lost device): the CPU computes the whole
    /// pass again (nothing reused) and `cache` is emptied. An encoder is traced from the
    /// start every time (`trace_reading`): only a causal model's earlier tokens stay as they
    /// were.
    pub async fn continue_trace_with<B: Backend>(
        &self,
        backend: &B,
        encoding: Encoding,
        text: &str,
        previous: Option<&Trace>,
        cache: &mut KvCache<B::Heads>,
        readback: Readback,
    ) -> Result<Continued> {
        if !self.config.causal || self.config.is_encoder_decoder() {
            cache.truncate_with(0, |h, n| backend.first_tokens(h, n));
            let trace = self
                .trace_reading(backend, encoding, text, readback)
                .await?;
            return Ok(Continued { trace, reused: 0 });
        }
        let ids = encoding.ids();
        let reused = self.reusable(&ids, previous, cache);
        cache.truncate_with(reused, |h, n| backend.first_tokens(h, n));
        let prefix = previous.filter(|_| reused > 0).map(|p| (p, reused));
        if prefix.is_some() {
            // The earlier pass's values left on the device are rows of this trace too.
            backend.keep_last_pass_rest();
        }
        let mut rec = ContinuedRecorder::new(&self.config, readback, prefix, ids.len());
        let passed = forward_with(
            backend,
            &ids[reused..],
            Some(&mut *cache),
            &self.weights,
            &self.config,
            &mut rec,
            Logits::Last,
        )
        .await;
        let (trace, reused) = match passed {
            Some(_) => {
                let (steps, norms) = rec.into_parts();
                (self.trace_of(encoding, text, steps, norms), reused)
            }
            None => {
                // The backend failed (it says why): its cache is lost with it.
                *cache = KvCache::new();
                (
                    self.continue_trace(encoding, text, None, &mut KvCache::new())
                        .trace,
                    0,
                )
            }
        };
        Ok(Continued { trace, reused })
    }

    /// A trace of this model from a pass's steps and norms.
    fn trace_of(
        &self,
        encoding: Encoding,
        text: &str,
        steps: Vec<crate::trace::Step>,
        norms: Vec<crate::trace::NormRecord>,
    ) -> Trace {
        Trace {
            model: self.config.name.clone(),
            config: self.config.clone(),
            text: text.to_string(),
            tokens: encoding.tokens,
            truncated: encoding.truncated,
            steps,
            norms,
            source: None,
        }
    }

    /// The next-token logits (vocab) after `new_ids`, which follow the `cache.len()` tokens
    /// the cache holds; their keys and values join the cache. Generation calls this once a
    /// token: one new row of attention per layer.
    pub fn next_logits(&self, new_ids: &[u32], cache: &mut KvCache) -> Result<Array1<f32>> {
        if !self.config.has_lm_head() {
            return Err(VizError::NoLmHead);
        }
        if self.config.is_encoder_decoder() {
            return Err(VizError::BadConfig(format!("{} is an encoder-decoder: it writes from a source (`translate`), it does not continue a text", self.config.name)));
        }
        if new_ids.is_empty() {
            return Err(VizError::EmptyText);
        }
        if !self.config.causal && !cache.is_empty() {
            return Err(VizError::BadConfig(
                "only a causal model's earlier tokens can be cached".into(),
            ));
        }
        if cache.len() + new_ids.len() > self.config.context {
            return Err(VizError::BadConfig(format!(
                "{} tokens do not fit the model's context of {}",
                cache.len() + new_ids.len(),
                self.config.context
            )));
        }
        if let Some(&bad) = new_ids
            .iter()
            .find(|&&id| id as usize >= self.config.vocab_size)
        {
            return Err(VizError::BadConfig(format!(
                "token id {bad} is outside the vocabulary of {}",
                self.config.vocab_size
            )));
        }
        let out = forward_cached(
            new_ids,
            Some(cache),
            &self.weights,
            &self.config,
            &mut NoRecorder,
            Logits::Last,
        );
        let logits = out.logits.ok_or(VizError::NoLmHead)?; // (1, vocab)
        Ok(logits.row(0).to_owned())
    }
}
