//! `ModelConfig`: the choices that make one transformer differ from another, mirrored from
//! the checkpoint's own config. The forward pass reads only this and the weights.

use serde::{Deserialize, Serialize};

use crate::error::{Result, VizError};

/// How the model learns where a token sits in the sentence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Position {
    /// The fixed sine/cosine table of "Attention Is All You Need", added to the embeddings.
    Sinusoidal,
    /// A learned (context, d_model) table, added to the embeddings (BERT, GPT-2).
    Learned,
    /// Rotary: Q and K are rotated pairwise by an angle that grows with position (Llama).
    /// `adjacent_pairs` rotates dims (2i, 2i+1) as GGUF checkpoints store them; otherwise
    /// the two halves (i, i + d/2) as Hugging Face stores them.
    Rotary { base: f32, adjacent_pairs: bool },
    /// No position information at all: attention sees a bag of tokens.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NormKind {
    /// Subtract the mean, divide by the standard deviation, then scale by gamma and shift by beta.
    Layer,
    /// Divide by the root mean square, then scale by gamma (no centring, no beta).
    Rms,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NormPlace {
    /// The original paper and BERT: x = Norm(x + Sublayer(x)).
    Post,
    /// GPT-2 and Llama: x = x + Sublayer(Norm(x)), plus one final norm.
    Pre,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Activation {
    /// max(0, x), as in the original paper.
    Relu,
    /// x * Phi(x) with the exact error function (BERT).
    Gelu,
    /// SiLU(x W_gate) * (x W_up), then W_down (Llama).
    SwiGlu,
}

/// The full description of a model: shapes and every architectural choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// A short name the CLI and the page use (`minilm-l6`).
    pub name: String,
    pub vocab_size: usize,
    pub d_model: usize,
    pub n_layers: usize,
    /// Query heads.
    pub n_heads: usize,
    /// Key/value heads; fewer than `n_heads` means grouped-query attention.
    pub n_kv_heads: usize,
    pub head_dim: usize,
    pub d_ff: usize,
    /// The longest sequence the model accepts, special tokens included.
    pub context: usize,
    pub position: Position,
    pub norm: NormKind,
    pub norm_place: NormPlace,
    pub norm_eps: f32,
    pub activation: Activation,
    /// Causal (a decoder: each token sees only itself and earlier ones) or bidirectional (an encoder).
    pub causal: bool,
    /// BERT-style segment embeddings; the engine always uses segment 0.
    pub token_types: usize,
    /// Whether the Q/K/V, output and FFN projections carry biases.
    pub linear_bias: bool,
    /// Language-model head: none (an encoder such as MiniLM), tied to the embedding, or separate.
    pub lm_head: LmHead,
    /// A LayerNorm right after embedding (BERT does this, before any layer).
    pub embedding_norm: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LmHead {
    None,
    Tied,
    Separate,
}

impl ModelConfig {
    /// Checks that the numbers fit together; every loader calls this before touching weights.
    pub fn validate(&self) -> Result<()> {
        let fail = |m: String| Err(VizError::BadConfig(m));
        if self.d_model == 0 || self.n_layers == 0 || self.n_heads == 0 || self.vocab_size == 0 {
            return fail("d_model, n_layers, n_heads and vocab_size must all be positive".into());
        }
        if self.n_kv_heads == 0 || self.n_heads % self.n_kv_heads != 0 {
            return fail(format!(
                "{} query heads cannot share {} key/value heads evenly",
                self.n_heads, self.n_kv_heads
            ));
        }
        if self.head_dim == 0 {
            return fail("head_dim must be positive".into());
        }
        if matches!(self.position, Position::Rotary { .. }) && self.head_dim % 2 != 0 {
            return fail("rotary position encoding needs an even head dimension".into());
        }
        if matches!(self.position, Position::Sinusoidal) && self.d_model % 2 != 0 {
            return fail("the sinusoidal table needs an even d_model".into());
        }
        if self.context < 2 {
            return fail("the context must hold at least two tokens".into());
        }
        if !(self.norm_eps > 0.0 && self.norm_eps.is_finite()) {
            return fail(format!("norm epsilon {} must be a small positive number", self.norm_eps));
        }
        Ok(())
    }

    /// Query heads per key/value head (1 for ordinary multi-head attention).
    pub fn group_size(&self) -> usize {
        self.n_heads / self.n_kv_heads
    }

    pub fn has_lm_head(&self) -> bool {
        self.lm_head != LmHead::None
    }
}
