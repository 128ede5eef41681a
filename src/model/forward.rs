//! The one forward pass, for every config, reporting each intermediate to a `Recorder`.

use ndarray::{s, Array1, Array2, ArrayView2};

use super::attention::{self_attention, softmax_rows};
use super::cross_attention::cross_attention;
use super::config::{ModelConfig, NormPlace};
use super::ffn::feed_forward;
use super::backend::{on_cpu, Backend, Cpu};
use super::norm::row_mean_std;
use super::kv_cache::KvCache;
use super::weights::{LayerWeights, NormWeights, Weights};
use super::embed::embed;
use crate::trace::{NormStats, Op, Recorder};

pub struct ForwardOutput {
    /// (T, d_model): the last layer's output (after the final norm for pre-LN models).
    pub hidden: Array2<f32>,
    /// (T, vocab) (or (1, vocab) for the last position only), when the model has a
    /// language-model head.
    pub logits: Option<Array2<f32>>,
}

#[allow(clippy::too_many_arguments)]
async fn norm_step<B: Backend, R: Recorder>(
    backend: &B,
    x: ArrayView2<'_, f32>,
    w: &NormWeights,
    c: &ModelConfig,
    op: Op,
    layer: Option<usize>,
    input: Op,
    rec: &mut R,
) -> Array2<f32> {
    let y = backend.norm(c.norm, w, x, c.norm_eps).await; // (T, d)
    rec.step(op, layer, &[input], || y.clone().into_dyn());
    rec.norm_stats(layer, || {
        let (input_mean, input_std) = row_mean_std(x); // (T), (T)
        let (output_mean, output_std) = row_mean_std(y.view()); // (T), (T)
        NormStats {
            input_mean: input_mean.to_vec(),
            input_std: input_std.to_vec(),
            output_mean: output_mean.to_vec(),
            output_std: output_std.to_vec(),
            gamma: w.gamma.to_vec(),
            beta: w.beta.as_ref().map(|b| b.to_vec()),
        }
    });
    y
}

/// Which positions' logits a pass computes. The unembedding is the largest matrix of a small
/// model (SmolLM2: 49,152 x 576, a fifth of a pass at every position): predicting the next
/// token needs only the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    All,
    Last,
}

/// One layer on its (T, d) input `x`, read from the op `stream`; returns the layer's output
/// and the op that holds it. With `cache`, `x` holds the new tokens only, at positions
/// `first`, `first + 1`, ... (see `self_attention`). An encoder-decoder's decoder layer also
/// reads `memory`, the encoder's (S, d) output, through its cross-attention.
#[allow(clippy::too_many_arguments)]
pub async fn layer_forward<B: Backend, R: Recorder>(
    backend: &B,
    x: ArrayView2<'_, f32>,
    lw: &LayerWeights,
    c: &ModelConfig,
    i: usize,
    stream: Op,
    rec: &mut R,
    cache: Option<&mut KvCache>,
    first: usize,
    memory: Option<ArrayView2<'_, f32>>,
) -> (Array2<f32>, Op) {
    let l = Some(i);
    rec.layer_input(i, stream);
    let cross = lw.cross.as_ref().zip(memory);
    debug_assert_eq!(lw.cross.is_some(), cross.is_some(), "a decoder layer with cross-attention needs the encoder's output");
    match c.norm_place {
        NormPlace::Post => {
            let mut x = x.to_owned(); // (T, d)
            let attn = self_attention(backend, x.view(), &lw.attention, c, i, stream, rec, cache, first).await; // (T, d)
            x += &attn; // (T, d)
            rec.step(Op::AttentionResidual, l, &[stream, Op::OutputProjection], || x.clone().into_dyn());
            x = norm_step(backend, x.view(), &lw.attention_norm, c, Op::AttentionNorm, l, Op::AttentionResidual, rec).await; // (T, d)
            let mut ffn_input = Op::AttentionNorm;
            if let Some((xw, memory)) = cross {
                let read = cross_attention(backend, x.view(), memory, &xw.attention, c, i, Op::AttentionNorm, rec).await; // (T, d)
                x += &read; // (T, d)
                rec.step(Op::CrossResidual, l, &[Op::AttentionNorm, Op::CrossOutput], || x.clone().into_dyn());
                x = norm_step(backend, x.view(), &xw.norm, c, Op::CrossNorm, l, Op::CrossResidual, rec).await; // (T, d)
                ffn_input = Op::CrossNorm;
            }
            let ffn = feed_forward(backend, x.view(), &lw.ffn, c.activation, i, ffn_input, rec).await; // (T, d)
            x += &ffn; // (T, d)
            rec.step(Op::FfnResidual, l, &[ffn_input, Op::FfnDown], || x.clone().into_dyn());
            x = norm_step(backend, x.view(), &lw.ffn_norm, c, Op::FfnNorm, l, Op::FfnResidual, rec).await; // (T, d)
            (x, Op::FfnNorm)
        }
        NormPlace::Pre => {
            let h = norm_step(backend, x, &lw.attention_norm, c, Op::AttentionNorm, l, stream, rec).await; // (T, d)
            let attn = self_attention(backend, h.view(), &lw.attention, c, i, Op::AttentionNorm, rec, cache, first).await; // (T, d)
            let mut x = &x + &attn; // (T, d)
            rec.step(Op::AttentionResidual, l, &[stream, Op::OutputProjection], || x.clone().into_dyn());
            let mut sum = Op::AttentionResidual;
            if let Some((xw, memory)) = cross {
                let h = norm_step(backend, x.view(), &xw.norm, c, Op::CrossNorm, l, Op::AttentionResidual, rec).await; // (T, d)
                let read = cross_attention(backend, h.view(), memory, &xw.attention, c, i, Op::CrossNorm, rec).await; // (T, d)
                x += &read; // (T, d)
                rec.step(Op::CrossResidual, l, &[Op::AttentionResidual, Op::CrossOutput], || x.clone().into_dyn());
                sum = Op::CrossResidual;
            }
            let h = norm_step(backend, x.view(), &lw.ffn_norm, c, Op::FfnNorm, l, sum, rec).await; // (T, d)
            let ffn = feed_forward(backend, h.view(), &lw.ffn, c.activation, i, Op::FfnNorm, rec).await; // (T, d)
            x += &ffn; // (T, d)
            rec.step(Op::FfnResidual, l, &[sum, Op::FfnDown], || x.clone().into_dyn());
            (x, Op::FfnResidual)
        }
    }
}

/// Runs the model on token ids (already within the context; `Weights::check` has passed),
/// computing every position's logits.
pub fn forward<R: Recorder>(ids: &[u32], w: &Weights, c: &ModelConfig, rec: &mut R) -> ForwardOutput {
    forward_cached(ids, None, w, c, rec, Logits::All)
}

/// Runs the model on the new token ids after the `cache.len()` tokens already cached (a causal
/// model's earlier pass), appending their keys and values to the cache. Without a cache, or
/// with an empty one, this is the whole pass. The recorder sees the new tokens' rows only.
pub fn forward_cached<R: Recorder>(
    ids: &[u32],
    cache: Option<&mut KvCache>,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    logits: Logits,
) -> ForwardOutput {
    on_cpu(forward_with(&Cpu, ids, cache, w, c, rec, logits))
}

/// `forward_cached` on `backend`.
#[allow(clippy::too_many_arguments)]
pub async fn forward_with<B: Backend, R: Recorder>(
    backend: &B,
    ids: &[u32],
    cache: Option<&mut KvCache>,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    logits: Logits,
) -> ForwardOutput {
    debug_assert!(!c.is_encoder_decoder(), "an encoder-decoder's decoder runs through `decode`, with the encoder's output");
    pass(backend, ids, cache, None, w, c, rec, logits).await
}

/// The encoder of an encoder-decoder on the source ids (within the context): the same
/// embedding and layers as any model, with bidirectional attention (`encoder_config`).
/// `rec` sees the encoder's steps, as an encoder's trace. Returns its (S, d_model) output.
pub async fn encode_source<B: Backend, R: Recorder>(backend: &B, source: &[u32], w: &Weights, c: &ModelConfig, rec: &mut R) -> Array2<f32> {
    let ec = c.encoder_config();
    rec.step(Op::Tokenize, None, &[], || Array1::from_iter(source.iter().map(|&i| i as f32)).into_dyn());
    let (mut x, mut stream) = embed(source, 0, w, &ec, rec); // (S, d)
    for (i, lw) in w.encoder_layers.iter().enumerate() {
        (x, stream) = layer_forward(backend, x.view(), lw, &ec, i, stream, rec, None, 0, None).await; // (S, d)
    }
    if let (NormPlace::Pre, Some(n)) = (ec.norm_place, &w.encoder_final_norm) {
        x = norm_step(backend, x.view(), n, &ec, Op::FinalNorm, None, stream, rec).await; // (S, d)
    }
    x
}

/// The decoder of an encoder-decoder on the target ids (the start token and the tokens
/// decoded so far), every layer cross-attending to `memory`, the encoder's (S, d_model)
/// output. The same pass as every decoder's, plus the cross-attention sublayers.
pub async fn decode<B: Backend, R: Recorder>(backend: &B, target: &[u32], memory: ArrayView2<'_, f32>, w: &Weights, c: &ModelConfig, rec: &mut R, logits: Logits) -> ForwardOutput {
    pass(backend, target, None, Some(memory), w, c, rec, logits).await
}

#[allow(clippy::too_many_arguments)]
async fn pass<B: Backend, R: Recorder>(
    backend: &B,
    ids: &[u32],
    mut cache: Option<&mut KvCache>,
    memory: Option<ArrayView2<'_, f32>>,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    logits: Logits,
) -> ForwardOutput {
    // Only a causal model's earlier tokens are unchanged by later ones.
    let first = match &cache {
        Some(cache) if c.causal => cache.len(),
        _ => 0,
    };
    if !c.causal {
        cache = None;
    }
    rec.step(Op::Tokenize, None, &[], || Array1::from_iter(ids.iter().map(|&i| i as f32)).into_dyn());
    let (mut x, mut stream) = embed(ids, first, w, c, rec); // (T, d)
    if let Some(n) = &w.embedding_norm {
        x = norm_step(backend, x.view(), n, c, Op::EmbeddingNorm, None, stream, rec).await; // (T, d)
        stream = Op::EmbeddingNorm;
    }
    if let Some(m) = memory {
        rec.step(Op::EncoderOutput, None, &[], || m.to_owned().into_dyn()); // (S, d)
    }
    for (i, lw) in w.layers.iter().enumerate() {
        (x, stream) = layer_forward(backend, x.view(), lw, c, i, stream, rec, cache.as_deref_mut(), first, memory).await; // (T, d)
    }
    if let (NormPlace::Pre, Some(n)) = (c.norm_place, &w.final_norm) {
        x = norm_step(backend, x.view(), n, c, Op::FinalNorm, None, stream, rec).await; // (T, d)
        stream = Op::FinalNorm;
    }
    let logits = match w.unembedding(c) {
        None => None,
        Some(u) => {
            let rows = match logits {
                Logits::All => x.view(),                            // (T, d)
                Logits::Last => x.slice(s![x.nrows() - 1.., ..]), // (1, d)
            };
            let logits = backend.unembed(rows, u).await; // (rows, vocab) = (rows, d) · (d, vocab)
            rec.step(Op::Unembed, None, &[stream], || logits.clone().into_dyn());
            rec.step(Op::NextTokenProbabilities, None, &[Op::Unembed], || {
                let mut last = logits.row(logits.nrows() - 1).to_owned().insert_axis(ndarray::Axis(0)); // (1, vocab)
                softmax_rows(last.view_mut());
                last.remove_axis(ndarray::Axis(0)).into_dyn() // (vocab)
            });
            Some(logits)
        }
    };
    ForwardOutput { hidden: x, logits }
}
