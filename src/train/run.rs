//! One training run: seeded sampling, forward, cross-entropy, backward, gradient clipping,
//! AdamW with linear warm-up and cosine decay; held-out loss, a log, a progress bar with loss
//! and tokens/s, checkpoints that resume the run exactly, and the loss curve as SVG.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use super::adamw::AdamW;
use super::batches::{evaluation_windows, Mixture};
use super::curve::{loss_curve_svg, CurvePoint};
use super::head_probe::HeadProbe;
use super::network::{candle_err, Network};
use super::step::{evaluate, Optimised, Settings, State};
use crate::error::{Result, VizError};
use crate::model::ModelConfig;

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct History {
    /// (step, tokens seen, training loss) every logged step.
    pub train: Vec<(usize, f64, f64)>,
    /// (step, tokens seen, held-out loss).
    pub held_out: Vec<(usize, f64, f64)>,
}

/// A run's `train.log` and, on a terminal, its progress bar: every line goes to both.
pub struct RunLog {
    pub bar: indicatif::ProgressBar,
    file: std::fs::File,
}

impl RunLog {
    /// Opens `dir/train.log` (appending, or afresh) and a bar of `steps` (hidden unless `shown`).
    pub fn open(dir: &Path, steps: usize, shown: bool, append: bool) -> Result<Self> {
        let path = dir.join("train.log");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&path)
            .map_err(io(&path))?;
        let bar = if shown {
            indicatif::ProgressBar::new(steps as u64)
        } else {
            indicatif::ProgressBar::hidden()
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:30} {pos}/{len} steps · {msg} · {elapsed_precise} (~{eta} left)",
            )
            .expect("a valid template"),
        );
        Ok(RunLog { bar, file })
    }

    pub fn say(&mut self, line: String) {
        self.bar.suspend(|| println!("{line}"));
        let _ = writeln!(self.file, "{line}");
    }
}

/// What a checkpoint holds beside the weights and moments.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CheckpointState {
    step: usize,
    /// The sampler's position in its random stream (a u128 as text).
    rng_word_pos: String,
    settings: Settings,
    history: History,
    seconds: f64,
}

pub struct Outcome {
    pub network: Network,
    pub history: History,
    pub final_held_out: f64,
}

pub(crate) fn io(path: &Path) -> impl Fn(std::io::Error) -> VizError + '_ {
    move |e| VizError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

pub struct Run<'a> {
    pub name: String,
    pub config: ModelConfig,
    pub settings: Settings,
    pub train: &'a [u32],
    /// The drill text's stream (`Mixture::drills`); empty when the mixtures draw no drills.
    pub drills: &'a [u32],
    pub held_out: &'a [u32],
    pub bos: u32,
    pub out: PathBuf,
    pub resume: bool,
    pub baseline: Option<f64>,
    /// Show a progress bar on the terminal (the log goes to `train.log` either way).
    pub progress: bool,
    /// Stop after this step with a checkpoint written, as an interrupted run would (tests
    /// resume from it); `None` trains to the end.
    pub stop_after: Option<usize>,
    /// Measures the heads at each evaluation and logs it (`head_probe`).
    pub probe: Option<&'a HeadProbe>,
    /// Start from the weights of another run (its `model.safetensors`, the same config) with
    /// fresh AdamW moments, instead of the seeded initial weights; a resumed run ignores it.
    pub init_from: Option<PathBuf>,
}

fn save_checkpoint(dir: &Path, net: &Network, opt: &AdamW, state: &CheckpointState) -> Result<()> {
    let mut tensors: Vec<(String, Tensor)> = Vec::new();
    for (name, var) in &net.params {
        tensors.push((name.clone(), var.as_tensor().clone()));
    }
    for ((name, _), (_, m, v)) in net.params.iter().zip(&opt.state) {
        tensors.push((format!("adam.m.{name}"), m.clone()));
        tensors.push((format!("adam.v.{name}"), v.clone()));
    }
    let path = dir.join("checkpoint.safetensors");
    candle_core::safetensors::save(&tensors.into_iter().collect(), &path).map_err(candle_err)?;
    let json = dir.join("checkpoint.json");
    std::fs::write(
        &json,
        serde_json::to_string_pretty(state).expect("serialises"),
    )
    .map_err(io(&json))
}

/// A run's state between steps: what a checkpoint saves and a resumed run restores.
struct Training {
    state: State,
    history: History,
    /// The step this session began at: 0, or the checkpoint's.
    first_step: usize,
    /// Seconds the run trained before this session.
    seconds_before: f64,
}

/// Where the run is after a step.
struct Progress {
    done: usize,
    /// Tokens trained on since the run began.
    seen: f64,
    /// Tokens a second in this session.
    speed: f64,
    /// Seconds trained since the run began.
    seconds: f64,
}

impl Training {
    /// Weights, moments, sampler position, history and time from the checkpoint in `dir`,
    /// which must have been made with `settings`.
    fn restore(&mut self, dir: &Path, settings: &Settings) -> Result<()> {
        let json_path = dir.join("checkpoint.json");
        let state: CheckpointState =
            serde_json::from_str(&std::fs::read_to_string(&json_path).map_err(io(&json_path))?)
                .map_err(|e| VizError::Training(format!("checkpoint.json: {e}")))?;
        if &state.settings != settings {
            return Err(VizError::Training(
                "the checkpoint was made with other settings: start afresh without --resume".into(),
            ));
        }
        let saved =
            candle_core::safetensors::load(dir.join("checkpoint.safetensors"), &Device::Cpu)
                .map_err(candle_err)?;
        let State { net, opt, rng, .. } = &mut self.state;
        for ((name, var), (_, m, v)) in net.params.iter().zip(opt.state.iter_mut()) {
            let get = |key: &str| {
                saved
                    .get(key)
                    .cloned()
                    .ok_or_else(|| VizError::Training(format!("the checkpoint lacks `{key}`")))
            };
            var.set(&get(name)?).map_err(candle_err)?;
            *m = get(&format!("adam.m.{name}"))?;
            *v = get(&format!("adam.v.{name}"))?;
        }
        opt.step = state.step;
        self.first_step = state.step;
        rng.set_word_pos(
            state
                .rng_word_pos
                .parse()
                .map_err(|_| VizError::Training("checkpoint.json: bad rng_word_pos".into()))?,
        );
        self.history = state.history;
        self.seconds_before = state.seconds;
        Ok(())
    }

    /// The weights of `file` (a run's `model.safetensors`) in place of the initial ones, each
    /// checked against its variable's shape; the moments stay zero, as at any start.
    fn start_from(&mut self, file: &Path) -> Result<()> {
        let saved = candle_core::safetensors::load(file, &Device::Cpu).map_err(candle_err)?;
        for (name, var) in &self.state.net.params {
            let tensor = saved
                .get(name)
                .ok_or_else(|| VizError::Training(format!("{} lacks `{name}`", file.display())))?;
            if tensor.dims() != var.dims() {
                return Err(VizError::Training(format!(
                    "{}: `{name}` is {:?}, the model's is {:?}",
                    file.display(),
                    tensor.dims(),
                    var.dims()
                )));
            }
            var.set(tensor).map_err(candle_err)?;
        }
        Ok(())
    }

    fn save(&self, dir: &Path, settings: &Settings, p: &Progress) -> Result<()> {
        let state = CheckpointState {
            step: p.done,
            rng_word_pos: self.state.rng.get_word_pos().to_string(),
            settings: settings.clone(),
            history: self.history.clone(),
            seconds: p.seconds,
        };
        save_checkpoint(dir, &self.state.net, &self.state.opt, &state)
    }

    fn final_held_out(&self) -> f64 {
        self.history
            .held_out
            .last()
            .map(|h| h.2)
            .unwrap_or(f64::NAN)
    }
}

impl Run<'_> {
    pub fn train(self) -> Result<Outcome> {
        self.check()?;
        let s = &self.settings;
        std::fs::create_dir_all(&self.out).map_err(io(&self.out))?;
        let mut training = self.start()?;
        let mut log = self.open_log(&training)?;
        let windows = evaluation_windows(self.held_out, s.sequence, self.bos, 64);
        let started = Instant::now();
        let tokens_per_step = (s.batch * s.sequence) as f64;
        for step in training.first_step..s.steps {
            let optimised = training
                .state
                .step(self.train, self.drills, s, self.bos, step)?;
            let done = step + 1;
            let elapsed = started.elapsed().as_secs_f64();
            let progress = Progress {
                done,
                seen: done as f64 * tokens_per_step,
                speed: (done - training.first_step) as f64 * tokens_per_step / elapsed.max(1e-9),
                seconds: training.seconds_before + elapsed,
            };
            self.record(&mut training, &mut log, &windows, &optimised, &progress)?;
            let interrupted = self.stop_after == Some(done);
            if (done % s.checkpoint_every == 0 || interrupted) && done < s.steps {
                training.save(&self.out, s, &progress)?;
            }
            if interrupted {
                let final_held_out = training.final_held_out();
                return Ok(Outcome {
                    network: training.state.net,
                    history: training.history,
                    final_held_out,
                });
            }
        }
        log.bar.finish_and_clear();
        self.finish(training, &mut log, started)
    }

    /// Settings within range and a corpus long enough for them.
    fn check(&self) -> Result<()> {
        let s = &self.settings;
        if s.sequence > self.config.context
            || s.sequence < 16
            || s.steps == 0
            || s.batch == 0
            || s.warmup_steps > s.steps
        {
            return Err(VizError::Training(format!(
                "settings out of range: sequence {} (16..={}), steps {}, batch {}, warm-up {}",
                s.sequence, self.config.context, s.steps, s.batch, s.warmup_steps
            )));
        }
        if self.train.len() < 2 * s.sequence + 2 || self.held_out.len() < s.sequence + 2 {
            return Err(VizError::Training(
                "the corpus is too small for one sequence".into(),
            ));
        }
        let drilled = s.mixture.drills > 0 || s.early.is_some_and(|(_, m)| m.drills > 0);
        if drilled && self.drills.len() < s.sequence + 2 {
            return Err(VizError::Training(format!(
                "the mixture draws drills, and the drill text holds {} tokens, fewer than one sequence of {} (give --drill-stories)",
                self.drills.len(),
                s.sequence + 1
            )));
        }
        let shares = |m: &Mixture| m.random_repeat + m.copied_span + m.drills;
        if shares(&s.mixture) > 1000 || s.early.is_some_and(|(_, m)| shares(&m) > 1000) {
            return Err(VizError::Training(
                "random runs, copied spans and drills add up to more than 1000 thousandths of a batch".into(),
            ));
        }
        Ok(())
    }

    /// The seeded initial state, or the checkpoint's when resuming from one.
    fn start(&self) -> Result<Training> {
        let mut training = Training {
            state: State::start(&self.config, &self.settings, self.train, self.bos)?,
            history: History::default(),
            first_step: 0,
            seconds_before: 0.0,
        };
        if self.resume && self.out.join("checkpoint.json").exists() {
            training.restore(&self.out, &self.settings)?;
        } else if let Some(weights) = &self.init_from {
            training.start_from(weights)?;
        }
        Ok(training)
    }

    /// The log, begun with what is trained on what. A resumed run's log goes on where it
    /// stopped.
    fn open_log(&self, training: &Training) -> Result<RunLog> {
        let s = &self.settings;
        let mut log = RunLog::open(&self.out, s.steps, self.progress, true)?;
        log.bar.set_position(training.first_step as u64);
        log.say(format!(
            "{}: {} parameters, {} training tokens, {} held-out; {}",
            self.name,
            training.state.net.parameter_count(),
            self.train.len(),
            self.held_out.len(),
            serde_json::to_string(s).expect("serialises")
        ));
        if training.first_step > 0 {
            log.say(format!(
                "resumed from the checkpoint at step {}",
                training.first_step
            ));
        } else if let Some(weights) = &self.init_from {
            log.say(format!("started from the weights in {}", weights.display()));
        }
        Ok(log)
    }

    /// A step's loss on the bar and (every 10th step) in the history; at each evaluation,
    /// the held-out loss in the history and a line in the log.
    fn record(
        &self,
        training: &mut Training,
        log: &mut RunLog,
        windows: &[Vec<u32>],
        &Optimised { loss, norm, rate }: &Optimised,
        p: &Progress,
    ) -> Result<()> {
        let s = &self.settings;
        let Progress {
            done, seen, speed, ..
        } = *p;
        log.bar.set_position(done as u64);
        log.bar
            .set_message(format!("loss {loss:.3} · {:.1}k tokens/s", speed / 1e3));
        if done % 10 == 0 || done == s.steps {
            training.history.train.push((done, seen, loss));
        }
        if done % s.eval_every == 0 || done == s.steps {
            let held = evaluate(&training.state.net, windows, s.batch)?;
            training.history.held_out.push((done, seen, held));
            let heads = match self.probe {
                Some(probe) => probe
                    .measure_network(&training.state.net)?
                    .map(|r| format!(" · {}", r.summary()))
                    .unwrap_or_default(),
                None => String::new(),
            };
            log.say(
                format!(
                    "step {done}/{} · tokens {:.2}M · lr {rate:.2e} · loss {loss:.4} · held-out {held:.4} · grad norm {norm:.2} · {:.0} tokens/s · {:.0} s{heads}",
                    s.steps,
                    seen / 1e6,
                    speed,
                    p.seconds
                )
            );
        }
        Ok(())
    }

    /// The trained model's files (weights, config, loss curve) in place of the checkpoint,
    /// and the network as read back from them.
    fn finish(&self, training: Training, log: &mut RunLog, started: Instant) -> Result<Outcome> {
        let final_held_out = training.final_held_out();
        let model_path = self.out.join("model.safetensors");
        std::fs::write(&model_path, training.state.net.to_safetensors()?)
            .map_err(io(&model_path))?;
        let config_path = self.out.join("config.json");
        std::fs::write(
            &config_path,
            serde_json::to_string_pretty(&self.config).expect("serialises"),
        )
        .map_err(io(&config_path))?;
        self.write_loss_curve(&training.history)?;
        for stale in ["checkpoint.safetensors", "checkpoint.json"] {
            let _ = std::fs::remove_file(self.out.join(stale));
        }
        log.say(format!(
            "done: held-out loss {final_held_out:.4} after {} steps, {:.0} s",
            self.settings.steps,
            training.seconds_before + started.elapsed().as_secs_f64()
        ));
        let network = Network::from_safetensors(
            &self.config,
            &std::fs::read(&model_path).map_err(io(&model_path))?,
        )?;
        Ok(Outcome {
            network,
            history: training.history,
            final_held_out,
        })
    }

    /// `loss.svg`: the training and held-out losses against tokens seen.
    fn write_loss_curve(&self, history: &History) -> Result<()> {
        let points = |v: &[(usize, f64, f64)]| {
            v.iter()
                .map(|&(_, tokens, loss)| CurvePoint { tokens, loss })
                .collect::<Vec<_>>()
        };
        let svg = loss_curve_svg(
            &format!("{}: loss while training", self.name),
            &points(&history.train),
            &points(&history.held_out),
            self.baseline,
        )?;
        let svg_path = self.out.join("loss.svg");
        std::fs::write(&svg_path, svg).map_err(io(&svg_path))
    }
}
