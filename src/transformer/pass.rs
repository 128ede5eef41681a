//! `Transformer::pass`: the one way into the model. A request names what the pass reads (a
//! text, its tokens, or bare ids), what it may continue (a causal model's last trace and the
//! KV cache holding its keys and values, or a cache the new tokens follow), and what it keeps
//! (the output only, every step, or what the views read of each layer). The model's kind
//! (encoder, causal decoder, encoder-decoder) is decided here, once; the CLI, the page's CPU
//! and GPU paths, generation and translation all come through it.

use std::sync::Arc;

use ndarray::ArrayView2;

use super::request::{Continue, Input, Keep, Kind, Pass, PassRequest};
use super::Transformer;
use crate::error::{Result, VizError};
use crate::model::backend::{on_cpu, Backend};
use crate::model::cpu::Cpu;
use crate::model::forward::{forward_with, Logits};
use crate::model::kv_cache::KvCache;
use crate::model::record::NoRecorder;
use crate::tokenize::Encoding;
use crate::trace::{ContinuedRecorder, LayeredRecorder, NormRecord, Readback, Step, Trace};

impl Transformer {
    /// The kind of this model.
    pub fn kind(&self) -> Kind {
        if self.config.is_encoder_decoder() {
            Kind::EncoderDecoder
        } else if self.config.causal {
            Kind::Causal
        } else {
            Kind::Encoder
        }
    }

    /// Runs one pass on `backend` (see the module). Asynchronous: a GPU's results come back
    /// asynchronously (natively, wait with `pollster::block_on`; on `Cpu`, `on_cpu` runs it
    /// to its end at once). A backend that fails during the pass (a GPU's lost device, which
    /// it reports) leaves the pass to the CPU, from the first token, and empties the cache.
    pub async fn pass<B: Backend>(
        &self,
        backend: &B,
        request: PassRequest<'_, B::Heads>,
    ) -> Result<Pass> {
        let PassRequest {
            input,
            continues,
            keep,
            edits,
        } = request;
        // Keys and values cached without the pass's changes cannot be reused with them. A
        // pass that follows a cache (`after`) changes only its own tokens: its edits are for
        // them (`Edits::from_token`), and they must not reach back into the cached ones.
        let continues = match continues {
            Some(Continue::Trace(_, cache)) if !edits.is_empty() => {
                cache.truncate_with(0, |h, n| backend.first_tokens(h, n));
                None
            }
            Some(Continue::After(_)) if edits.without_position || edits.without_mask => {
                return Err(VizError::BadEdit(
                    "without the positional encoding or the mask a pass computes every token: \
                     it cannot follow cached ones"
                        .into(),
                ))
            }
            other => other,
        };
        if self.kind() == Kind::EncoderDecoder {
            let source = match input {
                Input::Text(text) | Input::Tokens(_, text) => text,
                Input::Ids(_) => {
                    return Err(VizError::BadConfig(format!(
                        "{} is an encoder-decoder: it writes from a source text, it does not \
                         continue ids",
                        self.config.name
                    )))
                }
            };
            if let Some(Continue::Trace(_, cache) | Continue::After(cache)) = continues {
                cache.truncate_with(0, |h, n| backend.first_tokens(h, n));
            }
            return self.translate_pass(backend, source, keep, edits).await;
        }
        let (encoding, text) = match input {
            Input::Text(text) => (self.encode(text)?, text),
            Input::Tokens(encoding, text) => (encoding, text),
            Input::Ids(ids) => (self.encoding_of(ids)?, ""),
        };
        let ids = encoding.ids();
        if ids.is_empty() {
            return Err(VizError::EmptyText);
        }
        edits.check(&self.config, ids.len())?;
        let (previous, cache, after) = match continues {
            Some(Continue::Trace(previous, cache)) => (previous, Some(cache), false),
            Some(Continue::After(cache)) => (None, Some(cache), true),
            None => (None, None, false),
        };
        if after {
            self.check_after(&ids, cache.as_deref().map_or(0, KvCache::len))?;
        }
        let mut cache = match (self.kind(), cache) {
            (Kind::Causal, cache) => cache,
            (_, Some(cache)) => {
                // Only a causal model's earlier tokens stay as they were.
                cache.truncate_with(0, |h, n| backend.first_tokens(h, n));
                None
            }
            (_, None) => None,
        };
        let reused = match (&mut cache, after) {
            (Some(cache), false) => {
                let reused = self.reusable(&ids, previous, cache);
                cache.truncate_with(reused, |h, n| backend.first_tokens(h, n));
                reused
            }
            _ => 0,
        };
        let first = cache.as_deref().map_or(0, KvCache::len);
        let prefix = previous.filter(|_| reused > 0).map(|p| (p, reused));
        let logits = match (self.kind(), &keep) {
            (_, Keep::Output(logits)) => *logits,
            (Kind::Causal, _) => Logits::Last,
            _ => Logits::All,
        };
        let new = &ids[reused..];
        let total = first + new.len();
        // What the CPU keeps if the backend fails during the pass.
        let retry = match &keep {
            Keep::Output(logits) => Keep::Output(*logits),
            _ => Keep::Layers,
        };
        let passed = match keep {
            Keep::Output(_) => {
                let out = forward_with(
                    backend,
                    new,
                    cache.as_deref_mut(),
                    &self.weights,
                    &self.config,
                    &mut NoRecorder,
                    logits,
                    edits,
                )
                .await;
                if let Some(out) = out {
                    check_finite(out.hidden.view())?;
                    return Ok(Pass {
                        trace: None,
                        output: Some(out),
                        reused,
                        decoding: None,
                    });
                }
                None
            }
            Keep::Layers if self.kind() == Kind::Causal && backend.values_at_once() => {
                let mut rec = LayeredRecorder::new(
                    &self.config,
                    self.weights.clone(),
                    Arc::new(edits.clone()),
                    prefix,
                    total,
                );
                forward_with(
                    backend,
                    new,
                    cache.as_deref_mut(),
                    &self.weights,
                    &self.config,
                    &mut rec,
                    logits,
                    edits,
                )
                .await
                .map(|_| rec.into_parts())
            }
            Keep::Layers | Keep::Steps(_) => {
                let readback = match keep {
                    Keep::Steps(readback) => readback,
                    _ => Readback::Everything,
                };
                if prefix.is_some() {
                    // The earlier pass's values left on the device are rows of this trace too.
                    backend.keep_last_pass_rest();
                }
                let mut rec = ContinuedRecorder::new(&self.config, readback, prefix, total);
                forward_with(
                    backend,
                    new,
                    cache.as_deref_mut(),
                    &self.weights,
                    &self.config,
                    &mut rec,
                    logits,
                    edits,
                )
                .await
                .map(|_| rec.into_parts())
            }
        };
        match passed {
            Some((steps, norms)) => {
                let trace = self.trace_of(encoding, text, steps, norms);
                // Values still on a GPU are checked once read.
                if !trace.awaits_device() {
                    if let Ok(hidden) = trace.final_hidden() {
                        check_finite(hidden)?;
                    }
                }
                Ok(Pass::traced(trace, reused))
            }
            None => {
                // The backend failed (it says why): its cache is lost with it, and the CPU
                // computes the pass from the first token.
                if let Some(cache) = cache {
                    *cache = KvCache::new();
                }
                if after {
                    return Err(VizError::BadConfig(
                        "the backend failed and lost the cached tokens this pass follows".into(),
                    ));
                }
                let request = PassRequest::tokens(encoding, text)
                    .keeping(retry)
                    .editing(edits);
                on_cpu(self.pass_boxed(&Cpu, request))
            }
        }
    }

    /// `pass`, boxed: a pass that fails over to the CPU runs the CPU's pass inside its own.
    pub(super) fn pass_boxed<'s, B: Backend>(
        &'s self,
        backend: &'s B,
        request: PassRequest<'s, B::Heads>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Pass>> + 's>> {
        Box::pin(self.pass(backend, request))
    }

    /// The tokens of bare ids, each checked against the vocabulary.
    fn encoding_of(&self, ids: &[u32]) -> Result<Encoding> {
        let tokens = ids
            .iter()
            .map(|&id| {
                self.tokenizer
                    .token_info(id)
                    .filter(|_| (id as usize) < self.config.vocab_size)
                    .ok_or(VizError::UnknownTokenId {
                        id,
                        vocab_size: self.config.vocab_size,
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Encoding {
            tokens,
            truncated: None,
        })
    }

    /// Checks that `ids` can follow the `cached` tokens a cache holds.
    fn check_after(&self, ids: &[u32], cached: usize) -> Result<()> {
        if cached > 0 && self.kind() != Kind::Causal {
            return Err(VizError::BadConfig(
                "only a causal model's earlier tokens can be cached".into(),
            ));
        }
        if cached + ids.len() > self.config.context {
            return Err(VizError::BadConfig(format!(
                "{} tokens do not fit the model's context of {}",
                cached + ids.len(),
                self.config.context
            )));
        }
        Ok(())
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

    /// A trace of this model from a pass's steps and norms.
    pub(super) fn trace_of(
        &self,
        encoding: Encoding,
        text: &str,
        steps: Vec<Step>,
        norms: Vec<NormRecord>,
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
}

/// A pass whose output is not finite (weights of 1e30, a NaN that slipped in) is refused with a
/// plain message rather than drawn: every view of it would be NaN, and charts cannot lay out
/// an infinite range. The last layer's output `hidden` carries any NaN or infinity from before
/// it (every later value depends on it).
fn check_finite(hidden: ArrayView2<f32>) -> Result<()> {
    if hidden.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(VizError::NotFinite("the last layer's output".into()))
    }
}
