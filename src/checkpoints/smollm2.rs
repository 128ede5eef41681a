//! SmolLM2-135M (and any Llama-architecture GGUF file): `llama.*` metadata → `ModelConfig`,
//! `blk.N.*` tensors → `Weights`, `tokenizer.ggml.*` → the byte-level BPE tokenizer.
//!
//! Llama's choices: pre-RMSNorm, rotary positions, grouped-query attention, SwiGLU, no biases,
//! causal, and (SmolLM2) the token embedding tied as the output layer. llama.cpp's converter
//! permutes the rows of Q and K so that rotary pairs are ADJACENT features (2i, 2i+1), not the
//! halves Hugging Face rotates: the config says so (`adjacent_pairs`).
//! Quantized matrices stay quantized (`Matrix::Quantized`); norms' gammas become f32.

use std::sync::Arc;

use ndarray::Array1;

use crate::error::{Result, VizError};
use crate::formats::gguf::Gguf;
use crate::model::config::{
    Activation, LmHead, ModelConfig, NormKind, NormPlace, Position, CONFIG_NAME,
};
use crate::model::linear::Linear;
use crate::model::matrix::Matrix;
use crate::model::quantized::{GgmlType, GgufTensor};
use crate::model::weights::{AttentionWeights, FfnWeights, LayerWeights, NormWeights, Weights};
use crate::tokenize::bpe::{ByteLevelBpe, PreTokenizer, SpecialTokens};
use crate::transformer::Transformer;

/// What errors call the file: its metadata keys are the config's fields.
const FILE: &str = "the GGUF file's metadata";

/// The metadata field `key` as a count, named by its key in errors.
fn count(g: &Gguf<'_>, key: &str) -> Result<usize> {
    let value = g.get_u64(key)?;
    usize::try_from(value).map_err(|_| VizError::config_field(FILE, key, value, "is too large"))
}

/// Renames a `ModelConfig` field in a validation error to the metadata key that holds it.
fn in_metadata(e: VizError, arch: &str) -> VizError {
    match e {
        VizError::ConfigField {
            file,
            field,
            value,
            problem,
        } if file == CONFIG_NAME => {
            let key = match field.as_str() {
                "n_layers" => "block_count",
                "d_model" => "embedding_length",
                "n_heads" => "attention.head_count",
                "n_kv_heads" => "attention.head_count_kv",
                "d_ff" => "feed_forward_length",
                "context" => "context_length",
                "norm_eps" => "attention.layer_norm_rms_epsilon",
                "position.Rotary.base" => "rope.freq_base",
                "head_dim" => "rope.dimension_count",
                "vocab_size" => "vocab_size",
                other => {
                    return VizError::ConfigField {
                        file: FILE.into(),
                        field: other.into(),
                        value,
                        problem,
                    }
                }
            };
            VizError::ConfigField {
                file: FILE.into(),
                field: format!("{arch}.{key}"),
                value,
                problem,
            }
        }
        other => other,
    }
}

/// The model's config from the file's `llama.*` metadata, checked before anything is allocated.
pub fn config_from_gguf(name: &str, g: &Gguf<'_>) -> Result<ModelConfig> {
    let arch = g.get_str("general.architecture")?;
    if arch != "llama" {
        return Err(VizError::config_field(
            FILE,
            "general.architecture",
            arch,
            "is not supported: only `llama` models can be read",
        ));
    }
    let key = |k: &str| format!("{arch}.{k}");
    let d_model = count(g, &key("embedding_length"))?;
    let n_heads = count(g, &key("attention.head_count"))?;
    let n_kv_heads = match g.get(&key("attention.head_count_kv")) {
        Some(_) => count(g, &key("attention.head_count_kv"))?,
        None => n_heads,
    };
    if n_heads == 0 {
        return Err(VizError::config_field(
            FILE,
            &key("attention.head_count"),
            0,
            "must be at least 1",
        ));
    }
    let head_dim = match g.get(&key("rope.dimension_count")) {
        Some(_) => count(g, &key("rope.dimension_count"))?,
        None => d_model / n_heads,
    };
    let vocab_size = match g.get(&key("vocab_size")) {
        Some(_) => count(g, &key("vocab_size"))?,
        None => g.tensor("token_embd.weight")?.rows(),
    };
    let config = ModelConfig {
        name: name.into(),
        vocab_size,
        d_model,
        n_layers: count(g, &key("block_count"))?,
        n_heads,
        n_kv_heads,
        head_dim,
        d_ff: count(g, &key("feed_forward_length"))?,
        context: count(g, &key("context_length"))?,
        position: Position::Rotary {
            base: g.get_f32(&key("rope.freq_base")).unwrap_or(10_000.0),
            adjacent_pairs: true,
        },
        norm: NormKind::Rms,
        norm_place: NormPlace::Pre,
        norm_eps: g.get_f32(&key("attention.layer_norm_rms_epsilon"))?,
        activation: Activation::SwiGlu,
        causal: true,
        token_types: 0,
        linear_bias: false,
        lm_head: if g.tensor("output.weight").is_ok() {
            LmHead::Separate
        } else {
            LmHead::Tied
        },
        embedding_norm: false,
        embedding_scale: 1.0,
        encoder_layers: 0,
    };
    config.validate().map_err(|e| in_metadata(e, arch))?;
    if head_dim * n_heads != d_model {
        let problem =
            format!("but {n_heads} heads of {head_dim} features do not make the model's {d_model}");
        return Err(VizError::config_field(
            FILE,
            &key("rope.dimension_count"),
            head_dim,
            problem,
        ));
    }
    Ok(config)
}

/// A tensor of the expected row-major shape, read from the file's bytes.
fn tensor<'a>(g: &Gguf<'a>, name: &str, shape: &[usize]) -> Result<GgufTensor<&'a [u8]>> {
    let t = g.tensor(name)?;
    if t.shape() != shape {
        return Err(VizError::ShapeMismatch {
            name: name.into(),
            expected: shape.to_vec(),
            found: t.shape().to_vec(),
        });
    }
    Ok(t)
}

/// A weight matrix; quantized blocks stay in `file` (the bytes `g` was parsed from).
fn matrix(
    g: &Gguf<'_>,
    file: &Arc<Vec<u8>>,
    name: &str,
    rows: usize,
    cols: usize,
) -> Result<Matrix> {
    Matrix::quantized(tensor(g, name, &[rows, cols])?.within(file)?)
}

fn linear(g: &Gguf<'_>, file: &Arc<Vec<u8>>, name: &str, out: usize, inp: usize) -> Result<Linear> {
    Ok(Linear {
        weight: matrix(g, file, name, out, inp)?,
        bias: None,
    })
}

fn rms_norm(g: &Gguf<'_>, name: &str, d: usize) -> Result<NormWeights> {
    let t = tensor(g, name, &[d])?;
    if !matches!(t.kind(), GgmlType::F32 | GgmlType::F16) {
        return Err(VizError::UnsupportedDtype {
            name: name.into(),
            dtype: t.kind().name().into(),
        });
    }
    Ok(NormWeights {
        gamma: Array1::from(t.to_f32()?),
        beta: None,
    })
}

/// Maps `blk.N.*` onto `Weights`, checking each tensor's shape against the config first.
/// The model's weights from `g`, parsed from `file`: quantized matrices keep pointing into it.
pub fn weights_from_gguf(g: &Gguf<'_>, file: &Arc<Vec<u8>>, c: &ModelConfig) -> Result<Weights> {
    let d = c.d_model;
    let (q, kv) = (c.n_heads * c.head_dim, c.n_kv_heads * c.head_dim);
    let layers_in_file = (0..)
        .take_while(|i| g.tensor(&format!("blk.{i}.attn_q.weight")).is_ok())
        .count();
    if layers_in_file != c.n_layers {
        let problem = format!(
            "but the file holds {layers_in_file} layer{}",
            if layers_in_file == 1 { "" } else { "s" }
        );
        return Err(VizError::config_field(
            FILE,
            "llama.block_count",
            c.n_layers,
            problem,
        ));
    }
    let mut layers = Vec::with_capacity(c.n_layers);
    for i in 0..c.n_layers {
        let p = format!("blk.{i}");
        layers.push(LayerWeights {
            attention_norm: rms_norm(g, &format!("{p}.attn_norm.weight"), d)?,
            attention: AttentionWeights {
                query: linear(g, file, &format!("{p}.attn_q.weight"), q, d)?,
                key: linear(g, file, &format!("{p}.attn_k.weight"), kv, d)?,
                value: linear(g, file, &format!("{p}.attn_v.weight"), kv, d)?,
                output: linear(g, file, &format!("{p}.attn_output.weight"), d, q)?,
            },
            ffn_norm: rms_norm(g, &format!("{p}.ffn_norm.weight"), d)?,
            ffn: FfnWeights {
                up: linear(g, file, &format!("{p}.ffn_up.weight"), c.d_ff, d)?,
                gate: Some(linear(g, file, &format!("{p}.ffn_gate.weight"), c.d_ff, d)?),
                down: linear(g, file, &format!("{p}.ffn_down.weight"), d, c.d_ff)?,
            },
            cross: None,
        });
    }
    let weights = Weights {
        token_embedding: matrix(g, file, "token_embd.weight", c.vocab_size, d)?,
        segment_embedding: None,
        position_embedding: None,
        embedding_norm: None,
        layers,
        final_norm: Some(rms_norm(g, "output_norm.weight", d)?),
        lm_head: match c.lm_head {
            LmHead::Separate => Some(matrix(g, file, "output.weight", c.vocab_size, d)?),
            _ => None,
        },
        encoder_layers: vec![],
        encoder_final_norm: None,
    };
    weights.check(c)?;
    Ok(weights)
}

/// The byte-level BPE tokenizer the file's metadata describes.
pub fn tokenizer_from_gguf(g: &Gguf<'_>) -> Result<ByteLevelBpe> {
    let model = g.get_str("tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(VizError::BadTokenizer(format!("the tokenizer model `{model}` is not supported (only GPT-2-style byte-level BPE, `gpt2`)")));
    }
    let tokens: Vec<String> = g
        .get_str_array("tokenizer.ggml.tokens")?
        .into_iter()
        .map(String::from)
        .collect();
    let merges: Vec<String> = g
        .get_str_array("tokenizer.ggml.merges")?
        .into_iter()
        .map(String::from)
        .collect();
    let token_types = match g.get("tokenizer.ggml.token_type") {
        Some(_) => g.get_i32_array("tokenizer.ggml.token_type")?,
        None => Vec::new(),
    };
    let id = |key: &str| g.get_u32(key).ok();
    let special = SpecialTokens {
        bos: id("tokenizer.ggml.bos_token_id"),
        eos: id("tokenizer.ggml.eos_token_id"),
        add_bos: g.get_bool("tokenizer.ggml.add_bos_token").unwrap_or(false),
        add_eos: g.get_bool("tokenizer.ggml.add_eos_token").unwrap_or(false),
        control: SpecialTokens::control_from_token_types(&token_types),
    };
    let pre = PreTokenizer::from_gguf_name(g.get_str("tokenizer.ggml.pre").unwrap_or("gpt2"))?;
    ByteLevelBpe::new(tokens, merges, special, pre)
}

/// Builds the model from a GGUF file's bytes (what the browser fetches).
pub fn from_gguf_bytes(name: &str, bytes: &[u8]) -> Result<Transformer> {
    from_gguf_file(name, bytes.to_vec())
}

/// Builds the model from a GGUF file it takes over: the quantized weights stay where they
/// are in the file's bytes (no second copy).
pub fn from_gguf_file(name: &str, file: Vec<u8>) -> Result<Transformer> {
    let file = Arc::new(file);
    let g = Gguf::parse(&file)?;
    let config = config_from_gguf(name, &g)?;
    let tokenizer = tokenizer_from_gguf(&g)?;
    let weights = weights_from_gguf(&g, &file, &config)?;
    Transformer::new(config, weights, Box::new(tokenizer))
}
