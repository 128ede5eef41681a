//! all-MiniLM-L6-v2 (and any BERT encoder in the Hugging Face layout): `config.json`,
//! `tokenizer.json` and `model.safetensors` to a `Transformer`.

use super::config_json::{in_file, ConfigJson};
use crate::error::{short_shape, Result, VizError};
use crate::formats::safetensors::read_safetensors;
use crate::formats::TensorMap;
use crate::model::config::{
    limits, Activation, LmHead, ModelConfig, NormKind, NormPlace, Position,
};
use crate::model::linear::Linear;
use crate::model::weights::{AttentionWeights, FfnWeights, LayerWeights, NormWeights, Weights};
use crate::tokenize::wordpiece::WordPiece;
use crate::transformer::Transformer;

/// The file every error about the config names.
const FILE: &str = "config.json";

/// `ModelConfig`'s fields as a BERT `config.json` spells them, so that errors from
/// `ModelConfig::validate` name the field the user can find in the file.
const SPELLING: &[(&str, &str)] = &[
    ("vocab_size", "vocab_size"),
    ("d_model", "hidden_size"),
    ("n_layers", "num_hidden_layers"),
    ("n_heads", "num_attention_heads"),
    ("n_kv_heads", "num_attention_heads"),
    ("d_ff", "intermediate_size"),
    ("context", "max_position_embeddings"),
    ("token_types", "type_vocab_size"),
    ("norm_eps", "layer_norm_eps"),
];

/// Hugging Face's `BertConfig` default when `type_vocab_size` is absent.
const DEFAULT_TYPE_VOCAB_SIZE: usize = 2;

/// Turns a BERT `config.json` into a `ModelConfig`, checking every field it reads (type and
/// range) before anything is allocated. Errors are `ConfigField`s naming the JSON field.
pub fn config_from_json(name: &str, json: &str) -> Result<ModelConfig> {
    let b = ConfigJson::parse(FILE, json)?;
    if let Some(t) = b.optional_text("model_type")? {
        if t != "bert" {
            return Err(b.wrong("model_type", "but this loader reads BERT configs (`bert`)"));
        }
    }
    let activation = match b.text("hidden_act")? {
        "gelu" => Activation::Gelu,
        "relu" => Activation::Relu,
        _ => return Err(b.wrong("hidden_act", "is not supported (gelu or relu)")),
    };
    if let Some(p) = b.optional_text("position_embedding_type")? {
        if p != "absolute" {
            return Err(b.wrong("position_embedding_type", "is not supported (absolute)"));
        }
    }
    let d_model = b.count("hidden_size")?;
    if d_model == 0 {
        return Err(b.wrong("hidden_size", "must be at least 1"));
    }
    if d_model > limits::D_MODEL {
        return Err(b.wrong(
            "hidden_size",
            format!("must be at most {}", limits::D_MODEL),
        ));
    }
    let n_heads = b.count("num_attention_heads")?;
    if n_heads == 0 {
        return Err(b.wrong("num_attention_heads", "must be at least 1"));
    }
    if n_heads > d_model {
        return Err(b.wrong(
            "num_attention_heads",
            format!("must be at most hidden_size ({d_model}): a head needs at least one feature"),
        ));
    }
    if d_model % n_heads != 0 {
        return Err(b.wrong(
            "num_attention_heads",
            format!("but hidden_size {d_model} does not split into that many heads"),
        ));
    }
    let config = ModelConfig {
        name: name.into(),
        vocab_size: b.count("vocab_size")?,
        d_model,
        n_layers: b.count("num_hidden_layers")?,
        n_heads,
        n_kv_heads: n_heads,
        head_dim: d_model / n_heads,
        d_ff: b.count("intermediate_size")?,
        context: b.count("max_position_embeddings")?,
        position: Position::Learned,
        norm: NormKind::Layer,
        norm_place: NormPlace::Post,
        norm_eps: b.number("layer_norm_eps")?,
        activation,
        causal: false,
        token_types: b.count_or("type_vocab_size", DEFAULT_TYPE_VOCAB_SIZE)?,
        linear_bias: true,
        lm_head: LmHead::None,
        embedding_norm: true,
        embedding_scale: 1.0,
        encoder_layers: 0,
    };
    config.validate().map_err(|e| in_file(e, FILE, SPELLING))?;
    Ok(config)
}

/// Checks each number of the config that a tensor's shape fixes (layers, widths, vocabulary,
/// positions, token types) against the weights, before any layer is built, so that a wrong
/// number is reported by the field that holds it.
fn check_config_against_weights(t: &TensorMap, c: &ModelConfig) -> Result<()> {
    let layers = (0..)
        .take_while(|i| t.contains(&format!("encoder.layer.{i}.attention.self.query.weight")))
        .count();
    if layers != c.n_layers {
        return Err(VizError::config_field(
            FILE,
            "num_hidden_layers",
            c.n_layers,
            format!(
                "but the weights hold {layers} layer{}",
                if layers == 1 { "" } else { "s" }
            ),
        ));
    }
    // (tensor, axis, field, the config's value, what that axis counts)
    let fixed_by_shape = [
        (
            "embeddings.word_embeddings.weight",
            1,
            "hidden_size",
            c.d_model,
            "features per token",
        ),
        (
            "embeddings.word_embeddings.weight",
            0,
            "vocab_size",
            c.vocab_size,
            "tokens in the vocabulary",
        ),
        (
            "embeddings.position_embeddings.weight",
            0,
            "max_position_embeddings",
            c.context,
            "positions",
        ),
        (
            "embeddings.token_type_embeddings.weight",
            0,
            "type_vocab_size",
            c.token_types,
            "token types",
        ),
        (
            "encoder.layer.0.intermediate.dense.weight",
            0,
            "intermediate_size",
            c.d_ff,
            "FFN features",
        ),
    ];
    for (tensor, axis, field, value, counts) in fixed_by_shape {
        let Some(shape) = t.shape(tensor) else {
            continue;
        };
        if shape.len() == 2 && shape[axis] != value {
            let problem = format!(
                "but the weights hold {} {counts} (`{tensor}` is {})",
                shape[axis],
                short_shape(shape)
            );
            return Err(VizError::config_field(FILE, field, value, problem));
        }
    }
    Ok(())
}

fn linear(t: &mut TensorMap, name: &str, out: usize, inp: usize) -> Result<Linear> {
    Ok(Linear {
        weight: t.matrix(&format!("{name}.weight"), out, inp)?.into(),
        bias: Some(t.vector(&format!("{name}.bias"), out)?),
    })
}

fn layer_norm(t: &mut TensorMap, name: &str, d: usize) -> Result<NormWeights> {
    Ok(NormWeights {
        gamma: t.vector(&format!("{name}.weight"), d)?,
        beta: Some(t.vector(&format!("{name}.bias"), d)?),
    })
}

/// Maps BERT's tensor names onto `Weights`, checking every shape against the config.
pub fn weights_from_tensors(mut t: TensorMap, c: &ModelConfig) -> Result<Weights> {
    c.validate().map_err(|e| in_file(e, FILE, SPELLING))?;
    check_config_against_weights(&t, c)?;
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
            cross: None,
            ffn_norm: layer_norm(&mut t, &format!("{p}.output.LayerNorm"), d)?,
        });
    }
    let segment_embedding = if c.token_types > 0 {
        Some(t.matrix("embeddings.token_type_embeddings.weight", c.token_types, d)?)
    } else {
        None
    };
    let weights = Weights {
        token_embedding: t
            .matrix("embeddings.word_embeddings.weight", c.vocab_size, d)?
            .into(),
        segment_embedding,
        position_embedding: Some(t.matrix(
            "embeddings.position_embeddings.weight",
            c.context,
            d,
        )?),
        embedding_norm: Some(layer_norm(&mut t, "embeddings.LayerNorm", d)?),
        layers,
        final_norm: None,
        lm_head: None,
        encoder_layers: vec![],
        encoder_final_norm: None,
    };
    weights.check(c)?;
    Ok(weights)
}

/// Builds the model from the three files' contents (what the browser fetches).
pub fn from_bytes(
    name: &str,
    config_json: &str,
    tokenizer_json: &str,
    safetensors: &[u8],
) -> Result<Transformer> {
    let config = config_from_json(name, config_json)?;
    let tokenizer = WordPiece::from_tokenizer_json(tokenizer_json)?;
    let weights = weights_from_tensors(read_safetensors(safetensors)?, &config)?;
    Transformer::new(config, weights, Box::new(tokenizer))
}
