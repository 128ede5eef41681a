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

use super::ablation::{edits_for, Part, Switch};
use crate::error::{Result, VizError};
use crate::model::backend::on_cpu;
use crate::model::config::{NormKind, NormPlace};
use crate::model::cpu::Cpu;
use crate::model::forward::Logits;
use crate::model::record::Op;
use crate::trace::Trace;
use crate::transformer::{Keep, PassRequest, Transformer};

/// One part's vote.
#[derive(Debug, Clone, Serialize)]
pub struct Vote {
    /// "token embedding", "position", "L0 H2", "L0 attention bias", "L0 cross H1", "L0 FFN".
    pub label: String,
    pub layer: Option<usize>,
    pub head: Option<usize>,
    /// The part as it is switched off (`part_tokens` reads it): a head, a cross-attention head
    /// or a feed-forward layer; none for the embeddings and biases.
    pub part: Option<Part>,
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
    /// The part as it is switched off, for a head or a feed-forward layer.
    part: Option<Part>,
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
        part: None,
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
                part: None,
                row,
            });
        }
    }
    for (l, lw) in model.weights.layers.iter().enumerate() {
        let mut attention = |w: &crate::model::weights::AttentionWeights,
                             op: Op,
                             what: &str,
                             part: fn(usize, usize) -> Part| {
            let Some(rows) = head_writes(trace, &w.output, op, l)? else {
                return Ok::<(), VizError>(());
            };
            for (h, row) in rows.axis_iter(Axis(0)).enumerate() {
                out.push(Write {
                    label: format!("L{l} {what}H{h}"),
                    layer: Some(l),
                    head: Some(h),
                    part: Some(part(l, h)),
                    row: row.to_owned(),
                });
            }
            if let Some(b) = &w.output.bias {
                out.push(Write {
                    label: format!("L{l} {what}attention bias"),
                    layer: Some(l),
                    head: None,
                    part: None,
                    row: b.clone(),
                });
            }
            Ok(())
        };
        attention(&lw.attention, Op::WeightedSum, "", |layer, head| {
            Part::Head { layer, head }
        })?;
        if let Some(cross) = &lw.cross {
            attention(
                &cross.attention,
                Op::CrossWeightedSum,
                "cross ",
                |layer, head| Part::CrossHead { layer, head },
            )?;
        }
        let ffn = last_row(trace, Op::FfnDown, Some(l))?
            .ok_or_else(|| VizError::NoSuchStep(format!("the feed-forward output of layer {l}")))?;
        out.push(Write {
            label: format!("L{l} FFN"),
            layer: Some(l),
            head: None,
            part: Some(Part::Ffn { layer: l }),
            row: ffn,
        });
    }
    debug_assert_eq!(c.norm_place, NormPlace::Pre);
    Ok(out)
}

/// The final norm as a pre-LN pass met it at the last token: with its scale held at the value
/// the pass computed, a linear map from what a part wrote to what the unembedding reads.
struct FinalRead {
    gamma: Array1<f32>, // (d)
    /// 1 / sqrt(variance + eps) of the stream the norm read.
    inverse_scale: f32,
    /// Layer norm subtracts the mean; RMS norm does not.
    centred: bool,
}

impl FinalRead {
    fn new(model: &Transformer, parts: &[Write]) -> Result<Self> {
        let c = &model.config;
        let norm = model
            .weights
            .final_norm
            .as_ref()
            .ok_or_else(|| VizError::NoSuchStep("the final norm".into()))?;
        let centred = c.norm == NormKind::Layer;
        // The stream the final norm read: the sum of every part's write.
        let stream = parts
            .iter()
            .fold(Array1::<f32>::zeros(c.d_model), |acc, w| acc + &w.row); // (d)
        let mean = if centred {
            stream.mean().unwrap_or(0.0)
        } else {
            0.0
        };
        let variance = stream.mapv(|v| (v - mean).powi(2)).mean().unwrap_or(0.0);
        Ok(FinalRead {
            gamma: norm.gamma.clone(),
            inverse_scale: 1.0 / (variance + c.norm_eps).sqrt(),
            centred,
        })
    }

    /// What the unembedding reads of a part's write `w` (d): centred, scaled, times gamma.
    fn read(&self, w: ArrayView1<f32>) -> Array1<f32> {
        let mean = if self.centred {
            w.mean().unwrap_or(0.0)
        } else {
            0.0
        };
        (&w - mean) * &self.gamma * self.inverse_scale // (d)
    }
}

/// The logits (vocab) at the last token of a pass.
fn last_logits(model: &Transformer, trace: &Trace) -> Result<Array1<f32>> {
    let unembedding = model
        .weights
        .unembedding(&model.config)
        .ok_or(VizError::NoLmHead)?;
    let hidden = trace.final_hidden()?; // (T, d)
    let last = hidden.slice(s![hidden.nrows() - 1.., ..]); // (1, d)
    Ok(unembedding
        .multiply_rows(last, 0, unembedding.rows())
        .index_axis_move(Axis(0), 0)) // (vocab)
}

/// The last token's logits (vocab) of a pass on `intact`'s text (the pass as trained) with
/// `part` switched off as well as the parts in `off`; only the logits are kept.
fn logits_without(
    model: &Transformer,
    intact: &Trace,
    off: &[Switch],
    part: Part,
) -> Result<Array1<f32>> {
    let mut switches = off.to_vec();
    switches.push(Switch::zero(part));
    let edits = edits_for(intact, &switches)?;
    let request = PassRequest::text(&intact.text)
        .keeping(Keep::Output(Logits::Last))
        .editing(&edits);
    let logits = on_cpu(model.pass(&Cpu, request))?.into_logits()?; // (rows, vocab)
    Ok(logits.index_axis(Axis(0), logits.nrows() - 1).to_owned()) // (vocab)
}

/// The pass as trained on the trace's text: the trace itself when no part is off (`off`: the
/// parts the trace was computed without), else computed once.
fn intact_of<'a>(
    model: &Transformer,
    trace: &'a Trace,
    off: &[Switch],
) -> Result<std::borrow::Cow<'a, Trace>> {
    Ok(if off.is_empty() {
        std::borrow::Cow::Borrowed(trace)
    } else {
        std::borrow::Cow::Owned(model.trace(&trace.text)?)
    })
}

/// The votes on `id` (default: the most likely next token) after the trace's text. `off`: the
/// parts the trace was computed without (the post-LN votes switch each other part off on top).
pub fn attribution(
    model: &Transformer,
    trace: &Trace,
    id: Option<u32>,
    off: &[Switch],
) -> Result<Attribution> {
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
        return switched_off_votes(model, trace, id, token, logit, off);
    }
    let parts = writes(model, trace)?;
    let read = FinalRead::new(model, &parts)?;
    let votes = parts
        .into_iter()
        .map(|w| Vote {
            logit: read.read(w.row.view()).dot(&u),
            label: w.label,
            layer: w.layer,
            head: w.head,
            part: w.part,
        })
        .collect();
    let norm = model.weights.final_norm.as_ref();
    let bias_term = norm
        .and_then(|n| n.beta.as_ref())
        .map_or(0.0, |b| b.dot(&u));
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

/// Post-LN: each head's and feed-forward layer's vote measured by switching it off (a part
/// already off has no vote).
fn switched_off_votes(
    model: &Transformer,
    trace: &Trace,
    id: u32,
    token: String,
    logit: f32,
    off: &[Switch],
) -> Result<Attribution> {
    let c = &model.config;
    let intact = intact_of(model, trace, off)?;
    let mut votes = Vec::new();
    let mut vote = |part: Part, label: String, layer: usize, head: Option<usize>| {
        if off.iter().any(|s| s.part == part) {
            return Ok::<(), VizError>(());
        }
        let without = logits_without(model, &intact, off, part)?[id as usize];
        votes.push(Vote {
            label,
            layer: Some(layer),
            head,
            part: Some(part),
            logit: logit - without,
        });
        Ok(())
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

/// A token and how far a part moves its logit.
#[derive(Debug, Clone, Serialize)]
pub struct TokenEffect {
    pub token: String,
    pub logit: f32,
}

/// The tokens a part's output pushes up and down most at the last token.
#[derive(Debug, Clone, Serialize)]
pub struct PartTokens {
    /// True for a pre-LN model's direct effect through the final norm, false for the effect
    /// of switching the part off (post-LN).
    pub exact: bool,
    /// The `k` tokens it raises most, the strongest first.
    pub promoted: Vec<TokenEffect>,
    /// The `k` tokens it lowers most, the strongest first.
    pub suppressed: Vec<TokenEffect>,
    /// What the numbers are, in a sentence for the page.
    pub note: String,
}

/// The tokens `part` (a head, a cross-attention head or a feed-forward layer) promotes and
/// suppresses at the last token of the trace's text, `k` of each. Pre-LN: its write read
/// through the final norm (its scale held, as the votes do) and the unembedding, every
/// token's share of its vote. Post-LN: the logits as computed minus the logits with the part
/// switched off too. `off`: the parts the trace was computed without.
pub fn part_tokens(
    model: &Transformer,
    trace: &Trace,
    part: Part,
    k: usize,
    off: &[Switch],
) -> Result<PartTokens> {
    let c = &model.config;
    let unembedding = model.weights.unembedding(c).ok_or(VizError::NoLmHead)?;
    let exact = c.norm_place == NormPlace::Pre;
    let (effects, note) = if exact {
        let parts = writes(model, trace)?;
        let read = FinalRead::new(model, &parts)?;
        let write = parts
            .iter()
            .find(|w| w.part == Some(part))
            .ok_or_else(|| VizError::BadEdit(format!("{} has no {part:?}", c.name)))?;
        let r = read.read(write.row.view()).insert_axis(Axis(0)); // (1, d)
        let effects = unembedding
            .multiply_rows(r.view(), 0, unembedding.rows())
            .index_axis_move(Axis(0), 0); // (vocab)
        (
            effects,
            "What this part wrote into the stream, read through the final norm (at this pass's \
             scale) and the unembedding: how much it adds to each token's logit.",
        )
    } else {
        if off.iter().any(|s| s.part == part) {
            return Err(VizError::BadEdit(
                "this part is switched off already: it moves no token".into(),
            ));
        }
        let intact = intact_of(model, trace, off)?;
        let without = logits_without(model, &intact, off, part)?; // (vocab)
        let effects = last_logits(model, trace)? - without; // (vocab)
        (
            effects,
            "A post-LN model normalises after every addition, so a part's write has no fixed \
             effect on the logits: each number is the logit as computed minus the logit with \
             this part switched off (zeros).",
        )
    };
    let k = k.min(effects.len());
    let mut order: Vec<usize> = (0..effects.len()).collect();
    order.sort_by(|&i, &j| effects[j].total_cmp(&effects[i]));
    let effect = |&i: &usize| TokenEffect {
        token: model
            .tokenizer
            .token_text(i as u32)
            .unwrap_or("")
            .to_string(),
        logit: effects[i],
    };
    Ok(PartTokens {
        exact,
        promoted: order[..k].iter().map(effect).collect(),
        suppressed: order[order.len() - k..].iter().rev().map(effect).collect(),
        note: note.into(),
    })
}
