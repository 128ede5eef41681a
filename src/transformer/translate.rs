//! An encoder-decoder at work: the encoder reads the source once, then the decoder writes the
//! output greedily, one token a pass, each pass cross-attending to the encoder's output, until
//! it predicts the end token (the start token again) or fills the context. The last pass, over
//! the start token and every decoded token, is traced with the encoder's pass inside it.

use ndarray::Axis;

use super::request::{DecodedToken, Keep, Pass};
use super::Transformer;
use crate::error::{Result, VizError};
use crate::model::attention::probabilities_of;
use crate::model::backend::{on_cpu, Backend};
use crate::model::cpu::Cpu;
use crate::model::edits::{Edits, Site, With};
use crate::model::forward::{decode, encode_source, Logits};
use crate::tensor::top_ids;
use crate::trace::{NoRecorder, Readback, Trace, TraceRecorder};

impl Transformer {
    /// Characters of `text` this model's vocabulary cannot spell (a byte-level vocabulary
    /// learned from a small alphabet drops the rest without a word).
    fn unspellable(&self, text: &str) -> String {
        let mut dropped = String::new();
        for ch in text.chars() {
            if dropped.contains(ch) {
                continue;
            }
            let spelled = self
                .tokenizer
                .encode(&ch.to_string(), 8)
                .map(|e| e.tokens.iter().any(|t| !t.special))
                .unwrap_or(false);
            if !spelled {
                dropped.push(ch);
            }
        }
        dropped
    }

    /// What the vocabulary spells, for messages: its ordinary tokens when there are few.
    fn alphabet(&self) -> String {
        let ordinary: Vec<String> = (0..self.tokenizer.vocab_size() as u32)
            .filter(|&id| !self.tokenizer.is_special(id))
            .filter_map(|id| self.tokenizer.decode(&[id]).ok())
            .collect();
        if ordinary.len() > 64 {
            return "the text it was trained on".into();
        }
        let shown: Vec<String> = ordinary
            .iter()
            .map(|t| {
                if t == " " {
                    "space".to_string()
                } else {
                    t.clone()
                }
            })
            .collect();
        shown.join(" ")
    }

    /// The pass of an encoder-decoder (`Transformer::pass` decides): encodes the source,
    /// decodes greedily and, unless `keep` asks for the output only, traces the final passes:
    /// the encoder's over the source, the decoder's over what it wrote. A device brings back
    /// with them what `Keep::Steps` names (the decoder's steps by their names, the encoder's
    /// behind `SOURCE_STEP`: as `Trace::named_steps` names them); the rest of both stays on
    /// the device until asked for (`GpuBackend::read_rest`), in one readback. The greedy
    /// steps need only their logits, which always come back.
    pub(super) async fn translate_pass<B: Backend>(
        &self,
        backend: &B,
        source: &str,
        keep: Keep,
        edits: &Edits,
    ) -> Result<Pass> {
        let readback = match keep {
            Keep::Output(_) => None,
            Keep::Steps(readback) => Some(readback),
            Keep::Layers => Some(Readback::Everything),
        };
        // A backend that fails during a pass (a GPU's lost device, say; it says why) leaves the
        // translation to the CPU.
        let on_the_cpu = |keep: Keep| on_cpu(self.translate_boxed(source, keep, edits));
        let traced = readback.is_some();
        let retry = || match traced {
            false => Keep::Output(Logits::Last),
            true => Keep::Layers,
        };
        let c = &self.config;
        if !c.is_encoder_decoder() {
            return Err(VizError::NotEncoderDecoder);
        }
        // The decoder grows a token a pass: a part can be switched off at every token (zeros,
        // a mean), not given one run's values.
        if edits
            .replacements
            .iter()
            .any(|r| matches!(r.with, With::Values(_)) || matches!(r.site, Site::Stream { .. }))
        {
            return Err(VizError::BadEdit(
                "an encoder-decoder writes a token a pass: its parts can be switched off \
                 (zeros or their mean), not patched from another run"
                    .into(),
            ));
        }
        edits.check(c, 1)?;
        let dropped = self.unspellable(source);
        if !dropped.is_empty() {
            return Err(VizError::Unspellable {
                dropped: format!("`{dropped}`"),
                allowed: self.alphabet(),
            });
        }
        let encoding = self.encode(source)?; // start token, then the source's
        let source_ids = encoding.ids();
        let start = encoding
            .tokens
            .first()
            .filter(|t| t.special)
            .map(|t| t.id)
            .ok_or_else(|| {
                VizError::BadTokenizer(
                    "an encoder-decoder's tokenizer must put a start token first".into(),
                )
            })?;
        // A backend that fails during a pass (a GPU's lost device, say; it says why) leaves the
        // translation to the CPU.
        let Some(memory) =
            encode_source(backend, &source_ids, &self.weights, c, &mut NoRecorder).await
        else {
            return on_the_cpu(retry());
        }; // (S, d)
        let info = |id: u32| {
            self.tokenizer
                .token_info(id)
                .ok_or(VizError::UnknownTokenId {
                    id,
                    vocab_size: self.tokenizer.vocab_size(),
                })
        };
        let mut target = vec![start];
        let mut steps = Vec::new();
        let mut finished = false;
        while target.len() < c.context {
            let Some(out) = decode(
                backend,
                &target,
                memory.view(),
                &self.weights,
                c,
                &mut NoRecorder,
                Logits::Last,
                edits,
            )
            .await
            else {
                return on_the_cpu(retry());
            };
            let logits = out.logits.ok_or(VizError::NoLmHead)?; // (1, vocab)
            let probabilities = probabilities_of(logits.index_axis(Axis(0), 0).to_owned()); // (vocab)
            let probabilities = probabilities.as_slice().expect("kept contiguous"); // (vocab)
            let ranked = top_ids(probabilities, 2); // the choice, then the runner-up
            let best = ranked[0];
            let runner_up = ranked
                .get(1)
                .map(|&id| info(id).map(|t| (t, probabilities[id as usize])))
                .transpose()?;
            steps.push(DecodedToken {
                token: info(best)?,
                probability: probabilities[best as usize],
                runner_up,
            });
            if best == start {
                finished = true;
                break;
            }
            target.push(best);
        }
        let output = self.tokenizer.decode(&target[1..])?;
        let Some(readback) = readback else {
            return Ok(Pass {
                trace: None,
                output: None,
                reused: 0,
                decoding: Some((output, steps, finished)),
            });
        };

        // The traced passes: the encoder's over the source, the decoder's over the output.
        let encoder_config = c.encoder_config();
        let mut source_rec = TraceRecorder::with_readback(&encoder_config, readback.of_source());
        let Some(memory) =
            encode_source(backend, &source_ids, &self.weights, c, &mut source_rec).await
        else {
            return on_the_cpu(retry());
        }; // (S, d)
        let mut rec = TraceRecorder::with_readback(c, readback);
        // The encoder's values left on the device stay there beside the decoder's.
        backend.keep_last_pass_rest();
        if decode(
            backend,
            &target,
            memory.view(),
            &self.weights,
            c,
            &mut rec,
            Logits::All,
            edits,
        )
        .await
        .is_none()
        {
            return on_the_cpu(retry());
        }
        let (steps_of_source, norms_of_source) = source_rec.into_parts();
        let (decoder_steps, decoder_norms) = rec.into_parts();
        let source_trace = Trace {
            model: encoder_config.name.clone(),
            config: encoder_config.clone(),
            text: source.to_string(),
            tokens: encoding.tokens,
            truncated: encoding.truncated,
            steps: steps_of_source,
            norms: norms_of_source,
            source: None,
        };
        let tokens = target
            .iter()
            .map(|&id| info(id))
            .collect::<Result<Vec<_>>>()?;
        let trace = Trace {
            model: c.name.clone(),
            config: c.clone(),
            text: output.clone(),
            tokens,
            truncated: None,
            steps: decoder_steps,
            norms: decoder_norms,
            source: Some(Box::new(source_trace)),
        };
        Ok(Pass {
            trace: Some(trace),
            output: None,
            reused: 0,
            decoding: Some((output, steps, finished)),
        })
    }

    /// `translate_pass` on the CPU, boxed (it runs inside another backend's failed one).
    fn translate_boxed<'s>(
        &'s self,
        source: &'s str,
        keep: Keep,
        edits: &'s Edits,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Pass>> + 's>> {
        Box::pin(self.translate_pass(&Cpu, source, keep, edits))
    }
}
