//! The one forward pass, for every config, reporting each intermediate to a `Recorder`.

use ndarray::{s, Array1, Array2, ArrayView2, ArrayViewD, Ix2};

use super::attention::{self_attention, softmax_rows};
use super::backend::{on_cpu, Backend, Shaped};
use super::config::{ModelConfig, NormPlace};
use super::cpu::Cpu;
use super::cross_attention::cross_attention;
use super::edits::Edits;
use super::embed::embed;
use super::ffn::feed_forward;
use super::kv_cache::KvCache;
use super::record::{NormRows, Op, Recorder};
use super::weights::{LayerWeights, NormWeights, Weights};
use crate::tensor::{row_major, Tensor, TensorData};

pub struct ForwardOutput {
    /// (T, d_model): the last layer's output (after the final norm for pre-LN models).
    pub hidden: Array2<f32>,
    /// (T, vocab) (or (1, vocab) for the last position only), when the model has a
    /// language-model head.
    pub logits: Option<Array2<f32>>,
}

#[allow(clippy::too_many_arguments)]
fn norm_step<B: Backend, R: Recorder>(
    backend: &B,
    x: &B::Rows,
    w: &NormWeights,
    c: &ModelConfig,
    op: Op,
    layer: Option<usize>,
    input: Op,
    rec: &mut R,
) -> B::Rows {
    let y = backend.norm(c.norm, w, x, c.norm_eps); // (T, d)
    rec.step(op, layer, &[input], || backend.trace_rows(&y));
    rec.norm_stats(layer, || NormRows {
        rows: backend.trace_rows(&backend.row_stats(x, &y)), // (T, 4)
        gamma: w.gamma.to_vec(),
        beta: w.beta.as_ref().map(|b| b.to_vec()),
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
pub fn layer_forward<B: Backend, R: Recorder>(
    backend: &B,
    x: B::Rows,
    lw: &LayerWeights,
    c: &ModelConfig,
    i: usize,
    stream: Op,
    rec: &mut R,
    cache: Option<&mut KvCache<B::Heads>>,
    first: usize,
    memory: Option<&B::Rows>,
    edits: &Edits,
) -> (B::Rows, Op) {
    let l = Some(i);
    rec.layer_input(i, stream);
    // A patched token's stream enters the layer as the other run's (the trace keeps the
    // stream as computed; a layer computed again on read patches it again).
    let x = match edits.stream(i, c.d_model) {
        Some(o) => backend.overwrite_rows(x, &o), // (T, d)
        None => x,
    };
    let cross = lw.cross.as_ref().zip(memory);
    debug_assert_eq!(
        lw.cross.is_some(),
        cross.is_some(),
        "a decoder layer with cross-attention needs the encoder's output"
    );
    match c.norm_place {
        NormPlace::Post => {
            let attn = self_attention(
                backend,
                &x,
                &lw.attention,
                c,
                i,
                stream,
                rec,
                cache,
                first,
                edits,
            ); // (T, d)
            if rec.layer_done() {
                return (x, stream);
            }
            let x = backend.add(x, &attn); // (T, d)
            rec.step(
                Op::AttentionResidual,
                l,
                &[stream, Op::OutputProjection],
                || backend.trace_rows(&x),
            );
            let mut x = norm_step(
                backend,
                &x,
                &lw.attention_norm,
                c,
                Op::AttentionNorm,
                l,
                Op::AttentionResidual,
                rec,
            ); // (T, d)
            let mut ffn_input = Op::AttentionNorm;
            if let Some((xw, memory)) = cross {
                let read = cross_attention(
                    backend,
                    &x,
                    memory,
                    &xw.attention,
                    c,
                    i,
                    Op::AttentionNorm,
                    rec,
                    edits,
                ); // (T, d)
                let sum = backend.add(x, &read); // (T, d)
                rec.step(
                    Op::CrossResidual,
                    l,
                    &[Op::AttentionNorm, Op::CrossOutput],
                    || backend.trace_rows(&sum),
                );
                x = norm_step(
                    backend,
                    &sum,
                    &xw.norm,
                    c,
                    Op::CrossNorm,
                    l,
                    Op::CrossResidual,
                    rec,
                ); // (T, d)
                ffn_input = Op::CrossNorm;
            }
            let ffn = feed_forward(
                backend,
                &x,
                &lw.ffn,
                c.activation,
                i,
                ffn_input,
                rec,
                edits.ffn(i, x.dims()[0], c.d_model).as_ref(),
            ); // (T, d)
            let x = backend.add(x, &ffn); // (T, d)
            rec.step(Op::FfnResidual, l, &[ffn_input, Op::FfnDown], || {
                backend.trace_rows(&x)
            });
            let x = norm_step(
                backend,
                &x,
                &lw.ffn_norm,
                c,
                Op::FfnNorm,
                l,
                Op::FfnResidual,
                rec,
            ); // (T, d)
            (x, Op::FfnNorm)
        }
        NormPlace::Pre => {
            let h = norm_step(
                backend,
                &x,
                &lw.attention_norm,
                c,
                Op::AttentionNorm,
                l,
                stream,
                rec,
            ); // (T, d)
            let attn = self_attention(
                backend,
                &h,
                &lw.attention,
                c,
                i,
                Op::AttentionNorm,
                rec,
                cache,
                first,
                edits,
            ); // (T, d)
            if rec.layer_done() {
                return (x, stream);
            }
            let mut x = backend.add(x, &attn); // (T, d)
            rec.step(
                Op::AttentionResidual,
                l,
                &[stream, Op::OutputProjection],
                || backend.trace_rows(&x),
            );
            let mut sum = Op::AttentionResidual;
            if let Some((xw, memory)) = cross {
                let h = norm_step(
                    backend,
                    &x,
                    &xw.norm,
                    c,
                    Op::CrossNorm,
                    l,
                    Op::AttentionResidual,
                    rec,
                ); // (T, d)
                let read = cross_attention(
                    backend,
                    &h,
                    memory,
                    &xw.attention,
                    c,
                    i,
                    Op::CrossNorm,
                    rec,
                    edits,
                ); // (T, d)
                x = backend.add(x, &read); // (T, d)
                rec.step(
                    Op::CrossResidual,
                    l,
                    &[Op::AttentionResidual, Op::CrossOutput],
                    || backend.trace_rows(&x),
                );
                sum = Op::CrossResidual;
            }
            let h = norm_step(backend, &x, &lw.ffn_norm, c, Op::FfnNorm, l, sum, rec); // (T, d)
            let ffn = feed_forward(
                backend,
                &h,
                &lw.ffn,
                c.activation,
                i,
                Op::FfnNorm,
                rec,
                edits.ffn(i, h.dims()[0], c.d_model).as_ref(),
            ); // (T, d)
            let x = backend.add(x, &ffn); // (T, d)
            rec.step(Op::FfnResidual, l, &[sum, Op::FfnDown], || {
                backend.trace_rows(&x)
            });
            (x, Op::FfnResidual)
        }
    }
}

/// Runs the model on token ids (already within the context; `Weights::check` has passed),
/// computing every position's logits.
pub fn forward<R: Recorder>(
    ids: &[u32],
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
) -> ForwardOutput {
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
    on_cpu(forward_with(
        &Cpu,
        ids,
        cache,
        w,
        c,
        rec,
        logits,
        Edits::NONE,
    ))
    .expect("the CPU's pass never fails")
}

/// `forward_cached` on `backend`. `None` when the backend failed during the pass (a GPU's
/// lost device or failed kernel, which `backend` reports): compute it again on the CPU, with
/// a new recorder (this one holds zeros where the device's values were). `edits` change the
/// pass (`Edits::check`ed against the model and the tokens; with edits, pass no cache that
/// holds tokens computed without them).
#[allow(clippy::too_many_arguments)]
pub async fn forward_with<B: Backend, R: Recorder>(
    backend: &B,
    ids: &[u32],
    cache: Option<&mut KvCache<B::Heads>>,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    logits: Logits,
    edits: &Edits,
) -> Option<ForwardOutput> {
    debug_assert!(
        !c.is_encoder_decoder(),
        "an encoder-decoder's decoder runs through `decode`, with the encoder's output"
    );
    let out = pass(backend, ids, cache, None, w, c, rec, logits, edits);
    finished(backend, out).await
}

/// The encoder of an encoder-decoder on the source ids (within the context): the same
/// embedding and layers as any model, with bidirectional attention (`encoder_config`).
/// `rec` sees the encoder's steps, as an encoder's trace. Returns its (S, d_model) output, or
/// `None` when the backend failed (as `forward_with`).
pub async fn encode_source<B: Backend, R: Recorder>(
    backend: &B,
    source: &[u32],
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
) -> Option<Array2<f32>> {
    let ec = c.encoder_config();
    rec.step(Op::Tokenize, None, &[], || {
        Tensor::from_array(Array1::from_iter(source.iter().map(|&i| i as f32)).into_dyn())
    });
    let (x, mut stream) = embed(source, 0, w, &ec, rec, true); // (S, d)
    let mut x = backend.rows(x); // (S, d)
    for (i, lw) in w.encoder_layers.iter().enumerate() {
        (x, stream) = layer_forward(
            backend,
            x,
            lw,
            &ec,
            i,
            stream,
            rec,
            None,
            0,
            None,
            Edits::NONE,
        );
        // (S, d)
    }
    if let (NormPlace::Pre, Some(n)) = (ec.norm_place, &w.encoder_final_norm) {
        x = norm_step(backend, &x, n, &ec, Op::FinalNorm, None, stream, rec); // (S, d)
    }
    let out = backend.rows_into_trace(x); // (S, d)
    backend.finish().await.then(|| rows_of(out))
}

/// The decoder of an encoder-decoder on the target ids (the start token and the tokens
/// decoded so far), every layer cross-attending to `memory`, the encoder's (S, d_model)
/// output. The same pass as every decoder's, plus the cross-attention sublayers. `None` when
/// the backend failed (as `forward_with`). `edits` change the decoder's layers only.
#[allow(clippy::too_many_arguments)]
pub async fn decode<B: Backend, R: Recorder>(
    backend: &B,
    target: &[u32],
    memory: ArrayView2<'_, f32>,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    logits: Logits,
    edits: &Edits,
) -> Option<ForwardOutput> {
    let out = pass(
        backend,
        target,
        None,
        Some(memory),
        w,
        c,
        rec,
        logits,
        edits,
    );
    finished(backend, out).await
}

/// A pass's output as the backend holds it, until its readback.
struct Pending {
    hidden: Tensor,
    logits: Option<Tensor>,
}

fn rows_of(t: Tensor) -> Array2<f32> {
    t.into_array()
        .into_dimensionality()
        .expect("a pass's output has two axes")
}

/// Waits for the backend's readback, then the pass's output.
async fn finished<B: Backend>(backend: &B, out: Pending) -> Option<ForwardOutput> {
    if !backend.finish().await {
        return None;
    }
    Some(ForwardOutput {
        hidden: rows_of(out.hidden),
        logits: out.logits.map(rows_of),
    })
}

#[allow(clippy::too_many_arguments)]
fn pass<B: Backend, R: Recorder>(
    backend: &B,
    ids: &[u32],
    mut cache: Option<&mut KvCache<B::Heads>>,
    memory: Option<ArrayView2<'_, f32>>,
    w: &Weights,
    c: &ModelConfig,
    rec: &mut R,
    logits: Logits,
    edits: &Edits,
) -> Pending {
    // Only a causal model's earlier tokens are unchanged by later ones.
    let first = match &cache {
        Some(cache) if c.causal => cache.len(),
        _ => 0,
    };
    if !c.causal {
        cache = None;
    }
    rec.pass_starts_at(first);
    rec.step(Op::Tokenize, None, &[], || {
        Tensor::from_array(Array1::from_iter(ids.iter().map(|&i| i as f32)).into_dyn())
    });
    let (x, mut stream) = embed(ids, first, w, c, rec, !edits.without_position); // (T, d)
    let mut x = backend.rows(x); // (T, d)
    if let Some(n) = &w.embedding_norm {
        x = norm_step(backend, &x, n, c, Op::EmbeddingNorm, None, stream, rec); // (T, d)
        stream = Op::EmbeddingNorm;
    }
    if let Some(m) = memory {
        rec.step(Op::EncoderOutput, None, &[], || {
            Tensor::from_array(m.to_owned().into_dyn())
        }); // (S, d)
    }
    let memory = memory.map(|m| backend.rows(m.to_owned())); // (S, d)
    for (i, lw) in w.layers.iter().enumerate() {
        (x, stream) = layer_forward(
            backend,
            x,
            lw,
            c,
            i,
            stream,
            rec,
            cache.as_deref_mut(),
            first,
            memory.as_ref(),
            edits,
        ); // (T, d)
    }
    if let (NormPlace::Pre, Some(n)) = (c.norm_place, &w.final_norm) {
        x = norm_step(backend, &x, n, c, Op::FinalNorm, None, stream, rec); // (T, d)
        stream = Op::FinalNorm;
    }
    let logits = w.unembedding(c).map(|u| {
        let logits = match logits {
            Logits::All => backend.unembed(&x, u), // (T, vocab) = (T, d) · (d, vocab)
            Logits::Last => backend.unembed(&backend.last_row(&x), u), // (1, vocab)
        };
        let vocab = logits.dims()[1];
        rec.step(Op::Unembed, None, &[stream], || backend.trace_rows(&logits));
        // Computed from the logits when read (cheap: one row's softmax).
        let probabilities = move |l: &[ArrayViewD<f32>]| {
            let logits = l[0]
                .view()
                .into_dimensionality::<Ix2>()
                .expect("logits are (rows, vocab)"); // (rows, vocab)
            let mut last = logits.slice(s![logits.nrows() - 1.., ..]).to_owned(); // (1, vocab)
            softmax_rows(last.view_mut());
            last.remove_axis(ndarray::Axis(0)).into_dyn() // (vocab)
        };
        rec.derived_step(
            Op::NextTokenProbabilities,
            None,
            &[Op::Unembed],
            &[vocab],
            || {
                // Read when read, not now: a GPU's logits arrive with the pass's readback.
                let logits = backend.trace_rows(&logits);
                Tensor {
                    shape: vec![vocab],
                    data: TensorData::computed_on_read(Box::new(move || {
                        row_major(probabilities(&[logits.view()]))
                    })),
                }
            },
            probabilities,
        );
        backend.rows_into_trace(logits)
    });
    Pending {
        hidden: backend.rows_into_trace(x),
        logits,
    }
}
