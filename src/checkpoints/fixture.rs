//! Random-weight models for tests: small, deterministic, one per architecture family.
//! A fixture is never what a student sees; it exists to test code paths (causal masks,
//! RMSNorm, SwiGLU, grouped-query and rotary attention) that MiniLM does not use.

use ndarray::{Array1, Array2};

use crate::error::Result;
use crate::model::config::{Activation, LmHead, ModelConfig, NormKind, NormPlace, Position};
use crate::model::linear::Linear;
use crate::model::weights::{
    AttentionWeights, CrossWeights, FfnWeights, LayerWeights, NormWeights, Weights,
};
use crate::tokenize::bytes::ByteTokenizer;
use crate::transformer::Transformer;

/// SplitMix64: a tiny, well-known generator, so fixtures are identical on every platform.
struct SplitMix(u64);

impl SplitMix {
    fn next_f32(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        ((z >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0 // uniform in [-1, 1)
    }
    fn matrix(&mut self, rows: usize, cols: usize, scale: f32) -> Array2<f32> {
        Array2::from_shape_simple_fn((rows, cols), || self.next_f32() * scale)
    }
    fn vector(&mut self, len: usize, centre: f32, scale: f32) -> Array1<f32> {
        Array1::from_shape_simple_fn(len, || centre + self.next_f32() * scale)
    }
}

/// The original paper's encoder in miniature: post-LN, sinusoidal positions, ReLU,
/// multi-head, bidirectional, no head.
pub fn encoder_config() -> ModelConfig {
    ModelConfig {
        name: "fixture-encoder".into(),
        vocab_size: 257,
        d_model: 16,
        n_layers: 2,
        n_heads: 4,
        n_kv_heads: 4,
        head_dim: 4,
        d_ff: 32,
        context: 24,
        position: Position::Sinusoidal,
        norm: NormKind::Layer,
        norm_place: NormPlace::Post,
        norm_eps: 1e-5,
        activation: Activation::Relu,
        causal: false,
        token_types: 0,
        linear_bias: true,
        lm_head: LmHead::None,
        embedding_norm: false,
        embedding_scale: 1.0,
        encoder_layers: 0,
    }
}

/// A Llama-style decoder in miniature: pre-RMSNorm, rotary, SwiGLU, grouped-query
/// attention (4 query heads sharing 2 key/value heads), causal, tied unembedding.
pub fn decoder_config() -> ModelConfig {
    ModelConfig {
        name: "fixture-decoder".into(),
        vocab_size: 257,
        d_model: 16,
        n_layers: 2,
        n_heads: 4,
        n_kv_heads: 2,
        head_dim: 4,
        d_ff: 24,
        context: 24,
        position: Position::Rotary {
            base: 10000.0,
            adjacent_pairs: true,
        },
        norm: NormKind::Rms,
        norm_place: NormPlace::Pre,
        norm_eps: 1e-6,
        activation: Activation::SwiGlu,
        causal: true,
        token_types: 0,
        linear_bias: false,
        lm_head: LmHead::Tied,
        embedding_norm: false,
        embedding_scale: 1.0,
        encoder_layers: 0,
    }
}

/// Random weights that fit `c`, scaled like a standard initialisation.
pub fn random_weights(c: &ModelConfig, seed: u64) -> Weights {
    let mut rng = SplitMix(seed);
    let d = c.d_model;
    let (q, kv) = (c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim);
    let linear = |rng: &mut SplitMix, out: usize, inp: usize| Linear {
        weight: rng.matrix(out, inp, 1.0 / (inp as f32).sqrt()).into(),
        bias: c.linear_bias.then(|| rng.vector(out, 0.0, 0.1)),
    };
    let norm = |rng: &mut SplitMix| NormWeights {
        gamma: rng.vector(d, 1.0, 0.2),
        beta: (c.norm == NormKind::Layer).then(|| rng.vector(d, 0.0, 0.1)),
    };
    let attention = |rng: &mut SplitMix| AttentionWeights {
        query: linear(rng, q, d),
        key: linear(rng, kv, d),
        value: linear(rng, kv, d),
        output: linear(rng, d, q),
    };
    let layer = |rng: &mut SplitMix, crossed: bool| LayerWeights {
        attention_norm: norm(rng),
        attention: attention(rng),
        ffn_norm: norm(rng),
        ffn: FfnWeights {
            up: linear(rng, c.d_ff, d),
            gate: (c.activation == Activation::SwiGlu).then(|| linear(rng, c.d_ff, d)),
            down: linear(rng, d, c.d_ff),
        },
        cross: crossed.then(|| CrossWeights {
            norm: norm(rng),
            attention: attention(rng),
        }),
    };
    let layers = (0..c.n_layers)
        .map(|_| layer(&mut rng, c.is_encoder_decoder()))
        .collect();
    let encoder_layers = (0..c.encoder_layers)
        .map(|_| layer(&mut rng, false))
        .collect();
    Weights {
        token_embedding: rng.matrix(c.vocab_size, d, 1.0).into(),
        segment_embedding: (c.token_types > 0).then(|| rng.matrix(c.token_types, d, 0.1)),
        position_embedding: (c.position == Position::Learned)
            .then(|| rng.matrix(c.context, d, 0.1)),
        embedding_norm: c.embedding_norm.then(|| norm(&mut rng)),
        layers,
        final_norm: (c.norm_place == NormPlace::Pre).then(|| norm(&mut rng)),
        lm_head: (c.lm_head == LmHead::Separate).then(|| rng.matrix(c.vocab_size, d, 0.1).into()),
        encoder_layers,
        encoder_final_norm: (c.is_encoder_decoder() && c.norm_place == NormPlace::Pre)
            .then(|| norm(&mut rng)),
    }
}

/// A fixture model with the byte tokenizer (vocab 257 = 256 bytes + start token).
pub fn fixture(c: ModelConfig, seed: u64) -> Result<Transformer> {
    c.validate()?; // before random_weights allocates what the config asks for
    let w = random_weights(&c, seed);
    Transformer::new(c, w, Box::new(ByteTokenizer::default()))
}
