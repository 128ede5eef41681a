//! The logit lens: the residual stream after each layer, read as if it were the last layer's
//! output (through the final norm and the unembedding), shows what the model "would predict"
//! at that depth. Each read is a (d_model x vocab) product per position per layer (SmolLM2:
//! 28 million multiply-adds), so only the positions asked for are read, in chunks, and a row
//! read before is not read again (`Transformer::readout_memo`: as a student types at the end,
//! only the last position's rows change).

use ndarray::{s, Array2, ArrayView2};
use serde::Serialize;

use crate::error::{Result, VizError};
use crate::model::config::NormPlace;
use crate::model::norm;
use crate::model::simd_exp::exp_in_place;
use crate::tensor::top_ids;
use crate::trace::{Op, Trace};
use crate::Transformer;

/// At most this many positions are read at once.
pub const MAX_POSITIONS: usize = 16;
/// Rows unembedded at a time: 32 rows of SmolLM2's 49,152 logits are 6 MB.
const CHUNK_ROWS: usize = 32;

#[derive(Debug, Clone, Serialize)]
pub struct LensCell {
    pub id: u32,
    pub text: String,
    pub prob: f32,
}

#[derive(Debug, Clone, Serialize)]
pub struct LogitLens {
    pub positions: Vec<usize>,
    /// One label a depth: "embedding", "layer 0", ..., "layer N-1".
    pub depths: Vec<String>,
    /// The top token at each depth (rows) and position (columns).
    pub cells: Vec<Vec<LensCell>>,
    /// The model's prediction at the last position after the last layer...
    pub final_token: LensCell,
    /// ...and its probability at every depth, at the last position.
    pub final_prob_by_depth: Vec<f32>,
}

/// The stream at each depth, (T, d): the embedding, then each layer's output.
fn depths(trace: &Trace) -> Result<Vec<(String, ArrayView2<'_, f32>)>> {
    let first = trace
        .find(Op::EmbeddingNorm, None)
        .or_else(|| trace.find(Op::AddPosition, None))
        .or_else(|| trace.find(Op::TokenEmbedding, None));
    let mut out = vec![(
        "embedding".to_string(),
        first
            .ok_or_else(|| VizError::NoSuchStep("embedding".into()))?
            .tensor
            .view2()?,
    )];
    let after_layer = if trace.config.norm_place == NormPlace::Pre {
        Op::FfnResidual
    } else {
        Op::FfnNorm
    };
    for layer in 0..trace.config.n_layers {
        let step = trace
            .find(after_layer, Some(layer))
            .ok_or_else(|| VizError::NoSuchStep(format!("the output of layer {layer}")))?;
        out.push((format!("layer {layer}"), step.tensor.view2()?));
    }
    Ok(out)
}

/// Reads the stream at every depth at `positions` (the last one always joins, for the final
/// prediction's curve).
pub fn logit_lens(model: &Transformer, trace: &Trace, positions: &[usize]) -> Result<LogitLens> {
    let unembedding = model
        .weights
        .unembedding(&model.config)
        .ok_or(VizError::NoLmHead)?;
    let t = trace.len();
    if positions.len() > MAX_POSITIONS {
        return Err(VizError::BadConfig(format!(
            "the logit lens reads at most {MAX_POSITIONS} positions at once, not {}",
            positions.len()
        )));
    }
    if let Some(&bad) = positions.iter().find(|&&p| p >= t) {
        return Err(VizError::NoSuchToken {
            index: bad,
            tokens: t,
        });
    }
    let mut read: Vec<usize> = positions.to_vec();
    if !read.contains(&(t - 1)) {
        read.push(t - 1);
    }
    let points = depths(trace)?;
    let d = model.config.d_model;
    let n = read.len();
    let last = read
        .iter()
        .position(|&p| p == t - 1)
        .expect("the last position is read");
    let text = |id: u32| model.tokenizer.token_text(id).unwrap_or("?").to_string();
    let cell = |(id, prob): (u32, f32)| LensCell {
        id,
        text: text(id),
        prob,
    };
    // Every (depth, position) row, at k * n + j: the ones read before come from the memo
    // (the last position's never do: their final-prediction probability is read too), the
    // others are unembedded below and kept in it.
    let mut tops: Vec<Option<LensCell>> = vec![None; points.len() * n];
    let mut fresh = Vec::new(); // the rows to unembed, as k * n + j
    for (k, (_, stream)) in points.iter().enumerate() {
        for (j, &p) in read.iter().enumerate() {
            let kept = (j != last).then(|| model.readout_memo.get(stream.row(p)));
            match kept.flatten() {
                Some(readout) => tops[k * n + j] = Some(cell(readout)),
                None => fresh.push(k * n + j),
            }
        }
    }
    let stream_row = |r: usize| points[r / n].1.row(read[r % n]); // (d)
    let mut rows = Array2::<f32>::zeros((fresh.len(), d)); // (fresh rows, d)
    for (i, &r) in fresh.iter().enumerate() {
        rows.row_mut(i).assign(&stream_row(r));
    }
    // Through the final norm of a pre-LN model (a post-LN model's stream is already
    // normalised).
    if let (NormPlace::Pre, Some(norm)) = (model.config.norm_place, &model.weights.final_norm) {
        rows = norm::apply(model.config.norm, norm, rows.view(), model.config.norm_eps);
        // (fresh rows, d)
    }
    // The final prediction: what the pass itself gives at the last position.
    let final_probs = trace.next_token_probabilities()?; // (vocab)
    let final_id = top_ids(final_probs.as_slice().expect("kept contiguous"), 1)[0];
    let mut final_prob_by_depth = vec![0.0; points.len()];
    for start in (0..rows.nrows()).step_by(CHUNK_ROWS) {
        let end = (start + CHUNK_ROWS).min(rows.nrows());
        let mut logits =
            unembedding.multiply_rows(rows.slice(s![start..end, ..]), 0, unembedding.rows()); // (chunk, vocab)
        for (i, mut row) in (start..end).zip(logits.rows_mut()) {
            // Only two probabilities of the row are read, the top token's and the final
            // prediction's: the softmax's sum is all they need, the vocabulary's probabilities
            // are not written out.
            let logits = row.as_slice_mut().expect("fresh rows are contiguous"); // (vocab,)
            let id = top_ids(logits, 1)[0]; // the largest logit is the largest probability
            let max = logits[id as usize];
            logits.iter_mut().for_each(|v| *v -= max);
            exp_in_place(logits); // (vocab,): exp(logit - max)
            let sum: f32 = logits.iter().sum();
            let r = fresh[i];
            let readout = (id, 1.0 / sum); // exp(0) / sum
            if r % n == last {
                final_prob_by_depth[r / n] = logits[final_id as usize] / sum;
            }
            model.readout_memo.keep(stream_row(r), readout);
            tops[r] = Some(cell(readout));
        }
    }
    let tops: Vec<LensCell> = tops
        .into_iter()
        .map(|top| top.expect("every row is read"))
        .collect();
    // Each depth's n rows, less the last position when it was read only for the final
    // prediction (it follows the positions asked for).
    let cells = tops
        .chunks(n)
        .map(|depth| depth[..positions.len()].to_vec())
        .collect();
    Ok(LogitLens {
        positions: positions.to_vec(),
        depths: points.iter().map(|(label, _)| label.clone()).collect(),
        cells,
        final_token: LensCell {
            id: final_id,
            text: text(final_id),
            prob: final_probs[final_id as usize],
        },
        final_prob_by_depth,
    })
}

/// The positions the page reads by default: the last `n` (at most `MAX_POSITIONS`).
pub fn last_positions(tokens: usize, n: usize) -> Vec<usize> {
    let n = n.min(MAX_POSITIONS).min(tokens);
    (tokens - n..tokens).collect()
}
