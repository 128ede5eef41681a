//! This project's own checkpoint format: a `ModelConfig` as JSON beside a safetensors file
//! whose tensor names follow `Weights` (`layers.0.attention.query.weight`, ...). Any config
//! the engine supports can be saved and loaded this way; the numpy reference reads it too.

use std::collections::BTreeMap;

use safetensors::tensor::{Dtype, TensorView};

use super::config_json::{in_file, ConfigJson};
use crate::error::{short_shape, Result, VizError};
use crate::formats::safetensors::read_safetensors;
use crate::formats::TensorMap;
use crate::model::config::{ModelConfig, NormKind, CONFIG_NAME};
use crate::model::linear::Linear;
use crate::model::weights::{
    AttentionWeights, CrossWeights, FfnWeights, LayerWeights, NormWeights, Weights,
};

/// Where `named_tensors` puts a tensor: its name, shape and values.
type Put<'a> = dyn FnMut(String, &[usize], Vec<f32>) + 'a;

/// Every tensor of `Weights` under its generic name, as (shape, row-major values).
pub fn named_tensors(w: &Weights) -> BTreeMap<String, (Vec<usize>, Vec<f32>)> {
    let mut out = BTreeMap::new();
    let mut put = |name: String, shape: &[usize], data: Vec<f32>| {
        out.insert(name, (shape.to_vec(), data));
    };
    fn flat<D: ndarray::Dimension>(a: &ndarray::Array<f32, D>) -> Vec<f32> {
        a.iter().copied().collect()
    }
    let norm = |put: &mut Put, name: &str, n: &NormWeights| {
        put(format!("{name}.gamma"), n.gamma.shape(), flat(&n.gamma));
        if let Some(b) = &n.beta {
            put(format!("{name}.beta"), b.shape(), flat(b));
        }
    };
    let linear = |put: &mut Put, name: &str, l: &Linear| {
        put(
            format!("{name}.weight"),
            &l.weight.shape(),
            flat(&l.weight.to_dense()),
        );
        if let Some(b) = &l.bias {
            put(format!("{name}.bias"), b.shape(), flat(b));
        }
    };
    put(
        "token_embedding".into(),
        &w.token_embedding.shape(),
        flat(&w.token_embedding.to_dense()),
    );
    if let Some(s) = &w.segment_embedding {
        put("segment_embedding".into(), s.shape(), flat(s));
    }
    if let Some(p) = &w.position_embedding {
        put("position_embedding".into(), p.shape(), flat(p));
    }
    if let Some(n) = &w.embedding_norm {
        norm(&mut put, "embedding_norm", n);
    }
    let stacks = w
        .layers
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("layers.{i}"), l));
    let encoder = w
        .encoder_layers
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("encoder.layers.{i}"), l));
    for (p, l) in stacks.chain(encoder) {
        norm(&mut put, &format!("{p}.attention_norm"), &l.attention_norm);
        linear(
            &mut put,
            &format!("{p}.attention.query"),
            &l.attention.query,
        );
        linear(&mut put, &format!("{p}.attention.key"), &l.attention.key);
        linear(
            &mut put,
            &format!("{p}.attention.value"),
            &l.attention.value,
        );
        linear(
            &mut put,
            &format!("{p}.attention.output"),
            &l.attention.output,
        );
        if let Some(x) = &l.cross {
            norm(&mut put, &format!("{p}.cross_norm"), &x.norm);
            linear(
                &mut put,
                &format!("{p}.cross_attention.query"),
                &x.attention.query,
            );
            linear(
                &mut put,
                &format!("{p}.cross_attention.key"),
                &x.attention.key,
            );
            linear(
                &mut put,
                &format!("{p}.cross_attention.value"),
                &x.attention.value,
            );
            linear(
                &mut put,
                &format!("{p}.cross_attention.output"),
                &x.attention.output,
            );
        }
        norm(&mut put, &format!("{p}.ffn_norm"), &l.ffn_norm);
        linear(&mut put, &format!("{p}.ffn.up"), &l.ffn.up);
        if let Some(g) = &l.ffn.gate {
            linear(&mut put, &format!("{p}.ffn.gate"), g);
        }
        linear(&mut put, &format!("{p}.ffn.down"), &l.ffn.down);
    }
    if let Some(n) = &w.final_norm {
        norm(&mut put, "final_norm", n);
    }
    if let Some(n) = &w.encoder_final_norm {
        norm(&mut put, "encoder.final_norm", n);
    }
    if let Some(h) = &w.lm_head {
        put("lm_head".into(), &h.shape(), flat(&h.to_dense()));
    }
    out
}

/// Serialises weights as f32 safetensors under the generic names.
pub fn to_safetensors(w: &Weights) -> Result<Vec<u8>> {
    let tensors = named_tensors(w);
    let bytes: Vec<(String, Vec<usize>, Vec<u8>)> = tensors
        .into_iter()
        .map(|(name, (shape, data))| {
            (
                name,
                shape,
                data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            )
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = bytes
        .iter()
        .map(|(name, shape, data)| {
            TensorView::new(Dtype::F32, shape.clone(), data)
                .map(|v| (name.clone(), v))
                .map_err(|e| VizError::CorruptWeights(e.to_string()))
        })
        .collect::<Result<_>>()?;
    safetensors::serialize(views, None).map_err(|e| VizError::CorruptWeights(e.to_string()))
}

fn norm(t: &mut TensorMap, name: &str, c: &ModelConfig) -> Result<NormWeights> {
    let gamma = t.vector(&format!("{name}.gamma"), c.d_model)?;
    let beta = match c.norm {
        NormKind::Layer => Some(t.vector(&format!("{name}.beta"), c.d_model)?),
        NormKind::Rms => None,
    };
    Ok(NormWeights { gamma, beta })
}

fn linear(
    t: &mut TensorMap,
    name: &str,
    out: usize,
    inp: usize,
    c: &ModelConfig,
) -> Result<Linear> {
    let weight = t.matrix(&format!("{name}.weight"), out, inp)?.into();
    let bias = if c.linear_bias {
        Some(t.vector(&format!("{name}.bias"), out)?)
    } else {
        None
    };
    Ok(Linear { weight, bias })
}

/// The file every error about a saved config names.
const FILE: &str = "config.json";

/// Reads a `ModelConfig` saved as JSON (the `config.json` beside `to_safetensors`' file),
/// field by field, so that a missing or mistyped field is a `ConfigField` naming it; then
/// checks every number's range.
pub fn config_from_json(json: &str) -> Result<ModelConfig> {
    let j = ConfigJson::parse(FILE, json)?;
    let config = ModelConfig {
        name: j.text("name")?.to_string(),
        vocab_size: j.count("vocab_size")?,
        d_model: j.count("d_model")?,
        n_layers: j.count("n_layers")?,
        n_heads: j.count("n_heads")?,
        n_kv_heads: j.count("n_kv_heads")?,
        head_dim: j.count("head_dim")?,
        d_ff: j.count("d_ff")?,
        context: j.count("context")?,
        position: j.typed("position")?,
        norm: j.typed("norm")?,
        norm_place: j.typed("norm_place")?,
        norm_eps: j.number("norm_eps")?,
        activation: j.typed("activation")?,
        causal: j.boolean("causal")?,
        token_types: j.count("token_types")?,
        linear_bias: j.boolean("linear_bias")?,
        lm_head: j.typed("lm_head")?,
        embedding_norm: j.boolean("embedding_norm")?,
        // Absent in configs saved before the field existed: 1.
        embedding_scale: if j.has("embedding_scale") {
            j.number("embedding_scale")?
        } else {
            1.0
        },
        encoder_layers: j.count_or("encoder_layers", 0)?,
    };
    config.validate().map_err(|e| in_file(e, FILE, &[]))?;
    Ok(config)
}

/// Checks each number of the config that a tensor's shape fixes against the weights, before
/// any layer is built, so that a wrong number is reported by its field.
fn check_config_against_weights(t: &TensorMap, c: &ModelConfig) -> Result<()> {
    let layers = (0..)
        .take_while(|i| t.contains(&format!("layers.{i}.attention.query.weight")))
        .count();
    if layers != c.n_layers {
        return Err(VizError::config_field(
            CONFIG_NAME,
            "n_layers",
            c.n_layers,
            format!(
                "but the weights hold {layers} layer{}",
                if layers == 1 { "" } else { "s" }
            ),
        ));
    }
    // (tensor, whether this config reads it, axis, field, the field's value, the size the
    // config implies, what that axis counts)
    let learned = c.position == crate::model::config::Position::Learned;
    let fixed_by_shape = [
        (
            "token_embedding",
            true,
            1,
            "d_model",
            c.d_model,
            c.d_model,
            "features per token",
        ),
        (
            "token_embedding",
            true,
            0,
            "vocab_size",
            c.vocab_size,
            c.vocab_size,
            "tokens in the vocabulary",
        ),
        (
            "position_embedding",
            learned,
            0,
            "context",
            c.context,
            c.context,
            "positions",
        ),
        (
            "segment_embedding",
            c.token_types > 0,
            0,
            "token_types",
            c.token_types,
            c.token_types,
            "token types",
        ),
        (
            "layers.0.ffn.up.weight",
            true,
            0,
            "d_ff",
            c.d_ff,
            c.d_ff,
            "FFN features",
        ),
        (
            "layers.0.attention.query.weight",
            true,
            0,
            "head_dim",
            c.head_dim,
            c.n_heads * c.head_dim,
            "query features (n_heads × head_dim)",
        ),
        (
            "layers.0.attention.key.weight",
            true,
            0,
            "n_kv_heads",
            c.n_kv_heads,
            c.n_kv_heads * c.head_dim,
            "key features (n_kv_heads × head_dim)",
        ),
    ];
    for (tensor, read, axis, field, value, implied, counts) in fixed_by_shape {
        let Some(shape) = t.shape(tensor).filter(|_| read) else {
            continue;
        };
        if shape.len() == 2 && shape[axis] != implied {
            let problem = format!(
                "but the weights hold {} {counts} (`{tensor}` is {})",
                shape[axis],
                short_shape(shape)
            );
            return Err(VizError::config_field(CONFIG_NAME, field, value, problem));
        }
    }
    Ok(())
}

/// Reads weights saved by `to_safetensors` for the given config.
pub fn from_safetensors(bytes: &[u8], c: &ModelConfig) -> Result<Weights> {
    c.validate()?;
    let mut t = read_safetensors(bytes)?;
    check_config_against_weights(&t, c)?;
    // validate() keeps heads and head_dim at most 4096 each, so these products cannot overflow.
    let (d, q, kv) = (c.d_model, c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim);
    let attention = |t: &mut TensorMap, p: &str| -> Result<AttentionWeights> {
        Ok(AttentionWeights {
            query: linear(t, &format!("{p}.query"), q, d, c)?,
            key: linear(t, &format!("{p}.key"), kv, d, c)?,
            value: linear(t, &format!("{p}.value"), kv, d, c)?,
            output: linear(t, &format!("{p}.output"), d, q, c)?,
        })
    };
    let mut layers = Vec::with_capacity(c.n_layers);
    let mut encoder_layers = Vec::with_capacity(c.encoder_layers);
    let stacks = (0..c.n_layers).map(|i| (format!("layers.{i}"), c.is_encoder_decoder()));
    let encoder = (0..c.encoder_layers).map(|i| (format!("encoder.layers.{i}"), false));
    for (p, crossed) in stacks.chain(encoder) {
        let cross = if crossed {
            Some(CrossWeights {
                norm: norm(&mut t, &format!("{p}.cross_norm"), c)?,
                attention: attention(&mut t, &format!("{p}.cross_attention"))?,
            })
        } else {
            None
        };
        let into = if p.starts_with("encoder.") {
            &mut encoder_layers
        } else {
            &mut layers
        };
        into.push(LayerWeights {
            attention_norm: norm(&mut t, &format!("{p}.attention_norm"), c)?,
            attention: attention(&mut t, &format!("{p}.attention"))?,
            cross,
            ffn_norm: norm(&mut t, &format!("{p}.ffn_norm"), c)?,
            ffn: FfnWeights {
                up: linear(&mut t, &format!("{p}.ffn.up"), c.d_ff, d, c)?,
                gate: if c.activation == crate::model::config::Activation::SwiGlu {
                    Some(linear(&mut t, &format!("{p}.ffn.gate"), c.d_ff, d, c)?)
                } else {
                    None
                },
                down: linear(&mut t, &format!("{p}.ffn.down"), d, c.d_ff, c)?,
            },
        });
    }
    let w = Weights {
        token_embedding: t.matrix("token_embedding", c.vocab_size, d)?.into(),
        segment_embedding: if c.token_types > 0 {
            Some(t.matrix("segment_embedding", c.token_types, d)?)
        } else {
            None
        },
        position_embedding: if c.position == crate::model::config::Position::Learned {
            Some(t.matrix("position_embedding", c.context, d)?)
        } else {
            None
        },
        embedding_norm: if c.embedding_norm {
            Some(norm(&mut t, "embedding_norm", c)?)
        } else {
            None
        },
        layers,
        final_norm: if c.norm_place == crate::model::config::NormPlace::Pre {
            Some(norm(&mut t, "final_norm", c)?)
        } else {
            None
        },
        lm_head: if c.lm_head == crate::model::config::LmHead::Separate {
            Some(t.matrix("lm_head", c.vocab_size, d)?.into())
        } else {
            None
        },
        encoder_final_norm: if c.is_encoder_decoder()
            && c.norm_place == crate::model::config::NormPlace::Pre
        {
            Some(norm(&mut t, "encoder.final_norm", c)?)
        } else {
            None
        },
        encoder_layers,
    };
    w.check(c)?;
    Ok(w)
}
