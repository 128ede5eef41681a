//! Attention for one query, as the notes explain it: the chosen token's query against every
//! key (a dot product each), divided by sqrt(d_k), the softmax of those scores, and the values
//! weighted by it and summed. Computed again here from the pass's own queries, keys and values
//! (after rotary, for a model that turns them), so a student can follow each number; the
//! weights are the pass's own.

use ndarray::{Array1, Axis};
use serde::Serialize;

use crate::error::{Result, VizError};
use crate::trace::{Op, Trace};

/// One key, as the query sees it.
#[derive(Debug, Clone, Serialize)]
pub struct KeyScore {
    /// The key's position.
    pub key: usize,
    /// q · k (None: masked, a key after the query in a decoder).
    pub dot: Option<f32>,
    /// q · k / sqrt(d_k) (None: masked).
    pub scaled: Option<f32>,
    /// The softmax weight (0 when masked).
    pub weight: f32,
}

/// Every stage of one query's attention in one head.
#[derive(Debug, Clone, Serialize)]
pub struct QueryAttention {
    pub layer: usize,
    pub head: usize,
    /// The query's position.
    pub query: usize,
    /// d_k, the width of a head's query and key.
    pub head_dim: usize,
    pub keys: Vec<KeyScore>,
    /// sum over keys of weight x value: (d_k).
    pub output: Vec<f32>,
}

/// The stages of query `query` in `layer`, `head` of `trace`.
pub fn query_attention(
    trace: &Trace,
    layer: usize,
    head: usize,
    query: usize,
) -> Result<QueryAttention> {
    let weights = trace.attention(layer, head)?; // (T, T): checks layer and head
    let t = weights.nrows();
    if query >= t {
        return Err(VizError::NoSuchToken {
            index: query,
            tokens: t,
        });
    }
    let step = |rotary: Op, plain: Op| {
        trace
            .find(rotary, Some(layer))
            .or_else(|| trace.find(plain, Some(layer)))
            .ok_or_else(|| VizError::NoSuchStep(format!("{plain:?} of layer {layer}")))
    };
    let q = step(Op::RotaryQuery, Op::Query)?.tensor.view3()?; // (heads, T, d_k)
    let k = step(Op::RotaryKey, Op::Key)?.tensor.view3()?; // (kv_heads, T, d_k)
    let v = step(Op::Value, Op::Value)?.tensor.view3()?; // (kv_heads, T, d_k)
    let group = (q.len_of(Axis(0)) / k.len_of(Axis(0)).max(1)).max(1);
    let q = q
        .index_axis(Axis(0), head)
        .index_axis(Axis(0), query)
        .to_owned(); // (d_k)
    let (k, v) = (
        k.index_axis(Axis(0), head / group), // (T, d_k)
        v.index_axis(Axis(0), head / group), // (T, d_k)
    );
    let head_dim = q.len();
    let root = (head_dim as f32).sqrt();
    let causal = trace.config.causal;
    let keys = (0..t)
        .map(|j| {
            let masked = causal && j > query;
            let dot = (!masked).then(|| q.dot(&k.row(j)));
            KeyScore {
                key: j,
                dot,
                scaled: dot.map(|d| d / root),
                weight: weights[[query, j]],
            }
        })
        .collect::<Vec<_>>();
    let mut output = Array1::<f32>::zeros(head_dim); // (d_k)
    for s in &keys {
        output.scaled_add(s.weight, &v.row(s.key));
    }
    Ok(QueryAttention {
        layer,
        head,
        query,
        head_dim,
        keys,
        output: output.to_vec(),
    })
}
