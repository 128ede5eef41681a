//! Each step's stable name (`layer0.attention`) and the meaning of its tensor's axes: what
//! the trace's readers look steps up by and label them with. The words a student reads about
//! a step (title, equation, explanation) are not the trace's business: `explain` writes them.

use super::Op;
use crate::model::config::ModelConfig;

/// The step's dotted name: `layer{l}.` before its key inside a layer, the key alone outside.
pub fn step_name(op: Op, layer: Option<usize>) -> String {
    match layer {
        Some(l) => format!("layer{l}.{}", key(op)),
        None => key(op).to_string(),
    }
}

/// The last part of a step's name.
fn key(op: Op) -> &'static str {
    match op {
        Op::Tokenize => "tokens",
        Op::TokenEmbedding => "embed.tokens",
        Op::SegmentEmbedding => "embed.segment",
        Op::PositionEncoding => "embed.position",
        Op::AddPosition => "embed.sum",
        Op::EmbeddingNorm => "embed.norm",
        Op::AttentionNorm => "attn_norm",
        Op::Query => "q",
        Op::Key => "k",
        Op::Value => "v",
        Op::RotaryQuery => "q_rot",
        Op::RotaryKey => "k_rot",
        Op::Scores => "scores",
        Op::Mask => "masked",
        Op::Softmax => "attention",
        Op::WeightedSum => "heads",
        Op::Concat => "concat",
        Op::OutputProjection => "attn_out",
        Op::AttentionResidual => "resid_attn",
        Op::EncoderOutput => "encoder_output",
        Op::CrossNorm => "cross_norm",
        Op::CrossQuery => "cross_q",
        Op::CrossKey => "cross_k",
        Op::CrossValue => "cross_v",
        Op::CrossScores => "cross_scores",
        Op::CrossSoftmax => "cross_attention",
        Op::CrossWeightedSum => "cross_heads",
        Op::CrossConcat => "cross_concat",
        Op::CrossOutput => "cross_out",
        Op::CrossResidual => "resid_cross",
        Op::FfnNorm => "ffn_norm",
        Op::FfnUp => "ffn_up",
        Op::FfnGate => "ffn_gate",
        Op::FfnActivation => "ffn_act",
        Op::FfnDown => "ffn_down",
        Op::FfnResidual => "resid_ffn",
        Op::FinalNorm => "final_norm",
        Op::Unembed => "logits",
        Op::NextTokenProbabilities => "next_token",
    }
}

/// What each axis of the step's tensor stands for, e.g. `["head", "query token", "key token"]`.
pub fn step_axes(op: Op, config: &ModelConfig) -> Vec<String> {
    // "kv head" only means something with grouped-query attention (fewer key/value heads
    // than query heads); otherwise keys and values have one head per query head.
    let kv_head = if config.n_kv_heads < config.n_heads {
        "kv head"
    } else {
        "head"
    };
    let axes: &[&str] = match op {
        Op::Tokenize => &["token"],
        Op::TokenEmbedding
        | Op::SegmentEmbedding
        | Op::PositionEncoding
        | Op::AddPosition
        | Op::EmbeddingNorm
        | Op::AttentionNorm
        | Op::OutputProjection
        | Op::AttentionResidual
        | Op::CrossNorm
        | Op::CrossOutput
        | Op::CrossResidual
        | Op::FfnNorm
        | Op::FfnDown
        | Op::FfnResidual
        | Op::FinalNorm => &["token", "feature"],
        Op::Query | Op::RotaryQuery | Op::RotaryKey | Op::WeightedSum => &["head", "token", "dim"],
        Op::Key | Op::Value => &[kv_head, "token", "dim"],
        Op::Scores | Op::Mask | Op::Softmax => &["head", "query token", "key token"],
        Op::Concat => &["token", "head x dim"],
        Op::EncoderOutput => &["source token", "feature"],
        Op::CrossQuery | Op::CrossWeightedSum => &["head", "target token", "dim"],
        Op::CrossKey | Op::CrossValue => &[kv_head, "source token", "dim"],
        Op::CrossScores | Op::CrossSoftmax => &["head", "target token", "source token"],
        Op::CrossConcat => &["target token", "head x dim"],
        Op::FfnUp | Op::FfnGate | Op::FfnActivation => &["token", "hidden"],
        Op::Unembed => &["token", "vocabulary"],
        Op::NextTokenProbabilities => &["vocabulary"],
    };
    axes.iter().map(|s| s.to_string()).collect()
}
