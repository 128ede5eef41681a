//! Each part's vote on the answer (direct logit attribution): the residual stream at the last
//! token is a sum of what the embedding, every head and every feed-forward layer wrote into
//! it. In a pre-LN model only the final norm stands between that sum and the logits, and with
//! its scale held at the value the pass computed it is linear: each part's write, centred,
//! scaled and multiplied by the token's unembedding row, is its share of the logit, and the
//! shares add up to the logit less the final norm's bias term. In a post-LN model a norm after
//! every addition rescales all that came before, so a part's write is not a fixed share of the
//! output; there each part's vote is measured instead by switching it off (the logit intact
//! minus the logit without it), which is honest but does not add up.

use ndarray::{s, Array1, Array2, ArrayView1, Axis};
use serde::Serialize;

use super::ablation::{ablate, Part, Switch};
use crate::error::{Result, VizError};
use crate::model::config::{NormKind, NormPlace};
use crate::model::record::Op;
use crate::trace::Trace;
use crate::transformer::Transformer;

/// One part's vote.
#[derive(Debug, Clone, Serialize)]
pub struct Vote {
    /// "token embedding", "position", "L0 H2", "L0 attention bias", "L0 cross H1", "L0 FFN".
    pub label: String,
    pub layer: Option<usize>,
    pub head: Option<usize>,
    /// Its share of the token's logit (pre-LN), or the logit's fall when it is switched off
    /// (post-LN).
    pub logit: f32,
}

#[derive(Debug, Clone, Serialize)]
pub struct Attribution {
    pub token: String,
    pub id: u32,
    /// The token's logit at the last position.
    pub logit: f32,
    /// True when the votes are exact shares that add up (pre-LN), false when each is the
    /// effect of switching its part off (post-LN).
    pub exact: bool,
    /// The final norm's bias term, beta · u (pre-LN): the part of the logit no part wrote.
    pub bias_term: f32,
    /// In the order the parts write into the stream.
    pub votes: Vec<Vote>,
    /// What the votes are, in a sentence for the page.
    pub note: String,
}

/// A part's write into the stream at the last token and its label.
struct Write {
    label: String,
    layer: Option<usize>,
    head: Option<usize>,
    row: Array1<f32>, // (d)
}

fn last_row(trace: &Trace, op: Op, layer: Option<usize>) -> Result<Option<Array1<f32>>> {
    let Some(step) = trace.find(op, layer) else {
        return Ok(None);
    };
    let rows = step.tensor.view2()?; // (T, d)
    Ok(Some(rows.row(rows.nrows() - 1).to_owned()))
}

/// Each head's write (through the output projection, without its bias) at the last token of
/// a layer's head outputs `op` (WeightedSum or CrossWeightedSum): (heads, d).
fn head_writes(
    trace: &Trace,
    output: &crate::model::linear::Linear,
    op: Op,
    layer: usize,
) -> Result<Option<Array2<f32>>> {
    let Some(step) = trace.find(op, Some(layer)) else {
        return Ok(None);
    };
    let heads = step.tensor.view3()?; // (heads, T, hd)
    let (n, t, hd) = heads.dim();
    // One row per head, zeros but for that head's slice: (heads, heads * hd).
    let mut spread = Array2::<f32>::zeros((n, n * hd));
    for h in 0..n {
        spread
            .slice_mut(s![h, h * hd..(h + 1) * hd])
            .assign(&heads.slice(s![h, t - 1, ..]));
    }
    let w = &output.weight;
    Ok(Some(w.multiply_rows(spread.view(), 0, w.rows()))) // (heads, d)
}

/// Every part's write at the last token, in the order they write: the sum is the stream the
/// final norm reads.
fn writes(model: &Transformer, trace: &Trace) -> Result<Vec<Write>> {
    let c = &model.config;
    let mut out = Vec::new();
    let token = last_row(trace, Op::TokenEmbedding, None)?
        .ok_or_else(|| VizError::NoSuchStep("the token embedding".into()))?;
    out.push(Write {
        label: "token embedding".into(),
        layer: None,
        head: None,
        row: token,
    });
    for (op, label) in [
        (Op::SegmentEmbedding, "segment"),
        (Op::PositionEncoding, "position"),
    ] {
        if let Some(row) = last_row(trace, op, None)? {
            out.push(Write {
                label: label.into(),
                layer: None,
                head: None,
                row,
            });
        }
    }
    for (l, lw) in model.weights.layers.iter().enumerate() {
        let mut attention = |w: &crate::model::weights::AttentionWeights, op: Op, what: &str| {
            let Some(rows) = head_writes(trace, &w.output, op, l)? else {
                return Ok::<(), VizError>(());
            };
            for (h, row) in rows.axis_iter(Axis(0)).enumerate() {
                out.push(Write {
                    label: format!("L{l} {what}H{h}"),
                    layer: Some(l),
                    head: Some(h),
                    row: row.to_owned(),
                });
            }
            if let Some(b) = &w.output.bias {
                out.push(Write {
                    label: format!("L{l} {what}attention bias"),
                    layer: Some(l),
                    head: None,
                    row: b.clone(),
                });
            }
            Ok(())
        };
        attention(&lw.attention, Op::WeightedSum, "")?;
        if let Some(cross) = &lw.cross {
            attention(&cross.attention, Op::CrossWeightedSum, "cross ")?;
        }
        let ffn = last_row(trace, Op::FfnDown, Some(l))?
            .ok_or_else(|| VizError::NoSuchStep(format!("the feed-forward output of layer {l}")))?;
        out.push(Write {
            label: format!("L{l} FFN"),
            layer: Some(l),
            head: None,
            row: ffn,
        });
    }
    debug_assert_eq!(c.norm_place, NormPlace::Pre);
    Ok(out)
}

/// The votes on `id` (default: the most likely next token) after the trace's text.
pub fn attribution(model: &Transformer, trace: &Trace, id: Option<u32>) -> Result<Attribution> {
    let c = &model.config;
    let unembedding = model.weights.unembedding(c).ok_or(VizError::NoLmHead)?;
    let probabilities = trace.next_token_probabilities()?; // (vocab)
    let id = match id {
        Some(id) if (id as usize) < c.vocab_size => id,
        Some(id) => {
            return Err(VizError::UnknownTokenId {
                id,
                vocab_size: c.vocab_size,
            })
        }
        None => crate::tensor::top_ids(&probabilities.to_vec(), 1)[0],
    };
    let token = model.tokenizer.token_text(id).unwrap_or("").to_string();
    let u = unembedding
        .rows_f32(id as usize, id as usize + 1)
        .row(0)
        .to_owned(); // (d)
    let hidden = trace.final_hidden()?; // (T, d)
    let logit = hidden.row(hidden.nrows() - 1).dot(&u);
    if c.norm_place == NormPlace::Post {
        return switched_off_votes(model, trace, id, token, logit);
    }
    let norm = model
        .weights
        .final_norm
        .as_ref()
        .ok_or_else(|| VizError::NoSuchStep("the final norm".into()))?;
    let parts = writes(model, trace)?;
    // The stream the final norm read, and its scale as the pass computed it.
    let stream = parts
        .iter()
        .fold(Array1::<f32>::zeros(c.d_model), |acc, w| acc + &w.row); // (d)
    let centred = c.norm == NormKind::Layer;
    let centre = |v: ArrayView1<f32>| {
        if centred {
            v.mean().unwrap_or(0.0)
        } else {
            0.0
        }
    };
    let mean = centre(stream.view());
    let variance = stream.mapv(|v| (v - mean).powi(2)).mean().unwrap_or(0.0);
    let scale = (variance + c.norm_eps).sqrt();
    let read = &norm.gamma * &u / scale; // (d): what a unit of stream is worth to the logit
    let votes = parts
        .into_iter()
        .map(|w| {
            let m = centre(w.row.view());
            Vote {
                label: w.label,
                layer: w.layer,
                head: w.head,
                logit: (&w.row - m).dot(&read),
            }
        })
        .collect();
    let bias_term = norm.beta.as_ref().map_or(0.0, |b| b.dot(&u));
    Ok(Attribution {
        token,
        id,
        logit,
        exact: true,
        bias_term,
        votes,
        note: "Each bar is that part's share of the logit: what it wrote into the stream, through \
               the final norm at the scale this pass gave it. The bars add up to the logit less \
               the final norm's bias term."
            .into(),
    })
}

/// Post-LN: each head's and feed-forward layer's vote measured by switching it off.
fn switched_off_votes(
    model: &Transformer,
    trace: &Trace,
    id: u32,
    token: String,
    logit: f32,
) -> Result<Attribution> {
    let c = &model.config;
    let mut votes = Vec::new();
    let mut vote = |part: Part, label: String, layer: usize, head: Option<usize>| {
        let changed = ablate(model, &trace.text, &[Switch::zero(part)])?.changed;
        let hidden = changed.final_hidden()?; // (T, d)
        let unembedding = model.weights.unembedding(c).ok_or(VizError::NoLmHead)?;
        let u = unembedding.rows_f32(id as usize, id as usize + 1); // (1, d)
        let without = hidden.row(hidden.nrows() - 1).dot(&u.row(0));
        votes.push(Vote {
            label,
            layer: Some(layer),
            head,
            logit: logit - without,
        });
        Ok::<(), VizError>(())
    };
    for layer in 0..c.n_layers {
        for head in 0..c.n_heads {
            vote(
                Part::Head { layer, head },
                format!("L{layer} H{head}"),
                layer,
                Some(head),
            )?;
        }
        vote(Part::Ffn { layer }, format!("L{layer} FFN"), layer, None)?;
    }
    Ok(Attribution {
        token,
        id,
        logit,
        exact: false,
        bias_term: 0.0,
        votes,
        note: "A post-LN model normalises the stream after every addition, which rescales all \
               that came before: no part's write is a fixed share of the logit. Each bar is \
               instead how far the logit falls when that part is switched off (zeros); the bars \
               do not add up."
            .into(),
    })
}
