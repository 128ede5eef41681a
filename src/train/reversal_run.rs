//! Trains the lecture's encoder-decoder on the reversal task (`reversal`): batches of strings
//! of one length, AdamW, the held-out exact match through the engine; `transformer-viz
//! train-reverse`.

use std::path::PathBuf;
use std::time::Instant;

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use super::adamw::AdamW;
use super::curve::{loss_curve_svg, CurvePoint};
use super::network::{candle_err, id_tensor, Network};
use super::reversal::{held_out_strings, reversed, training_string, vocab, ALPHABET, MAX_LETTERS};
use super::run::{io, History, RunLog};
use super::step::{optimise, Optimised, Settings};
use crate::checkpoints::lecture;
use crate::error::{Result, VizError};
use crate::model::config::NormPlace;
use crate::Transformer;

/// Rows of token ids, one a string.
type IdRows = Vec<Vec<u32>>;

/// One batch of `batch` strings of one length (so no padding is needed): source ids (start,
/// letters), target inputs (start, reversed letters) and labels (reversed letters, end).
fn batch_ids(strings: &[String], bos: u32) -> (IdRows, IdRows, IdRows) {
    let id = |c: u8| {
        ALPHABET
            .bytes()
            .position(|a| a == c)
            .expect("strings are made of the alphabet") as u32
    };
    let mut sources = Vec::new();
    let mut inputs = Vec::new();
    let mut labels = Vec::new();
    for s in strings {
        let letters: Vec<u32> = s.bytes().map(id).collect();
        let back: Vec<u32> = letters.iter().rev().copied().collect();
        sources.push(
            std::iter::once(bos)
                .chain(letters.iter().copied())
                .collect(),
        );
        inputs.push(std::iter::once(bos).chain(back.iter().copied()).collect());
        labels.push(back.iter().copied().chain(std::iter::once(bos)).collect());
    }
    (sources, inputs, labels)
}

/// The share of `strings` the model (through the engine) writes back exactly reversed.
pub fn exact_match(model: &Transformer, strings: &[String]) -> Result<f64> {
    let mut right = 0;
    for s in strings {
        let t = model.translate(s)?;
        if t.finished && t.output == reversed(s) {
            right += 1;
        }
    }
    Ok(right as f64 / strings.len().max(1) as f64)
}

/// The trained network as the engine's model, with the task's vocabulary.
pub fn as_model(net: &Network) -> Result<Transformer> {
    Transformer::new(
        net.config.clone(),
        net.to_weights()?,
        Box::new(vocab().tokenizer()?),
    )
}

pub struct ReversalRun {
    pub settings: Settings,
    pub out: PathBuf,
    /// Held-out strings measured at each evaluation.
    pub eval_strings: usize,
    /// Where the norms sit (the committed model: before each sublayer).
    pub norm_place: NormPlace,
    pub progress: bool,
}

pub struct ReversalOutcome {
    pub network: Network,
    pub history: History,
    /// Exact match on held-out strings at the end.
    pub exact_match: f64,
}

impl ReversalRun {
    /// Trains `lecture::REVERSE`'s config from `seed` and writes config.json, tokenizer.json,
    /// model.safetensors, train.log and loss.svg into `out`.
    pub fn train(self) -> Result<ReversalOutcome> {
        let s = &self.settings;
        let file = vocab();
        let bos = file.bos;
        let mut config = lecture::reverse_config(file.tokens.len());
        config.norm_place = self.norm_place;
        if s.steps == 0 || s.batch == 0 || s.eval_every == 0 {
            return Err(VizError::Training(
                "steps, batch and eval-every must be at least 1".into(),
            ));
        }
        std::fs::create_dir_all(&self.out).map_err(io(&self.out))?;
        let net = Network::init(&config, s.seed)?;
        let mut opt = AdamW::new(net.vars(), s.weight_decay).map_err(candle_err)?;
        let mut rng = ChaCha8Rng::seed_from_u64(s.seed ^ 0x5eed_da7a);
        let mut log = RunLog::open(&self.out, s.steps, self.progress, false)?;
        log.say(format!(
            "{}: {} parameters; {}",
            config.name,
            net.parameter_count(),
            serde_json::to_string(s).expect("serialises")
        ));
        // A fixed held-out batch for the loss curve: 64 strings of each of 4 lengths.
        let probe: Vec<Vec<String>> = [5, 10, 15, 20]
            .iter()
            .map(|&n| {
                held_out_strings(4000, 99)
                    .into_iter()
                    .filter(|h| h.len() == n)
                    .take(64)
                    .collect()
            })
            .collect();
        let eval_strings = held_out_strings(self.eval_strings, 7);
        let mut history = History::default();
        let vars = net.vars();
        let started = Instant::now();
        let mut last_match = 0.0;
        for step in 0..s.steps {
            let len = 1 + (rng.next_u32() as usize) % MAX_LETTERS;
            let strings: Vec<String> = (0..s.batch)
                .map(|_| training_string(&mut rng, len))
                .collect();
            let (sources, inputs, labels) = batch_ids(&strings, bos);
            let loss = net
                .seq2seq_loss(
                    &id_tensor(&sources)?,
                    &id_tensor(&inputs)?,
                    &id_tensor(&labels)?,
                )
                .map_err(candle_err)?; // ()
            let Optimised { loss, norm, rate } = optimise(&loss, &vars, &mut opt, s, step)?;
            let done = step + 1;
            log.bar.set_position(done as u64);
            log.bar.set_message(format!("loss {loss:.3}"));
            if done % 10 == 0 || done == s.steps {
                history
                    .train
                    .push((done, done as f64 * s.batch as f64, loss));
            }
            if done % s.eval_every == 0 || done == s.steps {
                let mut held = 0.0;
                for group in &probe {
                    let (sources, inputs, labels) = batch_ids(group, bos);
                    let l = net
                        .seq2seq_loss(
                            &id_tensor(&sources)?,
                            &id_tensor(&inputs)?,
                            &id_tensor(&labels)?,
                        )
                        .map_err(candle_err)?;
                    held += l.to_scalar::<f32>().map_err(candle_err)? as f64 / probe.len() as f64;
                }
                history
                    .held_out
                    .push((done, done as f64 * s.batch as f64, held));
                last_match = exact_match(&as_model(&net)?, &eval_strings)?;
                log.say(
                    format!(
                        "step {done}/{} · lr {rate:.2e} · loss {loss:.4} · held-out {held:.4} · exact match {:.1}% of {} held-out · grad norm {norm:.2} · {:.0} s",
                        s.steps,
                        100.0 * last_match,
                        eval_strings.len(),
                        started.elapsed().as_secs_f64()
                    )
                );
            }
        }
        log.bar.finish_and_clear();
        let write = |name: &str, bytes: &[u8]| -> Result<()> {
            let path = self.out.join(name);
            std::fs::write(&path, bytes).map_err(io(&path))
        };
        write("model.safetensors", &net.to_safetensors()?)?;
        write(
            "config.json",
            serde_json::to_string_pretty(&config)
                .expect("serialises")
                .as_bytes(),
        )?;
        write("tokenizer.json", file.to_json().as_bytes())?;
        let points = |v: &[(usize, f64, f64)]| {
            v.iter()
                .map(|&(_, seen, loss)| CurvePoint { tokens: seen, loss })
                .collect::<Vec<_>>()
        };
        let svg = loss_curve_svg(
            &format!("{}: loss while training (x: sequences seen)", config.name),
            &points(&history.train),
            &points(&history.held_out),
            None,
        )?;
        write("loss.svg", svg.as_bytes())?;
        log.say(format!(
            "done: exact match {:.1}% of {} held-out strings after {} steps, {:.0} s",
            100.0 * last_match,
            eval_strings.len(),
            s.steps,
            started.elapsed().as_secs_f64()
        ));
        Ok(ReversalOutcome {
            network: net,
            history,
            exact_match: last_match,
        })
    }
}
