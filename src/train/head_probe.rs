//! What a language model's heads have learned, measured through the engine: the strongest
//! previous-token head on held-out sentences, the strongest induction head on a random run
//! of tokens shown twice, and the loss on each copy of that run (a model that copies predicts
//! the second copy far better than the first). The trainer logs it at every evaluation, so a
//! run shows when the heads form; `tests/engine/trainer.rs` asks it of the committed models.

use crate::analysis::ablation::{edits_for, Switch};
use crate::analysis::heads::head_scores;
use crate::error::{Result, VizError};
use crate::model::backend::on_cpu;
use crate::model::cpu::Cpu;
use crate::tokenize::vocab_file::VocabFile;
use crate::train::behaviour::{ioi_report, pronoun_heads, IoiReport, PronounHead, HELD_OUT_SEED};
use crate::train::network::Network;
use crate::train::stories::{ioi_prompts, pronoun_cases, IoiPrompt, Rendered, Split};
use crate::transformer::{Keep, PassRequest, Transformer};

/// Sentences taken from the held-out documents.
pub const SENTENCES: usize = 40;
/// The random run's length and how many runs are averaged.
pub const RUN_LENGTH: usize = 40;
pub const RUNS: usize = 5;

/// The best score of one kind and the head that has it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BestHead {
    pub score: f32,
    pub layer: usize,
    pub head: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct HeadReport {
    /// Mean previous-token score of every head (layer-major) over the sentences.
    pub previous: Vec<f32>,
    /// Mean first-token score of every head (the weight every token puts on position 0, where
    /// a head with nothing to do parks its attention) over the sentences.
    pub first: Vec<f32>,
    /// Mean induction score of every head over the repeated runs.
    pub induction: Vec<f32>,
    /// Mean loss (nats/token) on the first and on the second copy of the runs.
    pub copy_loss: [f64; 2],
    pub n_heads: usize,
    /// The best pronoun head and the indirect objects, when the probe measures them
    /// (`HeadProbe::with_behaviours`).
    pub behaviours: Option<(PronounHead, IoiReport)>,
}

impl HeadReport {
    fn best(&self, scores: &[f32]) -> BestHead {
        let (i, &score) =
            scores.iter().enumerate().fold(
                (0, &f32::MIN),
                |best, s| if s.1 > best.1 { s } else { best },
            );
        BestHead {
            score,
            layer: i / self.n_heads.max(1),
            head: i % self.n_heads.max(1),
        }
    }

    pub fn best_previous(&self) -> BestHead {
        self.best(&self.previous)
    }

    pub fn best_induction(&self) -> BestHead {
        self.best(&self.induction)
    }

    /// One line for a training log.
    pub fn summary(&self) -> String {
        let (p, i) = (self.best_previous(), self.best_induction());
        let behaviours = match self.behaviours {
            Some((pronoun, ioi)) => format!(
                " · pronouns best {:.1}% (L{} H{}) · indirect object first {:.1}%, above the repeated name {:.1}%",
                100.0 * pronoun.share,
                pronoun.layer,
                pronoun.head,
                100.0 * ioi.first,
                100.0 * ioi.beats_other
            ),
            None => String::new(),
        };
        format!(
            "previous-token best {:.2} (L{} H{}) · induction best {:.2} (L{} H{}) · copy loss {:.2} -> {:.2}{behaviours}",
            p.score, p.layer, p.head, i.score, i.layer, i.head, self.copy_loss[0], self.copy_loss[1]
        )
    }
}

pub struct HeadProbe {
    sentences: Vec<String>,
    /// Each run twice after the start token: (1 + 2 * run_length) ids.
    repeated: Vec<Vec<u32>>,
    run_length: usize,
    /// The vocabulary, to turn a training network into a `Transformer`.
    vocab: Option<VocabFile>,
    /// Held-out pronoun sentences and indirect-object prompts (`with_behaviours`).
    behaviours: Option<(Vec<Rendered>, Vec<IoiPrompt>)>,
}

impl HeadProbe {
    /// Sentences of 60 to 300 bytes from `held_out` documents; runs of `RUN_LENGTH` ordinary
    /// tokens (ids below `bos`) from a fixed pseudo-random sequence.
    pub fn new(held_out: &[String], bos: u32, vocab: Option<VocabFile>) -> Self {
        Self::sized(held_out, bos, vocab, 300, RUN_LENGTH, false)
    }

    /// `new` for a smaller context: sentences shorter than `longest` bytes (and longer than a
    /// third of it, at most 60), runs of `run_length` tokens. `distinct`: no token twice in a
    /// run, and no run longer than the ordinary tokens. A small vocabulary needs it (the page's
    /// 96 characters): a run of 31 drawn freely holds about five tokens twice, and for a token
    /// said twice in the first copy the induction score's target (the token after its latest
    /// earlier occurrence) is not the token a copier looks at, so even a perfect copier would
    /// score well below 1.
    pub fn sized(
        held_out: &[String],
        bos: u32,
        vocab: Option<VocabFile>,
        longest: usize,
        run_length: usize,
        distinct: bool,
    ) -> Self {
        let run_length = if distinct {
            run_length.min(bos as usize)
        } else {
            run_length
        };
        let shortest = (longest / 3).min(60);
        let sentences = held_out
            .iter()
            .flat_map(|d| d.split(". "))
            .filter(|s| s.len() > shortest && s.len() < longest)
            .take(SENTENCES)
            .map(str::to_string)
            .collect();
        let mut x = 7u64;
        let repeated = (0..RUNS)
            .map(|_| {
                let mut run: Vec<u32> = Vec::with_capacity(run_length); // (run_length,)
                while run.len() < run_length {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let id = ((x >> 33) % bos.max(1) as u64) as u32;
                    if !(distinct && run.contains(&id)) {
                        run.push(id);
                    }
                }
                std::iter::once(bos)
                    .chain(run.iter().copied())
                    .chain(run.iter().copied())
                    .collect()
            })
            .collect();
        HeadProbe {
            sentences,
            repeated,
            run_length,
            vocab,
            behaviours: None,
        }
    }

    /// Also measures the pronoun heads and the indirect objects (`train::behaviour`) on
    /// `count` held-out sentences and prompts, those `transformer-viz behaviours` measures
    /// (0: not measured).
    pub fn with_behaviours(mut self, count: usize) -> Self {
        self.behaviours = (count > 0).then(|| {
            (
                pronoun_cases(HELD_OUT_SEED, count),
                ioi_prompts(HELD_OUT_SEED, count, Split::HeldOut),
            )
        });
        self
    }

    pub fn sentence_count(&self) -> usize {
        self.sentences.len()
    }

    /// Measures a training network through the engine (needs the vocabulary).
    pub fn measure_network(&self, net: &Network) -> Result<Option<HeadReport>> {
        let Some(vocab) = &self.vocab else {
            return Ok(None);
        };
        let model = Transformer::new(
            net.config.clone(),
            net.to_weights()?,
            Box::new(vocab.clone().tokenizer()?),
        )?;
        self.measure(&model).map(Some)
    }

    pub fn measure(&self, model: &Transformer) -> Result<HeadReport> {
        let heads = model.config.n_layers * model.config.n_heads;
        let mut previous = vec![0f32; heads];
        let mut first = vec![0f32; heads];
        for s in &self.sentences {
            let trace = model.trace(s)?;
            for (i, h) in head_scores(&trace)?.iter().enumerate() {
                previous[i] += h.scores.previous / self.sentences.len() as f32;
                first[i] += h.scores.first / self.sentences.len() as f32;
            }
        }
        let mut induction = vec![0f32; heads];
        for ids in &self.repeated {
            let request = PassRequest::ids(ids).keeping(Keep::Layers);
            let trace = on_cpu(model.pass(&Cpu, request))?.into_trace();
            for (i, h) in head_scores(&trace)?.iter().enumerate() {
                induction[i] += h.induction.unwrap_or(0.0) / self.repeated.len() as f32;
            }
        }
        let copy_loss = self.copy_loss(model, &[])?;
        let behaviours = match &self.behaviours {
            Some((cases, prompts)) => {
                Some((pronoun_heads(model, cases)?[0], ioi_report(model, prompts)?))
            }
            None => None,
        };
        Ok(HeadReport {
            previous,
            first,
            induction,
            copy_loss,
            n_heads: model.config.n_heads,
            behaviours,
        })
    }

    /// The mean loss (nats/token) on the first and on the second copy of the repeated runs,
    /// with `switches` off (`&[]`: the model as trained). Switching an induction head off
    /// should raise the second copy's loss toward the first's.
    pub fn copy_loss(&self, model: &Transformer, switches: &[Switch]) -> Result<[f64; 2]> {
        let mut copy_loss = [0f64; 2];
        let length = self.run_length;
        let per_copy = (length - 1) as f64 * self.repeated.len() as f64;
        for ids in &self.repeated {
            let logits = if switches.is_empty() {
                model.run_ids(ids)?.logits
            } else {
                let request = PassRequest::ids(ids).keeping(Keep::Layers);
                let intact = on_cpu(model.pass(&Cpu, request))?.into_trace();
                let edits = edits_for(&intact, switches)?;
                let changed = on_cpu(model.pass(&Cpu, PassRequest::ids(ids).editing(&edits)))?;
                changed.output.ok_or(VizError::EmptyText)?.logits
            }
            .ok_or(VizError::NoLmHead)?;
            // logits: (1 + 2L, V). Row t predicts id t + 1: the first copy's predictions are
            // rows 1..L (the first token of a run cannot be known), the second copy's L+1..2L.
            for (copy, rows) in [(0, 1..length), (1, length + 1..2 * length)] {
                for t in rows {
                    let row = logits.row(t);
                    let max = row.iter().copied().fold(f32::MIN, f32::max);
                    let log_sum = row
                        .iter()
                        .map(|v| ((v - max) as f64).exp())
                        .sum::<f64>()
                        .ln()
                        + max as f64;
                    copy_loss[copy] += (log_sum - row[ids[t + 1] as usize] as f64) / per_copy;
                }
            }
        }
        Ok(copy_loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_copies(probe: &HeadProbe) -> Vec<Vec<u32>> {
        let l = probe.run_length;
        probe
            .repeated
            .iter()
            .map(|ids| ids[1..1 + l].to_vec())
            .collect()
    }

    fn holds_a_token_twice(run: &[u32]) -> bool {
        run.iter().collect::<std::collections::HashSet<_>>().len() < run.len()
    }

    #[test]
    fn distinct_runs_hold_each_token_once_and_are_shown_twice() {
        // The page's vocabulary: 96 characters, then the start token.
        let free = HeadProbe::sized(&[], 96, None, 63, 31, false);
        assert!(first_copies(&free).iter().any(|r| holds_a_token_twice(r)));
        let distinct = HeadProbe::sized(&[], 96, None, 63, 31, true);
        for (run, ids) in first_copies(&distinct).iter().zip(&distinct.repeated) {
            assert_eq!(run.len(), 31);
            assert!(!holds_a_token_twice(run), "{run:?}");
            assert!(run.iter().all(|&id| id < 96));
            assert_eq!(ids[0], 96, "the start token first");
            assert_eq!(&ids[32..], &run[..], "shown twice");
        }
        // No run longer than the ordinary tokens.
        assert_eq!(HeadProbe::sized(&[], 20, None, 63, 31, true).run_length, 20);
    }
}
