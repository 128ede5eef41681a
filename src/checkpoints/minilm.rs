//! all-MiniLM-L6-v2 (and any BERT encoder in the Hugging Face layout): `config.json`,
//! `tokenizer.json` and `model.safetensors` to a `Transformer`.

use serde::Deserialize;

use crate::error::{Result, VizError};
use crate::formats::safetensors::read_safetensors;
use crate::formats::TensorMap;
use crate::model::config::{Activation, LmHead, ModelConfig, NormKind, NormPlace, Position};
use crate::model::linear::Linear;
use crate::model::weights::{AttentionWeights, FfnWeights, LayerWeights, NormWeights, Weights};
use crate::tokenize::wordpiece::WordPiece;
use crate::transformer::Transformer;

/// The fields of a BERT `config.json` that shape the forward pass.
#[derive(Debug, Deserialize)]
struct BertConfig {
    model_type: Option<String>,
    vocab_size: usize,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default)]
    type_vocab_size: usize,
    layer_norm_eps: f32,
    hidden_act: String,
    #[serde(default)]
    position_embedding_type: Option<String>,
}

/// Turns a BERT `config.json` into a `ModelConfig`.
pub fn config_from_json(name: &str, json: &str) -> Result<ModelConfig> {
    let b: BertConfig = serde_json::from_str(json).map_err(|e| VizError::BadConfig(format!("config.json: {e}")))?;
    if let Some(t) = &b.model_type {
        if t != "bert" {
            return Err(VizError::BadConfig(format!("expected a BERT config, found model_type `{t}`")));
        }
    }
    let activation = match b.hidden_act.as_str() {
        "gelu" => Activation::Gelu,
        "relu" => Activation::Relu,
        other => return Err(VizError::BadConfig(format!("activation `{other}` is not supported"))),
    };
    if let Some(p) = b.position_embedding_type.as_deref() {
        if p != "absolute" {
            return Err(VizError::BadConfig(format!("position embedding type `{p}` is not supported")));
        }
    }
    if b.num_attention_heads == 0 || b.hidden_size % b.num_attention_heads != 0 {
        return Err(VizError::BadConfig(format!("{} features do not split into {} heads", b.hidden_size, b.num_attention_heads)));
    }
    let config = ModelConfig {
        name: name.into(),
        vocab_size: b.vocab_size,
        d_model: b.hidden_size,
        n_layers: b.num_hidden_layers,
        n_heads: b.num_attention_heads,
        n_kv_heads: b.num_attention_heads,
        head_dim: b.hidden_size / b.num_attention_heads,
        d_ff: b.intermediate_size,
        context: b.max_position_embeddings,
        position: Position::Learned,
        norm: NormKind::Layer,
        norm_place: NormPlace::Post,
        norm_eps: b.layer_norm_eps,
        activation,
        causal: false,
        token_types: b.type_vocab_size,
        linear_bias: true,
        lm_head: LmHead::None,
        embedding_norm: true,
    };
    config.validate()?;
    Ok(config)
}

fn linear(t: &mut TensorMap, name: &str, out: usize, inp: usize) -> Result<Linear> {
    Ok(Linear { weight: t.matrix(&format!("{name}.weight"), out, inp)?, bias: Some(t.vector(&format!("{name}.bias"), out)?) })
}

fn layer_norm(t: &mut TensorMap, name: &str, d: usize) -> Result<NormWeights> {
    Ok(NormWeights { gamma: t.vector(&format!("{name}.weight"), d)?, beta: Some(t.vector(&format!("{name}.bias"), d)?) })
}

/// Maps BERT's tensor names onto `Weights`, checking every shape against the config.
pub fn weights_from_tensors(mut t: TensorMap, c: &ModelConfig) -> Result<Weights> {
    let d = c.d_model;
    let mut layers = Vec::with_capacity(c.n_layers);
    for i in 0..c.n_layers {
        let p = format!("encoder.layer.{i}");
        layers.push(LayerWeights {
            attention: AttentionWeights {
                query: linear(&mut t, &format!("{p}.attention.self.query"), d, d)?,
                key: linear(&mut t, &format!("{p}.attention.self.key"), d, d)?,
                value: linear(&mut t, &format!("{p}.attention.self.value"), d, d)?,
                output: linear(&mut t, &format!("{p}.attention.output.dense"), d, d)?,
            },
            attention_norm: layer_norm(&mut t, &format!("{p}.attention.output.LayerNorm"), d)?,
            ffn: FfnWeights {
                up: linear(&mut t, &format!("{p}.intermediate.dense"), c.d_ff, d)?,
                gate: None,
                down: linear(&mut t, &format!("{p}.output.dense"), d, c.d_ff)?,
            },
            ffn_norm: layer_norm(&mut t, &format!("{p}.output.LayerNorm"), d)?,
        });
    }
    if t.contains(&format!("encoder.layer.{}.attention.self.query.weight", c.n_layers)) {
        return Err(VizError::BadConfig(format!("the weights have more than the {} layers the config names", c.n_layers)));
    }
    let segment_embedding = if c.token_types > 0 {
        Some(t.matrix("embeddings.token_type_embeddings.weight", c.token_types, d)?)
    } else {
        None
    };
    let weights = Weights {
        token_embedding: t.matrix("embeddings.word_embeddings.weight", c.vocab_size, d)?,
        segment_embedding,
        position_embedding: Some(t.matrix("embeddings.position_embeddings.weight", c.context, d)?),
        embedding_norm: Some(layer_norm(&mut t, "embeddings.LayerNorm", d)?),
        layers,
        final_norm: None,
        lm_head: None,
    };
    weights.check(c)?;
    Ok(weights)
}

/// Builds the model from the three files' contents (what the browser fetches).
pub fn from_bytes(name: &str, config_json: &str, tokenizer_json: &str, safetensors: &[u8]) -> Result<Transformer> {
    let config = config_from_json(name, config_json)?;
    let tokenizer = WordPiece::from_tokenizer_json(tokenizer_json)?;
    let weights = weights_from_tensors(read_safetensors(safetensors)?, &config)?;
    Transformer::new(config, weights, Box::new(tokenizer))
}
