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
    /// The token embedding is multiplied by this before the positions are added: 1 for most
    /// models; sqrt(d_model) in the original paper (and the lecture's models), whose tied
    /// embedding stays small for the unembedding while the token's part of the stream
    /// matches the sinusoidal table's size.
    #[serde(default = "unit_scale")]
    pub embedding_scale: f32,
    /// Layers of an encoder stack in front of the decoder (0: no encoder). With an encoder the
    /// model is an encoder-decoder, as in the original paper: the encoder reads the source with
    /// bidirectional self-attention, and every decoder layer (`n_layers` of them, causal) adds a
    /// cross-attention sublayer whose keys and values come from the encoder's output. Both
    /// stacks share the embedding, the positional encoding and every other choice here.
    #[serde(default)]
    pub encoder_layers: usize,
}

fn unit_scale() -> f32 {
    1.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LmHead {
    None,
    Tied,
    Separate,
}

/// The largest value each count of a config may take. Each is far above any released
/// checkpoint (the largest have ~128 layers, 128 heads, 256k-token vocabularies, 16k-wide
/// layers and 53k-wide FFNs) and small enough that a product of two never overflows, even in
/// WebAssembly's 32-bit `usize`; loaders check them before allocating anything.
pub mod limits {
    pub const LAYERS: usize = 4096;
    pub const HEADS: usize = 4096;
    pub const HEAD_DIM: usize = 4096;
    pub const D_MODEL: usize = 1 << 16;
    pub const D_FF: usize = 1 << 18;
    pub const VOCAB: usize = 1 << 22;
    pub const CONTEXT: usize = 1 << 20;
    pub const TOKEN_TYPES: usize = 1 << 16;
    /// The most values one (context, width) activation may hold (4 GiB of f32): the forward
    /// pass allocates buffers of that size.
    pub const ACTIVATION_VALUES: usize = 1 << 30;
    /// Norm epsilon: real models use 1e-12 to 1e-5; anything from 1 up drowns the variance.
    pub const MAX_NORM_EPS: f32 = 1.0;
    /// Rotary base: real models use 1e4 to 1e7; at 1 or below every angle is the same or
    /// grows without bound.
    pub const MAX_ROTARY_BASE: f32 = 1e12;
    /// Embedding scale: sqrt(d_model) is at most 256 for any width allowed here.
    pub const MAX_EMBEDDING_SCALE: f32 = 1e4;
}

/// The name `validate` gives the config in its errors; loaders replace it with their file's.
pub const CONFIG_NAME: &str = "ModelConfig";

/// `value` of `field` must lie in `min..=max`.
fn check_count(field: &str, value: usize, min: usize, max: usize) -> Result<()> {
    if value < min {
        return Err(VizError::config_field(
            CONFIG_NAME,
            field,
            value,
            format!("must be at least {min}"),
        ));
    }
    if value > max {
        return Err(VizError::config_field(
            CONFIG_NAME,
            field,
            value,
            format!("must be at most {max}"),
        ));
    }
    Ok(())
}

impl ModelConfig {
    /// Checks every number against sane limits and that the numbers fit together; every loader
    /// calls this before allocating anything the config sizes. Errors name the field
    /// (`ConfigField`, in `ModelConfig`'s spelling).
    pub fn validate(&self) -> Result<()> {
        check_count("n_layers", self.n_layers, 1, limits::LAYERS)?;
        check_count("d_model", self.d_model, 1, limits::D_MODEL)?;
        check_count("n_heads", self.n_heads, 1, limits::HEADS)?;
        check_count("n_kv_heads", self.n_kv_heads, 1, self.n_heads)?;
        check_count("head_dim", self.head_dim, 1, limits::HEAD_DIM)?;
        check_count("d_ff", self.d_ff, 1, limits::D_FF)?;
        check_count("vocab_size", self.vocab_size, 1, limits::VOCAB)?;
        check_count("context", self.context, 2, limits::CONTEXT)?;
        check_count("token_types", self.token_types, 0, limits::TOKEN_TYPES)?;
        check_count("encoder_layers", self.encoder_layers, 0, limits::LAYERS)?;
        if self.encoder_layers > 0 && !(self.causal && self.has_lm_head()) {
            return Err(VizError::config_field(
                CONFIG_NAME,
                "encoder_layers",
                self.encoder_layers,
                "needs a causal decoder with a language-model head after the encoder",
            ));
        }
        if self.n_heads % self.n_kv_heads != 0 {
            let problem = format!("but {} query heads cannot share them evenly", self.n_heads);
            return Err(VizError::config_field(
                CONFIG_NAME,
                "n_kv_heads",
                self.n_kv_heads,
                problem,
            ));
        }
        // Both at most 4096, so the product cannot overflow; it is the attention's width.
        let attention_width = self.n_heads * self.head_dim;
        if attention_width > limits::D_MODEL {
            let problem = format!(
                "but {} heads of that width make {attention_width} features, more than {}",
                self.n_heads,
                limits::D_MODEL
            );
            return Err(VizError::config_field(
                CONFIG_NAME,
                "head_dim",
                self.head_dim,
                problem,
            ));
        }
        let widest = self.d_model.max(self.d_ff).max(attention_width);
        if self
            .context
            .checked_mul(widest)
            .is_none_or(|v| v > limits::ACTIVATION_VALUES)
        {
            let problem = format!(
                "but a full context of vectors {widest} wide would exceed {} values",
                limits::ACTIVATION_VALUES
            );
            return Err(VizError::config_field(
                CONFIG_NAME,
                "context",
                self.context,
                problem,
            ));
        }
        if let Position::Rotary { base, .. } = self.position {
            if self.head_dim % 2 != 0 {
                return Err(VizError::config_field(
                    CONFIG_NAME,
                    "head_dim",
                    self.head_dim,
                    "must be even for rotary positions",
                ));
            }
            if !(base > 1.0 && base <= limits::MAX_ROTARY_BASE) {
                let problem = format!(
                    "must be a number above 1 and at most {:e}",
                    limits::MAX_ROTARY_BASE
                );
                return Err(VizError::config_field(
                    CONFIG_NAME,
                    "position.Rotary.base",
                    base,
                    problem,
                ));
            }
        }
        if matches!(self.position, Position::Sinusoidal) && self.d_model % 2 != 0 {
            return Err(VizError::config_field(
                CONFIG_NAME,
                "d_model",
                self.d_model,
                "must be even for the sinusoidal table",
            ));
        }
        if !(self.embedding_scale > 0.0 && self.embedding_scale <= limits::MAX_EMBEDDING_SCALE) {
            let problem = format!(
                "must be a positive number of at most {}",
                limits::MAX_EMBEDDING_SCALE
            );
            return Err(VizError::config_field(
                CONFIG_NAME,
                "embedding_scale",
                self.embedding_scale,
                problem,
            ));
        }
        if !(self.norm_eps > 0.0 && self.norm_eps < limits::MAX_NORM_EPS) {
            let problem = format!(
                "must be a small positive number (below {})",
                limits::MAX_NORM_EPS
            );
            return Err(VizError::config_field(
                CONFIG_NAME,
                "norm_eps",
                self.norm_eps,
                problem,
            ));
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

    /// Whether the model has an encoder stack whose output the decoder cross-attends to.
    pub fn is_encoder_decoder(&self) -> bool {
        self.encoder_layers > 0
    }

    /// The encoder stack of an encoder-decoder as a model of its own: the same choices,
    /// `encoder_layers` bidirectional layers and no head. Its trace is the source's trace.
    pub fn encoder_config(&self) -> ModelConfig {
        ModelConfig {
            name: format!("{} encoder", self.name),
            n_layers: self.encoder_layers,
            causal: false,
            lm_head: LmHead::None,
            encoder_layers: 0,
            ..self.clone()
        }
    }
}
