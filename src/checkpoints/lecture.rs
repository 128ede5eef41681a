//! The lecture's own models, trained by this project (`transformer-viz train`): the notes'
//! architecture exactly (sinusoidal positions added to the embeddings, LayerNorm after each
//! residual addition or, in the twin, before each sublayer, ReLU FFN, tied embeddings, causal
//! self-attention), in the engine's own format (`generic`) with a learned byte-level BPE
//! vocabulary (`tokenize::vocab_file`). Committed under `trained/NAME/` with the command,
//! log and loss curve that made them.

use super::generic;
use crate::error::Result;
use crate::model::config::{Activation, LmHead, ModelConfig, NormKind, NormPlace, Position};
use crate::tokenize::vocab_file::VocabFile;
use crate::Transformer;

/// Where the committed weights live, under the repository's root.
pub const TRAINED_DIR: &str = "trained";

/// The decoder with LayerNorm after each residual addition (the original paper).
pub const POST_LN: &str = "lecture-post-ln";
/// Its twin with LayerNorm before each sublayer and one final norm (GPT-2).
pub const PRE_LN: &str = "lecture-pre-ln";

pub const DECODERS: &[&str] = &[POST_LN, PRE_LN];

/// The encoder-decoder that writes its source backwards (`train::reversal`).
pub const REVERSE: &str = "lecture-reverse";

/// Every lecture model, as `trained/` holds them.
pub const ALL: &[&str] = &[POST_LN, PRE_LN, REVERSE];

/// The reversal encoder-decoder: 2 encoder and 2 decoder layers of width 64, pre-LN (post-LN
/// runs of this task were unstable at every rate tried; see the README), over a vocabulary of a
/// few characters; its context holds a 20-character source
/// with the start token, and an output of that length with the start and end tokens.
pub fn reverse_config(vocab_size: usize) -> ModelConfig {
    ModelConfig {
        d_model: 64,
        n_layers: 2,
        head_dim: 16,
        d_ff: 256,
        context: 24,
        embedding_scale: 8.0, // sqrt(64)
        encoder_layers: 2,
        ..decoder_config(REVERSE, vocab_size, NormPlace::Pre)
    }
}

/// Shapes of the lecture decoders: small enough to train on one core in the budget
/// (`scripts/train-lecture.sh`) and to load at once in a page, deep enough (3 layers) for
/// previous-token heads to feed induction heads; a context of 256 tokens holds a 40-token run
/// twice, or a paragraph.
pub fn decoder_config(name: &str, vocab_size: usize, place: NormPlace) -> ModelConfig {
    ModelConfig {
        name: name.to_string(),
        vocab_size,
        d_model: 128,
        n_layers: 3,
        n_heads: 4,
        n_kv_heads: 4,
        head_dim: 32,
        d_ff: 512,
        context: 256,
        position: Position::Sinusoidal,
        norm: NormKind::Layer,
        norm_place: place,
        norm_eps: 1e-5,
        activation: Activation::Relu,
        causal: true,
        token_types: 0,
        linear_bias: true,
        lm_head: LmHead::Tied,
        embedding_norm: false,
        embedding_scale: (128f32).sqrt(),
        encoder_layers: 0,
    }
}

/// The preset config of a lecture model by name.
pub fn preset(name: &str, vocab_size: usize) -> Option<ModelConfig> {
    match name {
        POST_LN => Some(decoder_config(name, vocab_size, NormPlace::Post)),
        PRE_LN => Some(decoder_config(name, vocab_size, NormPlace::Pre)),
        _ => None,
    }
}

/// A lecture model from its three files' contents.
pub fn from_bytes(
    name: &str,
    config_json: &str,
    tokenizer_json: &str,
    weights: &[u8],
) -> Result<Transformer> {
    let mut config = generic::config_from_json(config_json)?;
    config.name = name.to_string();
    let tokenizer = VocabFile::parse(tokenizer_json)?.tokenizer()?;
    let weights = generic::from_safetensors(weights, &config)?;
    Transformer::new(config, weights, Box::new(tokenizer))
}
