//! A training run as the page starts one (`web::training`, in a worker; the CLI's
//! `train-step` computes its first step natively to check the two agree): a small model of the
//! lecture's architecture, a task, a seed and a rate, checked against limits before anything
//! is allocated, then trained a few steps at a time on demand with the trainer's own step
//! (`step::State`), and measured with the trainer's own head probe.
//!
//! The vocabulary is one token a character (printable ASCII and the newline): a model this
//! small learns a character model of the stories in minutes, and a student can type anything
//! on the keyboard into it afterwards.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::batches::{evaluation_windows, Mixture};
use super::corpus::token_stream;
use super::head_probe::{HeadProbe, HeadReport};
use super::network::candle_err;
use super::step::{evaluate, loss_and_gradients, Optimised, Settings, State};
use super::stories::{stories, Split};
use crate::checkpoints::lecture;
use crate::error::{Result, VizError};
use crate::model::config::{ModelConfig, NormPlace, Position};
use crate::tokenize::vocab_file::VocabFile;

/// What the model is trained to predict.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// The lecture's generated stories (`stories`), a character at a time.
    Stories,
    /// Random runs of characters, each repeated until the sequence is full: the second copy
    /// can only be predicted by copying the first (an induction head).
    Repeat,
    /// Half stories, half repeated runs.
    Mixed,
    /// A string of letters, `>`, then the string backwards (`cat>tac`): to write the k-th
    /// letter after the `>` a head must look at the k-th letter before it, an anti-diagonal.
    Reverse,
    /// The opening chapters of the lecture's public-domain corpus (*Moby-Dick*), which the
    /// page fetches beside itself (`corpus_files`).
    Text,
}

/// The corpus chapters the text task reads, by file name in the corpus's Moby-Dick directory
/// (`models/corpus/datasets-moby-dick/`, which the page serves as `corpus/moby-dick/`): the
/// first `CORPUS_TRAIN_CHAPTERS` are trained on, the `CORPUS_HELD_OUT_CHAPTERS` after them held
/// out. The page and the CLI read the same files in this order.
pub const CORPUS_TRAIN_CHAPTERS: usize = 30;
pub const CORPUS_HELD_OUT_CHAPTERS: usize = 2;

/// The file names of the text task's chapters: training ones first, then held-out ones.
pub fn corpus_files() -> Vec<String> {
    (1..=CORPUS_TRAIN_CHAPTERS + CORPUS_HELD_OUT_CHAPTERS)
        .map(|n| format!("chapter_{n}.txt"))
        .collect()
}

/// The most text the text task takes, in bytes: checked before anything is made from it.
pub const MAX_TEXT_BYTES: usize = 8 << 20;

/// The settings a student chooses (the page's form; the link keeps them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PageSettings {
    pub layers: usize,
    pub heads: usize,
    pub d_model: usize,
    /// Tokens a sequence holds (the model's context).
    pub context: usize,
    /// LayerNorm before each sublayer (GPT-2) rather than after it (the paper).
    pub pre_ln: bool,
    /// The sinusoidal table added to the embeddings; without it attention sees a bag of tokens.
    pub positions: bool,
    pub task: Task,
    pub seed: u64,
    pub learning_rate: f64,
    /// Sequences a step.
    pub batch: usize,
    /// The run's length: the learning rate warms up, then decays by a cosine to this step.
    pub steps: usize,
}

/// A setting out of range: which one (its field name) and why.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SettingError {
    pub field: &'static str,
    pub message: String,
}

/// The limits a page run is held to: a tab's memory and a student's patience, not the trainer's.
pub mod limits {
    pub const LAYERS: (usize, usize) = (1, 6);
    pub const HEADS: (usize, usize) = (1, 8);
    pub const D_MODEL: (usize, usize) = (8, 256);
    pub const CONTEXT: (usize, usize) = (16, 256);
    pub const BATCH: (usize, usize) = (1, 64);
    pub const STEPS: (usize, usize) = (10, 100_000);
    pub const LEARNING_RATE: (f64, f64) = (1e-5, 0.1);
    /// Floats a step holds at once, about: the activations candle keeps for the backward pass.
    pub const STEP_FLOATS: usize = 64 << 20;
}

/// Stories generated for training and for the held-out loss and head probe.
const TRAIN_STORIES: usize = 1500;
const HELD_OUT_STORIES: usize = 60;
/// Strings the reversal task generates for training and holds out.
const TRAIN_REVERSALS: usize = 20_000;
const HELD_OUT_REVERSALS: usize = 200;

/// A run's documents: what it trains on, what it holds out for the loss, and the prose the head
/// probe reads (its previous-token and first-token scores).
struct Documents {
    train: Vec<String>,
    held_out: Vec<String>,
    probe: Vec<String>,
}

/// `text` in the page vocabulary's characters. The corpus's chapters hold five other
/// characters often (the em dash and curly quotes, about 9,000 times in 2.4 MB) and a dozen
/// once each (Greek, Hebrew): a small table keeps the first as their ASCII look-alikes and
/// drops the rest, where a transliteration crate would add a dependency to the trainer's wasm
/// for the same result.
pub fn plain_ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | ' '..='~' => out.push(c),
            '\t' => out.push(' '),
            '\u{2014}' | '\u{2013}' => out.push_str("--"),
            '\u{2018}' | '\u{2019}' => out.push('\''),
            '\u{201c}' | '\u{201d}' => out.push('"'),
            _ => {}
        }
    }
    out
}

/// A reversal example: the string, `>`, the string backwards.
fn reversal(s: &str) -> String {
    format!("{s}>{}", super::reversal::reversed(s))
}

impl Documents {
    /// The task's documents; the text task's are `chapters` (the texts of `corpus_files`, in
    /// that order: the last `CORPUS_HELD_OUT_CHAPTERS` are held out).
    fn of(settings: &PageSettings, chapters: Option<&[String]>) -> Result<Documents> {
        let seed = settings.seed;
        let held_out_stories = || stories(seed ^ 0x4e1d, HELD_OUT_STORIES, Split::HeldOut);
        Ok(match settings.task {
            Task::Stories | Task::Repeat | Task::Mixed => {
                let held_out = held_out_stories();
                Documents {
                    train: stories(seed, TRAIN_STORIES, Split::Train),
                    probe: held_out.clone(),
                    held_out,
                }
            }
            Task::Reverse => {
                use rand_core::SeedableRng;
                // An example and its answer fit the context with the start token.
                let longest = ((settings.context - 2) / 2).min(super::reversal::MAX_LETTERS);
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
                let train = (0..TRAIN_REVERSALS)
                    .map(|i| {
                        let len = 1 + i % longest;
                        reversal(&super::reversal::training_string(&mut rng, len))
                    })
                    .collect();
                let held_out =
                    super::reversal::held_out_strings(HELD_OUT_REVERSALS * 4, seed ^ 0x4e1d)
                        .into_iter()
                        .filter(|s| s.len() <= longest)
                        .take(HELD_OUT_REVERSALS)
                        .map(|s| reversal(&s))
                        .collect();
                Documents {
                    train,
                    held_out,
                    probe: held_out_stories(),
                }
            }
            Task::Text => {
                let chapters = chapters.ok_or_else(|| {
                    VizError::Training(
                        "The text task needs the corpus's chapters, which did not load.".into(),
                    )
                })?;
                let bytes: usize = chapters.iter().map(String::len).sum();
                if bytes > MAX_TEXT_BYTES {
                    return Err(VizError::Training(format!(
                        "The corpus chapters are {bytes} bytes; the page trains on at most {MAX_TEXT_BYTES}."
                    )));
                }
                let held = CORPUS_HELD_OUT_CHAPTERS;
                if chapters.len() <= held {
                    return Err(VizError::Training(format!(
                        "The text task needs more than {held} chapters of the corpus (it has {}).",
                        chapters.len()
                    )));
                }
                let chapters: Vec<String> = chapters.iter().map(|c| plain_ascii(c)).collect();
                let (train, held_out) = chapters.split_at(chapters.len() - held);
                Documents {
                    train: train.to_vec(),
                    held_out: held_out.to_vec(),
                    probe: held_out.to_vec(),
                }
            }
        })
    }
}

impl PageSettings {
    /// The presets the page offers, by name.
    pub fn preset(name: &str) -> Option<PageSettings> {
        let base = PageSettings {
            layers: 2,
            heads: 4,
            d_model: 64,
            context: 64,
            pre_ln: true,
            positions: true,
            task: Task::Stories,
            seed: 1,
            learning_rate: 3e-3,
            batch: 16,
            steps: 2000,
        };
        match name {
            // Wider and shorter than the others: at d_model 128 and a context of 32 one head
            // takes the previous token within a few hundred steps (docs/training.md).
            "previous-token" => Some(PageSettings {
                layers: 1,
                d_model: 128,
                context: 32,
                learning_rate: 1e-2,
                steps: 1200,
                ..base
            }),
            // Half stories, half repeated runs: the stories give layer 0 a previous-token head
            // early, and the induction head in layer 1 forms on it far sooner than on the runs
            // alone (docs/training.md).
            "induction" => Some(PageSettings {
                task: Task::Mixed,
                learning_rate: 1e-2,
                steps: 3000,
                ..base
            }),
            "stories" => Some(PageSettings {
                task: Task::Mixed,
                context: 128,
                steps: 4000,
                ..base
            }),
            _ => None,
        }
    }

    /// Every setting out of range, each with a sentence for beside its control. Nothing is
    /// allocated before this passes.
    pub fn check(&self) -> Vec<SettingError> {
        use limits::*;
        let mut errors = Vec::new();
        let mut range = |field: &'static str, what: &str, v: usize, (lo, hi): (usize, usize)| {
            if v < lo || v > hi {
                errors.push(SettingError {
                    field,
                    message: format!("{what} must be from {lo} to {hi} (it is {v})."),
                });
            }
        };
        range("layers", "Layers", self.layers, LAYERS);
        range("heads", "Heads", self.heads, HEADS);
        range("d_model", "The width", self.d_model, D_MODEL);
        range("context", "The context", self.context, CONTEXT);
        range("batch", "The batch", self.batch, BATCH);
        range("steps", "Steps", self.steps, STEPS);
        if self.heads > 0 && self.d_model % self.heads != 0 {
            errors.push(SettingError {
                field: "d_model",
                message: format!(
                    "The width ({}) must divide evenly among the {} heads.",
                    self.d_model, self.heads
                ),
            });
        }
        let (lo, hi) = LEARNING_RATE;
        if !(self.learning_rate.is_finite() && (lo..=hi).contains(&self.learning_rate)) {
            errors.push(SettingError {
                field: "learning_rate",
                message: format!(
                    "The learning rate must be a number from {lo:e} to {hi} (it is {}).",
                    self.learning_rate
                ),
            });
        }
        if errors.is_empty() && self.step_floats() > STEP_FLOATS {
            errors.push(SettingError {
                field: "batch",
                message: format!(
                    "One step would hold about {} MB of activations (at most {} MB): choose a smaller batch, context or width.",
                    (self.step_floats() * 4) >> 20,
                    (STEP_FLOATS * 4) >> 20
                ),
            });
        }
        errors
    }

    /// The floats a step's forward and backward passes hold, about: per layer and token a few
    /// dozen d_model-wide rows and the heads' (context) attention rows, and the logits.
    fn step_floats(&self) -> usize {
        let tokens = self.batch * self.context;
        let per_layer = tokens * (24 * self.d_model + 4 * self.heads * self.context);
        self.layers * per_layer + 4 * tokens * vocab().tokens.len()
    }

    /// The model: the lecture decoders' architecture (`lecture::decoder_config`) at this size,
    /// the FFN 4 x d_model wide, with or without positions.
    pub fn config(&self, vocab_size: usize) -> ModelConfig {
        let place = if self.pre_ln {
            NormPlace::Pre
        } else {
            NormPlace::Post
        };
        ModelConfig {
            d_model: self.d_model,
            n_layers: self.layers,
            n_heads: self.heads,
            n_kv_heads: self.heads,
            head_dim: self.d_model / self.heads.max(1),
            d_ff: 4 * self.d_model,
            context: self.context,
            position: if self.positions {
                Position::Sinusoidal
            } else {
                Position::None
            },
            embedding_scale: (self.d_model as f32).sqrt(),
            ..lecture::decoder_config("trained-here", vocab_size, place)
        }
    }

    /// The trainer's settings for this run: warm-up over a tenth of the run (at most 200
    /// steps), the lecture runs' AdamW (beta2 0.99, decay 0.1, clipping at 1) and initial
    /// scale, the task's mixture.
    pub fn training(&self) -> Settings {
        // Runs up to half the context: the head probe's run (as long as that, shown twice)
        // is then one the model has met.
        let longest = ((self.context - 1) / 2).max(4) as u32;
        let runs = |share| Mixture {
            random_repeat: share,
            copied_span: 0,
            pool: 0,
            run_lengths: (4, longest),
            zipf: 0.0,
            drills: 0,
            drill_starts: 0,
        };
        Settings {
            steps: self.steps,
            batch: self.batch,
            sequence: self.context,
            learning_rate: self.learning_rate,
            warmup_steps: (self.steps / 10).min(200),
            final_rate_share: 0.1,
            weight_decay: 0.1,
            clip_norm: 1.0,
            seed: self.seed,
            eval_every: 50,
            checkpoint_every: usize::MAX,
            beta2: 0.99,
            mixture: match self.task {
                Task::Stories | Task::Reverse | Task::Text => Mixture::PLAIN,
                Task::Repeat => runs(1000),
                Task::Mixed => runs(500),
            },
            early: None,
            pool_doubling: 0,
            // 1/sqrt(d): each sublayer writes into the stream on the embedding's scale from
            // the first step (`Network::init_scaled`); the lecture runs learned to copy so.
            projection_std: 1.0 / (self.d_model as f32).sqrt(),
            shards: 1,
        }
    }
}

/// One token a character: printable ASCII and the newline (in GPT-2's byte alphabet), then
/// the start token.
pub fn vocab() -> VocabFile {
    VocabFile::characters(std::iter::once(b'\n').chain(b' '..=b'~'))
}

/// A step's report.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StepReport {
    pub step: usize,
    pub loss: f64,
    pub grad_norm: f64,
    pub learning_rate: f64,
}

/// An evaluation: the held-out loss and every head's scores (layer-major).
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    pub step: usize,
    pub held_out: f64,
    pub previous: Vec<f32>,
    pub induction: Vec<f32>,
    pub first: Vec<f32>,
    /// Loss on the first and on the second copy of the probe's repeated runs.
    pub copy_loss: [f64; 2],
}

/// The next batch's loss and every parameter's gradient, before any update (the parity check).
#[derive(Debug, Clone, Serialize)]
pub struct StepGradients {
    pub loss: f64,
    pub inputs: Vec<Vec<u32>>,
    pub gradients: BTreeMap<String, Vec<f32>>,
}

/// A model's three files, as the page and the CLI load them.
#[derive(Debug, Clone)]
pub struct Exported {
    pub config: String,
    pub tokenizer: String,
    pub weights: Vec<u8>,
}

pub struct PageRun {
    pub settings: PageSettings,
    training: Settings,
    pub config: ModelConfig,
    vocab: VocabFile,
    bos: u32,
    train: Vec<u32>,
    held_out: Vec<Vec<u32>>,
    probe: HeadProbe,
    state: State,
    /// Steps done.
    pub done: usize,
}

impl PageRun {
    /// A fresh run; settings out of range are refused, all of them named. `chapters`: the
    /// texts of `corpus_files`, in order, which only the text task reads.
    pub fn new(settings: PageSettings, chapters: Option<&[String]>) -> Result<Self> {
        let errors = settings.check();
        if !errors.is_empty() {
            let all: Vec<String> = errors.iter().map(|e| e.message.clone()).collect();
            return Err(VizError::Training(all.join(" ")));
        }
        let vocab = vocab();
        let bos = vocab.bos;
        let tokenizer = vocab.clone().tokenizer()?;
        let config = settings.config(vocab.tokens.len());
        let training = settings.training();
        let documents = Documents::of(&settings, chapters)?;
        let train = token_stream(&documents.train, &tokenizer, bos)?;
        let held_stream = token_stream(&documents.held_out, &tokenizer, bos)?;
        // A window is the context and its next token; a text shorter has none to sample.
        for (what, stream) in [("training", &train), ("held-out", &held_stream)] {
            if stream.len() <= settings.context + 1 {
                return Err(VizError::Training(format!(
                    "The {what} text is {} characters, too short for a context of {}.",
                    stream.len(),
                    settings.context
                )));
            }
        }
        let held_out = evaluation_windows(&held_stream, settings.context, bos, 16);
        let run_length = ((settings.context - 1) / 2).min(super::head_probe::RUN_LENGTH);
        let probe = HeadProbe::sized(
            &documents.probe,
            bos,
            Some(vocab.clone()),
            settings.context - 1,
            run_length,
            true,
        );
        let state = State::start(&config, &training, &train, bos)?;
        Ok(PageRun {
            settings,
            training,
            config,
            vocab,
            bos,
            train,
            held_out,
            probe,
            state,
            done: 0,
        })
    }

    /// Cuts each step's batch into one part a thread, `threads` of them, computed side by side
    /// and added (`step::loss_and_gradients`): the same losses for the same seed on the same
    /// number of threads, and within float rounding of one thread's.
    pub fn on_threads(mut self, threads: usize) -> Self {
        self.training.shards = threads.clamp(1, self.training.batch.max(1));
        self
    }

    /// The parts each step's batch is cut into (`on_threads`).
    pub fn threads(&self) -> usize {
        self.training.shards
    }

    pub fn parameter_count(&self) -> usize {
        self.state.net.parameter_count()
    }

    pub fn tokens_per_step(&self) -> usize {
        self.training.batch * self.training.sequence
    }

    /// Up to `steps` more steps (fewer at the run's end); a loss that is not finite is an error.
    pub fn train(&mut self, steps: usize) -> Result<Vec<StepReport>> {
        let end = (self.done + steps).min(self.training.steps);
        let mut reports = Vec::with_capacity(end - self.done);
        while self.done < end {
            let Optimised { loss, norm, rate } =
                self.state
                    .step(&self.train, &[], &self.training, self.bos, self.done)?;
            self.done += 1;
            reports.push(StepReport {
                step: self.done,
                loss,
                grad_norm: norm,
                learning_rate: rate,
            });
        }
        Ok(reports)
    }

    /// The held-out loss and the heads' scores now.
    pub fn evaluate(&self) -> Result<Evaluation> {
        let held_out = evaluate(&self.state.net, &self.held_out, self.training.batch)?;
        let HeadReport {
            previous,
            induction,
            first,
            copy_loss,
            ..
        } = self
            .probe
            .measure_network(&self.state.net)?
            .ok_or_else(|| VizError::Training("the probe has no vocabulary".into()))?;
        Ok(Evaluation {
            step: self.done,
            held_out,
            previous,
            induction,
            first,
            copy_loss,
        })
    }

    /// The next batch's loss and gradients, without updating the weights (the sampler moves on).
    pub fn gradients(&mut self) -> Result<StepGradients> {
        let (inputs, targets) =
            self.state
                .batch(&self.train, &[], &self.training, self.bos, self.done);
        let (loss, grads) = loss_and_gradients(
            &self.state.net,
            &inputs,
            &targets,
            &self.state.vars,
            self.training.shards,
        )?;
        let mut gradients = BTreeMap::new();
        for (name, var) in &self.state.net.params {
            let g = grads
                .get(var.as_tensor())
                .ok_or_else(|| VizError::Training(format!("no gradient for {name}")))?;
            let values = g
                .flatten_all()
                .and_then(|g| g.to_vec1::<f32>())
                .map_err(candle_err)?;
            gradients.insert(name.clone(), values);
        }
        Ok(StepGradients {
            loss: loss.to_scalar::<f32>().map_err(candle_err)? as f64,
            inputs,
            gradients,
        })
    }

    /// The model as it is now, in the engine's format.
    pub fn export(&self) -> Result<Exported> {
        Ok(Exported {
            config: serde_json::to_string_pretty(&self.config).expect("serialises"),
            tokenizer: self.vocab.to_json(),
            weights: self.state.net.to_safetensors()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> PageSettings {
        PageSettings::preset(name).expect("a preset")
    }

    #[test]
    fn every_preset_is_within_the_limits() {
        for name in ["previous-token", "induction", "stories"] {
            assert_eq!(preset(name).check(), vec![], "{name}");
        }
        assert!(PageSettings::preset("no such preset").is_none());
    }

    #[test]
    fn bad_settings_are_named_before_anything_is_allocated() {
        let base = preset("previous-token");
        let cases: [(PageSettings, &str); 6] = [
            (
                PageSettings {
                    layers: 0,
                    ..base.clone()
                },
                "layers",
            ),
            (
                PageSettings {
                    heads: 3,
                    ..base.clone()
                },
                "d_model",
            ),
            (
                PageSettings {
                    context: 1_000_000,
                    ..base.clone()
                },
                "context",
            ),
            (
                PageSettings {
                    learning_rate: f64::NAN,
                    ..base.clone()
                },
                "learning_rate",
            ),
            (
                PageSettings {
                    learning_rate: f64::INFINITY,
                    ..base.clone()
                },
                "learning_rate",
            ),
            // Each within its range, together too big for a tab.
            (
                PageSettings {
                    batch: 64,
                    context: 256,
                    d_model: 256,
                    layers: 6,
                    ..base.clone()
                },
                "batch",
            ),
        ];
        for (settings, field) in cases {
            let errors = settings.check();
            assert_eq!(errors.len(), 1, "{settings:?}: {errors:?}");
            assert_eq!(errors[0].field, field, "{errors:?}");
            let refused = PageRun::new(settings, None).err().expect("refused");
            assert!(
                refused.to_string().contains(&errors[0].message),
                "{refused}"
            );
        }
    }

    #[test]
    fn the_vocabulary_spells_anything_typed_on_a_keyboard() {
        let vocab = vocab();
        assert_eq!(vocab.tokens.len(), 97);
        let tokenizer = vocab.clone().tokenizer().unwrap();
        use crate::tokenize::Tokenizer;
        let text = "Mary gave the ball to Tom.\n{x} = 3 ~ 4!";
        let encoding = tokenizer.encode(text, usize::MAX).unwrap();
        // The start token, then one token a character.
        assert_eq!(encoding.tokens.len(), 1 + text.len());
    }

    #[test]
    fn a_page_run_learns_and_exports_what_the_engine_reads() {
        let settings = PageSettings {
            steps: 40,
            batch: 8,
            d_model: 32,
            context: 32,
            ..preset("previous-token")
        };
        let mut run = PageRun::new(settings, None).unwrap();
        let reports = run.train(100).unwrap();
        assert_eq!(reports.len(), 40, "a run stops at its last step");
        assert_eq!(run.train(5).unwrap().len(), 0);
        let first: f64 = reports[..5].iter().map(|r| r.loss).sum::<f64>() / 5.0;
        let last: f64 = reports[35..].iter().map(|r| r.loss).sum::<f64>() / 5.0;
        assert!(
            last < first - 0.5,
            "the loss fell from {first:.3} to {last:.3}"
        );
        let evaluation = run.evaluate().unwrap();
        assert_eq!(evaluation.previous.len(), 4);
        assert_eq!(evaluation.induction.len(), 4);
        assert_eq!(evaluation.first.len(), 4);
        assert!(evaluation.held_out.is_finite() && evaluation.held_out < (97f64).ln());
        let files = run.export().unwrap();
        let model = crate::checkpoints::lecture::from_bytes(
            "trained-here",
            &files.config,
            &files.tokenizer,
            &files.weights,
        )
        .unwrap();
        assert_eq!(model.config.n_layers, 1);
        assert!(model.trace("Mary gave the ball to Tom.").is_ok());
    }

    #[test]
    fn the_reversal_task_pairs_each_string_with_its_reverse_within_the_context() {
        use crate::train::reversal::{is_held_out, reversed};
        let settings = PageSettings {
            task: Task::Reverse,
            context: 32,
            ..preset("induction")
        };
        let docs = Documents::of(&settings, None).unwrap();
        assert_eq!(docs.train.len(), TRAIN_REVERSALS);
        assert_eq!(docs.held_out.len(), HELD_OUT_REVERSALS);
        let longest = (32 - 2) / 2;
        for (doc, held) in docs
            .train
            .iter()
            .map(|d| (d, false))
            .chain(docs.held_out.iter().map(|d| (d, true)))
        {
            let (s, answer) = doc.split_once('>').expect("a string, then >");
            assert_eq!(answer, reversed(s), "{doc:?}");
            assert!(!s.is_empty() && s.len() <= longest, "{doc:?}");
            assert_eq!(is_held_out(s), held, "{doc:?}");
        }
        // Every length from 1 to the longest that fits is trained on.
        let lengths: std::collections::BTreeSet<usize> = docs
            .train
            .iter()
            .map(|d| d.split_once('>').unwrap().0.len())
            .collect();
        assert_eq!(lengths, (1..=longest).collect());
        // The head probe reads prose (the held-out stories), not strings of letters.
        assert!(docs.probe.iter().all(|d| d.contains(". ")));
    }

    #[test]
    fn the_text_task_reads_the_chapters_in_the_pages_characters_and_holds_out_the_last() {
        let settings = PageSettings {
            task: Task::Text,
            context: 16,
            ..preset("stories")
        };
        let chapters: Vec<String> = [
            "CHAPTER 1. Loomings.\n\nCall me Ishmael\u{2014}\u{201c}never\u{201d} mind, \u{2018}sir\u{2019}.\u{03b7}",
            "CHAPTER 2. The Carpet-Bag.\n\nI stuffed a shirt or two.",
            "CHAPTER 3. The Spouter-Inn.\n\nEntering that gable-ended inn.",
            "CHAPTER 4. The Counterpane.\n\nUpon waking next morning.",
        ]
        .map(String::from)
        .to_vec();
        let docs = Documents::of(&settings, Some(&chapters)).unwrap();
        assert_eq!(
            docs.train,
            [
                "CHAPTER 1. Loomings.\n\nCall me Ishmael--\"never\" mind, 'sir'.",
                "CHAPTER 2. The Carpet-Bag.\n\nI stuffed a shirt or two."
            ]
        );
        assert_eq!(docs.held_out.len(), CORPUS_HELD_OUT_CHAPTERS);
        assert!(docs.held_out[1].starts_with("CHAPTER 4."));
        assert_eq!(docs.probe, docs.held_out);
        assert!(PageRun::new(settings.clone(), Some(&chapters)).is_ok());

        // The chapters missing, too few, too short or too long: an error that says so, not a
        // panic.
        let message = |chapters: Option<&[String]>| {
            PageRun::new(settings.clone(), chapters)
                .err()
                .expect("refused")
                .to_string()
        };
        assert!(message(None).contains("did not load"), "{}", message(None));
        assert!(message(Some(&chapters[..2])).contains("more than 2 chapters"));
        let long_context = PageSettings {
            context: 128,
            ..settings.clone()
        };
        let refused = PageRun::new(long_context, Some(&chapters))
            .err()
            .expect("refused");
        assert!(
            refused
                .to_string()
                .contains("too short for a context of 128"),
            "{refused}"
        );
        let huge = vec!["x".repeat(MAX_TEXT_BYTES / 2 + 1); 2];
        assert!(message(Some(&[huge, chapters].concat())).contains("at most"));
        assert_eq!(corpus_files().len(), 32);
        assert_eq!(corpus_files()[0], "chapter_1.txt");
    }

    #[test]
    fn the_same_seed_gives_the_same_losses() {
        let settings = PageSettings {
            steps: 10,
            batch: 4,
            d_model: 16,
            context: 32,
            ..preset("induction")
        };
        let losses = |s: &PageSettings| -> Vec<f64> {
            let mut run = PageRun::new(s.clone(), None).unwrap();
            run.train(6).unwrap().iter().map(|r| r.loss).collect()
        };
        assert_eq!(losses(&settings), losses(&settings));
        assert_ne!(
            losses(&settings),
            losses(&PageSettings {
                seed: 2,
                ..settings.clone()
            })
        );
    }

    /// A batch cut into one part a thread: the same gradients and losses on a pool of one
    /// thread as on two (the parts are added in order), and the whole batch's gradients
    /// within float rounding.
    #[test]
    fn a_batch_cut_into_parts_gives_the_same_numbers_on_any_number_of_threads() {
        let settings = PageSettings {
            steps: 10,
            batch: 6,
            d_model: 32,
            context: 32,
            ..preset("induction")
        };
        let on_pool = |threads: usize, parts: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| {
                let mut run = PageRun::new(settings.clone(), None)
                    .unwrap()
                    .on_threads(parts);
                let gradients = run.gradients().unwrap();
                let losses: Vec<f64> = run.train(4).unwrap().iter().map(|r| r.loss).collect();
                (gradients, losses)
            })
        };
        let (whole, _) = on_pool(1, 1);
        let (one, one_losses) = on_pool(1, 3);
        let (two, two_losses) = on_pool(2, 3);
        assert_eq!(one.loss, two.loss);
        assert_eq!(one.gradients, two.gradients);
        assert_eq!(one_losses, two_losses);
        assert!(
            (one.loss - whole.loss).abs() < 1e-5 * whole.loss,
            "{} {}",
            one.loss,
            whole.loss
        );
        for (name, g) in &whole.gradients {
            let largest = g.iter().fold(0f32, |m, v| m.max(v.abs()));
            let off = g
                .iter()
                .zip(&one.gradients[name])
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            // A key's bias has no gradient (softmax ignores what is added to every score of a
            // query): its values are rounding, compared in absolute terms.
            assert!(off <= 1e-4 * largest + 1e-6, "{name}: {off} of {largest}");
        }
    }
}
