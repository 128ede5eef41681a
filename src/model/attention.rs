//! Multi-head (and grouped-query) self-attention, one head at a time so that every
//! intermediate (Q, K, V, scores, mask, softmax, head outputs) can be recorded.

use ndarray::{s, Array2, Array3, ArrayView3, ArrayViewD, ArrayViewMut2, Axis, Ix3};

use super::backend::{Backend, Shaped};
use super::config::{ModelConfig, Position};
use super::edits::Edits;
use super::kv_cache::KvCache;
use super::record::{Op, Recorder};
use super::threads;
use super::weights::AttentionWeights;

/// (T, heads * head_dim) -> (heads, T, head_dim)
pub fn split_heads(x: Array2<f32>, heads: usize, head_dim: usize) -> Array3<f32> {
    let t = x.nrows();
    x.into_shape_with_order((t, heads, head_dim)) // (T, heads, hd)
        .expect("projection width is heads * head_dim")
        .permuted_axes([1, 0, 2]) // (heads, T, hd)
        .as_standard_layout()
        .into_owned()
}

/// (heads, T, head_dim) -> (T, heads * head_dim)
pub fn merge_heads(x: Array3<f32>) -> Array2<f32> {
    let (heads, t, hd) = x.dim();
    x.permuted_axes([1, 0, 2]) // (T, heads, hd)
        .as_standard_layout()
        .into_owned()
        .into_shape_with_order((t, heads * hd)) // (T, heads * hd)
        .expect("contiguous after as_standard_layout")
}

/// Sets the scores of future keys (j > i) to minus infinity.
pub fn apply_causal_mask(scores: &mut Array3<f32>) {
    apply_causal_mask_from(scores, 0);
}

/// The causal mask for query rows at positions `first`, `first + 1`, ... over keys at
/// positions 0, 1, ...: query row r hides keys past `first + r`.
pub fn apply_causal_mask_from(scores: &mut Array3<f32>, first: usize) {
    for mut head in scores.outer_iter_mut() {
        for (r, mut row) in head.rows_mut().into_iter().enumerate() {
            let visible = (first + r + 1).min(row.len());
            row.slice_mut(s![visible..]).fill(f32::NEG_INFINITY);
        }
    }
}

/// Scaled dot products of every query with every key, per head: (heads, Tq, Tk). Query head
/// h reads key head h / group (grouped-query attention).
pub fn scaled_scores(
    q: ArrayView3<f32>,
    k: ArrayView3<f32>,
    group: usize,
    scale: f32,
) -> Array3<f32> {
    let (heads, t, hd) = q.dim();
    let tk = k.dim().1;
    let mut scores = Array3::<f32>::zeros((heads, t, tk)); // (heads, Tq, Tk)
    let values = scores.as_slice_mut().expect("fresh arrays are contiguous");
    threads::for_each_piece(values, t * tk, t * tk * hd, |h, piece| {
        let qh = q.index_axis(Axis(0), h); // (T, hd)
        let kh = k.index_axis(Axis(0), h / group); // (Tk, hd)
        let mut sh = ArrayViewMut2::from_shape((t, tk), piece).expect("one head's scores"); // (T, Tk)
        ndarray::linalg::general_mat_mul(scale, &qh, &kh.t(), 0.0, &mut sh); // (T, hd) · (hd, Tk)
    });
    scores
}

/// What the softmax of one score costs (its share of the row's maximum and sum, its exp and
/// division), in multiply-adds of a product, as measured in the page (docs/benchmarks.md,
/// thresholds): with it, MiniLM's heads are shared among the threads from 32 tokens on.
const SOFTMAX_COST_PER_SCORE: usize = 48;

/// Softmax of every row of every head, in place, the heads shared among the threads.
pub fn softmax_heads(scores: &mut Array3<f32>) {
    let (_, t, tk) = scores.dim();
    match scores.as_slice_mut() {
        Some(values) => threads::for_each_piece(
            values,
            t * tk,
            t * tk * SOFTMAX_COST_PER_SCORE,
            |_, piece| {
                softmax_rows(ArrayViewMut2::from_shape((t, tk), piece).expect("one head's scores"));
                // (T, Tk)
            },
        ),
        None => scores.axis_iter_mut(Axis(0)).for_each(softmax_rows),
    }
}

/// Each head's average of the value vectors, weighted by its attention rows: (heads, Tq, hd).
/// Query head h reads value head h / group.
pub fn weighted_values(weights: ArrayView3<f32>, v: ArrayView3<f32>, group: usize) -> Array3<f32> {
    let (heads, t, tk) = weights.dim();
    let hd = v.dim().2;
    let mut head_out = Array3::<f32>::zeros((heads, t, hd)); // (heads, T, hd)
    let values = head_out
        .as_slice_mut()
        .expect("fresh arrays are contiguous");
    threads::for_each_piece(values, t * hd, t * tk * hd, |h, piece| {
        let ah = weights.index_axis(Axis(0), h); // (T, Tk)
        let vh = v.index_axis(Axis(0), h / group); // (Tk, hd)
        let mut oh = ArrayViewMut2::from_shape((t, hd), piece).expect("one head's output"); // (T, hd)
        ndarray::linalg::general_mat_mul(1.0, &ah, &vh, 0.0, &mut oh); // (T, Tk) · (Tk, hd)
    });
    head_out
}

/// A recorded per-head tensor, (heads, rows, columns), as the functions above read it.
pub(super) fn as_heads<'a>(x: &ArrayViewD<'a, f32>) -> ArrayView3<'a, f32> {
    x.clone()
        .into_dimensionality::<Ix3>()
        .expect("per-head steps are recorded as (heads, rows, columns)")
}

/// Softmax of one row of logits: the next token's probabilities.
pub fn probabilities_of(logits: ndarray::Array1<f32>) -> ndarray::Array1<f32> {
    let mut row = logits.insert_axis(Axis(0)); // (1, vocab)
    softmax_rows(row.view_mut());
    row.remove_axis(Axis(0)) // (vocab)
}

/// Softmax of each row in place, stable against large scores and exact zeros for -inf.
pub fn softmax_rows(mut x: ArrayViewMut2<f32>) {
    for mut row in x.rows_mut() {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        row.mapv_inplace(|v| v - max);
        match row.as_slice_mut() {
            Some(values) => super::simd_exp::exp_in_place(values),
            None => row.mapv_inplace(f32::exp),
        }
        let sum = row.sum();
        row.mapv_inplace(|v| v / sum);
    }
}

/// Self-attention of one layer on its (T, d_model) input; returns the (T, d_model) output
/// projection. `input` is the op that produced `x`, for the trace's data-flow links.
///
/// With a cache (a causal model), `x` holds only the new tokens, at positions `first`,
/// `first + 1`, ...: their keys and values are appended to the cache and their queries attend
/// over every cached key too, so scores and weights are (heads, T, first + T).
///
/// `edits` may leave out the rotation (a pass without positions), lift the causal mask, and
/// overwrite heads' outputs (switched off or patched) before they are joined.
#[allow(clippy::too_many_arguments)]
pub fn self_attention<B: Backend, R: Recorder>(
    backend: &B,
    x: &B::Rows,
    w: &AttentionWeights,
    c: &ModelConfig,
    layer: usize,
    input: Op,
    rec: &mut R,
    cache: Option<&mut KvCache<B::Heads>>,
    first: usize,
    edits: &Edits,
) -> B::Rows {
    let l = Some(layer);
    let (heads, kv_heads, hd) = (c.n_heads, c.n_kv_heads, c.head_dim);
    let t = x.dims()[0];
    let q = backend.split_heads(backend.linear(x, &w.query), heads, hd); // (heads, T, hd)
    let k = backend.split_heads(backend.linear(x, &w.key), kv_heads, hd); // (kv_heads, T, hd)
    let v = backend.split_heads(backend.linear(x, &w.value), kv_heads, hd); // (kv_heads, T, hd)
    rec.step(Op::Query, l, &[input], || backend.trace_heads(&q));
    rec.step(Op::Key, l, &[input], || backend.trace_heads(&k));
    rec.step(Op::Value, l, &[input], || backend.trace_heads(&v));
    let (q, k, q_op, k_op) = if let (
        Position::Rotary {
            base,
            adjacent_pairs,
        },
        false,
    ) = (c.position, edits.without_position)
    {
        let q = backend.rotary(q, base, adjacent_pairs, first); // (heads, T, hd)
        let k = backend.rotary(k, base, adjacent_pairs, first); // (kv_heads, T, hd)
        rec.step(Op::RotaryQuery, l, &[Op::Query], || backend.trace_heads(&q));
        rec.step(Op::RotaryKey, l, &[Op::Key], || backend.trace_heads(&k));
        (q, k, Op::RotaryQuery, Op::RotaryKey)
    } else {
        (q, k, Op::Query, Op::Key)
    };
    // Every key and value this layer's queries see: the cached ones, then the new ones.
    let (keys, values) = match cache {
        Some(cache) => cache.append(
            layer,
            k,
            v,
            |a, b| backend.append_tokens(a, b),
            |a| a.dims()[1],
        ), // (kv_heads, first + T, hd) each
        None => (k, v), // (kv_heads, T, hd) each
    };
    let total = keys.dims()[1]; // first + T keys

    let scale = 1.0 / (hd as f32).sqrt();
    let group = c.group_size();
    let masked = c.causal && !edits.without_mask;
    let causal = masked.then_some(first);
    let (weights, head_out) = backend.attend(&q, &keys, &values, group, scale, causal); // (heads, T, first + T), (heads, T, hd)
    let overwrite = edits.heads(layer, false, t, hd);
    let head_out = match &overwrite {
        Some(o) => backend.overwrite_heads(head_out, o), // (heads, T, hd)
        None => head_out,
    };
    // `attend` does not hand out the scores (a GPU keeps them on the device), and they and the
    // mask are the largest tensors of a pass: the recorder decides whether to keep how to
    // compute them again from the queries and keys (`derive`) or their values (`make`).
    let tt = [heads, t, total];
    rec.derived_step(
        Op::Scores,
        l,
        &[q_op, k_op],
        &tt,
        || backend.trace_heads(&backend.scores(&q, &keys, group, scale, None)),
        move |qk| {
            scaled_scores(as_heads(&qk[0]), as_heads(&qk[1]), group, scale).into_dyn()
            // (heads, T, T)
        },
    );
    if masked {
        rec.derived_step(
            Op::Mask,
            l,
            &[Op::Scores],
            &tt,
            || backend.trace_heads(&backend.scores(&q, &keys, group, scale, Some(first))),
            |s| {
                let mut masked = as_heads(&s[0]).to_owned(); // (heads, T, T)
                apply_causal_mask(&mut masked);
                masked.into_dyn()
            },
        );
    } else {
        rec.unchanged_step(Op::Mask, l, Op::Scores, || {
            backend.trace_heads(&backend.scores(&q, &keys, group, scale, None))
        }); // nothing is hidden
    }
    // Moved into the trace, not copied: the pass is done with the weights.
    rec.step(Op::Softmax, l, &[Op::Mask], || {
        backend.heads_into_trace(weights)
    });
    if overwrite.is_some() {
        // Not the weights times the values any more: kept as the pass has them.
        rec.step(Op::WeightedSum, l, &[Op::Softmax, Op::Value], || {
            backend.trace_heads(&head_out)
        });
    } else {
        rec.derived_step(
            Op::WeightedSum,
            l,
            &[Op::Softmax, Op::Value],
            &[heads, t, hd],
            || backend.trace_heads(&head_out),
            move |av| {
                weighted_values(as_heads(&av[0]), as_heads(&av[1]), group).into_dyn()
                // (heads, T, hd)
            },
        );
    }
    let concat = backend.merge_heads(head_out); // (T, heads * hd)
    rec.derived_step(
        Op::Concat,
        l,
        &[Op::WeightedSum],
        &[t, heads * hd],
        || backend.trace_rows(&concat),
        |h| {
            merge_heads(as_heads(&h[0]).to_owned()).into_dyn() // (T, heads * hd)
        },
    );
    let out = backend.linear(&concat, &w.output); // (T, d_model)
    rec.step(Op::OutputProjection, l, &[Op::Concat], || {
        backend.trace_rows(&out)
    });
    out
}
