//! Cross-attention of an encoder-decoder's decoder layer: the queries come from the decoder's
//! stream (one per target token), the keys and values from the encoder's output (one per
//! source token). Nothing is masked: the whole source is known before decoding starts. The
//! same head arithmetic as self-attention (`attention.rs`), with two inputs instead of one.

use ndarray::{Array2, ArrayView2};

use super::attention::{as_heads, merge_heads, scaled_scores, split_heads};
use super::backend::Backend;
use super::config::ModelConfig;
use super::weights::AttentionWeights;
use crate::trace::{Op, Recorder};

/// Cross-attention of one layer: `x` (T, d_model) is the decoder's stream (read from op
/// `input`), `memory` (S, d_model) the encoder's output. Returns the (T, d_model) output
/// projection.
#[allow(clippy::too_many_arguments)]
pub async fn cross_attention<B: Backend, R: Recorder>(
    backend: &B,
    x: ArrayView2<'_, f32>,
    memory: ArrayView2<'_, f32>,
    w: &AttentionWeights,
    c: &ModelConfig,
    layer: usize,
    input: Op,
    rec: &mut R,
) -> Array2<f32> {
    let l = Some(layer);
    let (heads, kv_heads, hd) = (c.n_heads, c.n_kv_heads, c.head_dim);
    let (t, s) = (x.nrows(), memory.nrows());
    let q = split_heads(backend.linear(x, &w.query).await, heads, hd); // (heads, T, hd)
    let k = split_heads(backend.linear(memory, &w.key).await, kv_heads, hd); // (kv_heads, S, hd)
    let v = split_heads(backend.linear(memory, &w.value).await, kv_heads, hd); // (kv_heads, S, hd)
    rec.step(Op::CrossQuery, l, &[input], || q.clone().into_dyn());
    rec.step(Op::CrossKey, l, &[Op::EncoderOutput], || k.clone().into_dyn());
    rec.step(Op::CrossValue, l, &[Op::EncoderOutput], || v.clone().into_dyn());
    let scale = 1.0 / (hd as f32).sqrt();
    let group = c.group_size();
    let (weights, head_out) = backend.attend(q.view(), k.view(), v.view(), group, scale, None).await; // (heads, T, S), (heads, T, hd)
    // The scores stay where `attend` computed them (a GPU keeps them): the trace computes them
    // again from the queries and keys it keeps, when read.
    rec.derived_step(Op::CrossScores, l, &[Op::CrossQuery, Op::CrossKey], &[heads, t, s], || scaled_scores(q.view(), k.view(), group, scale).into_dyn(), move |qk| {
        scaled_scores(as_heads(&qk[0]), as_heads(&qk[1]), group, scale).into_dyn() // (heads, T, S)
    });
    rec.step(Op::CrossSoftmax, l, &[Op::CrossScores], || weights.into_dyn());
    rec.step(Op::CrossWeightedSum, l, &[Op::CrossSoftmax, Op::CrossValue], || head_out.clone().into_dyn());
    let concat = merge_heads(head_out); // (T, heads * hd)
    debug_assert_eq!(concat.dim(), (t, heads * hd), "one row per target token, whatever S = {s}");
    rec.step(Op::CrossConcat, l, &[Op::CrossWeightedSum], || concat.clone().into_dyn());
    let out = backend.linear(concat.view(), &w.output).await; // (T, d_model)
    rec.step(Op::CrossOutput, l, &[Op::CrossConcat], || out.clone().into_dyn());
    out
}
