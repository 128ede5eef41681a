//! Activation patching (the experiment behind the indirect-object circuit of Wang et al.,
//! 2022): two texts of the same length that lead to different answers, a "clean" run whose
//! answer is `answer` and a "corrupt" one whose answer is `wrong`. Each part's output in the
//! corrupt run is replaced by the clean run's, one at a time, and the share of the logit
//! difference (answer minus wrong) that moves back is that part's score: 1 when patching it
//! alone restores the clean run's difference, 0 when it changes nothing.

use ndarray::Axis;
use serde::Serialize;

use super::prediction::single_token;
use crate::error::{Result, VizError};
use crate::model::backend::on_cpu;
use crate::model::cpu::Cpu;
use crate::model::edits::{Edits, Replacement, Site, With};
use crate::model::forward::Logits;
use crate::model::record::Op;
use crate::tensor::top_ids;
use crate::trace::Trace;
use crate::transformer::{Keep, Kind, PassRequest, Transformer};

/// The patching grids of a pair of texts.
#[derive(Debug, Clone, Serialize)]
pub struct PatchGrid {
    /// The clean text's tokens and the corrupt text's.
    pub tokens: Vec<String>,
    pub corrupt_tokens: Vec<String>,
    /// The two answers whose logit difference is measured.
    pub answer: String,
    pub wrong: String,
    /// logit(answer) - logit(wrong) after the clean text and after the corrupt one.
    pub clean_difference: f32,
    pub corrupt_difference: f32,
    /// [layer][head]: the share of the difference restored by patching that head's output.
    pub heads: Vec<Vec<f32>>,
    /// [layer][position]: the share restored by patching the stream entering that layer at
    /// that token.
    pub stream: Vec<Vec<f32>>,
}

/// The two answers: the ones given (each one token), or each run's most likely next token.
fn answers(
    model: &Transformer,
    clean: &Trace,
    corrupt: &Trace,
    answer: Option<&str>,
    wrong: Option<&str>,
) -> Result<(u32, u32)> {
    let top = |t: &Trace| -> Result<u32> {
        let p = t.next_token_probabilities()?.to_vec(); // (vocab)
        Ok(top_ids(&p, 1)[0])
    };
    let a = match answer {
        Some(word) => single_token(model, word)?,
        None => top(clean)?,
    };
    let w = match wrong {
        Some(word) => single_token(model, word)?,
        None => top(corrupt)?,
    };
    if a == w {
        let text = model.tokenizer.token_text(a).unwrap_or("").to_string();
        return Err(VizError::BadEdit(format!(
            "both answers are {text:?}: patching measures the difference between two answers, \
             so pick two (--answer and --wrong)"
        )));
    }
    Ok((a, w))
}

/// logit(a) - logit(b) after the text: log p(a) - log p(b), the same difference.
fn difference(logits: ndarray::ArrayView1<f32>, a: u32, b: u32) -> f32 {
    logits[a as usize] - logits[b as usize]
}

/// The corrupt text's last logits (vocab) with `edits` made.
fn patched_logits(
    model: &Transformer,
    corrupt: &str,
    edits: &Edits,
) -> Result<ndarray::Array1<f32>> {
    let request = PassRequest::text(corrupt)
        .keeping(Keep::Output(Logits::Last))
        .editing(edits);
    let logits = on_cpu(model.pass(&Cpu, request))?.into_logits()?; // (rows, vocab)
    Ok(logits.index_axis(Axis(0), logits.nrows() - 1).to_owned()) // (vocab)
}

/// The changes that put `site`'s values in `from` (another run's trace, as many tokens) into a
/// pass: a head's output, or one token's stream entering a layer.
pub fn patched_from(from: &Trace, site: Site) -> Result<Edits> {
    let values = match site {
        Site::Head { layer, head } => from
            .find(Op::WeightedSum, Some(layer))
            .ok_or_else(|| VizError::NoSuchStep(format!("head outputs of layer {layer}")))?
            .tensor
            .view3()? // (heads, T, hd)
            .index_axis(Axis(0), head)
            .iter()
            .copied()
            .collect(), // (T * hd)
        Site::Stream { layer, position } => from.stream_into(layer)?.row(position).to_vec(), // (d)
        other => {
            return Err(VizError::BadEdit(format!(
                "{other:?} is not patched from another run here"
            )))
        }
    };
    Ok(Edits {
        replacements: vec![Replacement {
            site,
            with: With::Values(values),
        }],
        ..Edits::default()
    })
}

/// Patches every head and every (layer, token) of the stream of `clean` into `corrupt` (see
/// the module), on the CPU.
pub fn patch(
    model: &Transformer,
    clean: &str,
    corrupt: &str,
    answer: Option<&str>,
    wrong: Option<&str>,
) -> Result<PatchGrid> {
    if model.kind() != Kind::Causal {
        return Err(VizError::BadEdit(format!(
            "{} does not predict the next token of a text: patching compares two runs' \
             predictions, so it needs a causal language model",
            model.config.name
        )));
    }
    let clean_trace = model.trace(clean)?;
    let corrupt_trace = model.trace(corrupt)?;
    let t = clean_trace.len();
    if corrupt_trace.len() != t {
        return Err(VizError::BadEdit(format!(
            "the two texts must have as many tokens to patch one into the other: {t} and {}",
            corrupt_trace.len()
        )));
    }
    let (a, w) = answers(model, &clean_trace, &corrupt_trace, answer, wrong)?;
    let last = |trace: &Trace| -> Result<f32> {
        let p = trace.next_token_probabilities()?; // (vocab)
        Ok(p[a as usize].ln() - p[w as usize].ln())
    };
    let (clean_difference, corrupt_difference) = (last(&clean_trace)?, last(&corrupt_trace)?);
    let span = clean_difference - corrupt_difference;
    let share = |edits: Edits| -> Result<f32> {
        let d = difference(patched_logits(model, corrupt, &edits)?.view(), a, w);
        Ok(if span.abs() > f32::EPSILON {
            (d - corrupt_difference) / span
        } else {
            0.0
        })
    };
    let c = &model.config;
    let mut heads = vec![vec![0.0; c.n_heads]; c.n_layers];
    for (layer, row) in heads.iter_mut().enumerate() {
        for (head, cell) in row.iter_mut().enumerate() {
            *cell = share(patched_from(&clean_trace, Site::Head { layer, head })?)?;
        }
    }
    let mut stream = vec![vec![0.0; t]; c.n_layers];
    for (layer, row) in stream.iter_mut().enumerate() {
        for (position, cell) in row.iter_mut().enumerate() {
            *cell = share(patched_from(
                &clean_trace,
                Site::Stream { layer, position },
            )?)?;
        }
    }
    let text = |id: u32| model.tokenizer.token_text(id).unwrap_or("").to_string();
    Ok(PatchGrid {
        tokens: clean_trace.token_texts(),
        corrupt_tokens: corrupt_trace.token_texts(),
        answer: text(a),
        wrong: text(w),
        clean_difference,
        corrupt_difference,
        heads,
        stream,
    })
}
