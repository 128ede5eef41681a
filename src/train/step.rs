//! One optimiser step of a training run, the same natively (`run`, the CLI's `train`) and in
//! the page (`web::training`, in a worker): the settings, the learning-rate schedule, the
//! seeded batch sampler, backward, clipping and AdamW, and the held-out loss.

use candle_core::backprop::GradStore;
use candle_core::{Tensor, Var};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

use super::adamw::{clip_gradients, AdamW};
use super::batches::{run_pool, sample_sequence, Mixture};
use super::network::{candle_err, id_tensor, Network};
use crate::error::{Result, VizError};
use crate::model::ModelConfig;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Settings {
    pub steps: usize,
    /// Sequences per step.
    pub batch: usize,
    /// Tokens per sequence (at most the context).
    pub sequence: usize,
    pub learning_rate: f64,
    pub warmup_steps: usize,
    /// The cosine decays to this share of the peak rate.
    pub final_rate_share: f64,
    pub weight_decay: f64,
    pub clip_norm: f64,
    pub seed: u64,
    pub eval_every: usize,
    pub checkpoint_every: usize,
    /// AdamW's second-moment decay.
    pub beta2: f64,
    /// The shares of random runs and copied spans, and the random runs' pool (`batches`).
    pub mixture: Mixture,
    /// A curriculum's first part: its steps and its mixture (the `mixture` after it). A small
    /// model learns to copy a short run of a few tokens long before a long run of any token,
    /// and once it copies, it copies any token.
    #[serde(default)]
    pub early: Option<(usize, Mixture)>,
    /// During the curriculum's first part, its random runs' pool doubles every this many
    /// steps (0: it stays), from the early mixture's pool until it holds every ordinary token:
    /// a copying circuit learned on a few tokens meets more of them a little at a time.
    #[serde(default)]
    pub pool_doubling: usize,
    /// The projections' standard deviation at initialisation (`Network::init_scaled`).
    #[serde(default = "default_projection_std")]
    pub projection_std: f32,
    /// The batch is cut into this many parts whose gradients are computed side by side on the
    /// CPU's threads and added (`loss_and_gradients`); 1: the whole batch at once.
    #[serde(default = "one_shard")]
    pub shards: usize,
}

fn default_projection_std() -> f32 {
    super::network::DEFAULT_PROJECTION_STD
}

fn one_shard() -> usize {
    1
}

impl Settings {
    /// The mixture that step `step` draws its batch from.
    pub fn mixture_at(&self, step: usize) -> Mixture {
        match &self.early {
            Some((steps, early)) if step < *steps => {
                let mut m = *early;
                if self.pool_doubling > 0 && m.pool > 0 {
                    let doublings = (step / self.pool_doubling).min(32) as u32;
                    m.pool = ((m.pool as u64) << doublings).min(u32::MAX as u64) as u32;
                }
                m
            }
            _ => self.mixture,
        }
    }
}

/// Linear warm-up to the peak, then a cosine down to `final_rate_share` of it.
pub fn learning_rate(s: &Settings, step: usize) -> f64 {
    if step < s.warmup_steps {
        return s.learning_rate * (step + 1) as f64 / s.warmup_steps as f64;
    }
    let progress = (step - s.warmup_steps) as f64 / (s.steps - s.warmup_steps).max(1) as f64;
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress.min(1.0)).cos());
    s.learning_rate * (s.final_rate_share + (1.0 - s.final_rate_share) * cosine)
}

/// What one optimiser step reports: the batch's loss, the gradients' norm before clipping and
/// the learning rate it used.
pub struct Optimised {
    pub loss: f64,
    pub norm: f64,
    pub rate: f64,
}

/// A batch's mean loss (a scalar tensor) and every variable's gradient. With `shards` above 1
/// the batch is cut into that many parts of (nearly) equal size; each part's loss, weighted by
/// its share of the batch, and its gradients are computed on a thread of its own (rayon's:
/// natively its global pool, in the page's threaded trainer the worker's pool), then added in
/// the parts' order. The sum is the same whatever the number of threads, and within float
/// rounding of the whole batch's at once (`shards` 1, which the lecture recipe uses).
pub fn loss_and_gradients(
    net: &Network,
    inputs: &[Vec<u32>],
    targets: &[Vec<u32>],
    vars: &[Var],
    shards: usize,
) -> Result<(Tensor, GradStore)> {
    let batch = inputs.len();
    let shards = shards.clamp(1, batch.max(1));
    if shards == 1 {
        let loss = net
            .loss(&id_tensor(inputs)?, &id_tensor(targets)?)
            .map_err(candle_err)?; // ()
        let grads = loss.backward().map_err(candle_err)?;
        return Ok((loss, grads));
    }
    let size = batch.div_ceil(shards);
    let part = |k: usize| -> Result<(Tensor, GradStore)> {
        let rows = k * size..((k + 1) * size).min(batch);
        let share = rows.len() as f64 / batch as f64;
        let loss = net
            .loss(
                &id_tensor(&inputs[rows.clone()])?,
                &id_tensor(&targets[rows])?,
            )
            .and_then(|l| l.affine(share, 0.0))
            .map_err(candle_err)?; // ()
        let grads = loss.backward().map_err(candle_err)?;
        Ok((loss, grads))
    };
    let parts: Vec<(Tensor, GradStore)> = side_by_side(batch.div_ceil(size), part)?;
    let mut parts = parts.into_iter();
    let (mut loss, mut grads) = parts.next().expect("at least one part");
    for (part_loss, part_grads) in parts {
        loss = (loss + part_loss).map_err(candle_err)?;
        for var in vars {
            let t = var.as_tensor();
            if let Some(g) = part_grads.get(t) {
                let sum = match grads.get(t) {
                    Some(mine) => (mine + g).map_err(candle_err)?,
                    None => g.clone(),
                };
                grads.insert(t, sum);
            }
        }
    }
    Ok((loss, grads))
}

/// `f(0..n)`, each on a thread of rayon's pool where the build has one, collected in order.
fn side_by_side<T: Send>(n: usize, f: impl Fn(usize) -> Result<T> + Sync + Send) -> Result<Vec<T>> {
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    {
        use rayon::prelude::*;
        (0..n).into_par_iter().map(f).collect()
    }
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    {
        (0..n).map(f).collect()
    }
}

/// One optimiser step on a batch's `loss`: backward, clipping to `s.clip_norm`, AdamW at the
/// scheduled rate for `step`. A loss that is not finite ends the run with an error.
pub fn optimise(
    loss: &Tensor,
    vars: &[Var],
    opt: &mut AdamW,
    s: &Settings,
    step: usize,
) -> Result<Optimised> {
    let grads = loss.backward().map_err(candle_err)?;
    update(loss, grads, vars, opt, s, step)
}

/// The optimiser step on gradients already computed (`optimise`).
fn update(
    loss: &Tensor,
    mut grads: GradStore,
    vars: &[Var],
    opt: &mut AdamW,
    s: &Settings,
    step: usize,
) -> Result<Optimised> {
    let norm = clip_gradients(&mut grads, vars, s.clip_norm).map_err(candle_err)?;
    let rate = learning_rate(s, step);
    opt.step(&grads, rate).map_err(candle_err)?;
    let loss = loss.to_scalar::<f32>().map_err(candle_err)? as f64;
    if !loss.is_finite() {
        return Err(VizError::Training(format!(
            "the loss became {loss} at step {step}: lower the learning rate"
        )));
    }
    Ok(Optimised { loss, norm, rate })
}

/// Mean loss over fixed windows, in batches.
pub fn evaluate(net: &Network, windows: &[Vec<u32>], batch: usize) -> Result<f64> {
    let mut total = 0.0;
    for chunk in windows.chunks(batch) {
        let inputs: Vec<Vec<u32>> = chunk.iter().map(|w| w[..w.len() - 1].to_vec()).collect();
        let targets: Vec<Vec<u32>> = chunk.iter().map(|w| w[1..].to_vec()).collect();
        let loss = net
            .loss(&id_tensor(&inputs)?, &id_tensor(&targets)?)
            .and_then(|l| l.to_scalar::<f32>())
            .map_err(candle_err)?;
        total += loss as f64 * chunk.len() as f64;
    }
    Ok(total / windows.len() as f64)
}

/// A run's model, optimiser and sampler between steps: what a step changes.
pub struct State {
    pub net: Network,
    pub opt: AdamW,
    /// The network's variables in its parameter order (handles onto `net`'s tensors).
    pub vars: Vec<Var>,
    /// Every ordinary id, most frequent in the training text first (`run_pool`).
    pub pool: Vec<u32>,
    /// The sampler's random stream.
    pub rng: ChaCha8Rng,
}

impl State {
    /// The seeded initial state of a run of `settings` on `config` over the token stream
    /// `train`, whose start token is `bos`.
    pub fn start(
        config: &ModelConfig,
        settings: &Settings,
        train: &[u32],
        bos: u32,
    ) -> Result<Self> {
        let net = Network::init_scaled(config, settings.seed, settings.projection_std)?;
        let vars = net.vars();
        let mut opt = AdamW::new(vars.clone(), settings.weight_decay).map_err(candle_err)?;
        opt.beta2 = settings.beta2;
        Ok(State {
            net,
            opt,
            vars,
            pool: run_pool(train, bos), // (bos,): by frequency
            // The sampler's stream is seeded apart from the initial weights'.
            rng: ChaCha8Rng::seed_from_u64(settings.seed ^ 0x5eed_da7a),
        })
    }

    /// Step `step`'s batch: `settings.batch` sequences of `settings.sequence + 1` ids drawn
    /// from `train` (and the drill text `drills`) by the step's mixture, as inputs and
    /// targets (the same shifted by one).
    pub fn batch(
        &mut self,
        train: &[u32],
        drills: &[u32],
        settings: &Settings,
        bos: u32,
        step: usize,
    ) -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
        let mixture = settings.mixture_at(step);
        let seqs: Vec<Vec<u32>> = (0..settings.batch)
            .map(|_| {
                sample_sequence(
                    &mut self.rng,
                    train,
                    drills,
                    settings.sequence,
                    bos,
                    &mixture,
                    &self.pool,
                )
            })
            .collect(); // (batch, sequence + 1)
        let inputs = seqs
            .iter()
            .map(|q| q[..settings.sequence].to_vec())
            .collect(); // (batch, sequence)
        let targets = seqs.iter().map(|q| q[1..].to_vec()).collect(); // (batch, sequence)
        (inputs, targets)
    }

    /// One optimiser step on a freshly sampled batch.
    pub fn step(
        &mut self,
        train: &[u32],
        drills: &[u32],
        settings: &Settings,
        bos: u32,
        step: usize,
    ) -> Result<Optimised> {
        let (inputs, targets) = self.batch(train, drills, settings, bos, step);
        let (loss, grads) =
            loss_and_gradients(&self.net, &inputs, &targets, &self.vars, settings.shards)?;
        update(&loss, grads, &self.vars, &mut self.opt, settings, step)
    }
}
