//! Decoding: how the next token is chosen from the model's probabilities, in the order the
//! lecture teaches it. Temperature first reshapes the whole distribution (divide the logits by
//! T: below 1 it sharpens, above 1 it flattens, 0 means always the most likely token); then
//! top-k keeps only the k most likely tokens; then top-p keeps the fewest most likely tokens
//! whose probabilities add up to at least p; what is left is renormalised to sum to 1 and one
//! token is drawn from it. `SamplingStages` keeps every stage so the page can draw them.

use ndarray::ArrayView1;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::error::{Result, VizError};

/// The decoding settings a class can write on the board and reuse.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplingSettings {
    /// 0: greedy (always the most likely token); 1: the model's own distribution.
    pub temperature: f32,
    /// Keep the k most likely tokens; 0 keeps all.
    pub top_k: usize,
    /// Keep the most likely tokens until their probabilities reach p; 1 keeps all.
    pub top_p: f32,
    /// The random stream's seed: the same seed and settings give the same tokens.
    pub seed: u64,
}

impl Default for SamplingSettings {
    fn default() -> Self {
        SamplingSettings {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            seed: 0,
        }
    }
}

/// Temperatures above this flatten every real distribution to nearly uniform; the limit keeps
/// the arithmetic meaningful.
pub const MAX_TEMPERATURE: f32 = 100.0;

fn bad(setting: &str, value: impl ToString, problem: &str) -> VizError {
    VizError::BadSampling {
        setting: setting.into(),
        value: value.to_string(),
        problem: problem.into(),
    }
}

impl SamplingSettings {
    pub fn greedy() -> Self {
        SamplingSettings {
            temperature: 0.0,
            ..Self::default()
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(self.temperature >= 0.0 && self.temperature <= MAX_TEMPERATURE) {
            return Err(bad(
                "temperature",
                self.temperature,
                &format!("must be a number from 0 (greedy) to {MAX_TEMPERATURE}"),
            ));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(bad(
                "top_p",
                self.top_p,
                "must be a number above 0 and at most 1 (1 keeps every token)",
            ));
        }
        Ok(())
    }
}

/// The rule that left a token out of the draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cut {
    /// Temperature 0: greedy decoding takes the most likely token, whatever top-k and top-p say.
    #[serde(rename = "greedy")]
    Greedy,
    /// Not among the k most likely.
    #[serde(rename = "top-k")]
    TopK,
    /// Survived top-k, past the tokens whose probability reaches p.
    #[serde(rename = "top-p")]
    TopP,
}

/// One token's fate through the stages.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TokenStage {
    pub id: u32,
    /// The model's probability (temperature 1).
    pub before: f32,
    /// After temperature.
    pub tempered: f32,
    /// The rule that removed it (None: it can be drawn).
    pub removed_by: Option<Cut>,
    /// The probability sampling uses: renormalised over the kept tokens (0 when removed).
    pub renormalised: f32,
}

/// Every stage for the whole vocabulary, most likely first.
#[derive(Debug, Clone, Serialize)]
pub struct SamplingStages {
    pub settings: SamplingSettings,
    /// Every token with a nonzero chance at temperature 1 or kept, by decreasing
    /// probability (ties: lower id first).
    pub tokens: Vec<TokenStage>,
    /// Tokens left to sample from.
    pub kept: usize,
    /// The tempered probability the kept tokens carried before renormalising.
    pub kept_mass: f32,
}

impl SamplingStages {
    /// The stages for next-token probabilities `probabilities` (vocab, summing to 1).
    pub fn new(probabilities: ArrayView1<f32>, settings: &SamplingSettings) -> Result<Self> {
        settings.validate()?;
        if probabilities.is_empty() {
            return Err(bad(
                "probabilities",
                "[]",
                "are empty: the model gave no distribution",
            ));
        }
        if probabilities.iter().any(|p| !p.is_finite() || *p < 0.0) {
            return Err(bad(
                "probabilities",
                "…",
                "contain a negative or non-finite value",
            ));
        }
        // Most likely first, ties by id: each token as one number, its probability's bits
        // (which order non-negative floats as their values do) turned over above its id, so
        // one unstable sort of plain integers gives the order (a comparison of two floats and
        // two ids a step cost several times as much, over the whole vocabulary each pass).
        let mut keys: Vec<u64> = probabilities
            .iter()
            .enumerate()
            .map(|(id, &p)| {
                let bits = (p + 0.0).to_bits(); // -0 as +0
                (u64::from(u32::MAX - bits) << 32) | id as u64
            })
            .collect();
        keys.sort_unstable();
        let order: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
        let before: Vec<f32> = order.iter().map(|&i| probabilities[i as usize]).collect();

        // Temperature: softmax(log p / T), computed from the largest term down so that
        // nothing overflows; T = 0 puts all the mass on the most likely token.
        let tempered: Vec<f32> = if settings.temperature == 0.0 {
            (0..before.len())
                .map(|r| if r == 0 { 1.0 } else { 0.0 })
                .collect()
        } else {
            let top = f64::from(before[0]).ln();
            let weights: Vec<f64> = before
                .iter()
                .map(|&p| {
                    if p > 0.0 {
                        ((f64::from(p).ln() - top) / f64::from(settings.temperature)).exp()
                    } else {
                        0.0
                    }
                })
                .collect();
            let sum: f64 = weights.iter().sum();
            weights.iter().map(|w| (w / sum) as f32).collect()
        };

        // Top-k on the ranking (temperature never changes the order).
        let after_k = if settings.top_k == 0 {
            before.len()
        } else {
            settings.top_k.min(before.len())
        };
        // Top-p: the fewest most likely tokens whose tempered probability reaches p; the token
        // that crosses p is kept. Measured over the tokens top-k left, renormalised, as the
        // filters are applied one after the other.
        let mass_k: f64 = tempered[..after_k].iter().map(|&p| f64::from(p)).sum();
        let mut after_p = after_k;
        if settings.top_p < 1.0 {
            let mut running = 0.0f64;
            for (r, &p) in tempered[..after_k].iter().enumerate() {
                running += f64::from(p) / mass_k;
                if running >= f64::from(settings.top_p) - 1e-7 {
                    after_p = r + 1;
                    break;
                }
            }
        }
        // Greedy keeps one token whatever the filters say.
        let kept = if settings.temperature == 0.0 {
            1
        } else {
            after_p.max(1)
        };
        let kept_mass: f64 = tempered[..kept].iter().map(|&p| f64::from(p)).sum();
        let tokens = order
            .iter()
            .enumerate()
            .filter(|&(r, _)| r < kept || before[r] > 0.0)
            .map(|(r, &id)| TokenStage {
                id,
                before: before[r],
                tempered: tempered[r],
                removed_by: if r < kept {
                    None
                } else if settings.temperature == 0.0 {
                    Some(Cut::Greedy)
                } else if r >= after_k {
                    Some(Cut::TopK)
                } else {
                    Some(Cut::TopP)
                },
                renormalised: if r < kept {
                    (f64::from(tempered[r]) / kept_mass) as f32
                } else {
                    0.0
                },
            })
            .collect();
        Ok(SamplingStages {
            settings: *settings,
            tokens,
            kept,
            kept_mass: kept_mass as f32,
        })
    }

    /// The `n` most likely tokens (at temperature 1) with their stages.
    pub fn top(&self, n: usize) -> &[TokenStage] {
        &self.tokens[..n.min(self.tokens.len())]
    }

    /// Draws a token from the renormalised distribution with `rng`. Greedy draws nothing.
    pub fn sample(&self, rng: &mut Sampler) -> u32 {
        if self.kept == 1 {
            return self.tokens[0].id;
        }
        let u = rng.uniform();
        let mut running = 0.0f64;
        for t in &self.tokens[..self.kept] {
            running += f64::from(t.renormalised);
            if u < running {
                return t.id;
            }
        }
        self.tokens[self.kept - 1].id // rounding left a sliver past the last kept token
    }
}

/// The seeded random stream of one generation (ChaCha8: the same numbers on every platform).
#[derive(Debug, Clone)]
pub struct Sampler {
    rng: ChaCha8Rng,
}

impl Sampler {
    pub fn new(seed: u64) -> Self {
        Sampler {
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A uniform number in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}
