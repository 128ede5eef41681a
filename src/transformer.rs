//! `Transformer`: a config, its weights and its tokenizer, checked to fit together; the
//! entry point from a sentence to a trace.

use crate::error::{Result, VizError};
use crate::model::{forward, ForwardOutput, ModelConfig, Weights};
use crate::tokenize::{Encoding, Tokenizer};
use crate::trace::{NoRecorder, Trace, TraceRecorder};

pub struct Transformer {
    pub config: ModelConfig,
    pub weights: Weights,
    pub tokenizer: Box<dyn Tokenizer>,
}

impl std::fmt::Debug for Transformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformer").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Transformer {
    pub fn new(config: ModelConfig, weights: Weights, tokenizer: Box<dyn Tokenizer>) -> Result<Self> {
        weights.check(&config)?;
        if tokenizer.vocab_size() > config.vocab_size {
            return Err(VizError::BadConfig(format!(
                "the tokenizer has {} tokens but the model's embedding only {}",
                tokenizer.vocab_size(),
                config.vocab_size
            )));
        }
        Ok(Self { config, weights, tokenizer })
    }

    /// Tokens of the sentence, cut to the model's context.
    pub fn encode(&self, text: &str) -> Result<Encoding> {
        self.tokenizer.encode(text, self.config.context)
    }

    /// The forward pass with every intermediate recorded.
    pub fn trace(&self, text: &str) -> Result<Trace> {
        let encoding = self.encode(text)?;
        Ok(self.trace_ids(encoding, text))
    }

    /// The plain forward pass, keeping only its output.
    pub fn run(&self, text: &str) -> Result<ForwardOutput> {
        let encoding = self.encode(text)?;
        Ok(self.run_ids(&encoding.ids()))
    }

    /// The plain forward pass on ids that came from `encode`.
    pub fn run_ids(&self, ids: &[u32]) -> ForwardOutput {
        forward(ids, &self.weights, &self.config, &mut NoRecorder)
    }

    /// The traced forward pass on ids that came from `encode`.
    pub fn trace_ids(&self, encoding: Encoding, text: &str) -> Trace {
        let mut rec = TraceRecorder::new(&self.config);
        forward(&encoding.ids(), &self.weights, &self.config, &mut rec);
        Trace {
            model: self.config.name.clone(),
            config: self.config.clone(),
            text: text.to_string(),
            tokens: encoding.tokens,
            truncated: encoding.truncated,
            steps: rec.steps,
            norms: rec.norms,
        }
    }
}
