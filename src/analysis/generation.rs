//! Generation: the text continued one token at a time, each new token run through the KV
//! cache (one new row of attention per layer), untraced. The choice of each token (greedy or
//! sampled) is the caller's: `analysis::sampling` makes it.

use ndarray::{Array1, ArrayView1};
use serde::Serialize;

pub use super::sampling::SamplingSettings;
use super::sampling::{Sampler, SamplingStages};
use crate::error::{Result, VizError};
use crate::model::attention::probabilities_of;
use crate::model::kv_cache::KvCache;
use crate::tokenize::Tokenizer;
use crate::Transformer;

pub struct Generator<'m> {
    model: &'m Transformer,
    cache: KvCache,
    ids: Vec<u32>,
    /// Next-token probabilities after `ids` (vocab).
    probabilities: Array1<f32>,
}

impl<'m> Generator<'m> {
    /// Runs the prompt's tokens (one pass, filling the cache).
    pub fn new(model: &'m Transformer, prompt: &[u32]) -> Result<Self> {
        if !model.config.causal {
            return Err(VizError::BadConfig(format!(
                "{} is an encoder: it cannot continue a text",
                model.config.name
            )));
        }
        let mut cache = KvCache::new();
        let probabilities = probabilities_of(model.next_logits(prompt, &mut cache)?);
        Ok(Generator {
            model,
            cache,
            ids: prompt.to_vec(),
            probabilities,
        })
    }

    /// The tokens so far: the prompt's and the generated ones.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The next token's probabilities (vocab).
    pub fn probabilities(&self) -> &Array1<f32> {
        &self.probabilities
    }

    /// Tokens whose keys and values the cache holds.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// True when another token fits the model's context.
    pub fn has_room(&self) -> bool {
        self.ids.len() < self.model.config.context
    }

    /// Appends `id` and computes the probabilities of the token after it.
    pub fn push(&mut self, id: u32) -> Result<()> {
        self.probabilities = probabilities_of(self.model.next_logits(&[id], &mut self.cache)?);
        self.ids.push(id);
        Ok(())
    }
}

/// A token generation adds: drawn from the model's next-token probabilities, the same way in
/// the CLI and the page (`draw_token`).
#[derive(Debug, Clone, Serialize)]
pub struct GeneratedToken {
    pub id: u32,
    /// The token's text as it reads.
    pub token: String,
    /// The probability it was drawn with (after temperature, top-k and top-p).
    pub probability: f32,
    /// The model's own probability for it (temperature 1, nothing removed).
    pub model_probability: f32,
    /// Set when generation ends with this token, and why: the model ended the text (a
    /// special token such as an end-of-text token).
    pub stopped: Option<String>,
}

/// Draws the next token from `probabilities` (vocab) under `settings` with `sampler`'s
/// random stream: the one sampling step of every generation.
pub fn draw_token(
    tokenizer: &dyn Tokenizer,
    probabilities: ArrayView1<f32>,
    settings: &SamplingSettings,
    sampler: &mut Sampler,
) -> Result<GeneratedToken> {
    let stages = SamplingStages::new(probabilities, settings)?;
    let id = stages.sample(sampler);
    let (probability, model_probability) = stages
        .tokens
        .iter()
        .find(|t| t.id == id)
        .map_or((0.0, 0.0), |t| (t.renormalised, t.before));
    let token = tokenizer.token_text(id).unwrap_or("").to_string();
    let stopped = tokenizer.is_special(id).then(|| {
        format!(
            "the model ended the text with {}",
            tokenizer.token_text(id).unwrap_or("a special token")
        )
    });
    Ok(GeneratedToken {
        id,
        token,
        probability,
        model_probability,
        stopped,
    })
}

#[derive(Debug, Clone, Serialize)]
pub struct Generation {
    /// The prompt's tokens.
    pub tokens: Vec<String>,
    pub generated: Vec<GeneratedToken>,
    /// The generated tokens as text.
    pub text: String,
    /// Why generation stopped early, if it did.
    pub stopped: Option<String>,
    pub seconds: f64,
    pub tokens_per_second: f64,
}

/// Continues `text` by up to `n` tokens chosen with `settings`.
pub fn generate(
    model: &Transformer,
    text: &str,
    n: usize,
    settings: &SamplingSettings,
) -> Result<Generation> {
    settings.validate()?;
    let encoding = model.encode(text)?;
    let prompt = encoding.ids();
    if prompt.len() >= model.config.context {
        return Err(VizError::ContextFull {
            tokens: prompt.len(),
            context: model.config.context,
        });
    }
    let started = std::time::Instant::now();
    let mut generator = Generator::new(model, &prompt)?;
    let mut sampler = Sampler::new(settings.seed);
    let mut generated = Vec::new();
    let mut stopped = None;
    for _ in 0..n {
        if !generator.has_room() {
            stopped = Some(format!(
                "the context of {} tokens is full",
                model.config.context
            ));
            break;
        }
        let token = draw_token(
            model.tokenizer.as_ref(),
            generator.probabilities().view(),
            settings,
            &mut sampler,
        )?;
        let id = token.id;
        let ends = token.stopped.clone();
        generated.push(token);
        if ends.is_some() {
            stopped = ends;
            break;
        }
        generator.push(id)?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let ids: Vec<u32> = generated.iter().map(|g| g.id).collect();
    Ok(Generation {
        tokens: encoding.tokens.iter().map(|t| t.text.clone()).collect(),
        text: model.tokenizer.decode(&ids)?,
        generated,
        stopped,
        seconds,
        tokens_per_second: ids.len() as f64 / seconds.max(1e-9),
    })
}
