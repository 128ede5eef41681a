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
use crate::model::kv_cache::KvCache;
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

/// A patching sweep (see the module), done a few patches at a time: the page shows its
/// progress and can stop it between two calls of `run`. The tokens both texts share at the
/// start are computed once, into a KV cache every patched pass follows (a patch changes
/// nothing before the first token that differs: there the two runs are the same), and the
/// stream at those tokens is not patched at all (its share is 0).
pub struct PatchSweep {
    clean: Trace,
    corrupt_ids: Vec<u32>,
    corrupt_tokens: Vec<String>,
    answer: u32,
    wrong: u32,
    clean_difference: f32,
    corrupt_difference: f32,
    /// Tokens both texts share at the start (at most all but the last).
    shared: usize,
    /// The keys and values of those tokens.
    prefix: KvCache,
    /// Every site to patch, heads first, and how many are done.
    sites: Vec<Site>,
    done: usize,
    heads: Vec<Vec<f32>>,
    stream: Vec<Vec<f32>>,
}

impl PatchSweep {
    /// Runs both texts and chooses the answers (see `patch`); no patch is made yet.
    pub fn new(
        model: &Transformer,
        clean: &str,
        corrupt: &str,
        answer: Option<&str>,
        wrong: Option<&str>,
    ) -> Result<Self> {
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
        let corrupt_ids: Vec<u32> = corrupt_trace.tokens.iter().map(|t| t.id).collect();
        let shared = clean_trace
            .tokens
            .iter()
            .zip(&corrupt_ids)
            .take_while(|(c, &id)| c.id == id)
            .count()
            .min(t - 1);
        let mut prefix = KvCache::new();
        if shared > 0 {
            let request = PassRequest::ids(&corrupt_ids[..shared])
                .after(&mut prefix)
                .keeping(Keep::Output(Logits::Last));
            on_cpu(model.pass(&Cpu, request))?;
        }
        let c = &model.config;
        let mut sites = Vec::new();
        for layer in 0..c.n_layers {
            sites.extend((0..c.n_heads).map(|head| Site::Head { layer, head }));
        }
        for layer in 0..c.n_layers {
            sites.extend((shared..t).map(|position| Site::Stream { layer, position }));
        }
        Ok(PatchSweep {
            corrupt_tokens: corrupt_trace.token_texts(),
            clean: clean_trace,
            corrupt_ids,
            answer: a,
            wrong: w,
            clean_difference,
            corrupt_difference,
            shared,
            prefix,
            sites,
            done: 0,
            heads: vec![vec![0.0; c.n_heads]; c.n_layers],
            stream: vec![vec![0.0; t]; c.n_layers],
        })
    }

    /// Patches to make in all, and how many are made.
    pub fn total(&self) -> usize {
        self.sites.len()
    }

    pub fn done(&self) -> usize {
        self.done
    }

    /// Tokens both texts share at the start, computed once.
    pub fn shared(&self) -> usize {
        self.shared
    }

    /// Makes up to `most` more patches; true when every patch is made.
    pub fn run(&mut self, model: &Transformer, most: usize) -> Result<bool> {
        let span = self.clean_difference - self.corrupt_difference;
        let end = self.sites.len().min(self.done.saturating_add(most));
        for i in self.done..end {
            let site = self.sites[i];
            let edits = patched_from(&self.clean, site)?.from_token(self.shared, &model.config)?;
            let mut cache = self.prefix.clone();
            let mut request = PassRequest::ids(&self.corrupt_ids[self.shared..])
                .keeping(Keep::Output(Logits::Last))
                .editing(&edits);
            if self.shared > 0 {
                request = request.after(&mut cache);
            }
            let logits = on_cpu(model.pass(&Cpu, request))?.into_logits()?; // (rows, vocab)
            let last = logits.index_axis(Axis(0), logits.nrows() - 1); // (vocab)
            let d = difference(last, self.answer, self.wrong);
            let share = if span.abs() > f32::EPSILON {
                (d - self.corrupt_difference) / span
            } else {
                0.0
            };
            match site {
                Site::Head { layer, head } => self.heads[layer][head] = share,
                Site::Stream { layer, position } => self.stream[layer][position] = share,
                _ => unreachable!("only heads and the stream are patched"),
            }
            self.done = i + 1;
        }
        Ok(self.done == self.sites.len())
    }

    /// The grids, once every patch is made.
    pub fn grid(&self, model: &Transformer) -> Option<PatchGrid> {
        if self.done < self.sites.len() {
            return None;
        }
        let text = |id: u32| model.tokenizer.token_text(id).unwrap_or("").to_string();
        Some(PatchGrid {
            tokens: self.clean.token_texts(),
            corrupt_tokens: self.corrupt_tokens.clone(),
            answer: text(self.answer),
            wrong: text(self.wrong),
            clean_difference: self.clean_difference,
            corrupt_difference: self.corrupt_difference,
            heads: self.heads.clone(),
            stream: self.stream.clone(),
        })
    }
}

/// Patches every head and every (layer, token) of the stream of `clean` into `corrupt` (see
/// the module), on the CPU, at once.
pub fn patch(
    model: &Transformer,
    clean: &str,
    corrupt: &str,
    answer: Option<&str>,
    wrong: Option<&str>,
) -> Result<PatchGrid> {
    let mut sweep = PatchSweep::new(model, clean, corrupt, answer, wrong)?;
    sweep.run(model, usize::MAX)?;
    Ok(sweep.grid(model).expect("every patch is made"))
}
