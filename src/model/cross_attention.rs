//! Cross-attention of an encoder-decoder's decoder layer: the queries come from the decoder's
//! stream (one per target token), the keys and values from the encoder's output (one per
//! source token). Nothing is masked: the whole source is known before decoding starts. The
//! same head arithmetic as self-attention (`attention.rs`), with two inputs instead of one.

use super::attention::{as_heads, scaled_scores};
use super::backend::{Backend, Shaped};
use super::config::ModelConfig;
use super::edits::Edits;
use super::record::{Op, Recorder};
use super::weights::AttentionWeights;

/// Cross-attention of one layer: `x` (T, d_model) is the decoder's stream (read from op
/// `input`), `memory` (S, d_model) the encoder's output. Returns the (T, d_model) output
/// projection. `edits` may overwrite heads' outputs (`Site::CrossHead`).
#[allow(clippy::too_many_arguments)]
pub fn cross_attention<B: Backend, R: Recorder>(
    backend: &B,
    x: &B::Rows,
    memory: &B::Rows,
    w: &AttentionWeights,
    c: &ModelConfig,
    layer: usize,
    input: Op,
    rec: &mut R,
    edits: &Edits,
) -> B::Rows {
    let l = Some(layer);
    let (heads, kv_heads, hd) = (c.n_heads, c.n_kv_heads, c.head_dim);
    let (t, s) = (x.dims()[0], memory.dims()[0]);
    let q = backend.split_heads(backend.linear(x, &w.query), heads, hd); // (heads, T, hd)
    let k = backend.split_heads(backend.linear(memory, &w.key), kv_heads, hd); // (kv_heads, S, hd)
    let v = backend.split_heads(backend.linear(memory, &w.value), kv_heads, hd); // (kv_heads, S, hd)
    rec.step(Op::CrossQuery, l, &[input], || backend.trace_heads(&q));
    rec.step(Op::CrossKey, l, &[Op::EncoderOutput], || {
        backend.trace_heads(&k)
    });
    rec.step(Op::CrossValue, l, &[Op::EncoderOutput], || {
        backend.trace_heads(&v)
    });
    let scale = 1.0 / (hd as f32).sqrt();
    let group = c.group_size();
    let (weights, head_out) = backend.attend(&q, &k, &v, group, scale, None); // (heads, T, S), (heads, T, hd)
    let head_out = match edits.heads(layer, true, t, hd) {
        Some(o) => backend.overwrite_heads(head_out, &o), // (heads, T, hd)
        None => head_out,
    };
    // The scores stay where `attend` computed them (a GPU keeps them): the trace computes them
    // again from the queries and keys it keeps, when read.
    rec.derived_step(
        Op::CrossScores,
        l,
        &[Op::CrossQuery, Op::CrossKey],
        &[heads, t, s],
        || backend.trace_heads(&backend.scores(&q, &k, group, scale, None)),
        move |qk| {
            scaled_scores(as_heads(&qk[0]), as_heads(&qk[1]), group, scale).into_dyn()
            // (heads, T, S)
        },
    );
    rec.step(Op::CrossSoftmax, l, &[Op::CrossScores], || {
        backend.heads_into_trace(weights)
    });
    rec.step(
        Op::CrossWeightedSum,
        l,
        &[Op::CrossSoftmax, Op::CrossValue],
        || backend.trace_heads(&head_out),
    );
    let concat = backend.merge_heads(head_out); // (T, heads * hd)
    debug_assert_eq!(
        concat.dims(),
        [t, heads * hd],
        "one row per target token, whatever S = {s}"
    );
    rec.step(Op::CrossConcat, l, &[Op::CrossWeightedSum], || {
        backend.trace_rows(&concat)
    });
    let out = backend.linear(&concat, &w.output); // (T, d_model)
    rec.step(Op::CrossOutput, l, &[Op::CrossConcat], || {
        backend.trace_rows(&out)
    });
    out
}
